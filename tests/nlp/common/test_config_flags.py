"""config_flags: flags derived from a config dataclass (kinds, enums, lists, None defaults, required fields, help
from the field's metadata, default overrides) and read back into the dataclass; each field's rule (a number's
range, finite numbers, ``~`` and glob characters in paths) applied when the config is made."""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Sequence

import pytest
from absl import flags

from official.nlp.common import config_flags
from official.nlp.common.config_flags import field, override
from official.nlp.common.errors import InputError


@dataclasses.dataclass(kw_only=True)
class Base(config_flags.CheckedConfig):
    rate: float = field(0.5, help="A rate.")
    steps: int = field(10, minimum=1, help="Steps.")


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


def test_enums_are_checked_by_absl():
    with pytest.raises(flags.IllegalFlagValueError):
        parse(Job, "--input_file=x", "--mode=slow")


@dataclasses.dataclass
class Ranges(config_flags.CheckedConfig):
    count: int | None = field(None, minimum=1, help="How many (default: all).")
    share: float = field(0.5, minimum=0, maximum=1, help="A share.")
    prob: float = field(0.5, exclusive_minimum=0, maximum=1, help="A probability.")
    dropout: float = field(0.1, minimum=0, exclusive_maximum=1, help="Dropout.")
    limit: int = field(3, maximum=10, help="At most ten.")
    anything: float = field(0.0, help="Any finite number.")


def test_a_range_is_in_the_help_and_checked_from_flags_and_from_python():
    """Issue 30: `--max_train_examples=0` trained on everything and -3 on all but the last 3 (a Python slice)."""
    values = parse(Ranges)
    assert values["count"].help == "How many (default: all). (range: >= 1)"
    assert values["share"].help == "A share. (range: in [0, 1])"
    assert values["prob"].help == "A probability. (range: in (0, 1])"
    assert values["dropout"].help == "Dropout. (range: in [0, 1))"
    assert values["limit"].help == "At most ten. (range: <= 10)"
    assert values["anything"].help == "Any finite number."
    assert config_flags.config_from_flags(values, Ranges) == Ranges()  # None is "all", not checked
    for argv, message in [
        (["--count=0"], "--count=0: must be >= 1"),
        (["--count=-3"], "--count=-3: must be >= 1"),
        (["--share=1.5"], r"--share=1.5: must be in \[0, 1\]"),
        (["--prob=0"], r"--prob=0.0: must be in \(0, 1\]"),
        (["--dropout=1"], r"--dropout=1.0: must be in \[0, 1\)"),
        (["--limit=11"], "--limit=11: must be <= 10"),
    ]:
        with pytest.raises(InputError, match=f"^{message}$"):
            config_flags.config_from_flags(parse(Ranges, *argv), Ranges)
    # The edges are in, and the same rule holds from Python, every problem named at once.
    Ranges(count=1, share=0, prob=1, dropout=0, limit=10)
    with pytest.raises(InputError, match=r"^--count=0: must be >= 1; --limit=11: must be <= 10$"):
        Ranges(count=0, limit=11)


@pytest.mark.parametrize("value", ["inf", "-inf", "nan"])
def test_a_number_must_be_finite(value):
    """Issue 30: `--learning_rate=inf` was accepted and `--num_train_epochs=nan` crashed converting NaN to int."""
    for name in ("anything", "share"):
        with pytest.raises(InputError, match=f"^--{name}={value}: must be a finite number$"):
            config_flags.config_from_flags(parse(Ranges, f"--{name}={value}"), Ranges)


@dataclasses.dataclass
class Paths(config_flags.CheckedConfig):
    output_dir: str = field(path="path", help="A folder.")
    vocab_file: str | None = field(None, path="path", help="A file.")
    output_file: str | Sequence[str] = field("out.tfrecord", path="paths", help="Comma-separated files.")
    input_file: str | Sequence[str] = field("in.txt", path="patterns", help="Comma-separated paths and globs.")


def test_a_leading_tilde_is_the_home_folder_of_local_paths(monkeypatch, tmp_path):
    """Issue 30: bash leaves `~` as it is after `--output_file=`, which wrote into a folder named `~`, and
    `--data_dir=~/data` said the folder does not exist."""
    monkeypatch.setenv("HOME", str(tmp_path))
    values = parse(
        Paths, "--output_dir=~/run", "--vocab_file=~", "--output_file=~/a.tfrecord,b", "--input_file=~/c/*.txt, ~/d"
    )
    config = config_flags.config_from_flags(values, Paths)
    assert config.output_dir == f"{tmp_path}/run" and config.vocab_file == str(tmp_path)
    assert config.output_file == f"{tmp_path}/a.tfrecord,b"
    assert config.input_file == f"{tmp_path}/c/*.txt,{tmp_path}/d"
    from_python = Paths(output_dir="gs://bucket/~/run", output_file=["~/x", "ram://~y"], input_file=("~/z",))
    assert from_python.output_dir == "gs://bucket/~/run"  # not a local path: left as it is
    assert from_python.output_file == [f"{tmp_path}/x", "ram://~y"] and from_python.input_file == (f"{tmp_path}/z",)
    assert Paths(output_dir="a~b/~").output_dir == "a~b/~"  # only a leading ~ is the home folder
    assert Paths(output_dir=tmp_path / "run", output_file=[tmp_path / "x"]).output_dir == f"{tmp_path}/run"
    assert os.path.expanduser("~") == str(tmp_path)


