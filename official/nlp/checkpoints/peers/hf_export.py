"""Hugging Face BERT folders written from any model: what `convert_checkpoint.py --output_format=hf` writes.

The folder holds what `transformers` loads with `from_pretrained` and nothing of this library:

    config.json              the BertConfig in Hugging Face's keys (`architectures`, `model_type`, activation names
                             mapped back: our "gelu", the tanh form, is "gelu_new"; "gelu_exact" is "gelu")
    model.safetensors        the weights, in PyTorch's names and layouts (written last: the folder's marker)
    vocab.txt                the WordPiece vocabulary
    tokenizer_config.json    BertTokenizer's settings: `do_lower_case`, the special tokens, `model_max_length`
    special_tokens_map.json

What the model directory holds decides the architecture: an encoder is a `BertModel`; a `BertPretrainer` a
`BertForPreTraining` (masked LM and next sentence) or `BertForMaskedLM`; a classifier fine-tuned by
`run_classifier` (its `finetuning.json` says `classifier` or `multi_label_classifier`) a
`BertForSequenceClassification` with `id2label`/`label2id` and `problem_type` (`single_label_classification`,
`multi_label_classification` or `regression`); a multi-label model's thresholds go to `multi_label_thresholds`,
which transformers keeps on its config without using. The head kinds, and which of them are written, are
`head_kinds.HEADS`'s; `fine_tuned.load_fine_tuned` reads such a classifier folder back with its head, labels and
thresholds. A left-to-right pretrainer (`run_pretraining
--objective=ltr`) is a `BertLMHeadModel` with `is_decoder` (transformers' causal mask, the same next-token logits);
any other left-to-right model is refused (`_architecture`): transformers' pooler reads `[CLS]`, ours the last real
token, so its `pooled_output` and a classifier on it would differ. The weight names are those `hf_weights` reads, in
reverse (`hf_weights.tf1_name_to_hf` over `tf1_checkpoints.export_weights`), so a Hugging Face folder converted here
and written back gives the same tensors.

Refused, naming what: other fine-tuned heads (token classification, span prediction, multiple choice), an
activation or a `BertConfig` field Hugging Face BERT has no equivalent for (`_check_expressible`), a masked-LM head
not tied to the word embeddings or with its own activation.

Example:

    export_to_hugging_face("/tmp/goemotions/best_model", "/tmp/goemotions_hf")
    transformers.BertForSequenceClassification.from_pretrained("/tmp/goemotions_hf")
"""

from __future__ import annotations

import dataclasses
import json
import os

import numpy as np
from absl import logging

from official.nlp.checkpoints import checkpoint_base, fine_tuned, head_kinds, model_loading
from official.nlp.checkpoints import model_dir as model_dir_lib
from official.nlp.checkpoints.peers import hf_weights, tf1_checkpoints
from official.nlp.common import claims, full_disk, output_files, output_folders
from official.nlp.common.errors import InputError
from official.nlp.modeling.activations import HF_ACTIVATIONS
from official.nlp.modeling.configs import LTR, BertConfig
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.modeling.models import BertClassifier, BertPretrainer
from official.nlp.tokenizers.vocabulary import load_vocab

WEIGHTS_FILE = "model.safetensors"  # the folder's marker: a folder without it is not a Hugging Face model
HF_SPECIAL_TOKENS = {
    "unk_token": "[UNK]",
    "sep_token": "[SEP]",
    "pad_token": "[PAD]",
    "cls_token": "[CLS]",
    "mask_token": "[MASK]",
}
# Our activation names -> Hugging Face's (the inverse of `HF_ACTIVATIONS` on the names transformers writes itself).
_ACTIVATIONS = {ours: hf for hf, ours in HF_ACTIVATIONS.items() if hf in ("gelu", "gelu_new", "relu", "tanh", "linear")}
# The BertConfig fields Hugging Face's BertConfig has under the same name. A field not listed (one added later) is
# refused by `_check_expressible` unless it holds its default value; `attention` is `_architecture`'s to decide.
_SAME_NAME_FIELDS = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "hidden_dropout_prob",
    "attention_probs_dropout_prob",
    "max_position_embeddings",
    "type_vocab_size",
    "initializer_range",
    "layer_norm_eps",
)


def _check_expressible(config: BertConfig, source: str) -> None:
    """Refuses a model Hugging Face BERT cannot compute the same way, naming the setting."""
    if config.hidden_act not in _ACTIVATIONS:
        raise InputError(f"{source}: hidden_act {config.hidden_act!r} has no Hugging Face BERT equivalent")
    for field in dataclasses.fields(config):
        if field.name in _SAME_NAME_FIELDS or field.name in ("hidden_act", "attention"):
            continue
        if getattr(config, field.name) != field.default:
            raise InputError(
                f"{source}: bert_config.json sets {field.name}={getattr(config, field.name)!r}, which Hugging Face's "
                "BertModel has no equivalent for; such a model cannot be written as a Hugging Face folder"
            )


