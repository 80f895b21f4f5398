"""Reference-order mode: the original script's exact random stream, for byte-for-byte comparisons.

One process holds the whole corpus and every instance (as the original does, so memory grows with the corpus) and
consumes ``random.Random(random_seed)`` in exactly the original's order: shuffle the documents; per document the
short-target draw, per chunk the A split, the random-next coin, the random document and start, one draw per
truncated token; per instance the candidate shuffle and the 80/10/10 draws of each taken token (at the rates of
``--mask_token_prob`` and ``--random_token_prob``); finally the instance shuffle, written round-robin over the
output files. Selection, masking, assembly and serialization are
the shared code of the fast path, so agreement with the original's records checks those too.
"""

from __future__ import annotations

import random

import numpy as np

from official.nlp.common import input_files
from official.nlp.common.output_files import commit, temporary_name
from official.nlp.data.pretraining import documents as documents_lib
from official.nlp.data.pretraining import instances as instances_lib
from official.nlp.data.pretraining.masking import rule as masking_lib
from official.nlp.data.pretraining.settings import masking_config
from official.nlp.data.pretraining.statistics import PretrainingStatistics
from official.nlp.data.pretraining.writer import write_instances


def create_reference_order(config, files: list, paths: list) -> PretrainingStatistics:
    """Writes ``paths`` as the original script would (same flags, same seed); returns the statistics."""
    from official.nlp.data.pretraining.cached_tokenizer import CachedTokenizer
    from official.nlp.tokenizers import tokenization

    tokenizer = tokenization.FullTokenizer(config.vocab_file, do_lower_case=config.do_lower_case)
    mask_config = masking_config(config, tokenizer.vocab)
    stats = PretrainingStatistics(config.max_seq_length)
    docs = documents_lib.read_documents(
        [(f, 0, input_files.getsize(f)) for f in files],
        CachedTokenizer(tokenizer).ids,
        documents_lib.ReadOptions(config.max_line_bytes, config.skip_bad_lines),
        stats.input,
        files_break_documents=False,
    )

    rng = random.Random(config.random_seed)
    instances_lib.prepare(docs)
    order = list(range(docs.num_documents))
    rng.shuffle(order)
    draws = instances_lib.ReferenceDraws(rng)
    plan = instances_lib.InstancePlan()
    masks = []  # Per instance: (positions ascending, actions, replacement ids).
    vocab_size = len(tokenizer.vocab)
    cls_id, sep_id = mask_config.special_token_ids

    extended = instances_lib.with_specials(docs.tokens, cls_id, sep_id)
    mask_token_prob, keep_given_not_masked = mask_config.mask_token_prob, mask_config.keep_given_not_masked

    def mask_one(row: int) -> None:
        arrays = {k: np.asarray(getattr(plan, k)[row : row + 1]) for k in ("a_start", "a_end", "b_start", "b_end")}
        batch = instances_lib.build_batch(extended, arrays, np.zeros(1, np.int64), config.max_seq_length)
        unit = masking_lib.candidate_units(batch["input_ids"], batch["input_mask"], mask_config)
        num_units = int(unit.max(initial=-1)) + 1
        shuffled = list(range(num_units))
        rng.shuffle(shuffled)
        priorities = np.zeros(unit.shape, dtype=np.float64)
        priorities[0, shuffled] = np.arange(num_units)
        k = masking_lib.num_to_predict(batch["lengths"], mask_config)
        step = masking_lib.select_positions(unit, k, priorities, mask_config, need_order=True)[0]
        taken = np.nonzero(step >= 0)[0]
        by_selection = sorted(taken.tolist(), key=lambda p: (step[p], p))
        drawn = {}
        for p in by_selection:
            if rng.random() < mask_token_prob:
                drawn[p] = (masking_lib.MASK, 0)
            elif rng.random() < keep_given_not_masked:
                drawn[p] = (masking_lib.KEEP, 0)
            else:
                drawn[p] = (masking_lib.RANDOM, rng.randint(0, vocab_size - 1))
        positions = sorted(drawn)
        masks.append((positions, [drawn[p][0] for p in positions], [drawn[p][1] for p in positions]))

    for _ in range(config.dupe_factor):
        for doc_index in range(len(order)):
            instances_lib.plan_document(
                docs,
                order,
                doc_index,
                config.max_seq_length,
                config.short_seq_prob,
                draws,
                plan,
                on_instance=mask_one if config.static_masking else None,
            )
    stats.document_passes += plan.document_passes
    stats.short_document_passes += plan.short_document_passes
    stats.same_document_random_next += plan.same_document_random_next
    instance_order = list(range(len(plan)))
    rng.shuffle(instance_order)
    arrays = plan.arrays()
    instance_order = np.asarray(instance_order, dtype=np.int64)

    def masker(batch: dict, rows: np.ndarray) -> dict:
        selected = np.zeros(batch["input_ids"].shape, dtype=bool)
        actions, replacement = [], []
        for i, r in enumerate(rows):
            positions, acts, repl = masks[r]
            selected[i, positions] = True
            actions.extend(acts)
            replacement.extend(repl)
        return masking_lib.apply_masking(
            batch["input_ids"], selected, np.asarray(actions, np.int8), np.asarray(replacement, np.int64), mask_config
        )

    for j, path in enumerate(paths):
        tmp = temporary_name(path)
        write_instances(tmp, docs.tokens, arrays, instance_order[j :: len(paths)], config, mask_config, masker, stats)
        commit(tmp, path, name="--output_file")
    return stats
