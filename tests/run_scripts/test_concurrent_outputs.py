"""Two jobs on one output at the same instant (issue 30): two real processes of the scripts, started together.

A scheduler that retries a job while the first attempt still runs, or two people in one bucket, do this. Each job
writes under names of its own and claims what two jobs could both take (`official.nlp.common.output_folders`), so
whichever finishes leaves a whole, loadable artifact, and each reports what it really wrote. Before, two exports
both took version 1 (one crashed on the other's staging folder, or both reported version 1 and one model was lost),
and two conversions crashed in TensorFlow's MergeV2Checkpoints.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from tests import pretraining_records
from tests.conftest import REPO_ROOT
from tests.run_scripts.script_runs import CONFIG, assert_user_error

pytestmark = pytest.mark.slow

START_TOGETHER = str(REPO_ROOT / "tests" / "run_scripts" / "start_together.py")


def _start_together(tmp_path, *jobs: list[str]) -> list[subprocess.CompletedProcess]:
    """Runs each job (`[script, flags...]`) in its own process; they start their work at the same instant."""
    go = tmp_path / "go"
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)
    processes = []
    for i, job in enumerate(jobs):
        command = [sys.executable, START_TOGETHER, str(tmp_path / f"ready-{i}"), str(go), *job]
        processes.append(
            subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        )
    deadline = time.monotonic() + 240
    while not all((tmp_path / f"ready-{i}").exists() for i in range(len(jobs))):
        assert time.monotonic() < deadline and all(p.poll() is None for p in processes), "a job did not start"
        time.sleep(0.01)
    go.write_text("")
    results = []
    for job, process in zip(jobs, processes):
        out, err = process.communicate(timeout=300)
        results.append(subprocess.CompletedProcess(job, process.returncode, out, err))
    return results


def save_tiny_classifiers(root) -> dict[tuple[str, ...], str]:
    """Two fine-tuned classifier model directories (random heads) with different label names: {labels: path}."""
    import keras

    from official.nlp.checkpoints import model_dir
    from official.nlp.modeling.configs import BertConfig
    from official.nlp.modeling.encoder import BertEncoder
    from official.nlp.modeling.models import BertClassifier
    from official.nlp.tasks import classification

    vocab = pretraining_records.write_vocab(root / "vocab.txt")
    files = model_dir.ModelFiles(config=BertConfig(**CONFIG), vocab_file=vocab, do_lower_case=True)
    paths = {}
    for seed, labels in ((1, ["sad", "happy"]), (2, ["no", "yes"])):
        keras.utils.set_random_seed(seed)
        model = BertClassifier(BertEncoder.from_bert_config(files.config), num_classes=2)
        paths[tuple(labels)] = classification.save_classifier(
            model, str(root / "-".join(labels)), files, task_name="sst-2", labels=labels
        )
    return paths


@pytest.fixture(scope="module")
def classifiers(tmp_path_factory):
    return save_tiny_classifiers(tmp_path_factory.mktemp("classifiers"))


def test_two_exports_into_one_folder_at_once_each_get_a_whole_version(classifiers, tmp_path):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the ops of the raw-text signature)

    export_dir = tmp_path / "export"
    jobs = [
        ["export_model.py", "--task=classifier", f"--init_checkpoint={path}", f"--export_dir={export_dir}",
         "--max_seq_length=16", "--keras_file=False"]
        for path in classifiers.values()
    ]  # fmt: skip
    results = _start_together(tmp_path, *jobs)
    written = {}
    for labels, result in zip(classifiers, results):
        assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr[-3000:]
        (line,) = [line for line in result.stdout.splitlines() if line.startswith("saved_model: ")]
        written[labels] = line.split(": ", 1)[1]
    assert sorted(os.path.basename(p) for p in written.values()) == ["1", "2"]  # one version each
    for labels, version in written.items():  # each reported version holds that job's model, whole and loadable
        assert (export_dir / os.path.basename(version) / "assets" / "label_names.txt").read_text().split() == list(
            labels
        )
        served = tf.saved_model.load(version).signatures["serving_default"](text_a=tf.constant(["w1 w2 w3"]))
        assert served["label_name"].numpy()[0].decode() in labels
    assert sorted(os.listdir(export_dir)) == ["1", "2", "token_ids"]  # no claim or staging left behind
    assert sorted(os.listdir(export_dir / "token_ids")) == ["1", "2"]


def test_two_conversions_into_one_folder_at_once_leave_one_whole_model_directory(classifiers, tmp_path):
    from official.nlp.checkpoints import model_loading

    source = classifiers[("sad", "happy")]
    out = tmp_path / "converted"
    job = ["convert_checkpoint.py", f"--input={source}", f"--output_dir={out}"]
    results = _start_together(tmp_path, job, job)
    assert sorted(r.returncode for r in results) == [0, 2], [r.stderr[-3000:] for r in results]
    refused = next(r for r in results if r.returncode == 2)
    message = assert_user_error(refused, str(out))
    assert "another job" in message or "already holds files" in message, message
    model, files = model_loading.load_model(str(out))
    assert files.checkpoint == str(out / "ckpt-1") and model.config.vocab_size == CONFIG["vocab_size"]
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no claim or staging left
    assert json.loads((out / "bert_config.json").read_text())["hidden_size"] == CONFIG["hidden_size"]


# ---- issue 40: jobs that write and resume one output; one of two started together is refused ---------------------


def _refused_for_the_other_job(result: subprocess.CompletedProcess, output: str) -> None:
    message = assert_user_error(result, output)
    assert "is being written by another job" in message or "holds a run with other settings" in message, message


def test_two_prepare_corpus_jobs_on_one_output_never_both_write_it(tmp_path):
    """Issue 40: two jobs of different inputs on one output both exited 0. Now one is refused while the other runs
    (a claim on each output file), and the output is one job's, whole."""
    from official.nlp.data.corpus.preparation import prepare_corpus
    from official.nlp.data.corpus.settings import CorpusConfig

    inputs, expected = {}, {}
    for name in ("a", "b"):
        inputs[name] = tmp_path / f"{name}.txt"
        inputs[name].write_text(
            "\n\n".join(f"Corpus {name}, document {i}. It has two sentences." for i in range(40)) + "\n"
        )
        prepare_corpus(
            CorpusConfig(
                input_file=str(inputs[name]), output_file=str(tmp_path / name / "c@2"), unit_mb=0.0005, num_workers=1
            )
        )
        expected[name] = [(tmp_path / name / f"c-0000{i}-of-00002").read_bytes() for i in range(2)]
    out = tmp_path / "out"
    jobs = [
        ["prepare_corpus.py", f"--input_file={inputs[name]}", f"--output_file={out}/c@2", "--unit_mb=0.0005"]
        for name in ("a", "b")
    ]
    results = _start_together(tmp_path, *jobs)
    succeeded = [name for name, r in zip(("a", "b"), results) if r.returncode == 0]
    for result in results:
        if result.returncode != 0:
            _refused_for_the_other_job(result, f"--output_file {out}")
    assert succeeded, [r.stderr[-2000:] for r in results]
    written = [(out / f"c-0000{i}-of-00002").read_bytes() for i in range(2)]
    assert written in [expected[name] for name in succeeded]  # one job's output, whole: never a mix
    assert sorted(p.name for p in out.iterdir()) == ["c-00000-of-00002", "c-00001-of-00002", "stats"]  # no claim left


