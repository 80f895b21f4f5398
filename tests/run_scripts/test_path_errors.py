"""Output and input paths that cannot work end as one clean line naming the path (issue 23, "Tracebacks on ordinary
mistakes"): an output path that is an existing file, a missing data folder or file, a full disk, a folder given as
an output file. The scripts run as users run them; a full disk, which cannot be made here without root, is a
stand-in file whose writes fail with ENOSPC (Python writers) or TensorFlow's `ResourceExhaustedError`."""

from __future__ import annotations

import errno
import json

import pytest
import tensorflow as tf

from official.nlp.common import cli, output_files
from tests import pretraining_records
from tests.run_scripts.script_runs import CONFIG, assert_user_error, run_in_one_process


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    from official.nlp.checkpoints import model_dir
    from official.nlp.modeling.configs import BertConfig
    from official.nlp.modeling.encoder import BertEncoder

    root = tmp_path_factory.mktemp("paths")
    vocab = pretraining_records.write_vocab(root / "vocab.txt")
    (root / "bert_config.json").write_text(json.dumps(CONFIG))
    model = root / "model"
    model_dir.save_model_dir(
        str(model), BertEncoder.from_bert_config(BertConfig(**CONFIG)), vocab_file=vocab, do_lower_case=True
    )
    records = pretraining_records.write_records(root / "records", num_files=1, per_file=16)
    (root / "a_file").write_text("in the way\n")
    (root / "sentences.txt").write_text("hello world\n")
    return {"root": root, "vocab": vocab, "model": str(model), "records": records, "file": str(root / "a_file")}


OUTPUT_IS_A_FILE = {
    "run_pretraining.py": [
        "--input_file={root}/records/*",
        "--model_dir={file}",
        "--bert_config_file={root}/bert_config.json",
        "--max_seq_length=32",
        "--max_predictions_per_seq=5",
        "--train_batch_size=4",
        "--num_train_steps=1",
        "--num_warmup_steps=0",
    ],
    "run_classifier.py": [
        "--task_name=MRPC",
        "--data_dir={mrpc}",
        "--init_checkpoint={model}",
        "--output_dir={file}",
        "--do_train",
        "--max_seq_length=32",
        "--max_train_examples=8",
    ],
    "export_model.py": ["--task=encoder", "--init_checkpoint={model}", "--export_dir={file}", "--max_seq_length=32"],
    "extract_features.py": [
        "--input_file={root}/sentences.txt",
        "--output_file={file}/features.jsonl",
        "--init_checkpoint={model}",
        "--layers=-1",
        "--max_seq_length=16",
    ],
    "convert_checkpoint.py": ["--input={model}", "--output_dir={file}"],
}
MISSING_DATA = {
    "run_classifier.py": [
        "--task_name=MRPC",
        "--data_dir={root}/no_data",
        "--output_dir={root}/mrpc_out",
        "--do_train",
    ],
    "run_swag.py": ["--train_file={root}/no_data/train.csv", "--output_dir={root}/swag_out", "--do_train"],
}


@pytest.fixture(scope="module")
def refusals(files, shared_data, tmp_path_factory) -> dict:
    """Every refusal below, run in one process (`run_in_one_process`: each still checked for its one line, exit
    status 2, no traceback and a quiet start-up): `{case: result}`; the export-dir-dot case's working folder under
    `"work"`."""
    values = dict(files, mrpc=shared_data / "glue" / "MRPC")
    cases = {
        ("output is a file", script): (script, [f.format(**values) for f in flags])
        for script, flags in OUTPUT_IS_A_FILE.items()
    }
    for script, flags in MISSING_DATA.items():
        flags = [f.format(**files) for f in flags] + [f"--init_checkpoint={files['model']}", "--max_seq_length=32"]
        cases[("missing data", script)] = (script, flags)
    work = tmp_path_factory.mktemp("dot") / "work"
    work.mkdir()
    (work / "notes.txt").write_text("my notes\n")
    (work / "records.tfrecord").write_bytes(open(files["records"][0], "rb").read())
    cases["export dir dot"] = (
        "run_pretraining.py",
        ["--input_file=records.tfrecord", "--model_dir=run", "--export_dir=.",
         f"--bert_config_file={files['root'] / 'bert_config.json'}", "--max_seq_length=32",
         "--max_predictions_per_seq=5", "--train_batch_size=4", "--num_train_steps=1", "--num_warmup_steps=0"],
        work,
    )  # fmt: skip
    return dict(run_in_one_process(cases), work=work)


@pytest.mark.slow
@pytest.mark.parametrize("script", OUTPUT_IS_A_FILE)
def test_an_output_path_that_is_an_existing_file_is_one_line(files, refusals, script):
    assert_user_error(refusals[("output is a file", script)], files["file"])
    assert (files["root"] / "a_file").read_text() == "in the way\n"


@pytest.mark.slow
def test_run_pretraining_export_dir_dot_is_one_line_before_training_and_deletes_nothing(refusals):
    """Issue 30: `--export_dir=.` trained, then deleted everything in the working folder."""
    result, work = refusals["export dir dot"], refusals["work"]
    assert_user_error(result, "run_pretraining: --export_dir=. is the working folder", "Name a folder of its own")
    assert sorted(p.name for p in work.iterdir()) == ["notes.txt", "records.tfrecord"]
    assert (work / "notes.txt").read_text() == "my notes\n"