def hf_config(
    config: BertConfig,
    *,
    architecture: str,
    pad_token_id: int,
    labels: list[str] | None = None,
    problem_type: str | None = None,
    thresholds: list[float] | None = None,
    is_decoder: bool = False,
) -> dict:
    """The `config.json` of a Hugging Face BERT model (`architecture` e.g. "BertModel")."""
    values = {name: getattr(config, name) for name in _SAME_NAME_FIELDS}
    values.update(
        architectures=[architecture],
        model_type="bert",
        hidden_act=_ACTIVATIONS[config.hidden_act],
        pad_token_id=pad_token_id,
        position_embedding_type="absolute",
    )
    if is_decoder:  # transformers' BertModel then masks the future positions (a left-to-right model)
        values["is_decoder"] = True
    if problem_type is not None:
        names = labels or ["LABEL_0"]  # regression: one output, under transformers' own name for it
        values.update(
            problem_type=problem_type,
            id2label={str(i): name for i, name in enumerate(names)},
            label2id={name: i for i, name in enumerate(names)},
        )
    if thresholds is not None:
        values[head_kinds.HF_THRESHOLDS_KEY] = {name: float(t) for name, t in zip(labels, thresholds)}
    return values


def hf_tensors(model, *, pooler: bool = True) -> dict[str, np.ndarray]:
    """The weights of `model` (`BertEncoder`, `BertPretrainer` or `BertClassifier`) under Hugging Face's names and in
    PyTorch's layouts; `bert.` prefixes the encoder's names except for a bare encoder (`BertModel`). `pooler` False
    leaves out the pooler, which `BertLMHeadModel` has none of."""
    prefix = "" if isinstance(model, BertEncoder) else "bert."
    tensors = {}
    try:
        weights = tf1_checkpoints.export_weights(model)
    except ValueError as e:  # a masked-LM head with its own output embeddings
        raise InputError(f"{e}; Hugging Face's BERT ties them") from None
    for name, value in weights.items():
        key = hf_weights.tf1_name_to_hf(name)
        transposed = hf_weights.hf_name_to_tf1(key)[1]
        if not pooler and key.startswith("pooler."):
            continue
        key = key if key.startswith("cls.") else prefix + key
        tensors[key] = np.ascontiguousarray(value.T if transposed else value, np.float32)
    if isinstance(model, BertClassifier):  # PyTorch's Linear is [out, in]
        tensors["classifier.weight"] = np.ascontiguousarray(model.classifier.kernel.numpy().T, np.float32)
        tensors["classifier.bias"] = np.asarray(model.classifier.bias.numpy(), np.float32)
    return tensors


def _load(path: str, *, input_format: str, **overrides) -> tuple[object, model_dir_lib.ModelFiles, object]:
    """The model at `path` with every weight, its files, and what it is (`fine_tuned.FineTuned`; its `head` None
    for a pretrained model)."""
    if input_format == "auto" or input_format == model_loading.detect_format(path):
        described = fine_tuned.describe(path, **overrides)
        if described.head is not None or described.task is not None:
            if described.head is None or described.head.hugging_face is None:
                kind = described.head.name if described.head else f"{described.task!r} (no best_model/ says which head)"
                raise InputError(
                    f"{path} holds a fine-tuned {kind} head; a Hugging Face folder is written for an encoder, a "
                    "pretraining model or a sequence classifier (run_classifier's best_model/). Convert the "
                    "pretrained model it was fine-tuned from instead"
                )
            described, model = fine_tuned.load_fine_tuned(path, files=described.files)
            return model, described.files, described
    model, files = model_loading.load_model(path, input_format=input_format, **overrides)
    return model, files, None


def _architecture(model, described, source: str) -> tuple[str, dict]:
    """The Hugging Face class `model` is, and the `hf_config` arguments of its head."""
    config = model.config if isinstance(model, BertEncoder) else model.encoder.config
    if config.left_to_right:
        if isinstance(model, BertPretrainer) and model.objective == LTR:
            return "BertLMHeadModel", {"is_decoder": True}
        kind = "BertModel" if isinstance(model, BertEncoder) else "BertForSequenceClassification"
        raise InputError(
            f"{source}: bert_config.json sets attention=left_to_right, and a left-to-right model pools its last real "
            f"token where Hugging Face's {kind} pools [CLS], so its outputs would differ; only the left-to-right "
            "pretraining model (run_pretraining --objective=ltr's export) is written, as a BertLMHeadModel"
        )
    if isinstance(model, BertEncoder):
        return "BertModel", {}
    if isinstance(model, BertPretrainer):
        if model.masked_lm.hidden_act != model.encoder.config.hidden_act:
            raise InputError(
                f"{source}: its masked-LM head's activation ({model.masked_lm.hidden_act}) is not the encoder's "
                f"({model.encoder.config.hidden_act}); Hugging Face's BertForPreTraining uses the encoder's"
            )
        return ("BertForPreTraining" if model.use_next_sentence_label else "BertForMaskedLM"), {}
    labels = list(described.labels)
    architecture = described.head.hugging_face
    if model.num_classes == 1 and not labels:
        return architecture, {"problem_type": head_kinds.REGRESSION_PROBLEM}
    if len(labels) != model.num_classes:
        raise InputError(f"{source}: {len(labels)} recorded labels for a classifier with {model.num_classes} outputs")
    head = {"labels": labels}
    if described.multi_label:
        head.update(problem_type=head_kinds.MULTI_LABEL_PROBLEM, thresholds=described.thresholds)
    else:
        head["problem_type"] = head_kinds.SINGLE_LABEL_PROBLEM
    return architecture, head


