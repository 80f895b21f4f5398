"""Features built once and cached as TFRecords, keyed on every setting they depend on.

Fine-tuning tokenizes its examples once and writes them as `tf.train.Example` records in `--output_dir` (as the
original `run_classifier.py` writes `train.tf_record`), so that a rerun, another epoch or a TPU job reads them
directly. Next to each cache file, `<file>.key.json` records the *key*: the settings the bytes depend on (the
vocabulary's and input files' content hashes, the case, `max_seq_length`, the task and label list, ...) and the
number of records. A cache whose key differs from the one asked for is rebuilt, with the differing settings
logged; it is never silently reused. The key file is the cache's completeness marker: it is written last and
records the size of the records file, so a job killed while writing leaves no cache that looks complete, and a
records file that was cut short or changed afterwards (a full disk, a copy that stopped) is noticed and rebuilt
instead of failing later with a `DataLossError` that names no file.

Every fine-tuning task reads its training records back through `training_batches`: one rule for sharding,
shuffling, repeating and batching, so that a change to it is one edit.

Example:

    key = {"task": "mrpc", "vocab_sha256": file_digest(["vocab.txt"]), "max_seq_length": 128}
    count = cached_records("out/train.tf_record", key, lambda: ({"input_ids": [101, 102]} for _ in range(3)))
    batches = training_batches("out/train.tf_record", 32, parse=int_parser({"input_ids": [2]}), seed=1)
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np
import tensorflow as tf
from absl import logging

from official.nlp.common import input_files, output_files, text_files
from official.nlp.common.output_files import check_target, commit

KEY_SUFFIX = ".key.json"
TRAIN_RECORDS = "train.tf_record"  # a task's training features in its --output_dir, the original's name
SHUFFLE_BUFFER_SIZE = 10000  # records held for shuffling (serialized: tens of MB for SQuAD's 384-token windows)


def file_digest(paths: Sequence[str]) -> str:
    """SHA-256 of the files' contents (in order): what a cache of features from these files depends on."""
    digest = hashlib.sha256()
    for path in paths:
        with input_files.open_file(path, "rb") as f:
            while chunk := f.read(1 << 20):
                digest.update(chunk)
        digest.update(b"\0")
    return digest.hexdigest()


def _feature(values) -> tf.train.Feature:
    values = np.asarray(values).reshape(-1)
    if values.dtype.kind == "f":
        return tf.train.Feature(float_list=tf.train.FloatList(value=values.tolist()))
    return tf.train.Feature(int64_list=tf.train.Int64List(value=values.astype(np.int64).tolist()))


def serialize(features: Mapping[str, object]) -> bytes:
    """One `tf.train.Example` of int (int64) or float (float32) feature lists."""
    return tf.train.Example(
        features=tf.train.Features(feature={name: _feature(values) for name, values in features.items()})
    ).SerializeToString()


def read_key(path: str) -> dict | None:
    """The key a cache file was written with (with its `count` and `bytes`), or None when there is no complete
    cache: no key file, no records file, or a records file whose size is not the one the key recorded."""
    key_path = path + KEY_SUFFIX
    if not input_files.exists(key_path):
        return None
    try:
        key = json.loads(text_files.read_text(key_path))
    except (ValueError, UnicodeDecodeError):
        key = None
    size = input_files.getsize(path) if input_files.exists(path) else None
    if not isinstance(key, dict) or size is None or key.get("bytes") != size:
        logging.warning(
            "Rebuilding %s: the cached features are incomplete (%s)",
            path,
            "no records file"
            if size is None
            else f"{size} bytes, {key.get('bytes')} when written"
            if isinstance(key, dict) and "bytes" in key
            else "no size recorded in " + key_path,
        )
        return None
    return key


def cached_records(path: str, key: Mapping, build: Callable[[], Iterable[Mapping[str, object]]]) -> int:
    """Makes sure `path` holds the records of `key`: reuses a cache of the same key, else (re)builds it.

    Args:
      path: the TFRecord file.
      key: JSON-serializable settings the records depend on.
      build: yields each record as a dict of feature name -> int or float values.

    Returns:
      the number of records in the file.
    """
    key = json.loads(json.dumps(dict(key)))  # what it looks like once read back (tuples become lists)
    found = read_key(path)
    if found is not None:
        count = found.pop("count", None)
        found.pop("bytes", None)
        if found == key and count is not None:
            logging.info("Reusing the %d cached feature records in %s", count, path)
            return count
        differing = sorted(k for k in set(found) | set(key) if found.get(k) != key.get(k))
        logging.warning(
            "Rebuilding %s: it was built with other settings (%s)",
            path,
            ", ".join(f"{k}: {found.get(k)!r} there, {key.get(k)!r} now" for k in differing),
        )
    check_target(path)
    output_files.makedirs_for(path)
    output_files.remove(path + KEY_SUFFIX)  # first: a crash below must not leave an old key on new bytes
    staging = path + ".partial"
    output_files.remove(staging)  # a leftover of a job that stopped while writing it
    count = 0
    with input_files.user_path(path), tf.io.TFRecordWriter(staging) as writer:
        for record in build():
            writer.write(serialize(record))
            count += 1
    commit(staging, path)
    size = input_files.getsize(path)
    output_files.write_text(
        path + KEY_SUFFIX, json.dumps({**key, "count": count, "bytes": size}, indent=1, sort_keys=True)
    )
    logging.info("Wrote %d feature records to %s", count, path)
    return count


def int_parser(shapes: Mapping[str, Sequence[int]]) -> Callable[[tf.Tensor], dict[str, tf.Tensor]]:
    """A `parse` for `training_batches`: a batch of records -> a dict of int32 tensors `[batch, *shape]` of the
    given fixed `shapes` (a float feature is not read this way)."""
    spec = {name: tf.io.FixedLenFeature(list(shape), tf.int64) for name, shape in shapes.items()}

    def parse(records: tf.Tensor) -> dict[str, tf.Tensor]:
        return {name: tf.cast(value, tf.int32) for name, value in tf.io.parse_example(records, spec).items()}

    return parse


def training_batches(
    path: str | Sequence[str],
    batch_size: int,
    *,
    parse: Callable[[tf.Tensor], object],
    seed: int | None = None,
    input_context: tf.distribute.InputContext | None = None,
    shuffle_buffer_size: int = SHUFFLE_BUFFER_SIZE,
    repeat: bool = True,
) -> tf.data.Dataset:
    """The training input of every fine-tuning task, read from its cached records (`path`).

    This worker's share of the records (with `input_context` and more than one input pipeline, every
    `num_input_pipelines`-th record from `input_pipeline_id` on), shuffled in a buffer of `shuffle_buffer_size` with
    `seed` (a new order each epoch), repeated without end (unless `repeat` is False), in batches of `batch_size`
    with the remainder dropped (every step sees a whole batch, so the loop's shapes stay fixed), each batch of
    serialized records turned into the task's `(x, y)` by `parse` (one call per batch: cheaper than per record).
    """
    dataset = tf.data.TFRecordDataset(path)
    if input_context is not None and input_context.num_input_pipelines > 1:
        dataset = dataset.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    dataset = dataset.shuffle(shuffle_buffer_size, seed=seed, reshuffle_each_iteration=True)
    if repeat:
        dataset = dataset.repeat()
    dataset = dataset.batch(batch_size, drop_remainder=True)
    return dataset.map(parse, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)
