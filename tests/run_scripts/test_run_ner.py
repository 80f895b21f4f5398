"""run_ner.py end to end on slices of the real CoNLL-2003 files with a tiny model: fine-tuning (train, per-epoch
conlleval, predictions for conlleval) and --feature_based (only the BiLSTM and classifier change)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from official.nlp.checkpoints import model_dir, model_loading, our_checkpoints
from official.nlp.common.errors import InputError
from official.nlp.data import conll
from official.nlp.modeling.configs import BertConfig
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.tasks import finetuning_outputs, tagging
from tests.conftest import REPO_ROOT
from tests.nlp.serving import fresh

SCRIPT = str(REPO_ROOT / "run_scripts" / "run_ner.py")
TINY = dict(
    vocab_size=30522,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=64,
    max_position_embeddings=64,
)


def _slice(source, target, sentences):
    """The first `sentences` sentences of a CoNLL file, lines as they are (the -DOCSTART- line included)."""
    lines, seen = [], 0
    with open(source) as f:
        for line in f:
            lines.append(line)
            if not line.strip() and lines[-2].strip() and not lines[-2].startswith("-DOCSTART-"):
                seen += 1
                if seen == sentences:
                    break
    target.write_text("".join(lines))
    return str(target)


@pytest.fixture(scope="module")
def setup(tmp_path_factory, shared_data):
    root = tmp_path_factory.mktemp("ner")
    keras.utils.set_random_seed(3)
    encoder = BertEncoder.from_bert_config(BertConfig(**TINY))
    init = str(root / "model")
    model_dir.save_model_dir(
        init, encoder, vocab_file=str(shared_data / "vocab" / "bert-base-uncased-vocab.txt"), do_lower_case=True
    )
    data = shared_data / "conll2003" / "original_iob1"
    return {
        "init": init,
        "train": _slice(data / "eng.train", root / "train.txt", 64),
        "dev": _slice(data / "eng.testa", root / "dev.txt", 24),
        "root": root,
    }


def _run(args):
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    return subprocess.run(
        [sys.executable, SCRIPT, *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=400
    )


def _flags(setup, output_dir, *extra):
    return [
        f"--init_checkpoint={setup['init']}",
        f"--output_dir={output_dir}",
        f"--train_file={setup['train']}",
        f"--eval_file={setup['dev']}",
        f"--predict_file={setup['dev']}",
        "--do_train",
        "--do_eval",
        "--do_predict",
        "--max_seq_length=24",
        "--train_batch_size=16",
        "--num_train_epochs=1",
        "--steps_per_loop=4",
        *extra,
    ]


def _encoder_values(prefix):
    reader = tf.train.load_checkpoint(prefix)
    return {
        name: reader.get_tensor(name)
        for name in reader.get_variable_to_shape_map()
        if name.startswith("encoder/") and "OPTIMIZER_SLOT" not in name
    }


@pytest.mark.slow
def test_fine_tuning_end_to_end(setup, tmp_path):
    out = tmp_path / "out"
    run = _run(_flags(setup, out, "--learning_rate=1e-3"))
    assert run.returncode == 0, run.stderr[-3000:]
    results = (out / finetuning_outputs.EVAL_RESULTS_FILE).read_text()
    assert "epoch 1," in results and "f1 = " in results and "f1_PER = " in results
    assert "eval: epoch=1" in run.stdout and "FB1:" in run.stdout
    # The predictions are the dev words with their columns plus one tag, readable by conlleval.
    dev = conll.read_conll(setup["dev"]).sentences
    written = conll.read_conll(str(out / tagging.PREDICTIONS_FILE)).sentences
    assert [s.words for s in written] == [s.words for s in dev]
    assert all(len(c) == 5 and c[:4] == g for s, d in zip(written, dev) for c, g in zip(s.columns, d.columns))
    assert (out / "best_model" / model_dir.TASK_FILE).exists()
    _check_served_equals_predicted(out, dev, written, tmp_path)
    # The encoder was fine-tuned.
    init = _encoder_values(model_loading.read_model_files(setup["init"]).checkpoint)
    final = _encoder_values(tf.train.latest_checkpoint(str(out)))
    assert any(not np.array_equal(init[k], final[k]) for k in init if k in final)


def _check_served_equals_predicted(out, dev, written, tmp_path):
    """The SavedModel exported from the job's --output_dir, in a fresh process that imports only TensorFlow and
    tensorflow_text, labels each dev sentence's words (given as one text; many are longer than max_seq_length, so
    served in windows) as run_ner's predictions do (issue 22)."""

    from official.nlp.serving import exporter
    from official.nlp.tokenizers.tokenization import FullTokenizer

    saved = exporter.export_model("ner", str(out), str(tmp_path / "export"), keras_file=False)["saved_model"]
    jobs = [
        {
            "name": "ner",
            "path": saved,
            "signature": "serving_default",
            "inputs": {"text_a": {"dtype": "string", "value": [" ".join(s.words) for s in dev]}},
        }
    ]
    served = fresh.serve(tmp_path, jobs)
    tok = FullTokenizer(str(out / "best_model" / "vocab.txt"), do_lower_case=True)
    assert any(len(tok.tokenize(" ".join(s.words))) > 22 for s in dev)  # some sentences need several windows
    for i, sentence in enumerate(written):
        # The export answers for the words that have sub-tokens (it leaves the others out): those are compared.
        kept = [(w, c[-1]) for w, c in zip(sentence.words, sentence.columns) if tok.tokenize(w)]
        count = int(served["ner/num_words"][i])
        assert list(served["ner/words"][i][:count]) == [w for w, _ in kept], i
        assert list(served["ner/word_labels"][i][:count]) == [label for _, label in kept], i


