"""Model names on a hub, resolved to a local folder through the hub's own client and cache.

- `hf://org/name[@revision]`: a Hugging Face Hub model, through `huggingface_hub.snapshot_download` and its cache
  (`HF_HOME`, `HF_HUB_CACHE`), so that `HF_HUB_OFFLINE=1` with a warm cache works with no network. Only the files a
  BERT needs are fetched (config, safetensors weights, vocabulary, tokenizer settings; or a keras-hub preset's).
- `kaggle://owner/model/framework/variation[/version]`: a Kaggle model (keras-hub's presets live there), through
  `kagglehub.model_download` and its cache (`KAGGLEHUB_CACHE`). A versioned handle found in the cache needs no
  network; an unversioned one asks Kaggle for the latest version. A cache keras-hub's `from_preset` filled file by
  file (each file marked complete, the config and weights among them) is read as it is, with no network.
- a bare keras-hub preset name, `bert_base_en_uncased`, as `keras_hub.models.BertBackbone.from_preset` takes it:
  looked up in keras-hub's own preset registry (keras-hub installed) and read through its `kaggle://` handle as
  above (the registry's handles carry a version: a warm cache needs no network). A path that exists wins: a folder
  or checkpoint prefix `bert_base_en_uncased` in the working folder is read as that, never as the preset. Only
  BERT presets (those of `BertBackbone.presets`, its task presets included) are taken.

Both clients download into temporary names and publish a file (huggingface_hub) or a folder (kagglehub's
completion marker) only once it is whole, so nothing half-downloaded is used. A name that cannot be resolved is one
line: unknown on the hub, not cached while offline, or the hub unreachable. Anything else is returned unchanged.

Example:

    resolve("hf://google-bert/bert-base-uncased@main")   # -> ~/.cache/huggingface/hub/models--.../snapshots/<sha>
    resolve("bert_tiny_en_uncased")                      # -> ~/.cache/kagglehub/models/keras/bert/keras/.../3
"""

from __future__ import annotations

import difflib
import functools
import os
import re

from official.nlp.common import input_files
from official.nlp.common.errors import InputError, MissingInputError

HF_SCHEME = "hf://"
KAGGLE_SCHEME = "kaggle://"
# The files a BERT is read from: a Hugging Face folder's, or a keras-hub preset's (some hub repos hold one).
HF_FILES = [
    "config.json",
    "model.safetensors",
    "vocab.txt",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "model.weights.h5",
    "tokenizer.json",
    "preprocessor.json",
    "metadata.json",
    "assets/tokenizer/vocabulary.txt",
]
_HF_REPO = re.compile(r"[A-Za-z0-9][\w.\-]*(/[A-Za-z0-9][\w.\-]*)?")
# What keras-hub names its presets: lowercase words joined by underscores (`bert_base_en_uncased`,
# `bge_small_v1.5_en`). A name with a folder separator, a scheme or a checkpoint suffix is a path.
_PRESET_NAME = re.compile(r"[a-z0-9][a-z0-9.\-]*(_[a-z0-9.\-]+)+")


def is_hub_name(name: str | None) -> bool:
    return bool(name) and str(name).startswith((HF_SCHEME, KAGGLE_SCHEME))


def parse_hf(name: str) -> tuple[str, str | None]:
    """`(repo_id, revision)` of `hf://org/name[@revision]` (revision None: the default branch)."""
    rest = name[len(HF_SCHEME) :]
    repo, _, revision = rest.partition("@")
    if not _HF_REPO.fullmatch(repo) or (_ and not revision):
        raise InputError(
            f"{name}: not a Hugging Face model name; expected hf://org/name or hf://org/name@revision "
            "(a branch, tag or commit)"
        )
    return repo, revision or None


def parse_kaggle(name: str) -> tuple[str, int | None]:
    """`(handle, version)` of `kaggle://owner/model/framework/variation[/version]` (version None: the latest)."""
    parts = name[len(KAGGLE_SCHEME) :].strip("/").split("/")
    if len(parts) not in (4, 5) or not all(parts) or (len(parts) == 5 and not parts[4].isdigit()):
        raise InputError(
            f"{name}: not a Kaggle model handle; expected kaggle://owner/model/framework/variation[/version], "
            "e.g. kaggle://keras/bert/keras/bert_tiny_en_uncased/2"
        )
    return "/".join(parts), int(parts[4]) if len(parts) == 5 else None


def is_preset_name(name: str | None) -> bool:
    """Whether `name` could be a bare keras-hub preset name and is no path that exists (a path wins)."""
    return (
        isinstance(name, str)
        and bool(_PRESET_NAME.fullmatch(name))
        and not name.endswith((".ckpt", ".index", ".safetensors", ".json", ".txt", ".h5"))
        and not input_files.exists(name)
        and not input_files.exists(name + ".index")
    )


def resolve(name: str) -> str:
    """The local folder of a hub name or a bare keras-hub preset name (see the module docstring); any other path
    unchanged."""
    if is_preset_name(name):
        return _resolve_kaggle(preset_handle(name), shown=name)
    if not isinstance(name, str) or not is_hub_name(name):
        return name
    if name.startswith(HF_SCHEME):
        return _resolve_hf(name)
    return _resolve_kaggle(name)


@functools.lru_cache(maxsize=1)
def _keras_hub_presets() -> tuple[dict[str, str], dict[str, str]]:
    """keras-hub's registry: `({BERT preset name: kaggle handle}, {any other preset name: its model family})`."""
    import keras_hub

    bert = {name: entry["kaggle_handle"] for name, entry in keras_hub.models.BertBackbone.presets.items()}
    every = {**keras_hub.models.Task.presets, **keras_hub.models.Backbone.presets}  # all families' presets
    others = {
        name: (entry.get("metadata") or {}).get("path") or "non-BERT"
        for name, entry in every.items()
        if name not in bert
    }
    return bert, others


