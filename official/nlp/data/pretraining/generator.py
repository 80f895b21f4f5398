"""Creates masked-LM / next-sentence pretraining TFRecords from text: streaming, parallel, resumable.

The semantics are the original google-research/bert `create_pretraining_data.py` (see `instances` and
`masking`), applied per *work unit*: the corpus is cut into units of about ``unit_mb`` at blank lines, and each
unit is processed on its own exactly as the original processes the whole corpus (shuffle its documents,
``dupe_factor`` passes, random-next documents drawn from the unit, instances shuffled within the unit). Memory per
worker is bounded by the unit size, whatever the corpus size. The original draws the random next document and
shuffles instances over the whole corpus; here both stay within a unit of a few MB (thousands of documents). A
corpus of at most ``unit_mb`` is one unit, so it is processed as the original processes it.

Output shards are contiguous runs of units; with fewer units than shards, each unit's (shuffled) instances are
dealt round-robin to a run of shards, as the original deals its instances to its output files. A shard that would
stay empty is an error. A worker writes its unit to a part file inside ``<shard>.incomplete/`` (one per shard
the unit feeds), and the main process appends each part to the shard's file there as the unit's result arrives,
in unit order. When all units of a shard are done, the shard's statistics and the settings that shaped its bytes
(see `outputs`) are written to ``stats/<shard>.json`` and the shard is renamed to its final name. A shard file
under its final name is therefore always complete, and a rerun with the same settings skips it; a rerun with other
settings is refused before anything is touched, since keeping the old shards would mix two datasets. Each unit
draws from its own seed (``random_seed``, unit index), so the output bytes depend on the flags and the input only,
not on the number of workers or on interruptions.

Example:

  >>> config = PretrainingDataConfig(input_file="corpus/*.txt", output_file="out/train.tfrecord@8",
  ...                                vocab_file="vocab.txt", dupe_factor=5)            # doctest: +SKIP
  >>> stats = create_pretraining_data(config)                                        # doctest: +SKIP
  >>> stats.to_dict()["rates"]["masked_fraction"]                                    # doctest: +SKIP
  0.153
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import logging
import os
import random
import shutil
import tempfile
import time

import numpy as np

from official.nlp.common import input_files, output_files, output_folders
from official.nlp.common.errors import InputError
from official.nlp.common.input_files import absolute, expand_input_files
from official.nlp.common.output_files import check_target
from official.nlp.common.output_names import default_stats_path, output_paths
from official.nlp.common.output_names import stats_path as shard_stats_path
from official.nlp.common.processes import interruption, worker_pool
from official.nlp.common.text_files import line_number
from official.nlp.data.pretraining import documents as documents_lib
from official.nlp.data.pretraining import instances as instances_lib
from official.nlp.data.pretraining.masking import rule as masking_lib
from official.nlp.data.pretraining.outputs import (
    ShardJoiner,
    check_written,
    file_content,
    finish_shard,
    output_settings,
    part_path,
    parts_dir,
    remove_stale_staging,
    shard_record,
    shard_state,
)
from official.nlp.data.pretraining.settings import (
    PretrainingDataConfig,
    load_checked_vocab,
    masking_config,
    validate_config,
)
from official.nlp.data.pretraining.statistics import PretrainingStatistics
from official.nlp.data.pretraining.writer import write_instances

# ----------------------------------------------------------------------------------------------------------------
# Worker side (spawned processes; no TensorFlow).

_WORKER: dict = {}


def keep_freed_memory() -> None:
    """Tells glibc's malloc to keep freed memory for reuse instead of handing it back to the kernel.

    A worker allocates and frees the same few-MB numpy buffers for every batch. By default glibc serves each of
    them with a fresh mmap and unmaps it when it is freed, so every batch page-faults its buffers in again: on
    64 MB of text that was 2.1 million page faults and 7 of the job's 23 CPU-seconds. Kept, the buffers are
    reused, at the cost of holding the largest batch's memory (tens of MB) until the worker exits."""
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (macOS, musl without mallopt): nothing to tune
        return
    m_trim_threshold, m_mmap_threshold = -1, -3  # glibc's malloc.h
    mallopt(m_mmap_threshold, 32 << 20)  # glibc's largest; bigger blocks (none in a worker) are still mapped
    mallopt(m_trim_threshold, 1 << 30)


