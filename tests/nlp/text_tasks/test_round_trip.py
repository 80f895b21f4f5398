"""A text task saved as `.keras` and exported in one call answers, in a fresh process, what it answers in memory.

A classifier from a model directory, fit on real review sentences; a token classifier and a question answerer on
the tiny encoder (random heads: the round trip does not care what was learnt). Each is saved as `.keras` and loaded
in ONE fresh process with Keras' safe_mode on (`keras_process.py`), and exported with `export()`; the classifier
is also written as a fine-tuned model directory and exported by `export_model` (what `export_model.py` runs). The
SavedModels are served in ONE fresh process that imports only TensorFlow and tensorflow_text (`fresh.serve`).
Predictions in memory, from the `.keras` file, from `export()` and from `export_model` agree to 1e-6; labels,
words and answers are equal.
"""

import csv
import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from official.nlp.checkpoints import init_checkpoint
from official.nlp.data import conll, squad
from official.nlp.modeling.models import BertSpanLabeler
from official.nlp.serving import exporter
from official.nlp.tasks import classification
from official.nlp.text_tasks.classifier import TextClassifier
from official.nlp.text_tasks.question_answerer import QuestionAnswerer
from official.nlp.text_tasks.token_classifier import TokenClassifier
from tests.nlp.serving import fresh
from tests.nlp.text_tasks.conftest import tiny_encoder

pytestmark = pytest.mark.slow
HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[2]
LABELS = ["negative", "positive"]


def _reviews(name, count):
    with open(REPO / "data/reviews" / name, encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1 : count + 1]
    return [r[0] for r in rows], [LABELS[int(r[1])] for r in rows]


