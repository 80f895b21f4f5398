r"""Pretraining throughput: our training loop against Keras `model.fit` on the same model, data and optimizer.

Both run in this process on the same records through the same `PretrainDataLoader`, one after the other; the
first loop/epoch (tracing) is not timed. Also times the input pipeline alone, to show it is not the bottleneck.

    python -m benchmarks.pretraining_loop \
        --input_file=../shared/data/pretraining_golden/squad_contexts.uncased.seq128.dupe5.tfrecord.gz \
        --preset=tiny --train_batch_size=32 --steps=60
"""

from __future__ import annotations

from official.nlp.common import cli  # first: quiets TensorFlow's start-up (see cli.py)

# isort: split

import dataclasses
import tempfile
import time

import keras
from absl import flags

from official.nlp.modeling.configs import BertConfig
from official.nlp.tasks.pretraining import (
    PretrainingObjective,
    build_model_and_optimizer,
    make_data_loader,
    trainer_config,
)
from official.nlp.tasks.pretraining_config import PretrainingConfig
from official.nlp.training import distribution, precision
from official.nlp.training.trainer import Trainer

flags.DEFINE_string("input_file", None, "Pretraining TFRecords (glob).")
flags.DEFINE_string("preset", "tiny", "BertConfig preset (vocab_size 30522).")
flags.DEFINE_integer("max_seq_length", 128, "Sequence length of the records.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Predictions per sequence in the records.")
flags.DEFINE_integer("train_batch_size", 32, "Global batch size.")
flags.DEFINE_integer("steps", 60, "Timed steps per variant (after one untimed loop/epoch of the same length).")
flags.DEFINE_enum("mixed_precision", "float32", list(precision.MIXED_PRECISION), "Compute dtype.")
flags.DEFINE_bool("jit_compile", False, "XLA for both variants.")
flags.DEFINE_integer(
    "gradient_accumulation_steps", 1, "Our loop only (fit has no working equivalent under tf.distribute)."
)
FLAGS = flags.FLAGS


def _config(model_dir: str) -> PretrainingConfig:
    """The run both variants share: two loops of --steps (the first one untimed), no checkpoint in between."""
    steps = FLAGS.steps
    return PretrainingConfig(
        input_file=FLAGS.input_file,
        model_dir=model_dir,
        max_seq_length=FLAGS.max_seq_length,
        max_predictions_per_seq=FLAGS.max_predictions_per_seq,
        train_batch_size=FLAGS.train_batch_size,
        num_train_steps=2 * steps,
        num_warmup_steps=10,
        learning_rate=1e-4,
        mixed_precision=FLAGS.mixed_precision,
        jit_compile=FLAGS.jit_compile,
        gradient_accumulation_steps=FLAGS.gradient_accumulation_steps,
        steps_per_loop=steps,
        save_checkpoints_steps=10**9,
    )


def _build(config: PretrainingConfig, bert_config: BertConfig, strategy):
    keras.utils.set_random_seed(config.seed)  # the same initial weights for both variants
    return build_model_and_optimizer(config, bert_config, strategy)


def main(argv):
    del argv
    bert_config = BertConfig.preset(FLAGS.preset, vocab_size=30522)
    strategy = distribution.get_distribution_strategy("one_device")
    steps = FLAGS.steps
    with tempfile.TemporaryDirectory() as tmp:
        config = _config(tmp + "/loop")
        loader = make_data_loader(config, bert_config)

        # The input pipeline alone.
        dataset = iter(loader.load())
        for _ in range(5):
            next(dataset)
        start = time.perf_counter()
        for _ in range(steps * 4):
            next(dataset)
        input_rate = steps * 4 * FLAGS.train_batch_size / (time.perf_counter() - start)

        # Our loop: one untimed loop of `steps` (tracing), then one timed loop.
        model, optimizer = _build(config, bert_config, strategy)
        trainer = Trainer(
            model,
            optimizer,
            PretrainingObjective(),
            strategy,
            dataclasses.replace(trainer_config(config), write_summaries=False),
            global_batch_size=config.train_batch_size,
        )
        result = trainer.train(loader.load)
        loop_rate = result.history[-1]["examples_per_second"]

        # Keras fit, same model, optimizer and data; steps_per_execution plays the role of steps_per_loop.
        model, optimizer = _build(config, bert_config, strategy)
        model.compile(optimizer=optimizer, jit_compile=config.jit_compile, steps_per_execution=steps)
        times = []

        class Timer(keras.callbacks.Callback):
            def on_epoch_begin(self, epoch, logs=None):
                self.start = time.perf_counter()

            def on_epoch_end(self, epoch, logs=None):
                times.append(time.perf_counter() - self.start)

        model.fit(loader.load(), steps_per_epoch=steps, epochs=2, verbose=0, shuffle=False, callbacks=[Timer()])
        fit_rate = steps * FLAGS.train_batch_size / times[-1]

    print(
        f"preset={FLAGS.preset} seq={FLAGS.max_seq_length} batch={FLAGS.train_batch_size} "
        f"precision={FLAGS.mixed_precision} jit_compile={FLAGS.jit_compile} "
        f"accumulation={FLAGS.gradient_accumulation_steps}"
    )
    print(f"input pipeline alone:  {input_rate:9.1f} examples/s")
    print(f"our training loop:     {loop_rate:9.1f} examples/s")
    print(f"keras model.fit:       {fit_rate:9.1f} examples/s")
    print(f"ratio loop / fit:      {loop_rate / fit_rate:9.2f}")


if __name__ == "__main__":
    flags.mark_flag_as_required("input_file")
    cli.run(main)
