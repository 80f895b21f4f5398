"""Creates masked-LM / next-sentence pretraining TFRecords from text: streaming, parallel, resumable.

The semantics are the original google-research/bert `create_pretraining_data.py` (see `pretraining_instances` and
`masking`), applied per *work unit*: the corpus is cut into units of about ``unit_mb`` at blank lines, and each
unit is processed on its own exactly as the original processes the whole corpus (shuffle its documents,
``dupe_factor`` passes, random-next documents drawn from the unit, instances shuffled within the unit). Memory per
worker is bounded by the unit size, whatever the corpus size. The original draws the random next document and
shuffles instances over the whole corpus; here both stay within a unit of a few MB (thousands of documents).

Output shards are contiguous runs of units. A worker writes its unit to a part file inside
``<shard>.incomplete/``; when all units of a shard are done, the parts are joined, the shard's statistics and the
settings that shaped its bytes (see `pretraining_outputs`) are written to ``<shard>.stats.json`` and the shard is renamed to
its final name. A shard file under its final name is therefore always complete, and a rerun with the same settings
skips it; a rerun with other settings is refused before anything is touched, since keeping the old shards would mix
two datasets. Each unit draws from its own seed (``random_seed``, unit index), so the output bytes depend on the
flags and the input only, not on the number of workers or on interruptions.

Example:

  >>> config = PretrainingDataConfig(input_file="corpus/*.txt", output_file="out/train.tfrecord@8",
  ...                                vocab_file="vocab.txt", dupe_factor=5)            # doctest: +SKIP
  >>> stats = create_pretraining_data(config)                                        # doctest: +SKIP
  >>> stats.to_dict()["rates"]["masked_fraction"]                                    # doctest: +SKIP
  0.153
"""
from __future__ import annotations

import dataclasses
import gzip
import logging
import math
import multiprocessing
import os
import random
import shutil
import time
from typing import Callable, Optional, Sequence

import numpy as np

from official.nlp.data import masking as masking_lib
from official.nlp.data import pretraining_documents as documents_lib
from official.nlp.data import pretraining_instances as instances_lib
from official.nlp.data import pretraining_records as records_lib
from official.nlp.data import tfrecord_io
from official.nlp.data.pretraining_outputs import (default_stats_path, is_complete, output_paths, output_settings,
                                                    shard_record)
from official.nlp.data.pretraining_statistics import PretrainingStatistics

BATCH_SIZE = 4096  # Instances assembled, masked and serialized per numpy batch.
GZIP_LEVEL = 6  # zlib's default, as TensorFlow's GZIP writer uses; Python's default 9 is much slower.


@dataclasses.dataclass
class PretrainingDataConfig:
    """Flags of `create_pretraining_data` (the original script's, plus the ones below the line).

    ``output_file`` is a comma-separated list of shard paths, or ``PATH@N`` for the N shards
    ``PATH-00000-of-0000N`` ... ``PATH-0000{N-1}-of-0000N``.
    """

    input_file: str | Sequence[str]
    output_file: str | Sequence[str]
    vocab_file: str
    do_lower_case: bool = True
    max_seq_length: int = 128
    max_predictions_per_seq: int = 20
    random_seed: int = 12345
    dupe_factor: int = 10
    masked_lm_prob: float = 0.15
    short_seq_prob: float = 0.1
    do_whole_word_mask: bool = False
    # ---
    max_ngram_size: int = 1
    use_next_sentence_label: bool = True
    static_masking: bool = True  # False writes unmasked records for `masking.dynamic_masking`.
    gzip: bool = False
    num_workers: int = 0  # 0: all cores.
    unit_mb: float = 4.0
    max_line_bytes: int = 1 << 20
    skip_bad_lines: bool = False
    stats_file: Optional[str] = None
    reference_order: bool = False  # Single process, whole corpus, the original's exact random stream.


