"""The data stages of a rerun, each one library call: the corpus, the vocabulary, the records, the task data.

- corpus: `prepare_corpus` on `--input_file` (WikiExtractor output or plain text), then the held-out split of
  `splits.hold_out_documents` (and the budget's slice of the corpus);
- vocab: `build_vocab` on the training text (the budget's size, from its first lines), or a given `--vocab_file`;
- records: `create_pretraining_data` once for the variants with NSP (MLM + NSP at every size), once without random
  next segments for the variants without NSP (MLM only, LTR), once per masking rate of the optional group, and
  once on the held-out text for the perplexity;
- task data: the splits and slices of `splits`.

Each returns its counts as `(task, metric, value)` triples, which become rows of results.csv.
"""

from __future__ import annotations

import dataclasses

from official.nlp.common import input_files, output_files
from official.nlp.paper import splits
from official.nlp.paper.budgets import Budget
from official.nlp.paper.config import PaperConfig, Workspace
from official.nlp.paper.grid import HELDOUT_RECORDS, MASKING_VARIANTS, NO_NSP_RECORDS, Stage

RECORDS_SEED = 12345  # the original script's default --random_seed


def corpus_stage(config: PaperConfig, budget: Budget, space: Workspace) -> list[tuple[str, str, float]]:
    from official.nlp.data.corpus.preparation import prepare_corpus as prepare
    from official.nlp.data.corpus.settings import CorpusConfig

    summary = prepare(
        CorpusConfig(input_file=config.input_file, output_file=space.prepared_corpus, input_format=config.input_format)
    )
    split = splits.hold_out_documents(
        space.prepared_corpus,
        space.train_corpus,
        space.heldout_corpus,
        budget.heldout_share,
        budget.corpus_max_documents,
    )
    counts = {"input_documents": summary.counts.documents, "input_words": summary.counts.words}
    counts.update(dataclasses.asdict(split))
    return [("corpus", name, value) for name, value in counts.items()]


def vocab_stage(config: PaperConfig, budget: Budget, space: Workspace) -> list[tuple[str, str, float]]:
    from official.nlp.tokenizers import tokenization
    from official.nlp.tokenizers.wordpiece_vocab import VocabConfig, build_vocab_file

    if config.vocab_file:
        vocab = tokenization.load_vocab(config.vocab_file)
        tokenization.validate_vocab(list(vocab), do_lower_case=config.do_lower_case, source=config.vocab_file)
        output_files.write_bytes(space.vocab_file, input_files.read_bytes(config.vocab_file))
    else:
        vocab = build_vocab_file(
            VocabConfig(
                input_file=space.train_corpus,
                output_file=space.vocab_file,
                vocab_size=budget.vocab_size,
                do_lower_case=config.do_lower_case,
                max_lines=budget.vocab_max_lines,
            )
        ).tokens
    return [("vocab", "tokens", len(vocab))]


def records_stage(stage: Stage, config: PaperConfig, budget: Budget, space: Workspace) -> list[tuple[str, str, float]]:
    from official.nlp.data.pretraining import generator

    name = stage.records
    settings = {}
    if name == HELDOUT_RECORDS:
        source, dupe_factor = space.heldout_corpus, 1  # one masking of each held-out instance
    else:
        source, dupe_factor = space.train_corpus, budget.dupe_factor
        if name == NO_NSP_RECORDS:
            settings = dict(use_next_sentence_label=False)
        elif name.startswith("records-mask"):
            variant = next(v for v in MASKING_VARIANTS if v.records == name)
            settings = dict(mask_token_prob=variant.mask_rates[0], random_token_prob=variant.mask_rates[1])
    stats = generator.create_pretraining_data(
        generator.PretrainingDataConfig(
            input_file=source,
            output_file=space.records(name),
            vocab_file=space.vocab_file,
            do_lower_case=config.do_lower_case,
            max_seq_length=budget.max_seq_length,
            max_predictions_per_seq=budget.max_predictions_per_seq,
            random_seed=RECORDS_SEED,
            dupe_factor=dupe_factor,
            **settings,
        )
    )
    return [(name, "instances", stats.instances)]


def task_data_stage(
    stage: Stage, config: PaperConfig, budget: Budget, space: Workspace
) -> list[tuple[str, str, float]]:
    task = budget.tasks[stage.task]
    target = space.task_dir(stage.task)
    if stage.task == "squad":
        counts = splits.squad_split(config.squad_file, target, task.train_examples, task.eval_examples)
    elif stage.task == "ner":
        counts = splits.conll_slices(config.conll_dir, target, task.train_examples, task.eval_examples)
    else:
        counts = splits.glue_task(stage.task, config.glue_dir, target, task.train_examples, task.eval_examples)
    return [(stage.task, name, value) for name, value in counts.items()]


def run_data_stage(stage: Stage, config: PaperConfig, budget: Budget, space: Workspace) -> list[tuple[str, str, float]]:
    if stage.kind == "corpus":
        return corpus_stage(config, budget, space)
    if stage.kind == "vocab":
        return vocab_stage(config, budget, space)
    if stage.kind == "records":
        return records_stage(stage, config, budget, space)
    return task_data_stage(stage, config, budget, space)
