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

import tensorflow as tf
from absl import logging

from official.nlp.common.errors import InputError
from official.nlp.data.pretraining import record_files
from official.nlp.data.pretraining.masking import rule as masking
from official.nlp.data.pretraining.masking.config import MaskingConfig
from official.nlp.data.pretraining.record_files import PretrainDataError
from official.nlp.data.pretraining.records import NSP_FEATURE, PREDICTION_FEATURES, feature_spec
from official.nlp.modeling.configs import LTR, MLM, OBJECTIVES, check_seq_length, left_to_right_conflicts
from official.nlp.modeling.losses import next_token_labels

_ID_FEATURES = ("input_ids", "masked_lm_ids")
_CHECKED_RECORDS = 64  # per file at start-up: enough to catch records of another vocabulary, cheap on many files
_RANGE_ASSERT = "pretraining records hold ids past vocab_size or type_vocab_size"


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
      dynamic_masking: a `masking.config.MaskingConfig` to draw new masks on every pass (RoBERTa-style) with the same
        rule as the offline generator. Records that were masked offline are unmasked first (their
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


def id_limits(config: PretrainDataConfig) -> dict[str, tuple[str, int]]:
    """`{feature: (the model's size it indexes, that size)}`: the ids each record feature must stay below."""
    limits = {name: ("vocab_size", config.vocab_size) for name in _ID_FEATURES if config.vocab_size}
    if config.type_vocab_size:
        limits["segment_ids"] = ("type_vocab_size", config.type_vocab_size)
    return limits


def _unmask(features: dict) -> tf.Tensor:
    """The original token ids of records masked offline: each real prediction's id goes back to its position."""
    ids = features["input_ids"]
    positions = features["masked_lm_positions"]
    real = features["masked_lm_weights"] > 0
    rows = tf.broadcast_to(tf.range(tf.shape(ids)[0])[:, None], tf.shape(positions))
    indices = tf.stack([tf.boolean_mask(rows, real), tf.boolean_mask(positions, real)], axis=-1)
    return tf.tensor_scatter_nd_update(ids, indices, tf.boolean_mask(features["masked_lm_ids"], real))


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
        self.files = record_files.resolve_files(config.input_patterns, self.skipped_files)
        if self.skipped_files:
            logging.info(
                "Skipped %d file(s) that --input_file globs caught but that are not TFRecords: %s",
                len(self.skipped_files),
                ", ".join(self.skipped_files[:5]) + (" ..." if len(self.skipped_files) > 5 else ""),
            )
        compressions = {path: record_files.detect_compression(path) for path in self.files}
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
        """Checks the first records of every file against the configured lengths and sizes."""
        cfg = self.config
        limits = id_limits(cfg)
        self._record_predictions = record_files.check_first_records(
            self.files,
            self.compression,
            max_seq_length=cfg.seq_length,
            # Masks drawn here, or none at all (LTR): the records' own predictions may be missing or of any length.
            max_predictions_per_seq=cfg.max_predictions_per_seq,
            own_predictions=cfg.dynamic_masking is None and cfg.objective == MLM,
            use_next_sentence_label=cfg.use_next_sentence_label,
            limits=limits,
            count=_CHECKED_RECORDS if limits else 1,
        )

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
            return record_files.find_out_of_range_file(self.files, id_limits(self.config), self.compression) or error
        if not isinstance(error, tf.errors.DataLossError):
            return error
        found = record_files.find_corrupt_file(self.files)
        if found is None:
            return error
        path, message = found
        return PretrainDataError(f"input file {path} is corrupt: {message}; remove or regenerate it")
