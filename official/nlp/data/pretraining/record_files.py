"""The files of pretraining records: which files `--input_file` names, and their checks.

A glob skips what is not a TFRecord file (statistics, folders, notes; `is_record_file`); a file named without a glob
must be records. Before anything is read for training, the first records of every file are checked
(`check_first_records`): a missing, empty or corrupt file, lengths that contradict `--max_seq_length` or
`--max_predictions_per_seq`, missing features, or ids past the model's vocabulary stop the job with a message naming
the file. After a failure in training, whose TensorFlow message names no file, `find_corrupt_file` and
`find_out_of_range_file` read every file to name the one at fault.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from official.nlp.common import input_files
from official.nlp.common.errors import InputError
from official.nlp.data import tfrecord_io
from official.nlp.data.pretraining.records import NSP_FEATURE, PREDICTION_FEATURES, SEQUENCE_FEATURES

_GZIP_MAGIC = b"\x1f\x8b"


class PretrainDataError(InputError):
    """Pretraining records that cannot be read with the requested settings; the message names the file."""


def is_record_file(path: str) -> bool:
    """Whether ``path`` can be a TFRecord file: gzip, empty, or starting with a valid record header (length and its
    masked CRC-32C). A folder or a text/JSON file is not."""
    if input_files.isdir(path):
        return False
    with tf.io.gfile.GFile(path, "rb") as f:
        head = f.read(12)
    if head[:2] == _GZIP_MAGIC or not head:
        return True
    if len(head) < 12:
        return False
    crc = int(tfrecord_io.masked_crc32c(np.asarray([tfrecord_io.crc32c(head[:8])], np.uint32))[0])
    return crc == int.from_bytes(head[8:12], "little")


def resolve_files(input_patterns: str | Sequence[str], skipped: list[str] | None = None) -> list[str]:
    """Expands comma-separated globs; a pattern that matches nothing is an error that names it.

    What a glob matches that is not a TFRecord file (`is_record_file`) is left out and appended to ``skipped``;
    a file named without a glob is kept whatever it holds (reading it then names the problem).
    """
    skipped = [] if skipped is None else skipped
    if isinstance(input_patterns, str):
        input_patterns = [input_patterns]
    patterns = [p.strip() for item in input_patterns for p in item.split(",") if p.strip()]
    if not patterns:
        raise PretrainDataError("no input files given (--input_file is empty)")
    files: list[str] = []
    for pattern in patterns:
        matched = sorted(tf.io.gfile.glob(pattern))
        if not matched:
            raise PretrainDataError(f"input file not found: no file matches {pattern!r} (--input_file)")
        if glob_magic(pattern):
            records = [p for p in matched if is_record_file(p)]
            skipped.extend(p for p in matched if p not in records)
            if not records:
                raise PretrainDataError(
                    f"--input_file pattern {pattern!r} matches no TFRecord file, only "
                    f"{', '.join(matched[:5])}{' ...' if len(matched) > 5 else ''}"
                )
            matched = records
        files.extend(matched)
    return list(dict.fromkeys(files))


def glob_magic(pattern: str) -> bool:
    return any(c in pattern for c in "*?[")  # keep order, drop duplicates from overlapping globs


def detect_compression(path: str) -> str:
    """ "GZIP" for gzip files (by the magic bytes, so the suffix does not matter), "" for plain TFRecords."""
    try:
        with tf.io.gfile.GFile(path, "rb") as f:
            head = f.read(2)
    except (tf.errors.OpError, OSError) as e:
        raise PretrainDataError(f"cannot read input file {path}: {e}") from e
    return "GZIP" if head == _GZIP_MAGIC else ""


def first_records(path: str, compression: str, count: int = 1) -> list[bytes]:
    try:
        records = [r.numpy() for r in tf.data.TFRecordDataset(path, compression_type=compression).take(count)]
    except (tf.errors.DataLossError, tf.errors.InvalidArgumentError, tf.errors.OutOfRangeError) as e:
        raise PretrainDataError(f"input file {path} is corrupt or not a TFRecord file: {e.message}") from e
    if not records:
        raise PretrainDataError(f"input file {path} is empty: it holds no records")
    return records


def id_range_error(path: str, where: str, name: str, value: int, limit: tuple[str, int]) -> PretrainDataError:
    size_name, size = limit
    if size_name == "type_vocab_size":
        return PretrainDataError(
            f"records in {path} hold segment_ids {value} ({where}), but the model's type_vocab_size is {size}: the "
            f"records hold {value + 1} segments (the sentence pairs of next-sentence prediction). Use a "
            f"bert_config.json with type_vocab_size={value + 1} (BERT's is 2)"
        )
    return PretrainDataError(
        f"records in {path} hold {name} {value} ({where}), but the model's vocab_size is {size}: the records "
        "were written with another vocabulary. Use the vocab.txt and bert_config.json they were made with, or "
        "regenerate them with create_pretraining_data.py --vocab_file=<this model's vocab.txt>"
    )


def check_ids(path: str, records: Sequence[bytes], limits: dict[str, tuple[str, int]]) -> None:
    for index, record in enumerate(records):
        features = tf.train.Example.FromString(record).features.feature
        for name, limit in limits.items():
            if name in features and features[name].int64_list.value:
                value = max(features[name].int64_list.value)
                if value >= limit[1]:
                    raise id_range_error(path, f"record {index + 1}", name, value, limit)


def find_out_of_range_file(
    files: Sequence[str], limits: dict[str, tuple[str, int]], compression: str
) -> PretrainDataError | None:
    """Reads every file; the error for the first record with an id past its limit (`id_limits`), else None."""
    spec = {name: tf.io.VarLenFeature(tf.int64) for name in limits}
    for path in files:
        count = 0
        for batch in tf.data.TFRecordDataset(path, compression_type=compression).batch(4096):
            parsed = tf.io.parse_example(batch, spec)
            for name, limit in limits.items():
                values = tf.sparse.to_dense(parsed[name])
                bad = tf.where(tf.reduce_any(values >= limit[1], axis=1))
                if tf.size(bad) > 0:
                    row = int(bad[0, 0])
                    return id_range_error(
                        path, f"record {count + row + 1}", name, int(tf.reduce_max(values[row])), limit
                    )
            count += int(tf.shape(batch)[0])
    return None


def feature_lengths(path: str, record: bytes) -> dict[str, int]:
    try:
        example = tf.train.Example.FromString(record)
    except Exception as e:  # protobuf's DecodeError does not share a base class with anything useful
        raise PretrainDataError(f"input file {path} does not hold tf.train.Example records: {e}") from e
    lengths = {}
    for name, feature in example.features.feature.items():
        kind = feature.WhichOneof("kind")
        lengths[name] = len(getattr(feature, kind).value) if kind else 0
    return lengths


def find_corrupt_file(files: Sequence[str]) -> tuple[str, str] | None:
    """Reads every file to the end; returns (path, error) for the first that fails, else None.

    Used after a `DataLossError` in training, whose TensorFlow message does not name the file.
    """
    for path in files:
        try:
            for _ in tf.data.TFRecordDataset(path, compression_type=detect_compression(path)).batch(4096):
                pass
        except (tf.errors.DataLossError, tf.errors.InvalidArgumentError) as e:
            return path, e.message
    return None


def check_first_records(
    files: Sequence[str],
    compression: str,
    *,
    max_seq_length: int,
    max_predictions_per_seq: int,
    own_predictions: bool,
    use_next_sentence_label: bool,
    limits: dict[str, tuple[str, int]],
    count: int = 1,
) -> int | None:
    """Checks the first `count` records of every file; returns the length of their `masked_lm_*` features (None:
    they have none).

    `own_predictions`: whether the records' own predictions are read; they must then be there, of length
    `max_predictions_per_seq`. Without (masks drawn by the loader, or the left-to-right LM) they may be missing or of
    any length (but the same in every file). `limits`: the ids each feature must stay below
    (`check_ids`)."""
    expected = {name: max_seq_length for name in SEQUENCE_FEATURES}
    prediction_names = PREDICTION_FEATURES
    prediction_lengths = set()
    for path in files:
        records = first_records(path, compression, count)
        lengths = feature_lengths(path, records[0])
        check_ids(path, records, limits)
        required = list(SEQUENCE_FEATURES) + ([NSP_FEATURE] if use_next_sentence_label else [])
        has_predictions = all(name in lengths for name in prediction_names)
        if own_predictions:
            required += list(prediction_names)
        missing = [name for name in required if name not in lengths]
        if missing:
            raise PretrainDataError(
                f"records in {path} lack the feature(s) {missing}; pretraining records need "
                f"{sorted(required)} (the names written by create_pretraining_data.py)"
            )
        for name, want in expected.items():
            if lengths[name] != want:
                raise PretrainDataError(
                    f"records in {path} have {name} of length {lengths[name]} but max_seq_length={want}; "
                    f"pass --max_seq_length={lengths[name]} or use records written with {want}"
                )
        if has_predictions and own_predictions:
            for name in prediction_names:
                if lengths[name] != max_predictions_per_seq:
                    raise PretrainDataError(
                        f"records in {path} have {name} of length {lengths[name]} but "
                        f"max_predictions_per_seq={max_predictions_per_seq}; pass "
                        f"--max_predictions_per_seq={lengths[name]} or use records written with "
                        f"{max_predictions_per_seq}"
                    )
        if use_next_sentence_label and lengths[NSP_FEATURE] != 1:
            raise PretrainDataError(f"records in {path} have {lengths[NSP_FEATURE]} next_sentence_labels, not 1")
        prediction_lengths.add(lengths["masked_lm_ids"] if has_predictions else None)
        if len(prediction_lengths) > 1:
            raise PretrainDataError(
                f"records in {path} differ from those in {files[0]} in their masked_lm features; "
                "use records written with the same --max_predictions_per_seq"
            )
    return prediction_lengths.pop()
