r"""Pretrain BERT (masked LM + next sentence prediction) on TFRecords from create_pretraining_data.

The flags of the original `run_pretraining.py`, plus distribution, mixed precision, gradient accumulation,
LAMB and dynamic masking. Re-running the same command resumes from the last checkpoint in --model_dir. The
final model is exported to --export_dir (default --model_dir/export) as a model directory, which is what
--init_checkpoint takes (here, in extract_features.py and in convert_checkpoint.py's --input).

--init_checkpoint may also be a model directory without pretraining heads (a converted Hugging Face encoder, or a
TF1 checkpoint without cls/*): the encoder is loaded and the heads start fresh. --preset=tiny|mini|small|medium|
base|large instead of --bert_config_file builds a config of that size for --vocab_file.

    python run_scripts/run_pretraining.py --input_file='out/train.tfrecord-*' \
        --bert_config_file=bert_config.json --vocab_file=vocab.txt --do_lower_case \
        --model_dir=/tmp/pretrain --train_batch_size=32 --num_train_steps=10000 --num_warmup_steps=1000 \
        --learning_rate=1e-4
"""
from __future__ import annotations

import dataclasses

from official.nlp.common import cli  # first: quiets TensorFlow's start-up (see cli.py)

from absl import app, flags, logging

from official.nlp.modeling.configs import PRESETS
from official.nlp.training import distribution, optimization
from official.nlp.tasks.pretraining import PretrainingConfig, run_pretraining

FLAGS = flags.FLAGS
# Every default is PretrainingConfig's, so the script and the Python API cannot drift apart.
DEFAULTS = {f.name: f.default for f in dataclasses.fields(PretrainingConfig)
            if f.default is not dataclasses.MISSING}

# The original flags.
flags.DEFINE_string("input_file", None, "TFRecord files: globs, comma-separated (plain or gzip).")
flags.DEFINE_string("bert_config_file", DEFAULTS["bert_config_file"], "bert_config.json of the model (optional "
                    "with a model-dir --init_checkpoint).")
flags.DEFINE_enum("preset", DEFAULTS["preset"], list(PRESETS), "Instead of --bert_config_file: a BERT size, with "
                  "vocab_size from --vocab_file.")
flags.DEFINE_string("init_checkpoint", DEFAULTS["init_checkpoint"], "Start from this model directory or original "
                    "TF1 checkpoint (ignored when --model_dir already holds a checkpoint, which is resumed).")
flags.DEFINE_string("model_dir", None, "Checkpoints, summaries and the export go here.")
flags.DEFINE_integer("max_seq_length", DEFAULTS["max_seq_length"], "Sequence length of the records.")
flags.DEFINE_integer("max_predictions_per_seq", DEFAULTS["max_predictions_per_seq"], "Masked LM predictions per "
                     "sequence in the records.")
flags.DEFINE_integer("train_batch_size", DEFAULTS["train_batch_size"], "Global batch size (over all replicas and "
                     "accumulation steps).")
flags.DEFINE_integer("num_train_steps", DEFAULTS["num_train_steps"], "Optimizer steps.")
flags.DEFINE_integer("num_warmup_steps", DEFAULTS["num_warmup_steps"], "Linear warmup steps.")
flags.DEFINE_float("learning_rate", DEFAULTS["learning_rate"], "Peak learning rate.")
flags.DEFINE_integer("save_checkpoints_steps", DEFAULTS["save_checkpoints_steps"], "Checkpoint every this many "
                     "steps (and at the end).")
# Added.
flags.DEFINE_string("vocab_file", DEFAULTS["vocab_file"], "vocab.txt to ship with the export (and for "
                    "--dynamic_masking).")
flags.DEFINE_bool("do_lower_case", DEFAULTS["do_lower_case"], "Recorded in the export for the fine-tuning "
                  "tokenizer.")
flags.DEFINE_string("export_dir", DEFAULTS["export_dir"], "Where the final model directory goes (default: "
                    "--model_dir/export).")
flags.DEFINE_enum("optimizer", DEFAULTS["optimizer"], list(optimization.OPTIMIZERS), "AdamW (the paper) or LAMB "
                  "(large batches). Weight decay is not applied to LayerNorm and bias weights, nor LAMB's trust ratio.")
