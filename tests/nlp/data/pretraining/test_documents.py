import json

import pytest

from official.nlp.data.pretraining import documents as docs_lib
from official.nlp.data.pretraining.cached_tokenizer import CachedTokenizer
from official.nlp.tokenizers import tokenization


def _doc_texts(docs):
    out = []
    for d in range(docs.num_documents):
        s0, s1 = docs.document_offsets[d], docs.document_offsets[d + 1]
        out.append(
            tuple(
                tuple(docs.tokens[docs.sentence_offsets[s] : docs.sentence_offsets[s + 1]].tolist())
                for s in range(s0, s1)
            )
        )
    return out


def _split(line):  # A stand-in tokenizer: one id per character code of each word.
    return [len(w) for w in line.split()]


@pytest.mark.parametrize("unit_bytes", [1, 50, 333, 10**6])
def test_units_cover_every_document_once(tmp_path, unit_bytes):
    text = "".join(
        f"doc {d} sentence {s} {'x' * (d % 7)}\n" + ("\n" if s == d % 4 else "")
        for d in range(60)
        for s in range(d % 4 + 1)
    )
    text = text.replace("\n\n", "\n \t\n", 3).replace("\n\n", "\r\n\r\n", 2)  # Blank-ish lines too.
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text(text)
    b.write_text("tail doc\nno blank line at the end")
    files = [str(a), str(b)]
    whole = _doc_texts(docs_lib.read_documents([(f, 0, (tmp_path / f).stat().st_size) for f in files], _split))
    units = docs_lib.plan_units(files, unit_bytes)
    pieces = [p for u in units for p in u.pieces]
    got = [d for u in units for d in _doc_texts(docs_lib.read_documents(u.pieces, _split))]
    assert got == whole and len(whole) == 61
    # However small the units, each holds two documents, so a random next segment can come from another one.
    assert all(docs_lib.read_documents(u.pieces, _split).num_documents >= 2 for u in units)
    assert sum(e - s for _, s, e in pieces) == len(text.encode()) + len(b.read_bytes())
    if unit_bytes == 50:
        assert len(units) > 10


def test_bad_input_messages_name_file_and_line(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine line\n\nanother\nbroken \xff\xfe bytes\n")
    with pytest.raises(docs_lib.InputError, match=r"bad\.txt:4: not valid UTF-8"):
        docs_lib.read_documents([(str(bad), 0, bad.stat().st_size)], _split)
    counters = {}
    docs = docs_lib.read_documents(
        [(str(bad), 0, bad.stat().st_size)], _split, docs_lib.ReadOptions(skip_bad_lines=True), counters
    )
    assert counters["skipped_invalid_utf8"] == 1 and docs.num_documents == 2

    long = tmp_path / "long.txt"
    long.write_bytes(b"short\n" + b"y" * 5000 + b"\nafter\n")
    with pytest.raises(docs_lib.InputError, match=r"long\.txt:2: line longer than max_line_bytes=1000"):
        docs_lib.read_documents([(str(long), 0, long.stat().st_size)], _split, docs_lib.ReadOptions(1000))
    counters = {}
    docs = docs_lib.read_documents(
        [(str(long), 0, long.stat().st_size)], _split, docs_lib.ReadOptions(1000, skip_bad_lines=True), counters
    )
    assert counters["skipped_long_lines"] == 1 and counters["sentences"] == 2

    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    counters = {}
    units = docs_lib.plan_units([str(empty)], 100)
    docs_lib.read_documents(units[0].pieces, _split, counters=counters)
    assert counters["empty_files"] == 1


@pytest.mark.parametrize("case", ["uncased", "cased"])
def test_cached_tokenizer_equals_full_tokenizer(shared_data, case):
    vocab = shared_data / "vocab" / f"bert-base-{case}-vocab.txt"
    full = tokenization.FullTokenizer(str(vocab), do_lower_case=case == "uncased")
    cached = CachedTokenizer(full, max_entries=50)  # Small: the cache also gets emptied on the way.
    strings = [
        line.encode("ascii").decode("unicode_escape")
        for line in (shared_data / "tokenizer_golden" / "strings.escaped.txt").read_text().rstrip("\n").split("\n")
    ]
    golden = [json.loads(line)["ids"] for line in (shared_data / "tokenizer_golden" / f"{case}.jsonl").open()]
    joiners = ["ab\x0bcd", "x\x1cy z", "p\x85q", "l\u2028m", "e\x0c\x0cf"]
    for text in strings + joiners + strings:
        assert cached.ids(text) == full.convert_tokens_to_ids(full.tokenize(text)), repr(text)
    assert [cached.ids(s) for s in strings] == golden
    assert cached.misses < cached.lookups


@pytest.mark.parametrize("max_bytes", [200, 64 << 20])  # Emptied again and again, and never.
def test_the_line_cache_gives_what_tokenizing_gives(shared_data, uncased_vocab, tmp_path, max_bytes):
    from official.nlp.data.pretraining.cached_tokenizer import LineCache

    text = (shared_data / "bert_sample_text.txt").read_bytes()
    # Repeated lines, a line that tokenizes to nothing, the same words without a final newline, a CRLF line, and
    # a line that is blank only once decoded (a no-break space).
    extra = b"\n\n\xc2\xa0\n\x01\n".join([b"", b"", b"The same words.\r", b"The same words."])
    path = tmp_path / "repeated.txt"
    path.write_bytes(text + b"\n" + text + extra)
    tokenize = CachedTokenizer(tokenization.FullTokenizer(str(uncased_vocab), do_lower_case=True)).ids
    pieces = [(str(path), 0, path.stat().st_size)]
    plain_counts, cached_counts = {}, {}
    plain = docs_lib.read_documents(pieces, tokenize, counters=plain_counts)
    cache = LineCache(max_bytes)
    for _ in range(2):  # The second read hits the lines the first one stored (unless emptied meanwhile).
        cached_counts = {}
        cached = docs_lib.read_documents(pieces, tokenize, counters=cached_counts, line_cache=cache)
        assert cached.tokens.tolist() == plain.tokens.tolist()
        assert cached.sentence_offsets.tolist() == plain.sentence_offsets.tolist()
        assert cached.document_offsets.tolist() == plain.document_offsets.tolist()
        assert cached.first_lines == plain.first_lines and cached_counts == plain_counts
    assert plain_counts["empty_token_lines"] >= 1  # The control character's line, stored by neither.
    assert (len(cache) > 20) == (max_bytes > 200)
