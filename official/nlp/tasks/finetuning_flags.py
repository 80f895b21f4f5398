"""The command-line flags every fine-tuning script shares: one flag per `FineTuningConfig` field, original names.

`define_flags` defines them (a task's config subclass adds its own fields, with their help), and
`config_from_flags` reads them back into the config that `finetuning.run_finetuning` takes.

Example (as `run_scripts/run_classifier.py` does):

    finetuning_flags.define_flags(FLAGS, config_class=ClassifierConfig, help_texts={"task_name": "..."})
    ...
    config = finetuning_flags.config_from_flags(FLAGS, config_class=ClassifierConfig)
"""
from __future__ import annotations

import dataclasses
from typing import Mapping

from absl import flags

from official.nlp.common.errors import InputError
from official.nlp.tasks.finetuning import FineTuningConfig
from official.nlp.training import distribution, optimization

_HELP = {
    "output_dir": "Checkpoints, cached features, eval_results.txt, summaries and best_model/ go here; rerunning "
                  "with the same flags resumes.",
    "init_checkpoint": "A model directory (convert_checkpoint.py or run_pretraining output), an original TF1 "
                       "checkpoint prefix, or a Hugging Face folder (config.json + model.safetensors + vocab.txt).",
    "bert_config_file": "bert_config.json (default: the one with --init_checkpoint).",
    "vocab_file": "vocab.txt (default: the one with --init_checkpoint).",
    "do_lower_case": "Lower-case the input (default: the case stored with --init_checkpoint).",
    "max_seq_length": "Tokens per sequence after WordPiece, [CLS] and [SEP] included.",
    "train_batch_size": "Global batch size (over replicas and accumulation steps).",
    "eval_batch_size": "Batch size for evaluation.",
    "predict_batch_size": "Batch size for prediction.",
    "learning_rate": "Peak learning rate of AdamW.",
    "num_train_epochs": "Epochs over the training data (may be fractional).",
    "warmup_proportion": "Share of the training steps with linear warmup.",
    "save_checkpoints_steps": "A checkpoint every this many steps (and after each epoch).",
    "optimizer": "adamw (the paper) or lamb.",
    "weight_decay": "Decoupled weight decay (not on LayerNorm and bias weights).",
    "clip_norm": "Clip gradients to this global norm (0: no clipping).",
    "adam_bias_correction": "Apply Adam's bias correction: PyTorch's AdamW, the Hugging Face recipes (the original "
                            "BERT optimizer has none).",
    "adam_epsilon": "Adam's epsilon (default: 1e-8 with --adam_bias_correction, as PyTorch's AdamW; else 1e-6, as "
                    "the original BERT).",
    "steps_per_loop": "Steps per tf.function call; one log line per loop.",
    "keep_checkpoint_max": "Training checkpoints kept in --output_dir.",
    "gradient_accumulation_steps": "Micro-batches per optimizer step.",
    "mixed_precision": "Compute dtype: float32, bfloat16 or float16 (loss scaling).",
    "jit_compile": "Compile the training step with XLA.",
    "distribution_strategy": "How to use devices.",
    "num_gpus": "GPUs on this host (default: all visible).",
    "tpu": "TPU name or address; 'local' on a TPU VM.",
    "all_reduce_alg": "mirrored: nccl|hierarchical_copy; multi_worker_mirrored: ring|nccl.",
    "seed": "Seed of the head's initialization, dropout and data order.",
    "deterministic": "Enable TensorFlow op determinism (bitwise reproducible, slower).",
}


def define_flags(flag_values: flags.FlagValues = flags.FLAGS, *, config_class: type = FineTuningConfig,
                 help_texts: Mapping[str, str] | None = None, **defaults) -> None:
    """Defines a flag for every field of `config_class` (`FineTuningConfig` or a subclass; original names).

    `help_texts` gives the help of a subclass's own fields; `defaults` override the config's defaults (e.g. a
    task's usual `max_seq_length`).
    """
    helps = {**_HELP, **(help_texts or {})}
    for field in dataclasses.fields(config_class):
        name = field.name
        default = defaults.get(name, None if field.default is dataclasses.MISSING else field.default)
        help_text = helps[name]
        kind = str(field.type).replace(" | None", "")
        if name == "optimizer":
            flags.DEFINE_enum(name, default, list(optimization.OPTIMIZERS), help_text, flag_values=flag_values)
        elif name == "mixed_precision":
            flags.DEFINE_enum(name, default, list(optimization.MIXED_PRECISION), help_text, flag_values=flag_values)
        elif name == "distribution_strategy":
            flags.DEFINE_enum(name, default, list(distribution.STRATEGIES), help_text, flag_values=flag_values)
        elif kind == "bool":
            flags.DEFINE_bool(name, default, help_text, flag_values=flag_values)
        elif kind == "int":
            flags.DEFINE_integer(name, default, help_text, flag_values=flag_values)
        elif kind == "float":
            flags.DEFINE_float(name, default, help_text, flag_values=flag_values)
        else:
            flags.DEFINE_string(name, default, help_text, flag_values=flag_values)


def config_from_flags(flag_values: flags.FlagValues = flags.FLAGS, *, config_class: type = FineTuningConfig):
    """The `config_class` of parsed flags; `--do_lower_case` left unset stays None (the model's case applies)."""
    values = {f.name: flag_values[f.name].value for f in dataclasses.fields(config_class)}
    if not flag_values["do_lower_case"].present:
        values["do_lower_case"] = None
    if not values["output_dir"]:
        raise InputError("--output_dir is required")
    return config_class(**values)