def _tokenizer_files(do_lower_case: bool, max_length: int) -> dict[str, dict]:
    return {
        "tokenizer_config.json": {
            "tokenizer_class": "BertTokenizer",
            "do_lower_case": bool(do_lower_case),
            "tokenize_chinese_chars": True,
            "strip_accents": None,  # as the original: accents are stripped exactly when lower-casing
            "model_max_length": max_length,
            **HF_SPECIAL_TOKENS,
        },
        "special_tokens_map.json": dict(HF_SPECIAL_TOKENS),
    }


def export_to_hugging_face(
    input_path: str,
    output_dir: str,
    *,
    input_format: str = "auto",
    bert_config_file: str | None = None,
    vocab_file: str | None = None,
    do_lower_case: bool | None = None,
) -> model_dir_lib.ModelFiles:
    """Writes the model at `input_path` (a model directory, a fine-tuning `--output_dir` or its `best_model/`, an
    original TF1 checkpoint or a Hugging Face folder) as a Hugging Face folder (see the module docstring).

    `output_dir` must be new or empty, and is checked (`output_folders.check_new_folder`) and claimed as
    `convert_checkpoint`'s is. Everything is written in this job's staging folder (beside a local `output_dir`, a
    local temporary folder for one in a bucket) and put in place with `model.safetensors` last
    (`output_folders.commit_export`). Returns the written folder's `ModelFiles`.
    """
    from safetensors.numpy import save as safetensors_bytes

    inputs = {"--input": input_path, "--bert_config_file": bert_config_file, "--vocab_file": vocab_file}
    output_folders.check_new_folder(output_dir, flag="--output_dir", related=inputs)  # before reading anything
    model, files, described = _load(
        input_path,
        input_format=input_format,
        bert_config_file=bert_config_file,
        vocab_file=vocab_file,
        do_lower_case=do_lower_case,
    )
    if files.vocab_file is None or files.do_lower_case is None:
        raise InputError(f"{input_path}: no vocabulary or case to write with it; pass --vocab_file and --do_lower_case")
    _check_expressible(files.config, input_path)
    architecture, head = _architecture(model, described, input_path)
    vocab = load_vocab(files.vocab_file)
    if "[PAD]" not in vocab:
        raise InputError(f"{files.vocab_file} has no [PAD], which Hugging Face's BertTokenizer needs")
    config = hf_config(files.config, architecture=architecture, pad_token_id=vocab["[PAD]"], **head)
    tensors = hf_tensors(model, pooler=architecture != "BertLMHeadModel")
    parent, name = output_folders.split(output_dir)
    full = full_disk.naming_output_when_full(output_dir, name="--output_dir")  # names it, not the staging file
    with (
        full,
        claims.claim(parent, name, what=output_dir),
        output_folders.staging_folder(output_dir) as staging,
    ):
        tokenizer = _tokenizer_files(files.do_lower_case, files.config.max_position_embeddings)
        for file_name, content in {"config.json": config, **tokenizer}.items():
            output_files.write_text(
                os.path.join(staging, file_name), json.dumps(content, indent=2, sort_keys=True) + "\n"
            )
        output_files.copy(files.vocab_file, os.path.join(staging, model_dir_lib.VOCAB_FILE))
        output_files.write_bytes(
            os.path.join(staging, WEIGHTS_FILE), safetensors_bytes(tensors, metadata={"format": "pt"})
        )
        output_folders.commit_export(staging, output_dir, marker=WEIGHTS_FILE, replace=False)
    described = checkpoint_base.describe_config(files.config)
    logging.info("Wrote %s (%d tensors, %s) to %s", architecture, len(tensors), described, output_dir)
    return model_dir_lib.ModelFiles(
        config=files.config,
        vocab_file=os.path.join(output_dir, model_dir_lib.VOCAB_FILE),
        do_lower_case=files.do_lower_case,
        checkpoint=output_dir,
        checkpoint_format="hf",
    )
