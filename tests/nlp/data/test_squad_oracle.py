"""The v1.1 oracle on all 10,570 SQuAD dev questions: logits at the first gold answer's tokens give EM/F1 near 100.

Every question the oracle gets wrong is explained by one of three causes, counted and listed here:

- `too_long`: the gold span is longer than max_answer_length=30 tokens, so the post-processing drops it (as the
  original does) and answers with another candidate;
- `inside_word`: the gold answer starts or ends inside a whitespace-separated word at a point where WordPiece
  does not split it ("gold" in '"golden', "8" in "20–18", "two" inside "Westwood", annotators' spans cut
  mid-word such as "y through the port"); answers are made of whole tokens, so the nearest token span is predicted;
- `dropped_characters`: the words hold characters that the tokenizer deletes (zero-width spaces), so
  `get_final_text` cannot align the tokens with the text and, as in the original, returns the whole words.
"""

import collections
import json

import pytest

from official.nlp.data.squad import examples as squad_examples
from official.nlp.data.squad import features as squad_features
from official.nlp.metrics import squad as squad_metrics
from official.nlp.tokenizers.tokenization import BasicTokenizer, FullTokenizer
from tests.nlp.data.squad_oracle import oracle_run

EXPECTED_SHORTFALLS = {
    "too_long": [
        "5725c071271a42140099d127",
        "5726356938643c19005ad300",
        "57263b1638643c19005ad333",
        "57263b1638643c19005ad334",
        "57263b1638643c19005ad335",
        "572648d1708984140094c161",
        "57264b1ddd62a815002e80a3",
        "5726ed6cf1498d1400e8f00d",
        "5733ef47d058e614000b662d",
    ],
    "inside_word": [
        "56be4db0acb8001400a502f0",
        "56be4e1facb8001400a502f9",
        "56be59683aeaaa14008c905a",
        "56bec0dd3aeaaa14008c935a",
        "56bf159b3aeaaa14008c950a",
        "56bf17653aeaaa14008c9514",
        "56bf4e1b3aeaaa14008c95c0",
        "56bf738b3aeaaa14008c9655",
        "56d2045de7d4791d009025f5",
        "56d204ade7d4791d00902604",
        "56d6fe0b0d65d214001982a7",
        "56d722330d65d214001983a8",
        "56d726b60d65d214001983eb",
        "56d98f0ddc89441400fdb559",
        "56d997cddc89441400fdb58a",
        "56d9cb47dc89441400fdb834",
        "56dfa1d34a1a83140091ebd4",
        "5725df1838643c19005ace16",
        "57264991f1498d1400e8db30",
        "572914f46aef051400154a46",
        "57291f153f37b31900478046",
        "5729714daf94a219006aa42d",
        "5729e2316aef0514001550c5",
    ],
    "dropped_characters": ["5727b0892ca10214002d93e9"],
}


def _first_answers(path):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)["data"]
    return {
        qa["id"]: (p["context"], qa["answers"][0]["answer_start"], qa["answers"][0]["text"])
        for article in data
        for p in article["paragraphs"]
        for qa in p["qas"]
    }


def _cut_inside_word(context, start, text):
    end = start + len(text)
    return (start > 0 and not squad_examples._is_whitespace(context[start - 1])) or (
        end < len(context) and not squad_examples._is_whitespace(context[end])
    )


def classify_shortfalls(path, examples, features, predictions, max_answer_length=30):
    """Cause -> question ids, for every question whose oracle prediction misses all its references."""
    basic = BasicTokenizer(do_lower_case=True)
    first = _first_answers(path)
    by_example = squad_features.group_features(features)
    causes = collections.defaultdict(list)
    for index, example in enumerate(examples):
        prediction = predictions[example.qas_id]
        if any(squad_metrics.compute_exact(gold, prediction) for gold in example.answers):
            continue
        gold = [f for f in by_example[index] if f.start_position]
        if gold and gold[0].end_position - gold[0].start_position + 1 > max_answer_length:
            causes["too_long"].append(example.qas_id)
        elif any(not c.isspace() and not basic.tokenize(c) for c in prediction):
            causes["dropped_characters"].append(example.qas_id)
        elif _cut_inside_word(*first[example.qas_id]):
            causes["inside_word"].append(example.qas_id)
        else:
            causes["unexplained"].append(example.qas_id)
    return {cause: sorted(ids) for cause, ids in causes.items()}


@pytest.mark.slow
def test_oracle_v1_dev_all_questions(shared_data, uncased_vocab):
    path = shared_data / "squad" / "dev-v1.1.json"
    tokenizer = FullTokenizer(uncased_vocab, do_lower_case=True)
    examples, features, report, stats, result, metrics = oracle_run(path, tokenizer, version_2_with_negative=False)
    assert report.num_questions == len(examples) == 10570
    assert not report.answer_mismatch and not report.empty_context and not stats.truncated_questions
    causes = classify_shortfalls(path, examples, features, result.predictions)
    assert causes == EXPECTED_SHORTFALLS
    assert sum(map(len, causes.values())) == 33
    assert metrics["exact_match"] == pytest.approx(100 * (10570 - 33) / 10570)
    assert metrics["f1"] > 99.7
