"""`PaperConfig`: the flags of `run_scripts/reproduce_paper.py`, and the rule for resuming a rerun.

The fields are the script's flags (`common.config_flags`). A rerun with the same `output_dir` resumes; a rerun whose
settings change what the finished stages computed (the budget, the corpus, a size, the data) is refused, naming the
flags, since its results would be mixed with the earlier ones. The selection flags (`tasks`, `tables`,
`masking_rates`) and `plots` may change between sittings: the grid only grows or shrinks, and a stage that ran is
the same stage in every selection.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Sequence
from types import SimpleNamespace

from official.nlp.common import input_files, output_files, text_files
from official.nlp.common.config_flags import CheckedConfig, field
from official.nlp.common.errors import InputError
from official.nlp.paper import budgets
from official.nlp.training import precision
from official.nlp.training.run_settings import settings_differences

TABLES = ("5", "6", "7", "curve", "pilot")
DEFAULT_TABLES = ("5", "6", "7")
PAPER_SETTINGS_FILE = "paper_settings.json"
BUDGET_VALUES_KEY = "budget_values"
# May change between sittings of one rerun (see the module docstring).
SELECTION_FIELDS = ("tasks", "tables", "masking_rates", "plots", "curve_state_dir")
# The budget's name and the flags that override its numbers: a rerun compares the numbers they resolve to.
BUDGET_FLAGS = (
    "budget",
    "sizes",
    "main_size",
    "pretrain_steps",
    "pretrain_batch_size",
    "seeds",
    "pilot_learning_rates",
    "pilot_examples",
    "pilot_batch_sizes",
)
_PATH_FLAGS = ("input_file", "vocab_file", "glue_dir", "squad_file", "conll_dir")


@dataclasses.dataclass
class PaperConfig(CheckedConfig):
    """Every setting of a rerun of the paper's Tables 5, 6 and 7 (and optionally the masking rates of Table 8)."""

    input_file: str = field(
        path="patterns",
        help="Raw text to pretrain on: WikiExtractor output (<doc> blocks) or plain text with a blank line between "
        "documents; comma-separated paths and globs.",
    )
    output_dir: str = field(
        path="path", help="Everything goes here: data, models, results.csv, results.md, plots. Reruns resume."
    )
    budget: str = field("default", enum=tuple(budgets.BUDGETS), help="How much to run (see docs/paper.md).")
    input_format: str = field(
        "auto",
        enum=("auto", "wikiextractor", "text"),
        help="--input_file's format (auto: each file by its first line).",
    )
    vocab_file: str | None = field(
        None,
        path="path",
        help="An existing vocab.txt (e.g. BERT's uncased vocabulary) instead of one learned on the corpus "
        "(build_vocab, the budget's size).",
    )
    do_lower_case: bool = field(True, help="Uncased (True) or cased text, for the vocabulary and every tokenizer.")
    glue_dir: str = field(
        "datasets/glue", path="path", help="GLUE in its TSV layout: MRPC/, SST-2/, QNLI/ (see docs/data.md)."
    )
    squad_file: str = field(
        "datasets/squad/dev-v1.1.json",
        path="path",
        help="SQuAD v1.1 dev; split by article into train and eval (docs/paper.md).",
    )
    conll_dir: str = field(
        "datasets/conll2003", path="path", help="CoNLL-2003 with train.txt and valid.txt (IOB1 or IOB2)."
    )
    tasks: Sequence[str] = field(
        list(budgets.FINE_TUNING_TASKS), help=f"Fine-tuning tasks to run: {', '.join(budgets.FINE_TUNING_TASKS)}."
    )
    tables: Sequence[str] = field(
        list(DEFAULT_TABLES),
        help="The paper's tables to rerun: 5, 6, 7; curve, the transfer curve (one long pretraining run, each "
        "doubling step's checkpoint fine-tuned beside random init; docs/paper.md); pilot alone: only the data and "
        "the pilot that picks the pretraining recipe on held-out loss (no fine-tuning data needed).",
    )
    curve_state_dir: str | None = field(
        None,
        path="path",
        help="Where the transfer curve keeps its finished results and its resume state (e.g. docs/paper_curve): "
        "updated after each of its stages; a sitting on a fresh machine resumes from it.",
    )
    masking_rates: bool = field(
        False, help="Also pretrain with the other masking rates of the paper's appendix (Table 8) and fine-tune them."
    )
    sizes: Sequence[str] | None = field(
        None, help="Table 6's sizes instead of the budget's: presets or L<layers>-H<hidden>-A<heads>, smallest first."
    )
    main_size: str | None = field(
        None, help="The size of Tables 5, 7 and 8 (default: the budget's, or the largest of --sizes)."
    )
    pretrain_steps: int | None = field(None, minimum=1, help="Pretraining steps instead of the budget's.")
    pretrain_batch_size: int | None = field(None, minimum=1, help="Pretraining batch instead of the budget's.")
    seeds: int | None = field(None, minimum=1, help="Fine-tuning seeds per cell instead of the budget's.")
    pilot_learning_rates: Sequence[float] | None = field(
        None, help="The pilot's learning rates instead of the budget's, at the budget's pretraining batch."
    )
    pilot_examples: int | None = field(
        None, minimum=1, help="Training examples of each pilot run instead of the budget's (the same at every batch)."
    )
    pilot_batch_sizes: Sequence[int] | None = field(
        None,
        help="The pilot's batch sizes instead of the budget's (each rate scaled by the square root of the batch "
        "ratio; the same training examples at every batch).",
    )
    mixed_precision: str = field(
        "float32",
        enum=precision.MIXED_PRECISION,
        help="Compute dtype of every pretraining and fine-tuning run (auto: the fastest for the hardware).",
    )
    plots: bool = field(True, help="Draw the PNG plots (needs matplotlib: pip install 'bert-tf[paper]').")


