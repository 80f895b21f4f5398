"""keras-hub task presets both ways: a `BertTextClassifier` saved by keras-hub's own `save_to_preset` (random
weights, head included) converts to our fine-tuned classifier, whose logits are keras-hub's forward pass; our
fine-tuned classifier written with `--output_format=keras_hub` loads in keras-hub with
`TextClassifier.from_preset(folder)` and gives our logits back."""

from __future__ import annotations

import json
import os
import shutil

import keras
import keras_hub
import numpy as np
import pytest

from official.nlp.checkpoints import conversion, fine_tuned, head_kinds
from official.nlp.checkpoints.peers import keras_hub_tasks
from official.nlp.common.errors import InputError, MissingInputError
from tests.run_scripts.script_runs import assert_user_error, run_in_one_process

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "a", "cat", "dog", "sat", "on", "mat", "##s", "."]
IDS = np.array([[2, 5, 7, 9, 10, 5, 11, 3, 0, 0], [2, 6, 8, 12, 3, 5, 7, 3, 0, 0]], np.int32)
SEGMENTS = np.array([[0] * 10, [0, 0, 0, 0, 0, 1, 1, 1, 0, 0]], np.int32)
MASK = (IDS != 0).astype(np.int32)


def _keras_hub_outputs(classifier) -> np.ndarray:
    return np.asarray(classifier({"token_ids": IDS, "segment_ids": SEGMENTS, "padding_mask": MASK}, training=False))


def _our_logits(model) -> np.ndarray:
    inputs = {"input_word_ids": IDS, "input_mask": MASK, "input_type_ids": SEGMENTS}
    return np.asarray(model(inputs, training=False))


def _save_classifier(folder: str, activation: str, seed: int):
    keras.utils.set_random_seed(seed)
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=len(VOCAB), num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32,
        max_sequence_length=24,
    )  # fmt: skip
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor(
        keras_hub.models.BertTokenizer(vocabulary=VOCAB, lowercase=True), sequence_length=12
    )
    classifier = keras_hub.models.BertTextClassifier(
        backbone, num_classes=3, preprocessor=preprocessor, activation=activation
    )
    rng = np.random.default_rng(seed)
    for weight in classifier.weights:
        weight.assign(rng.normal(0, 0.3, weight.shape).astype(np.float32))
    classifier.save_to_preset(folder)
    return _keras_hub_outputs(classifier)


@pytest.fixture(scope="module")
def classifier_preset(tmp_path_factory) -> tuple[str, np.ndarray]:
    """A keras-hub BertTextClassifier preset written by keras-hub, and its own logits."""
    folder = str(tmp_path_factory.mktemp("keras_hub_task") / "classifier")
    return folder, _save_classifier(folder, "linear", 11)


def test_a_keras_hub_classifier_preset_converts_with_its_head(classifier_preset, tmp_path):
    folder, expected = classifier_preset
    described, model = fine_tuned.load_fine_tuned(folder)
    assert described.head.name == head_kinds.CLASSIFIER and described.labels == ["0", "1", "2"]
    assert described.record["max_seq_length"] == 12
    np.testing.assert_allclose(_our_logits(model), expected, atol=1e-5)
    out = tmp_path / "ours"
    conversion.convert(conversion.ConversionConfig(input=folder, output_dir=str(out)))
    task = json.loads((out / "finetuning.json").read_text())
    assert task["head"] == "classifier" and task["labels"] == ["0", "1", "2"]
    described, model = fine_tuned.load_fine_tuned(str(out))
    np.testing.assert_allclose(_our_logits(model), expected, atol=1e-5)
    from official.bert import TextClassifier

    text_classifier = TextClassifier.from_model_dir(folder)  # the preset folder itself, head and all
    assert text_classifier.label_names == ["0", "1", "2"] and text_classifier.seq_length == 12


