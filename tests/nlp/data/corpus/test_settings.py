"""CorpusConfig from Python: each field's declared type and allowed values are checked when it is made (issue 40:
`keep_headings="false"` kept the headings, `num_workers="2"` and `output_file=None` raised TypeErrors mid-job)."""

from __future__ import annotations

import pytest

from official.nlp.common.errors import InputError
from official.nlp.data.corpus.settings import CorpusConfig


@pytest.mark.parametrize(
    "values, message",
    [
        (dict(keep_headings="false"), "--keep_headings='false': must be True or False; got a str"),
        (dict(num_workers="2"), "--num_workers='2': must be an integer; got a str"),
        (dict(output_file=None), r"--output_file is required: give a path \(a string\) or a list of paths"),
        (dict(input_format="xml"), "--input_format='xml': must be one of auto, wikiextractor, text"),
        (dict(unit_mb="4"), "--unit_mb='4': must be a number; got a str"),
    ],
)
def test_a_value_of_the_wrong_type_or_not_allowed_is_refused_naming_the_field(values, message):
    with pytest.raises(InputError, match=f"^{message}"):
        CorpusConfig(**{"input_file": "in.txt", "output_file": "out.txt", **values})


def test_right_values_pass():
    config = CorpusConfig(input_file=["a.txt", "b.txt"], output_file="out@2", keep_headings=True, num_workers=2)
    assert config.keep_headings is True and config.num_workers == 2
