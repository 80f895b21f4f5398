"""Tests for the in-graph tokenizer and packer: exact parity with the original algorithm on golden, real and
adversarial text (both the routed fast path and the exact path), offsets, serialization, tf.data, SavedModel."""

import functools
import itertools

import keras
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text as tf_text

from official.nlp.tokenizers import text_layers, tokenization
from tests.nlp.tokenizers import tokenizer_corpus as corpus

CASES = [("uncased", True), ("cased", False)]


@functools.cache
def _layer(vocab_file, lower, fast_path, parallel_shards=None):
    """One layer per setting for the whole module: building one and tracing it cost seconds."""
    return text_layers.BertTokenizer(
        vocab_file, do_lower_case=lower, fast_path=fast_path, parallel_shards=parallel_shards
    )


@functools.cache
def _traced(vocab_file, lower, fast_path, with_offsets=False, parallel_shards=None):
    """The layer's `tokenize` (or `tokenize_with_offsets`) traced once for batches of any size and shared by the
    tests, as a served signature is."""
    layer = _layer(vocab_file, lower, fast_path, parallel_shards)
    method = layer.tokenize_with_offsets if with_offsets else layer.tokenize
    return tf.function(method, input_signature=[tf.TensorSpec([None], tf.string)])


@functools.cache
def _ids(vocab_file, lower, fast_path, texts):
    """In-graph ids of `texts`, tokenized in batches of 4096 by the shared traced function."""
    fn = _traced(vocab_file, lower, fast_path)
    out = []
    for i in range(0, len(texts), 4096):
        out.extend(tuple(r) for r in fn(tf.constant([t.encode("utf-8") for t in texts[i : i + 4096]])).to_list())
    return tuple(out)


@pytest.fixture(scope="module", params=CASES, ids=[c for c, _ in CASES])
def case(request, shared_data):
    name, lower = request.param
    return name, lower, shared_data / "vocab" / f"bert-base-{name}-vocab.txt"


@pytest.mark.parametrize("fast_path", [True, False], ids=["routed", "exact"])
def test_golden_outputs_of_original_code(case, shared_data, fast_path):
    name, lower, vocab_file = case
    strings, outputs = corpus.golden(shared_data)
    got = _ids(vocab_file, lower, fast_path, strings)
    mismatches = [(s, g, e["ids"]) for s, g, e in zip(strings, got, outputs[name]) if list(g) != e["ids"]]
    assert not mismatches, mismatches[:3]


@pytest.mark.slow
@pytest.mark.parametrize("fast_path", [True, False], ids=["routed", "exact"])
def test_identical_to_python_on_every_real_line(case, shared_data, fast_path):
    _, lower, vocab_file = case
    lines = corpus.real_lines(shared_data)
    expected = corpus.python_ids(vocab_file, lower, lines)
    got = _ids(vocab_file, lower, fast_path, lines)
    diffs = [line for line, a, b in zip(lines, expected, got) if a != b]
    assert not diffs, diffs[:3]


@pytest.mark.parametrize("fast_path", [True, False], ids=["routed", "exact"])
def test_identical_to_python_on_adversarial_unicode(case, fast_path):
    _, lower, vocab_file = case
    texts = tuple(corpus.adversarial_strings())
    expected = corpus.python_ids(vocab_file, lower, texts)
    got = _ids(vocab_file, lower, fast_path, texts)
    diffs = [t for t, a, b in zip(texts, expected, got) if a != b]
    assert not diffs, diffs[:3]


def test_stock_tf_text_differs_and_routing_keeps_the_fast_path_busy(case, shared_data):
    """Why the layer exists: stock FastBertTokenizer is wrong on some SQuAD lines (uncased); the layer sends almost
    every line through it anyway and only the rest through the exact path."""
    _, lower, vocab_file = case
    squad = tuple(
        line for line in corpus._lines(shared_data / "pretraining_golden" / "squad_contexts.txt") if line.strip()
    )
    layer = _layer(vocab_file, lower, True)
    stock = tf_text.FastBertTokenizer(layer.vocabulary, token_out_type=tf.int32, lower_case_nfd_strip_accents=lower)
    stock_ids = [tuple(r) for r in stock.tokenize(tf.constant(squad)).to_list()]
    expected = corpus.python_ids(vocab_file, lower, squad)
    wrong = {line for line, a, b in zip(squad, expected, stock_ids) if a != b}
    if lower:  # 20 lines (½, ß, ″, ς, ...); the cased stock tokenizer happens to be right on this file
        assert len(wrong) == 20
    _, redo = layer._router.stock_with_redo(tf.constant(squad))
    redo = redo.numpy()
    assert redo.mean() < 0.01
    # Every line stock gets wrong is routed to the exact path.
    assert all(r for line, r in zip(squad, redo) if line in wrong)
    assert _ids(vocab_file, lower, True, squad) == expected


