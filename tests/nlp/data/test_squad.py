"""SQuAD reading, features and post-processing: hand-worked cases, bad input, and the v2.0 oracle on real data."""

import json

import numpy as np
import pytest

from official.nlp.common.errors import InputError
from official.nlp.data.squad import examples as squad_examples
from official.nlp.data.squad import features as squad_features
from official.nlp.data.squad import postprocessing as pp
from official.nlp.tokenizers.tokenization import FullTokenizer
from tests.nlp.data.squad_oracle import oracle_run


@pytest.fixture(scope="module")
def tokenizer(uncased_vocab):
    return FullTokenizer(uncased_vocab, do_lower_case=True)


def _write(tmp_path, qas, context="Steve Smith's team won in 1895. Then (1895-1943) it lost.", name="f.json"):
    path = tmp_path / name
    path.write_text(json.dumps({"data": [{"title": "t", "paragraphs": [{"context": context, "qas": qas}]}]}))
    return str(path)


def test_split_context_maps_characters_to_words():
    words, offsets = squad_examples.split_context(" ab  c\u202fd")
    assert words == ["ab", "c", "d"]
    assert offsets == [-1, 0, 0, 0, 0, 1, 1, 2]


def test_reading_counts_bad_answers_and_empty_contexts(tmp_path):
    qas = [
        {"id": "ok", "question": "Who?", "answers": [{"text": "Steve Smith", "answer_start": 0}]},
        {"id": "elsewhere", "question": "Who?", "answers": [{"text": "Steve Smith", "answer_start": 20}]},
    ]
    examples, report = squad_examples.read_squad_examples(_write(tmp_path, qas), is_training=True)
    assert [e.qas_id for e in examples] == ["ok"]
    assert report.answer_mismatch == [
        ("elsewhere", "answer_start=20 does not point at 'Steve Smith' (the text is at 0)")
    ]
    assert (examples[0].start_position, examples[0].end_position) == (0, 1)
    # For prediction the question stays (its answers are only references).
    examples, report = squad_examples.read_squad_examples(_write(tmp_path, qas), is_training=False)
    assert len(examples) == 2 and report.answer_mismatch == []
    path = _write(tmp_path, [{"id": "e", "question": "?", "answers": []}], context="  ")
    examples, report = squad_examples.read_squad_examples(path, is_training=False)
    assert [qid for qid, _ in report.empty_context] == ["e"]


# The original's rule by hand: the words that characters `start` and `start + len(text) - 1` fall in, joined with
# spaces, must contain the answer's whitespace words joined with spaces.
@pytest.mark.parametrize(
    "context, text, start, words",
    [
        # One character late: 'v' of Steve .. the "'" of "Smith's": "Steve Smith's" holds "Steve Smith".
        ("Steve Smith's team won.", "Steve Smith", 1, (0, 1)),
        # One character early: the space before "team" belongs to "Smith's"; its words hold the answer.
        ("Steve Smith's team won.", "team", 13, (1, 2)),
        # Off by more than the answer's reach: "Steve" does not hold "team".
        ("Steve Smith's team won.", "team", 0, None),
        # A newline in the context, a space in the answer: both are word breaks.
        ("He moved to New\nYork in 1990.", "New York", 12, (3, 4)),
        # A no-break space is no word break in the context ("New\xa0York" is one word), but the answer's own
        # split breaks on it: "New York" is not in "New\xa0York", so the original leaves it out.
        ("He moved to New\u00a0York in 1990.", "New\u00a0York", 12, None),
        ("He moved to New\u00a0York in 1990.", "York", 16, (3, 3)),
        # The other way round: a no-break space in the answer, a plain one in the context.
        ("He moved to New York in 1990.", "New\u00a0York", 12, (3, 4)),
        # The narrow no-break space (U+202F) breaks words in both.
        ("He moved to New\u202fYork in 1990.", "New\u202fYork", 12, (3, 4)),
        # An answer that runs past the context, or starts before it, or is blank.
        ("He moved to New York.", "New York in 1990", 12, None),
        ("He moved.", "He", -1, None),
        ("He moved.", " ", 2, None),
    ],
)
def test_training_answers_follow_the_original_rule(tmp_path, context, text, start, words):
    qas = [{"id": "q", "question": "Where?", "answers": [{"text": text, "answer_start": start}]}]
    examples, report = squad_examples.read_squad_examples(_write(tmp_path, qas, context=context), is_training=True)
    if words is None:
        assert examples == [] and [qid for qid, _ in report.answer_mismatch] == ["q"]
    else:
        assert report.answer_mismatch == []
        assert (examples[0].start_position, examples[0].end_position) == words
        assert examples[0].orig_answer_text == text