def validate_config(config: PretrainingDataConfig) -> None:
    """Refuses flags that cannot give correct records, naming each; runs before any file or folder is made."""
    c = config
    problems = []

    def check(ok: bool, flag: str, value, why: str) -> None:
        if not ok:
            problems.append(f"--{flag}={value}: {why}")

    check(c.max_seq_length >= 5, "max_seq_length", c.max_seq_length,
          "must be at least 5 ([CLS] A [SEP] B [SEP] with one token in each segment)")
    check(c.max_predictions_per_seq >= 1, "max_predictions_per_seq", c.max_predictions_per_seq, "must be at least 1")
    check(c.dupe_factor >= 1, "dupe_factor", c.dupe_factor,
          "must be at least 1 (the number of passes over the input; 0 would write empty files)")
    check(0 < c.masked_lm_prob <= 1, "masked_lm_prob", c.masked_lm_prob, "must be in (0, 1]")
    check(0 <= c.short_seq_prob <= 1, "short_seq_prob", c.short_seq_prob, "is a probability, so must be in [0, 1]")
    check(c.max_ngram_size >= 1, "max_ngram_size", c.max_ngram_size, "must be at least 1 (1: no n-gram masking)")
    check(c.unit_mb > 0, "unit_mb", c.unit_mb, "must be positive (the size of a work unit in MB)")
    check(c.max_line_bytes >= 1, "max_line_bytes", c.max_line_bytes, "must be at least 1")
    check(c.num_workers >= 0, "num_workers", c.num_workers, "must be >= 0 (0: all cores)")
    if c.reference_order:
        check(c.max_ngram_size == 1, "max_ngram_size", c.max_ngram_size,
              "--reference_order reproduces the original script, which has no n-gram masking; use 1")
    else:
        check(c.random_seed >= 0, "random_seed", c.random_seed, "must be >= 0 (it seeds numpy's SeedSequence)")
    if problems:
        raise ValueError("; ".join(problems))


def load_checked_vocab(config: PretrainingDataConfig) -> dict:
    from official.nlp.bert import tokenization

    vocab = tokenization.load_vocab(config.vocab_file)
    tokenization.validate_vocab(vocab, do_lower_case=config.do_lower_case, source=config.vocab_file)
    return vocab


def masking_config(config: PretrainingDataConfig, vocab: dict) -> masking_lib.MaskingConfig:
    return masking_lib.MaskingConfig.from_vocab(
        vocab, max_predictions_per_seq=config.max_predictions_per_seq, masked_lm_prob=config.masked_lm_prob,
        whole_word_mask=config.do_whole_word_mask, max_ngram_size=config.max_ngram_size)


Masker = Callable[[dict, np.ndarray], dict]  # (batch from build_batch, its plan rows) -> masking_lib.apply_masking


def encode_instances(tokens: np.ndarray, plan: dict, rows: np.ndarray, config: PretrainingDataConfig,
                     mask_config: masking_lib.MaskingConfig, masker: Masker, stats: PretrainingStatistics) -> bytes:
    """Assembles, masks (``masker(batch, rows)``), serializes and frames the instances ``rows`` of a plan."""
    cls_id, sep_id = mask_config.special_token_ids
    batch = instances_lib.build_batch(tokens, plan, rows, config.max_seq_length, cls_id, sep_id)
    features = {k: batch[k] for k in records_lib.SEQUENCE_FEATURES}
    actions = None
    if config.static_masking:
        masked = masker(batch, rows)
        actions = masked["actions"]
        for k in ("input_ids", *records_lib.PREDICTION_FEATURES):
            features[k] = masked[k]
    if config.use_next_sentence_label:
        features[records_lib.NSP_FEATURE] = plan["is_random_next"][rows][:, None]
    stats.add_batch(batch["lengths"], plan["is_random_next"][rows], plan["short_target"][rows], actions)
    matrix, lengths = records_lib.serialize_examples(features)
    return tfrecord_io.frame_records(matrix, lengths)


def gzip_writer(raw):
    """A gzip stream with no name and time in its header, so the same records always give the same bytes."""
    return gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=GZIP_LEVEL, mtime=0)


def write_instances(path: str, tokens: np.ndarray, plan: dict, order: np.ndarray, config: PretrainingDataConfig,
                    mask_config: masking_lib.MaskingConfig, masker: Masker, stats: PretrainingStatistics) -> None:
    """Writes the instances ``order`` of a plan, in that order and a batch at a time, as framed records (gzipped
    with ``config.gzip``) to ``path``."""
    with open(path, "wb") as raw:
        out = gzip_writer(raw) if config.gzip else raw
        for begin in range(0, len(order), BATCH_SIZE):
            rows = order[begin:begin + BATCH_SIZE]
            out.write(encode_instances(tokens, plan, rows, config, mask_config, masker, stats))
        if config.gzip:
            out.close()


# ----------------------------------------------------------------------------------------------------------------
# Worker side (spawned processes; no TensorFlow).

_WORKER: dict = {}


