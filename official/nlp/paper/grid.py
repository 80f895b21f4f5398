"""The grid of a rerun: every stage (data, pretraining, perplexity, fine-tuning run), its inputs, and its cost.

Table 5 pretrains MLM + NSP, MLM only ("No NSP") and a left-to-right LM ("LTR & No NSP") at the main size, on the
same records and the same step budget, and adds a model that is not pretrained at all (random init). Table 6
pretrains MLM + NSP at each size and measures its held-out masked-LM perplexity. Table 7 trains the feature-based
NER tagger on the frozen MLM + NSP model, one run per feature choice of the paper. The optional masking group
(Table 8 of the appendix) pretrains MLM + NSP on records masked at each of the appendix's other rates.

Every variant is fine-tuned on every selected task, with as many seeds as the budget says; the LTR model also with
the BiLSTM span head on SQuAD. A stage that two tables share (MLM + NSP at the main size, fine-tuned) is one stage.
Stages come in the order they can run: the data, then each pretraining run, then the runs that use it.
"""

from __future__ import annotations

import dataclasses

from official.nlp.modeling import configs
from official.nlp.paper import budgets
from official.nlp.paper.budgets import Budget

# Which data a pretraining variant reads: the shared records, or its own masking rates' records.
SHARED_RECORDS = "records"
# The variants without NSP read records of contiguous text (B always continues A): in NSP records half of the B
# segments come from a random document, a next token that no left context predicts (docs/pretraining.md).
NO_NSP_RECORDS = "records-nonsp"
HELDOUT_RECORDS = "records-heldout"  # the held-out documents' records, for the perplexity
CURVE_TABLE = "curve"  # the transfer curve's selection name in --tables
PILOT_TABLE = "pilot"  # --tables=pilot: the data and the pilot alone
PILOT_CHOICE = "pilot/choice"  # the stage that picks the pretraining recipe from the pilot runs


@dataclasses.dataclass(frozen=True)
class Variant:
    """A way of pretraining: the objective, NSP or not, and the masking rates of its records
    (`mask_token_prob`, `random_token_prob`; None: the original 80% / 10% / 10%)."""

    name: str
    label: str
    objective: str | None  # configs.MLM, configs.LTR, or None for no pretraining
    nsp: bool
    mask_rates: tuple[float, float] | None = None

    @property
    def records(self) -> str | None:
        if self.objective is None:
            return None
        if self.mask_rates is not None:
            return f"records-{self.name}"
        return SHARED_RECORDS if self.nsp else NO_NSP_RECORDS


MLM_NSP = Variant("mlm_nsp", "MLM + NSP (BERT)", configs.MLM, True)
MLM = Variant("mlm", "No NSP (MLM only)", configs.MLM, False)
LTR = Variant("ltr", "LTR & No NSP", configs.LTR, False)
RANDOM = Variant("random", "No pretraining (random init)", None, False)
TABLE5_VARIANTS = (MLM_NSP, MLM, LTR, RANDOM)


def masking_variant(mask: int, same: int, random: int) -> Variant:
    """The appendix's row MASK / SAME / RND (percent of the chosen tokens shown as [MASK], kept, replaced)."""
    return Variant(
        f"mask{mask}-{same}-{random}",
        f"MLM + NSP, masking {mask}/{same}/{random}",
        configs.MLM,
        True,
        (mask / 100, random / 100),
    )


# The appendix's Table 8 rows other than BERT's own 80/10/10 (which is MLM_NSP).
MASKING_VARIANTS = tuple(
    masking_variant(*rates) for rates in ((100, 0, 0), (80, 0, 20), (80, 20, 0), (0, 20, 80), (0, 0, 100))
)

VARIANTS = {v.name: v for v in (*TABLE5_VARIANTS, *MASKING_VARIANTS)}

# Table 7's feature-based rows: run_ner's --feature_layers and --feature_combine for each.
FEATURE_CHOICES = {
    "embeddings": ("Embeddings", ("embeddings",), "concat"),
    "second_to_last": ("Second-to-Last Hidden", ("-2",), "concat"),
    "last": ("Last Hidden", ("-1",), "concat"),
    "weighted_sum_last_four": ("Weighted Sum Last Four Hidden", ("-1", "-2", "-3", "-4"), "weighted_sum"),
    "concat_last_four": ("Concat Last Four Hidden", ("-1", "-2", "-3", "-4"), "concat"),
    "weighted_sum_all": ("Weighted Sum All Layers", ("all",), "weighted_sum"),
}
# The feature choice of the masking group's feature-based column (the appendix uses the last four, concatenated).
MASKING_FEATURES = "concat_last_four"


def layers_of_choice(choice: str, num_layers: int) -> tuple[str, ...]:
    """The layers of a feature choice on a model of `num_layers` layers: the "last four" are the last
    min(4, num_layers), and a choice that needs more layers than the model has takes the first (the report says so)."""
    layers = FEATURE_CHOICES[choice][1]
    if layers in (("embeddings",), ("all",)):
        return layers
    kept = tuple(layer for layer in layers if -int(layer) <= num_layers)
    return kept or ("-1",)


