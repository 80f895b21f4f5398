"""`TextClassifier(multi_label=True)` on GoEmotions comments: label sets in, label names above their thresholds out.

One tiny classifier is fit on 16 comments (label sets as names) and its thresholds tuned on 16 dev comments; then
- the labels `fit` trains on are scikit-learn's `MultiLabelBinarizer` of the files' label ids, and the loss is
  Keras' binary cross-entropy on logits;
- `predict`'s label names and scores are the labels whose probability reaches their threshold, most probable first
  (numpy on `probabilities`), and setting `thresholds` changes them without a new trace;
- the `.keras` file (loaded with safe_mode), `export()`, and `export_model` on `save_model_dir`'s directory keep the
  thresholds and answer as the classifier does in memory (1e-6); `from_model_dir` on that directory gives back a
  multi-label classifier with its thresholds, and the Hugging Face export records them; a `multi_label` that
  contradicts what a fine-tuned directory holds (False for this one, True for a single-label one) is refused;
- multi-hot labels (a NumPy array, a list of 0/1 rows, a `tf.data.Dataset` of 0/1 rows) train on the same matrix
  as the label sets, `fit` runs on such a dataset, and labels of another form are one `InputError` each;
- bad label sets and thresholds are one `InputError` each.
"""

import csv
import json

import keras
import numpy as np
import pytest
import tensorflow as tf
from sklearn.preprocessing import MultiLabelBinarizer

from official.nlp.checkpoints.peers import hf_export
from official.nlp.common.errors import InputError
from official.nlp.data.multi_label import GOEMOTIONS_LABELS
from official.nlp.modeling.models import BertClassifier
from official.nlp.serving import exporter
from official.nlp.text_tasks.classifier import TextClassifier
from tests.nlp.text_tasks.conftest import tiny_encoder

pytestmark = pytest.mark.slow
LABELS = list(GOEMOTIONS_LABELS)


