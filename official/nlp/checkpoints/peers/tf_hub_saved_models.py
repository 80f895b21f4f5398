"""TF-Hub / Kaggle BERT encoder SavedModels, read into TF1-named weights with their vocabulary and case.

A TF-Hub BERT encoder (what the Model Garden's `export_tfhub` writes, and what tfhub.dev and Kaggle serve as
`bert_en_uncased_L-12_H-768_A-12` and friends) is a SavedModel whose `__call__` takes the dict `input_word_ids`,
`input_mask`, `input_type_ids` and returns `pooled_output`, `sequence_output` and `encoder_outputs`. Beside it the
encoder carries the `vocab_file` asset and the `do_lower_case` variable its preprocessing model was made with, and
`export_type=model_with_mlm` adds an `mlm` subobject with the masked-LM head. The encoder SavedModels this library
writes (`export_model.py --task=encoder`, `serving/hub.py`) have the same attributes, and are read back here too.

The weights are read from the SavedModel's `variables` (TF-Hub's Reusable SavedModel API), by name; the config
from their shapes. What the variables do not say is found by running the SavedModel once on a small probe: its
GELU (the Model Garden's is the tanh form, our `"gelu"`; the erf form is `"gelu_exact"`) is the one whose outputs
match, and a SavedModel that no BERT of ours matches (pre-norm blocks, another epsilon, an embedding projection) is
refused rather than converted wrong. Dropout rates are not in the variables: 0.1, as in every published BERT.

The preprocessing model (`--preprocessor`) gives the vocabulary (its `assets/vocab.txt`) and the case (found by
tokenizing `The` and `the`) when the encoder lacks them. TF-Hub's older BERTs (TF1 Hub modules, and the 2019 TF2
SavedModels with list inputs and `bert_model/...` variables) and the SentencePiece models (ALBERT) are refused with
one line each.

Example:

    weights = read_hub_weights("bert_en_uncased_L-12_H-768_A-12_4/")   # TF1 names -> arrays
    config = read_hub_config("bert_en_uncased_L-12_H-768_A-12_4/")     # BertConfig, GELU checked on a probe
    vocab_file, do_lower_case = hub_vocab("bert_en_uncased_L-12_H-768_A-12_4/")
"""

from __future__ import annotations

import os
import re

import numpy as np
import tensorflow as tf
from absl import logging

from official.nlp.checkpoints.checkpoint_base import ENCODER_SCOPE, MLM_SCOPE
from official.nlp.common import input_files, text_files
from official.nlp.common.errors import InputError, MissingInputError
from official.nlp.modeling.configs import BertConfig

SAVED_MODEL_FILE = "saved_model.pb"
# The folders of an encoder/preprocessing pair: `export_model.py --task=encoder` writes `hub/<version>/encoder` and
# `.../preprocessor`; the Model Garden's own examples name them `encoder` and `preprocessing`.
ENCODER_FOLDER = "encoder"
PREPROCESSOR_FOLDERS = ("preprocessor", "preprocessing")
_DROPOUT = 0.1
_LAYER_NORM_EPS = 1e-12
_ACTIVATIONS = ("gelu", "gelu_exact", "relu")