@dataclasses.dataclass(frozen=True)
class Stage:
    """One unit of work with a done marker. `id` is also its folder under `<output_dir>/runs/`.

    kind: corpus, vocab, records, task_data, pilot, pilot_choice, pretrain, curve_pretrain, perplexity, finetune.
    `head`: for a fine-tuning run, None (the task's own head), "bilstm" (the SQuAD span head with a BiLSTM) or
    "features:<choice>" (feature-based NER). A pilot run has its `learning_rate` and `batch_size`; a stage of the
    transfer curve its pretraining `step` (the curve's fine-tuning runs: the checkpoint's).
    """

    id: str
    kind: str
    title: str
    variant: str | None = None
    size: str | None = None
    task: str | None = None
    seed: int | None = None
    head: str | None = None
    records: str | None = None
    depends: tuple[str, ...] = ()
    cost: float = 0.0  # estimated seconds on a quiet 2-core CPU (`estimate`), for the ETA
    learning_rate: float | None = None
    batch_size: int | None = None
    step: int | None = None

    @property
    def feature_choice(self) -> str | None:
        return self.head.split(":", 1)[1] if self.head and self.head.startswith("features:") else None


def pretrain_id(variant: str, size: str) -> str:
    return f"pretrain/{variant}/{size}"


def pilot_variant(learning_rate: float, batch_size: int) -> str:
    """The name of a pilot run (results.csv's `variant`)."""
    return f"pilot-lr{learning_rate:.3g}-b{batch_size}"


def curve_variant(step: int) -> str:
    """The name of the transfer curve's checkpoint at `step` (results.csv's `variant` of its runs)."""
    return f"curve-{step}"


def curve_step(variant: str) -> int | None:
    """The step of a curve variant's name, None for any other variant."""
    return int(variant[len("curve-") :]) if variant.startswith("curve-") else None


def curve_pretrain_id(step: int) -> str:
    return f"curve/pretrain/step{step}"


def finetune_id(variant: str, size: str, task: str, head: str | None, seed: int) -> str:
    suffix = "" if head is None else "+" + head.replace(":", "-")
    return f"finetune/{variant}/{size}/{task}{suffix}/seed{seed}"


