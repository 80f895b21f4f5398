"""`BertConfig`: the hyperparameters of a BERT encoder, compatible with the original `bert_config.json`.

Example:

>>> from official.nlp.modeling.configs import BertConfig
>>> config = BertConfig.preset("tiny", vocab_size=1000)
>>> (config.num_hidden_layers, config.hidden_size, config.intermediate_size)
(2, 128, 512)
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from typing import Any

from absl import logging

from official.nlp.common import input_files, output_files, text_files
from official.nlp.common.errors import InputError, MissingInputError
from official.nlp.modeling.activations import ACTIVATION_NAMES, HF_ACTIVATIONS

# (num_hidden_layers, hidden_size, num_attention_heads) of the public Google BERT sizes.
PRESETS = {
    "tiny": (2, 128, 2),
    "mini": (4, 256, 4),
    "small": (4, 512, 8),
    "medium": (8, 512, 8),
    "base": (12, 768, 12),
    "large": (24, 1024, 16),
}

# The attention kinds: every position sees the whole sequence (BERT), or only itself and the positions before it (the
# paper's left-to-right LM baseline, "LTR", like GPT).
BIDIRECTIONAL, LEFT_TO_RIGHT = "bidirectional", "left_to_right"
ATTENTION_KINDS = (BIDIRECTIONAL, LEFT_TO_RIGHT)

# The sequence length a job packs to when it is not told (the original scripts' --max_seq_length default; SQuAD's
# is 384).
DEFAULT_SEQ_LENGTH = 128


def check_seq_length(max_seq_length: int, max_position_embeddings: int, *, name: str = "--max_seq_length") -> None:
    """The one rule between a sequence length and a model, which every job checks at start-up (pretraining's loader,
    every fine-tuning job when it reads `--init_checkpoint`, feature extraction, exports, text tasks): the model has
    a position embedding for each position, so `max_seq_length` may not exceed `max_position_embeddings`."""
    if max_seq_length > max_position_embeddings:
        raise InputError(
            f"{name}={max_seq_length} exceeds the model's max_position_embeddings ({max_position_embeddings}) in its "
            f"bert_config.json; lower {name}, or use a model with more position embeddings"
        )


# The pretraining objectives, one per attention kind: the masked LM (BERT) of a bidirectional model, and the
# next-token LM of a left-to-right one (`--objective=ltr`). A model's attention (`BertConfig.left_to_right`, the
# `causal` flag of its transformer blocks) and its objective always go together: `objective_for`, `attention_for`.
MLM, LTR = "mlm", "ltr"
OBJECTIVES = (MLM, LTR)


def objective_for(attention: str) -> str:
    """The pretraining objective of a model with this attention kind."""
    return LTR if attention == LEFT_TO_RIGHT else MLM


def attention_for(objective: str) -> str:
    """The attention kind a model pretrained with this objective has."""
    return LEFT_TO_RIGHT if objective == LTR else BIDIRECTIONAL


def left_to_right_conflicts(objective: str, *, use_next_sentence_label: bool, dynamic_masking: bool) -> list[str]:
    """The rules of the left-to-right LM, in one place: the settings `objective` cannot take, in this order.

    The left-to-right LM reads the original tokens and predicts the next one at every position: it has no
    next-sentence head (`use_next_sentence_label`) and draws no masks (`dynamic_masking`). The masked LM takes both.
    An unknown objective is a `ValueError` (the jobs' configs check the names first).
    """
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
    if objective != LTR:
        return []
    named = {"use_next_sentence_label": use_next_sentence_label, "dynamic_masking": dynamic_masking}
    return [name for name, value in named.items() if value]


# Keys a bert_config.json must hold; the others have the original defaults. Requiring these catches a config
# file that is not a BERT config at all (or has a typo in a key) before it silently builds a default model.
_REQUIRED_KEYS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size")


@dataclasses.dataclass
class BertConfig:
    """Hyperparameters of a BERT encoder; the fields and meanings of the original `bert_config.json`.

    `hidden_act` is `"gelu"` (the original TF1 tanh approximation), `"gelu_exact"` (the erf form, Hugging Face's
    `"gelu"`), `"relu"`, `"tanh"` or `"linear"`. `layer_norm_eps` is not in the original files; its default is
    the original code's 1e-12.
    """

    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12
    attention: str = BIDIRECTIONAL

    def __post_init__(self):
        for name in _REQUIRED_KEYS + ("max_position_embeddings", "type_vocab_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(f"BertConfig.{name} must be a positive integer, got {value!r}")
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob", "initializer_range", "layer_norm_eps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise InputError(f"BertConfig.{name} must be a number, got {value!r}")
            setattr(self, name, float(value))
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise InputError(f"BertConfig.{name} must be in [0, 1), got {getattr(self, name)!r}")
        if self.initializer_range <= 0 or self.layer_norm_eps <= 0:
            raise InputError(
                "BertConfig.initializer_range and layer_norm_eps must be positive, got "
                f"{self.initializer_range!r} and {self.layer_norm_eps!r}"
            )
        if self.hidden_size % self.num_attention_heads:
            raise InputError(
                f"BertConfig.hidden_size ({self.hidden_size}) is not divisible by num_attention_heads "
                f"({self.num_attention_heads}); each head gets hidden_size / num_attention_heads units"
            )
        if self.attention not in ATTENTION_KINDS:
            raise InputError(f"BertConfig.attention {self.attention!r} is not one of {', '.join(ATTENTION_KINDS)}")
        if self.hidden_act not in ACTIVATION_NAMES:
            hint = ""
            if self.hidden_act in HF_ACTIVATIONS:
                hint = (
                    f" (a Hugging Face name? there it means {HF_ACTIVATIONS[self.hidden_act]!r}; "
                    "BertConfig.from_json_file maps it when the file has `model_type`)"
                )
            raise InputError(
                f"BertConfig.hidden_act {self.hidden_act!r} is not one of {', '.join(ACTIVATION_NAMES)}{hint}"
            )

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> BertConfig:
        """A published BERT size (`tiny`, `mini`, `small`, `medium`, `base`, `large`), with fields overridden.

        `intermediate_size` is 4 * `hidden_size` unless given.
        """
        if name not in PRESETS:
            raise InputError(f"Unknown BERT preset {name!r}; expected one of {', '.join(PRESETS)}")
        layers, hidden, heads = PRESETS[name]
        fields = dict(num_hidden_layers=layers, hidden_size=hidden, num_attention_heads=heads)
        fields.update(overrides)
        fields.setdefault("intermediate_size", 4 * fields["hidden_size"])
        return cls(**fields)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> BertConfig:
        """Builds a config from the contents of a `bert_config.json` or a Hugging Face BERT `config.json`.

        A Hugging Face config is recognized by its `model_type` key; its activation names are mapped to ours
        (`"gelu"` -> `"gelu_exact"`, `"gelu_new"` -> `"gelu"`). Keys that are not config fields are ignored.
        """
        values = dict(values)
        if "model_type" in values:
            values = _from_hf(values)
        missing = [key for key in _REQUIRED_KEYS if key not in values]
        if missing:
            raise InputError(
                f"BERT config lacks {', '.join(missing)}; a bert_config.json defines {', '.join(_REQUIRED_KEYS)}"
            )
        names = {field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(values) - names)
        if unknown:
            logging.info("BERT config: ignoring keys that are not BertConfig fields: %s", ", ".join(unknown))
        return cls(**{key: value for key, value in values.items() if key in names})

    @classmethod
    def from_json_file(cls, path: str | os.PathLike) -> BertConfig:
        """Reads a `bert_config.json` (or a Hugging Face BERT `config.json`)."""
        path = os.fspath(path)
        if not input_files.exists(path):
            raise MissingInputError(f"BERT config file not found: {path}")
        try:
            values = json.loads(text_files.read_text(path))  # names the line and encoding of a non-UTF-8 file
        except json.JSONDecodeError as e:
            raise InputError(f"{path} is not valid JSON: {e}") from None
        if not isinstance(values, dict):
            raise InputError(f"{path}: expected a JSON object of BERT config fields")
        try:
            return cls.from_dict(values)
        except ValueError as e:
            raise InputError(f"{path}: {e}") from None

    @property
    def left_to_right(self) -> bool:
        return self.attention == LEFT_TO_RIGHT

    def to_dict(self) -> dict[str, Any]:
        """The fields, leaving out `attention` when it is bidirectional: the original `bert_config.json` keys."""
        values = dataclasses.asdict(self)
        if values["attention"] == BIDIRECTIONAL:
            del values["attention"]
        return values

    def to_json_string(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def to_json_file(self, path: str | os.PathLike) -> None:
        """Writes the original `bert_config.json` layout (plus `layer_norm_eps`, which the original ignores, and
        `attention` for a left-to-right model, which the original code would ignore too: see `save_model_dir`)."""
        output_files.write_text(os.fspath(path), self.to_json_string())


def _from_hf(values: dict[str, Any]) -> dict[str, Any]:
    """Maps a Hugging Face `config.json` onto `bert_config.json` fields."""
    model_type = values.get("model_type")
    if model_type != "bert":
        raise InputError(
            f"model_type {model_type!r} is not a BERT model (expected 'bert'); other architectures "
            "differ in ways this converter does not cover"
        )
    position_type = values.get("position_embedding_type", "absolute")
    if position_type != "absolute":
        raise InputError(f"position_embedding_type {position_type!r} is not supported (only 'absolute')")
    act = values.get("hidden_act", "gelu")
    if act not in HF_ACTIVATIONS:
        raise InputError(f"Hugging Face hidden_act {act!r} has no equivalent here; known: {', '.join(HF_ACTIVATIONS)}")
    values["hidden_act"] = HF_ACTIVATIONS[act]
    # transformers' BertModel masks the future positions when `is_decoder` is set (BertLMHeadModel, GPT-style).
    if values.get("add_cross_attention"):
        raise InputError("add_cross_attention is set: a decoder with cross-attention is not a BERT encoder")
    if values.get("is_decoder"):
        values["attention"] = LEFT_TO_RIGHT
    return values