def test_every_reference_answer_of_squad_v1_dev_is_kept(shared_data):
    """All 34,726 reference answers of the real v1.1 dev file point at their text: the rule keeps every one, on the
    words that hold it."""
    with open(shared_data / "squad" / "dev-v1.1.json", encoding="utf-8") as f:
        data = json.load(f)["data"]
    count = 0
    for article in data:
        for paragraph in article["paragraphs"]:
            context = paragraph["context"]
            words, offsets = squad_examples.split_context(context)
            for qa in paragraph["qas"]:
                for answer in qa["answers"]:
                    span = squad_examples._answer_words(answer["text"], answer["answer_start"], words, offsets)
                    assert span is not None, qa["id"]
                    count += 1
    assert count == 34726


@pytest.mark.parametrize(
    "qa, message",
    [
        ({"question": "Who?", "answers": []}, "missing field 'id'"),
        ({"id": "q7", "answers": []}, "question id q7: missing field 'question'"),
        ({"id": "q8", "question": "?", "answers": [{"answer_start": 0}]}, "question id q8: missing field 'text'"),
        ({"id": "q9", "question": "?", "answers": [{"text": "x", "answer_start": "0"}]}, "should be a int"),
        ({"id": "q10", "question": "?", "answers": []}, "q10: a training question needs an answer"),
        ({"id": "q11", "question": "?", "answers": [], "is_impossible": True}, "--version_2_with_negative"),
    ],
)
def test_reading_refuses_structural_errors(tmp_path, qa, message):
    with pytest.raises(InputError, match=message):
        squad_examples.read_squad_examples(_write(tmp_path, [qa]), is_training=True)