def _keras_in_fresh_process(folder, jobs):
    jobs_file, out_file = folder / "keras_jobs.json", folder / "keras_out.json"
    jobs_file.write_text(json.dumps(jobs))
    done = subprocess.run(
        [sys.executable, str(HERE / "keras_process.py"), str(jobs_file), str(out_file)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=str(REPO),
    )
    assert done.returncode == 0 and "loaded ok" in done.stdout, done.stderr[-4000:]
    return json.loads(out_file.read_text())


@pytest.fixture(scope="module")
def runs(tmp_path_factory, tiny_model_dir, uncased_tokenizer, shared_data):
    root = tmp_path_factory.mktemp("text_tasks")
    texts, labels = _reviews("train.tsv", 16)
    classifier = TextClassifier.from_model_dir(tiny_model_dir, label_names=LABELS, seq_length=32)
    history = classifier.fit(texts, labels, batch_size=8, epochs=1, verbose=0)
    reviews = _reviews("dev.tsv", 6)[0] + ["Déjà vu: ½ price — naïve café, " * 6]  # the last one is truncated

    sentences = conll.read_conll(str(shared_data / "conll2003/iob2/valid.txt")).sentences[:40]
    tagged = [" ".join(s.words) for s in sentences[:3]] + [" ".join(w for s in sentences[3:9] for w in s.words)]
    tagger = TokenClassifier.from_model_dir(tiny_model_dir, label_names=conll.label_list(sentences), seq_length=16)

    paragraph = squad.read_squad_examples(str(shared_data / "squad/dev-v1.1.json"), is_training=False)[0][:2]
    questions = ([e.question_text for e in paragraph], [" ".join(e.doc_tokens) for e in paragraph])
    reader = QuestionAnswerer(
        BertSpanLabeler(tiny_encoder(seed=1)), uncased_tokenizer, seq_length=48, max_query_length=16, doc_stride=16
    )

    cases = {"classifier": (classifier, reviews), "ner": (tagger, tagged), "squad": (reader, questions)}
    memory, exports = {}, {}
    for name, (task, x) in cases.items():
        memory[name] = task.predict(x)
        task.save(str(root / f"{name}.keras"))
        exports[name] = task.export(str(root / f"{name}_export"))["saved_model"]

    # The same classifier as a fine-tuned model directory, exported by export_model.py's library call.
    files = init_checkpoint.resolve_model_files(tiny_model_dir)
    fine_tuned = str(root / "fine_tuned")
    classification.save_classifier(classifier.model, fine_tuned, files, task_name="sst-2", labels=LABELS)
    scripted = exporter.export_model("classifier", fine_tuned, str(root / "scripted"), max_seq_length=32)
    reloaded = TextClassifier.from_model_dir(fine_tuned, seq_length=32, compile=False)

    keras_jobs = [
        {"name": name, "path": str(root / f"{name}.keras"), "x": x, "pair": isinstance(x, tuple)}
        for name, (_, x) in cases.items()
    ]
    inputs = {
        "classifier": {"text_a": reviews},
        "ner": {"text_a": tagged},
        "squad": {"question": questions[0], "context": questions[1]},
    }
    inputs["scripted"] = inputs["classifier"]
    serve_jobs = [
        {
            "name": name,
            "path": path,
            "signature": "serving_default",
            "inputs": {k: {"dtype": "string", "value": v} for k, v in inputs[name].items()},
        }
        for name, path in [*exports.items(), ("scripted", scripted["saved_model"])]
    ]
    return dict(
        history=history.history,
        memory=memory,
        reloaded=reloaded,
        trained=classifier,
        keras=_keras_in_fresh_process(root, keras_jobs),
        served=fresh.serve(root, serve_jobs),
    )


def _close(a, b):
    np.testing.assert_allclose(np.asarray(a, "float64"), np.asarray(b, "float64"), rtol=0, atol=1e-6)


def test_classifier_keras_file_and_both_exports_answer_as_in_memory(runs):
    memory, loaded, served = runs["memory"]["classifier"], runs["keras"]["classifier"], runs["served"]
    assert np.isfinite(runs["history"]["loss"]).all()
    _close(loaded["probabilities"], memory["probabilities"])
    assert list(loaded["label_name"]) == list(memory["label_name"])
    for name in ("classifier", "scripted"):  # export() and export_model.py write the same model
        _close(served[f"{name}/probabilities"], memory["probabilities"])
        _close(served[f"{name}/logits"], memory["logits"])
        assert list(served[f"{name}/label_name"]) == list(memory["label_name"])
        assert list(served[f"{name}/var:label_names"]) == LABELS


def test_token_classifier_keras_file_and_export_answer_as_in_memory(runs):
    memory, loaded, served = runs["memory"]["ner"], runs["keras"]["ner"], runs["served"]
    assert max(memory["num_words"]) > 14  # the long text takes several windows of 16 sub-tokens
    assert loaded["words"] == memory["words"] and loaded["word_labels"] == memory["word_labels"]
    assert loaded["entities"] == json.loads(json.dumps(memory["entities"]))
    for row, count in enumerate(memory["num_words"]):
        assert list(served["ner/words"][row, :count]) == memory["words"][row]
        assert list(served["ner/word_labels"][row, :count]) == memory["word_labels"][row]
        _close(served["ner/word_probabilities"][row, :count], memory["word_probabilities"][row])
        _close(loaded["word_probabilities"][row], memory["word_probabilities"][row])


def test_question_answerer_keras_file_and_export_answer_as_in_memory(runs):
    memory, loaded, served = runs["memory"]["squad"], runs["keras"]["squad"], runs["served"]
    assert list(loaded["answer_text"]) == list(memory["answer_text"]) == list(served["squad/answer_text"])
    for key in ("answer_start", "answer_end"):
        assert list(loaded[key]) == list(memory[key]) == list(served[f"squad/{key}"])
    _close(loaded["score"], memory["score"])
    _close(served["squad/score"], memory["score"])


def test_a_fine_tuned_model_directory_loads_as_the_classifier_it_holds(runs):
    """`from_model_dir` on what `save_classifier` (and run_classifier) write: the head, labels and weights."""
    reloaded, trained = runs["reloaded"], runs["trained"]
    assert reloaded.label_names == LABELS and not reloaded.text_pair
    for got, expected in zip(reloaded.model.get_weights(), trained.model.get_weights(), strict=True):
        np.testing.assert_array_equal(got, expected)
