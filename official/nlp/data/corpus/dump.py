"""A Wikipedia XML dump (``enwiki-...-pages-articles*.xml.bz2``) read as a stream: its articles, in BERT's format.

**Reading** (the main process): the file is opened through the file layer (a ``gs://`` dump works), decompressed
with `bz2` as it is read when it starts as bzip2 (single-stream and multistream dumps alike; an ``.xml`` file is
read as it is), and parsed with the standard library's ``xml.etree.ElementTree.iterparse``, one ``<page>`` at a
time, each page cleared once read: memory stays bounded whatever the dump size. ``mwxml`` (the Wikimedia reader)
was measured too and is slower on the same data for the same pages (docs/corpus.md), so it is not a dependency.

**What is kept**: the pages of the main namespace (``<ns>0</ns>``) that are not redirects (a ``<redirect>``
element, or text starting with ``#REDIRECT``) and not disambiguation pages (`wikitext.is_disambiguation`). The
others are dropped and counted (``other_namespaces``, ``redirects``, ``disambiguations``); a page without text
(an empty or deleted ``<text>``) and an article whose text holds no paragraph are counted as stubs, as a title-only
WikiExtractor article is.

**Work**: the pages are batched in reading order into work units of about ``unit_bytes`` of wikitext; each unit is
parsed (`wikitext`, mwparserfromhell) and split into sentences on a worker (`prepare_pages`), as a unit of
WikiExtractor output is. The units depend only on the dump and ``unit_bytes``.

**Bad input** is one line naming the file, the page (its number in the dump and title) and what to do: a ``.bz2``
cut short (the end of the file before the end of the compressed stream), bytes that are not bzip2 where bzip2 was,
XML that does not parse (with its line and column), a file that is not a MediaWiki dump.
"""

from __future__ import annotations

import bz2
import contextlib
import dataclasses
import xml.etree.ElementTree as ET
from collections.abc import Iterator

from official.nlp.common import input_files
from official.nlp.common.errors import InputError
from official.nlp.data.corpus import documents as documents_lib
from official.nlp.data.corpus import wikitext
from official.nlp.data.corpus.documents import Counts, Document

DUMP = "dump"
MAIN_NAMESPACE = "0"
_BZ2_MAGIC = b"BZh"
_READ_BYTES = 1 << 20


def is_bzip2(sample: bytes) -> bool:
    return sample.startswith(_BZ2_MAGIC) and len(sample) >= 4 and sample[3:4] in b"123456789"


def decompressed_start(path: str) -> bytes:
    """The first bytes of the dump that bzip2 file `path` decompresses to (a bzip2 block is up to 900 kB of text,
    so its whole first block is read)."""
    try:
        with _open_dump(path) as f:
            return f.read(4096)
    except EOFError:
        raise InputError(
            f"{path}: the compressed file ends inside its first bzip2 block; the file is cut short: download it "
            "again (or check it with bzip2 -t)"
        ) from None
    except OSError as e:
        if "invalid data stream" not in str(e).lower():
            raise
        raise InputError(f"{path}: the file starts as bzip2 but is not bzip2 data ({e}); download it again") from None


def is_dump_start(text: str) -> bool:
    """Whether decoded text is the start of a MediaWiki XML export (``<mediawiki ...>``, maybe after ``<?xml``)."""
    head = text.lstrip("\ufeff \t\r\n")
    if head.startswith("<?xml"):
        head = head[head.find("?>") + 2 :].lstrip()
    return head.startswith("<mediawiki")


@dataclasses.dataclass
class _Position:
    pages: int = 0
    title: str | None = None

    def describe(self) -> str:
        if self.title is None:
            return "before its first page"
        return f"after page {self.pages} ({self.title!r})"


@contextlib.contextmanager
def _open_dump(path: str):
    with input_files.open_file(path, "rb") as raw:
        start = raw.peek(4)[:4] if hasattr(raw, "peek") else b""
        if is_bzip2(start):
            with bz2.BZ2File(raw, "rb") as f:
                yield f
        else:
            yield raw


