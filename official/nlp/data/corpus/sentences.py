"""Sentences of a paragraph, and the section headings of WikiExtractor output.

**The splitter** is `sentencex` (Wikimedia's rule-based segmenter, written in Rust). Measured on the 48 Wikipedia
files of the test data (40.3 MB of paragraphs, one process): sentencex 78.5 MB/s, blingfire 11.8 MB/s, pysbd
0.21 MB/s. On a sample of 3,000 paragraphs sentencex and blingfire agree on 97.4%; where they differ, sentencex keeps
a quotation of several sentences together ("It is real. It is ongoing.") where blingfire cuts it, and cuts after
a few abbreviations that blingfire knows ("Vol.", "Approx."). Both keep "U.S.", "Dr.", "Ph.D.", initials
("J. R. R. Tolkien", "George W. Bush") and decimals ("3.5 million") inside a sentence. sentencex is the faster by
6.7x and is maintained (releases in 2026; blingfire's last is from 2021), so it is the one used. See docs/corpus.md.

**Clean-up of its output**: each sentence has its whitespace runs collapsed to one space (a line of the output holds
no tab, no line break of another kind and no non-breaking space, which BERT's tokenizer treats as a space anyway),
and a piece without a letter or a digit (a closing quote or a footnote star the splitter cut off: ``’``, ``*``)
joins the sentence before it rather than standing as a sentence of its own.

**A section heading** in WikiExtractor output is a paragraph line of its own, the section's title with a period
added ("Early life.", "Awards and honors."), always followed by the section's text. A line is taken as a heading
when it is followed by another paragraph line of its document, is a single sentence for the splitter, ends with
".", "!" or "?", holds at most `MAX_HEADING_WORDS` words, does not start with a lowercase letter (the rest of a
sentence cut by a dropped list), and has none of the pronouns and auxiliaries that a sentence of that length
nearly always has (`SENTENCE_WORDS`: "He died in 1950." stays text). On the 48 test files this takes 47,210 lines.
Samples of them read as headings but for about 1 in 6 of those of 6 words ("Hazell died in 1984 in Toronto.") and
1 in 25 of those of 5: about 150 sentences in all (0.3%). It leaves as text 575 one-sentence lines of up to 6
words: sentences, and a few headings that hold a pronoun ("Dramatizations of her works.").
"""

from __future__ import annotations

import re

import sentencex

LANGUAGE = "en"  # the paper's corpus; sentencex's English rules
MAX_HEADING_WORDS = 6
_has_letter_or_digit = re.compile(r"[^\W_]").search
# Words of a sentence, not of a section title: a short line holding one of these is text.
SENTENCE_WORDS = frozenset(
    "is was are were be been has had have will would can could did does he she it they we you his her its their "
    "this these there which who".split()
)


def sentences(paragraph: str) -> list[str]:
    """The sentences of one paragraph (one line of text), cleaned up as the module docstring says."""
    out: list[str] = []
    spaced = False  # whether the piece before ended with a space
    for piece in sentencex.segment(LANGUAGE, " ".join(paragraph.split())):
        text = piece.strip(" ")
        if not text:
            continue
        if out and not _has_letter_or_digit(text):
            out[-1] += (" " if spaced or piece[0] == " " else "") + text
        else:
            out.append(text)
        spaced = piece[-1] == " "
    return out


def is_heading(paragraph: str, paragraph_sentences: list[str]) -> bool:
    """Whether a paragraph line that another line of its document follows is a WikiExtractor section heading (see
    the module docstring). `paragraph_sentences`: its `sentences`."""
    if len(paragraph_sentences) != 1 or not paragraph.endswith((".", "!", "?")):
        return False
    words = paragraph[:-1].split()
    if not words or len(words) > MAX_HEADING_WORDS:
        return False
    if paragraph[0].islower():  # the rest of a sentence that a dropped list or table cut
        return False
    return not any(w.strip("\"'()[],;:").lower() in SENTENCE_WORDS for w in words)