def preset_handle(name: str) -> str:
    """The `kaggle://` handle keras-hub's registry gives the BERT preset `name` (see the module docstring)."""
    try:
        bert, others = _keras_hub_presets()
    except ImportError:
        raise MissingInputError(
            f"{name}: no such file or folder, and keras-hub, whose registry knows preset names such as "
            "bert_base_en_uncased, is not installed (pip install keras-hub); give a path or a kaggle:// handle"
        ) from None
    if name in bert:
        return bert[name]
    if name in others:
        raise InputError(
            f"{name}: a keras-hub preset of a {others[name]} model, not a BERT; this library reads BERT presets "
            f"(keras_hub.models.BertBackbone.presets: {', '.join(sorted(bert)[:3])}, ...)"
        )
    close = difflib.get_close_matches(name, list(bert), n=1)
    hint = f"did you mean {close[0]}? " if close else ""
    raise MissingInputError(
        f"{name}: no such file or folder, and not a keras-hub BERT preset name; {hint}give a model directory, a "
        "checkpoint, or a name of keras_hub.models.BertBackbone.presets such as bert_base_en_uncased"
    )


def _resolve_hf(name: str) -> str:
    repo, revision = parse_hf(name)
    import huggingface_hub
    from huggingface_hub import constants, errors

    try:
        folder = huggingface_hub.snapshot_download(repo, revision=revision, allow_patterns=HF_FILES)
    except errors.RevisionNotFoundError:
        raise InputError(f"{name}: the Hugging Face Hub has no revision {revision!r} of {repo}") from None
    except (errors.RepositoryNotFoundError, errors.GatedRepoError) as e:
        reason = (
            "is gated: accept its terms and log in (hf auth login)"
            if isinstance(e, errors.GatedRepoError)
            else ("does not exist, or is private (log in with hf auth login)")
        )
        raise InputError(f"{name}: the Hugging Face model {repo} {reason}") from None
    except errors.LocalEntryNotFoundError:
        offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on")
        why = "HF_HUB_OFFLINE is set" if offline else "the Hugging Face Hub cannot be reached"
        raise MissingInputError(
            f"{name}: not in the Hugging Face cache ({constants.HF_HUB_CACHE}) and {why}; "
            "download it once with network, or name a local folder"
        ) from None
    except (errors.HfHubHTTPError, OSError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise InputError(f"{name}: downloading from the Hugging Face Hub failed ({first}); try again") from None
    if not os.path.exists(os.path.join(folder, "config.json")):
        raise InputError(f"{name}: {repo} has no config.json: not a BERT model folder or keras-hub preset")
    if not any(os.path.exists(os.path.join(folder, w)) for w in ("model.safetensors", "model.weights.h5")):
        raise MissingInputError(
            f"{name}: the cached snapshot {folder} has no model.safetensors (or model.weights.h5): {repo} has no "
            "safetensors weights, or an earlier download stopped; run again with network"
        )
    return folder


def _resolve_kaggle(name: str, shown: str | None = None) -> str:
    """`name` a `kaggle://` handle; `shown`, what the user wrote when it is a preset name (then named in errors
    with its handle)."""
    handle, version = parse_kaggle(name)
    name = f"{shown} ({name})" if shown else name
    try:
        import kagglehub
    except ImportError:
        raise InputError(f"{name}: kaggle:// names need the kagglehub package (pip install kagglehub)") from None
    if version is not None and _files_cached(handle):
        return kaggle_cache_folder(handle)
    try:
        return kagglehub.model_download(handle)
    except Exception as e:  # kagglehub raises its own, requests' and OSError; each becomes one line
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        pin = "" if version is not None else " (a handle without /version asks Kaggle for the latest: pin one)"
        raise MissingInputError(
            f"{name}: not in the kagglehub cache ({kaggle_cache_folder(handle)}) and downloading failed "
            f"({type(e).__name__}: {first}){pin}"
        ) from None


# The files of a keras-hub preset: the backbone's (needed), the tokenizer's and a task's (a classifier's head).
KAGGLE_REQUIRED_FILES = ("config.json", "model.weights.h5")
KAGGLE_PRESET_FILES = (
    *KAGGLE_REQUIRED_FILES,
    "tokenizer.json",
    "assets/tokenizer/vocabulary.txt",
    "preprocessor.json",
    "metadata.json",
    "task.json",
    "task.weights.h5",
)


def _files_cached(handle: str) -> bool:
    """Whether the cache holds the preset file by file, each marked complete, as keras-hub's own `from_preset`
    leaves it (it fetches `model_download(handle, path)` per file): its needed files, and no preset file there
    without its marker (a download cut short)."""
    import kagglehub.cache
    from kagglehub.handle import parse_model_handle

    model, store = parse_model_handle(handle), kagglehub.cache.Cache()
    if store.load_from_cache(model) is not None:
        return False  # the whole model is cached: model_download returns it without the network
    marked = {path: store.load_from_cache(model, path) is not None for path in KAGGLE_PRESET_FILES}
    present = {path: os.path.exists(store.get_path(model, path)) for path in KAGGLE_PRESET_FILES}
    return all(marked[p] for p in KAGGLE_REQUIRED_FILES) and all(marked[p] for p in present if present[p])


def kaggle_cache_folder(handle: str) -> str:
    """Where kagglehub keeps a model handle's files (its own cache layout, from its own helper)."""
    from kagglehub import cache
    from kagglehub.handle import parse_model_handle

    return cache.Cache().get_path(parse_model_handle(handle))
