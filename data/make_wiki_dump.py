"""Writes a Wikipedia dump (``pages-articles.xml.bz2`` format) built around the text of real articles.

    python data/make_wiki_dump.py                       # rewrites tests/nlp/data/corpus/data/wiki_dump.xml.bz2
    python data/make_wiki_dump.py --articles=5000 --output=/tmp/big.xml.bz2   # for measuring speed and overlap

The text comes from ``$BERT_SHARED_DATA/wikipedia/wiki_00`` (WikiExtractor output of real articles: paragraphs of
plain text, markup already gone). WikiExtractor keeps no wikitext, so each article's wikitext is rebuilt here: its
sentences untouched, with realistic markup put around them, the markup a dump page holds:

- the title in bold in the first sentence, ``[[links]]`` (plain and piped) on capitalized words, ``''italics''``,
  ``&nbsp;`` entities, ``<ref>{{cite web |...}}</ref>`` and ``<ref name=... />`` after sentences, an inline
  ``{{citation needed}}``, an HTML comment;
- an infobox and a short description (templates of several lines) before the text, a ``[[File:...|thumb|...]]``
  image with a caption, a ``{| ... |}`` table, a bullet list, ``[[Category:...]]`` links at the end;
- WikiExtractor's heading lines ("Early life.") as ``== Early life ==``, and a "References" section of
  ``{{Reflist}}``.

What a parser should make of each page is the article's paragraphs as WikiExtractor gave them, without its
headings: the test's expected text. Besides the articles the dump holds the pages a real dump brings that are not
articles: a redirect, a disambiguation page, a ``Talk:`` page, a ``Template:`` page and an article whose text is
empty. Everything is deterministic (a fixed seed).
"""

from __future__ import annotations

import argparse
import bz2
import os
import random
import re
from xml.sax.saxutils import escape

SEED = 20261129
HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "..", "tests", "nlp", "data", "corpus", "data", "wiki_dump.xml.bz2")
# The fixture's articles: three of wiki_00 with headings, several paragraphs and sentences of several kinds.
FIXTURE_TITLES = (
    "Jarred Shaw",
    "Harrow International School Shanghai",
    "Gennady Leonov",
    "Woolundunga, South Australia",
)
_DOC = re.compile(r'^<doc id="(\d+)" [^>]*title="([^"]*)">\n(.*?)^</doc>$', re.S | re.M)
_WORD = re.compile(r"(?<!['’])\b[A-Z][a-z]{3,}\b(?!['’])")
_SENTENCE_WORDS = set(
    "is was are were be been has had have will would can could did does he she it they we you".split()
)
HEADER = """<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.11/" version="0.11" xml:lang="en">
  <siteinfo>
    <sitename>Wikipedia</sitename>
    <dbname>enwiki</dbname>
    <base>https://en.wikipedia.org/wiki/Main_Page</base>
    <generator>MediaWiki 1.45.0-wmf.1</generator>
    <case>first-letter</case>
    <namespaces>
      <namespace key="0" case="first-letter" />
      <namespace key="1" case="first-letter">Talk</namespace>
      <namespace key="10" case="first-letter">Template</namespace>
    </namespaces>
  </siteinfo>
"""


def articles(path: str) -> list[tuple[int, str, list[str]]]:
    """(id, title, paragraph lines) of each WikiExtractor article of `path` that has text."""
    with open(path, encoding="utf-8") as f:
        found = []
        for doc_id, title, block in _DOC.findall(f.read()):
            lines = [line.strip() for line in block.split("\n") if line.strip()]
            if len(lines) > 1:
                found.append((int(doc_id), title.replace("&quot;", '"').replace("&amp;", "&"), lines[1:]))
        return found


def looks_like_heading(line: str, is_last: bool) -> bool:
    """WikiExtractor's section-heading line: short, ends with a period, no word of a sentence (see
    official/nlp/data/corpus/sentences.py for the same reading of them)."""
    words = line[:-1].split()
    return (
        not is_last
        and line.endswith(".")
        and 0 < len(words) <= 6
        and not line[0].islower()
        and not any(w.strip("\"'(),;:").lower() in _SENTENCE_WORDS for w in words)
        and line.count(". ") == 0
    )


def decorate(sentence_text: str, rng: random.Random) -> str:
    """`sentence_text` (a paragraph) with inline markup around its words; the words themselves unchanged."""

    def link(match: re.Match) -> str:
        word = match.group(0)
        r = rng.random()
        if r < 0.25:
            return f"[[{word}]]"
        if r < 0.4:
            return f"[[{word} (topic)|{word}]]"
        if r < 0.5:
            return f"''{word}''"
        return word

    text = _WORD.sub(link, sentence_text)
    pieces = re.split(r"(?<=\.) (?=[A-Z])", text)  # ends of sentences, roughly: where a ref goes
    out = []
    for i, piece in enumerate(pieces):
        r = rng.random()
        if piece.endswith(".") and r < 0.3:
            piece += (
                f'<ref name="r{i}">{{{{cite web |url=https://example.org/{i} |title=Source [[{i}]] |date=2020}}}}</ref>'
            )
        elif piece.endswith(".") and r < 0.4:
            piece += f'<ref name="r{i}" />'
        elif piece.endswith(".") and r < 0.45:
            piece += "{{citation needed|date=May 2021}}"
        out.append(piece)
    text = " ".join(out)
    if rng.random() < 0.2:
        text = text.replace(" ", "&nbsp;", 1)
    if rng.random() < 0.1:
        text = "<!-- a comment an editor left -->" + text
    return text


