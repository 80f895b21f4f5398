"""`ExportConfig`: the settings of an export job (the flags of `run_scripts/export_model.py`), `export`, which runs
it, and `ExportResult`, what it wrote.

    export(ExportConfig(task="classifier", init_checkpoint="/tmp/mrpc", export_dir="/tmp/mrpc_export")).saved_model

Unset settings come from the fine-tuning record next to the checkpoint (see `exporter.export_model`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from official.nlp.common.config_flags import CheckedConfig, field
from official.nlp.serving import exporter


@dataclasses.dataclass
class ExportConfig(CheckedConfig):
    """What to export, from where, to where, and the serving settings (None: the fine-tuning job's)."""

    task: str = field(enum=exporter.TASKS, help="What to export.")
    init_checkpoint: str = field(path="path", help="Model directory, fine-tuning --output_dir or checkpoint prefix.")
    export_dir: str = field(path="path", help="Base directory; each export is a new numbered version in it.")
    version: int | None = field(None, minimum=1, help="Version number (default: one more than the largest there).")
    bert_config_file: str | None = field(
        None, path="path", help="Defaults to bert_config.json next to --init_checkpoint."
    )
    vocab_file: str | None = field(None, path="path", help="Defaults to vocab.txt next to --init_checkpoint.")
    do_lower_case: bool | None = field(None, help="Defaults to the model directory's do_lower_case.")
    max_seq_length: int | None = field(
        None, minimum=3, help="Tokens per packed sequence (default: the fine-tuning job's, else 128)."
    )
    label_names: Sequence[str] | None = field(
        None, help="Class names in label-index order (default: the fine-tuning job's)."
    )
    text_pair: bool | None = field(
        None,
        help="encoder/classifier: serving_default takes text_a and text_b (default: "
        "from the fine-tuning task, GLUE pair tasks take two).",
    )
    doc_stride: int | None = field(None, minimum=1, help="SQuAD: tokens between window starts (default 128).")
    max_query_length: int | None = field(None, minimum=1, help="SQuAD: question tokens kept (default 64).")
    n_best_size: int | None = field(None, minimum=1, help="SQuAD: start/end candidates per window (default 20).")
    max_answer_length: int | None = field(None, minimum=1, help="SQuAD: longest answer in tokens (default 30).")
    version_2_with_negative: bool | None = field(None, help="SQuAD 2.0: the answer may be empty.")
    null_score_diff_threshold: float | None = field(None, help="SQuAD 2.0: empty when null - best > this (default 0).")
    keras_file: bool = field(True, help="Also write the Keras model as a .keras file.")


@dataclasses.dataclass
class ExportResult:
    """The paths an export wrote: the SavedModel with every signature (`<export_dir>/<version>`), the one without
    tensorflow-text ops (`token_ids/<version>`), the `.keras` file (None with `keras_file=False`), and for
    `task="encoder"` the TF-Hub-style preprocessor and encoder (else None)."""

    saved_model: str
    token_ids: str
    keras: str | None = None
    hub_preprocessor: str | None = None
    hub_encoder: str | None = None

    def paths(self) -> dict[str, str]:
        """The written paths by name, in this order, without the ones not written."""
        return {name: path for name, path in dataclasses.asdict(self).items() if path is not None}


def export(config: ExportConfig) -> ExportResult:
    """Exports `config.init_checkpoint` for `config.task` as `export_model.py` does (`exporter.export_model` with the
    settings of `config`)."""
    squad = {name: getattr(config, name) for name in exporter.SQUAD_SETTINGS if getattr(config, name) is not None}
    paths = exporter.export_model(
        config.task,
        config.init_checkpoint,
        config.export_dir,
        max_seq_length=config.max_seq_length,
        label_names=config.label_names,
        text_pair=config.text_pair,
        version=config.version,
        bert_config_file=config.bert_config_file,
        vocab_file=config.vocab_file,
        do_lower_case=config.do_lower_case,
        squad_settings=squad,
        keras_file=config.keras_file,
    )
    return ExportResult(**paths)