def _worker_init(config: PretrainingDataConfig) -> None:
    from official.nlp.bert import tokenization
    from official.nlp.data.cached_tokenizer import CachedTokenizer

    tokenizer = tokenization.FullTokenizer(config.vocab_file, do_lower_case=config.do_lower_case)
    _WORKER.update(config=config, tokenizer=CachedTokenizer(tokenizer),
                   mask_config=masking_config(config, tokenizer.vocab))


def unit_seeds(random_seed: int, unit_index: int) -> tuple[random.Random, np.random.Generator]:
    seq = np.random.SeedSequence([random_seed, unit_index])
    py_seed = int.from_bytes(seq.generate_state(4, np.uint32).tobytes(), "little")
    return random.Random(py_seed), np.random.Generator(np.random.PCG64(seq))


def process_unit(unit: documents_lib.WorkUnit, part_path: str) -> dict:
    """Turns one work unit into a part file of framed records; returns its statistics (as a dict)."""
    config: PretrainingDataConfig = _WORKER["config"]
    start = time.time()
    stats = PretrainingStatistics(config.max_seq_length)
    docs = documents_lib.read_documents(
        unit.pieces, _WORKER["tokenizer"].ids,
        documents_lib.ReadOptions(config.max_line_bytes, config.skip_bad_lines), stats.input)
    single = docs.single_sentence_documents()
    first_single = docs.first_lines[single[0]] if len(single) else None
    py_rng, np_rng = unit_seeds(config.random_seed, unit.index)
    plan = instances_lib.plan_instances(docs, config.max_seq_length, config.short_seq_prob, config.dupe_factor,
                                        py_rng)
    stats.document_passes += plan.document_passes
    stats.short_document_passes += plan.short_document_passes
    order = np_rng.permutation(len(plan))
    mask_config = _WORKER["mask_config"]

    def masker(batch: dict, rows: np.ndarray) -> dict:
        return masking_lib.mask_batch(batch["input_ids"], batch["input_mask"], np_rng, mask_config)

    write_instances(part_path, docs.tokens, plan.arrays(), order, config, mask_config, masker, stats)
    return {"unit": unit.index, "stats": dataclasses.asdict(stats), "seconds": time.time() - start,
            "bytes": unit.num_bytes, "first_single_sentence_document": first_single}


# ----------------------------------------------------------------------------------------------------------------
# Main process.


