"""Every job script's flags are its config's fields: one flag per field (name, default and help from the field) and
no flag that is not a field. Each script is loaded as a module (its `main` does not run) and the flags it defined
are compared with its config class; absl's own flags (--verbosity, --helpfull, ...) belong to absl's modules."""

from __future__ import annotations

import dataclasses
import runpy

import pytest
from absl import flags

from official.nlp.checkpoints.conversion import ConversionConfig
from official.nlp.common import config_flags
from official.nlp.data.pretraining.settings import PretrainingDataConfig
from official.nlp.serving.export_config import ExportConfig
from official.nlp.tasks.classification import ClassifierConfig
from official.nlp.tasks.feature_extraction import FeatureExtractionConfig
from official.nlp.tasks.multiple_choice import MultipleChoiceConfig
from official.nlp.tasks.pretraining import PretrainingConfig
from official.nlp.tasks.question_answering import SquadConfig
from official.nlp.tasks.tagging import TaggingConfig
from official.nlp.tokenizers.wordpiece_vocab import VocabConfig
from tests.conftest import REPO_ROOT

SCRIPTS = {
    "run_pretraining.py": PretrainingConfig,
    "create_pretraining_data.py": PretrainingDataConfig,
    "run_classifier.py": ClassifierConfig,
    "run_squad.py": SquadConfig,
    "run_ner.py": TaggingConfig,
    "run_swag.py": MultipleChoiceConfig,
    "export_model.py": ExportConfig,
    "extract_features.py": FeatureExtractionConfig,
    "build_vocab.py": VocabConfig,
    "convert_checkpoint.py": ConversionConfig,
}
# Measurements, not jobs: their flags choose what to time and have no config of their own.
BENCHMARKS = {
    "benchmark.py",
    "benchmark_goemotions.py",
    "benchmark_pretraining.py",
    "benchmark_pretraining_data.py",
    "benchmark_tokenizer.py",
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
    assert scripts == set(SCRIPTS) | BENCHMARKS


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
        assert flag.help.endswith(field.metadata["help"]) or flag.help.endswith(field.metadata["help"] + " (required)")
        if field.default is not dataclasses.MISSING:
            default = field.default
        elif field.default_factory is not dataclasses.MISSING:
            default = field.default_factory()
        else:
            default = None
        if isinstance(default, (list, tuple)):
            default = [str(v) for v in default]
        assert flag.default == default, (script, name, flag.default, default)
