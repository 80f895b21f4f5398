"""Instance creation with the original semantics: sentence-pair chunks, random next, truncation.

This follows google-research/bert `create_instances_from_document`, step by step:

* Each document gets a target length of ``max_seq_length - 3`` tokens (room for ``[CLS]``, ``[SEP]``, ``[SEP]``);
  with probability ``short_seq_prob`` it gets a random target in ``[2, max_num_tokens]`` instead, so the model also
  sees the short sequences that fine-tuning feeds it. The target is a soft goal; ``max_seq_length`` is the hard one.
* Whole sentences are gathered into a chunk until the target is reached or the document ends. Segment A is a random
  number of the chunk's first sentences (at least one), so that next-sentence prediction splits at real sentence
  boundaries rather than at an arbitrary token, which would make the task too easy.
* B is the rest of the chunk, or (always when the chunk holds a single sentence, else with probability 0.5) a run of
  sentences from a random start in a random *other* document, grown to the remaining target length; the chunk's
  sentences that B did not use are put back, so they start the next chunk. The original draws that document up to
  10 times and then keeps its last draw, which can be the document itself (often, in a set of few documents);
  `FastDraws` draws uniformly among the other documents, so B never comes from A's document unless there is no
  other one. `InstancePlan.same_document_random_next` counts the instances where it does.
* The pair is cut to ``max_num_tokens`` by removing one token at a time from the longer segment (B on ties), from the
  front or the back with equal probability, to avoid a positional bias.

``contiguous=True`` (for MLM-only data, ``--use_next_sentence_label=false``; the original has no such mode) packs
contiguous text instead: B is always the rest of the chunk, a chunk of a single sentence is split inside it at a
random token (a one-token chunk is dropped), and an over-long pair loses tokens from B's end (then A's start) so
that A + B stays one run of the document.

The planning loop runs per chunk in Python (a chunk's end and B's end are found by bisection over the sentence
ends) and records each instance as two token ranges into the flat token
array of `pretraining_documents.Documents` (A and B are contiguous runs of sentences, and truncation keeps them
contiguous). `build_batch` then assembles many instances at once in numpy.

Randomness comes from a `random.Random`. `Draws` holds the calls the loop makes; `ReferenceDraws` makes exactly the
original's calls (``randint``, one ``random()`` per truncation step) so that the original's random stream is
consumed in its order; `FastDraws` makes cheaper calls with the same distributions.
"""

from __future__ import annotations

import dataclasses
import random
from bisect import bisect_left

import numpy as np

from official.nlp.common.errors import InputError
from official.nlp.data.pretraining.documents import Documents
from official.nlp.tokenizers.packing import removal_counts, removal_steps


class FastDraws:
    """Same distributions as the original's calls, fewer and cheaper draws."""

    def __init__(self, rng: random.Random):
        self.random = rng.random
        self._getrandbits = rng.getrandbits

    def randint(self, lo: int, hi: int) -> int:
        return lo + int(self.random() * (hi - lo + 1))

    def other_document(self, doc_index: int, num_docs: int) -> int:
        """A uniform draw among the documents other than ``doc_index`` (``doc_index`` itself if it is alone)."""
        if num_docs < 2:
            return doc_index
        r = self.randint(0, num_docs - 2)
        return r + (r >= doc_index)

    def trim_fronts(self, len_a: int, len_b: int, max_num_tokens: int) -> tuple[int, int]:
        """How many of the removed tokens of A and of B come off the front (each removal: front w.p. 1/2)."""
        cut_a, cut_b = removal_counts(len_a, len_b, max_num_tokens)
        return self._getrandbits(cut_a).bit_count(), self._getrandbits(cut_b).bit_count()


class ReferenceDraws:
    """The original's exact calls on a `random.Random`, in its order."""

    def __init__(self, rng: random.Random):
        self.random = rng.random
        self.randint = rng.randint

    def other_document(self, doc_index: int, num_docs: int) -> int:
        """The original's rule: up to 10 draws among all documents, stopping at one that is not ``doc_index``."""
        for _ in range(10):
            r = self.randint(0, num_docs - 1)
            if r != doc_index:
                break
        return r

    def trim_fronts(self, len_a: int, len_b: int, max_num_tokens: int) -> tuple[int, int]:
        front = [0, 0]
        for which in removal_steps(len_a, len_b, max_num_tokens):  # One draw per removed token, in order.
            if self.random() < 0.5:
                front[which] += 1
        return front[0], front[1]