def build_grid(budget: Budget, tasks: tuple[str, ...], tables: tuple[str, ...], masking: bool) -> list[Stage]:
    """Every stage of the selection, each once, in an order that runs each after what it reads.

    Tables 5 and 8 are at the budget's main size, Table 7 at its largest size (the paper's Table 7 is on BERT-Base,
    and the feature choices need four layers to be what they say).
    """
    stages: dict[str, Stage] = {}

    def add(stage: Stage) -> None:
        stages.setdefault(stage.id, stage)

    main, largest = budget.main_size, budget.sizes[-1]
    add(Stage("data/corpus", "corpus", "Preparing the corpus and holding out documents"))
    add(Stage("data/vocab", "vocab", "The WordPiece vocabulary", depends=("data/corpus",)))
    add(
        Stage(
            f"data/{SHARED_RECORDS}", "records", "Pretraining records", records=SHARED_RECORDS, depends=("data/vocab",)
        )
    )
    pilot = budget.pilot_grid()
    curve = CURVE_TABLE in tables and bool(budget.curve_checkpoints())
    needs_perplexity = "6" in tables or masking
    if needs_perplexity or pilot or curve:  # the pilot and the curve score held-out loss too
        add(
            Stage(
                f"data/{HELDOUT_RECORDS}",
                "records",
                "Held-out records",
                records=HELDOUT_RECORDS,
                depends=("data/vocab",),
            )
        )
    fine_tunes = masking or bool(set(tables) - {PILOT_TABLE})
    for task in tasks if fine_tunes else ():
        add(Stage(f"data/{task}", "task_data", f"The {task} data (splits and slices)", task=task))
    recipe = ()  # what every pretraining run waits for: the pilot's choice of its learning rate and batch
    if pilot:
        for rate, batch in pilot:
            add(
                Stage(
                    f"pilot/{pilot_variant(rate, batch)}",
                    "pilot",
                    f"Pilot: MLM + NSP, {main}, learning rate {rate:.3g}, batch {batch}",
                    variant=pilot_variant(rate, batch),
                    size=main,
                    records=SHARED_RECORDS,
                    learning_rate=rate,
                    batch_size=batch,
                    depends=(f"data/{SHARED_RECORDS}", f"data/{HELDOUT_RECORDS}"),
                )
            )
        add(
            Stage(
                PILOT_CHOICE,
                "pilot_choice",
                "Pilot: the recipe with the lowest held-out loss",
                size=main,
                depends=tuple(f"pilot/{pilot_variant(r, b)}" for r, b in pilot),
            )
        )
        recipe = (PILOT_CHOICE,)

    # (variant, size) -> (the tasks it is fine-tuned on, their seeds: None for each task's own).
    plan: dict[tuple[Variant, str], dict[str, int | None]] = {}

    def wants(variant: Variant, size: str, wanted: tuple[str, ...], seeds: int | None = None) -> None:
        entry = plan.setdefault((variant, size), {})
        for task in wanted:
            if task not in entry:
                entry[task] = seeds
            elif entry[task] is None or seeds is None:
                entry[task] = None
            else:
                entry[task] = max(entry[task], seeds)

    if "5" in tables:
        for variant in TABLE5_VARIANTS:
            wants(variant, main, budgets.FINE_TUNING_TASKS)
    if "6" in tables:
        for size in budget.sizes:
            wants(MLM_NSP, size, budgets.FINE_TUNING_TASKS)
    if "7" in tables:
        wants(MLM_NSP, largest, ("ner",))
    if masking:
        for variant in (MLM_NSP, *MASKING_VARIANTS):
            wants(variant, main, ("qnli", "ner"), budget.masking_seeds)
    if curve:
        wants(RANDOM, main, budgets.FINE_TUNING_TASKS)  # the band every checkpoint of the curve is compared with

    for variant, size in plan:
        if variant.records not in (None, SHARED_RECORDS):
            what = "without random next segments" if variant.records == NO_NSP_RECORDS else f"masked {variant.name[4:]}"
            add(
                Stage(
                    f"data/{variant.records}",
                    "records",
                    f"Pretraining records {what}",
                    records=variant.records,
                    depends=("data/vocab",),
                )
            )
        if variant.objective is not None:
            add(
                Stage(
                    pretrain_id(variant.name, size),
                    "pretrain",
                    f"Pretraining {variant.label}, {size}",
                    variant=variant.name,
                    size=size,
                    records=variant.records,
                    depends=(f"data/{variant.records}", *recipe),
                )
            )
        if variant.objective == configs.MLM and needs_perplexity:
            add(
                Stage(
                    f"perplexity/{variant.name}/{size}",
                    "perplexity",
                    f"Held-out MLM perplexity of {variant.label}, {size}",
                    variant=variant.name,
                    size=size,
                    depends=(pretrain_id(variant.name, size), f"data/{HELDOUT_RECORDS}"),
                )
            )

    def finetune(variant: Variant, size: str, task: str, head: str | None, seeds: int) -> None:
        if task not in tasks:
            return
        source = pretrain_id(variant.name, size) if variant.objective else "data/vocab"
        if head is None:
            what = task
        elif head == "bilstm":
            what = f"{task} with the BiLSTM span head"
        else:
            what = f"{task} feature-based ({head.split(':', 1)[1]})"
        for seed in range(1, seeds + 1):
            add(
                Stage(
                    finetune_id(variant.name, size, task, head, seed),
                    "finetune",
                    f"Fine-tuning {variant.label}, {size} on {what}, seed {seed}",
                    variant=variant.name,
                    size=size,
                    task=task,
                    seed=seed,
                    head=head,
                    depends=(source, f"data/{task}"),
                )
            )

    for (variant, size), wanted in plan.items():
        for task in budgets.FINE_TUNING_TASKS:
            if task in wanted:
                finetune(variant, size, task, None, wanted[task] or budget.tasks[task].seeds)
        if variant is LTR:
            finetune(variant, size, "squad", "bilstm", budget.tasks["squad"].seeds)
    if masking:
        for variant in (MLM_NSP, *MASKING_VARIANTS):
            finetune(variant, main, "ner", f"features:{MASKING_FEATURES}", budget.masking_seeds)
    if "7" in tables:
        for choice in FEATURE_CHOICES:
            finetune(MLM_NSP, largest, "ner", f"features:{choice}", budget.feature_based.seeds)
    if curve:
        # Last, after the random-init runs it is compared with: pretrain to the next kept step, fine-tune that
        # checkpoint on every task, continue (a sitting that stops keeps every finished checkpoint's runs).
        kept = budget.curve_checkpoints()
        previous = None
        for step in budget.curve_segments():
            add(
                Stage(
                    curve_pretrain_id(step),
                    "curve_pretrain",
                    f"Transfer curve: MLM + NSP, {main}, pretraining to step {step:,} of {budget.curve_max_steps:,}",
                    variant=curve_variant(step),
                    size=main,
                    records=SHARED_RECORDS,
                    step=step,
                    depends=(f"data/{SHARED_RECORDS}", f"data/{HELDOUT_RECORDS}", *recipe)
                    + ((curve_pretrain_id(previous),) if previous else ()),
                )
            )
            previous = step
            if step not in kept:
                continue
            for task in budgets.FINE_TUNING_TASKS:
                if task not in tasks:
                    continue
                for seed in range(1, budget.tasks[task].seeds + 1):
                    add(
                        Stage(
                            finetune_id(curve_variant(step), main, task, None, seed),
                            "finetune",
                            f"Transfer curve: fine-tuning the checkpoint of step {step:,} on {task}, seed {seed}",
                            variant=curve_variant(step),
                            size=main,
                            task=task,
                            seed=seed,
                            step=step,
                            depends=(curve_pretrain_id(step), f"data/{task}"),
                        )
                    )
    return list(stages.values())