def resolved_budget(config: PaperConfig, budget: budgets.Budget | None = None) -> budgets.Budget:
    """The budget of `config` (or `budget`) with `config`'s overrides applied (checked: every size parses, the main
    size is one)."""
    budget = budget or budgets.get_budget(config.budget)
    changes = {}
    if config.sizes:
        changes["sizes"] = tuple(budgets.parse_size(s).name for s in config.sizes)
        changes["main_size"] = changes["sizes"][-1]
    if config.main_size:
        changes["main_size"] = budgets.parse_size(config.main_size).name
    sizes = changes.get("sizes", budget.sizes)
    main = changes.get("main_size", budget.main_size)
    if main not in sizes:
        raise InputError(f"--main_size={main} is not one of the sizes ({', '.join(sizes)}); add it to --sizes")
    if config.pretrain_steps:
        changes["pretrain_steps"] = config.pretrain_steps
    if config.pretrain_batch_size:
        changes["pretrain_batch_size"] = config.pretrain_batch_size
    if config.pilot_learning_rates:
        changes["pilot_learning_rates"] = tuple(float(r) for r in config.pilot_learning_rates)
    if config.pilot_examples:
        changes["pilot_examples"] = config.pilot_examples
    if config.pilot_batch_sizes:
        changes["pilot_batch_sizes"] = tuple(int(b) for b in config.pilot_batch_sizes)
    if config.seeds:
        changes["tasks"] = {t: dataclasses.replace(b, seeds=config.seeds) for t, b in budget.tasks.items()}
        changes["feature_seeds"] = config.seeds
    return dataclasses.replace(budget, **changes)


def validate(config: PaperConfig) -> None:
    """Refuses flags that cannot work, naming each, before anything is read or written."""
    problems = []
    unknown = sorted(set(config.tasks) - set(budgets.FINE_TUNING_TASKS))
    if unknown or not config.tasks:
        problems.append(f"--tasks={','.join(config.tasks)}: choose from {', '.join(budgets.FINE_TUNING_TASKS)}")
    unknown = sorted(set(config.tables) - set(TABLES))
    if unknown or not config.tables:
        problems.append(f"--tables={','.join(config.tables)}: choose from {', '.join(TABLES)}")
    if config.curve_state_dir and "curve" not in config.tables:
        problems.append(
            f"--curve_state_dir={config.curve_state_dir}: applies to the transfer curve; add curve to --tables"
        )
    if problems:
        raise InputError("; ".join(problems))
    resolved_budget(config)