# TF1 name (under `bert/`) <- the variable names of a TF-Hub encoder: the Model Garden's first, then ours
# (serving/hub.py). A name matches at its end, after any prefix a Keras model adds.
_EMBEDDINGS = {
    "embeddings/word_embeddings": ("word_embeddings/embeddings",),
    "embeddings/position_embeddings": ("position_embedding/embeddings", "embeddings/position_embeddings"),
    "embeddings/token_type_embeddings": ("type_embeddings/embeddings", "token_type_embeddings/embeddings"),
    "embeddings/LayerNorm/gamma": ("embeddings/layer_norm/gamma",),
    "embeddings/LayerNorm/beta": ("embeddings/layer_norm/beta",),
    "pooler/dense/kernel": ("pooler_transform/kernel", "pooler/kernel"),
    "pooler/dense/bias": ("pooler_transform/bias", "pooler/bias"),
}
_LAYER = re.compile(r"(?:^|/)(?:transformer/layer_|transformer_layer_)(\d+)/(.+)$")
_BLOCK = {
    "attention/self/query": ("self_attention/query", "attention/query"),
    "attention/self/key": ("self_attention/key", "attention/key"),
    "attention/self/value": ("self_attention/value", "attention/value"),
    "attention/output/dense": ("self_attention/attention_output", "attention_output_dense"),
    "attention/output/LayerNorm": ("self_attention_layer_norm", "attention_layer_norm"),
    "intermediate/dense": ("intermediate", "intermediate_dense"),
    "output/dense": ("output", "output_dense"),
    "output/LayerNorm": ("output_layer_norm",),
}
# The Model Garden's masked-LM head keeps the original names (`bert/cls/predictions/...`); `output_bias/bias` is
# TF1's `output_bias`.
_MLM = re.compile(r"(?:^|/)cls/predictions/(?:(output_bias)(?:/bias)?|(transform/(?:dense|LayerNorm)/\w+))$")

_loaded: dict[str, object] = {}  # one SavedModel at a time (a BERT-Large is 1.3 GB), and its BertConfig
_configs: dict[str, BertConfig] = {}


def encoder_folder(path: str) -> str | None:
    """The encoder SavedModel folder `path` names: itself when it holds `saved_model.pb`, its `encoder/` when it is
    the folder of a pair (`export_model.py`'s `hub/<version>/`); None otherwise."""
    if not input_files.isdir(path):
        return None
    if input_files.exists(os.path.join(path, SAVED_MODEL_FILE)):
        return path
    inner = os.path.join(path, ENCODER_FOLDER)
    return inner if input_files.exists(os.path.join(inner, SAVED_MODEL_FILE)) else None


def is_hub_saved_model(path: str) -> bool:
    """Whether `path` is a SavedModel folder (or a pair's folder holding `encoder/`): read as a TF-Hub encoder."""
    return encoder_folder(path) is not None


def _load(folder: str, what: str = "encoder"):
    """`tf.saved_model.load(folder)`, once per folder in a process (a conversion reads one several times)."""
    if folder not in _loaded:
        import tensorflow_text  # noqa: F401  registers the ops of a preprocessing model, passed by mistake or not

        try:
            _loaded.clear()
            _configs.clear()
            _loaded[folder] = tf.saved_model.load(folder)
        except (OSError, ValueError, RuntimeError, tf.errors.OpError) as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise InputError(
                f"{folder}: cannot load it as a SavedModel ({first[:300]}); expected a TF-Hub BERT {what} "
                "(saved_model.pb, variables/, assets/): copy or download it again"
            ) from None
    return _loaded[folder]


def _require_encoder(path: str) -> tuple[str, object]:
    folder = encoder_folder(path)
    if folder is None:
        raise MissingInputError(f"{path} has no {SAVED_MODEL_FILE}: not a SavedModel folder")
    loaded = _load(folder)
    if hasattr(loaded, "tokenize") and hasattr(loaded, "bert_pack_inputs"):
        raise InputError(
            f"{folder} is a BERT preprocessing model, not the encoder: pass the encoder SavedModel as the model, and "
            "this one as --preprocessor (convert_checkpoint.py) for its vocabulary and case"
        )
    if hasattr(loaded, "sp_model_file"):
        raise InputError(
            f"{folder} is a SentencePiece encoder (ALBERT-style: its sp_model_file asset), which this library "
            "does not read; only WordPiece BERT encoders are"
        )
    return folder, loaded


def _variables(folder: str, loaded, attribute=None) -> dict[str, np.ndarray]:
    owner = loaded if attribute is None else getattr(loaded, attribute)
    variables = getattr(owner, "variables", None)
    if variables is None:
        raise InputError(
            f"{folder} is a SavedModel without the `variables` of TF-Hub's Reusable SavedModel API: not a TF-Hub "
            "BERT encoder (TF-Hub's TF1 Hub modules are not read either)"
        )
    return {re.sub(r":\d+$", "", v.name): v.numpy() for v in variables}


