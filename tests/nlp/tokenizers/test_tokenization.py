"""Tests for the pure-Python tokenizer: golden outputs of the original code, offsets, vocabulary checks, and a
cross-check against transformers on real files and an adversarial Unicode list."""

import unicodedata

import pytest

from official.nlp.common.errors import InputError
from official.nlp.tokenizers import tokenization
from tests.nlp.tokenizers import tokenizer_corpus as corpus

CASES = [("uncased", True), ("cased", False)]


@pytest.fixture(scope="module", params=CASES, ids=[c for c, _ in CASES])
def case(request, shared_data):
    name, lower = request.param
    vocab_file = shared_data / "vocab" / f"bert-base-{name}-vocab.txt"
    return name, lower, vocab_file, corpus.full_tokenizer(vocab_file, lower)


def test_golden_outputs_of_original_code(case, shared_data):
    name, _, _, tok = case
    strings, outputs = corpus.golden(shared_data)
    mismatches = []
    for text, expected in zip(strings, outputs[name]):
        tokens = tok.tokenize(text)
        if tokens != expected["tokens"] or tok.convert_tokens_to_ids(tokens) != expected["ids"]:
            mismatches.append((text, tokens, expected["tokens"]))
    assert not mismatches, mismatches[:5]


def test_doc_examples(uncased_vocab):
    tok = corpus.full_tokenizer(uncased_vocab, True)
    assert tok.tokenize("Unaffable café!") == ["una", "##ffa", "##ble", "cafe", "!"]
    assert tok.tokenize_with_offsets("Héllo, world!") == (
        ["hello", ",", "world", "!"],
        [(0, 5), (5, 6), (7, 12), (12, 13)],
    )
    assert tokenization.BasicTokenizer(do_lower_case=True).tokenize("Héllo, WORLD!") == ["hello", ",", "world", "!"]
    assert tokenization.WordpieceTokenizer({"[UNK]": 0, "un": 1, "##aff": 2, "##able": 3}).tokenize(
        "unaffable xyz"
    ) == ["un", "##aff", "##able", "[UNK]"]


def test_original_api(uncased_vocab):
    tok = corpus.full_tokenizer(uncased_vocab, True)
    assert len(tok.vocab) == len(tok.inv_vocab) == 30522
    assert tok.convert_ids_to_tokens(tok.convert_tokens_to_ids(["[CLS]", "hello", "##s"])) == ["[CLS]", "hello", "##s"]
    with pytest.raises(KeyError, match="'Hello' is not in the vocabulary"):
        tok.convert_tokens_to_ids(["Hello"])
    assert tok.tokenize(b"caf\xc3\xa9 \xff") == ["cafe"]  # bytes are UTF-8; invalid bytes dropped as in the original
    assert tokenization.convert_to_unicode(b"\xe4\xb8\xad") == "中"
    assert tokenization.printable_text("x") == "x"


def test_special_token_strings_are_text_unless_kept(uncased_vocab):
    text = "a [MASK] b[SEP]c [mask]"
    plain = corpus.full_tokenizer(uncased_vocab, True)
    assert plain.tokenize(text) == ["a", "[", "mask", "]", "b", "[", "sep", "]", "c", "[", "mask", "]"]
    keep = tokenization.FullTokenizer(uncased_vocab, do_lower_case=True, keep_special_tokens=True)
    assert keep.tokenize(text) == ["a", "[MASK]", "b", "[SEP]", "c", "[", "mask", "]"]
    tokens, offsets = keep.tokenize_with_offsets(text)
    assert [text[s:e] for s, e in offsets] == ["a", "[MASK]", "b", "[SEP]", "c", "[", "mask", "]"]


def test_max_input_chars_per_word_counts_characters(uncased_vocab):
    tok = corpus.full_tokenizer(uncased_vocab, True)
    # 200 two-byte characters (400 bytes in UTF-8) are still one word of 200 characters.
    assert "[UNK]" not in tok.tokenize("é" * 200)
    assert tok.tokenize("é" * 201) == ["[UNK]"]
    assert tok.tokenize("e" * 200 + " x") != ["[UNK]", "x"] and tok.tokenize("e" * 201 + " x") == ["[UNK]", "x"]


def _check_offsets(tok, text):
    """Every token's span slices back to its text; returns (documented exceptions, tokens)."""
    tokens, offsets = tok.tokenize_with_offsets(text)
    assert tokens == tok.tokenize(text)
    exceptions = 0
    for token, (start, end) in zip(tokens, offsets):
        assert 0 <= start < end <= len(text), (text, token, start, end)
        original = corpus.clean(text[start:end])
        if tok.do_lower_case:
            original = corpus.uncased_normalize(original)
        piece = token[2:] if token.startswith("##") else token
        if token == "[UNK]" or original == piece:
            continue
        # Documented exceptions: a piece boundary inside one character's expansion (the piece is part of the
        # expansion), and final sigma, which depends on the neighbours the slice leaves out.
        assert piece in original or original.replace("σ", "ς") == piece.replace("σ", "ς"), (text, token, original)
        exceptions += 1
    return exceptions, len(tokens)