def _worker_init(config: PretrainingDataConfig) -> None:
    keep_freed_memory()
    from official.nlp.data.pretraining.cached_tokenizer import CachedTokenizer, LineCache
    from official.nlp.tokenizers import tokenization

    tokenizer = tokenization.FullTokenizer(config.vocab_file, do_lower_case=config.do_lower_case)
    _WORKER.update(
        config=config,
        tokenizer=CachedTokenizer(tokenizer),
        line_cache=LineCache(),
        mask_config=masking_config(config, tokenizer.vocab),
    )


def unit_seeds(random_seed: int, unit_index: int) -> tuple[random.Random, np.random.Generator]:
    seq = np.random.SeedSequence([random_seed, unit_index])
    py_seed = int.from_bytes(seq.generate_state(4, np.uint32).tobytes(), "little")
    return random.Random(py_seed), np.random.Generator(np.random.PCG64(seq))


def process_unit(unit: documents_lib.WorkUnit, part_paths: list) -> dict:
    """Turns one work unit into part files of framed records, its instances dealt round-robin to ``part_paths``
    (None: computed, for the same random stream, but not kept); returns the statistics of each part (as dicts),
    the first part also holding the unit's input counts."""
    config: PretrainingDataConfig = _WORKER["config"]
    start = time.time()
    stats = PretrainingStatistics(config.max_seq_length)
    docs = documents_lib.read_documents(
        unit.pieces,
        _WORKER["tokenizer"].ids,
        documents_lib.ReadOptions(config.max_line_bytes, config.skip_bad_lines),
        stats.input,
        line_cache=_WORKER["line_cache"],
    )
    single = docs.single_sentence_documents()
    first_single = docs.first_lines[single[0]] if len(single) else None
    py_rng, np_rng = unit_seeds(config.random_seed, unit.index)
    plan = instances_lib.plan_instances(
        docs,
        config.max_seq_length,
        config.short_seq_prob,
        config.dupe_factor,
        py_rng,
        contiguous=not config.use_next_sentence_label,
    )
    stats.document_passes += plan.document_passes
    stats.short_document_passes += plan.short_document_passes
    stats.same_document_random_next += plan.same_document_random_next
    order = np_rng.permutation(len(plan))
    mask_config = _WORKER["mask_config"]

    def masker(batch: dict, rows: np.ndarray) -> dict:
        return masking_lib.mask_batch(batch["input_ids"], batch["input_mask"], np_rng, mask_config)

    arrays = plan.arrays()
    part_stats = [stats] + [PretrainingStatistics(config.max_seq_length) for _ in part_paths[1:]]
    for j, (path, part) in enumerate(zip(part_paths, part_stats)):
        write_instances(
            path or os.devnull, docs.tokens, arrays, order[j :: len(part_paths)], config, mask_config, masker, part
        )
    return {
        "unit": unit.index,
        "stats": [dataclasses.asdict(p) for p in part_stats],
        "seconds": time.time() - start,
        "bytes": unit.num_bytes,
        "first_single_sentence_document": first_single,
    }


# ----------------------------------------------------------------------------------------------------------------
# Main process.


