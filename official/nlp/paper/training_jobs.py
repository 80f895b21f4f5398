"""The training stages of a rerun, each one library call: pretraining, held-out perplexity, fine-tuning.

- pretrain: `run_pretraining` (MLM + NSP, MLM only, or the left-to-right LM) on the shared records, with the same
  steps, batch and learning rate for every variant; rerun, it continues from its last checkpoint;
- perplexity: the masked-LM cross entropy of the pretrained model on the held-out records, exp'd (Table 6's "LM
  (ppl)"): the records of held-out documents, masked once with the original rule;
- finetune: `run_classifier` (MRPC, SST-2, QNLI), `run_squad` (optionally with the BiLSTM span head) or `run_ner`
  (fine-tuned, or feature-based on the frozen model) from the variant's pretrained model, or from random weights of
  the same config and vocabulary for the variant without pretraining. Rerun, each resumes from its checkpoint.

Each returns `StageResult`: its numbers as `(task, metric, value)` in the paper's units (accuracy and F1 in percent)
and the training steps it ran.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import statistics

from official.nlp.common import input_files, output_files, text_files
from official.nlp.modeling.configs import LTR
from official.nlp.paper import budgets, grid
from official.nlp.paper.budgets import Budget
from official.nlp.paper.config import PaperConfig, Workspace
from official.nlp.paper.grid import Stage
from official.nlp.paper.results import read_scalars

PRETRAINING_SEED = 12345
PERPLEXITY_BATCH = 64
# What a finished fine-tuning run no longer needs (its numbers are in the stage's marker): checkpoints, the kept
# model, the input position and the feature caches. Tens of MB each, over a hundred runs.
_DISPOSABLE = ("best_model", "input_state")
_DISPOSABLE_PREFIXES = ("ckpt-", "checkpoint", "train.tf_record", "eval.tf_record", "predict.tf_record")


@dataclasses.dataclass
class StageResult:
    values: list[tuple[str, str, float]]
    steps: int | None = None


def vocab_size(space: Workspace) -> int:
    from official.nlp.tokenizers import tokenization

    return len(tokenization.load_vocab(space.vocab_file))


def pretrained_model(space: Workspace, variant: str, size: str) -> str:
    step = grid.curve_step(variant)
    if step is not None:
        return space.curve_export(step)
    return os.path.join(space.run_dir(grid.pretrain_id(variant, size)), "export")


@dataclasses.dataclass(frozen=True)
class Recipe:
    """The pretraining recipe every variant uses: the pilot's choice, or the budget's when it fixes it."""

    learning_rate: float
    batch_size: int
    steps: int  # the budget's pretraining examples at this batch
    source: str  # "pilot" or "budget"


def recipe(budget: Budget, space: Workspace) -> Recipe:
    if not budget.pilot_grid():
        return Recipe(budget.pretrain_learning_rate, budget.pretrain_batch_size, budget.pretrain_steps, "budget")
    if not input_files.exists(space.pilot_file):  # the grid runs the pilot's choice before any pretraining
        raise RuntimeError(f"{space.pilot_file} is missing: the pilot's choice must run before any pretraining")
    chosen = json.loads(text_files.read_text(space.pilot_file))
    batch = int(chosen["batch_size"])
    steps = max(1, budget.pretrain_steps * budget.pretrain_batch_size // batch)
    return Recipe(float(chosen["learning_rate"]), batch, steps, "pilot")


def _loop_steps(steps: int) -> tuple[int, int]:
    """`(steps_per_loop, save_checkpoints_steps)`: about 50 points on the loss curve, a checkpoint every tenth."""
    per_loop = max(1, steps // 50)
    save = max(per_loop, (steps // 10) // per_loop * per_loop)
    return per_loop, save


def pretrain(stage: Stage, config: PaperConfig, budget: Budget, space: Workspace) -> StageResult:
    from official.nlp.tasks.pretraining import run_pretraining
    from official.nlp.tasks.pretraining_config import PretrainingConfig

    variant = grid.VARIANTS[stage.variant]
    size = budgets.parse_size(stage.size)
    chosen = recipe(budget, space)
    per_loop, save = _loop_steps(chosen.steps)
    objective = {"objective": LTR} if variant.objective == LTR else {}
    result = run_pretraining(
        PretrainingConfig(
            input_file=space.records(variant.records),
            model_dir=space.run_dir(stage.id),
            bert_config=size.bert_config(vocab_size(space)),
            vocab_file=space.vocab_file,
            do_lower_case=config.do_lower_case,
            max_seq_length=budget.max_seq_length,
            max_predictions_per_seq=budget.max_predictions_per_seq,
            train_batch_size=chosen.batch_size,
            num_train_steps=chosen.steps,
            num_warmup_steps=int(chosen.steps * budget.warmup_share),
            learning_rate=chosen.learning_rate,
            # Small models train at larger rates, where the original optimizer's uncorrected first steps (3x at
            # step 1) derail them; docs/paper.md says so.
            adam_bias_correction=True,
            use_next_sentence_label=variant.nsp,
            steps_per_loop=per_loop,
            save_checkpoints_steps=save,
            keep_checkpoint_max=1,  # a rerun resumes from the last one
            mixed_precision=config.mixed_precision,
            seed=PRETRAINING_SEED,
            **objective,
        )
    )
    curves = read_scalars(os.path.join(space.run_dir(stage.id), "summaries"))
    values = []
    for tag in ("loss", "mlm_loss", "nsp_loss", "ltr_loss", "mlm_accuracy", "ltr_accuracy"):
        if curves.get(tag):
            values.append(("pretraining", f"final_{tag}", curves[tag][-1][1]))
    # The first loop's rate includes tracing the step: the median over the loops is the steady rate.
    rates = [value for _, value in curves.get("examples_per_second", [])[1:]] or [
        value for _, value in curves.get("examples_per_second", [])
    ]
    if rates:
        values.append(("pretraining", "examples_per_second", statistics.median(rates)))
    return StageResult(values, result.step)


def perplexity(stage: Stage, config: PaperConfig, budget: Budget, space: Workspace) -> StageResult:
    """exp(mean masked-LM cross entropy) over every prediction of the held-out records."""
    mean = heldout_mlm_loss(pretrained_model(space, stage.variant, stage.size), budget, space)
    return StageResult([("heldout", "mlm_loss", mean), ("heldout", "perplexity", math.exp(mean))])


def heldout_mlm_loss(model_path: str, budget: Budget, space: Workspace) -> float:
    """The mean masked-LM cross entropy of the model directory `model_path` over every prediction of the held-out
    records (the documents held out by hash; masked once with the original rule)."""
    from official.nlp.checkpoints import model_loading

    model, files = model_loading.load_model(model_path)
    return mlm_loss(
        model,
        space.records(grid.HELDOUT_RECORDS),
        max_seq_length=budget.max_seq_length,
        max_predictions_per_seq=budget.max_predictions_per_seq,
        vocab_size=files.config.vocab_size,
    )


def mlm_loss(model, records: str, *, max_seq_length: int, max_predictions_per_seq: int, vocab_size: int) -> float:
    """The mean masked-LM cross entropy of `model` (a pretrainer: `mlm_logits` at `masked_lm_positions`) over every
    prediction of the pretraining `records` (globs), in inference mode."""
    import tensorflow as tf

    from official.nlp.data.pretraining.dataloader import PretrainDataConfig, PretrainDataLoader
    from official.nlp.modeling import losses

    loader = PretrainDataLoader(
        PretrainDataConfig(
            input_patterns=records,
            seq_length=max_seq_length,
            max_predictions_per_seq=max_predictions_per_seq,
            global_batch_size=PERPLEXITY_BATCH,
            is_training=False,
            use_next_sentence_label=False,
            vocab_size=vocab_size,
        )
    )

    @tf.function
    def batch_sums(x, y):
        outputs = model(x, training=False)
        weights = tf.cast(y["masked_lm_weights"], tf.float32)
        cross_entropy = losses.cross_entropy(y["masked_lm_ids"], outputs["mlm_logits"])
        return tf.reduce_sum(cross_entropy * weights), tf.reduce_sum(weights)

    total, count = 0.0, 0.0
    for x, y in loader.load():
        loss, weight = batch_sums(x, y)
        total += float(loss)
        count += float(weight)
    return total / max(count, 1.0)


def _random_init_files(space: Workspace, size: str) -> str:
    """The bert_config.json of a model that is not pretrained (written once; the vocabulary is the rerun's)."""
    path = space.random_init_config(size)
    if not input_files.exists(path):
        output_files.makedirs_for(path)
        budgets.parse_size(size).bert_config(vocab_size(space)).to_json_file(path)
    return path


def finetune(stage: Stage, config: PaperConfig, budget: Budget, space: Workspace) -> StageResult:
    variant = grid.VARIANTS.get(stage.variant, grid.MLM_NSP)  # a curve checkpoint is MLM + NSP
    choice = stage.feature_choice
    task_budget = budget.feature_based if choice else budget.tasks[stage.task]
    per_loop = 50
    common = dict(
        output_dir=space.run_dir(stage.id),
        max_seq_length=budget.finetune_seq_length,
        train_batch_size=task_budget.batch_size,
        eval_batch_size=64,
        predict_batch_size=64,
        num_train_epochs=task_budget.epochs,
        learning_rate=task_budget.learning_rate,
        warmup_proportion=0.1,
        adam_bias_correction=True,  # as for pretraining (see `pretrain`)
        seed=stage.seed,
        mixed_precision=config.mixed_precision,
        steps_per_loop=per_loop,
        save_checkpoints_steps=10 * per_loop,
        do_train=True,
    )
    if stage.step is not None:  # a checkpoint of the transfer curve
        common["init_checkpoint"] = pretrained_model(space, stage.variant, stage.size)
    elif variant.objective is not None:
        common["init_checkpoint"] = pretrained_model(space, variant.name, stage.size)
    else:
        common.update(
            bert_config_file=_random_init_files(space, stage.size),
            vocab_file=space.vocab_file,
            do_lower_case=config.do_lower_case,
        )
    data = space.task_dir(stage.task)
    if stage.task == "squad":
        from official.nlp.tasks.question_answering import SquadConfig, run_squad

        info = run_squad(
            SquadConfig(
                train_file=os.path.join(data, "train.json"),
                predict_file=os.path.join(data, "eval.json"),
                do_predict=True,
                doc_stride=budget.squad_doc_stride,
                max_query_length=budget.squad_max_query_length,
                span_head="bilstm" if stage.head == "bilstm" else None,
                **common,
            )
        ).metrics
        values = [("squad", "f1", info["f1"]), ("squad", "exact_match", info["exact_match"])]
        return StageResult(values, info.get("step"))
    if stage.task == "ner":
        from official.nlp.tasks.tagging import TaggingConfig, run_ner

        features = {}
        if choice:
            num_layers = budgets.parse_size(stage.size).layers
            features = dict(
                feature_based=True,
                feature_layers=grid.layers_of_choice(choice, num_layers),
                feature_combine=grid.FEATURE_CHOICES[choice][2],
                lstm_units=budget.feature_lstm_units,
                num_lstm_layers=budget.feature_lstm_layers,
            )
        result = run_ner(
            TaggingConfig(
                train_file=os.path.join(data, "train.txt"),
                eval_file=os.path.join(data, "eval.txt"),
                do_eval=True,
                **features,
                **common,
            )
        )
        last = result.eval_history[-1]
        return StageResult([("ner", "f1", 100 * last["f1"])], last.get("step"))
    from official.nlp.tasks.classification import ClassifierConfig, run_classifier

    result = run_classifier(ClassifierConfig(task_name=stage.task, data_dir=data, do_eval=True, **common))
    last = result.eval_history[-1]
    values = [(stage.task, "accuracy", 100 * last["accuracy"])]
    if "f1" in last:
        values.append((stage.task, "f1", 100 * last["f1"]))
    return StageResult(values, last.get("step"))


def clean_up(stage: Stage, space: Workspace) -> None:
    """Removes what a finished fine-tuning run no longer needs (after its marker is written)."""
    if stage.kind != "finetune":
        return
    run_dir = space.run_dir(stage.id)
    if not input_files.isdir(run_dir):
        return
    for name in input_files.listdir(run_dir):
        path = os.path.join(run_dir, name)
        if name in _DISPOSABLE:
            output_files.rmtree(path)
        elif name.startswith(_DISPOSABLE_PREFIXES):
            output_files.remove(path)


def run_training_stage(stage: Stage, config: PaperConfig, budget: Budget, space: Workspace) -> StageResult:
    import keras

    try:
        return {"pretrain": pretrain, "perplexity": perplexity, "finetune": finetune}[stage.kind](
            stage, config, budget, space
        )
    finally:
        keras.backend.clear_session()  # a fresh graph for the next run: a hundred runs in one process
