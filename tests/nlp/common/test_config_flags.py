"""config_flags: flags derived from a config dataclass (kinds, enums, lists, None defaults, required fields, help
from the field's metadata, default overrides) and read back into the dataclass."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import pytest
from absl import flags

from official.nlp.common import config_flags
from official.nlp.common.config_flags import field, override
from official.nlp.common.errors import InputError


@dataclasses.dataclass(kw_only=True)
class Base:
    rate: float = field(0.5, help="A rate.")
    steps: int = field(10, lower_bound=1, help="Steps.")


@dataclasses.dataclass
class Job(Base):
    input_file: str = field(help="Input.")
    mode: str = field("fast", enum=["fast", "exact"], help="How.")
    verbose: bool = field(False, help="Talk.")
    lower: bool | None = field(None, help="Case (default: the model's).")
    stride: int | None = field(None, help="Stride.")
    labels: Sequence[str] | None = field(None, help="Labels.")
    layers: Sequence[int] = field((-1, -2), help="Layers.")
    weights: list[float] = field([1.0, 2.0], help="Weights.")
    obj: object = field(None, flag=False, help="From Python only.")
    steps: int = override(Base, "steps", 20)


def parse(config_class, *argv, **overrides):
    values = flags.FlagValues()
    config_flags.define_flags(values, config_class, **overrides)
    values(["prog", *argv])
    return values


def test_kinds_defaults_and_help_come_from_the_fields():
    values = parse(Job, "--input_file=x")
    kinds = {name: values[name].flag_type() for name in values}
    assert kinds["rate"] == "float" and kinds["steps"] == "int" and kinds["verbose"] == "bool"
    assert kinds["input_file"] == "string" and kinds["stride"] == "int" and kinds["lower"] == "bool"
    assert values["mode"].parser.enum_values == ["fast", "exact"]
    assert kinds["labels"] == kinds["layers"] == "comma separated list of strings"
    assert "obj" not in values
    assert values["rate"].help == "A rate." and values["mode"].help == "<fast|exact>: How."
    assert values["input_file"].help == "Input. (required)"
    config = config_flags.config_from_flags(values, Job)
    assert config == Job(input_file="x")  # every default as the dataclass has it, the subclass's override included
    assert config.steps == 20 and config.layers == (-1, -2) and config.weights == [1.0, 2.0]
    assert config.lower is None and config.stride is None and config.labels is None


def test_values_from_the_command_line():
    values = parse(
        Job,
        "--input_file=x",
        "--rate=0.25",
        "--steps=3",
        "--mode=exact",
        "--verbose",
        "--nolower",
        "--stride=7",
        "--labels=O,B-PER",
        "--layers=-1,-3,-5",
        "--weights=0.5",
    )
    config = config_flags.config_from_flags(values, Job, obj="python object")
    assert config == Job(
        input_file="x",
        rate=0.25,
        steps=3,
        mode="exact",
        verbose=True,
        lower=False,
        stride=7,
        labels=("O", "B-PER"),
        layers=(-1, -3, -5),
        weights=[0.5],
        obj="python object",
    )


def test_enums_and_bounds_are_checked_by_absl():
    with pytest.raises(flags.IllegalFlagValueError):
        parse(Job, "--input_file=x", "--mode=slow")
    with pytest.raises(flags.IllegalFlagValueError):
        parse(Job, "--input_file=x", "--steps=0")


def test_a_list_of_numbers_names_its_flag():
    values = parse(Job, "--input_file=x", "--layers=-1,last")
    with pytest.raises(InputError, match=r"--layers='-1,last': write comma-separated int values"):
        config_flags.config_from_flags(values, Job)


@pytest.mark.parametrize("argv", [(), ("--input_file=",)])
def test_a_required_field_is_a_user_error_naming_the_flag(argv):
    values = parse(Job, *argv)
    with pytest.raises(InputError, match=r"^--input_file is required$"):
        config_flags.config_from_flags(values, Job)


def test_default_overrides():
    values = parse(Job, "--input_file=x", rate=0.75, layers=(3,))
    assert values["rate"].default == 0.75
    config = config_flags.config_from_flags(values, Job)
    assert config.rate == 0.75 and config.layers == (3,)
    with pytest.raises(TypeError, match="no flag field"):
        parse(Job, rates=1.0)


def test_a_field_without_help_is_refused_at_definition():
    @dataclasses.dataclass
    class NoHelp:
        size: int = dataclasses.field(default=1, metadata={"other": 1})

    with pytest.raises(TypeError, match=r"NoHelp.size has no help"):
        config_flags.define_flags(flags.FlagValues(), NoHelp)


def test_a_field_without_a_flag_type_is_refused_at_definition():
    @dataclasses.dataclass
    class Unflaggable:
        table: dict = field(None, help="A table.")

    with pytest.raises(TypeError, match=r"Unflaggable.table: .* has no flag type"):
        config_flags.define_flags(flags.FlagValues(), Unflaggable)


def test_plain_metadata_works_too():
    @dataclasses.dataclass
    class Plain:
        kind: str = dataclasses.field(default="a", metadata={"help": "Kind.", "enum": ["a", "b"]})

    values = parse(Plain, "--kind=b")
    assert config_flags.config_from_flags(values, Plain) == Plain(kind="b")


def test_the_flags_belong_to_the_caller():
    values = flags.FlagValues()
    config_flags.define_flags(values, Base)
    assert {f.name for f in values.flags_by_module_dict()[__name__]} == {"rate", "steps"}