def wikitext(title: str, paragraphs: list[str], rng: random.Random) -> str:
    lines = [
        "{{Short description|" + title + "}}",
        "{{Infobox organization",
        f"| name = {title}",
        "| image = Example.png",
        "| founded = {{start date|2016|08}}",
        "}}",
    ]
    first = True
    for i, paragraph in enumerate(paragraphs):
        if looks_like_heading(paragraph, i == len(paragraphs) - 1):
            lines += ["", f"== {paragraph[:-1]} =="]
            continue
        text = decorate(paragraph, rng)
        if first and text.startswith(title):
            text = f"'''{title}'''" + text[len(title) :]
        first = False
        lines += [text, ""]
        r = rng.random()
        if r < 0.15:
            lines += [f"[[File:{title} {i}.jpg|thumb|left|A caption of [[{title}]], {i}.]]"]
        elif r < 0.3:
            lines += ['{| class="wikitable"', "|-", "! Year !! Result", "|-", f"| 20{i:02d} || [[Won]]", "|}", ""]
        elif r < 0.4:
            lines += ["* [[First]] item of a list", "* Second item, ''with markup''", ""]
    lines += ["== References ==", "{{Reflist}}", "", f"[[Category:{title}]]", "[[Category:Articles]]"]
    return "\n".join(lines)


def page(page_id: int, title: str, namespace: int, text: str | None, redirect: str | None = None) -> str:
    redirect_tag = f'    <redirect title="{escape(redirect)}" />\n' if redirect else ""
    if text is None:
        text_tag = '      <text bytes="0" xml:space="preserve" />\n'
    else:
        text_tag = f'      <text bytes="{len(text.encode())}" xml:space="preserve">{escape(text)}</text>\n'
    return (
        f"  <page>\n    <title>{escape(title)}</title>\n    <ns>{namespace}</ns>\n    <id>{page_id}</id>\n"
        f"{redirect_tag}    <revision>\n      <id>{page_id * 10}</id>\n"
        "      <timestamp>2026-11-01T00:00:00Z</timestamp>\n"
        f"      <model>wikitext</model>\n      <format>text/x-wiki</format>\n{text_tag}    </revision>\n  </page>\n"
    )


def special_pages(title: str) -> list[str]:
    """The pages of a dump that are not articles with text (each dropped and counted by the reader)."""
    return [
        page(1, f"{title} (school)", 0, f"#REDIRECT [[{title}]]\n\n{{{{R from alternative name}}}}", redirect=title),
        page(
            2,
            f"{title} (disambiguation)",
            0,
            f"'''{title}''' may refer to:\n* [[{title}]], a school\n* [[{title} (band)]], a band\n\n"
            "{{disambiguation}}",
        ),
        page(3, f"Talk:{title}", 1, "== Merge proposal ==\nShould this be merged? ~~~~", None),
        page(4, "Template:Infobox organization", 10, "{{Infobox\n| above = {{{name|}}}\n}}", None),
        page(5, "An empty article", 0, None),
    ]


def dump(selected: list[tuple[int, str, list[str]]], seed: int) -> str:
    rng = random.Random(seed)
    pages = [HEADER]
    for n, (page_id, title, paragraphs) in enumerate(selected):
        pages.append(page(page_id, title, 0, wikitext(title, paragraphs, rng)))
        if n == 0:
            pages += special_pages(title)
    pages.append("</mediawiki>\n")
    return "".join(pages)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", default=os.path.join(os.environ.get("BERT_SHARED_DATA", ""), "wikipedia"))
    parser.add_argument("--files", default="wiki_00", help="WikiExtractor files of --source, comma-separated")
    parser.add_argument("--articles", type=int, default=0, help="the first N articles with text (0: the fixture's)")
    parser.add_argument("--output", default=FIXTURE)
    args = parser.parse_args()
    found = [a for name in args.files.split(",") for a in articles(os.path.join(args.source, name))]
    if args.articles:
        selected = found[: args.articles]
    else:
        by_title = {title: (i, title, p) for i, title, p in found}
        selected = [by_title[t] for t in FIXTURE_TITLES]
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    with bz2.open(args.output, "wt", encoding="utf-8") as f:
        f.write(dump(selected, SEED))
    print(f"wrote {args.output}: {len(selected)} articles")


if __name__ == "__main__":
    main()