def _comments(shared_data, split, count):
    with open(shared_data / "goemotions" / f"{split}.tsv", encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[:count]
    return [r[0] for r in rows], [[int(i) for i in r[1].split(",")] for r in rows]


def _served(path, texts):
    serve = tf.saved_model.load(str(path)).signatures["serving_default"]
    return {key: value.numpy() for key, value in serve(text_a=tf.constant(texts)).items()}


@pytest.fixture(scope="module")
def run(tmp_path_factory, tiny_model_dir, shared_data):
    root = tmp_path_factory.mktemp("multi_label")
    texts, ids = _comments(shared_data, "train", 16)
    dev_texts, dev_ids = _comments(shared_data, "dev", 16)
    tagger = TextClassifier.from_model_dir(tiny_model_dir, label_names=LABELS, multi_label=True, seq_length=32)
    assert tagger.thresholds == [0.5] * len(LABELS)
    names = [[LABELS[i] for i in row] for row in ids]
    history = tagger.fit(texts, names, batch_size=8, epochs=1, verbose=0)
    tuned = tagger.tune_thresholds(dev_texts, [[LABELS[i] for i in row] for row in dev_ids])
    memory = tagger.predict(dev_texts)
    tagger.save(str(root / "tagger.keras"))
    model_dir = tagger.save_model_dir(str(root / "model_dir"))
    return dict(
        root=root,
        tagger=tagger,
        texts=texts,
        ids=ids,
        dev_texts=dev_texts,
        history=history.history,
        tuned=tuned,
        memory=memory,
        model_dir=model_dir,
        exported=tagger.export(str(root / "export"))["saved_model"],
        scripted=exporter.export_model("classifier", model_dir, str(root / "scripted"))["saved_model"],
    )


def _multi_hot(ids):
    return MultiLabelBinarizer(classes=range(len(LABELS))).fit_transform(ids)


def test_fit_trains_on_the_label_sets_with_binary_cross_entropy(run):
    tagger, texts = run["tagger"], run["texts"]
    expected = _multi_hot(run["ids"])
    given = tagger.python_labels([[LABELS[i] for i in row] for row in run["ids"]], tagger.python_texts(texts))
    np.testing.assert_array_equal(given, expected)
    np.testing.assert_array_equal(tagger.python_labels(run["ids"], tagger.python_texts(texts)), expected)  # ids
    assert isinstance(tagger.loss, keras.losses.BinaryCrossentropy) and tagger.loss.from_logits
    assert np.isfinite(run["history"]["loss"]).all()


def test_predict_gives_the_labels_at_or_above_their_thresholds_most_probable_first(run):
    memory, thresholds = run["memory"], np.asarray(run["tuned"])
    assert len(set(run["tuned"])) > 1  # tuned per label, not the default
    probabilities = memory["probabilities"]
    for row, p in enumerate(probabilities):
        chosen = sorted(np.flatnonzero(p >= thresholds), key=lambda j: -p[j])
        assert memory["predicted_labels"][row] == [LABELS[j] for j in chosen]
        np.testing.assert_allclose(memory["predicted_scores"][row], p[chosen], atol=1e-6)
        assert memory["predicted_count"][row] == len(chosen)
    tagger = run["tagger"]
    tagger.thresholds = [0.01] * len(LABELS)  # every label, now
    assert all(len(names) == len(LABELS) for names in tagger.predict(run["dev_texts"][:2])["predicted_labels"])
    tagger.thresholds = run["tuned"]


def test_keras_file_and_both_exports_keep_the_thresholds_and_answer_alike(run):
    memory, texts = run["memory"], run["dev_texts"]
    loaded = keras.saving.load_model(str(run["root"] / "tagger.keras"), safe_mode=True)
    assert loaded.multi_label and loaded.thresholds == pytest.approx(run["tuned"])
    again = loaded.predict(texts)
    np.testing.assert_allclose(again["probabilities"], memory["probabilities"], atol=1e-6)
    assert again["predicted_labels"] == memory["predicted_labels"]
    for path in (run["exported"], run["scripted"]):  # export() writes what export_model writes
        recorded = tf.io.gfile.GFile(tf.io.gfile.join(path, "assets", "thresholds.txt")).read().split()
        assert [float(t) for t in recorded] == pytest.approx(run["tuned"])
        served = _served(path, texts)
        np.testing.assert_allclose(served["probabilities"], memory["probabilities"], atol=1e-6)
        for row, names in enumerate(memory["predicted_labels"]):
            assert [n.decode() for n in served["predicted_labels"][row] if n] == names


def test_a_saved_model_directory_loads_as_a_multi_label_classifier(run, tmp_path):
    reloaded = TextClassifier.from_model_dir(run["model_dir"], compile=False)
    assert reloaded.multi_label and reloaded.thresholds == pytest.approx(run["tuned"])
    assert reloaded.label_names == LABELS and reloaded.seq_length == 32
    hf_export.export_to_hugging_face(run["model_dir"], str(tmp_path / "hf"))
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert config["problem_type"] == "multi_label_classification"
    assert [config["multi_label_thresholds"][name] for name in LABELS] == pytest.approx(run["tuned"])


def test_bad_label_sets_and_thresholds_are_one_input_error(run):
    tagger, texts = run["tagger"], run["texts"][:2]
    with pytest.raises(InputError, match=r"y\[1\]: unknown label 'rage'"):
        tagger.fit(texts, [["joy"], ["joy", "rage"]], epochs=1, verbose=0)
    with pytest.raises(InputError, match="expected 2 label sets"):
        tagger.fit(texts, [["joy"]], epochs=1, verbose=0)
    with pytest.raises(InputError, match="thresholds: 3 thresholds for 28 labels"):
        tagger.thresholds = [0.5, 0.5, 0.5]
    with pytest.raises(InputError, match=r"each must be a probability in \(0, 1\)"):
        tagger.thresholds = [1.0] * len(LABELS)
    encoder = tiny_encoder()
    with pytest.raises(InputError, match="thresholds are for a multi-label classifier"):
        TextClassifier(BertClassifier(encoder, 2), tagger.tokenizer, thresholds=[0.5, 0.5])
    with pytest.raises(InputError, match="multi_label needs a head with one output per label"):
        TextClassifier(BertClassifier(encoder, 1), tagger.tokenizer, multi_label=True)


def test_multi_hot_labels_train_as_the_label_sets_do(run):
    tagger, texts, ids = run["tagger"], run["tagger"].python_texts(run["texts"]), run["ids"]
    expected = _multi_hot(ids)
    forms = {
        "array": expected,
        "bool array": expected.astype(bool),
        "list of 0/1 rows": expected.tolist(),  # was read as the label indices 0 and 1
        "list of NumPy rows": list(expected),
        "NumPy index sets": [np.array(row) for row in ids],
        "the files' labels fields": [",".join(str(i) for i in row) for row in ids],
    }
    for form, y in forms.items():
        np.testing.assert_array_equal(tagger.python_labels(y, texts), expected, err_msg=form)
    with pytest.raises(InputError, match=r"y\[0\]: \[0, 0, 0, .*\] lists a label twice.* each of the 28 labels"):
        tagger.python_labels(expected[:, :-1].tolist(), texts)  # rows one short
    with pytest.raises(InputError, match=r"a multi-hot array must be \[16, 28\].* got shape \(16, 27\)"):
        tagger.python_labels(expected[:, :-1], texts)
    with pytest.raises(InputError, match=r"y\[0\]: expected a label set .*, got int"):
        tagger.python_labels([row[0] for row in ids], texts)


def test_a_model_dir_argument_that_contradicts_its_head_is_refused(run, tmp_path):
    with pytest.raises(InputError, match=f"{run['model_dir']} holds a multi-label classifier.*leave multi_label out"):
        TextClassifier.from_model_dir(run["model_dir"], multi_label=False)  # read it as softmax, before
    single = TextClassifier(
        BertClassifier(tiny_encoder(), 3),
        run["tagger"].tokenizer,
        label_names=["a", "b", "c"],
        seq_length=32,
        compile=False,
    ).save_model_dir(str(tmp_path / "single"))
    for given in (dict(multi_label=True), dict(thresholds=[0.5] * 3)):
        with pytest.raises(InputError, match=f"{single} holds a single-label classifier .*leave multi_label and"):
            TextClassifier.from_model_dir(single, compile=False, **given)


def test_bad_dataset_labels_are_one_input_error(run):
    tagger, texts = run["tagger"], run["texts"][:2]
    hot = _multi_hot(run["ids"][:2])
    for labels, found in (
        (hot[:, :5], r"got shape \[5\] per text"),
        ([LABELS[row[0]] for row in run["ids"][:2]], "got string labels"),
        (np.array([row[0] for row in run["ids"][:2]]), "got a scalar per text"),
        (hot * 2, "got a value other than 0 and 1"),  # seen when read: was trained on
    ):
        with pytest.raises(InputError, match=rf"the dataset's labels: .*\[28\] per element.*; {found}"):
            tagger.evaluate(tf.data.Dataset.from_tensor_slices((texts, labels)), verbose=0)


def test_fit_on_a_dataset_of_multi_hot_rows(run):
    """Last: it trains the module's classifier further."""
    tagger, expected = run["tagger"], _multi_hot(run["ids"])
    rows = expected.astype(bool)
    np.testing.assert_array_equal(tagger.tensor_labels(tf.constant(rows)).numpy(), expected)  # what the map reads
    history = tagger.fit(tf.data.Dataset.from_tensor_slices((run["texts"], rows)).batch(8), epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
