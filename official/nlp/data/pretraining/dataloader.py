"""tf.data input for BERT pretraining from TFRecords with the original feature names.

Reads records written by the original google-research/bert `create_pretraining_data.py` (plain or gzip, detected
per file) and by our generator. Files that a glob catches but that are not TFRecords (statistics, folders, notes)
are skipped and counted in one log line; a file named without a glob must be records. Files are read in parallel
with `interleave`, shuffled with a seed, sharded per
input worker, parsed a batch at a time and prefetched. Before anything is read for training, the first record of
every file is checked, so that a missing file, a corrupt file or a `max_seq_length` / `max_predictions_per_seq`
that contradicts the records stops the job with a message naming the file. With `vocab_size` (and
`type_vocab_size`), the token ids (segment ids) of the first records of every file are checked against it at
start-up, and every batch in the pipeline (an id past an embedding table fails deep inside training, or on a GPU
reads garbage silently); a batch that fails is traced back to its file by `diagnose`.

Elements are `(x, y)` pairs: `x` = {input_word_ids, input_mask, input_type_ids, masked_lm_positions} and
`y` = {masked_lm_ids, masked_lm_weights, next_sentence_labels}, all int32 but `masked_lm_weights` (float32),
which is what `BertPretrainer` takes in `fit` and what the training loop feeds it. With `objective="ltr"` (the
left-to-right LM) `x` holds the encoder inputs with the original tokens (masked records are unmasked, unmasked ones
read as they are) and `y` the next-token labels of `losses.next_token_labels`.

Example (a notebook):

    loader = PretrainDataLoader(PretrainDataConfig(
        input_patterns="out/train.tfrecord-*", seq_length=128, max_predictions_per_seq=20,
        global_batch_size=32))
    pretrainer.fit(loader.load(), steps_per_epoch=1000, epochs=1)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import tensorflow as tf
from absl import logging

from official.nlp.common import input_files
from official.nlp.common.errors import InputError
from official.nlp.data import tfrecord_io
from official.nlp.data.pretraining.masking import rule as masking
from official.nlp.data.pretraining.masking.config import MaskingConfig
from official.nlp.data.pretraining.records import NSP_FEATURE, PREDICTION_FEATURES, SEQUENCE_FEATURES, feature_spec
from official.nlp.modeling.configs import LTR, MLM, OBJECTIVES, check_seq_length, left_to_right_conflicts
from official.nlp.modeling.losses import next_token_labels

_GZIP_MAGIC = b"\x1f\x8b"
_ID_FEATURES = ("input_ids", "masked_lm_ids")
_CHECKED_RECORDS = 64  # per file at start-up: enough to catch records of another vocabulary, cheap on many files
_RANGE_ASSERT = "pretraining records hold ids past vocab_size or type_vocab_size"


class PretrainDataError(InputError):
    """Pretraining records that cannot be read with the requested settings; the message names the file."""


@dataclasses.dataclass
class PretrainDataConfig:
    """Settings of the pretraining input pipeline.

    Attributes:
      input_patterns: file globs, a list or one comma-separated string (the original `--input_file`).
      seq_length: `--max_seq_length`; must equal the length the records were written with.
      max_predictions_per_seq: `--max_predictions_per_seq`; must equal the records' (with `dynamic_masking`, the
        masking config's value is used and the records' own predictions may have any length).
      global_batch_size: examples per step over all replicas (for `fit`: the batch size).
      is_training: shuffle and repeat forever; otherwise one pass in file order.
      use_next_sentence_label: keep `next_sentence_labels` in `y`.
      objective: "mlm" (masked LM, the records' own or `dynamic_masking`'s predictions) or "ltr" (left-to-right LM:
        the original tokens and next-token labels; records with or without `masked_lm_*` features, which are
        put back; `max_predictions_per_seq` is not used).
      shuffle_buffer_size: records in the shuffle buffer (0 turns record shuffling off). The buffer is part of
        every input checkpoint, so it is kept moderate.
      cycle_length: files read at once (default: min(8, files per worker)).
      seed: seed of the file and record shuffles; with the same seed the order is the same on every run.
      max_position_embeddings: when given, `seq_length` must not exceed it.
      dynamic_masking: a `masking.config.MaskingConfig` to draw new masks on every pass (RoBERTa-style) with the
        same rule as the offline generator. Records that were masked offline are unmasked first (their
        `masked_lm_ids` go back into `input_ids`), so any pretraining records work; records without predictions
        work too.
      dynamic_masking_seed: seed of the masks (offset per input worker); None draws a random one.
      shard_policy: "auto" (by file when each input worker gets at least one file, else by record), "file", or
        "data" (every worker reads every file and keeps every n-th record after the shuffle).
      vocab_size: the model's vocabulary size; record ids must be below it (checked at start-up and per batch).
      type_vocab_size: the model's number of token types; segment ids must be below it (checked the same way).
    """

    input_patterns: str | Sequence[str]
    seq_length: int
    max_predictions_per_seq: int
    global_batch_size: int
    is_training: bool = True
    use_next_sentence_label: bool = True
    objective: str = MLM
    shuffle_buffer_size: int = 1000
    cycle_length: int | None = None
    seed: int | None = 12345
    max_position_embeddings: int | None = None
    dynamic_masking: MaskingConfig | None = None
    dynamic_masking_seed: int | None = 12345
    shard_policy: str = "auto"
    vocab_size: int | None = None
    type_vocab_size: int | None = None


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


def _first_records(path: str, compression: str, count: int = 1) -> list[bytes]:
    try:
        records = [r.numpy() for r in tf.data.TFRecordDataset(path, compression_type=compression).take(count)]
    except (tf.errors.DataLossError, tf.errors.InvalidArgumentError, tf.errors.OutOfRangeError) as e:
        raise PretrainDataError(f"input file {path} is corrupt or not a TFRecord file: {e.message}") from e
    if not records:
        raise PretrainDataError(f"input file {path} is empty: it holds no records")
    return records


def id_limits(config: PretrainDataConfig) -> dict[str, tuple[str, int]]:
    """`{feature: (the model's size it indexes, that size)}`: the ids each record feature must stay below."""
    limits = {name: ("vocab_size", config.vocab_size) for name in _ID_FEATURES if config.vocab_size}
    if config.type_vocab_size:
        limits["segment_ids"] = ("type_vocab_size", config.type_vocab_size)
    return limits


def _id_range_error(path: str, where: str, name: str, value: int, limit: tuple[str, int]) -> PretrainDataError:
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


def _check_ids(path: str, records: Sequence[bytes], limits: dict[str, tuple[str, int]]) -> None:
    for index, record in enumerate(records):
        features = tf.train.Example.FromString(record).features.feature
        for name, limit in limits.items():
            if name in features and features[name].int64_list.value:
                value = max(features[name].int64_list.value)
                if value >= limit[1]:
                    raise _id_range_error(path, f"record {index + 1}", name, value, limit)


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
                    return _id_range_error(
                        path, f"record {count + row + 1}", name, int(tf.reduce_max(values[row])), limit
                    )
            count += int(tf.shape(batch)[0])
    return None


def _feature_lengths(path: str, record: bytes) -> dict[str, int]:
    try:
        example = tf.train.Example.FromString(record)
    except Exception as e:  # protobuf's DecodeError does not share a base class with anything useful
        raise PretrainDataError(f"input file {path} does not hold tf.train.Example records: {e}") from e
    lengths = {}
    for name, feature in example.features.feature.items():
        kind = feature.WhichOneof("kind")
        lengths[name] = len(getattr(feature, kind).value) if kind else 0
    return lengths


def _unmask(features: dict) -> tf.Tensor:
    """The original token ids of records masked offline: each real prediction's id goes back to its position."""
    ids = features["input_ids"]
    positions = features["masked_lm_positions"]
    real = features["masked_lm_weights"] > 0
    rows = tf.broadcast_to(tf.range(tf.shape(ids)[0])[:, None], tf.shape(positions))
    indices = tf.stack([tf.boolean_mask(rows, real), tf.boolean_mask(positions, real)], axis=-1)
    return tf.tensor_scatter_nd_update(ids, indices, tf.boolean_mask(features["masked_lm_ids"], real))


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


