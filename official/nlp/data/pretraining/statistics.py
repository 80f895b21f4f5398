"""Statistics of generated pretraining data: counted per work unit, merged, written as JSON next to the output.

The JSON holds the raw counts and the rates they define:

* ``masked_fraction``: predictions / real tokens (``[CLS]`` and ``[SEP]`` included, as in the original's
  ``round(len(tokens) * masked_lm_prob)``).
* ``masked_fraction_of_non_special``: predictions / tokens other than ``[CLS]``, ``[SEP]``, ``[SEP]`` (the
  original's output on the SQuAD contexts gives 0.149 and 0.153 for these two).
* ``action_split``: the share of predictions replaced by ``[MASK]``, kept, and replaced by a random id (a random id
  that happens to equal the original token still counts as "random").
* ``random_next_rate``: share of instances whose B comes from another document (label 1). It is above 0.5 on
  corpora of short documents because a chunk of a single sentence always takes a random next.
* ``same_document_random_next``: label-1 instances whose B still comes from A's own document. 0 unless the
  corpus is a single document (the generator then warns).
* ``short_target_document_fraction``: share of document passes that drew a short target (about
  ``short_seq_prob``); ``short_target_instance_fraction``: share of instances from those passes (higher: short
  targets cut a document into more instances).
* ``length_histogram``: ``[count of instances with 0 real tokens, 1, ..., max_seq_length]``.
* ``input``: lines, bytes, documents, sentences, tokens, and every skip with its reason.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np

from official.nlp.common import output_files, text_files
from official.nlp.common.output_files import write_atomically
from official.nlp.data.pretraining.documents import INPUT_COUNTERS

ACTION_NAMES = ("mask", "keep", "random")


@dataclasses.dataclass
class PretrainingStatistics:
    """Counts over a set of instances; ``merge`` adds another set."""

    max_seq_length: int
    input: dict = dataclasses.field(default_factory=lambda: {k: 0 for k in INPUT_COUNTERS})
    instances: int = 0
    real_tokens: int = 0
    predictions: int = 0
    actions: list = dataclasses.field(default_factory=lambda: [0, 0, 0])
    random_next: int = 0
    short_target_instances: int = 0
    document_passes: int = 0
    short_document_passes: int = 0
    same_document_random_next: int = 0
    length_histogram: list = None

    def __post_init__(self):
        if self.length_histogram is None:
            self.length_histogram = [0] * (self.max_seq_length + 1)

    def add_batch(
        self, lengths: np.ndarray, is_random_next: np.ndarray, short_target: np.ndarray, actions: np.ndarray | None
    ) -> None:
        self.instances += len(lengths)
        self.real_tokens += int(lengths.sum())
        self.random_next += int(np.sum(is_random_next))
        self.short_target_instances += int(np.sum(short_target))
        hist = np.bincount(lengths, minlength=self.max_seq_length + 1)
        self.length_histogram = (np.asarray(self.length_histogram) + hist).tolist()
        if actions is not None:
            self.predictions += len(actions)
            counts = np.bincount(actions.astype(np.int64), minlength=3)
            self.actions = [a + int(b) for a, b in zip(self.actions, counts)]

    def merge(self, other: PretrainingStatistics) -> None:
        """Adds the counts of ``other``, which must count instances of the same ``max_seq_length``."""
        if other.max_seq_length != self.max_seq_length or len(other.length_histogram) != len(self.length_histogram):
            raise ValueError(
                f"cannot merge statistics of max_seq_length={other.max_seq_length} (a length histogram of "
                f"{len(other.length_histogram)} entries) into statistics of max_seq_length={self.max_seq_length} "
                f"({len(self.length_histogram)} entries)"
            )
        for k, v in other.input.items():
            self.input[k] = self.input.get(k, 0) + v
        for name in (
            "instances",
            "real_tokens",
            "predictions",
            "random_next",
            "short_target_instances",
            "document_passes",
            "short_document_passes",
            "same_document_random_next",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.actions = [a + b for a, b in zip(self.actions, other.actions)]
        self.length_histogram = [a + b for a, b in zip(self.length_histogram, other.length_histogram)]

    def to_dict(self) -> dict:
        def ratio(a, b):
            return a / b if b else None

        d = dataclasses.asdict(self)
        d["rates"] = {
            "masked_fraction": ratio(self.predictions, self.real_tokens),
            "masked_fraction_of_non_special": ratio(self.predictions, self.real_tokens - 3 * self.instances),
            "action_split": {n: ratio(a, self.predictions) for n, a in zip(ACTION_NAMES, self.actions)},
            "random_next_rate": ratio(self.random_next, self.instances),
            "short_target_document_fraction": ratio(self.short_document_passes, self.document_passes),
            "short_target_instance_fraction": ratio(self.short_target_instances, self.instances),
            "mean_length": ratio(self.real_tokens, self.instances),
        }
        return d

    @classmethod
    def from_dict(cls, d: dict) -> PretrainingStatistics:
        """The inverse of `to_dict`; keys that are not fields (``rates``, extras of `write`) are ignored."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})

    def write(self, path: str, extra: dict | None = None) -> None:
        """Writes the JSON atomically (temporary name, then rename)."""
        d = self.to_dict()
        if extra:
            d.update(extra)
        output_files.makedirs_for(path)
        with write_atomically(path) as f:
            json.dump(d, f, indent=1)

    @classmethod
    def read(cls, path: str) -> PretrainingStatistics:
        return cls.from_dict(json.loads(text_files.read_text(path)))
