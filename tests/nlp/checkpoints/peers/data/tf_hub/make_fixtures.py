r"""Makes the TF-Hub fixtures of this folder with the Model Garden's own code, never this library's.

Run with tf-models-official 2.20.0 (TensorFlow 2.20, tf_keras) from a folder outside any checkout of this
project (the Model Garden's package is also named `official`):

    cd /tmp && /work/mg_venv/bin/python $CHECKOUT/tests/nlp/checkpoints/peers/data/tf_hub/make_fixtures.py \
        $BERT_SHARED_DATA/vocab/bert-base-uncased-vocab.txt

What it writes beside itself:
- `vocab.txt`: the five special tokens, then lines 1000-1130 (ASCII and Latin-1 characters) and 1997-2700 (the
  commonest words and word pieces) of the BERT-Base uncased vocabulary: small enough for a fixture, real enough
  for real text (it splits some words into pieces and has no CJK, so `東京` is two `[UNK]`s);
- `bert_config.json`: the legacy BERT config the encoder is built from (2 layers, hidden 32, 2 heads);
- `encoder/`: the Model Garden `BertEncoder` with random weights (every bias and norm too), written by
  `python -m official.nlp.tools.export_tfhub --export_type=model_with_mlm`, which adds the `mlm` subobject, the
  `vocab_file` asset and the `do_lower_case` variable TF-Hub's BERT encoders carry;
- `preprocessing/`: `export_tfhub --export_type=preprocessing --default_seq_length=16` with the same vocabulary;
- `expected.npz`: what the two SavedModels give, loaded back with `tf.saved_model.load` as a TF-Hub user does:
  `texts`, the preprocessing model's `tokenize` output (`token_ids` flat, `word_lengths` per word, `text_words`
  per text), its packed inputs for the texts alone (`input_word_ids`, `input_mask`, `input_type_ids`) and for
  pairs of them at `seq_length=24` (`pair_*`), and the encoder's `sequence_output`, `pooled_output`,
  `encoder_outputs` (stacked, one per layer) and `mlm_logits` at `masked_lm_positions`, on the single-text inputs.
"""

import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import tensorflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
CONFIG = {
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 64,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1,
    "max_position_embeddings": 64,
    "type_vocab_size": 2,
    "initializer_range": 0.02,
}
# Real sentences (GLUE SST-2/MRPC style, the original's sample text), with case, accents, punctuation, digits,
# CJK and words the small vocabulary splits or does not know.
TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "Naïve Café owners in Zürich said they'd sold 1,200 croissants!",
    "it 's a charming and often affecting journey .",
    'Amrozi accused his brother, whom he called "the witness", of deliberately distorting his evidence.',
    "東京 is the capital of Japan; its population was 13.9 million in 2019.",
    "unflinchingly bleak and desperate",
]


def write_vocab(source: str) -> str:
    with open(source, encoding="utf-8") as f:
        lines = f.read().split("\n")
    tokens = SPECIAL + [t for t in lines[999:1130] + lines[1996:2700] if t and t not in SPECIAL]
    path = os.path.join(HERE, "vocab.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(tokens) + "\n")
    return path


def export_tfhub(*flags: str) -> None:
    subprocess.run([sys.executable, "-m", "official.nlp.tools.export_tfhub", *flags], check=True)


def main(source_vocab: str) -> None:
    from official.legacy.bert import configs
    from official.modeling import tf_utils
    from official.nlp.tools import export_tfhub_lib

    from official.nlp.modeling import models

    vocab_file = write_vocab(source_vocab)
    vocab_size = sum(1 for _ in open(vocab_file, encoding="utf-8"))
    config = dict(CONFIG, vocab_size=vocab_size)
    config_file = os.path.join(HERE, "bert_config.json")
    with open(config_file, "w") as f:
        json.dump(config, f, indent=2)

    # The checkpoint export_tfhub restores: a BertPretrainerV2 (encoder + masked LM), as pretraining writes it.
    tf.keras.utils.set_random_seed(43)
    bert_config = configs.BertConfig.from_json_file(config_file)
    encoder = export_tfhub_lib.get_bert_encoder(bert_config)
    pretrainer = models.BertPretrainerV2(
        encoder_network=encoder, mlm_activation=tf_utils.get_activation(bert_config.hidden_act)
    )
    ids = tf.constant([[2, 5, 6, 3]])
    pretrainer(dict(input_word_ids=ids, input_mask=tf.ones_like(ids), input_type_ids=tf.zeros_like(ids),
                    masked_lm_positions=tf.constant([[1]])))  # fmt: skip
    rng = np.random.default_rng(43)
    for weight in pretrainer.weights:
        weight.assign(rng.normal(0.0, 0.3, weight.shape).astype(np.float32))
    with tempfile.TemporaryDirectory() as tmp:
        prefix = tf.train.Checkpoint(**pretrainer.checkpoint_items).save(os.path.join(tmp, "ckpt"))
        for name in ("encoder", "preprocessing"):
            if tf.io.gfile.exists(os.path.join(HERE, name)):
                tf.io.gfile.rmtree(os.path.join(HERE, name))
        export_tfhub(
            f"--bert_config_file={config_file}",
            f"--model_checkpoint_path={prefix}",
            f"--vocab_file={vocab_file}",
            "--do_lower_case=true",
            "--export_type=model_with_mlm",
            f"--export_path={os.path.join(HERE, 'encoder')}",
        )
    export_tfhub(
        f"--vocab_file={vocab_file}",
        "--do_lower_case=true",
        "--default_seq_length=16",
        "--export_type=preprocessing",
        f"--export_path={os.path.join(HERE, 'preprocessing')}",
    )

    preprocessing = tf.saved_model.load(os.path.join(HERE, "preprocessing"))
    loaded = tf.saved_model.load(os.path.join(HERE, "encoder"))
    texts = tf.constant(TEXTS)
    tokens = preprocessing.tokenize(texts)  # [batch, words, word pieces]
    inputs = preprocessing(texts)
    pair = preprocessing.bert_pack_inputs([tokens, preprocessing.tokenize(tf.constant(TEXTS[::-1]))], seq_length=24)
    outputs = loaded(inputs)
    positions = tf.constant([[1, 2, 5]] * len(TEXTS), tf.int32)
    mlm = loaded.mlm(dict(inputs, masked_lm_positions=positions))
    np.savez_compressed(
        os.path.join(HERE, "expected.npz"),
        texts=np.array(TEXTS),
        token_ids=tokens.flat_values.numpy(),
        word_lengths=tokens.values.row_lengths().numpy(),
        text_words=tokens.row_lengths().numpy(),
        **{name: value.numpy() for name, value in inputs.items()},
        **{f"pair_{name}": value.numpy() for name, value in pair.items()},
        sequence_output=outputs["sequence_output"].numpy(),
        pooled_output=outputs["pooled_output"].numpy(),
        encoder_outputs=np.stack([x.numpy() for x in outputs["encoder_outputs"]]),
        masked_lm_positions=positions.numpy(),
        mlm_logits=mlm["mlm_logits"].numpy(),
    )
    print("variables:", sorted(v.name for v in loaded.variables))
    print("do_lower_case:", loaded.do_lower_case.numpy(), "vocab_file:", loaded.vocab_file.asset_path.numpy())


if __name__ == "__main__":
    main(sys.argv[1])