class PretrainDataLoader:
    """Builds the pretraining `tf.data.Dataset` (see the module docstring)."""

    def __init__(self, config: PretrainDataConfig, *, validate: bool = True):
        self.config = config
        if config.global_batch_size <= 0:
            raise InputError(f"global_batch_size must be positive, got {config.global_batch_size}")
        if config.shard_policy not in ("auto", "file", "data"):
            raise InputError(f"shard_policy must be 'auto', 'file' or 'data', got {config.shard_policy!r}")
        if config.max_position_embeddings is not None:
            check_seq_length(config.seq_length, config.max_position_embeddings)
        self.skipped_files: list[str] = []
        self.files = resolve_files(config.input_patterns, self.skipped_files)
        if self.skipped_files:
            logging.info(
                "Skipped %d file(s) that --input_file globs caught but that are not TFRecords: %s",
                len(self.skipped_files),
                ", ".join(self.skipped_files[:5]) + (" ..." if len(self.skipped_files) > 5 else ""),
            )
        compressions = {path: detect_compression(path) for path in self.files}
        kinds = set(compressions.values())
        if len(kinds) > 1:
            gz = [p for p, c in compressions.items() if c][0]
            plain = [p for p, c in compressions.items() if not c][0]
            raise PretrainDataError(
                f"input files mix gzip ({gz}) and uncompressed ({plain}) TFRecords; pass one kind per run"
            )
        self.compression = kinds.pop()
        if config.objective not in OBJECTIVES:
            raise InputError(f"objective must be 'mlm' or 'ltr', got {config.objective!r}")
        conflicts = left_to_right_conflicts(
            config.objective,
            use_next_sentence_label=config.use_next_sentence_label,
            dynamic_masking=config.dynamic_masking is not None,
        )
        if conflicts:
            raise InputError(
                "the left-to-right LM reads the original tokens and no next-sentence labels: it takes neither "
                "dynamic masking nor use_next_sentence_label"
            )
        if config.dynamic_masking is not None and (
            config.dynamic_masking.max_predictions_per_seq != config.max_predictions_per_seq
        ):
            raise InputError(
                f"max_predictions_per_seq={config.max_predictions_per_seq} differs from the dynamic masking "
                f"config's {config.dynamic_masking.max_predictions_per_seq}"
            )
        # Length of the predictions in the records (None: they have none); checked against the first record.
        self._record_predictions: int | None = config.max_predictions_per_seq
        if validate:
            self._validate()

    def _validate(self) -> None:
        """Checks the first record of every file against the configured lengths."""
        cfg = self.config
        expected = {name: cfg.seq_length for name in SEQUENCE_FEATURES}
        prediction_names = PREDICTION_FEATURES
        prediction_lengths = set()
        limits = id_limits(cfg)
        for path in self.files:
            records = _first_records(path, self.compression, _CHECKED_RECORDS if limits else 1)
            lengths = _feature_lengths(path, records[0])
            _check_ids(path, records, limits)
            required = list(SEQUENCE_FEATURES) + ([NSP_FEATURE] if cfg.use_next_sentence_label else [])
            has_predictions = all(name in lengths for name in prediction_names)
            # Masks drawn here, or none at all (LTR): the records' own predictions may be missing or of any length.
            own_predictions = cfg.dynamic_masking is None and cfg.objective == MLM
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
                    if lengths[name] != cfg.max_predictions_per_seq:
                        raise PretrainDataError(
                            f"records in {path} have {name} of length {lengths[name]} but "
                            f"max_predictions_per_seq={cfg.max_predictions_per_seq}; pass "
                            f"--max_predictions_per_seq={lengths[name]} or use records written with "
                            f"{cfg.max_predictions_per_seq}"
                        )
            if cfg.use_next_sentence_label and lengths[NSP_FEATURE] != 1:
                raise PretrainDataError(f"records in {path} have {lengths[NSP_FEATURE]} next_sentence_labels, not 1")
            prediction_lengths.add(lengths["masked_lm_ids"] if has_predictions else None)
            if len(prediction_lengths) > 1:
                raise PretrainDataError(
                    f"records in {path} differ from those in {self.files[0]} in their masked_lm features; "
                    "use records written with the same --max_predictions_per_seq"
                )
        self._record_predictions = prediction_lengths.pop()

    def _parse(self, serialized: tf.Tensor) -> dict:
        spec = feature_spec(self.config.seq_length, self._record_predictions, self.config.use_next_sentence_label)
        parsed = tf.io.parse_example(serialized, spec)
        limits = id_limits(self.config)
        if limits:
            with tf.control_dependencies(
                [
                    tf.debugging.assert_less(parsed[name], tf.constant(size, tf.int64), message=_RANGE_ASSERT)
                    for name, (_, size) in limits.items()
                    if name in parsed
                ]
            ):
                parsed = {name: tf.identity(value) for name, value in parsed.items()}
        features = {
            name: tf.cast(value, tf.int32) if value.dtype == tf.int64 else value for name, value in parsed.items()
        }
        unmasked = self.config.dynamic_masking is not None or self.config.objective == LTR
        if unmasked and "masked_lm_ids" in features:
            features["input_ids"] = _unmask(features)
            for name in PREDICTION_FEATURES:
                del features[name]
        return features

    def _to_inputs_and_labels(self, features: dict) -> tuple[dict, dict]:
        x = {
            "input_word_ids": features["input_ids"],
            "input_mask": features["input_mask"],
            "input_type_ids": features["segment_ids"],
        }
        if self.config.objective == LTR:
            return x, next_token_labels(features["input_ids"], features["input_mask"])
        x["masked_lm_positions"] = features["masked_lm_positions"]
        # Already int32 / float32: `_parse` casts the records' int64, and dynamic masking keeps the ids' dtype.
        y = {"masked_lm_ids": features["masked_lm_ids"], "masked_lm_weights": features["masked_lm_weights"]}
        if self.config.use_next_sentence_label:
            y["next_sentence_labels"] = tf.reshape(features[NSP_FEATURE], [-1])
        return x, y

    def batch_size(self, input_context: tf.distribute.InputContext | None = None) -> int:
        """The batch size of one element: per replica with an input context, global without."""
        if input_context is None:
            return self.config.global_batch_size
        return input_context.get_per_replica_batch_size(self.config.global_batch_size)

    def load(self, input_context: tf.distribute.InputContext | None = None) -> tf.data.Dataset:
        """The dataset of `(x, y)` batches.

        With an `input_context` (the training loop passes one), batches are per replica and this worker keeps
        its shard; we shard ourselves and turn tf.distribute's auto-sharding off. Without one (`model.fit`),
        batches are global and tf.distribute's AUTO policy shards by file where it can.
        """
        cfg = self.config
        files = list(self.files)
        num_pipelines = input_context.num_input_pipelines if input_context else 1
        pipeline_id = input_context.input_pipeline_id if input_context else 0
        policy = cfg.shard_policy
        if policy == "auto":
            policy = "file" if len(files) >= num_pipelines else "data"
        if num_pipelines > 1 and policy == "file":
            if len(files) < num_pipelines:
                raise PretrainDataError(
                    f"shard_policy='file' needs at least one file per input worker: {len(files)} file(s) for "
                    f"{num_pipelines} workers"
                )
            files = files[pipeline_id::num_pipelines]
        elif num_pipelines > 1:
            logging.info(
                "Input worker %d of %d reads all %d files and keeps every %d-th record",
                pipeline_id,
                num_pipelines,
                len(files),
                num_pipelines,
            )

        dataset = tf.data.Dataset.from_tensor_slices(files)
        if cfg.is_training:
            dataset = dataset.shuffle(len(files), seed=cfg.seed, reshuffle_each_iteration=True).repeat()
        compression = self.compression
        cycle_length = cfg.cycle_length or min(8, len(files))
        dataset = dataset.interleave(
            lambda path: tf.data.TFRecordDataset(path, compression_type=compression, buffer_size=8 << 20),
            cycle_length=cycle_length,
            block_length=1,
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=True,  # the same flags give the same order, which resuming relies on
        )
        if cfg.is_training and cfg.shuffle_buffer_size > 1:
            dataset = dataset.shuffle(cfg.shuffle_buffer_size, seed=cfg.seed, reshuffle_each_iteration=True)
        if num_pipelines > 1 and policy == "data":
            # After the shuffle: every worker draws the same stream, so the global batch is the one a single
            # worker would see.
            dataset = dataset.shard(num_pipelines, pipeline_id)
        # Parsing a batch at a time is several times faster than one record at a time.
        dataset = dataset.batch(self.batch_size(input_context), drop_remainder=cfg.is_training)
        dataset = dataset.map(self._parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        if cfg.dynamic_masking is not None:
            seed = None if cfg.dynamic_masking_seed is None else cfg.dynamic_masking_seed + 1_000_003 * pipeline_id
            dataset = masking.dynamic_masking(dataset, cfg.dynamic_masking, seed=seed)
        dataset = dataset.map(self._to_inputs_and_labels, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        options = tf.data.Options()
        options.deterministic = True
        options.experimental_distribute.auto_shard_policy = (
            tf.data.experimental.AutoShardPolicy.OFF if input_context else tf.data.experimental.AutoShardPolicy.AUTO
        )
        dataset = dataset.with_options(options)
        return dataset.prefetch(tf.data.AUTOTUNE)

    def diagnose(self, error: Exception) -> Exception:
        """Turns a read error raised during training into one that names the corrupt file (or the file with ids
        past the vocabulary)."""
        if _RANGE_ASSERT in str(error):
            return find_out_of_range_file(self.files, id_limits(self.config), self.compression) or error
        if not isinstance(error, tf.errors.DataLossError):
            return error
        found = find_corrupt_file(self.files)
        if found is None:
            return error
        path, message = found
        return PretrainDataError(f"input file {path} is corrupt: {message}; remove or regenerate it")
