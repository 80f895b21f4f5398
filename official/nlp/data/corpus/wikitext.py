"""An article's wikitext into plain paragraphs, with `mwparserfromhell` (a real parser of MediaWiki markup).

What is kept is what the paper keeps, "only the text passages", and what WikiExtractor's default output holds:

- **text**: the words of the paragraphs; bold and italics, the label of a link (``[[Paris|the city]]`` is "the
  city", ``[[Paris]]s`` is "Parises"), the label of an external link, HTML entities as their characters
  (``&nbsp;`` a space), the contents of inline HTML tags (``<span>``, ``<small>``, ``<sub>``, ...);
- **dropped**: every template (infoboxes, ``{{cite ...}}``, ``{{citation needed}}``, and also the few that render
  text, ``{{convert}}`` or ``{{lang}}``: WikiExtractor expands some of those, leaving "()" where it does not),
  ``<ref>`` footnotes, tables, lists (``*``, ``#``, ``;``, ``:`` lines), images and files (``[[File:...]]`` with
  their captions), category and interlanguage links, comments, ``<math>``, ``<gallery>`` and the other tags whose
  contents are not running text, behaviour switches (``__NOTOC__``);
- **headings**: ``== Early life ==`` becomes the heading paragraph "Early life." (WikiExtractor's form), known to be
  a heading (no guessing as for WikiExtractor output); a heading whose section holds no text is dropped.

A paragraph is a run of lines not separated by a blank line (MediaWiki joins the lines of a paragraph).

**Disambiguation pages** are those that use one of the disambiguation templates (``{{disambiguation}}``,
``{{disambig}}``, ``{{dab}}``, ``{{hndis}}``, ``{{geodis}}``, ...: `DISAMBIGUATION_TEMPLATES`), as MediaWiki's
Disambiguator extension marks them.
"""

from __future__ import annotations

import re

import mwparserfromhell
from mwparserfromhell import nodes

# Tags whose contents are not running text: footnotes, formulas, code, media, tables.
_DROPPED_TAGS = frozenset(
    "ref references math chem ce gallery imagemap timeline graph score syntaxhighlight source pre code "
    "templatedata templatestyles mapframe maplink table poem hiero inputbox categorytree noinclude includeonly".split()
)
_LIST_TAGS = frozenset(("li", "dt", "dd"))
_LINE_BREAK_TAGS = frozenset(("br", "hr"))
# Namespaces of a link that is not text: media and categories (any case), and interwiki / interlanguage prefixes
# (lowercase, as they are written: "fr:", "de:", "zh-yue:", "wikt:", "simple:"; "[[CSI: Miami]]" stays a link).
_DROPPED_LINKS = re.compile(r"^\s*:?\s*((?i:file|image|media|category)|[a-z]{2,3}(-[a-z]+)?|wikt|simple)\s*:")
_CATEGORY_LINK = re.compile(r"^\s*:\s*category\s*:", re.I)
_SWITCH = re.compile(r"__[A-Z]+__")
DISAMBIGUATION_TEMPLATES = frozenset(
    (
        "disambiguation",
        "disambig",
        "disamb",
        "dab",
        "disambiguation page",
        "hndis",
        "human name disambiguation",
        "geodis",
        "place name disambiguation",
        "numberdis",
        "letter-number combination disambiguation",
        "school disambiguation",
        "schooldis",
        "hospital disambiguation",
        "mil-unit-dis",
        "species latin name disambiguation",
        "genus disambiguation",
        "call sign disambiguation",
        "road disambiguation",
        "roaddis",
    )
)
_LIST_MARK = "\x00"  # a line that started with a list item: dropped
_HEADING_MARK = "\x01"  # a heading line


def template_name(template: nodes.Template) -> str:
    return " ".join(str(template.name).replace("_", " ").split()).lower()


def is_disambiguation(code) -> bool:
    """Whether the parsed page uses a disambiguation template."""
    return any(template_name(t) in DISAMBIGUATION_TEMPLATES for t in code.filter_templates(recursive=False))


def _text(wikicode) -> str:
    return "".join(_node_text(node) for node in wikicode.nodes)


def _node_text(node) -> str:
    if isinstance(node, nodes.Text):
        return node.value
    if isinstance(node, nodes.Wikilink):
        title = str(node.title)
        if _DROPPED_LINKS.match(title) and not _CATEGORY_LINK.match(title):
            return ""
        if node.text is not None:
            return _text(node.text)
        return _text(node.title).lstrip(":")
    if isinstance(node, nodes.ExternalLink):
        return _text(node.title) if node.title is not None else ""
    if isinstance(node, nodes.HTMLEntity):
        return node.normalize()
    if isinstance(node, nodes.Tag):
        tag = str(node.tag).strip().lower()
        if tag in _LIST_TAGS and node.wiki_markup:
            return _LIST_MARK
        if tag in _LINE_BREAK_TAGS:
            return " "
        if tag in _DROPPED_TAGS or node.contents is None:
            return ""
        return _text(node.contents)
    if isinstance(node, nodes.Heading):
        return _HEADING_MARK + " ".join(_text(node.title).split())
    return ""  # templates, comments, arguments ({{{1}}})


def paragraphs(code) -> tuple[list[str], set[int]]:
    """The paragraphs of a parsed article and the indices of those that are headings (see the module docstring)."""
    text = _SWITCH.sub("", _text(code))
    out: list[str] = []
    headings: set[int] = set()
    lines: list[str] = []

    def end_paragraph():
        if lines:
            out.append(" ".join(lines))
            lines.clear()

    for raw in text.split("\n"):
        line = " ".join(raw.split())
        if raw.startswith(_HEADING_MARK):
            end_paragraph()
            if out and len(out) - 1 in headings:  # the heading before holds no text
                out.pop()
                headings.discard(len(out))
            title = line.lstrip(_HEADING_MARK).strip()
            if title:
                headings.add(len(out))
                out.append(title if title.endswith((".", "!", "?")) else title + ".")
        elif not line or raw.lstrip(" ").startswith(_LIST_MARK):
            end_paragraph()
        else:
            lines.append(line.replace(_LIST_MARK, ""))
    end_paragraph()
    while out and len(out) - 1 in headings:
        out.pop()
        headings.discard(len(out))
    return out, headings


def parse(wikitext: str):
    return mwparserfromhell.parse(wikitext, skip_style_tags=False)