def test_reading_refuses_non_json(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("{not json")
    with pytest.raises(InputError, match="not valid JSON"):
        squad_examples.read_squad_examples(str(path), is_training=False)


def test_features_improved_span_windows_and_max_context(tokenizer):
    # Hand-worked: "(1895-1943)." is one word; the answer "1895" is its second token after improvement.
    context = "The war lasted (1895-1943). It was long and it was hard and it was over."
    ex = squad_examples.SquadExample(
        "q",
        "When?",
        *squad_examples.split_context(context)[:1],
        context,
        orig_answer_text="1895",
        start_position=3,
        end_position=3,
    )
    features, stats = squad_features.convert_examples_to_features(
        [ex], tokenizer, max_seq_length=16, doc_stride=4, max_query_length=4, is_training=True
    )
    # Question "when ?" = 2 tokens, 16 - 2 - 3 = 11 context tokens per window, windows 4 tokens apart.
    doc = tokenizer.tokenize(context)
    assert [len(f.tokens) - 5 for f in features] == [11, 11, 11, 9][: len(features)]
    assert squad_features.doc_windows(len(doc), 11, 4) == [
        (i, min(11, len(doc) - i)) for i in range(0, len(doc) - 7, 4)
    ]
    first = features[0]
    assert first.tokens[:4] == ["[CLS]", "when", "?", "[SEP]"]
    assert first.tokens[first.start_position] == "1895" and first.start_position == first.end_position
    # Each context token has its maximum context in exactly one window.
    for position in range(len(doc)):
        owners = [
            f
            for f in features
            for p, orig in f.token_to_orig_map.items()
            if f.token_is_max_context[p]
            and p - 4 + squad_features.doc_windows(len(doc), 11, 4)[f.doc_span_index][0] == position
        ]
        assert len(owners) == 1
    # Windows that do not hold the whole answer point at [CLS].
    assert stats.out_of_window == sum(1 for f in features if f.start_position == 0)
    assert all(len(f.input_ids) == 16 == len(f.input_mask) == len(f.segment_ids) for f in features)


def test_long_questions_are_truncated_and_counted(tokenizer):
    ex = squad_examples.examples_from_strings([("one two three four five six", "a b c")])
    features, stats = squad_features.convert_examples_to_features(
        ex, tokenizer, max_seq_length=16, doc_stride=4, max_query_length=3, is_training=False
    )
    assert stats.truncated_questions == ["0"]
    assert features[0].tokens[:5] == ["[CLS]", "one", "two", "three", "[SEP]"]
    with pytest.raises(InputError, match="--max_seq_length=8"):
        squad_features.convert_examples_to_features(
            ex, tokenizer, max_seq_length=8, doc_stride=4, max_query_length=5, is_training=False
        )


@pytest.mark.parametrize(
    "pred, orig, expected",
    [
        ("steve smith", "Steve Smith's", "Steve Smith"),  # the original's own example
        ("1895", "(1895-1943).", "1895"),
        ("cafe", "Café!", "Café"),  # accents stripped in the tokens, kept in the answer
        ("nothing", "Steve", "Steve"),  # not found: the whole original text
    ],
)
def test_get_final_text(pred, orig, expected):
    assert pp.get_final_text(pred, orig, do_lower_case=True) == expected


def _one_window(tokenizer, question, context, seq=32):
    examples = squad_examples.examples_from_strings([(question, context)])
    features, _ = squad_features.convert_examples_to_features(
        examples, tokenizer, max_seq_length=seq, doc_stride=8, max_query_length=8, is_training=False
    )
    return examples, features


def test_postprocess_rules(tokenizer):
    examples, features = _one_window(tokenizer, "who?", "Ann Smith met Bob Jones in Paris.")
    (f,) = features
    starts = np.zeros((1, 32), np.float32)
    ends = np.zeros((1, 32), np.float32)
    # Tokens: [CLS] who ? [SEP] ann smith met bob jones in paris . [SEP]: positions 4..11 are context.
    starts[0, 4], ends[0, 5] = 5, 5  # "Ann Smith": 10
    starts[0, 7], ends[0, 8] = 4, 4  # "Bob Jones": 8
    ends[0, 3] = 9  # an end on [SEP] of the question is never valid
    settings = pp.AnswerSettings(n_best_size=5, max_answer_length=3)
    result = pp.postprocess(examples, features, starts, ends, settings)
    assert result.predictions == {"0": "Ann Smith"}
    assert result.nbest["0"][0]["text"] == "Ann Smith"
    assert sum(e["probability"] for e in result.nbest["0"]) == pytest.approx(1.0)
    # max_answer_length=1 drops both two-token spans.
    short = pp.postprocess(examples, features, starts, ends, pp.AnswerSettings(n_best_size=5, max_answer_length=1))
    assert short.predictions["0"] not in ("Ann Smith", "Bob Jones")


def test_postprocess_start_needs_max_context(tokenizer):
    context = " ".join(f"w{i}" for i in range(40))
    examples, features = _one_window(tokenizer, "q?", context, seq=24)
    assert len(features) > 1
    starts = np.zeros((len(features), 24), np.float32)
    ends = np.zeros((len(features), 24), np.float32)
    f0 = features[0]
    # The last context position of window 0 has more context in window 1: a start there is refused.
    last = max(f0.token_to_orig_map)
    assert not f0.token_is_max_context[last]
    starts[0, last], ends[0, last] = 20, 20
    first = min(f0.token_to_orig_map)
    starts[0, first], ends[0, first] = 1, 1
    result = pp.postprocess(examples, features, starts, ends, pp.AnswerSettings(n_best_size=30))
    assert result.predictions["0"] != context.split()[f0.token_to_orig_map[last]]


def test_postprocess_v2_all_null_does_not_crash(tokenizer):
    # Every candidate null: the original crashes reading the best non-null entry.
    examples, features = _one_window(tokenizer, "who?", "Ann.")
    starts = np.full((1, 32), -100.0, np.float32)
    ends = starts.copy()
    starts[0, 0] = ends[0, 0] = 5.0
    # n_best_size=1: only [CLS] is among the top starts and ends, so no span candidate exists.
    settings = pp.AnswerSettings(n_best_size=1, version_2_with_negative=True, null_score_diff_threshold=1e9)
    result = pp.postprocess(examples, features, starts, ends, settings)
    assert result.predictions == {"0": ""}
    assert result.null_odds == {"0": pp.NO_SPAN_ODDS}
    assert [e["text"] for e in result.nbest["0"]] == [""]


def test_postprocess_v2_threshold(tokenizer):
    examples, features = _one_window(tokenizer, "who?", "Ann Smith met Bob.")
    starts = np.zeros((1, 32), np.float32)
    ends = np.zeros((1, 32), np.float32)
    starts[0, 0], ends[0, 0] = 3.0, 3.0  # null score 6
    starts[0, 4], ends[0, 5] = 2.5, 2.5  # best span "Ann Smith" 5
    v2 = dict(version_2_with_negative=True, n_best_size=5)
    result = pp.postprocess(examples, features, starts, ends, pp.AnswerSettings(**v2))
    assert result.null_odds["0"] == pytest.approx(1.0) and result.predictions["0"] == ""
    result = pp.postprocess(examples, features, starts, ends, pp.AnswerSettings(null_score_diff_threshold=1.5, **v2))
    assert result.predictions["0"] == "Ann Smith"


def test_postprocess_v2_null_score_is_a_python_float_sum(tokenizer):
    """The original sums the [CLS] logits as Python floats: 1 + 2**-30 is not 1 (a float32 sum would lose the
    2**-30), and null_odds is that sum less the best span's, exactly."""
    examples, features = _one_window(tokenizer, "who?", "Ann Smith met Bob.")
    starts = np.zeros((1, 32), np.float32)
    ends = np.zeros((1, 32), np.float32)
    starts[0, 0], ends[0, 0] = 1.0, 2.0**-30
    starts[0, 4], ends[0, 5] = 0.5, 0.25
    result = pp.postprocess(
        examples, features, starts, ends, pp.AnswerSettings(version_2_with_negative=True, n_best_size=5)
    )
    assert result.null_odds["0"] == (1.0 + 2.0**-30) - 0.5 - 0.25
    null = [e for e in result.nbest["0"] if e["text"] == ""]
    assert null == [{"text": "", "probability": null[0]["probability"], "start_logit": 1.0, "end_logit": 2.0**-30}]


def test_oracle_v2_subset_full_marks(shared_data, tokenizer):
    path = shared_data / "squad" / "dev-v2.0-subset-Normans-Rhine.json"
    examples, features, report, stats, result, metrics = oracle_run(path, tokenizer, version_2_with_negative=True)
    assert report.num_questions == 706 and not report.answer_mismatch and not report.empty_context
    assert metrics["NoAns_total"] == 320 and metrics["HasAns_total"] == 386
    # Unanswerable questions point at [CLS] and get full marks; so do all answerable ones in this subset.
    assert metrics["NoAns_exact"] == 100.0 and metrics["NoAns_f1"] == 100.0
    assert metrics["exact"] == 100.0 and metrics["f1"] == 100.0
    assert metrics["best_f1"] == 100.0


def test_postprocess_best_span_matches_exhaustive_search(tokenizer):
    # With n_best_size covering every position, the answer is the best-scoring valid span of an exhaustive search
    # over all windows (start with max context, both ends in the context, end >= start, length limit).
    context = (
        "Tesla was born in Smiljan, in the Austrian Empire, in 1856. He moved to the United States in 1884 "
        "and worked for Edison before founding his own laboratory in New York City."
    )
    examples, features = _one_window(tokenizer, "Where was Tesla born?", context, seq=32)
    assert len(features) > 2
    rng = np.random.default_rng(7)
    for trial in range(20):
        starts = rng.normal(size=(len(features), 32)).astype(np.float32)
        ends = rng.normal(size=(len(features), 32)).astype(np.float32)
        settings = pp.AnswerSettings(n_best_size=32, max_answer_length=5)
        got = pp.postprocess(examples, features, starts, ends, settings).predictions["0"]
        best = None
        for row, f in enumerate(features):
            for s in f.token_to_orig_map:
                for e in f.token_to_orig_map:
                    if f.token_is_max_context[s] and s <= e < s + 5:
                        score = starts[row, s] + ends[row, e]
                        if best is None or score > best[0]:
                            best = (score, row, s, e)
        _, row, s, e = best
        assert got == pp._span_text(examples[0], features[row], s, e, True), trial


def test_question_without_windows_answers_empty(tokenizer):
    # An empty context (counted when read) has no window: "" (the original would write "empty"), and abstains.
    examples = squad_examples.examples_from_strings([("who?", "   ")])
    features, _ = squad_features.convert_examples_to_features(
        examples, tokenizer, max_seq_length=16, doc_stride=4, max_query_length=4, is_training=False
    )
    assert features == []
    empty = np.zeros((0, 16), np.float32)
    for v2 in (False, True):
        result = pp.postprocess(examples, features, empty, empty, pp.AnswerSettings(version_2_with_negative=v2))
        assert result.predictions == {"0": ""}
        assert result.null_odds == ({"0": pp.NO_SPAN_ODDS} if v2 else {})


def test_a_stride_longer_than_a_window_is_refused_naming_the_largest_that_covers(tokenizer):
    """--doc_stride=128 --max_seq_length=128: 61 context tokens per window, so a stride of 128 cannot be honoured."""
    ex = squad_examples.examples_from_strings([("a question", "some context")])
    with pytest.raises(InputError, match=r"--doc_stride=128 .* = 61 tokens.*pass --doc_stride=61 or less"):
        squad_features.convert_examples_to_features(
            ex, tokenizer, max_seq_length=128, doc_stride=128, max_query_length=64, is_training=False
        )
    squad_features.convert_examples_to_features(
        ex, tokenizer, max_seq_length=128, doc_stride=61, max_query_length=64, is_training=False
    )