def command_line(config: PaperConfig) -> str:
    """The script's command line for `config`: every flag that differs from its default (in field order), local
    paths relative to the current folder (`input_files.relative_path`)."""
    words = ["python run_scripts/reproduce_paper.py"]
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if f.default is not dataclasses.MISSING and value == f.default:
            continue
        if f.default_factory is not dataclasses.MISSING and list(value or []) == list(f.default_factory()):
            continue
        if f.metadata.get("path") == "path" and value:
            value = input_files.relative_path(value)
        elif f.metadata.get("path") in ("paths", "patterns") and isinstance(value, str):
            value = ",".join(input_files.relative_path(part) for part in value.split(","))
        if isinstance(value, bool):
            words.append(f"--{f.name}" if value else f"--no{f.name}")
        elif isinstance(value, (list, tuple)):
            words.append(f"--{f.name}={','.join(map(str, value))}")
        else:
            words.append(f"--{f.name}={value}")
    return " ".join(words)


def rerun_settings(config: PaperConfig) -> dict:
    """What a rerun into the same `output_dir` must share with the first sitting (JSON-able)."""
    values = dataclasses.asdict(config)
    for name in SELECTION_FIELDS + ("output_dir",):
        values.pop(name)
    return json.loads(json.dumps(values))


def budget_values(config: PaperConfig) -> dict:
    """The numbers of the named budget (before the flags' overrides, which `rerun_settings` holds), as JSON: a
    rerun records them, so that a library whose budget changed between sittings does not mix its runs."""
    return _numbers(json.loads(json.dumps(dataclasses.asdict(budgets.get_budget(config.budget)))))


def _numbers(values: dict) -> dict:
    """A budget's values without its name and description: new words for the same budget are the same budget."""
    return {k: v for k, v in values.items() if k not in ("name", "description")}


def check_rerun_settings(config: PaperConfig) -> None:
    """Refuses a rerun into `output_dir` whose results would differ from the finished stages', naming what differs;
    records the settings on the first sitting.

    Compared: the flags other than the budget's (local paths as the files they name), and the numbers of the budget
    as resolved (the named budget as the library defined it then, with the flags that override it): a library whose
    budget changed between sittings is refused, and the flags that set the earlier numbers back resume it. A flag or
    budget field added since the record was written counts as its default (a new field must default to what the
    library did before it); one the library no longer has is not compared.
    """
    path = os.path.join(config.output_dir, PAPER_SETTINGS_FILE)
    settings = rerun_settings(config)
    if not input_files.exists(path):
        settings[BUDGET_VALUES_KEY] = budget_values(config)
        output_files.makedirs(config.output_dir, name="--output_dir")
        output_files.write_text(path, json.dumps(settings, indent=1, sort_keys=True) + "\n")
        return
    recorded = json.loads(text_files.read_text(path))
    recorded_budget = recorded.pop(BUDGET_VALUES_KEY, None)
    defaults = {f.name: f.default for f in dataclasses.fields(PaperConfig) if f.default is not dataclasses.MISSING}
    recorded = {**json.loads(json.dumps(defaults)), **recorded}
    recorded = {k: v for k, v in recorded.items() if k in settings}
    differing = settings_differences(
        {k: _same_files(k, v) for k, v in recorded.items() if k not in BUDGET_FLAGS},
        {k: _same_files(k, v) for k, v in settings.items() if k not in BUDGET_FLAGS},
    )
    if differing:
        raise InputError(
            f"--output_dir={config.output_dir} holds a rerun with other settings ({'; '.join(differing)}). Rerun "
            "with the same flags to resume it, or choose another --output_dir"
        )
    if recorded_budget is None:
        raise InputError(
            f"--output_dir={config.output_dir} holds a rerun of --budget={recorded['budget']} whose numbers are not "
            "recorded there (an earlier version of the library started it), so its finished runs could be mixed "
            "with runs of other settings. Choose another --output_dir"
        )
    there = _numbers(_json(resolved_budget(SimpleNamespace(**recorded), _budget_from(recorded_budget))))
    now = _numbers(_json(resolved_budget(config)))
    if there != now:
        flags = ", ".join(f"--{name}" for name in BUDGET_FLAGS[1:])
        raise InputError(
            f"--output_dir={config.output_dir} holds a rerun of --budget={recorded['budget']} with other numbers "
            f"than this one's ({'; '.join(_budget_differences(there, now))}): as this library defined that budget "
            "then, with that rerun's flags. Its finished runs would be mixed with runs of other settings: resume "
            f"with flags that give its numbers ({flags}), or choose another --output_dir"
        )


