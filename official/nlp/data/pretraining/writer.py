"""Turns planned instances into framed TFRecord bytes: assemble, mask, serialize, frame, optionally gzip."""

from __future__ import annotations

import gzip
from collections.abc import Callable

import numpy as np

from official.nlp.common import full_disk, output_files
from official.nlp.data.pretraining import instances as instances_lib
from official.nlp.data.pretraining import records as records_lib
from official.nlp.data.pretraining.masking.config import MaskingConfig
from official.nlp.data.pretraining.settings import PretrainingDataConfig
from official.nlp.data.pretraining.statistics import PretrainingStatistics

BATCH_SIZE = 4096  # Instances assembled, masked and serialized per numpy batch.
GZIP_LEVEL = 6  # zlib's default, as TensorFlow's GZIP writer uses; Python's default 9 is much slower.


Masker = Callable[[dict, np.ndarray], dict]  # (batch from build_batch, its plan rows) -> masking.rule.apply_masking


def encode_instances(
    extended: np.ndarray,
    plan: dict,
    rows: np.ndarray,
    config: PretrainingDataConfig,
    mask_config: MaskingConfig,
    masker: Masker,
    stats: PretrainingStatistics,
) -> np.ndarray:
    """Assembles, masks (``masker(batch, rows)``), serializes and frames the instances ``rows`` of a plan
    (``extended``: the unit's tokens with the special ids, `instances.with_specials`)."""
    batch = instances_lib.build_batch(extended, plan, rows, config.max_seq_length)
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
    return records_lib.serialize_framed(features)


def gzip_writer(raw):
    """A gzip stream with no name and time in its header, so the same records always give the same bytes."""
    return gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=GZIP_LEVEL, mtime=0)


def write_instances(
    path: str,
    tokens: np.ndarray,
    plan: dict,
    order: np.ndarray,
    config: PretrainingDataConfig,
    mask_config: MaskingConfig,
    masker: Masker,
    stats: PretrainingStatistics,
) -> None:
    """Writes the instances ``order`` of a plan, in that order and a batch at a time, as framed records (gzipped
    with ``config.gzip``) to ``path``."""
    extended = instances_lib.with_specials(tokens, *mask_config.special_token_ids)
    with full_disk.naming_full_disk(path), output_files.open_for_writing(path) as raw:
        out = gzip_writer(raw) if config.gzip else raw
        for begin in range(0, len(order), BATCH_SIZE):
            rows = order[begin : begin + BATCH_SIZE]
            out.write(encode_instances(extended, plan, rows, config, mask_config, masker, stats))
        if config.gzip:
            out.close()