@pytest.mark.parametrize("max_chars", [3, 5, 12, 200])
def test_word_limit_in_characters_on_the_fast_path(case, max_chars):
    """Stock counts the word limit in bytes and the original in characters; around the limit, with one-, two-,
    three- and four-byte characters and with characters the normalizer drops, the routed layer still gives the
    original's ids."""
    _, lower, vocab_file = case
    words = []
    for char in ["a", "é", "É", "ß", "Ⱥ", "中", "😃", "e\u0301", "x\u200b"]:
        words += [char * n for n in (max_chars - 1, max_chars, max_chars + 1, 2 * max_chars) if n > 0]
    texts = tuple(words) + tuple(" ".join(words[i::5]) for i in range(5)) + ("plain words, short " * 3,)
    python = tokenization.FullTokenizer(vocab_file, do_lower_case=lower, max_input_chars_per_word=max_chars)
    expected = [python.convert_tokens_to_ids(python.tokenize(t)) for t in texts]
    layer = text_layers.BertTokenizer(vocab_file, do_lower_case=lower, max_input_chars_per_word=max_chars)
    got = tf.function(layer.tokenize)(tf.constant(texts)).to_list()
    assert [t for t, a, b in zip(texts, expected, got) if a != b] == []


@pytest.mark.parametrize("batch", [0, 1, 2, 7])
def test_parallel_shards_keep_order_and_ids(uncased_vocab, batch):
    texts = tf.constant(["½ price", "plain text", "", "Straße café", "x" * 300, "a b c", "中文"][:batch], tf.string)
    outputs = {}
    for shards in (1, 3):
        layer = _layer(uncased_vocab, True, True, shards)
        ids, starts, ends = _traced(uncased_vocab, True, True, True, shards)(texts)
        outputs[shards] = (ids.to_list(), starts.to_list(), ends.to_list(), layer.tokenize(texts).to_list())
    assert outputs[1] == outputs[3]
    assert len(outputs[1][0]) == batch
    with pytest.raises(ValueError, match="parallel_shards"):
        text_layers.BertTokenizer(uncased_vocab, parallel_shards=0)


def _byte_offsets(text, char_offsets):
    return [(len(text[:s].encode("utf-8")), len(text[:e].encode("utf-8"))) for s, e in char_offsets]


@pytest.mark.parametrize("fast_path", [True, False], ids=["routed", "exact"])
def test_offsets_equal_python_offsets(case, shared_data, fast_path):
    _, lower, vocab_file = case
    strings, _ = corpus.golden(shared_data)
    texts = list(strings) + corpus.adversarial_strings() + list(corpus.real_lines(shared_data)[::50])
    python = corpus.full_tokenizer(vocab_file, lower)
    ids, starts, ends = _traced(vocab_file, lower, fast_path, True)(tf.constant([t.encode("utf-8") for t in texts]))
    for text, row_ids, row_starts, row_ends in zip(texts, ids.to_list(), starts.to_list(), ends.to_list()):
        tokens, offsets = python.tokenize_with_offsets(text)
        assert row_ids == python.convert_tokens_to_ids(tokens), text
        assert list(zip(row_starts, row_ends)) == _byte_offsets(text, offsets), text


def test_offsets_slice_back(uncased_vocab):
    layer = _layer(uncased_vocab, True, True)
    text = "Héllo,  WORLD! ½ naïve\u200b"
    ids, starts, ends = layer.tokenize_with_offsets(tf.constant([text]))
    texts = tf.gather(tf.constant([text]), starts.value_rowids())
    pieces = tf.strings.substr(texts, starts.flat_values, ends.flat_values - starts.flat_values).numpy()
    assert [p.decode() for p in pieces] == ["Héllo", ",", "WORLD", "!", "½", "naïve"]
    assert [layer.id_to_token(i) for i in ids.to_list()[0]] == ["hello", ",", "world", "!", "½", "naive"]


