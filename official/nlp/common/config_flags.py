"""Command-line flags derived from a job's config dataclass: one flag per field, named after the field.

A job's settings are one dataclass (`PretrainingConfig`, `ClassifierConfig`, ...). Its script defines its flags
with `define_flags` and reads them back with `config_from_flags`, so the script and the Python API cannot drift,
and a field's help is written once, beside the field:

    @dataclasses.dataclass
    class JobConfig:
        input_file: str = config_flags.field(help="Text files: comma-separated paths or globs.")   # required
        mode: str = config_flags.field("fast", help="How to run.", enum=["fast", "exact"])
        layers: Sequence[int] = config_flags.field((-1, -2), help="Encoder layers (-1 is the last).")

    config_flags.define_flags(FLAGS, JobConfig)              # --input_file, --mode, --layers
    config = config_flags.config_from_flags(FLAGS, JobConfig)

The flag's kind comes from the field's annotation (`bool`, `int`, `float`, `str`, each optionally `| None`; a
`list`/`tuple`/`Sequence` of `str`, `int` or `float` is a comma-separated list flag) and its metadata:

- ``help`` (required): the flag's help text;
- ``enum``: the allowed values (an enum flag);
- ``lower_bound``: the smallest value of a number flag;
- ``flag=False``: the field has no flag (a Python-only value, such as an object).

A field without a default is required: its flag defaults to None and `config_from_flags` refuses a command line
without it, naming the flag (`InputError`). A field whose default is None stays None unless the flag is given
(e.g. `--do_lower_case`, whose default is the case stored with the model).
"""

from __future__ import annotations

import collections.abc
import dataclasses
import functools
import types
import typing
from collections.abc import Sequence
from typing import Any

from absl import flags

from official.nlp.common.errors import InputError

# The flags belong to the module that calls `define_flags` (a script's `--help` lists its own flags).
flags.disclaim_key_flags()

_SCALARS = (bool, int, float, str)
_LISTS = (list, tuple, collections.abc.Sequence)


def field(
    default: Any = dataclasses.MISSING,
    *,
    help: str,
    enum: Sequence[str] | None = None,
    lower_bound: float | None = None,
    flag: bool = True,
    kw_only: Any = dataclasses.MISSING,
):
    """A `dataclasses.field` whose metadata carries its flag's help (and `enum`, `lower_bound`, `flag`).

    Without `default` the field is required. A list default (mutable) gives each instance a copy.
    """
    metadata = {"help": help}
    if enum is not None:
        metadata["enum"] = list(enum)
    if lower_bound is not None:
        metadata["lower_bound"] = lower_bound
    if not flag:
        metadata["flag"] = False
    return _field(default, metadata, kw_only)


def _field(default: Any, metadata: dict, kw_only: Any):
    if isinstance(default, list):
        return dataclasses.field(default_factory=functools.partial(list, default), metadata=metadata, kw_only=kw_only)
    return dataclasses.field(default=default, metadata=metadata, kw_only=kw_only)


def override(config_class: type, name: str, default: Any):
    """The field `name` of `config_class` with another default, for a subclass: same help, enum and bounds.

    keep_checkpoint_max: int = config_flags.override(TrainingConfig, "keep_checkpoint_max", 1)
    """
    base = {f.name: f for f in dataclasses.fields(config_class)}[name]
    return _field(default, base.metadata, base.kw_only)


def flag_fields(config_class: type) -> list[dataclasses.Field]:
    """The fields of `config_class` that have a flag."""
    return [f for f in dataclasses.fields(config_class) if f.metadata.get("flag", True)]


def _kind(config_class: type, f: dataclasses.Field) -> tuple[type, type | None]:
    """`(scalar type, None)` or `(list type, element type)` of the field's annotation, `X | None` unwrapped."""
    hint = typing.get_type_hints(config_class)[f.name]
    args = [a for a in typing.get_args(hint) if a is not type(None)] if _is_union(hint) else [hint]
    for arg in args:  # `str | Sequence[str]` (one string or a list, from Python) is a string flag
        if arg in _SCALARS:
            return arg, None
    for arg in args:
        origin = typing.get_origin(arg)
        if origin in _LISTS:
            element = typing.get_args(arg)[0] if typing.get_args(arg) else str
            if element in (str, int, float):
                return origin, element
    raise TypeError(
        f"{config_class.__name__}.{f.name}: {hint} has no flag type (bool, int, float, str, or a list "
        "of str, int or float); give it one, or mark it flag=False"
    )


def _is_union(hint) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType)


def _required(f: dataclasses.Field) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None  # required


def define_flags(flag_values: flags.FlagValues, config_class: type, **default_overrides) -> None:
    """Defines one flag per field of `config_class` (see the module docstring); `default_overrides` replace the
    defaults of the named fields (a script's usual value)."""
    names = {f.name for f in flag_fields(config_class)}
    unknown = sorted(set(default_overrides) - names)
    if unknown:
        raise TypeError(f"{config_class.__name__} has no flag field {unknown}")
    for f in flag_fields(config_class):
        help_text = f.metadata.get("help")
        if not help_text:
            raise TypeError(
                f"{config_class.__name__}.{f.name} has no help: give it metadata={{'help': ...}} (config_flags.field)"
            )
        if _required(f):
            help_text += " (required)"
        default = default_overrides.get(f.name, _default(f))
        kind, element = _kind(config_class, f)
        common = dict(flag_values=flag_values)
        bounds = {"lower_bound": f.metadata["lower_bound"]} if "lower_bound" in f.metadata else {}
        if "enum" in f.metadata:
            flags.DEFINE_enum(f.name, default, f.metadata["enum"], help_text, **common)
        elif element is not None:
            flags.DEFINE_list(f.name, None if default is None else [str(v) for v in default], help_text, **common)
        elif kind is bool:
            flags.DEFINE_bool(f.name, default, help_text, **common)
        elif kind is int:
            flags.DEFINE_integer(f.name, default, help_text, **bounds, **common)
        elif kind is float:
            flags.DEFINE_float(f.name, default, help_text, **bounds, **common)
        else:
            flags.DEFINE_string(f.name, default, help_text, **common)


def config_from_flags(flag_values: flags.FlagValues, config_class: type, **values):
    """The `config_class` of parsed flags (`values` given from Python, e.g. an object, fill fields without flags).

    Raises `InputError` naming a required flag that is missing or a list flag with a value of the wrong type.
    """
    missing = []
    for f in flag_fields(config_class):
        value = flag_values[f.name].value
        if _required(f) and value in (None, ""):
            missing.append(f"--{f.name}")
            continue
        kind, element = _kind(config_class, f)
        if element is not None and value is not None:
            try:
                value = (list if kind is list else tuple)(element(v) for v in value)
            except ValueError:
                raise InputError(
                    f"--{f.name}={','.join(value)!r}: write comma-separated {element.__name__} values"
                ) from None
        values[f.name] = value
    if missing:
        raise InputError(f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} required")
    return config_class(**values)