def _json(value) -> dict:
    return json.loads(json.dumps(dataclasses.asdict(value)))


def _budget_from(values: dict) -> budgets.Budget:
    """A budget from its recorded numbers: a field recorded before it existed has its default, one the library no
    longer has is dropped."""
    known = {f.name for f in dataclasses.fields(budgets.Budget)}
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in values.items() if k in known}
    task_fields = {f.name for f in dataclasses.fields(budgets.TaskBudget)}
    tasks = {
        task: budgets.TaskBudget(**{k: v for k, v in numbers.items() if k in task_fields})
        for task, numbers in values.get("tasks", {}).items()
    }
    return budgets.Budget(**{**values, "name": "", "description": "", "tasks": tasks})


def _same_files(name: str, value):
    """A path flag's value as the files it names (local paths absolute, symbolic links resolved): the same data
    given by another spelling is the same setting."""
    if name not in _PATH_FLAGS or not isinstance(value, str):
        return value
    return ",".join(p if "://" in p else os.path.realpath(p) for p in value.split(","))


def _budget_differences(recorded: dict, current: dict, prefix: str = "") -> list[str]:
    """``name: <recorded> there, <current> now`` for each number of a budget that differs (nested: tasks.ner.epochs)."""
    lines = []
    for key in sorted(set(recorded) | set(current)):
        there, now = recorded.get(key), current.get(key)
        if isinstance(there, dict) and isinstance(now, dict):
            lines += _budget_differences(there, now, f"{prefix}{key}.")
        elif there != now:
            lines.append(f"{prefix}{key}: {there!r} there, {now!r} now")
    return lines


@dataclasses.dataclass(frozen=True)
class Workspace:
    """Where each part of a rerun lives under `output_dir` (every path through the file layer)."""

    root: str

    def path(self, *parts: str) -> str:
        return os.path.join(self.root, *parts)

    @property
    def prepared_corpus(self) -> str:
        return self.path("data", "corpus", "prepared.txt")

    @property
    def train_corpus(self) -> str:
        return self.path("data", "corpus", "train.txt")

    @property
    def heldout_corpus(self) -> str:
        return self.path("data", "corpus", "heldout.txt")

    @property
    def pilot_file(self) -> str:
        """The pilot's choice of the pretraining recipe (JSON), which every pretraining run reads."""
        return self.path("pilot.json")

    @property
    def curve_model_dir(self) -> str:
        """The transfer curve's one long pretraining run."""
        return self.path("runs", "curve", "pretrain")

    def curve_export(self, step: int) -> str:
        """The model directory of the curve's checkpoint at `step`."""
        return self.path("runs", "curve", "exports", f"step{step}")

    @property
    def vocab_file(self) -> str:
        return self.path("data", "vocab.txt")

    def records(self, name: str) -> str:
        """The TFRecords of `name` ("records", "records-heldout", "records-mask100-0-0", ...)."""
        return self.path("data", name, "train.tfrecord")

    def task_dir(self, task: str) -> str:
        return self.path("data", "tasks", task)

    def run_dir(self, stage_id: str) -> str:
        return self.path("runs", stage_id)

    def marker(self, stage_id: str) -> str:
        """The done marker of a stage: its results, written last."""
        return self.path("stages", stage_id + ".json")

    def random_init_config(self, size: str) -> str:
        return self.path("runs", "random", size, "bert_config.json")
