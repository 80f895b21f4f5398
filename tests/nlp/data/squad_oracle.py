"""Oracle logits for SQuAD features: every window points at its training labels (gold span, or [CLS])."""

import json

import numpy as np

from official.nlp.data.squad import examples as squad_examples
from official.nlp.data.squad import features as squad_features
from official.nlp.data.squad import postprocessing as pp
from official.nlp.metrics import squad as squad_metrics


def oracle_run(path, tokenizer, *, version_2_with_negative, max_seq_length=384, doc_stride=128):
    """Features for every question (as for training: first gold answer), oracle logits, answers and metrics."""
    examples, report = squad_examples.read_squad_examples(
        str(path), is_training=True, version_2_with_negative=version_2_with_negative
    )
    features, stats = squad_features.convert_examples_to_features(
        examples, tokenizer, max_seq_length=max_seq_length, doc_stride=doc_stride, max_query_length=64, is_training=True
    )
    rows = np.arange(len(features))
    starts = np.full((len(features), max_seq_length), -10.0, np.float32)
    ends = starts.copy()
    starts[rows, [f.start_position for f in features]] = 10.0
    ends[rows, [f.end_position for f in features]] = 10.0
    result = pp.postprocess(
        examples,
        features,
        starts,
        ends,
        pp.AnswerSettings(version_2_with_negative=version_2_with_negative),
    )
    with open(path, encoding="utf-8") as f:
        dataset = json.load(f)["data"]
    metrics = squad_metrics.evaluate_squad(
        dataset, result.predictions, result.null_odds or None, version_2_with_negative=version_2_with_negative
    )
    return examples, features, report, stats, result, metrics
