"""Tests for learning a WordPiece vocabulary (library and absl script)."""

import os
import random
import subprocess
import sys

import pytest
import tensorflow as tf

from official.nlp.tokenizers import char_rules, text_layers, tokenization, wordpiece_vocab
from tests.conftest import REPO_ROOT

SCRIPT = REPO_ROOT / "run_scripts" / "build_vocab.py"


@pytest.fixture(scope="module")
def corpus_file(shared_data, tmp_path_factory):
    lines = (shared_data / "pretraining_golden" / "squad_contexts.txt").read_text(encoding="utf-8").split("\n")
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text("\n".join(lines[:800]) + "\n", encoding="utf-8")
    return path


@pytest.mark.slow
@pytest.mark.parametrize("do_lower_case", [True, False], ids=["uncased", "cased"])
def test_learned_vocab_loads_validates_and_covers_its_text(corpus_file, tmp_path, do_lower_case):
    vocab = wordpiece_vocab.build_vocab(
        [str(corpus_file)], vocab_size=1000, do_lower_case=do_lower_case, num_unused=3, lower_thresh=2
    )
    assert 800 <= len(vocab) <= 1000
    assert vocab[:8] == ["[PAD]", "[unused0]", "[unused1]", "[unused2]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    path = tmp_path / "vocab.txt"
    wordpiece_vocab.write_vocab(vocab, str(path))
    tokenizer = tokenization.FullTokenizer(path, do_lower_case=do_lower_case)  # loads and validates (case too)
    assert list(tokenizer.vocab) == vocab
    lines = [line for line in corpus_file.read_text(encoding="utf-8").split("\n") if line.strip()]
    tokens = [t for line in lines for t in tokenizer.tokenize(line)]
    assert tokens.count("[UNK]") / len(tokens) < 0.01  # rare characters fall outside a small vocabulary
    assert any(t.startswith("##") for t in vocab)
    # Every piece is something the tokenizer can produce: uncased pieces are lower-case without accents.
    if do_lower_case:
        assert all(t == char_rules.uncased(t) for t in vocab[8:])
    # The in-graph tokenizer takes it too and agrees.
    layer = text_layers.BertTokenizer(path, do_lower_case=do_lower_case)
    got = layer(tf.constant(lines[:200])).to_list()
    assert got == [tokenizer.convert_tokens_to_ids(tokenizer.tokenize(line)) for line in lines[:200]]


def test_bad_arguments_are_refused(tmp_path):
    with pytest.raises(FileNotFoundError, match="matches no file"):
        wordpiece_vocab.build_vocab_file(
            wordpiece_vocab.VocabConfig(input_file=str(tmp_path / "missing*.txt"), output_file=str(tmp_path / "v.txt"))
        )
    with pytest.raises(ValueError, match="leaves no room"):
        wordpiece_vocab.learn_vocab({"a": 100}, vocab_size=5)
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    with pytest.raises(ValueError, match="no words"):
        wordpiece_vocab.build_vocab([str(empty)], vocab_size=100, do_lower_case=True)


def test_text_that_is_not_utf8_is_refused_naming_file_line_and_encoding(tmp_path):
    """Before: Latin-1 "Caf\xe9" was counted as "caf", and random bytes gave a vocabulary of junk."""
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("Good morning.\nCaf\u00e9 cr\u00e8me.\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin1.txt:2: not valid UTF-8 .*seems to be Latin-1"):
        wordpiece_vocab.build_vocab([str(latin1)], vocab_size=100, do_lower_case=True)
    noise = tmp_path / "noise.bin"
    noise.write_bytes(random.Random(0).randbytes(20_000))
    with pytest.raises(ValueError, match=r"noise.bin:\d+: not valid UTF-8 .*seems to be binary data, not text"):
        wordpiece_vocab.build_vocab([str(noise)], vocab_size=1000, do_lower_case=True)


@pytest.mark.slow
def test_script(corpus_file, tmp_path):
    out = tmp_path / "vocab.txt"
    result = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            f"--input_file={corpus_file}",
            f"--output_file={out}",
            "--vocab_size=400",
            "--min_count=2",
            "--max_lines=300",
            "--do_lower_case=False",
        ],
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    vocab = tokenization.load_vocab(out)
    tokenization.validate_vocab(vocab, do_lower_case=False)
    assert 300 <= len(vocab) <= 400


def test_a_leading_tilde_is_the_home_folder_and_zero_limits_are_refused(monkeypatch, tmp_path):
    """Issue 30: `--output_file=~/x/vocab.txt` (bash leaves `~` after `=`) wrote into a folder named `~` in the
    working directory; `--max_token_length=0` wrote the 5 special tokens and exited 0; `--max_lines=0` blamed the
    corpus ("no words in ...")."""
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    (tmp_path / "corpus.txt").write_text("the cat sat on the mat. the dog sat on the log.\n" * 20, encoding="utf-8")
    config = wordpiece_vocab.VocabConfig(
        input_file="~/corpus.txt", output_file="~/x/vocab.txt", vocab_size=60, min_count=1, max_lines=5
    )
    result = wordpiece_vocab.build_vocab_file(config)
    vocab = result.tokens
    assert result.output_file == config.output_file
    assert tokenization.load_vocab(tmp_path / "x" / "vocab.txt") == {t: i for i, t in enumerate(vocab)}
    assert "cat" in vocab and os.listdir(tmp_path / "work") == []
    for limit, message in (("max_token_length", "--max_token_length=0: must be >= 1"), ("max_lines", "--max_lines=0")):
        with pytest.raises(ValueError, match=f"^{message}"):
            wordpiece_vocab.VocabConfig(input_file="c.txt", output_file="v.txt", **{limit: 0})
