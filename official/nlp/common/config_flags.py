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
- ``minimum``, ``exclusive_minimum``, ``maximum``, ``exclusive_maximum``: the range of a number field, stated in
  its flag's help (``(range: >= 1)``); a field that is None (``max_train_examples``: all) is not checked;
- ``path``: the field is a path the user names, one of `PATH_KINDS`: ``"path"`` (a file, folder or checkpoint
  prefix), ``"paths"`` (comma-separated ones) or ``"patterns"`` (comma-separated paths and glob patterns);
- ``flag=False``: the field has no flag (a Python-only value, such as an object).

A field without a default is required: its flag defaults to None and `config_from_flags` refuses a command line
without it, naming the flag (`InputError`). A field whose default is None stays None unless the flag is given
(e.g. `--do_lower_case`, whose default is the case stored with the model).

**Checked on construction.** A config that subclasses `CheckedConfig` applies each field's rule when it is made,
from flags or from Python (`check_fields`): a value must be of the field's declared type (a `bool` is True or
False, not the string "false"; an `int` is not a bool; None only where the annotation allows it; a list is a list
or tuple, not a bare string) and one of its ``enum`` values, a number must be finite and in its range, ``~`` at
the start of a local path is the user's home folder (bash leaves it as it is after ``--flag=``), and a path (not a
pattern) must not hold a character that TensorFlow reads as a glob pattern (`input_files.check_no_glob`). A NumPy
number is kept as Python's. Every problem is named in one `InputError` (``--learning_rate=inf: must be a finite
number``, ``--keep_headings='false': must be True or False; got a str``).
"""

from __future__ import annotations

import collections.abc
import dataclasses
import functools
import math
import numbers
import os
import types
import typing
from collections.abc import Sequence
from typing import Any

from absl import flags

from official.nlp.common import input_files
from official.nlp.common.errors import InputError

# The flags belong to the module that calls `define_flags` (a script's `--help` lists its own flags).
flags.disclaim_key_flags()

_SCALARS = (bool, int, float, str)
_LISTS = (list, tuple, collections.abc.Sequence)
PATH_KINDS = ("path", "paths", "patterns")


def field(
    default: Any = dataclasses.MISSING,
    *,
    help: str,
    enum: Sequence[str] | None = None,
    minimum: float | None = None,
    exclusive_minimum: float | None = None,
    maximum: float | None = None,
    exclusive_maximum: float | None = None,
    path: str | None = None,
    flag: bool = True,
    kw_only: Any = dataclasses.MISSING,
):
    """A `dataclasses.field` whose metadata carries its flag's help (and `enum`, the range, `path`, `flag`).

    Without `default` the field is required. A list default (mutable) gives each instance a copy.
    """
    metadata = {"help": help}
    if enum is not None:
        metadata["enum"] = list(enum)
    bounds = dict(
        minimum=minimum, exclusive_minimum=exclusive_minimum, maximum=maximum, exclusive_maximum=exclusive_maximum
    )
    metadata.update({name: bound for name, bound in bounds.items() if bound is not None})
    if path is not None:
        if path not in PATH_KINDS:
            raise TypeError(f"path={path!r}: one of {PATH_KINDS}")
        metadata["path"] = path
    if not flag:
        metadata["flag"] = False
    return _field(default, metadata, kw_only)


def _field(default: Any, metadata: dict, kw_only: Any):
    if isinstance(default, list):
        return dataclasses.field(default_factory=functools.partial(list, default), metadata=metadata, kw_only=kw_only)
    return dataclasses.field(default=default, metadata=metadata, kw_only=kw_only)


def override(config_class: type, name: str, default: Any):
    """The field `name` of `config_class` with another default, for a subclass: same help, enum, range and path.

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
            if _is_union(element) and str in typing.get_args(element):  # `Sequence[int | str]`: strings
                element = str
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


def describe_range(f: dataclasses.Field) -> str | None:
    """The range of a number field in words (``>= 1``, ``in (0, 1]``), or None when it has none."""
    meta = f.metadata
    low = ("[", meta["minimum"]) if "minimum" in meta else ("(", meta.get("exclusive_minimum"))
    high = ("]", meta["maximum"]) if "maximum" in meta else (")", meta.get("exclusive_maximum"))
    if low[1] is not None and high[1] is not None:
        return f"in {low[0]}{low[1]}, {high[1]}{high[0]}"
    if low[1] is not None:
        return f"{'>=' if low[0] == '[' else '>'} {low[1]}"
    if high[1] is not None:
        return f"{'<=' if high[0] == ']' else '<'} {high[1]}"
    return None


def flag_help(f: dataclasses.Field) -> str:
    """The help of a field's flag: its text, then its range and whether it is required."""
    text = f.metadata["help"]
    described = describe_range(f)
    if described:
        text += f" (range: {described})"
    if _required(f):
        text += " (required)"
    return text


def _in_range(f: dataclasses.Field, value: float) -> bool:
    meta = f.metadata
    return (
        ("minimum" not in meta or value >= meta["minimum"])
        and ("exclusive_minimum" not in meta or value > meta["exclusive_minimum"])
        and ("maximum" not in meta or value <= meta["maximum"])
        and ("exclusive_maximum" not in meta or value < meta["exclusive_maximum"])
    )