def _assign_units(num_units: int, num_shards: int) -> list[range]:
    return [range(s * num_units // num_shards, (s + 1) * num_units // num_shards) for s in range(num_shards)]


def _finish_shard(path: str, parts: list[str], stats: PretrainingStatistics, record: dict) -> None:
    tmp_dir = path + ".incomplete"
    joined = os.path.join(tmp_dir, "shard")
    if len(parts) == 1:
        os.replace(parts[0], joined)
    else:
        with open(joined, "wb") as out:
            for part in parts:
                with open(part, "rb") as f:
                    shutil.copyfileobj(f, out, 1 << 22)
    stats.write(path + ".stats.json", record)
    os.replace(joined, path)  # The shard gets its final name only now, complete.
    shutil.rmtree(tmp_dir, ignore_errors=True)


def create_pretraining_data(config: PretrainingDataConfig) -> PretrainingStatistics:
    """Runs the whole job; returns the merged statistics (also written to the statistics file)."""
    validate_config(config)
    files = documents_lib.expand_input_files(config.input_file)
    vocab = load_checked_vocab(config)
    masking_config(config, vocab)  # Fails early on a vocabulary without [CLS], [SEP] or [MASK].
    paths = output_paths(config.output_file)
    stats_path = config.stats_file or default_stats_path(config.output_file, paths)
    records = {os.path.abspath(p + ".stats.json"): s for s, p in enumerate(paths)}
    if len(paths) > 1 and os.path.abspath(stats_path) in records:
        raise ValueError(f"--stats_file={stats_path} is the statistics file of one shard; name another file")
    settings = output_settings(config, files, len(paths))
    # Before anything is written: a shard of other settings stops the job here.
    complete = [is_complete(path, settings, s) for s, path in enumerate(paths)]
    for path in paths:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    # With a single shard, the job's statistics file is also the shard's record.
    record_of = records.get(os.path.abspath(stats_path))
    job_record = {"output_files": paths,
                  **({"settings": settings} if record_of is None else shard_record(settings, record_of))}
    if config.reference_order:
        from official.nlp.data import pretraining_reference

        stats = pretraining_reference.create_reference_order(config, files, paths)
        stats.write(stats_path, {"mode": "reference_order", **job_record})
        return stats

    total_bytes = sum(os.path.getsize(f) for f in files)
    unit_bytes = max(1, min(int(config.unit_mb * 2**20), math.ceil(total_bytes / len(paths))))
    units = documents_lib.plan_units(files, unit_bytes)
    shards = _assign_units(len(units), len(paths))
    total = PretrainingStatistics(config.max_seq_length)
    to_write = []  # Indexes of the shards this run writes units for.
    for s, path in enumerate(paths):
        if complete[s]:
            logging.info("shard %s is complete; skipped", path)
            total.merge(PretrainingStatistics.read(path + ".stats.json"))
            continue
        if os.path.exists(path):
            os.remove(path)  # A final name without statistics was not written by us; redo it.
        tmp_dir = path + ".incomplete"
        shutil.rmtree(tmp_dir, ignore_errors=True)
        os.makedirs(tmp_dir)
        if shards[s]:
            to_write.append(s)
        else:
            open(os.path.join(tmp_dir, "shard"), "wb").close()
            _finish_shard(path, [], PretrainingStatistics(config.max_seq_length), shard_record(settings, s))
            logging.warning("shard %s is empty: the input has fewer work units than output shards", path)

    pending = [(s, units[u]) for s in to_write for u in shards[s]]
    num_workers = config.num_workers or os.cpu_count() or 1
    num_workers = max(1, min(num_workers, len(pending)))
    logging.info("%d input files, %.1f MB, %d work units, %d shards (%d to write), %d workers",
                 len(files), total_bytes / 2**20, len(units), len(paths), len(to_write), num_workers)
    if pending:
        _run_units(config, paths, shards, units, pending, num_workers, total, settings)
    total.write(stats_path, job_record)
    return total


def _run_units(config, paths, shards, units, pending, num_workers, total, settings) -> None:
    remaining = {s: len(shards[s]) for s, _ in pending}
    shard_stats = {s: PretrainingStatistics(config.max_seq_length) for s in remaining}
    part = lambda s, u: os.path.join(paths[s] + ".incomplete", f"unit-{u.index:06d}.part")  # noqa: E731
    start = time.time()
    done_bytes = 0
    last_log = start
    ctx = multiprocessing.get_context("spawn")  # Never fork: the parent may hold TF or other threads.
    if num_workers == 1:
        _worker_init(config)
        results = (process_unit(u, part(s, u)) for s, u in pending)
        pool = None
    else:
        pool = ctx.Pool(num_workers, initializer=_worker_init, initargs=(config,))
        results = _windowed(pool, [(u, part(s, u)) for s, u in pending], 2 * num_workers)
    try:
        for (s, u), result in zip(pending, results):
            unit_stats = PretrainingStatistics.from_dict(result["stats"])
            if result["first_single_sentence_document"] and not total.input["single_sentence_documents"]:
                path, offset = result["first_single_sentence_document"]
                logging.warning("%s:%d: a document of a single sentence (the first of those counted in the "
                                "statistics); as in the original, it always takes a random next segment",
                                path, documents_lib.line_number(path, offset))
            shard_stats[s].merge(unit_stats)
            total.merge(unit_stats)
            done_bytes += result["bytes"]
            remaining[s] -= 1
            if remaining[s] == 0:
                _finish_shard(paths[s], [part(s, units[i]) for i in shards[s]], shard_stats.pop(s),
                              shard_record(settings, s))
                logging.info("wrote %s", paths[s])
            now = time.time()
            if now - last_log > 10 or remaining[s] == 0:
                elapsed = max(now - start, 1e-9)
                logging.info("documents %d, instances %d, %.2f MB/s of text, %.0f instances/s",
                             total.input["documents"], total.instances, done_bytes / 2**20 / elapsed,
                             total.instances / elapsed)
                last_log = now
    finally:
        if pool is not None:
            pool.terminate()
            pool.join()


def _windowed(pool, tasks, window):
    """`pool.apply_async` over tasks in order, at most ``window`` in flight (bounds buffered results)."""
    in_flight = []
    it = iter(tasks)
    for task in it:
        in_flight.append(pool.apply_async(process_unit, task))
        if len(in_flight) >= window:
            break
    for task in it:
        yield in_flight.pop(0).get()
        in_flight.append(pool.apply_async(process_unit, task))
    while in_flight:
        yield in_flight.pop(0).get()
