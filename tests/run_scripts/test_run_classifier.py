"""run_classifier.py as users run it (train, evaluate each epoch, predict, rerun, refused rerun, bad rows), and the
`model.fit` path: a classifier fine-tuned from Python on raw strings tokenized in-graph predicts what the script
predicts with the same weights."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from official.nlp.checkpoints import model_dir, model_loading
from official.nlp.data import classifier_examples, glue
from official.nlp.modeling.configs import BertConfig
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.modeling.models import BertClassifier
from official.nlp.tasks import classification
from official.nlp.tokenizers.text_layers import BertPackInputs, BertTokenizer
from official.nlp.training import optimization
from tests.conftest import REPO_ROOT
from tests.run_scripts.script_runs import run_in_one_process

SCRIPT = str(REPO_ROOT / "run_scripts" / "run_classifier.py")
SEQ = 32
TINY = dict(
    vocab_size=30522,
    hidden_size=32,
    num_hidden_layers=1,
    num_attention_heads=2,
    intermediate_size=64,
    max_position_embeddings=64,
)


def _run(args):
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    return subprocess.run(
        [sys.executable, SCRIPT, *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600
    )


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory, uncased_vocab):
    path = str(tmp_path_factory.mktemp("tiny") / "model")
    keras.utils.set_random_seed(3)
    model_dir.save_model_dir(
        path, BertEncoder.from_bert_config(BertConfig(**TINY)), vocab_file=str(uncased_vocab), do_lower_case=True
    )
    return path


@pytest.fixture(scope="module")
def mrpc(tmp_path_factory, shared_data):
    """MRPC slices in the GLUE layout (byte-order mark and header kept), one bad row in train."""
    folder = tmp_path_factory.mktemp("mrpc")
    for name, rows in (("train.tsv", 64), ("dev.tsv", 32), ("test.tsv", 16)):
        lines = (shared_data / "glue" / "MRPC" / name).read_text(encoding="utf-8").splitlines(keepends=True)
        kept = lines[: rows + 1]
        if name == "train.tsv":
            kept.insert(5, "1\t12\t13\tonly three columns\n")
        (folder / name).write_text("".join(kept), encoding="utf-8")
    return folder


def _flags(tiny_model, mrpc, out, *extra):
    return [
        "--task_name=MRPC",
        f"--data_dir={mrpc}",
        f"--init_checkpoint={tiny_model}",
        f"--output_dir={out}",
        f"--max_seq_length={SEQ}",
        "--train_batch_size=16",
        "--eval_batch_size=16",
        "--num_train_epochs=2",
        "--learning_rate=1e-3",
        "--steps_per_loop=2",
        *extra,
    ]


@pytest.mark.slow
def test_train_eval_predict_resume_and_refusals(tiny_model, mrpc, tmp_path):
    out = tmp_path / "out"
    bad = _run(_flags(tiny_model, mrpc, out, "--do_train"))
    assert bad.returncode == 2, bad.stderr[-2000:]
    assert bad.stderr.strip().splitlines()[-1] == (
        f"run_classifier: {mrpc}/train.tsv:6: 4 column(s), mrpc needs at least 5 (--skip_bad_rows skips and counts "
        "such rows)"
    )

    first = _run(_flags(tiny_model, mrpc, out, "--do_train", "--do_eval", "--do_predict", "--skip_bad_rows"))
    assert first.returncode == 0, first.stderr[-3000:]
    history = json.loads((out / "eval_history.json").read_text())
    assert [(e["epoch"], e["step"]) for e in history] == [(1, 4), (2, 8)]  # 64 rows / 16, twice
    assert all({"f1", "accuracy", "loss"} <= set(e) and e["bad_rows_train"] == 1 for e in history)
    results = (out / "eval_results.txt").read_text()
    assert results.count("***** Eval results") == 2 and "bad_rows_train = 1.0" in results
    submission = (out / "MRPC.tsv").read_text().splitlines()
    assert submission[0] == "index\tprediction" and len(submission) == 17
    assert [row.split("\t")[0] for row in submission[1:4]] == ["0", "1", "2"]
    assert {row.split("\t")[1] for row in submission[1:]} <= {"0", "1"}
    best = json.loads((out / "best_model" / "finetuning.json").read_text())
    assert best["labels"] == ["0", "1"] and best["head"] == "classifier" and best["metric"] == "f1"
    assert best["evaluation"]["f1"] == max(e["f1"] for e in history)
    summaries = tf.io.gfile.glob(str(out / "summaries" / "eval" / "events*"))
    tags = {
        v.tag for path in summaries for event in tf.compat.v1.train.summary_iterator(path) for v in event.summary.value
    }
    assert {"f1", "accuracy"} <= tags

    again = _run(_flags(tiny_model, mrpc, out, "--do_train", "--do_eval", "--skip_bad_rows"))
    assert again.returncode == 0, again.stderr[-3000:]
    assert "already at step 8 of 8: nothing to train" in again.stderr
    assert "Reusing the 64 cached feature records" in again.stderr
    assert json.loads((out / "eval_history.json").read_text()) == history

    # Two refusals at start-up, in one process (TensorFlow imported once).
    refused = run_in_one_process(
        {
            "other": (
                "run_classifier.py",
                _flags(tiny_model, mrpc, out, "--do_train", "--skip_bad_rows", "--max_seq_length=48"),
            ),
            "wrong_head": (
                "run_classifier.py",
                [
                    "--task_name=RTE",
                    f"--data_dir={mrpc}",
                    f"--init_checkpoint={out / 'best_model'}",
                    f"--output_dir={tmp_path / 'rte'}",
                    f"--max_seq_length={SEQ}",
                    "--do_predict",
                ],
            ),
        }
    )
    other, wrong_head = refused["other"], refused["wrong_head"]
    assert other.returncode == 2
    assert "--max_seq_length: 32 there, 48 now" in other.stderr.strip().splitlines()[-1]
    assert wrong_head.returncode == 2
    assert "labels ['0', '1']" in wrong_head.stderr and "['entailment', 'not_entailment']" in wrong_head.stderr


def _in_graph_datasets(vocab_file, batches):
    """Raw strings -> ids in the tf.data graph: the library's exact tokenizer and packer layers (built once), for
    each `(examples, labels or None, batch size)` of `batches`."""
    tokenizer = BertTokenizer(vocab_file, do_lower_case=True)
    packer = BertPackInputs(
        SEQ,
        start_of_sequence_id=tokenizer.token_to_id("[CLS]"),
        end_of_segment_id=tokenizer.token_to_id("[SEP]"),
        padding_id=tokenizer.token_to_id("[PAD]"),
    )
    datasets = []
    for examples, labels, batch_size in batches:
        texts = tf.data.Dataset.from_tensor_slices(([e.text_a for e in examples], [e.text_b for e in examples]))
        dataset = texts.batch(batch_size).map(lambda a, b: packer([tokenizer(a), tokenizer(b)]))
        if labels is not None:
            dataset = tf.data.Dataset.zip((dataset, tf.data.Dataset.from_tensor_slices(labels).batch(batch_size)))
        datasets.append(dataset)
    return datasets


@pytest.mark.slow
def test_model_fit_on_raw_strings_predicts_what_the_script_path_predicts(tiny_model, mrpc, tmp_path):
    processor = glue.get_processor("mrpc")
    train = processor.read(str(mrpc / "train.tsv"), classifier_examples.TRAIN, skip_bad_rows=True).examples
    test = processor.read(str(mrpc / "test.tsv"), classifier_examples.TEST).examples
    files = model_loading.read_model_files(tiny_model)
    keras.utils.set_random_seed(0)
    model = BertClassifier(files.build_encoder(), num_classes=2)
    labels = np.array([int(e.label) for e in train], "int32")
    model.compile(
        optimizer=optimization.create_optimizer(learning_rate=1e-3, num_train_steps=12, num_warmup_steps=1),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    train_dataset, test_dataset = _in_graph_datasets(files.vocab_file, [(train, labels, 16), (test, None, 8)])
    assert len(train) % 16 == 0  # the epochs below see each example once, as epochs of `train_dataset` would
    # Repeated, with the steps of an epoch given: one iterator for the three epochs (Keras builds one per epoch
    # otherwise, and each builds the tokenizer's tables in the tf.data graph again).
    history = model.fit(train_dataset.repeat(), epochs=3, steps_per_epoch=len(train) // 16, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    logits = model.predict(test_dataset, verbose=0)

    saved = classification.save_classifier(
        model, str(tmp_path / "fit_model"), files, task_name="mrpc", labels=processor.labels
    )
    result = classification.run_classifier(
        classification.ClassifierConfig(
            task_name="mrpc",
            data_dir=str(mrpc),
            init_checkpoint=saved,
            output_dir=str(tmp_path / "predict"),
            max_seq_length=SEQ,
            do_predict=True,
        )
    )
    submission = (tmp_path / "predict" / "MRPC.tsv").read_text().splitlines()[1:]
    assert [row.split("\t")[1] for row in submission] == [processor.labels[i] for i in logits.argmax(-1)]
    probabilities = np.loadtxt(tmp_path / "predict" / "test_results.tsv")
    np.testing.assert_allclose(probabilities, tf.nn.softmax(logits).numpy(), atol=1e-5)
    assert result.predictions


@pytest.mark.slow
def test_eval_only_and_predict_settings_in_process(tiny_model, mrpc, tmp_path, monkeypatch):
    """`--do_eval` alone writes eval_results.txt with the numbers the training run reported for the same
    checkpoint; prediction batches by --predict_batch_size and writes full-precision probabilities."""
    from official.nlp.data import classifier_features

    out = tmp_path / "out"
    common = dict(
        task_name="mrpc",
        data_dir=str(mrpc),
        init_checkpoint=tiny_model,
        output_dir=str(out),
        max_seq_length=SEQ,
        train_batch_size=16,
        eval_batch_size=16,
        predict_batch_size=5,
        num_train_epochs=1,
        learning_rate=1e-3,
        skip_bad_rows=True,
    )
    trained = classification.run_classifier(classification.ClassifierConfig(**common, do_train=True, do_eval=True))
    reported = trained.eval_history[-1]
    (out / "eval_results.txt").unlink()
    batch_sizes = []
    make_dataset = classifier_features.make_dataset

    def recording(path, seq, batch_size, **kwargs):
        batch_sizes.append((os.path.basename(path), batch_size))
        return make_dataset(path, seq, batch_size, **kwargs)

    monkeypatch.setattr(classifier_features, "make_dataset", recording)
    classification.run_classifier(classification.ClassifierConfig(**common, do_eval=True, do_predict=True))
    block = (out / "eval_results.txt").read_text().split("*****")[-1]
    written = dict(line.split(" = ") for line in block.strip().splitlines())
    assert written["step"] == str(reported["step"])
    for key in ("f1", "accuracy", "loss"):
        assert written[key] == repr(reported[key])
    assert batch_sizes == [("eval.tf_record", 16), ("predict.tf_record", 5)]
    rows = (out / "test_results.tsv").read_text().splitlines()
    values = [v for row in rows for v in row.split("\t")]
    assert len(rows) == 16 and all(v == repr(float(v)) for v in values)
    assert max(len(v.split(".")[-1]) for v in values) > 6  # not rounded to 6 decimals


@pytest.mark.parametrize(
    "labels, message",
    [("3,28", "label id 28 is out of range: there are 28 labels (ids 0 to 27)"), ("joy,rage", "unknown label 'rage'")],
)
def test_multi_label_bad_rows_stop_before_training(tiny_model, shared_data, tmp_path, labels, message):
    """GoEmotions with a bad labels field: one message naming the file and line (what run_classifier prints as its
    one line), before any step is trained."""
    lines = (shared_data / "goemotions" / "train.tsv").read_text(encoding="utf-8").splitlines(keepends=True)[:8]
    bad = f"a comment\t{labels}\tid5\n"
    (tmp_path / "train.tsv").write_text("".join(lines[:5]) + bad + "".join(lines[5:]), encoding="utf-8")
    config = classification.ClassifierConfig(
        task_name="goemotions",
        data_dir=str(tmp_path),
        init_checkpoint=tiny_model,
        output_dir=str(tmp_path / "out"),
        max_seq_length=SEQ,
        do_train=True,
    )
    with pytest.raises(classifier_examples.BadRowError) as raised:
        classification.run_classifier(config)
    assert str(raised.value).startswith(f"{tmp_path / 'train.tsv'}:6: {message}")
    assert str(raised.value).endswith("(--skip_bad_rows skips and counts such rows)")
    assert not tf.io.gfile.glob(str(tmp_path / "out" / "ckpt-*"))


def test_group_by_length_off_draws_the_original_batches(tiny_model, mrpc, tmp_path):
    """`group_by_length=False`: the examples and order of a uniformly shuffled run, padded to max_seq_length."""
    from official.nlp.data import classifier_features

    files = model_loading.read_model_files(tiny_model)
    seq = 64  # MRPC pairs fall into several length buckets
    context = tf.distribute.InputContext()

    def first_batches(group_by_length, count=5):
        config = classification.ClassifierConfig(
            task_name="mrpc",
            data_dir=str(mrpc),
            init_checkpoint=tiny_model,
            output_dir=str(tmp_path),
            max_seq_length=seq,
            skip_bad_rows=True,
            group_by_length=group_by_length,
        )
        dataset = classification.ClassificationTask(config, files).train_dataset(context, 8, seed=3)
        return [x["input_word_ids"].numpy() for x, _ in dataset.take(count)]

    fixed = first_batches(False)
    spec = classifier_features.record_spec(seq, regression=False)
    original = (
        tf.data.TFRecordDataset(str(tmp_path / "train.tf_record"))
        .shuffle(10000, seed=3, reshuffle_each_iteration=True)
        .repeat()
        .batch(8, drop_remainder=True)
        .map(lambda records: tf.io.parse_example(records, spec)["input_ids"])
    )
    for got, want in zip(fixed, original.take(5)):
        assert got.shape == (8, seq)
        np.testing.assert_array_equal(got, want.numpy())
    grouped = first_batches(True)
    assert any(g.shape != f.shape or (g != f).any() for g, f in zip(grouped, fixed))


@pytest.mark.slow
def test_group_by_length_off_trains_as_every_batch_padded(tiny_model, mrpc, tmp_path, monkeypatch):
    """The loss after an epoch with `group_by_length=False` is that of a run whose batches all go through the
    length grouping with one bucket, max_seq_length (what TPUs get: every batch padded to it), to 1e-5; the default
    grouping draws other batches, and another loss."""
    seq = 64

    def train_loss(name, group_by_length):
        config = classification.ClassifierConfig(
            task_name="mrpc",
            data_dir=str(mrpc),
            init_checkpoint=tiny_model,
            output_dir=str(tmp_path / name),
            max_seq_length=seq,
            train_batch_size=8,
            num_train_epochs=1,
            learning_rate=1e-3,
            skip_bad_rows=True,
            do_train=True,
            group_by_length=group_by_length,
        )
        return classification.run_classifier(config).train_metrics["loss"]

    fixed = train_loss("fixed", False)
    grouped = train_loss("grouped", True)
    monkeypatch.setattr(classification.ClassificationTask, "_buckets", lambda self: (seq,))
    padded = train_loss("padded", True)
    assert abs(fixed - padded) <= 1e-5, (fixed, padded)
    assert abs(fixed - grouped) > 1e-4, (fixed, grouped)