def _not_bert(folder: str, names, why: str) -> InputError:
    shown = ", ".join(sorted(names)[:6]) or "none"
    return InputError(
        f"{folder} is a SavedModel but not a TF-Hub BERT encoder ({why}; its variables: {shown}...). Pass the "
        "encoder of a TF-Hub/Kaggle BERT (inputs input_word_ids/input_mask/input_type_ids), or the model's "
        "model directory or checkpoint"
    )


def _match(folder: str, variables: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """TF1 names -> arrays (still in the SavedModel's layouts) for the encoder's variables; others are ignored."""
    found: dict[str, tuple[str, np.ndarray]] = {}

    def put(tf1_name: str, name: str, value: np.ndarray) -> None:
        if tf1_name in found:
            raise _not_bert(folder, variables, f"both {found[tf1_name][0]} and {name} look like {tf1_name}")
        found[tf1_name] = (name, value)

    for name, value in variables.items():
        layer = _LAYER.search(name)
        if layer:
            index, rest = layer.groups()
            for scope, accepted in _BLOCK.items():
                for sub in accepted:
                    variable = rest[len(sub) + 1 :] if rest.startswith(sub + "/") else None
                    if variable in ("kernel", "bias", "gamma", "beta"):
                        put(f"{ENCODER_SCOPE}encoder/layer_{index}/{scope}/{variable}", name, value)
            continue
        for scope, accepted in _EMBEDDINGS.items():
            if any(name == a or name.endswith("/" + a) for a in accepted):
                put(f"{ENCODER_SCOPE}{scope}", name, value)
        if re.search(r"(?:^|/)embedding_projection/", name):
            raise InputError(
                f"{folder} has an embedding projection ({name}: embeddings narrower than the hidden size, "
                "ALBERT-style), which this library's BERT does not have"
            )
    return {tf1_name: value for tf1_name, (_, value) in found.items()}


def _layout(weights: dict[str, np.ndarray], hidden: int) -> dict[str, np.ndarray]:
    """The Model Garden's `EinsumDense` attention layouts (`[hidden, heads, size]`, `[heads, size, hidden]`) ->
    TF1's `[hidden, hidden]`; ours are TF1's already."""
    out = {}
    for name, value in weights.items():
        if re.search(r"/attention/self/\w+/(kernel|bias)$", name):
            value = value.reshape((hidden, -1) if name.endswith("kernel") else (-1,))
        elif name.endswith("/attention/output/dense/kernel"):
            value = value.reshape(-1, hidden)
        out[name] = np.asarray(value, np.float32)
    return out


def _heads(folder: str, variables: dict[str, np.ndarray]) -> int | None:
    """The number of attention heads: the second axis of a Model Garden query kernel, else None."""
    for name, value in variables.items():
        if re.search(r"(?:^|/)layer_0/self_attention/query/kernel$", name) and value.ndim == 3:
            return int(value.shape[1])
    return None


def _our_config(folder: str) -> BertConfig | None:
    """The `bert_config.json` asset of an encoder this library wrote (which knows its heads and dropout)."""
    path = os.path.join(folder, "assets", "bert_config.json")
    return BertConfig.from_json_file(path) if input_files.exists(path) else None


def read_hub_weights(path: str) -> dict[str, np.ndarray]:
    """The encoder's weights (and its `mlm` head's, when it has one) under TF1 names, in TF1 layout (float32)."""
    folder, loaded = _require_encoder(path)
    variables = _variables(folder, loaded)
    weights = _match(folder, variables)
    required = [
        f"{ENCODER_SCOPE}embeddings/word_embeddings",
        f"{ENCODER_SCOPE}encoder/layer_0/attention/self/query/kernel",
    ]
    missing = [name for name in required if name not in weights]
    if missing:
        raise _not_bert(folder, variables, f"no word embeddings or transformer layers ({', '.join(missing)})")
    hidden = weights[f"{ENCODER_SCOPE}embeddings/word_embeddings"].shape[-1]
    if hasattr(loaded, "mlm") and getattr(loaded.mlm, "variables", None) is not None:
        for name, value in _variables(folder, loaded, "mlm").items():
            head = _MLM.search(name)
            if head:
                weights[f"{MLM_SCOPE}{head.group(1) or head.group(2)}"] = value
    return _layout(weights, hidden)


def _probe_inputs(config: BertConfig) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    length = min(8, config.max_position_embeddings)
    ids = rng.integers(5, config.vocab_size, size=(2, length)).astype(np.int32) if config.vocab_size > 5 else None
    ids = ids if ids is not None else np.zeros((2, length), np.int32)
    mask = np.ones_like(ids)
    mask[1, length // 2 :] = 0
    types = np.zeros_like(ids)
    types[0, length // 2 :] = min(1, config.type_vocab_size - 1)
    return {"input_word_ids": ids * mask, "input_mask": mask, "input_type_ids": types}


def _hub_outputs(folder: str, loaded, inputs) -> np.ndarray:
    try:
        out = loaded({k: tf.constant(v) for k, v in inputs.items()}, training=False)
        return np.asarray(out["sequence_output"])
    except (TypeError, ValueError, KeyError, tf.errors.OpError) as e:
        raise InputError(
            f"{folder} does not run as a TF-Hub BERT encoder (called with input_word_ids/input_mask/input_type_ids "
            f"it says {type(e).__name__}: {str(e).strip().splitlines()[0][:200] if str(e).strip() else ''}); "
            "TF-Hub's 2019 BERTs with list inputs are not read"
        ) from None


def read_hub_config(path: str, weights: dict[str, np.ndarray] | None = None) -> BertConfig:
    """The `BertConfig` of a TF-Hub encoder: sizes from its variables (our own exports: their `bert_config.json`
    asset), the activation from a probe run that our model with that config must match."""
    folder, loaded = _require_encoder(path)
    if folder not in _configs:
        _configs[folder] = _find_config(folder, loaded, weights if weights is not None else read_hub_weights(folder))
    return _configs[folder]


def _find_config(folder: str, loaded, weights: dict[str, np.ndarray]) -> BertConfig:
    from official.nlp.checkpoints.peers import tf1_checkpoints

    ours = _our_config(folder)
    variables = _variables(folder, loaded)
    word = weights[f"{ENCODER_SCOPE}embeddings/word_embeddings"]
    layers = 1 + max(int(m.group(1)) for m in map(re.compile(r"/layer_(\d+)/").search, weights) if m)
    heads = ours.num_attention_heads if ours else _heads(folder, variables)
    if heads is None:
        raise _not_bert(folder, variables, "its attention kernels do not say the number of heads")
    sizes = dict(
        vocab_size=int(word.shape[0]),
        hidden_size=int(word.shape[1]),
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=int(weights[f"{ENCODER_SCOPE}encoder/layer_0/intermediate/dense/kernel"].shape[1]),
        max_position_embeddings=int(weights[f"{ENCODER_SCOPE}embeddings/position_embeddings"].shape[0]),
        type_vocab_size=int(weights[f"{ENCODER_SCOPE}embeddings/token_type_embeddings"].shape[0]),
    )
    if ours is not None:
        differ = {k: (getattr(ours, k), v) for k, v in sizes.items() if getattr(ours, k) != v}
        if differ:
            raise InputError(
                f"{folder}: its assets/bert_config.json does not fit its variables ("
                + ", ".join(f"{k} {a} vs {b}" for k, (a, b) in differ.items())
                + "); export it again"
            )
        return ours
    inputs = _probe_inputs(BertConfig(**sizes))
    expected = _hub_outputs(folder, loaded, inputs)
    encoder_weights = {name: value for name, value in weights.items() if name.startswith(ENCODER_SCOPE)}
    differences = {}
    for activation in _ACTIVATIONS:
        config = BertConfig(
            **sizes,
            hidden_act=activation,
            hidden_dropout_prob=_DROPOUT,
            attention_probs_dropout_prob=_DROPOUT,
            layer_norm_eps=_LAYER_NORM_EPS,
        )
        encoder = tf1_checkpoints.model_from_weights(encoder_weights, config, source=folder)
        ours_out = np.asarray(encoder(inputs, training=False)["sequence_output"])
        differences[activation] = float(np.max(np.abs(ours_out - expected)))
        if differences[activation] <= 1e-4 * max(1.0, float(np.max(np.abs(expected)))):
            logging.info("%s: a BERT encoder with hidden_act=%s (probe max |diff| %.2g)", folder, activation,
                         differences[activation])  # fmt: skip
            return config
    raise InputError(
        f"{folder}: no BERT of this library computes what it computes (max |diff| on a probe: "
        + ", ".join(f"{a} {d:.2g}" for a, d in differences.items())
        + "); it is another architecture (pre-norm blocks, another layer-norm epsilon or activation) and is not "
        "converted"
    )


def hub_vocab(path: str) -> tuple[str | None, bool | None]:
    """`(vocab_file, do_lower_case)` the encoder carries (its `vocab_file` asset, its `do_lower_case` variable);
    None for what it lacks or whose file is missing."""
    folder, loaded = _require_encoder(path)
    vocab_file = None
    if hasattr(loaded, "vocab_file"):
        asset = loaded.vocab_file
        name = asset.asset_path.numpy().decode("utf-8") if hasattr(asset, "asset_path") else None
        vocab_file = os.path.join(folder, "assets", os.path.basename(name)) if name else None
        if vocab_file and not input_files.exists(vocab_file):
            logging.warning("%s names the vocabulary %s, which is missing", folder, vocab_file)
            vocab_file = None
    do_lower_case = None
    if hasattr(loaded, "do_lower_case"):
        do_lower_case = bool(np.asarray(loaded.do_lower_case.numpy()))
    elif input_files.exists(os.path.join(folder, "assets", "do_lower_case")):
        do_lower_case = text_files.read_text(os.path.join(folder, "assets", "do_lower_case")).strip().lower() == "true"
    return vocab_file, do_lower_case


def preprocessor_folder(path: str) -> str:
    """The preprocessing SavedModel `path` names: itself, or the `preprocessor/` (`preprocessing/`) of a pair."""
    for candidate in (path, *(os.path.join(path, name) for name in PREPROCESSOR_FOLDERS)):
        if input_files.exists(os.path.join(candidate, SAVED_MODEL_FILE)):
            return candidate
    raise MissingInputError(f"--preprocessor={path} has no {SAVED_MODEL_FILE}: not a SavedModel folder")


def preprocessor_vocab(path: str) -> tuple[str, bool]:
    """`(vocab_file, do_lower_case)` of a TF-Hub BERT preprocessing model: its `assets/vocab.txt` (or its one
    asset), and the case it tokenizes with: `The` and `the` give the same ids only when it lowercases."""
    folder = preprocessor_folder(path)
    loaded = _load(folder, "preprocessing model")
    if not hasattr(loaded, "tokenize"):
        raise InputError(
            f"--preprocessor={folder} is a SavedModel without `tokenize`: not a TF-Hub BERT preprocessing model"
        )
    assets = os.path.join(folder, "assets")
    names = [n for n in input_files.listdir(assets) if n.endswith(".txt")] if input_files.isdir(assets) else []
    name = "vocab.txt" if "vocab.txt" in names else (names[0] if len(names) == 1 else None)
    if name is None:
        raise MissingInputError(
            f"--preprocessor={folder} has no vocabulary in assets/ (no vocab.txt; found {names or 'nothing'}); "
            "a SentencePiece preprocessor is not read. Pass --vocab_file and --do_lower_case"
        )
    vocab_file = os.path.join(assets, name)
    vocab = text_files.read_text(vocab_file).split("\n")
    word = next((t for t in vocab if t.isalpha() and t.islower() and len(t) > 1 and t.isascii()), None)
    if word is None:
        raise InputError(f"--preprocessor={folder}: cannot tell its case from {vocab_file}; pass --do_lower_case")
    ids = loaded.tokenize(tf.constant([word, word.capitalize(), word.upper()]))
    ids = ids.merge_dims(1, -1) if ids.ragged_rank > 1 else ids
    rows = [tuple(r) for r in ids.to_list()]
    return vocab_file, rows[0] == rows[1] == rows[2]