@dataclasses.dataclass
class InstancePlan:
    """Instances as token ranges: A = ``tokens[a_start:a_end]``, B = ``tokens[b_start:b_end]``."""

    a_start: list = dataclasses.field(default_factory=list)
    a_end: list = dataclasses.field(default_factory=list)
    b_start: list = dataclasses.field(default_factory=list)
    b_end: list = dataclasses.field(default_factory=list)
    is_random_next: list = dataclasses.field(default_factory=list)
    short_target: list = dataclasses.field(default_factory=list)
    document_passes: int = 0
    short_document_passes: int = 0
    same_document_random_next: int = 0  # "random next" instances whose B comes from A's own document

    def __len__(self) -> int:
        return len(self.a_start)

    def arrays(self) -> dict:
        return {
            f.name: np.asarray(getattr(self, f.name), dtype=np.int64)
            for f in dataclasses.fields(self)
            if f.type == "list"
        }


def plan_document(
    docs: Documents,
    order: list,
    doc_index: int,
    max_seq_length: int,
    short_seq_prob: float,
    draws,
    plan: InstancePlan,
    on_instance=None,
    contiguous: bool = False,
) -> None:
    """Plans the instances of document ``order[doc_index]`` (``order`` is the shuffled document list).

    ``on_instance(plan_row)`` is called after each instance (the reference mode masks there, as the original does).
    """
    sent = docs.sentence_offsets_list
    doc_off = docs.document_offsets_list
    d = order[doc_index]
    first, last = doc_off[d], doc_off[d + 1]
    max_num_tokens = max_seq_length - 3
    target = max_num_tokens
    short = False
    if draws.random() < short_seq_prob:
        target = draws.randint(2, max_num_tokens)
        short = True
        plan.short_document_passes += 1
    plan.document_passes += 1
    num_docs = len(order)
    chunk_start = first
    while chunk_start < last:
        # The chunk grows by whole sentences until it holds `target` tokens or the document ends: the first
        # sentence end at or past sent[chunk_start] + target, found by bisection over the sentence ends.
        i = bisect_left(sent, sent[chunk_start] + target, chunk_start + 1, last) - 1
        n_chunk = i - chunk_start + 1
        a_sentences = draws.randint(1, n_chunk - 1) if n_chunk >= 2 else 1
        a0 = sent[chunk_start]
        a1 = sent[chunk_start + a_sentences]
        if contiguous:
            if n_chunk == 1 and a1 - a0 < 2:  # One token: nothing to split into A and B.
                chunk_start = i + 1
                continue
            is_random = 0
            b1 = sent[i + 1]
            if n_chunk == 1:
                a1 = a0 + draws.randint(1, a1 - a0 - 1)
            b0 = a1
            excess = (b1 - a0) - max_num_tokens
            if excess > 0:
                cut_b = min(excess, b1 - b0 - 1)
                b1 -= cut_b
                a0 += excess - cut_b
        elif n_chunk == 1 or draws.random() < 0.5:
            is_random = 1
            target_b = target - (a1 - a0)
            r = draws.other_document(doc_index, num_docs)
            plan.same_document_random_next += r == doc_index
            rd = order[r]
            j = doc_off[rd] + draws.randint(0, doc_off[rd + 1] - doc_off[rd] - 1)
            r_last = doc_off[rd + 1] - 1
            b0 = sent[j]
            # B grows from sentence j until it holds target_b tokens or its document ends (bisection again).
            j = bisect_left(sent, b0 + target_b, j + 1, r_last + 1) - 1
            b1 = sent[j + 1]
            i -= n_chunk - a_sentences  # Put the unused sentences back.
        else:
            is_random = 0
            b0, b1 = a1, sent[i + 1]
        la, lb = a1 - a0, b1 - b0
        if la + lb > max_num_tokens:
            cut_a, cut_b = removal_counts(la, lb, max_num_tokens)
            front_a, front_b = draws.trim_fronts(la, lb, max_num_tokens)
            a0, a1 = a0 + front_a, a1 - (cut_a - front_a)
            b0, b1 = b0 + front_b, b1 - (cut_b - front_b)
        plan.a_start.append(a0)
        plan.a_end.append(a1)
        plan.b_start.append(b0)
        plan.b_end.append(b1)
        plan.is_random_next.append(is_random)
        plan.short_target.append(short)
        if on_instance is not None:
            on_instance(len(plan) - 1)
        chunk_start = i + 1


