"""`ConversionConfig`: the settings of a checkpoint conversion (the flags of `run_scripts/convert_checkpoint.py`).

convert(ConversionConfig(input="uncased_L-12_H-768_A-12/bert_model.ckpt", output_dir="models/bert_base"))
"""

from __future__ import annotations

import dataclasses

from official.nlp.checkpoints import hf_export, model_dir
from official.nlp.common.config_flags import CheckedConfig, field


@dataclasses.dataclass
class ConversionConfig(CheckedConfig):
    """What to convert, into which model directory, and the files that override those found with the input."""

    input: str = field(
        path="path",
        help="TF1 checkpoint prefix or folder, Hugging Face model folder, model directory, or (for "
        "--output_format=hf) a fine-tuned classifier's directory.",
    )
    output_dir: str = field(
        path="path",
        help="Model directory to write (must not hold a checkpoint yet); for --output_format=hf a new or empty folder.",
    )
    input_format: str = field("auto", enum=["auto", "tf1", "hf", "ours"], help="Format of --input.")
    output_format: str = field(
        "ours",
        enum=["ours", "tf1", "hf"],
        help="What to write: our model directory, an original TF1 checkpoint, or a Hugging Face folder "
        "(config.json, model.safetensors, vocab.txt, tokenizer settings).",
    )
    bert_config_file: str | None = field(None, path="path", help="Overrides the config found next to --input.")
    vocab_file: str | None = field(None, path="path", help="Overrides the vocab.txt found next to --input.")
    do_lower_case: bool | None = field(None, help="Overrides the case found with --input (file, folder name or vocab).")


def convert(config: ConversionConfig) -> model_dir.ModelFiles:
    """`model_dir.convert_checkpoint` (or, for `output_format="hf"`, `hf_export.export_to_hugging_face`) with the
    settings of `config` (it logs what it wrote)."""
    if config.output_format == "hf":
        return hf_export.export_to_hugging_face(
            config.input,
            config.output_dir,
            input_format=config.input_format,
            bert_config_file=config.bert_config_file,
            vocab_file=config.vocab_file,
            do_lower_case=config.do_lower_case,
        )
    return model_dir.convert_checkpoint(
        config.input,
        config.output_dir,
        input_format=config.input_format,
        output_format=config.output_format,
        bert_config_file=config.bert_config_file,
        vocab_file=config.vocab_file,
        do_lower_case=config.do_lower_case,
    )
