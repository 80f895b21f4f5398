"""Where one pretraining-data worker's time goes: each stage of a work unit timed on its own, in microseconds per
instance (read and tokenize, plan, assemble, mask, statistics, serialize with the TFRecord framing, write).

The stages are the library's own calls, made in the order a worker makes them on the SQuAD flags, in one process
with warm caches carried from unit to unit as in a worker; the records are written to a scratch file. A profile,
not a rate: it leaves out start-up, the other worker and the main process.
"""

from __future__ import annotations

import os
import tempfile
import time

STAGES = ("read", "plan", "assemble", "mask", "statistics", "serialize", "write")


def profile_stages(corpus: str, vocab_file: str, units: int = 3) -> tuple[int, dict]:
    """Times the stages over the first ``units`` work units of ``corpus``; returns (instances, seconds per stage)."""
    from official.nlp.data.pretraining import documents, generator, instances, records, writer
    from official.nlp.data.pretraining.cached_tokenizer import CachedTokenizer, LineCache
    from official.nlp.data.pretraining.masking import rule as masking
    from official.nlp.data.pretraining.statistics import PretrainingStatistics
    from official.nlp.tokenizers import tokenization

    config = generator.PretrainingDataConfig(
        input_file=corpus, output_file="unused", vocab_file=vocab_file, dupe_factor=5, random_seed=12345
    )
    generator.keep_freed_memory()  # as a worker does
    tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=True)
    tokenize, line_cache = CachedTokenizer(tokenizer).ids, LineCache()
    mask_config = generator.masking_config(config, tokenizer.vocab)
    cls_id, sep_id = mask_config.special_token_ids
    seconds = dict.fromkeys(STAGES, 0.0)
    total = 0
    clock = time.perf_counter
    with tempfile.TemporaryDirectory() as scratch, open(os.path.join(scratch, "records"), "wb") as out:
        for unit in documents.plan_units([corpus], int(config.unit_mb * 2**20))[:units]:
            stats = PretrainingStatistics(config.max_seq_length)
            t = clock()
            docs = documents.read_documents(
                unit.pieces, tokenize, documents.ReadOptions(), stats.input, line_cache=line_cache
            )
            seconds["read"] += clock() - t
            t = clock()
            py_rng, np_rng = generator.unit_seeds(config.random_seed, unit.index)
            plan = instances.plan_instances(docs, config.max_seq_length, config.short_seq_prob, 5, py_rng)
            order, arrays = np_rng.permutation(len(plan)), plan.arrays()
            extended = instances.with_specials(docs.tokens, cls_id, sep_id)
            seconds["plan"] += clock() - t
            total += len(plan)
            for begin in range(0, len(order), writer.BATCH_SIZE):
                rows = order[begin : begin + writer.BATCH_SIZE]
                t0 = clock()
                batch = instances.build_batch(extended, arrays, rows, config.max_seq_length)
                t1 = clock()
                masked = masking.mask_batch(batch["input_ids"], batch["input_mask"], np_rng, mask_config)
                t2 = clock()
                features = {k: batch[k] for k in records.SEQUENCE_FEATURES}
                features.update({k: masked[k] for k in ("input_ids", *records.PREDICTION_FEATURES)})
                features[records.NSP_FEATURE] = arrays["is_random_next"][rows][:, None]
                stats.add_batch(
                    batch["lengths"], arrays["is_random_next"][rows], arrays["short_target"][rows], masked["actions"]
                )
                t3 = clock()
                framed = records.serialize_framed(features)
                t4 = clock()
                out.write(framed)
                t5 = clock()
                for name, a, b in (
                    ("assemble", t0, t1),
                    ("mask", t1, t2),
                    ("statistics", t2, t3),
                    ("serialize", t3, t4),
                    ("write", t4, t5),
                ):
                    seconds[name] += b - a
    return total, seconds


def print_stages(corpus: str, vocab_file: str, units: int = 3) -> None:
    total, seconds = profile_stages(corpus, vocab_file, units)
    per = {name: 1e6 * s / max(total, 1) for name, s in seconds.items()}
    print(f"\n## one worker's stages, first {units} work units of {corpus} ({total:,} instances), us per instance")
    print("  " + ", ".join(f"{name} {us:.2f}" for name, us in per.items()) + f"; total {sum(per.values()):.2f}")