def test_offsets_slice_back_on_golden_and_adversarial(case, shared_data):
    _, _, _, tok = case
    strings, _ = corpus.golden(shared_data)
    counts = [_check_offsets(tok, t) for t in list(strings) + corpus.adversarial_strings()]
    exceptions, total = map(sum, zip(*counts))
    # Expansions (Hangul syllables into jamo when uncased, "ŉ") and sigma, not a systematic shift.
    assert exceptions <= 0.05 * total


def test_offsets_slice_back_on_real_text(case, shared_data):
    _, _, _, tok = case
    lines = corpus.real_lines(shared_data)[::20]
    assert sum(_check_offsets(tok, t)[0] for t in lines) == 0


def test_offsets_examples(uncased_vocab, cased_vocab):
    tok = corpus.full_tokenizer(uncased_vocab, True)
    text = "İSTANBUL\u200b ΟΔΟΣ, 강"
    tokens, offsets = tok.tokenize_with_offsets(text)
    assert tokens == ["istanbul", "ο", "##δ", "##ος", ",", "ᄀ", "##ᅡ", "##ᆼ"]
    assert offsets == [(0, 8), (10, 11), (11, 12), (12, 14), (14, 15), (16, 17), (16, 17), (16, 17)]
    cased = corpus.full_tokenizer(cased_vocab, False)
    tokens, offsets = cased.tokenize_with_offsets("Unaffable 中文")
    assert [("Unaffable 中文"[s:e], t) for t, (s, e) in zip(tokens, offsets)] == [
        ("Una", "Una"),
        ("ff", "##ff"),
        ("able", "##able"),
        ("中", "中"),
        ("文", "文"),
    ]


def test_normalization_never_creates_whitespace():
    # BasicTokenizer skips the original's final whitespace re-split because of this property.
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        char = chr(cp)
        if char.isspace():
            continue
        assert not any(c.isspace() for c in corpus.uncased_normalize(char)), hex(cp)


# ---------------------------------------------------------------------------------------------------------------
# Vocabulary checks.


def _write(tmp_path, tokens, name="vocab.txt"):
    path = tmp_path / name
    path.write_text("".join(t + "\n" for t in tokens), encoding="utf-8")
    return path


def test_vocab_refused_with_clear_messages(tmp_path, uncased_vocab, cased_vocab):
    base = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "##b"]
    for missing in ["[CLS]", "[SEP]", "[MASK]", "[UNK]", "[PAD]"]:
        path = _write(tmp_path, [t for t in base if t != missing])
        with pytest.raises(tokenization.VocabularyError, match=rf"vocab.txt: missing special token\(s\) \{missing}"):
            tokenization.FullTokenizer(path)
    with pytest.raises(tokenization.VocabularyError, match=r"token 'a' occurs twice \(lines 6 and 8\)"):
        tokenization.load_vocab(_write(tmp_path, base + ["a"]))
    with pytest.raises(tokenization.VocabularyError, match="occurs twice"):
        tokenization.validate_vocab(base + ["a"])
    with pytest.raises(tokenization.VocabularyError, match="ids are not 0..2"):
        tokenization.validate_vocab({"[PAD]": 0, "[UNK]": 2, "x": 3})
    with pytest.raises(
        tokenization.VocabularyError, match="has 30522 tokens but the model config says vocab_size=28996"
    ):
        tokenization.FullTokenizer(uncased_vocab, vocab_size=28996)
    with pytest.raises(tokenization.VocabularyError, match="looks uncased .* Pass do_lower_case=True"):
        tokenization.FullTokenizer(uncased_vocab, do_lower_case=False)
    with pytest.raises(tokenization.VocabularyError, match="looks cased .* Pass do_lower_case=False"):
        tokenization.FullTokenizer(cased_vocab, do_lower_case=True)
    # Matching settings pass; a tiny vocabulary is too small to judge its case.
    tokenization.validate_vocab(tokenization.load_vocab(cased_vocab), vocab_size=28996, do_lower_case=False)
    tokenization.validate_vocab(base, do_lower_case=False, source="tiny")
    tokenization.validate_vocab(base, do_lower_case=True, source="tiny")