@pytest.fixture(scope="module")
def tiny_encoder(tmp_path_factory) -> str:
    import keras

    from official.nlp.checkpoints import model_dir
    from official.nlp.modeling.configs import BertConfig
    from official.nlp.modeling.encoder import BertEncoder

    root = tmp_path_factory.mktemp("encoder")
    vocab = pretraining_records.write_vocab(root / "vocab.txt")
    keras.utils.set_random_seed(0)
    encoder = BertEncoder.from_bert_config(BertConfig(**CONFIG))
    model_dir.save_model_dir(str(root / "model"), encoder, vocab_file=vocab, do_lower_case=True)
    return str(root / "model")


def test_two_run_classifier_jobs_of_other_settings_on_one_output_dir_never_both_succeed(
    tiny_encoder, shared_data, tmp_path
):
    """Issue 40: two jobs of different learning rates in one --output_dir both exited 0, leaving one job's
    settings beside the other's best_model/. Now the second is refused (while the first runs: its claim; after:
    the settings the first recorded), and the folder holds one job's run."""
    data = tmp_path / "mrpc"
    data.mkdir()
    for name, rows in (("train.tsv", 24), ("dev.tsv", 8)):
        lines = (shared_data / "glue" / "MRPC" / name).read_text(encoding="utf-8").splitlines(keepends=True)
        (data / name).write_text("".join(lines[: rows + 1]), encoding="utf-8")
    out = tmp_path / "out"
    jobs = [
        ["run_classifier.py", "--task_name=MRPC", f"--data_dir={data}", f"--init_checkpoint={tiny_encoder}",
         f"--output_dir={out}", "--do_train", "--do_eval", "--max_seq_length=32", "--train_batch_size=8",
         "--num_train_epochs=1", f"--learning_rate={rate}"]
        for rate in ("1e-3", "5e-4")
    ]  # fmt: skip
    results = _start_together(tmp_path, *jobs)
    assert sorted(r.returncode for r in results) == [0, 2], [r.stderr[-3000:] for r in results]
    winner = 0 if results[0].returncode == 0 else 1
    _refused_for_the_other_job(results[1 - winner], f"--output_dir={out}")
    rate = float(jobs[winner][-1].split("=")[1])
    assert json.loads((out / "finetuning_settings.json").read_text())["learning_rate"] == rate
    best = json.loads((out / "best_model" / "finetuning_settings.json").read_text())
    assert best["learning_rate"] == rate
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]  # no claim left behind