def test_invalid_utf8_is_dropped_like_python(uncased_vocab):
    layer = _layer(uncased_vocab, True, True)
    python = corpus.full_tokenizer(uncased_vocab, True)
    raw = [b"ab\xffcd", b"caf\xc3", b"\xed\xa0\x80x", b"\xc0\xafy", b"ok \xe2\x82 z"]
    got = layer(tf.constant(raw)).to_list()
    assert got == [python.convert_tokens_to_ids(python.tokenize(r)) for r in raw]


def test_scalar_input_tf_data_and_config_round_trip(tmp_path, uncased_vocab):
    layer = _layer(uncased_vocab, True, True)
    assert layer(tf.constant("Héllo world")).numpy().tolist() == [7592, 2088]
    ds = tf.data.Dataset.from_tensor_slices(["Héllo world", "½"]).map(layer)
    assert [x.numpy().tolist() for x in ds] == [[7592, 2088], [1092]]
    # The config holds no vocabulary (a .keras file carries it as an asset): a clone from it has none until its
    # assets are loaded, and says so instead of tokenizing with an empty table.
    assert layer.get_config()["vocabulary"] is None
    clone = text_layers.BertTokenizer.from_config(layer.get_config())
    assert clone.get_config() == layer.get_config()
    with pytest.raises(ValueError, match="has no vocabulary"):
        clone(tf.constant(["a"]))
    layer.save_assets(str(tmp_path))
    clone.load_assets(str(tmp_path))
    assert clone.vocabulary == layer.vocabulary
    assert clone(tf.constant(["Σίσυφος ΟΔΟΣ"])).to_list() == layer(tf.constant(["Σίσυφος ΟΔΟΣ"])).to_list()
    with pytest.raises(ValueError, match="1-D batch of strings"):
        layer(tf.constant([["a"]]))


def test_vocabulary_checks(tmp_path, uncased_vocab, cased_vocab):
    with pytest.raises(tokenization.VocabularyError, match="looks cased"):
        text_layers.BertTokenizer(cased_vocab, do_lower_case=True)
    with pytest.raises(tokenization.VocabularyError, match="vocab_size=100"):
        text_layers.BertTokenizer(uncased_vocab, vocab_size=100)
    with pytest.raises(tokenization.VocabularyError, match=r"missing special token\(s\) \[MASK\]"):
        text_layers.BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a"])
    layer = _layer(uncased_vocab, True, True)
    assert layer.special_token_ids() == {"pad_id": 0, "unk_id": 100, "cls_id": 101, "sep_id": 102, "mask_id": 103}


@pytest.mark.slow
def test_keras_model_and_saved_model(tmp_path, uncased_vocab):
    tokenizer = text_layers.BertTokenizer(uncased_vocab)
    packer = tokenizer.packer(12)
    texts = tf.constant(["Héllo ½ world!", "ΟΔΟΣ 강 x"])
    expected = packer(tokenizer(texts))

    inputs = keras.Input(shape=(), dtype="string")
    model = keras.Model(inputs, packer(tokenizer(inputs)))
    model.save(tmp_path / "pre.keras")
    restored = keras.models.load_model(tmp_path / "pre.keras")  # safe_mode: the vocabulary is an asset file
    assert restored.layers[1].vocabulary == tokenizer.vocabulary
    for key, value in restored(texts).items():
        np.testing.assert_array_equal(value, expected[key])

    module = tf.Module()
    module.tokenizer, module.packer = tokenizer, packer
    module.serve = tf.function(lambda x: packer(tokenizer(x)), input_signature=[tf.TensorSpec([None], tf.string)])
    tf.saved_model.save(module, str(tmp_path / "sm"))
    loaded = tf.saved_model.load(str(tmp_path / "sm"))
    for key, value in loaded.serve(texts).items():
        np.testing.assert_array_equal(value, expected[key])


# ---------------------------------------------------------------------------------------------------------------
# Packer.


def _original_truncate_seq_pair(tokens_a, tokens_b, max_length):
    """The original run_classifier._truncate_seq_pair, transcribed as the reference."""
    tokens_a, tokens_b = list(tokens_a), list(tokens_b)
    while True:
        if len(tokens_a) + len(tokens_b) <= max_length:
            break
        if len(tokens_a) > len(tokens_b):
            tokens_a.pop()
        else:
            tokens_b.pop()
    return tokens_a, tokens_b


