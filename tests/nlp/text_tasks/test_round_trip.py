"""A text classifier saved as `.keras` and exported in one call answers, in a fresh process, what it answers in memory.

A classifier from a model directory, fit on real review sentences, is saved as `.keras` and loaded in a fresh
process with Keras' safe_mode on (`keras_process.py`), and exported with `export()`; it is also written with
`save_model_dir` and exported by `export_model` (what `export_model.py` runs) from there. Both SavedModels are
served in ONE fresh process that imports only TensorFlow and tensorflow_text (`fresh.serve`). Probabilities and
logits in memory, from the `.keras` file and from both exports agree to 1e-6; label names are equal. The token
classifier and the question answerer keep their settings, vocabulary and weights in their `.keras` files.
"""

import csv
import json
import pathlib
import subprocess
import sys

import keras
import numpy as np
import pytest

from official.nlp.modeling.models import BertSpanLabeler
from official.nlp.serving import exporter
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
def runs(tmp_path_factory, tiny_model_dir):
    root = tmp_path_factory.mktemp("text_tasks")
    texts, labels = _reviews("train.tsv", 16)
    classifier = TextClassifier.from_model_dir(tiny_model_dir, label_names=LABELS, seq_length=32)
    history = classifier.fit(texts, labels, batch_size=8, epochs=1, verbose=0)
    reviews = _reviews("dev.tsv", 6)[0] + ["Déjà vu: ½ price — naïve café, " * 6]  # the last one is truncated
    memory = classifier.predict(reviews)
    classifier.save(str(root / "classifier.keras"))
    exported = classifier.export(str(root / "export"))["saved_model"]

    # The same classifier as a fine-tuned model directory, exported by export_model.py's library call with the
    # settings the directory recorded, and loaded back.
    fine_tuned = classifier.save_model_dir(str(root / "fine_tuned"))
    scripted = exporter.export_model("classifier", fine_tuned, str(root / "scripted"))
    reloaded = TextClassifier.from_model_dir(fine_tuned, compile=False)

    keras_job = {"name": "classifier", "path": str(root / "classifier.keras"), "x": reviews}
    serve_jobs = [
        {
            "name": name,
            "path": path,
            "signature": "serving_default",
            "inputs": {"text_a": {"dtype": "string", "value": reviews}},
        }
        for name, path in (("export", exported), ("scripted", scripted["saved_model"]))
    ]
    return dict(
        history=history.history,
        memory=memory,
        reloaded=reloaded,
        trained=classifier,
        keras=_keras_in_fresh_process(root, [keras_job])["classifier"],
        served=fresh.serve(root, serve_jobs),
    )


def _close(a, b):
    np.testing.assert_allclose(np.asarray(a, "float64"), np.asarray(b, "float64"), rtol=0, atol=1e-6)


def test_the_keras_file_and_both_exports_answer_as_the_classifier_in_memory(runs):
    memory, loaded, served = runs["memory"], runs["keras"], runs["served"]
    assert np.isfinite(runs["history"]["loss"]).all()
    _close(loaded["probabilities"], memory["probabilities"])
    _close(loaded["logits"], memory["logits"])
    assert list(loaded["label_name"]) == list(memory["label_name"])
    for name in ("export", "scripted"):  # export() and export_model.py write the same model
        _close(served[f"{name}/probabilities"], memory["probabilities"])
        _close(served[f"{name}/logits"], memory["logits"])
        assert list(served[f"{name}/label_name"]) == list(memory["label_name"])
        assert list(served[f"{name}/var:label_names"]) == LABELS
        assert int(served[f"{name}/var:max_seq_length"]) == 32


def test_a_saved_model_directory_loads_as_the_classifier_it_holds(runs):
    """`from_model_dir` on what `save_model_dir` writes (as run_classifier's best_model/): head, labels, length."""
    reloaded, trained = runs["reloaded"], runs["trained"]
    assert reloaded.label_names == LABELS and not reloaded.text_pair and reloaded.seq_length == 32
    for got, expected in zip(reloaded.model.get_weights(), trained.model.get_weights(), strict=True):
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("kind", ["ner", "squad"])
def test_the_other_tasks_keep_settings_vocabulary_and_weights_in_their_keras_file(
    kind, tmp_path, tiny_model_dir, uncased_tokenizer
):
    """Their predictions are the classifier's mechanism (the serving module of the task, rebuilt from the same
    settings, vocabulary and weights); what differs per task is what the config keeps, checked here in memory."""
    if kind == "ner":
        task = TokenClassifier.from_model_dir(
            tiny_model_dir, label_names=["O", "B-PER", "I-PER"], seq_length=16, window_stride=5
        )
    else:
        task = QuestionAnswerer(
            BertSpanLabeler(tiny_encoder(seed=1)), uncased_tokenizer, seq_length=48, max_query_length=16, doc_stride=16
        )
    task.save(str(tmp_path / "task.keras"))
    loaded = keras.saving.load_model(str(tmp_path / "task.keras"), safe_mode=True)
    assert type(loaded) is type(task) and loaded.get_config() == task.get_config()
    assert loaded.tokenizer.vocabulary == task.tokenizer.vocabulary
    for got, expected in zip(loaded.model.get_weights(), task.model.get_weights(), strict=True):
        np.testing.assert_array_equal(got, expected)
