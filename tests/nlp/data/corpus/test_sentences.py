"""The sentence splitter on the cases the paper's corpus is full of, and the WikiExtractor heading rule."""

from __future__ import annotations

import pytest

from official.nlp.data.corpus.sentences import is_heading, sentences


@pytest.mark.parametrize(
    "paragraph, expected",
    [
        (
            "The U.S. Army entered the war in 1917. It fought in France.",
            ["The U.S. Army entered the war in 1917.", "It fought in France."],
        ),
        (
            "Dr. Smith met Mr. Jones at 5 p.m. on Friday. They talked.",
            ["Dr. Smith met Mr. Jones at 5 p.m. on Friday.", "They talked."],
        ),
        (
            "Its population was 3.5 million in 2010. The growth rate was 1.2%.",
            ["Its population was 3.5 million in 2010.", "The growth rate was 1.2%."],
        ),
        (
            "J. R. R. Tolkien wrote it. George W. Bush was president.",
            ["J. R. R. Tolkien wrote it.", "George W. Bush was president."],
        ),
        (
            "He earned a Ph.D. from Harvard Univ. in 1999. He moved to Washington, D.C. in 2001.",
            ["He earned a Ph.D. from Harvard Univ. in 1999.", "He moved to Washington, D.C. in 2001."],
        ),
        ('She said "Stop!" and left. Nobody followed.', ['She said "Stop!" and left.', "Nobody followed."]),
        # Whitespace runs become one space; a piece without a letter or digit joins the sentence before it.
        ("First  one.\tSecond\u00a0one.", ["First one.", "Second one."]),
        ("It incurred long term debt.*", ["It incurred long term debt.*"]),
    ],
)
def test_sentences(paragraph, expected):
    assert sentences(paragraph) == expected


@pytest.mark.parametrize(
    "line, heading",
    [
        ("Early life.", True),
        ("Awards and honors.", True),
        ("2017 season.", True),
        ("Reign of Henry II (1154–1189).", True),
        ("Where is it?", False),  # a pronoun: a sentence
        ("He died in 1950.", False),
        ("The album was recorded live over a two-day period at RAK Studios.", False),  # too long
        ("but failed to gain the seat.", False),  # the rest of a sentence
        ("Shaw was born in Texas. He plays basketball.", False),  # two sentences
        ("Career", False),  # WikiExtractor ends every heading with a period
    ],
)
def test_is_heading(line, heading):
    assert is_heading(line, sentences(line)) is heading
