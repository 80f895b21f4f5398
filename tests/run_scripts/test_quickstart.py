"""run_scripts/quickstart.sh end to end with its smallest settings, then every stage's output checked on its own.

The checks do not trust the quickstart's summary: the vocabulary is validated and must cover the task's words,
the records are parsed and counted, the pretrained checkpoint is restored, the dev accuracies are read from the
fine-tuning jobs, and the SavedModel's answers (served in a fresh process) are recomputed here with the library's
Python tokenizer and the fine-tuned checkpoint.
"""

import csv
import json
import math
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = REPO / "run_scripts" / "quickstart.sh"


# A C++ (Abseil/TSL) log line: severity, date, time, thread, source file:line, then the message.
_CPP_LOG = re.compile(r"^[IWEF]\d{4} [\d:.]+\s+\d+ [\w./+-]+\.(?:cc|cpp|c|h|hpp):\d+\] ")


def _cpp_log_messages(env) -> set[str]:
    """The messages of the C++ log lines that `import tensorflow` and one op print to stderr in `env`."""
    probe = subprocess.run(
        [sys.executable, "-c", "import tensorflow as tf; tf.constant(1) + 1"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert probe.returncode == 0, probe.stderr
    return {_CPP_LOG.sub("", line) for line in probe.stderr.splitlines() if _CPP_LOG.match(line)}


def _env(**extra):
    env = dict(os.environ, PYTHON=sys.executable, **extra)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    return env


def test_help_prints_usage_and_runs_nothing(tmp_path):
    result = subprocess.run(
        ["bash", str(SCRIPT), "--help"], capture_output=True, text=True, env=_env(), cwd=tmp_path, timeout=30
    )
    assert result.returncode == 0
    assert result.stdout.startswith("Usage: bash run_scripts/quickstart.sh")
    assert "--smallest" in result.stdout and "--input_file" in result.stdout


def test_unknown_flag_is_one_clean_line(tmp_path):
    result = subprocess.run(
        ["bash", str(SCRIPT), "--no_install", "--pretrain_step=3"],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=30,
    )
    assert result.returncode == 2
    assert result.stderr.strip() == "quickstart.sh: unknown argument '--pretrain_step=3' (see --help)"
    assert result.stdout == ""


def test_an_output_folder_that_is_not_a_quickstarts_is_refused_before_anything_runs(tmp_path):
    """Issue 30: the stages `rm -rf` their own folders (export/, pretraining/, ...) in --output_dir."""
    (tmp_path / "export").mkdir()
    (tmp_path / "export" / "model.bin").write_bytes(b"the user's")
    result = subprocess.run(
        ["bash", str(SCRIPT), "--no_install", f"--output_dir={tmp_path}"],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=30,
    )
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip() == (
        f"quickstart.sh: --output_dir={tmp_path} holds files that a quickstart did not write, and its stages "
        "replace folders in it; name a new or empty folder"
    )
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == ["export", "export/model.bin"]


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory):
    out = tmp_path_factory.mktemp("quickstart")
    result = subprocess.run(
        ["bash", str(SCRIPT), "--no_install", f"--output_dir={out}"],
        capture_output=True,
        text=True,
        env=_env(QUICKSTART_SMALLEST="1"),
        timeout=900,
    )
    log = (out / "quickstart.log").read_text() if (out / "quickstart.log").exists() else ""
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}\n{log[-5000:]}"
    return out, result


@pytest.mark.slow
def test_screen_shows_one_line_per_stage_and_the_summary(quickstart):
    out, result = quickstart
    lines = result.stdout.splitlines()
    for stage in range(1, 8):
        assert sum(line.startswith(f"[{stage}/7] ") for line in lines) == 1
    assert any(line.startswith("total ") for line in lines)
    screen = result.stdout + result.stderr
    for noise in ("oneDNN", "cuda", "cuInit", "Traceback", "WARNING", "I0000", "W0000"):
        assert noise not in screen, noise
    assert not [line for line in screen.splitlines() if _CPP_LOG.match(line)]
    # What TensorFlow prints from C++ depends on the machine (oneDNN's line only where oneDNN is on, CUDA's only
    # without a GPU), so the lines expected in the log are the ones a bare import prints here, with this environment.
    log = (out / "quickstart.log").read_text()
    printed = _cpp_log_messages(_env(QUICKSTART_SMALLEST="1"))
    assert printed, "a bare `import tensorflow` printed no C++ log line to compare with"
    assert [message for message in printed if message not in log] == []  # the noise went to the log instead


@pytest.mark.slow
def test_vocabulary_is_valid_and_covers_the_task(quickstart):
    from official.nlp.tokenizers import tokenization

    out, _ = quickstart
    vocab = tokenization.load_vocab(str(out / "vocab.txt"))
    tokenization.validate_vocab(list(vocab), do_lower_case=True, source="vocab.txt")
    assert 300 < len(vocab) <= 8000
    tokenizer = tokenization.FullTokenizer(str(out / "vocab.txt"), do_lower_case=True)
    with open(REPO / "data" / "reviews" / "dev.tsv", encoding="utf-8") as f:
        sentences = [row["sentence"] for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)]
    unknown = sum(token == "[UNK]" for s in sentences for token in tokenizer.tokenize(s))
    assert unknown == 0


