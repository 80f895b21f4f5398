"""Hugging Face BERT weights (`model.safetensors`) as TF1-named, TF1-layout arrays for `tf1_checkpoints.assign_weights`.

PyTorch stores dense weights as `[out, in]`; TF1 and Keras as `[in, out]`, so dense weights are transposed. The
NSP weight `cls.seq_relationship.weight` is `[2, H]` in both PyTorch and TF1 and is not.
"""

from __future__ import annotations

import json
import math
import os
import re
import struct

import numpy as np

from official.nlp.common import input_files
from official.nlp.common.errors import InputError, MissingInputError

_SAFETENSORS_DTYPES = {
    "F64": np.float64,
    "F32": np.float32,
    "F16": np.float16,
    "I64": np.int64,
    "I32": np.int32,
    "I16": np.int16,
    "I8": np.int8,
    "U8": np.uint8,
    "BOOL": np.bool_,
}


def load_safetensors(path: str) -> dict[str, np.ndarray]:
    """Reads a `.safetensors` file with NumPy alone (BF16 tensors become float32).

    Hand-written because the format is a JSON header plus raw little-endian buffers, and NumPy cannot hold
    bfloat16, which `safetensors.numpy` then refuses. The arrays are read-only views of the file's bytes (no copy:
    converting a checkpoint needs the file once in memory, not twice); BF16 ones are fresh float32 arrays.
    """
    data = input_files.read_bytes(path)
    try:
        (header_size,) = struct.unpack("<Q", data[:8])
        if 8 + header_size > len(data):
            raise ValueError(f"its header says {header_size:,} bytes, and the file has {len(data):,}")
        header = json.loads(data[8 : 8 + header_size])
        if not isinstance(header, dict):
            raise ValueError("its header is not a JSON object")
    except (struct.error, ValueError) as e:
        raise InputError(
            f"{path} is not a safetensors file, or is truncated ({e}); copy or download it again"
        ) from None
    start = 8 + header_size
    buffer = memoryview(data)  # slices of a memoryview share the bytes; slices of bytes would copy them
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype, shape, begin, end = _checked_entry(path, name, info, len(data) - start)
        raw = buffer[start + begin : start + end]
        if dtype == "BF16":
            bits = np.frombuffer(raw, "<u2").astype(np.uint32) << 16
            array = bits.view(np.float32)
        else:
            array = np.frombuffer(raw, np.dtype(_SAFETENSORS_DTYPES[dtype]).newbyteorder("<"))
        tensors[name] = array.reshape(shape)
    return tensors


def _checked_entry(path: str, name: str, info, data_size: int) -> tuple[str, list[int], int, int]:
    """`(dtype, shape, begin, end)` of one tensor of a safetensors header, checked against the `data_size` bytes
    after the header: a file cut short (an interrupted download or copy) is named with the first tensor it cuts,
    instead of failing in a reshape."""
    try:
        dtype, shape, (begin, end) = info["dtype"], list(info["shape"]), info["data_offsets"]
        if not all(isinstance(v, int) and v >= 0 for v in (begin, end, *shape)) or end < begin:
            raise ValueError
    except (KeyError, TypeError, ValueError):
        raise InputError(
            f"{path}: tensor {name} has no valid dtype, shape and data_offsets in the header "
            f"({json.dumps(info)[:80]}); the file is damaged: copy or download it again"
        ) from None
    if dtype != "BF16" and dtype not in _SAFETENSORS_DTYPES:
        raise InputError(f"{path}: tensor {name} has unsupported dtype {dtype}")
    if end > data_size:
        raise InputError(
            f"{path} is truncated: tensor {name} ends at byte {end:,} of the data, and the file holds {data_size:,} "
            "bytes of data; copy or download it again"
        )
    item = 2 if dtype == "BF16" else np.dtype(_SAFETENSORS_DTYPES[dtype]).itemsize
    if end - begin != item * math.prod(shape):
        raise InputError(
            f"{path}: tensor {name} has {end - begin:,} bytes for the shape {shape} of {dtype} "
            f"({item * math.prod(shape):,} expected); the file is damaged: copy or download it again"
        )
    return dtype, shape, begin, end


_HF_LAYER_NORM = {"weight": "gamma", "bias": "beta"}
# Pretraining-head weights whose names do not follow the scope pattern.
_HF_HEAD_NAMES = {
    "cls.predictions.bias": "cls/predictions/output_bias",
    "cls.seq_relationship.weight": "cls/seq_relationship/output_weights",
    "cls.seq_relationship.bias": "cls/seq_relationship/output_bias",
}


