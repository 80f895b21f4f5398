"""Writes the Model Garden fixtures beside this file with the Model Garden's own code (tf-models-official 2.20.0).

Run from a folder outside any checkout (tf-models-official's top-level package is also named `official`):

    cd /tmp && /work/mg_venv/bin/python <checkout>/tests/nlp/checkpoints/peers/data/model_garden/make_fixtures.py

It writes, for a tiny BERT (2 layers, hidden 32, 4 heads, a 30-token vocabulary):

- `encoder/`: `tf.train.Checkpoint(encoder=BertEncoder).save("bert_model.ckpt")` (`bert_model.ckpt-1`) with
  `bert_config.json` and `vocab.txt`, as the Model Garden's checkpoint converter writes its TF2 BERT checkpoints
  (what its `export_tfhub` reads);
- `pretrainer/`: a `MaskedLMTask` run's checkpoint, `ckpt-1`, written by the Model Garden's own `Trainer` and
  `tf.train.CheckpointManager` after one training step (`global_step`, `model`, `optimizer` with its slots, and the
  `BertPretrainerV2.checkpoint_items`: `encoder`, `masked_lm`, `next_sentence.pooler_dense`); no config beside it;
- `classifier/`: a `SentencePredictionTask` run's checkpoint (3 classes, the task's default head: its own
  `pooler_dense` on `[CLS]`, `use_encoder_pooler=False`), the same way;
- `classifier_encoder_pooler/`: the same task with `use_encoder_pooler=True` (its head: logits on the encoder's
  pooled output), saved as its Trainer's root holds it (`model` + `checkpoint_items`) without a training step;
- `albert/`: an `AlbertEncoder` saved as `encoder/`, which is not a BertEncoder (a bad input);
- `outputs.npz`: the Model Garden's forward pass on fixed inputs (`training=False`) for each of them.

Every weight is drawn at random (std 0.3; the layer norms around 1) before the training step, so that no output is
near zero and a misplaced weight shows.
"""

import json
import os
import sys

import numpy as np
import tensorflow as tf
import tf_keras

if os.path.abspath(os.getcwd()).startswith(os.path.dirname(os.path.abspath(__file__)).split("/tests/")[0]):
    sys.exit("run this from a folder outside the checkout (its `official` package would shadow the Model Garden's)")

from official.core import base_trainer  # noqa: E402
from official.core import config_definitions as cfg  # noqa: E402
from official.modeling import optimization  # noqa: E402
from official.nlp.configs import bert, encoders  # noqa: E402

from official.nlp.data import pretrain_dataloader, sentence_prediction_dataloader  # noqa: E402
from official.nlp.modeling import networks  # noqa: E402
from official.nlp.tasks import masked_lm, sentence_prediction  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [
    "the", "a", "cat", "dog", "sat", "on", "mat", "ran", "to", "house", "big", "small", "red", "blue", "and",
    "is", "was", "it", "he", "she", "##s", "##ed", "##ing", ".", ",",
]  # fmt: skip
HIDDEN, LAYERS, HEADS, INTERMEDIATE, POSITIONS = 32, 2, 4, 64, 16
IDS = np.array([[2, 5, 7, 9, 10, 5, 11, 3, 0, 0], [2, 6, 8, 12, 3, 5, 7, 25, 3, 0]], np.int32)
SEGMENTS = np.array([[0] * 10, [0, 0, 0, 0, 0, 1, 1, 1, 1, 0]], np.int32)
MASK = (IDS != 0).astype(np.int32)
POSITIONS_TO_PREDICT = np.array([[1, 3, 6], [2, 5, 7]], np.int32)
INPUTS = {"input_word_ids": IDS, "input_mask": MASK, "input_type_ids": SEGMENTS}

BERT_CONFIG = {
    "vocab_size": len(VOCAB),
    "hidden_size": HIDDEN,
    "num_hidden_layers": LAYERS,
    "num_attention_heads": HEADS,
    "intermediate_size": INTERMEDIATE,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1,
    "max_position_embeddings": POSITIONS,
    "type_vocab_size": 2,
    "initializer_range": 0.02,
}