def test_truncation_matches_original_on_all_small_pairs():
    pairs = list(itertools.product(range(12), range(12), range(0, 14)))
    len_a, len_b = text_layers.truncated_pair_lengths(
        tf.constant([p[0] for p in pairs]), tf.constant([p[1] for p in pairs]), tf.constant([p[2] for p in pairs])
    )
    for (a, b, m), got_a, got_b in zip(pairs, len_a.numpy(), len_b.numpy()):
        ref_a, ref_b = _original_truncate_seq_pair(range(a), range(b), m)
        assert (got_a, got_b) == (len(ref_a), len(ref_b)), (a, b, m)


def test_packer_hand_worked_examples():
    packer = text_layers.BertPackInputs(8, start_of_sequence_id=101, end_of_segment_id=102, padding_id=0)
    # A has 4 tokens, B has 3, 5 fit: pop A (longer) -> 3/3, then tie pops B -> 3/2.
    out = packer([tf.ragged.constant([[1, 2, 3, 4], [1]]), tf.ragged.constant([[5, 6, 7], [5, 6]])])
    assert out["input_word_ids"].numpy().tolist() == [
        [101, 1, 2, 3, 102, 5, 6, 102],
        [101, 1, 102, 5, 6, 102, 0, 0],
    ]
    assert out["input_type_ids"].numpy().tolist() == [[0, 0, 0, 0, 0, 1, 1, 1], [0, 0, 0, 1, 1, 1, 0, 0]]
    assert out["input_mask"].numpy().tolist() == [[1] * 8, [1] * 6 + [0] * 2]
    assert all(v.dtype == tf.int32 for v in out.values())
    # A single segment keeps its first seq_length - 2 tokens; a 1-D input is one example.
    single = packer(tf.constant([1, 2, 3, 4, 5, 6, 7, 8]))
    assert single["input_word_ids"].numpy().tolist() == [101, 1, 2, 3, 4, 5, 6, 102]
    assert single["input_type_ids"].numpy().tolist() == [0] * 8
    # B much longer than A: only B is cut.
    out = packer([tf.ragged.constant([[1]]), tf.ragged.constant([[5, 6, 7, 8, 9, 10]])])
    assert out["input_word_ids"].numpy().tolist() == [[101, 1, 102, 5, 6, 7, 8, 102]]
    clone = text_layers.BertPackInputs.from_config(packer.get_config())
    assert clone.get_config() == packer.get_config()
    with pytest.raises(ValueError, match="one or two segments"):
        packer([tf.ragged.constant([[1]])] * 3)


# The original's layout, hand-worked: a second text that tokenizes to nothing ("" or a zero-width space) is no
# second segment (`if tokens_b:`), so A alone may take seq_length - 2 tokens and no second [SEP] is written.
EMPTY_B_CASES = [
    ("hello world", "", ["[CLS]", "hello", "world", "[SEP]"], [0, 0, 0, 0]),
    ("hello world", "\u200b", ["[CLS]", "hello", "world", "[SEP]"], [0, 0, 0, 0]),
    ("hello", "world", ["[CLS]", "hello", "[SEP]", "world", "[SEP]"], [0, 0, 0, 1, 1]),
    (
        "one two three four five six seven",
        "\u200b",
        ["[CLS]", "one", "two", "three", "four", "five", "six", "[SEP]"],
        [0] * 8,
    ),
]


def test_packer_leaves_out_an_empty_second_segment(uncased_vocab):
    tokenizer = text_layers.BertTokenizer(str(uncased_vocab), do_lower_case=True)
    packer = tokenizer.packer(8)
    out = packer([tokenizer([a for a, *_ in EMPTY_B_CASES]), tokenizer([b for _, b, *_ in EMPTY_B_CASES])])
    for row, (_, _, tokens, types) in enumerate(EMPTY_B_CASES):
        n = len(tokens)
        ids = out["input_word_ids"].numpy()[row]
        assert [tokenizer.id_to_token(i) for i in ids[:n]] == tokens and not ids[n:].any()
        assert out["input_type_ids"].numpy()[row].tolist() == types + [0] * (8 - n)
        assert out["input_mask"].numpy()[row].tolist() == [1] * n + [0] * (8 - n)
