"""The paper's numbers, quoted, and how each of its tables compares: which rows, which columns, which direction.

Source: Devlin, Chang, Lee and Toutanova, "BERT: Pre-training of Deep Bidirectional Transformers for Language
Understanding", NAACL 2019 (arXiv:1810.04805v2), Tables 5, 6 and 7 and the appendix's Table 8. All are dev-set
numbers of BERT-Base-sized models unless the row says otherwise (Table 6 varies the size). The constants below are
typed from the paper and are the only numbers of the report that do not come from results.csv.

The effect of a row is the sign of its difference from the table's reference row (Table 5: BERT-Base, MLM + NSP;
Table 7: fine-tuning; Table 8: 80/10/10), or, in Table 6, from the next smaller size: the paper's sign is read from
its numbers, ours from the medians over seeds.
"""

from __future__ import annotations

import dataclasses

CITATION = (
    "Devlin et al., BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding, NAACL 2019 "
    "(arXiv:1810.04805v2)"
)

# Table 5, "Ablation over the pre-training tasks using the BERT-Base architecture" (dev: accuracy; SQuAD v1.1 F1).
TABLE5 = {
    "mlm_nsp": {"mnli": 84.4, "qnli": 88.4, "mrpc": 86.7, "sst-2": 92.7, "squad": 88.5},
    "mlm": {"mnli": 83.9, "qnli": 84.9, "mrpc": 86.5, "sst-2": 92.6, "squad": 87.9},
    "ltr": {"mnli": 82.1, "qnli": 84.3, "mrpc": 77.5, "sst-2": 92.1, "squad": 77.8},
    "ltr+bilstm": {"mnli": 82.1, "qnli": 84.1, "mrpc": 75.7, "sst-2": 91.6, "squad": 84.9},
}

# Table 6, "Ablation over BERT model size": (#L, #H, #A) -> masked-LM perplexity of held-out training data, and
# dev accuracy on MNLI-m, MRPC, SST-2.
TABLE6 = {
    (3, 768, 12): {"ppl": 5.84, "mnli": 77.9, "mrpc": 79.8, "sst-2": 88.4},
    (6, 768, 3): {"ppl": 5.24, "mnli": 80.6, "mrpc": 82.2, "sst-2": 90.7},
    (6, 768, 12): {"ppl": 4.68, "mnli": 81.9, "mrpc": 84.8, "sst-2": 91.3},
    (12, 768, 12): {"ppl": 3.99, "mnli": 84.4, "mrpc": 86.7, "sst-2": 92.9},
    (12, 1024, 16): {"ppl": 3.54, "mnli": 85.7, "mrpc": 86.9, "sst-2": 93.3},
    (24, 1024, 16): {"ppl": 3.23, "mnli": 86.6, "mrpc": 87.8, "sst-2": 93.7},
}

# Table 7, "CoNLL-2003 Named Entity Recognition results" (dev F1, BERT-Base).
TABLE7_FINE_TUNING = 96.4
TABLE7_FEATURES = {
    "embeddings": 91.0,
    "second_to_last": 95.6,
    "last": 94.9,
    "weighted_sum_last_four": 95.9,
    "concat_last_four": 96.1,
    "weighted_sum_all": 95.5,
}

# Table 8 (appendix C.2), "Ablation over different masking strategies": MASK/SAME/RND -> dev MNLI (fine-tuned),
# NER fine-tuned, NER feature-based (the last four layers, concatenated).
TABLE8 = {
    "mlm_nsp": {"mnli": 84.2, "ner": 95.4, "ner_features": 94.9},
    "mask100-0-0": {"mnli": 84.3, "ner": 94.9, "ner_features": 94.0},
    "mask80-0-20": {"mnli": 84.1, "ner": 95.2, "ner_features": 94.6},
    "mask80-20-0": {"mnli": 84.4, "ner": 95.2, "ner_features": 94.7},
    "mask0-20-80": {"mnli": 83.7, "ner": 94.8, "ner_features": 94.6},
    "mask0-0-100": {"mnli": 83.6, "ner": 94.9, "ner_features": 94.6},
}


@dataclasses.dataclass(frozen=True)
class Column:
    """A column of ours: the task (and head) of the runs, the metric, whether higher is better, and the paper's
    column it stands beside (None: the paper has none)."""

    title: str
    task: str
    metric: str
    paper_key: str | None
    head: str = ""
    higher_is_better: bool = True


TASK_COLUMNS = {
    "qnli": Column("QNLI (acc)", "qnli", "accuracy", "qnli"),
    "mrpc": Column("MRPC (acc)", "mrpc", "accuracy", "mrpc"),
    "sst-2": Column("SST-2 (acc)", "sst-2", "accuracy", "sst-2"),
    "squad": Column("SQuAD v1.1 (F1)", "squad", "f1", "squad"),
    "ner": Column("CoNLL-2003 NER (F1)", "ner", "f1", None),
}
PERPLEXITY = Column("LM (ppl)", "heldout", "perplexity", "ppl", higher_is_better=False)


def direction(difference: float | None) -> str | None:
    if difference is None:
        return None
    return "higher" if difference > 0 else "lower" if difference < 0 else "equal"