def plan_instances(
    docs: Documents,
    max_seq_length: int,
    short_seq_prob: float,
    dupe_factor: int,
    rng: random.Random,
    contiguous: bool = False,
) -> InstancePlan:
    """All instances of a set of documents: shuffle the documents, then ``dupe_factor`` passes over them
    (``contiguous``: see the module docstring)."""
    if max_seq_length < 5:
        raise InputError(f"max_seq_length must be >= 5 (room for [CLS] A [SEP] B [SEP]), got {max_seq_length}")
    prepare(docs)
    order = list(range(docs.num_documents))
    rng.shuffle(order)
    draws = FastDraws(rng)
    plan = InstancePlan()
    for _ in range(dupe_factor):
        for doc_index in range(len(order)):
            plan_document(docs, order, doc_index, max_seq_length, short_seq_prob, draws, plan, contiguous=contiguous)
    return plan


def prepare(docs: Documents) -> None:
    """Python lists of the offsets: the planning loop indexes them per sentence, and list indexing is fastest."""
    if not hasattr(docs, "sentence_offsets_list"):
        docs.sentence_offsets_list = docs.sentence_offsets.tolist()
        docs.document_offsets_list = docs.document_offsets.tolist()


def with_specials(tokens: np.ndarray, cls_id: int, sep_id: int) -> np.ndarray:
    """The token array followed by ``[CLS]``, ``[SEP]`` and padding (0), in int32: what `build_batch` gathers from.
    Made once per unit (a copy of all its tokens), not once per batch."""
    return np.concatenate([np.asarray(tokens, np.int32), np.array([cls_id, sep_id, 0], np.int32)])


def build_batch(extended: np.ndarray, plan: dict, rows: np.ndarray, max_seq_length: int) -> dict:
    """``[CLS] A [SEP] B [SEP]`` + padding for the instances ``rows`` of a plan (from `InstancePlan.arrays`).

    ``extended`` is `with_specials` of the token array the plan points into. Returns int32 ``input_ids``, uint8
    ``input_mask`` and ``segment_ids`` [len(rows), max_seq_length] (0 or 1, as bytes: the serializer writes them
    as such) and the int64 ``lengths`` (real tokens per row).
    """
    a0, a1 = plan["a_start"][rows], plan["a_end"][rows]
    b0, b1 = plan["b_start"][rows], plan["b_end"][rows]
    n = len(rows)
    # One gather from the tokens followed by [CLS], [SEP] and padding, in int32 (half the memory traffic of int64)
    # unless the token array is too long for it.
    count = len(extended) - 3
    index_type = np.int32 if count + 3 < 2**31 else np.int64
    la, lb = (a1 - a0).astype(index_type), (b1 - b0).astype(index_type)
    length = la + lb + 3
    p = np.arange(max_seq_length, dtype=index_type)[None, :]
    in_b = p >= (la + 2)[:, None]
    real = p < length[:, None]
    # A's token at p is a0 + p - 1; B's is b0 + p - la - 2, i.e. the same plus (b0 - a0 - la - 1).
    source = (a0 - 1).astype(index_type)[:, None] + p
    source += in_b * (b0 - a0 - la - 1).astype(index_type)[:, None]
    source[:, 0] = count
    at = np.arange(n)
    source[at, la + 1] = count + 1
    source[at, np.minimum(length - 1, max_seq_length - 1)] = count + 1
    np.putmask(source, ~real, count + 2)
    ids = extended.take(source)
    return {
        "input_ids": ids,
        "input_mask": real.view(np.uint8),
        "segment_ids": (in_b & real).view(np.uint8),
        "lengths": length.astype(np.int64),
    }