def _local(tag: str) -> str:
    return tag.rpartition("}")[2]


def dump_pages(path: str, counts: Counts) -> Iterator[tuple[str, str]]:
    """(title, wikitext) of each article of dump `path` that is kept (see the module docstring); the others are
    counted in `counts`."""
    position = _Position()
    try:
        with _open_dump(path) as f:
            events = ET.iterparse(f, events=("start", "end"))
            _, root = next(events)
            if _local(root.tag) != "mediawiki":
                raise InputError(
                    f"{path}: an XML file whose root is <{_local(root.tag)}>, not a MediaWiki dump (<mediawiki>); "
                    "pass a pages-articles dump"
                )
            for event, element in events:
                if event != "end" or _local(element.tag) != "page":
                    continue
                fields = {_local(child.tag): child for child in element}
                position.pages += 1
                title = (fields["title"].text or "") if "title" in fields else ""
                position.title = title
                ns = (fields["ns"].text or "").strip() if "ns" in fields else MAIN_NAMESPACE
                text = None
                revision = fields.get("revision")
                if revision is not None:
                    text_element = next((c for c in revision if _local(c.tag) == "text"), None)
                    text = text_element.text if text_element is not None else None
                root.clear()  # the page and what came before it: memory stays bounded
                if ns != MAIN_NAMESPACE:
                    counts.other_namespaces += 1
                elif "redirect" in fields or (text or "").lstrip()[:9].upper() == "#REDIRECT":
                    counts.redirects += 1
                elif not (text or "").strip():
                    counts.stubs += 1
                else:
                    yield title, text
    except EOFError:
        raise InputError(
            f"{path}: the compressed file ends before its bzip2 stream does ({position.describe()}); the file is "
            "cut short: download it again (or check it with bzip2 -t)"
        ) from None
    except OSError as e:
        if "invalid data stream" not in str(e).lower():
            raise
        raise InputError(
            f"{path}: damaged bzip2 data ({e}) {position.describe()}; download the file again (or check it with "
            "bzip2 -t)"
        ) from None
    except ET.ParseError as e:
        line, column = e.position
        raise InputError(
            f"{path}: malformed XML at line {line}, column {column} of the decompressed dump ({position.describe()}: "
            f"{str(e).split(':')[0]}); the file is damaged or cut short: download it again"
        ) from None


def page_units(files: list[str], unit_bytes: int, counts: Counts) -> Iterator[list[tuple[str, str]]]:
    """The kept articles of the dumps `files`, in order, in batches of about `unit_bytes` characters of wikitext."""
    batch: list[tuple[str, str]] = []
    size = 0
    for path in files:
        for title, text in dump_pages(path, counts):
            batch.append((title, text))
            size += len(text)
            if size >= unit_bytes:
                yield batch
                batch, size = [], 0
    if batch:
        yield batch


def article_document(title: str, text: str, counts: Counts) -> Document | None:
    """The document of one article's wikitext; None for a disambiguation page (counted)."""
    code = wikitext.parse(text)
    if wikitext.is_disambiguation(code):
        counts.disambiguations += 1
        return None
    paragraphs, headings = wikitext.paragraphs(code)
    return Document(paragraphs, title=title, headings=headings)


def prepare_pages(pages: list[tuple[str, str]], keep_headings: bool) -> tuple[bytes, dict]:
    """One work unit of a dump in BERT's format (documents joined by a blank line, UTF-8) and its counts."""
    counts = Counts()
    out = []
    for title, text in pages:
        document = article_document(title, text, counts)
        if document is None:
            continue
        lines = documents_lib.document_lines(document, keep_headings, counts)
        if lines:
            out.append("\n".join(lines) + "\n")
    return "\n".join(out).encode("utf-8"), dataclasses.asdict(counts)