@pytest.mark.slow
def test_feature_based_trains_only_the_bilstm(setup, tmp_path):
    # From Python (the script's flags map one to one onto these configs; the subprocess path is tested above).
    out = tmp_path / "out"
    config = tagging.TaggingConfig(
        output_dir=str(out),
        init_checkpoint=setup["init"],
        max_seq_length=24,
        train_batch_size=16,
        num_train_epochs=1,
        learning_rate=1e-2,
        steps_per_loop=4,
        train_file=setup["train"],
        feature_based=True,
        feature_layers=(-1, -2),
        lstm_units=8,
        do_train=True,
    )
    result = tagging.run_ner(config)
    model = result.finetuning.model
    assert {w.path.split("/")[0] for w in model.trainable_weights} == {"bilstm_0", "bilstm_1", "classifier"}
    init = _encoder_values(model_loading.read_model_files(setup["init"]).checkpoint)
    final_prefix = tf.train.latest_checkpoint(str(out))
    final = _encoder_values(final_prefix)
    common = [k for k in init if k in final]
    assert len(common) > 20
    for k in common:
        np.testing.assert_array_equal(init[k], final[k], err_msg=k)
    # The checkpoint gives the trained BiLSTMs back to a fresh model (as a resumed run and best_model/ need).
    restored = tagging.make_ner_task(dataclasses.replace(config, train_file=None)).build_model(
        model_loading.read_model_files(setup["init"]).build_encoder()
    )
    x = {k: np.ones((2, 24), "int32") for k in ("input_word_ids", "input_mask", "input_type_ids")}
    assert not np.allclose(restored(x), model(x))
    our_checkpoints.restore_checkpoint(restored, final_prefix)
    np.testing.assert_allclose(restored(x), model(x), atol=1e-6)
    # An export builds the fine-tuned token classifier: a feature-based run is refused in one line (it was a
    # 12-line checkpoint mismatch), and nothing is written.
    from official.nlp.serving import exporter

    with pytest.raises(
        InputError,
        match=r"^--init_checkpoint=.* holds a fine-tuned feature_tagger head, .* as a ner head; it is a feature-based ",
    ):
        exporter.export_model("ner", str(out), str(tmp_path / "export"))
    assert not (tmp_path / "export").exists()


def test_bad_input_named(setup, tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("EU NNP I-NP I-ORG\nrejects VBZ\n")
    # No --do_eval: it would need an --eval_file, which is checked (and missing) before the training file is read.
    config = tagging.TaggingConfig(
        output_dir=str(tmp_path / "o"), init_checkpoint=setup["init"], do_train=True, max_seq_length=64
    )
    with pytest.raises(InputError, match=r"bad\.txt:2: malformed CoNLL line"):
        tagging.run_ner(dataclasses.replace(config, train_file=str(bad)))
    for layers, message in (
        ((-5,), "-5: layer -5 is not one of the model.s 2 layers"),
        (("last",), "last: 'last' is not a layer"),
    ):
        with pytest.raises(InputError, match=f"--feature_layers={message}"):
            tagging.make_ner_task(
                dataclasses.replace(config, train_file=setup["train"], feature_based=True, feature_layers=layers)
            )
    for change, given in (
        (dict(feature_layers=("-1",)), "--feature_layers=-1: this sets"),
        (
            dict(lstm_units=8, feature_combine="weighted_sum"),
            "--feature_combine=weighted_sum, --lstm_units=8: these set",
        ),
        (dict(num_lstm_layers=1), "--num_lstm_layers=1: this sets"),
    ):
        with pytest.raises(
            InputError, match=f"^{given} the feature-based BiLSTM, which fine-tuning does not have; add "
        ):
            tagging.run_ner(
                dataclasses.replace(config, train_file=setup["train"], output_dir=str(tmp_path / "f"), **change)
            )
    assert not (tmp_path / "f").exists()
    unknown = tmp_path / "dev.txt"
    unknown.write_text("Paris NNP I-NP I-GPE\n")
    task = tagging.make_ner_task(dataclasses.replace(config, train_file=setup["train"], eval_file=str(unknown)))
    with pytest.raises(InputError, match=r"dev\.txt:1: unknown label 'I-GPE'"):
        task.evaluate(None)