def test_our_fine_tuned_classifier_loads_in_keras_hub_as_a_text_classifier(classifier_preset, tmp_path):
    """keras-hub preset -> our directory (label names of our own) -> keras-hub preset -> keras-hub and back."""
    folder, expected = classifier_preset
    described, model = fine_tuned.load_fine_tuned(folder)
    ours = str(tmp_path / "ours")
    fine_tuned.save_fine_tuned(model, ours, described.files, task_name="mrpc", head="classifier",
                               labels=["neg", "neutral", "pos"], settings={"max_seq_length": 10})  # fmt: skip
    back = str(tmp_path / "back")
    conversion.convert(conversion.ConversionConfig(input=ours, output_dir=back, output_format="keras_hub"))
    loaded = keras_hub.models.TextClassifier.from_preset(back)
    assert isinstance(loaded, keras_hub.models.BertTextClassifier)
    np.testing.assert_allclose(_keras_hub_outputs(loaded), expected, atol=1e-5)
    assert loaded.preprocessor.sequence_length == 10
    predicted = loaded.predict(["the cat sat on the mat .", "a dog"], verbose=0)
    assert predicted.shape == (2, 3)
    again, model = fine_tuned.load_fine_tuned(back)  # the label names travel in metadata.json
    assert again.labels == ["neg", "neutral", "pos"] and again.record["max_seq_length"] == 10
    assert again.task == "mrpc"  # which says that it takes pairs
    np.testing.assert_allclose(_our_logits(model), expected, atol=1e-5)


def test_softmax_and_sigmoid_classifiers(tmp_path):
    """keras-hub's probabilities are those of our logits; a sigmoid one is a multi-label classifier."""
    for activation, probabilities in (("softmax", lambda x: keras.ops.softmax(x)), ("sigmoid", keras.ops.sigmoid)):
        folder = str(tmp_path / activation)
        expected = _save_classifier(folder, activation, 5)
        described, model = fine_tuned.load_fine_tuned(folder)
        assert described.multi_label == (activation == "sigmoid")
        np.testing.assert_allclose(np.asarray(probabilities(_our_logits(model))), expected, atol=1e-5)
    assert described.thresholds == [0.5, 0.5, 0.5]


def test_bad_task_presets_are_one_line(classifier_preset, tmp_path):
    folder, _ = classifier_preset
    no_head = str(tmp_path / "no_head")
    shutil.copytree(folder, no_head)
    os.remove(os.path.join(no_head, keras_hub_tasks.TASK_WEIGHTS_FILE))
    with pytest.raises(MissingInputError, match="has task.json but no task.weights.h5"):
        fine_tuned.load_fine_tuned(no_head)
    other = str(tmp_path / "other")
    shutil.copytree(folder, other)
    task = json.loads(open(os.path.join(other, "task.json")).read())
    task["config"]["num_classes"] = 4
    with open(os.path.join(other, "task.json"), "w") as f:
        json.dump(task, f)
    with pytest.raises(InputError, match=r"for num_classes=4 in task.json; the two files are of different models"):
        fine_tuned.load_fine_tuned(other)


@pytest.mark.slow
def test_convert_checkpoint_both_ways_for_a_classifier(classifier_preset, tmp_path):
    folder, expected = classifier_preset
    ours, back = tmp_path / "ours", tmp_path / "back"
    results = run_in_one_process(  # both ways in one process: TensorFlow is imported once
        {
            "ours": ("convert_checkpoint.py", [f"--input={folder}", f"--output_dir={ours}"]),
            "back": ("convert_checkpoint.py", [f"--input={ours}", f"--output_dir={back}", "--output_format=keras_hub"]),
        }
    )
    for result in results.values():
        assert result.returncode == 0, result.stderr[-3000:]
    np.testing.assert_allclose(
        _keras_hub_outputs(keras_hub.models.TextClassifier.from_preset(str(back))), expected, atol=1e-5
    )
    (back / "task.weights.h5").write_bytes(b"cut")
    (result,) = run_in_one_process(
        {"cut": ("convert_checkpoint.py", [f"--input={back}", f"--output_dir={tmp_path / 'o'}"])}
    ).values()
    assert_user_error(result, "task.weights.h5 is not a keras-hub BertTextClassifier's weights file")
    assert not (tmp_path / "o").exists()
