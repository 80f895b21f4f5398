"""TensorBoard scalars of a training run (`model_dir/summaries`), written by the chief only.

Example:

    writer = summary_writer("/tmp/run/summaries")
    write_scalars(writer, step=100, scalars={"loss": 2.5, "learning_rate": 1e-4})
    writer.flush()
"""

from __future__ import annotations

from collections.abc import Mapping

import tensorflow as tf
from tensorflow.core.framework import summary_pb2

# What TensorBoard's scalar plugin writes; `tf.summary.scalar` would need the tensorboard package installed.
_SCALAR_METADATA = summary_pb2.SummaryMetadata(
    plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars"),
    data_class=summary_pb2.DATA_CLASS_SCALAR,
).SerializeToString()


def summary_writer(directory: str | None) -> tf.summary.SummaryWriter:
    """An event-file writer for `directory`, or a writer that drops everything when `directory` is None."""
    return tf.summary.create_file_writer(directory) if directory else tf.summary.create_noop_writer()


def write_scalars(writer: tf.summary.SummaryWriter, step: int, scalars: Mapping[str, float]) -> None:
    """Writes each `name: value` as a TensorBoard scalar of `step`."""
    with writer.as_default(step=step):
        for name, value in scalars.items():
            tf.summary.write(name, tf.constant(value, tf.float32), metadata=_SCALAR_METADATA)