@pytest.mark.slow
@pytest.mark.parametrize("script", MISSING_DATA)
def test_a_missing_data_folder_or_file_is_one_line(refusals, script):
    assert_user_error(refusals[("missing data", script)], "no_data")


def test_build_vocab_refuses_a_folder_as_output_file_before_learning(tmp_path):
    from official.nlp.tokenizers import wordpiece_vocab

    (tmp_path / "corpus.txt").write_text("hello world\n" * 20)
    (tmp_path / "out").mkdir()
    config = wordpiece_vocab.VocabConfig(
        input_file=str(tmp_path / "corpus.txt"), output_file=str(tmp_path / "out"), vocab_size=50, min_count=1
    )
    learned = []
    real = wordpiece_vocab.build_vocab
    wordpiece_vocab.build_vocab = lambda *a, **k: learned.append(1) or real(*a, **k)
    try:
        with pytest.raises(output_files.InputError, match=r"--output_file=.*out is a folder"):
            wordpiece_vocab.build_vocab_file(config)
    finally:
        wordpiece_vocab.build_vocab = real
    assert not learned  # refused before the learning, which takes minutes on a real corpus
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.txt", "out"] and not any((tmp_path / "out").iterdir())


class _FullDisk:
    """A local file whose writes fail as on a full disk (ENOSPC, with no file name, as Python raises it)."""

    def __init__(self, real):
        self.real = real

    def write(self, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    writelines = write

    def __getattr__(self, name):
        return getattr(self.real, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.real.close()


def _one_line(capsys, job, script: str) -> str:
    """Runs `job` as a script's `main` (through `cli`), expecting the user-error exit; returns its stderr line."""
    with pytest.raises(SystemExit) as exit_info:
        cli._guarded(lambda argv: job(), script)([script])
    assert exit_info.value.code == cli.USER_ERROR_EXIT
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{script}: "), lines
    return lines[0]


def test_a_full_disk_is_one_line_naming_the_output(tmp_path, monkeypatch, capsys, shared_data):
    import builtins

    from official.nlp.data.pretraining import generator
    from official.nlp.tokenizers import wordpiece_vocab

    real_open = builtins.open

    def full_disk_open(path, mode="r", *args, **kwargs):
        f = real_open(path, mode, *args, **kwargs)
        return _FullDisk(f) if "w" in mode and str(tmp_path / "out") in str(path) else f

    corpus = tmp_path / "corpus.txt"
    text = (shared_data / "pretraining_golden" / "squad_contexts.txt").read_bytes()
    corpus.write_bytes(text[: text.index(b"\n\n", 3000) + 2])
    (tmp_path / "out").mkdir()
    monkeypatch.setattr(builtins, "open", full_disk_open)

    vocab_out = str(tmp_path / "out" / "vocab.txt")
    line = _one_line(
        capsys,
        lambda: wordpiece_vocab.build_vocab_file(
            wordpiece_vocab.VocabConfig(input_file=str(corpus), output_file=vocab_out, vocab_size=100, min_count=1)
        ),
        "build_vocab",
    )
    assert vocab_out in line and "No space left on device" in line and "free some space" in line

    records_out = str(tmp_path / "out" / "train.tfrecord")
    line = _one_line(
        capsys,
        lambda: generator.create_pretraining_data(
            generator.PretrainingDataConfig(
                input_file=str(corpus),
                output_file=records_out,
                vocab_file=str(shared_data / "vocab" / "bert-base-uncased-vocab.txt"),
                do_lower_case=True,
                max_seq_length=32,
                max_predictions_per_seq=5,
                dupe_factor=1,
                num_workers=1,
            )
        ),
        "create_pretraining_data",
    )
    assert records_out in line and "No space left on device" in line
    assert not (tmp_path / "out" / "train.tfrecord").exists()  # nothing under the final name


def test_a_full_disk_under_tensorflow_writers_is_one_line(tmp_path, monkeypatch, capsys):
    """The feature cache (run_classifier) and the SavedModel (export_model): TensorFlow raises
    `ResourceExhaustedError` when the disk is full."""
    from official.nlp.data import feature_cache
    from official.nlp.serving import export_base

    def full(*args, **kwargs):
        raise tf.errors.ResourceExhaustedError(None, None, "No space left on device")

    class _FullWriter:
        def __init__(self, path):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        write = staticmethod(full)

    monkeypatch.setattr(feature_cache.tf.io, "TFRecordWriter", _FullWriter)
    cache = str(tmp_path / "out" / "train.tf_record")
    line = _one_line(
        capsys, lambda: feature_cache.cached_records(cache, {"k": 1}, lambda: [{"ids": [1]}]), "run_classifier"
    )
    assert cache in line and "no space left" in line
    monkeypatch.undo()

    monkeypatch.setattr(export_base.tf.saved_model, "save", full)
    target = str(tmp_path / "export" / "1")
    line = _one_line(capsys, lambda: export_base.save_saved_model(tf.Module(), target, None), "export_model")
    assert str(tmp_path / "export") in line and "no space left" in line
    assert not (tmp_path / "export" / "1").exists()
