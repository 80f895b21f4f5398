"""Every job script's flags are its config's fields: one flag per field (name, default and help from the field) and
no flag that is not a field. Each script is loaded as a module (its `main` does not run) and the flags it defined
are compared with its config class; absl's own flags (--verbosity, --helpfull, ...) belong to absl's modules."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import runpy
import subprocess
import sys

import pytest
from absl import flags

from official.nlp.checkpoints.conversion import ConversionConfig
from official.nlp.common import config_flags
from official.nlp.common.errors import InputError
from official.nlp.data.corpus.settings import CorpusConfig
from official.nlp.data.pretraining.settings import PretrainingDataConfig
from official.nlp.paper.config import PaperConfig
from official.nlp.serving.export_config import ExportConfig
from official.nlp.tasks.classification import ClassifierConfig
from official.nlp.tasks.feature_extraction import FeatureExtractionConfig
from official.nlp.tasks.multiple_choice import MultipleChoiceConfig
from official.nlp.tasks.pretraining_config import PretrainingConfig
from official.nlp.tasks.question_answering import SquadConfig
from official.nlp.tasks.tagging import TaggingConfig
from official.nlp.tokenizers.wordpiece_vocab import VocabConfig
from tests.conftest import REPO_ROOT

SCRIPTS = {
    "run_pretraining.py": PretrainingConfig,
    "create_pretraining_data.py": PretrainingDataConfig,
    "prepare_corpus.py": CorpusConfig,
    "run_classifier.py": ClassifierConfig,
    "run_squad.py": SquadConfig,
    "run_ner.py": TaggingConfig,
    "run_swag.py": MultipleChoiceConfig,
    "export_model.py": ExportConfig,
    "extract_features.py": FeatureExtractionConfig,
    "build_vocab.py": VocabConfig,
    "convert_checkpoint.py": ConversionConfig,
    "reproduce_paper.py": PaperConfig,
}


def _script_flags(name: str) -> dict[str, flags.Flag]:
    """The flags that run_scripts/`name` defines (in absl's global FLAGS, as when it runs), removed again after."""
    module = f"run_scripts.{name[:-3]}"
    runpy.run_path(str(REPO_ROOT / "run_scripts" / name), run_name=module)
    defined = {f.name: f for f in flags.FLAGS.flags_by_module_dict().get(module, [])}
    for flag_name in defined:
        delattr(flags.FLAGS, flag_name)
    return defined


def test_every_script_is_checked():
    scripts = {p.name for p in (REPO_ROOT / "run_scripts").glob("*.py")}
    assert scripts == set(SCRIPTS)  # the benchmarks are in benchmarks/ (tests/benchmarks/test_commands.py)


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_each_field_is_one_flag_and_each_flag_a_field(script):
    config_class = SCRIPTS[script]
    defined = _script_flags(script)
    fields = {f.name: f for f in config_flags.flag_fields(config_class)}
    assert sorted(defined) == sorted(fields), (
        f"{script}: flags that are no field "
        f"{sorted(set(defined) - set(fields))}, fields without a flag "
        f"{sorted(set(fields) - set(defined))}"
    )
    for name, field in fields.items():
        flag = defined[name]
        assert flag.help.endswith(config_flags.flag_help(field))  # after absl's "<a|b>: " of an enum
        if field.default is not dataclasses.MISSING:
            default = field.default
        elif field.default_factory is not dataclasses.MISSING:
            default = field.default_factory()
        else:
            default = None
        if isinstance(default, (list, tuple)):
            default = [str(v) for v in default]
        assert flag.default == default, (script, name, flag.default, default)


# Numbers without a range of their own: any finite value means something.
UNBOUNDED = {"random_seed", "null_score_diff_threshold"}
PATH_NAMES = ("_file", "_dir", "_checkpoint", "input", "output")


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_every_number_states_its_range_and_every_path_is_a_path(script):
    """Issue 30: every count flag states its range in its help (and is checked, see test_config_flags.py); every
    path gets `~` expanded and glob characters refused, which needs the field to say it is a path."""
    config_class = SCRIPTS[script]
    for field in config_flags.flag_fields(config_class):
        kind, _ = config_flags._kind(config_class, field)
        if kind in (int, float) and field.name not in UNBOUNDED:
            assert config_flags.describe_range(field), f"{script}: --{field.name} has no range"
        if kind is str and field.name.endswith(PATH_NAMES) and "enum" not in field.metadata:
            assert field.metadata.get("path") in config_flags.PATH_KINDS, f"{script}: --{field.name} is no path"


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_every_path_with_a_glob_character_is_refused_when_the_config_is_made(script, tmp_path):
    """Issue 30: `--output_dir='out [9]'` trained and then predicted with the wrong checkpoint, `--init_checkpoint=
    'model [x]'` "held no weights", an export to `export [v]` could not be loaded (tests/nlp/common/
    test_glob_paths.py shows why); now every path of every job is refused up front, naming the flag."""
    config_class = SCRIPTS[script]
    fields = dataclasses.fields(config_class)
    required = {  # an allowed value of an enum field (`export_model.py --task`)
        f.name: f.metadata.get("enum", ["x"])[0]
        for f in fields
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    }
    config_class(**required)
    for field in fields:
        if field.metadata.get("path") in ("path", "paths"):
            bracketed = str(tmp_path / "out [9]")
            with pytest.raises(InputError, match=rf"^--{field.name}='.*out \[9\]': TensorFlow reads '\['"):
                config_class(**{**required, field.name: bracketed})
    assert not list(tmp_path.iterdir())  # refused before anything is made


@pytest.fixture(scope="module")
def command_line_mistakes(tmp_path_factory) -> dict[str, list[tuple[int, str]]]:
    """What every script in run_scripts/ answers to command lines absl cannot take or that hold a positional
    argument, run in one process (tests/run_scripts/every_script.py): exit status and stderr per command line."""
    flagfile = tmp_path_factory.mktemp("flags") / "flags.txt"
    flagfile.write_text("# a comment\n--verbosity 1\n")  # a space where '=' belongs: one argument to absl
    command_lines = [["extra"], ["--no_such_flag=1"], ["--verbosity=loud"], [f"--flagfile={flagfile}"]]
    done = subprocess.run(
        [sys.executable, str(REPO_ROOT / "tests" / "run_scripts" / "every_script.py")],
        input=json.dumps(command_lines),
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout)
    return {
        script: dict(zip(("extra", "unknown", "value", "flagfile"), answers)) for script, answers in results.items()
    }


def test_every_script_answers_command_line_mistakes_with_one_line_and_status_2(command_line_mistakes):
    """Issue 32: a stray argument was refused by one script (InputError), by two with absl's 116-line usage dump
    (exit 1) and ignored by seven; absl's own flag errors exited 1 without the `<script>:` prefix (issue 30)."""
    scripts = {p.name for p in (REPO_ROOT / "run_scripts").glob("*.py")}
    assert set(command_line_mistakes) == scripts
    for script, answers in command_line_mistakes.items():
        for case, (status, stderr) in answers.items():
            lines = stderr.splitlines()
            assert status == 2 and len(lines) == 1 and lines[0].startswith(f"{script[:-3]}: "), (script, case, stderr)
        # The benchmarks mark flags as required in absl, which checks them first.
        extra = answers["extra"][1]
        assert "unexpected argument 'extra': this script takes flags only" in extra or "required" in extra, extra
        assert "unknown flag --no_such_flag" in answers["unknown"][1]
        assert "--verbosity=loud" in answers["value"][1]
    flagfile = command_line_mistakes["run_classifier.py"]["flagfile"][1]
    assert re.search(r"flags.txt:2: '--verbosity 1' is not a flag: .* written --verbosity=1$", flagfile), flagfile