def encoder_config() -> encoders.EncoderConfig:
    return encoders.EncoderConfig(
        type="bert",
        bert=encoders.BertEncoderConfig(
            vocab_size=len(VOCAB),
            hidden_size=HIDDEN,
            num_layers=LAYERS,
            num_attention_heads=HEADS,
            intermediate_size=INTERMEDIATE,
            max_position_embeddings=POSITIONS,
            type_vocab_size=2,
        ),
    )


def randomize(model, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for weight in model.weights:
        value = rng.normal(0, 0.3, weight.shape)
        if "gamma" in weight.name:
            value += 1.0
        weight.assign(value.astype(np.float32))


def write_text(folder: str, name: str, text: str) -> None:
    with open(os.path.join(folder, name), "w") as f:
        f.write(text)


def train_one_step_and_save(task, task_config, model, batch, folder: str) -> None:
    """The Model Garden's own Trainer runs one step and its CheckpointManager saves, as train_lib does."""
    experiment = cfg.ExperimentConfig(
        task=task_config,
        trainer=cfg.TrainerConfig(
            optimizer_config=optimization.OptimizationConfig(
                {
                    "optimizer": {"type": "adamw"},
                    "learning_rate": {"type": "constant", "constant": {"learning_rate": 1e-3}},
                }
            ),
            checkpoint_interval=1,
        ),
    )
    optimizer = task.create_optimizer(experiment.trainer.optimizer_config, experiment.runtime)
    dataset = tf.data.Dataset.from_tensors(batch).repeat()
    trainer = base_trainer.Trainer(
        experiment, task, model, optimizer, train=True, evaluate=False, train_dataset=dataset
    )
    trainer.train(tf.constant(1, tf.int32))
    manager = tf.train.CheckpointManager(
        trainer.checkpoint, directory=folder, max_to_keep=1, step_counter=trainer.global_step
    )
    manager.save(checkpoint_number=trainer.global_step)


def main() -> None:
    tf_keras.utils.set_random_seed(1)
    outputs = {}
    for name in ("encoder", "pretrainer", "classifier", "classifier_encoder_pooler", "albert"):
        os.makedirs(os.path.join(HERE, name), exist_ok=True)
        for old in os.listdir(os.path.join(HERE, name)):
            os.remove(os.path.join(HERE, name, old))

    # The encoder, as the released TF2 checkpoints are: bert_config.json, vocab.txt, bert_model.ckpt.
    encoder = encoders.build_encoder(encoder_config())
    assert type(encoder) is networks.BertEncoder, type(encoder)
    randomize(encoder, 0)
    out = encoder(INPUTS, training=False)
    outputs["encoder_sequence_output"] = out["sequence_output"].numpy()
    outputs["encoder_pooled_output"] = out["pooled_output"].numpy()
    # As the Model Garden's checkpoint converter saves one (tf1_bert_checkpoint_converter_lib.create_v2_checkpoint).
    tf.train.Checkpoint(encoder=encoder).save(os.path.join(HERE, "encoder", "bert_model.ckpt"))
    write_text(os.path.join(HERE, "encoder"), "bert_config.json", json.dumps(BERT_CONFIG, indent=2) + "\n")
    write_text(os.path.join(HERE, "encoder"), "vocab.txt", "\n".join(VOCAB) + "\n")

    # The pretraining task's BertPretrainerV2 (masked LM + the next-sentence ClassificationHead).
    pretraining = masked_lm.MaskedLMConfig(
        model=bert.PretrainerConfig(
            encoder=encoder_config(),
            cls_heads=[bert.ClsHeadConfig(inner_dim=HIDDEN, num_classes=2, dropout_rate=0.1, name="next_sentence")],
        ),
        train_data=pretrain_dataloader.BertPretrainDataConfig(use_next_sentence_label=True),
    )
    task = masked_lm.MaskedLMTask(pretraining)
    pretrainer = task.build_model()
    features = dict(INPUTS, masked_lm_positions=POSITIONS_TO_PREDICT)
    pretrainer(features, training=False)
    randomize(pretrainer, 1)
    batch = dict(
        features,
        masked_lm_ids=np.array([[7, 9, 5], [8, 5, 25]], np.int32),
        masked_lm_weights=np.ones((2, 3), np.float32),
        next_sentence_labels=np.array([0, 1], np.int32),
    )
    train_one_step_and_save(task, pretraining, pretrainer, batch, os.path.join(HERE, "pretrainer"))
    out = pretrainer(features, training=False)
    outputs["pretrainer_mlm_logits"] = out["mlm_logits"].numpy()
    outputs["pretrainer_next_sentence"] = out["next_sentence"].numpy()
    sequence = pretrainer.encoder_network(INPUTS, training=False)
    outputs["pretrainer_sequence_output"] = sequence["sequence_output"].numpy()
    outputs["pretrainer_encoder_pooled_output"] = sequence["pooled_output"].numpy()
    # What export_tfhub --copy_pooler_dense_to_encoder gives: the NSP head's pooler on [CLS].
    head = pretrainer.classification_heads[0]
    outputs["pretrainer_head_pooled_output"] = head(sequence["sequence_output"], only_project=True).numpy()

    # The sentence-prediction task's BertClassifier (its default head: pooler_dense + logits on [CLS]).
    classification = sentence_prediction.SentencePredictionConfig(
        model=sentence_prediction.ModelConfig(num_classes=3, encoder=encoder_config()),
        train_data=sentence_prediction_dataloader.SentencePredictionDataConfig(),
    )
    task = sentence_prediction.SentencePredictionTask(classification)
    classifier = task.build_model()
    classifier(INPUTS, training=False)
    randomize(classifier, 2)
    batch = dict(INPUTS, label_ids=np.array([0, 2], np.int32))
    train_one_step_and_save(task, classification, classifier, batch, os.path.join(HERE, "classifier"))
    outputs["classifier_logits"] = classifier(INPUTS, training=False).numpy()
    outputs["classifier_sequence_output"] = classifier.checkpoint_items["encoder"](INPUTS, training=False)[
        "sequence_output"
    ].numpy()

    # use_encoder_pooler=True: no pooler of its own, the logits on the encoder's pooled output.
    classification = sentence_prediction.SentencePredictionConfig(
        model=sentence_prediction.ModelConfig(num_classes=2, use_encoder_pooler=True, encoder=encoder_config()),
        train_data=sentence_prediction_dataloader.SentencePredictionDataConfig(),
    )
    classifier = sentence_prediction.SentencePredictionTask(classification).build_model()
    classifier(INPUTS, training=False)
    randomize(classifier, 3)
    root = tf.train.Checkpoint(model=classifier, **classifier.checkpoint_items)
    root.save(os.path.join(HERE, "classifier_encoder_pooler", "ckpt"))
    outputs["classifier_encoder_pooler_logits"] = classifier(INPUTS, training=False).numpy()

    # Not a BertEncoder: ALBERT (factorized embeddings, one shared block).
    albert = networks.AlbertEncoder(
        vocab_size=len(VOCAB), embedding_width=16, hidden_size=HIDDEN, num_layers=LAYERS, num_attention_heads=HEADS,
        intermediate_size=INTERMEDIATE, max_sequence_length=POSITIONS,
    )  # fmt: skip
    albert(INPUTS)
    tf.train.Checkpoint(encoder=albert).save(os.path.join(HERE, "albert", "bert_model.ckpt"))

    np.savez(
        os.path.join(HERE, "outputs.npz"),
        input_word_ids=IDS,
        input_mask=MASK,
        input_type_ids=SEGMENTS,
        masked_lm_positions=POSITIONS_TO_PREDICT,
        **outputs,
    )
    for name in sorted(outputs):
        print(name, outputs[name].shape, float(np.abs(outputs[name]).mean()))


if __name__ == "__main__":
    main()