def _number_problem(f: dataclasses.Field, value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    if not math.isfinite(value):
        return f"--{f.name}={value}: must be a finite number"
    if not _in_range(f, value):
        return f"--{f.name}={value}: must be {describe_range(f)}"
    return None


def _checked_path(f: dataclasses.Field, value: Any) -> tuple[Any, list[str]]:
    """`value` with ``~`` expanded in each of its local paths, and the problems of its paths."""
    kind = f.metadata["path"]
    if isinstance(value, os.PathLike):  # a `pathlib.Path` from Python
        value = os.fspath(value)
    one = isinstance(value, str)
    parts = ([value] if kind == "path" else value.split(",")) if one else [os.fspath(p) for p in value]
    expanded = [input_files.expand_user(p if kind == "path" else p.strip()) for p in parts]
    problems = []
    if kind != "patterns":
        for part in expanded:
            try:
                input_files.check_no_glob(part, name=f"--{f.name}")
            except InputError as e:
                problems.append(str(e))
    if not one:
        return type(value)(expanded) if isinstance(value, (list, tuple)) else expanded, problems
    return (expanded[0] if kind == "path" else ",".join(expanded)), problems


def _matches(value: Any, hint: Any, path: bool) -> bool:
    """Whether `value` is of the declared type `hint` (a path field's strings may be `os.PathLike` too)."""
    if hint is Any:
        return True
    if _is_union(hint):
        return any(_matches(value, arg, path) for arg in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, numbers.Real) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str) or (path and isinstance(value, os.PathLike))
    if typing.get_origin(hint) in _LISTS:  # a list or tuple: a bare string is one value, not a list of them
        element = (typing.get_args(hint) or (Any,))[0]
        return isinstance(value, (list, tuple)) and all(_matches(v, element, path) for v in value)
    if isinstance(hint, type):
        return isinstance(value, hint)
    return True  # an annotation these checks do not know (a field without a flag)


def _describe(hint: Any, path: bool, plural: bool = False) -> str:
    """`hint` in words: what a field of that type allows (`plural`: as the elements of a list)."""
    if _is_union(hint):
        return " or ".join(_describe(arg, path, plural) for arg in typing.get_args(hint))
    if typing.get_origin(hint) in _LISTS:
        return f"a list of {_describe((typing.get_args(hint) or (str,))[0], path, plural=True)}"
    words = {
        type(None): ("None", "None"),
        bool: ("True or False", "bools"),
        int: ("an integer", "integers"),
        float: ("a number", "numbers"),
        str: ("a path (a string)", "paths (strings)") if path else ("a string", "strings"),
    }
    if hint in words:
        return words[hint][plural]
    return getattr(hint, "__name__", str(hint))


def _type_problem(config: Any, f: dataclasses.Field, value: Any) -> str | None:
    """What is wrong with `value` for the declared type of field `f` and its allowed values (`enum`), or None."""
    hint = typing.get_type_hints(type(config))[f.name]
    if not _matches(value, hint, "path" in f.metadata):
        if value is None and _required(f):
            return f"--{f.name} is required: give {_describe(hint, 'path' in f.metadata)}"
        return f"--{f.name}={value!r}: must be {_describe(hint, 'path' in f.metadata)}; got a {type(value).__name__}"
    if "enum" in f.metadata and value is not None and value not in f.metadata["enum"]:
        return f"--{f.name}={value!r}: must be one of {', '.join(map(str, f.metadata['enum']))}"
    return None


def _plain_number(value: Any) -> Any:
    """A NumPy integer or float as Python's (configs are written as JSON); anything else as it is."""
    if isinstance(value, numbers.Integral) and type(value) not in (bool, int):
        return int(value)
    if isinstance(value, numbers.Real) and type(value) not in (bool, int, float):
        return float(value)
    return value


def check_fields(config: Any) -> None:
    """Applies each field's rule to `config` (see the module docstring): refuses a value that is not of the field's
    declared type or not one of its `enum` values, expands ``~`` in its local paths, and raises one `InputError`
    naming every such value, every number out of its range or not finite and every path with a glob character."""
    problems = []
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        problem = _type_problem(config, f, value)
        if problem:
            problems.append(problem)
            continue
        if value is None:
            continue
        if _plain_number(value) is not value:
            value = _plain_number(value)
            setattr(config, f.name, value)
        if "path" in f.metadata:
            value, found = _checked_path(f, value)
            setattr(config, f.name, value)
            problems += found
        else:
            problem = _number_problem(f, value)
            if problem:
                problems.append(problem)
    if problems:
        raise InputError("; ".join(problems))


class CheckedConfig:
    """The base of a job's config dataclass: its fields' rules are applied when it is made (`check_fields`), from
    flags or from Python, so that a bad number or path is refused before any work."""

    def __post_init__(self) -> None:
        check_fields(self)


def define_flags(flag_values: flags.FlagValues, config_class: type, **default_overrides) -> None:
    """Defines one flag per field of `config_class` (see the module docstring); `default_overrides` replace the
    defaults of the named fields (a script's usual value)."""
    names = {f.name for f in flag_fields(config_class)}
    unknown = sorted(set(default_overrides) - names)
    if unknown:
        raise TypeError(f"{config_class.__name__} has no flag field {unknown}")
    for f in flag_fields(config_class):
        if not f.metadata.get("help"):
            raise TypeError(
                f"{config_class.__name__}.{f.name} has no help: give it metadata={{'help': ...}} (config_flags.field)"
            )
        help_text = flag_help(f)
        default = default_overrides.get(f.name, _default(f))
        kind, element = _kind(config_class, f)
        common = dict(flag_values=flag_values)
        if "enum" in f.metadata:
            flags.DEFINE_enum(f.name, default, f.metadata["enum"], help_text, **common)
        elif element is not None:
            flags.DEFINE_list(f.name, None if default is None else [str(v) for v in default], help_text, **common)
        elif kind is bool:
            flags.DEFINE_bool(f.name, default, help_text, **common)
        elif kind is int:
            flags.DEFINE_integer(f.name, default, help_text, **common)
        elif kind is float:
            flags.DEFINE_float(f.name, default, help_text, **common)
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
