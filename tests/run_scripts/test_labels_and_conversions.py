"""Issue 40, run_classifier's labels and convert_checkpoint's crashes, as a user meets them: each case below trained
on the wrong classes, crashed or suggested the wrong fix, and now ends as one line naming the file and line (or
flag) and the fix, exit 2, no traceback, or simply works. Script runs, so marked slow; the readers are tested fast
in tests/nlp/data/test_classifier_examples.py and test_multi_label.py, the rest in tests/nlp/tasks/test_finetuning.py,
tests/nlp/checkpoints/peers/test_hf_weights.py and tests/nlp/common/test_output_files.py.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys

import numpy as np
import pytest

from tests import pretraining_records
from tests.conftest import REPO_ROOT
from tests.run_scripts.script_runs import (
    CONFIG,
    assert_quiet,
    assert_user_error,
    run_in_one_process,
    run_script,
    save_tiny_encoder,
)

pytestmark = pytest.mark.slow

TRAINING = ["--max_seq_length=16", "--train_batch_size=4", "--num_train_epochs=1"]


@pytest.fixture(scope="module")
def vocab(tmp_path_factory) -> str:
    return pretraining_records.write_vocab(tmp_path_factory.mktemp("vocab") / "vocab.txt")


@pytest.fixture(scope="module")
def model(tmp_path_factory, vocab) -> str:
    return save_tiny_encoder(str(tmp_path_factory.mktemp("models") / "encoder"), vocab, "ours")


def _generic_args(tmp_path, model, rows, *flags, file_format="tsv"):
    """The flags of run_classifier --task_name=generic --do_train on `rows` (text, label), which it writes as
    train.<file_format>; returns them and that file."""
    data = tmp_path / "data"
    data.mkdir(parents=True, exist_ok=True)
    train = data / f"train.{file_format}"
    if file_format == "jsonl":
        train.write_text("".join(json.dumps({"text": t, "label": y}) + "\n" for t, y in rows))
    else:
        train.write_text("text\tlabel\n" + "".join(f"{t}\t{y}\n" for t, y in rows))
    args = [
        "--task_name=generic", f"--file_format={file_format}", "--text_a_column=text", f"--data_dir={data}",
        f"--init_checkpoint={model}", "--do_train", f"--output_dir={tmp_path / 'out'}", *TRAINING, *flags,
    ]  # fmt: skip
    return args, train


def _generic(tmp_path, model, rows, *flags, file_format="tsv"):
    """run_classifier --task_name=generic --do_train on `rows` (text, label) written as train.<file_format>."""
    args, train = _generic_args(tmp_path, model, rows, *flags, file_format=file_format)
    return run_script("run_classifier.py", *args), train


WRONG_CLASSES = {
    "multi-label data in single-label mode": (
        [("w1 w2", "joy"), ("w3", "love"), ("w4 w5", "joy,love"), ("w6", "joy")],
        [],
        "tsv",
        4,
        "label 'joy,love' is a set of labels (joy, love), and this task reads one label per example",
    ),
    "JSON-list labels in single-label mode": (
        [("w1 w2", ["joy"]), ("w3", ["love"])],
        ["--skip_bad_rows"],  # not a bad row to skip
        "jsonl",
        1,
        'label ["joy"] is a set of labels (joy)',
    ),
    "a number-like label set with a value that is not a name": (
        [("w1 w2", "5"), ("w3", "0"), ("w4", "1")],
        ["--multi_label", "--labels=1,2,3,4,5"],
        "tsv",
        3,
        "unknown label '0'; the labels are 1, 2, 3, 4, 5, and since they look like numbers a value is read as a "
        "label name, never as an id",
    ),
    "no example has a label": (
        [("w1 w2", ""), ("w3", ""), ("w4", "")],
        ["--multi_label", "--labels=joy,love", "--allow_empty_labels"],
        "tsv",
        None,
        "none of its 3 examples has a label (every labels field is empty)",
    ),
}


@pytest.fixture(scope="module")
def label_refusals(tmp_path_factory, model) -> dict:
    """`{case: (result, train file)}` for every case of WRONG_CLASSES, each in a folder of its own, all run in one
    process (`run_in_one_process`: each still checked for its one line, exit status 2, no traceback)."""
    cases, trains = {}, {}
    for case, (rows, flags, file_format, _, _) in WRONG_CLASSES.items():
        folder = tmp_path_factory.mktemp("labels")
        args, trains[case] = _generic_args(folder, model, rows, *flags, file_format=file_format)
        cases[case] = ("run_classifier.py", args)
    results = run_in_one_process(cases)
    return {case: (results[case], trains[case]) for case in cases}


@pytest.mark.parametrize("case", [case for case in WRONG_CLASSES if case != "no example has a label"])
def test_run_classifier_refuses_labels_that_would_train_the_wrong_classes(label_refusals, case):
    result, train = label_refusals[case]
    _, flags, _, line, message = WRONG_CLASSES[case]
    assert_user_error(result, f"{train}:{line}: {message}")
    if "--multi_label" not in flags:
        assert "Add --multi_label (with --task_name=generic) to read label sets" in result.stderr
    assert "Training from step" not in result.stderr


def test_run_classifier_refuses_a_training_set_in_which_no_example_has_a_label(label_refusals):
    result, train = label_refusals["no example has a label"]
    assert_user_error(result, f"{train}: {WRONG_CLASSES['no example has a label'][4]}")
    assert "Training from step" not in result.stderr


def test_run_classifier_reads_a_field_longer_than_the_csv_limit(tmp_path, model):
    """`_csv.Error: field larger than field limit (131072)` before."""
    long_text = " ".join(f"w{i % 900}" for i in range(40_000))
    assert len(long_text) > 131_072
    rows = [("w1 w2", "a"), (long_text, "b"), ("w3", "a"), ("w4 w5", "b")]
    result, _ = _generic(tmp_path, model, rows)
    assert result.returncode == 0, result.stderr[-3000:]
    assert_quiet(result)


def test_a_run_without_do_eval_predicts_from_its_output_dir_and_converts(tmp_path, model, vocab):
    """`--do_predict --output_dir=<the run>` said `--bert_config_file is required`; converting the run suggested
    --bert_config_file (ours) or converting the pretrained model instead (--output_format=hf)."""
    data = tmp_path / "data"
    data.mkdir()
    texts = [f"w{i} w{i + 1} w{i + 2}" for i in range(0, 60, 3)]
    (data / "train.tsv").write_text("text\tlabel\n" + "".join(f"{t}\t{'ab'[i % 2]}\n" for i, t in enumerate(texts)))
    (data / "test.tsv").write_text("text\tlabel\n" + "".join(f"{t}\t\n" for t in texts[:6]))
    run = tmp_path / "run"
    common = ["--task_name=generic", "--text_a_column=text", f"--data_dir={data}", "--max_seq_length=16"]
    trained = run_script(
        "run_classifier.py", *common, f"--init_checkpoint={model}", "--do_train", f"--output_dir={run}", *TRAINING[1:]
    )
    assert trained.returncode == 0, trained.stderr[-3000:]
    assert not (run / "best_model").exists()

    # The predictions and the refusal in one process (`run_in_one_process`), as are the two conversions below.
    predicted = run_in_one_process({
        "alone": ("run_classifier.py", [*common, "--do_predict", f"--output_dir={run}"]),
        "named": (
            "run_classifier.py",
            [*common, "--do_predict", f"--init_checkpoint={run}", f"--output_dir={tmp_path / 'p'}"],
        ),
        "empty": ("run_classifier.py", [*common, "--do_predict", f"--output_dir={tmp_path / 'none'}"]),
    })  # fmt: skip
    for name in ("alone", "named"):
        assert predicted[name].returncode == 0, predicted[name].stderr[-3000:]
    probabilities = np.loadtxt(run / "test_results.tsv")
    np.testing.assert_array_equal(probabilities, np.loadtxt(tmp_path / "p" / "test_results.tsv"))
    assert_user_error(predicted["empty"], "--init_checkpoint is required: the model to use", "holds no finished run")

    converted = run_in_one_process({
        "ours": ("convert_checkpoint.py", [f"--input={run}", f"--output_dir={tmp_path / 'ours'}"]),
        "hf": ("convert_checkpoint.py", [f"--input={run}", f"--output_dir={tmp_path / 'hf'}", "--output_format=hf"]),
    })  # fmt: skip
    for name in ("ours", "hf"):
        assert converted[name].returncode == 0, converted[name].stderr[-3000:]

    # Our model directory: the run's encoder.
    from official.nlp.checkpoints import model_loading, our_checkpoints
    from official.nlp.modeling.configs import BertConfig
    from official.nlp.modeling.encoder import BertEncoder
    from official.nlp.modeling.models import BertClassifier

    encoder = model_loading.read_model_files(str(tmp_path / "ours")).build_encoder()
    classifier = BertClassifier(BertEncoder.from_bert_config(BertConfig(**CONFIG)), 2)
    our_checkpoints.restore_checkpoint(classifier, str(run / "ckpt-5"))
    for ours, theirs in zip(encoder.weights, classifier.encoder.weights):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())

    # A Hugging Face sequence classifier that transformers runs to the run's own probabilities.
    import torch
    import transformers

    hf_model = transformers.BertForSequenceClassification.from_pretrained(str(tmp_path / "hf")).eval()
    assert hf_model.config.id2label == {0: "a", 1: "b"}
    tokenizer = transformers.BertTokenizer.from_pretrained(str(tmp_path / "hf"))
    batch = tokenizer(texts[:6], padding=True, truncation=True, max_length=16, return_tensors="pt")
    with torch.no_grad():
        logits = hf_model(**batch).logits.numpy()
    expected = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    np.testing.assert_allclose(probabilities, expected, atol=1e-5)


def test_convert_checkpoint_names_a_truncated_safetensors_file_and_its_tensor(tmp_path, model):
    """A reshape `ValueError` before."""
    whole = tmp_path / "whole"
    assert (
        run_script(
            "convert_checkpoint.py", f"--input={model}", f"--output_dir={whole}", "--output_format=hf"
        ).returncode
        == 0
    )
    weights = whole / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-1000])
    result = run_script("convert_checkpoint.py", f"--input={whole}", f"--output_dir={tmp_path / 'out'}")
    assert_user_error(result, f"{weights} is truncated: tensor ", "copy or download it again")
    assert not (tmp_path / "out").exists()


def _with_file_size_limit(limit: int, *args: str) -> subprocess.CompletedProcess:
    """convert_checkpoint with `ulimit -f`: every write past `limit` bytes fails with EFBIG, as on a full disk
    (Python ignores SIGXFSZ), deterministically and without filling a real disk."""
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)
    return subprocess.run(
        [sys.executable, str(REPO_ROOT / "run_scripts" / "convert_checkpoint.py"), *args],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY)),
    )  # fmt: skip


@pytest.mark.parametrize(
    "output_format, limit",
    [("hf", 2048), ("ours", 2048), ("ours", 100_000)],  # the vocabulary (the input's name before), the checkpoint
)
def test_convert_checkpoint_on_a_full_disk_names_the_output(tmp_path, model, output_format, limit):
    out = tmp_path / "out"
    result = _with_file_size_limit(limit, f"--input={model}", f"--output_dir={out}", f"--output_format={output_format}")
    message = assert_user_error(result, f"--output_dir={out}: cannot be written (File too large)", "ulimit -f")
    assert model not in message
    assert sorted(os.listdir(tmp_path)) == []  # nothing kept: no output, no staging folder