@pytest.mark.parametrize("character", ["[", "*", "?", "\\"])
def test_a_path_with_a_glob_character_is_refused_naming_it(character):
    """Issue 30: TensorFlow's checkpoint and SavedModel readers match a path as a pattern (see
    tests/nlp/common/test_glob_paths.py); a pattern field keeps its glob characters."""
    name = f"out {character}9]"
    for field_name in ("output_dir", "vocab_file", "output_file"):
        message = f"^--{field_name}='.*': TensorFlow reads {re.escape(repr(character))} in a path as a glob"
        with pytest.raises(InputError, match=message):
            Paths(**{"output_dir": "o", field_name: f"/tmp/{name}"})
    assert Paths(output_dir="o", input_file=f"/tmp/{name}/*.txt").input_file == f"/tmp/{name}/*.txt"


def test_a_closing_bracket_alone_is_no_pattern():
    assert Paths(output_dir="out 9]").output_dir == "out 9]"


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


@dataclasses.dataclass
class Typed(config_flags.CheckedConfig):
    output_file: str | Sequence[str] = field(path="paths", help="Required files.")
    flag: bool = field(False, help="A bool.")
    maybe: bool | None = field(None, help="A bool or the default.")
    count: int = field(0, minimum=0, help="A count.")
    rate: float = field(0.5, help="A rate.")
    name: str = field("x", help="A name.")
    model_dir: str | None = field(None, path="path", help="A folder.")
    tags: Sequence[str] | None = field(None, help="Tags.")
    layers: Sequence[int | str] = field((-1,), help="Layers.")
    mode: str = field("fast", enum=["fast", "exact"], help="How.")
    choice: str | None = field(None, enum=["a", "b"], help="A choice (default: none).")


@pytest.mark.parametrize(
    "values, message",
    [
        # Issue 40: CorpusConfig(keep_headings="false") kept the headings, num_workers="2" and output_file=None
        # raised TypeErrors deep inside the job.
        (dict(flag="false"), "--flag='false': must be True or False; got a str"),
        (dict(flag=0), "--flag=0: must be True or False; got a int"),
        (dict(maybe="yes"), "--maybe='yes': must be True or False or None; got a str"),
        (dict(count="2"), "--count='2': must be an integer; got a str"),
        (dict(count=True), "--count=True: must be an integer; got a bool"),
        (dict(count=2.0), "--count=2.0: must be an integer; got a float"),
        (dict(rate="0.1"), "--rate='0.1': must be a number; got a str"),
        (dict(name=None), "--name=None: must be a string; got a NoneType"),
        (dict(output_file=None), r"--output_file is required: give a path \(a string\) or a list of paths"),
        (dict(output_file=[1]), r"--output_file=\[1\]: must be a path \(a string\) or a list of paths"),
        (dict(model_dir=3), r"--model_dir=3: must be a path \(a string\) or None; got a int"),
        (dict(tags="O,B-PER"), "--tags='O,B-PER': must be a list of strings or None; got a str"),
        (dict(layers=[1.5]), r"--layers=\[1.5\]: must be a list of integers or strings; got a list"),
        # Issue 42: the enum fields were checked by hand in each job, or not at all.
        (dict(mode="slow"), "--mode='slow': must be one of fast, exact"),
        (dict(choice="c"), "--choice='c': must be one of a, b"),
    ],
)
def test_each_value_must_be_of_its_declared_type_and_allowed_values(values, message):
    with pytest.raises(InputError, match=f"^{message}"):
        Typed(**{"output_file": "out.txt", **values})


def test_every_problem_is_named_at_once_and_the_right_values_pass(tmp_path):
    with pytest.raises(InputError, match=r"^--flag='no': .*; --count=-1: must be >= 0; --mode='x': must be one of"):
        Typed(output_file="o", flag="no", count=-1, mode="x")
    config = Typed(
        output_file=["a", tmp_path / "b"],
        flag=True,
        maybe=False,
        count=3,
        rate=1,  # an int is a number
        model_dir=tmp_path,  # a pathlib.Path is a path
        tags=("O", "B-PER"),
        layers=[-1, "embeddings"],
        mode="exact",
        choice="b",
    )
    assert config.output_file == ["a", str(tmp_path / "b")] and config.model_dir == str(tmp_path)
    assert config.rate == 1 and config.choice == "b"


def test_numpy_numbers_are_taken_as_python_numbers():
    np = pytest.importorskip("numpy")
    config = Typed(output_file="o", count=np.int64(4), rate=np.float32(0.25))
    assert type(config.count) is int and config.count == 4
    assert type(config.rate) is float and config.rate == 0.25
    with pytest.raises(InputError, match="^--count=np.float64"):
        Typed(output_file="o", count=np.float64(4))


def test_a_list_field_of_numbers_or_strings_is_a_list_flag_of_strings():
    values = parse(Typed, "--output_file=o", "--layers=-2,embeddings")
    assert values["layers"].flag_type() == "comma separated list of strings"
    assert config_flags.config_from_flags(values, Typed).layers == ("-2", "embeddings")
