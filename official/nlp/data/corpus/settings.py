"""The flags of `prepare_corpus` (each field's type, allowed values and range checked when the config is made)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from official.nlp.common.config_flags import CheckedConfig, field
from official.nlp.data.corpus.units import FORMATS


@dataclasses.dataclass
class CorpusConfig(CheckedConfig):
    """Flags of `prepare_corpus`: raw text (WikiExtractor output, plain text, or a Wikipedia XML dump) in, BERT's
    pretraining format out.

    ``output_file`` is one file, a comma-separated list of shards, or ``PATH@N`` for the N shards
    ``PATH-00000-of-0000N`` ... ``PATH-0000{N-1}-of-0000N`` (as `create_pretraining_data` names its records).
    """

    input_file: str | Sequence[str] = field(
        path="patterns",
        help=(
            "Raw text files: a comma-separated list of paths and glob patterns (WikiExtractor writes text/*/wiki_*), "
            "or Wikipedia XML dumps (enwiki-*-pages-articles*.xml*.bz2)."
        ),
    )
    output_file: str | Sequence[str] = field(
        path="paths",
        help=(
            "The corpus in BERT's format (one sentence per line, a blank line between documents): a file, a "
            "comma-separated list of shards, or PATH@N for N shards PATH-0000i-of-0000N."
        ),
    )
    input_format: str = field(
        "auto",
        enum=FORMATS,
        help=(
            "wikiextractor: <doc ...> blocks of WikiExtractor; text: a blank line between documents, a paragraph per "
            "line; dump: a Wikipedia XML dump (.xml.bz2 or .xml; main-namespace articles, wikitext parsed); auto: "
            "each file by its start (a dump, a <doc ...> tag or not)."
        ),
    )
    keep_headings: bool = field(
        False,
        help=(
            "Keep the titles and section headings of WikiExtractor or dump articles as lines of their own (dropped by "
            "default, as the paper keeps only text passages)."
        ),
    )
    num_workers: int = field(0, minimum=0, help="Worker processes (0: all cores). The output does not depend on it.")
    unit_mb: float = field(
        4.0,
        exclusive_minimum=0,
        help=(
            "Size of the work units a worker holds in memory, cut at document boundaries (of a dump: MB of wikitext). "
            "A single output file does not depend on it; shards end at unit boundaries (a dump's shards take the "
            "units in turn)."
        ),
    )