def test_a_vocab_that_is_not_utf8_is_refused_naming_its_line(tmp_path):
    """The original drops invalid bytes, so a Latin-1 vocab.txt loaded with "caf\xe9" as the token "caf"."""
    path = tmp_path / "vocab.txt"
    path.write_bytes("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\ncaf\u00e9\n".encode("latin-1"))
    with pytest.raises(InputError, match=r"vocab.txt:6: not valid UTF-8 .*seems to be Latin-1"):
        tokenization.FullTokenizer(str(path))


def test_load_vocab_matches_original_line_rules(tmp_path):
    path = tmp_path / "v.txt"
    path.write_bytes(" [PAD] \n[UNK]\r\n[CLS]\n[SEP]\n[MASK]\nx\u2028y\n".encode())
    vocab = tokenization.load_vocab(path)
    # readline() splits only at "\n" (not at U+2028) and every line is stripped.
    assert list(vocab.items()) == [
        ("[PAD]", 0),
        ("[UNK]", 1),
        ("[CLS]", 2),
        ("[SEP]", 3),
        ("[MASK]", 4),
        ("x\u2028y", 5),
    ]


def test_a_byte_order_mark_before_the_first_token_is_dropped(tmp_path, uncased_vocab):
    """Issue 30: a vocab.txt saved by a Windows editor starts with a UTF-8 byte-order mark, and was refused with
    "missing special token(s) [PAD]" while [PAD] is line 1. The original (and transformers) keep the mark in the
    first token, "\ufeff[PAD]", so [PAD] is missing there too; here the mark is dropped and the ids are the same."""
    with_mark = tmp_path / "vocab.txt"
    with_mark.write_bytes(b"\xef\xbb\xbf" + uncased_vocab.read_bytes())
    vocab = tokenization.load_vocab(with_mark)
    assert vocab == tokenization.load_vocab(uncased_vocab) and vocab["[PAD]"] == 0
    tokenizer = tokenization.FullTokenizer(str(with_mark), do_lower_case=True)  # validates the special tokens
    assert tokenizer.tokenize("Hello, world!") == ["hello", ",", "world", "!"]


# ---------------------------------------------------------------------------------------------------------------
# Cross-check against transformers.


def _hf_tokenizer(vocab, lower):
    transformers = pytest.importorskip("transformers")
    return transformers.BertTokenizer(vocab=dict(vocab), do_lower_case=lower)


@pytest.mark.slow
def test_agrees_with_transformers_on_real_files(case, shared_data):
    _, lower, vocab_file, tok = case
    lines = corpus.real_lines(shared_data)
    hf = _hf_tokenizer(tok.vocab, lower)
    hf_ids = hf(list(lines), add_special_tokens=False)["input_ids"]
    ours = corpus.python_ids(vocab_file, lower, lines)
    diffs = [line for line, a, b in zip(lines, ours, hf_ids) if list(a) != b]
    assert len(lines) == 129_022  # the distinct non-empty lines of the SQuAD dev contexts and GLUE text columns
    assert not diffs, diffs[:5]


def _sanitize_for_hf(text):
    """Removes the causes of the known differences between transformers and the original (see README):
    Σ (HF lower-cases it to σ everywhere), special-token strings (HF keeps them whole), private-use characters
    (HF drops them), U+2B820..U+2B91F (HF's CJK range starts at U+2B920), and characters whose Unicode category
    changed since Unicode 3.2 (HF's character tables are older than Python 3.11's Unicode 14)."""
    for special in tokenization.SPECIAL_TOKENS:
        text = text.replace(special, " ").replace(special.lower(), " ")
    text = text.replace("Σ", "σ")
    return "".join(
        c
        for c in text
        if unicodedata.category(c) != "Co"
        and not 0x2B820 <= ord(c) <= 0x2B91F
        and unicodedata.ucd_3_2_0.category(c) == unicodedata.category(c)
    )


def test_differences_from_transformers_are_the_known_ones(case):
    _, lower, _, tok = case
    hf = _hf_tokenizer(tok.vocab, lower)
    differing = unexplained = 0
    for text in corpus.adversarial_strings():
        if tok.tokenize(text) == hf.tokenize(text):
            continue
        differing += 1
        clean = _sanitize_for_hf(text)
        # HF also turns words of 101..200 characters into [UNK] (the original's limit is 200).
        expected = []
        for word in tok.basic_tokenizer.tokenize(clean):
            pieces = tok.wordpiece_tokenizer.tokenize(word)
            expected.extend(["[UNK]"] if 100 < len(word) <= 200 else pieces)
        if hf.tokenize(clean) != expected:
            unexplained += 1
            print("unexplained:", repr(text), hf.tokenize(clean), expected)
    assert differing >= 5  # the list does exercise the known differences
    assert unexplained == 0
