"""What every BERT task model shares (models.py, feature_tagger.py): the base class that keeps the encoder in its
config, the float32 output layer of a head, and the initializer range a head takes from its encoder."""

from __future__ import annotations

import keras

from official.nlp.modeling.encoder import BertEncoder


def float32_dense(units: int, initializer_range: float, name: str) -> keras.layers.Dense:
    """A head's output layer: a float32 Dense with the truncated-normal initializer of BERT's heads."""
    # Logits are float32 under any policy; these heads are one small matmul, so they run in float32 too.
    return keras.layers.Dense(
        units,
        kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
        dtype="float32",
        name=name,
    )


class BertTask(keras.Model):
    """Shared plumbing: holds `encoder`, serializes it inside `get_config`, rebuilds it in `from_config`."""

    def _finish_init(self, encoder: BertEncoder, **config):
        self.encoder = encoder
        self._task_config = config

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "encoder": keras.saving.serialize_keras_object(self.encoder),
            **self._task_config,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
        return cls(**config)


def head_initializer_range(encoder: BertEncoder, value: float | None) -> float:
    """The stddev a head initializes with: `value`, or the encoder config's `initializer_range` when None."""
    return encoder.config.initializer_range if value is None else value