flags.DEFINE_bool("adam_bias_correction", DEFAULTS["adam_bias_correction"], "AdamW with Adam's bias correction "
                  "(PyTorch's AdamW, the Hugging Face recipes). The default, false, is the original BERT optimizer, "
                  "whose first steps are larger (3.16x at step 1, 1.26x at step 1000).")
flags.DEFINE_float("adam_epsilon", DEFAULTS["adam_epsilon"], "Adam's epsilon (default: 1e-8 with "
                   "--adam_bias_correction, as PyTorch's AdamW; else 1e-6, as the original BERT).")
flags.DEFINE_float("weight_decay", DEFAULTS["weight_decay"], "Decoupled weight decay.")
flags.DEFINE_float("end_learning_rate", DEFAULTS["end_learning_rate"], "Learning rate at --num_train_steps.")
flags.DEFINE_float("poly_power", DEFAULTS["poly_power"], "Power of the polynomial decay (1 = linear).")
flags.DEFINE_float("clip_norm", DEFAULTS["clip_norm"], "Clip gradients to this global norm (0 = no clipping).")
flags.DEFINE_enum("mixed_precision", DEFAULTS["mixed_precision"], list(optimization.MIXED_PRECISION), "Compute "
                  "dtype; float16 uses dynamic loss scaling and skips (and counts) steps with non-finite gradients.")
flags.DEFINE_bool("jit_compile", DEFAULTS["jit_compile"], "Compile the forward and backward pass with XLA.")
flags.DEFINE_integer("steps_per_loop", DEFAULTS["steps_per_loop"], "Steps per tf.function call; one log line and "
                     "summary per loop.")
flags.DEFINE_integer("gradient_accumulation_steps", DEFAULTS["gradient_accumulation_steps"], "Micro-batches per "
                     "optimizer step.")
flags.DEFINE_integer("keep_checkpoint_max", DEFAULTS["keep_checkpoint_max"], "Checkpoints kept.")
flags.DEFINE_enum("distribution_strategy", DEFAULTS["distribution_strategy"], list(distribution.STRATEGIES),
                  "How to use devices.")
flags.DEFINE_integer("num_gpus", DEFAULTS["num_gpus"], "GPUs on this host (default: all visible).")
flags.DEFINE_string("tpu", DEFAULTS["tpu"], "TPU name or address; 'local' on a TPU VM.")
flags.DEFINE_string("all_reduce_alg", DEFAULTS["all_reduce_alg"], "mirrored: nccl|hierarchical_copy; "
                    "multi_worker_mirrored: ring|nccl.")
flags.DEFINE_bool("use_next_sentence_label", DEFAULTS["use_next_sentence_label"], "Train next sentence prediction.")
flags.DEFINE_bool("dynamic_masking", DEFAULTS["dynamic_masking"], "Draw new masks on every pass (records masked "
                  "offline are unmasked first); needs --vocab_file.")
flags.DEFINE_float("masked_lm_prob", DEFAULTS["masked_lm_prob"], "Share of tokens masked by --dynamic_masking.")
flags.DEFINE_bool("whole_word_mask", DEFAULTS["whole_word_mask"], "Whole-word masking for --dynamic_masking.")
flags.DEFINE_integer("shuffle_buffer_size", DEFAULTS["shuffle_buffer_size"], "Records in the shuffle buffer (saved "
                     "with every checkpoint).")
flags.DEFINE_integer("seed", DEFAULTS["seed"], "Seed of the initialization, dropout and data order.")
flags.DEFINE_bool("deterministic", DEFAULTS["deterministic"], "Enable TensorFlow op determinism (bitwise "
                  "reproducible, slower).")
flags.DEFINE_bool("checkpoint_input", DEFAULTS["checkpoint_input"], "Save the input position with each checkpoint.")


def config_from_flags() -> PretrainingConfig:
    """The `PretrainingConfig` of the command-line flags."""
    names = [f.name for f in dataclasses.fields(PretrainingConfig) if f.name != "bert_config"]
    return PretrainingConfig(**{name: FLAGS[name].value for name in names})


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    result = run_pretraining(config_from_flags())
    if result.metrics:  # else a finished job run again, which the trainer has reported already
        logging.info("Finished at step %d: %s", result.step,
                     ", ".join(f"{k}={v:.4g}" for k, v in result.metrics.items()))
    if result.export_dir:
        logging.info("Model directory for fine-tuning (--init_checkpoint): %s", result.export_dir)


if __name__ == "__main__":
    flags.mark_flags_as_required(["input_file", "model_dir"])
    cli.run(main)
