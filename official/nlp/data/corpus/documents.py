"""The documents of raw text, in the two formats `prepare_corpus` reads, and what each becomes in BERT's format.

**WikiExtractor output** (``--input_format=wikiextractor``): each article is a block

    <doc id="12" url="https://en.wikipedia.org/wiki?curid=12" title="Anarchism">
    Anarchism

    Anarchism is a political philosophy ... It calls for ...
    History.
    The earliest anarchist themes ...
    </doc>

The first line after the tag is the title; every other line that is not blank is a paragraph (or a section heading,
see `sentences.is_heading`). Lists, tables and markup are already gone. An article with no paragraph (a title-only
stub, 63% of the test data) gives no document and is counted. A ``<doc>`` never closed, a ``<doc>`` opened inside
another, a ``</doc>`` without its ``<doc>`` and text between two articles are errors naming the file and line: they
mean a file cut short or a file that is not WikiExtractor output.

**Plain text** (``--input_format=text``): a blank line ends a document; each line is a paragraph of one or more
sentences (so hard-wrapped text, a sentence broken over lines, must be unwrapped first). The end of a file ends a
document too.

**Output** (`document_lines`): the sentences of the document's paragraphs in order, one per line; the title and the
section headings are dropped, or with ``keep_headings`` kept as lines of their own. The caller puts a blank line
between documents.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

from official.nlp.common.errors import InputError
from official.nlp.data.corpus.sentences import is_heading, sentences

WIKIEXTRACTOR = "wikiextractor"
TEXT = "text"


@dataclasses.dataclass
class Document:
    paragraphs: list[str]  # its lines that are not blank, stripped
    title: str | None = None  # WikiExtractor and dump articles
    headings: set[int] | None = None  # a dump article's: the paragraphs that are headings, known from the markup


@dataclasses.dataclass
class Counts:
    """What `prepare_corpus` reports: output documents, sentences and words (whitespace-separated), and what it
    dropped or kept."""

    documents: int = 0
    sentences: int = 0
    words: int = 0
    stubs: int = 0  # WikiExtractor articles without text: dropped
    headings: int = 0  # WikiExtractor section headings: dropped, or kept with keep_headings
    titles: int = 0  # titles of the articles with text: dropped, or kept with keep_headings
    redirects: int = 0  # dump pages: dropped
    disambiguations: int = 0  # dump pages: dropped
    other_namespaces: int = 0  # dump pages not in the main namespace (Talk:, Template:, ...): dropped

    def add(self, other: Counts) -> None:
        for f in dataclasses.fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


def is_doc_tag(line: str) -> bool:
    return (line == "<doc>" or line.startswith("<doc ")) and line.endswith(">")


def wikiextractor_documents(lines: list[str], path: str, line_of: Callable[[int], int]) -> Iterator[Document]:
    """The articles of WikiExtractor output (``lines``: a run of whole articles of file `path`, line ends removed),
    stubs included. ``line_of(i)``: the line number of ``lines[i]`` in the file, for the errors."""

    def where(i: int) -> str:
        return f"{path}:{line_of(i)}"

    opened = None  # index of the open article's <doc> line
    document = None
    for i, raw in enumerate(lines):
        line = raw.strip()
        if opened is None:
            if not line:
                continue
            if is_doc_tag(line):
                opened, document = i, Document([])
            elif line == "</doc>":
                raise InputError(
                    f"{where(i)}: </doc> without a <doc ...> before it; the file is not WikiExtractor output"
                )
            else:
                raise InputError(
                    f"{where(i)}: text outside a <doc> block ({line[:40]!r}); this is not WikiExtractor output: pass "
                    "--input_format=text for plain text"
                )
        elif line == "</doc>":
            yield document
            opened = document = None
        elif is_doc_tag(line):
            raise InputError(
                f"{where(i)}: a <doc> opens inside the one of line {line_of(opened)}, which has no "
                "</doc>; the file is cut or damaged: extract it again"
            )
        elif document.title is None:
            if line:
                document.title = line
        elif line:
            document.paragraphs.append(line)
    if opened is not None:
        raise InputError(
            f"{where(opened)}: {lines[opened].strip()[:100]} is never closed (no </doc> before the end of the file); "
            "the file is cut short: extract it again"
        )


def text_documents(lines: list[str]) -> Iterator[Document]:
    """The documents of plain text: runs of lines that are not blank."""
    paragraphs: list[str] = []
    for raw in lines:
        line = raw.strip()
        if line:
            paragraphs.append(line)
        elif paragraphs:
            yield Document(paragraphs)
            paragraphs = []
    if paragraphs:
        yield Document(paragraphs)


def document_lines(document: Document, keep_headings: bool, counts: Counts) -> list[str]:
    """The lines of a document in BERT's format (one sentence per line); empty for a stub. Adds to `counts`."""
    if not document.paragraphs:
        counts.stubs += 1
        return []
    out = []
    if document.title is not None:
        counts.titles += 1
        if keep_headings:
            out.append(" ".join(document.title.split()))
    last = len(document.paragraphs) - 1
    for p, paragraph in enumerate(document.paragraphs):
        split = sentences(paragraph)
        if document.headings is not None:
            heading = p in document.headings
        else:
            heading = document.title is not None and p < last and is_heading(paragraph, split)
        if heading:
            counts.headings += 1
            if not keep_headings:
                continue
        out.extend(split)
    if not out:  # paragraphs of nothing the splitter keeps
        counts.stubs += 1
        return []
    counts.documents += 1
    counts.sentences += len(out)
    counts.words += sum(line.count(" ") + 1 for line in out)  # lines of single spaces (`sentences`)
    return out