def place_units(num_units: int, num_shards: int) -> list[list[int]]:
    """The shards each unit's instances go to: a contiguous run of units per shard, or with fewer units than
    shards, a contiguous run of shards per unit (its instances dealt round-robin). Every shard gets a unit."""
    if num_units >= num_shards:
        return [
            [s]
            for s in range(num_shards)
            for _ in range(s * num_units // num_shards, (s + 1) * num_units // num_shards)
        ]
    return [list(range(u * num_shards // num_units, (u + 1) * num_shards // num_units)) for u in range(num_units)]


def _holds_text(path: str) -> bool:
    with input_files.open_file(path, "rb") as f:
        while chunk := f.read(1 << 16):
            if chunk.strip():
                return True
    return False


def create_pretraining_data(config: PretrainingDataConfig) -> PretrainingStatistics:
    """Runs the whole job; returns the merged statistics (also written to the statistics file)."""
    validate_config(config)
    paths = output_paths(config.output_file)
    stats_path = config.stats_file or default_stats_path(config.output_file, paths)
    records = {absolute(shard_stats_path(p)): s for s, p in enumerate(paths)}
    if len(paths) > 1 and absolute(stats_path) in records:
        raise InputError(f"--stats_file={stats_path} is the statistics file of one shard; name another file")
    # Before any work: a rename onto a device, a FIFO or a folder would replace it.
    for path in paths:
        check_target(path, name="--output_file")
        check_target(shard_stats_path(path), name="statistics file")
    check_target(stats_path, name="--stats_file" if config.stats_file else "statistics file")
    files = expand_input_files(config.input_file)
    # Before a shard that is not this job's is removed: an output that is an input (through a link too) is refused.
    output_folders.check_output_files(
        [*paths, *map(shard_stats_path, paths), stats_path],
        flag="--output_file",
        inputs={
            f"--input_file={config.input_file}": files,
            f"--vocab_file={config.vocab_file}": [config.vocab_file] if config.vocab_file else [],
        },
    )
    # Empty inputs would give complete-looking shards of 0 records; one empty file among others is only counted.
    if not any(_holds_text(f) for f in files):
        raise InputError(
            f"--input_file: {', '.join(files)} hold(s) no text; pretraining data needs one sentence "
            "per line and blank lines between documents"
        )
    vocab = load_checked_vocab(config)
    masking_config(config, vocab)  # Fails early on a vocabulary without [CLS], [SEP] or [MASK].
    settings = output_settings(config, files, len(paths))
    # Before anything is written: a shard of other settings stops the job here.
    states = [shard_state(path, settings, s) for s, path in enumerate(paths)]
    for path, state in zip(paths, states):
        if state == "unverified":  # torn or replaced: it must not look complete while it is written again
            output_files.remove(path)
    complete = [state == "complete" for state in states]
    output_files.remove_leftovers([*paths, *map(shard_stats_path, paths), stats_path])
    remove_stale_staging(paths)
    for path in paths:
        output_files.makedirs_for(absolute(path))
    # With a single shard, the job's statistics file is also the shard's record.
    record_of = records.get(absolute(stats_path))
    job_record = {
        "output_files": paths,
        **({"settings": settings} if record_of is None else shard_record(settings, record_of)),
    }
    if config.reference_order:
        from official.nlp.data.pretraining import reference_order

        stats = reference_order.create_reference_order(config, files, paths)
        if record_of is not None:
            job_record["content"] = file_content(paths[record_of])
        stats.write(stats_path, {"mode": "reference_order", **job_record})
        return stats

    # Parts of shards on another filesystem go to a local temporary folder of this job (see `_parts_dir`).
    remote = any(input_files.is_remote(p) for p in paths)
    parts_root = tempfile.mkdtemp(prefix="bert-pretraining-parts-") if remote else None
    try:
        return _write_shards(config, files, paths, stats_path, settings, complete, job_record, parts_root)
    finally:  # this job's parts (a finished shard's are gone already; a kill leaves them to `remove_stale_staging`)
        for s, path in enumerate(paths):
            if not input_files.is_remote(path):
                shutil.rmtree(parts_dir(path, s, None), ignore_errors=True)
        if parts_root is not None:
            shutil.rmtree(parts_root, ignore_errors=True)


def _write_shards(config, files, paths, stats_path, settings, complete, job_record, parts_root):
    total_bytes = sum(input_files.getsize(f) for f in files)
    # Never smaller because of the shard count: the unit is what random-next draws and the shuffle span.
    units = documents_lib.plan_units(files, max(1, int(config.unit_mb * 2**20)))
    placement = place_units(len(units), len(paths))
    total = PretrainingStatistics(config.max_seq_length)
    for s, path in enumerate(paths):
        if complete[s]:
            logging.info("shard %s is complete; skipped", path)
            total.merge(PretrainingStatistics.read(shard_stats_path(path)))
            continue
        tmp_dir = parts_dir(path, s, parts_root if input_files.is_remote(path) else None)
        shutil.rmtree(tmp_dir, ignore_errors=True)
        os.makedirs(tmp_dir)

    pending = [u for u in range(len(units)) if not all(complete[s] for s in placement[u])]
    num_workers = config.num_workers or os.cpu_count() or 1
    num_workers = max(1, min(num_workers, len(pending)))
    in_process = [p for p in [*files, config.vocab_file] if input_files.is_process_local(p)]
    if num_workers > 1 and in_process:
        # A worker process cannot see this process's in-memory files; the bytes do not depend on the workers.
        logging.info("%s is on a filesystem of this process alone: the units run in this process", in_process[0])
        num_workers = 1
    logging.info(
        "%d input files, %.1f MB, %d work units, %d shards (%d to write), %d workers",
        len(files),
        total_bytes / 2**20,
        len(units),
        len(paths),
        complete.count(False),
        num_workers,
    )
    if pending:
        parts = {s: parts_dir(p, s, parts_root if input_files.is_remote(p) else None) for s, p in enumerate(paths)}
        with interruption.resumable(lambda: _interrupted_note(complete)):
            _run_units(config, paths, parts, units, placement, pending, complete, num_workers, total, settings)
    if total.same_document_random_next:
        logging.warning(
            "%d random-next segments come from their own document: the input is a single document, so "
            "there is no other to draw from",
            total.same_document_random_next,
        )
    check_written(paths, settings)
    shard_index = job_record["settings"].get("shard_index")
    if shard_index is not None:  # the job's statistics file is its one shard's record
        job_record["content"] = file_content(paths[shard_index])
    total.write(stats_path, job_record)
    if total.instances == 0:
        raise InputError(
            f"--input_file: {', '.join(files)} gave no instances (statistics in {stats_path}); "
            "the records are empty. Pretraining data needs documents of at least one sentence with "
            "tokens in the vocabulary"
        )
    return total


def _interrupted_note(complete: list[bool]) -> str:
    done = sum(complete)
    if not done:
        return "interrupted before the first shard was complete; the same command starts over"
    return (
        f"interrupted with {done} of {len(complete)} shards written; the same command keeps them and writes the "
        f"other {len(complete) - done}"
    )


def _run_units(config, paths, parts, units, placement, pending, complete, num_workers, total, settings) -> None:
    shard_units = {s: [u for u in pending if s in placement[u]] for s in range(len(paths)) if not complete[s]}
    remaining = {s: len(us) for s, us in shard_units.items()}
    shard_stats = {s: PretrainingStatistics(config.max_seq_length) for s in remaining}
    tasks = [(units[u], [None if complete[s] else part_path(parts[s], u) for s in placement[u]]) for u in pending]
    start = time.time()
    done_bytes = 0
    last_log = start
    joiner = ShardJoiner(parts)
    with contextlib.ExitStack() as stack:
        stack.callback(joiner.close_all)  # also when a unit fails
        results = stack.enter_context(
            worker_pool.ordered_results(
                process_unit, tasks, num_workers=num_workers, initializer=_worker_init, initargs=(config,)
            )
        )
        for u, result in zip(pending, results):
            if result["first_single_sentence_document"] and not total.input["single_sentence_documents"]:
                path, offset = result["first_single_sentence_document"]
                logging.warning(
                    "%s:%d: a document of a single sentence (the first of those counted in the "
                    "statistics); as in the original, it always takes a random next segment",
                    path,
                    line_number(path, offset),
                )
            done_bytes += result["bytes"]
            for s, part_dict in zip(placement[u], result["stats"]):
                if complete[s]:
                    continue  # Counted from its statistics file.
                part_stats = PretrainingStatistics.from_dict(part_dict)
                shard_stats[s].merge(part_stats)
                total.merge(part_stats)
                joiner.append(s, part_path(parts[s], u))
                remaining[s] -= 1
                if remaining[s] == 0:
                    finish_shard(paths[s], joiner.close(s), shard_stats.pop(s), shard_record(settings, s))
                    complete[s] = True
                    shutil.rmtree(parts[s], ignore_errors=True)
                    logging.info("wrote %s", paths[s])
            now = time.time()
            if now - last_log > 10:
                elapsed = max(now - start, 1e-9)
                logging.info(
                    "documents %d, instances %d, %.2f MB/s of text, %.0f instances/s",
                    total.input["documents"],
                    total.instances,
                    done_bytes / 2**20 / elapsed,
                    total.instances / elapsed,
                )
                last_log = now