@pytest.mark.slow
def test_records_parse_with_the_original_schema(quickstart):
    import tensorflow as tf

    out, _ = quickstart
    seq, predictions = 32, 32 * 15 // 100 + 1
    schema = {
        "input_ids": tf.io.FixedLenFeature([seq], tf.int64),
        "input_mask": tf.io.FixedLenFeature([seq], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([seq], tf.int64),
        "masked_lm_positions": tf.io.FixedLenFeature([predictions], tf.int64),
        "masked_lm_ids": tf.io.FixedLenFeature([predictions], tf.int64),
        "masked_lm_weights": tf.io.FixedLenFeature([predictions], tf.float32),
        "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64),
    }
    records = list(tf.data.TFRecordDataset(str(out / "pretraining_data" / "train.tfrecord")))
    stats = json.loads((out / "pretraining_data_stats.json").read_text())
    assert len(records) == stats["instances"] > 1000
    vocab_size = len((out / "vocab.txt").read_text().splitlines())
    labels = []
    for record in records[:200]:
        example = tf.io.parse_single_example(record, schema)
        assert int(tf.reduce_max(example["input_ids"])) < vocab_size
        assert float(tf.reduce_sum(example["masked_lm_weights"])) >= 1
        labels.append(int(example["next_sentence_labels"][0]))
    assert 0 < sum(labels) < len(labels)  # both next-sentence classes occur


@pytest.mark.slow
def test_pretrained_checkpoint_restores_and_learned(quickstart):
    from official.nlp.checkpoints import model_loading
    from official.nlp.modeling.models import BertPretrainer

    out, result = quickstart
    files = model_loading.read_model_files(str(out / "pretraining" / "export"))
    vocab_size = len((out / "vocab.txt").read_text().splitlines())
    assert files.config.vocab_size == vocab_size and files.config.num_hidden_layers == 2
    pretrainer = BertPretrainer(files.build_encoder())
    files.restore(pretrainer)  # the encoder and the pretraining heads
    line = next(text for text in result.stdout.splitlines() if text.startswith("[3/7] "))
    mlm_loss = float(line.split("MLM loss ")[1].split()[0])
    assert mlm_loss < math.log(vocab_size) - 0.5  # below the loss of a uniform guess


@pytest.mark.slow
def test_fine_tuned_classifiers_beat_chance(quickstart):
    out, _ = quickstart
    # 300 balanced dev sentences: chance is 0.5 and 0.6 is 3.5 standard deviations above it.
    for name, floor in (("classifier_tiny", 0.6), ("classifier_minilm", 0.8)):
        history = json.loads((out / name / "eval_history.json").read_text())
        assert max(epoch["accuracy"] for epoch in history) > floor, (name, history)


@pytest.mark.slow
def test_the_baseline_is_the_same_fine_tuning_from_random_weights(quickstart):
    """Stage 4 shows what pretraining bought: beside the pretrained model's dev accuracy, that of the same
    fine-tuning (model config, vocabulary, seed, schedule) started from random weights."""
    out, result = quickstart
    line = next(text for text in result.stdout.splitlines() if text.startswith("[4/7] "))
    accuracies = {}
    for name in ("tiny", "random"):
        history = json.loads((out / f"classifier_{name}" / "eval_history.json").read_text())
        accuracies[name] = f"{max(epoch['accuracy'] for epoch in history):.3f}"
    assert line.endswith(f"dev accuracy {accuracies['tiny']} (random weights: {accuracies['random']})"), line
    pretrained, random = (
        json.loads((out / f"classifier_{name}" / "finetuning_settings.json").read_text()) for name in ("tiny", "random")
    )
    assert random["init_checkpoint"] is None and pretrained["init_checkpoint"] == str(out / "pretraining" / "export")
    differing = {k for k in pretrained.keys() | random.keys() if pretrained.get(k) != random.get(k)}
    assert differing <= {"init_checkpoint", "bert_config_file", "vocab_file", "do_lower_case"}, differing


@pytest.mark.slow
def test_served_answers_match_the_fine_tuned_checkpoint(quickstart):
    """The answers of the SavedModel (fresh process, raw strings) = the checkpoint run here on Python tokens."""
    import keras

    from official.nlp.checkpoints import model_loading, our_checkpoints
    from official.nlp.modeling.models import BertClassifier

    out, _ = quickstart
    with open(out / "predictions.tsv", encoding="utf-8") as f:
        served = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE, escapechar="\\"))
    with open(REPO / "data" / "reviews" / "examples.tsv", encoding="utf-8") as f:
        examples = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    assert [row["sentence"] for row in served] == [row["sentence"] for row in examples]

    summary = json.loads((out / "summary.json").read_text())
    assert summary["saved_model"] == str(out / "export" / "1")
    files = model_loading.read_model_files(str(out / f"classifier_{summary['exported']}" / "best_model"))
    model = BertClassifier(files.build_encoder(), num_classes=2)
    our_checkpoints.restore_checkpoint(model, files.checkpoint)
    tokenizer, seq = files.tokenizer(), 32
    ids = np.zeros((len(served), seq), "int32")
    for i, row in enumerate(served):
        tokens = ["[CLS]"] + tokenizer.tokenize(row["sentence"])[: seq - 2] + ["[SEP]"]
        ids[i, : len(tokens)] = tokenizer.convert_tokens_to_ids(tokens)
    inputs = {"input_word_ids": ids, "input_mask": (ids > 0).astype("int32"), "input_type_ids": np.zeros_like(ids)}
    probabilities = keras.ops.convert_to_numpy(keras.ops.softmax(model(inputs, training=False)))
    names = ["negative", "positive"]
    for row, p in zip(served, probabilities):
        assert row["label"] == names[int(p.argmax())]
        assert abs(float(row["probability"]) - float(p.max())) < 1e-3
    right = sum(row["label"] == row["expected"] for row in served)
    assert right >= len(served) // 2 + 1  # a trained model, not a coin