def hf_name_to_tf1(name: str) -> tuple[str | None, bool]:
    """The TF1 name for a Hugging Face BERT weight (any `bert.` prefix removed), or None if it has none, and whether
    the Hugging Face layout is the transpose of TF1's (dense kernels)."""
    name = name.removeprefix("bert.")
    if name in _HF_HEAD_NAMES:
        return _HF_HEAD_NAMES[name], False
    parts = name.split(".")
    if parts[0] in ("embeddings", "encoder", "pooler"):
        parts[0] = "bert/" + parts[0]
    elif name.startswith("cls.predictions.transform."):
        pass
    else:
        return None, False
    joined = "/".join(parts)
    joined = re.sub(r"/layer/(\d+)/", r"/layer_\1/", joined)
    scope, _, last = joined.rpartition("/")
    if scope.endswith("LayerNorm"):  # older files already say gamma/beta
        return f"{scope}/{_HF_LAYER_NORM.get(last, last)}", False
    if scope.endswith("_embeddings") and last == "weight":
        return scope, False
    if last == "weight":
        return f"{scope}/kernel", True
    return joined, False


_TF1_HEAD_NAMES = {tf1: hf for hf, tf1 in _HF_HEAD_NAMES.items()}


def tf1_name_to_hf(name: str) -> str:
    """The Hugging Face key of a TF1 BERT weight name (the inverse of `hf_name_to_tf1`), so that errors about a
    Hugging Face file name the tensors as the user's file does; `BertForPreTraining` files add a `bert.` prefix."""
    if name in _TF1_HEAD_NAMES:
        return _TF1_HEAD_NAMES[name]
    name = re.sub(r"/layer_(\d+)/", r"/layer/\1/", name.removeprefix("bert/"))
    scope, _, last = name.rpartition("/")
    if scope.endswith("LayerNorm"):
        last = {"gamma": "weight", "beta": "bias"}.get(last, last)
    elif last == "kernel":
        last = "weight"
    elif last.endswith("_embeddings"):
        scope, last = name, "weight"
    return f"{scope}/{last}".replace("/", ".")


def _safetensors_file(path: str) -> str:
    is_dir = input_files.isdir(path)
    file = os.path.join(path, "model.safetensors") if is_dir else path
    if not input_files.exists(file):
        hint = ""
        if is_dir and input_files.exists(os.path.join(path, "pytorch_model.bin")):
            hint = (
                "; only model.safetensors is read: re-save with "
                "transformers' save_pretrained(..., safe_serialization=True)"
            )
        raise MissingInputError(f"No model.safetensors at {path}{hint}")
    return file


def hf_has_masked_lm_head(path: str) -> bool:
    """Whether Hugging Face BERT weights (`model.safetensors` or its folder) hold the masked-LM head; reads only
    the file's header."""
    file = _safetensors_file(path)
    with input_files.open_file(file, "rb") as f:
        try:
            (header_size,) = struct.unpack("<Q", f.read(8))
            names = json.loads(f.read(header_size))
        except (struct.error, ValueError) as e:
            raise InputError(f"{file} is not a safetensors file ({e})") from None
    return any((hf_name_to_tf1(name)[0] or "").startswith("cls/predictions/") for name in names)


def read_hf_weights(path: str) -> dict[str, np.ndarray]:
    """Reads Hugging Face BERT weights (`model.safetensors`, or the folder holding it) as TF1 names and layouts.

    Works with and without the `bert.` prefix (BertModel vs BertForPreTraining) and maps the `cls.*` pretraining
    heads. Tensors without a TF1 counterpart keep their Hugging Face name, so `assign_weights` can report them.
    The tied decoder (`cls.predictions.decoder.*`) is checked against the word embeddings and bias.
    """
    tensors = load_safetensors(_safetensors_file(path))
    weights, decoder = {}, {}
    for hf_name, value in tensors.items():
        bare = hf_name.removeprefix("bert.")
        if bare.endswith("position_ids"):
            continue  # a buffer (0..max_positions-1), not a weight
        if bare.startswith("cls.predictions.decoder."):
            decoder[bare] = value
            continue
        name, transpose = hf_name_to_tf1(hf_name)
        if name is None:
            weights[hf_name] = value
        else:
            weights[name] = value.T if transpose else value
    tied = {
        "cls.predictions.decoder.weight": "bert/embeddings/word_embeddings",
        "cls.predictions.decoder.bias": "cls/predictions/output_bias",
    }
    for hf_name, value in decoder.items():
        target = tied.get(hf_name)
        if target is None or target not in weights or not np.array_equal(weights[target], value):
            weights[f"{hf_name} (not tied to {target})"] = value
    return weights
