"""`checkpoints.fine_tuned`: the head kinds every task records are registered and load back as written; a
directory written before it existed (one scalar `threshold`) still reads; a Hugging Face classifier folder is read
from its `config.json` (by the export too), and one that contradicts itself is refused naming what. transformers is
the reference for the round trip in tests/nlp/checkpoints/peers/test_hf_export.py."""

from __future__ import annotations

import json

import keras
import numpy as np
import pytest

from official.nlp.checkpoints import conversion, fine_tuned, head_kinds, model_dir, model_loading
from official.nlp.checkpoints.peers import hf_export
from official.nlp.common.errors import InputError
from official.nlp.modeling.configs import BertConfig
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.modeling.models import BertClassifier, BertMultipleChoice, BertSpanLabeler, BertTokenClassifier
from official.nlp.serving import exporter
from official.nlp.tasks import classification, multiple_choice, tagging

TINY = dict(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32)
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad", "film", "the", "a"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pretrained")
    (folder / "vocab.txt").write_text("".join(f"{token}\n" for token in VOCAB))
    keras.utils.set_random_seed(0)
    encoder = BertEncoder.from_bert_config(BertConfig(vocab_size=len(VOCAB), max_position_embeddings=32, **TINY))
    model_dir.save_model_dir(str(folder / "model"), encoder, vocab_file=str(folder / "vocab.txt"), do_lower_case=True)
    return model_loading.read_model_files(str(folder / "model"))


def test_every_head_a_task_records_is_registered():
    recorded = {
        classification.ClassificationTask.head,
        head_kinds.classifier_head(multi_label=True),
        tagging.TaggingTask.head,
        tagging.FeatureBasedTaggingTask.head,
        multiple_choice.MultipleChoiceTask.head,
        head_kinds.SPAN_LABELER,  # SquadTask.head, dense and BiLSTM
        head_kinds.SPAN_BILSTM,
    }
    assert recorded == set(head_kinds.HEADS)
    assert {kind.serving_task for kind in head_kinds.HEADS.values()} == {"classifier", "ner", "swag", "squad", None}
    assert [k.name for k in head_kinds.HEADS.values() if k.hugging_face] == ["classifier", "multi_label_classifier"]
    # A task of the user's own records its class name: read, never built here.
    unknown = head_kinds.head_kind("ToyTask")
    assert (unknown.name, unknown.serving_task, unknown.build, unknown.hugging_face) == ("ToyTask", None, None, None)


@pytest.mark.parametrize(
    "head, model_class, labels",
    [
        ("token_classifier", BertTokenClassifier, ["O", "B-PER", "I-PER"]),
        ("multiple_choice", BertMultipleChoice, ["0", "1", "2", "3"]),
    ],
)
def test_each_head_loads_back_as_written(files, tmp_path, head, model_class, labels):
    encoder = BertEncoder.from_bert_config(files.config)
    model = model_class(encoder, len(labels)) if model_class is BertTokenClassifier else model_class(encoder)
    path = str(tmp_path / "model")
    fine_tuned.save_fine_tuned(model, path, files, task_name="t", head=head, labels=labels, settings={"x": 1})
    described, loaded = fine_tuned.load_fine_tuned(path)
    assert isinstance(loaded, model_class) and described.head.name == head and described.labels == labels
    assert described.record["x"] == 1 and described.thresholds is None
    for mine, theirs in zip(model.weights, loaded.weights):
        np.testing.assert_array_equal(mine.numpy(), theirs.numpy())
    with pytest.raises(InputError, match=f"{path} holds a fine-tuned {head} head, not a classifier head; fine-tune"):
        fine_tuned.load_fine_tuned(path, serving_task="classifier", what="classifier head")


def test_a_directory_of_an_older_run_still_reads(files, tmp_path):
    """A multi-label best_model/ that recorded one `threshold` for every label (runs before per-label thresholds),
    and a model directory without finetuning.json (a pretrained model: no head)."""
    model = BertClassifier(BertEncoder.from_bert_config(files.config), 3)
    path = str(tmp_path / "old")
    fine_tuned.save_fine_tuned(
        model,
        path,
        files,
        task_name="goemotions",
        head="multi_label_classifier",
        labels=["a", "b", "c"],
        settings={"max_seq_length": 16, "threshold": 0.3},
    )
    described = fine_tuned.describe(path)
    assert described.multi_label and described.thresholds == [0.3, 0.3, 0.3] and described.task == "goemotions"
    assert fine_tuned.describe(files.checkpoint).head is None
    with pytest.raises(InputError, match="holds no fine-tuned classifier; pass num_classes"):
        fine_tuned.load_fine_tuned(files.checkpoint, what="classifier", hint="pass num_classes")
    with pytest.raises(InputError, match="holds no fine-tuned classifier head; fine-tune one"):
        fine_tuned.load_fine_tuned(files.checkpoint, serving_task="classifier", what="classifier head")


def test_a_run_without_best_model_says_so_and_loads_through_its_task(files, tmp_path):
    """A fine-tuning --output_dir trained without evaluation has checkpoints and the run's settings, which name its
    task but (SQuAD's dense head) not its head kind: loading it without the task says that, not that it holds no
    head; with the task (what the text task and the export pass) it loads with its head."""
    model = BertSpanLabeler(BertEncoder.from_bert_config(files.config))
    run = tmp_path / "run"
    model_dir.save_model_dir(str(run), model, vocab_file=files.vocab_file, do_lower_case=True)
    (run / "bert_config.json").unlink()
    settings = {"task": "squad_v1.1", "bert_config": files.config.to_dict(), "do_lower_case": True}
    (run / "finetuning_settings.json").write_text(json.dumps({**settings, "vocab_file": files.vocab_file}))
    with pytest.raises(InputError, match=f"^{run} is a squad_v1.1 fine-tuning run without best_model/"):
        fine_tuned.load_fine_tuned(str(run))
    described, loaded = fine_tuned.load_fine_tuned(str(run), serving_task="squad")
    assert isinstance(loaded, BertSpanLabeler) and described.task == "squad_v1.1"
    for mine, theirs in zip(model.weights, loaded.weights):
        np.testing.assert_array_equal(mine.numpy(), theirs.numpy())


def _hf_classifier(files, tmp_path, labels, **config_changes):
    model = BertClassifier(BertEncoder.from_bert_config(files.config), max(len(labels), 1))
    ours = classification.save_classifier(model, str(tmp_path / "ours"), files, task_name="x", labels=labels)
    hf = tmp_path / "hf"
    hf_export.export_to_hugging_face(ours, str(hf))
    config = json.loads((hf / "config.json").read_text())
    config.update(config_changes)
    for key in [key for key, value in config_changes.items() if value is None]:
        del config[key]
    (hf / "config.json").write_text(json.dumps(config))
    return str(hf)


def test_a_hugging_face_folder_says_what_it_is(files, tmp_path):
    # transformers' own folders may leave out problem_type: one output is regression, more a softmax.
    hf = _hf_classifier(files, tmp_path, ["no", "yes"], problem_type=None)
    described = fine_tuned.describe(hf)
    assert (described.head.name, described.labels, described.thresholds) == ("classifier", ["no", "yes"], None)
    assert described.task == "generic" and described.files.checkpoint_format == "hf"
    (tmp_path / "hf" / "config.json").write_text(
        json.dumps(
            {
                **json.loads((tmp_path / "hf" / "config.json").read_text()),
                "problem_type": "multi_label_classification",
                "multi_label_thresholds": {"yes": 0.75},
            }
        )
    )
    described = fine_tuned.describe(hf)
    assert described.multi_label and described.thresholds == [0.5, 0.75]  # a label it does not name: 0.5
    # export_model.py --task=classifier serves the folder as it is: labels, sigmoid, thresholds, one text.
    hf_files = model_loading.read_model_files(hf)
    model = exporter.load_task_model("classifier", hf_files, hf)
    settings = exporter.recorded_settings("classifier", exporter.task_record("classifier", hf_files, hf))
    assert isinstance(model, BertClassifier) and settings["label_names"] == ["no", "yes"]
    assert settings["thresholds"] == [0.5, 0.75] and settings["text_pair"] is False
    with pytest.raises(InputError, match=f"--init_checkpoint={hf} holds a fine-tuned multi_label_classifier head, not"):
        exporter.load_task_model("ner", hf_files, hf)


@pytest.mark.parametrize(
    "change, refused",
    [
        ({"problem_type": "ranking"}, "problem_type 'ranking' is not one this library reads"),
        (
            {"problem_type": "multi_label_classification", "multi_label_thresholds": {"maybe": 0.2}},
            r"multi_label_thresholds names labels not in id2label: \['maybe'\]",
        ),
        (
            {"id2label": {"0": "no", "1": "yes", "2": "maybe"}},
            "3 labels in config.json for a classifier with 2 outputs",
        ),
        ({"id2label": {"first": "no", "second": "yes"}}, "id2label's keys must be 0, 1, ..."),
    ],
)
def test_a_hugging_face_folder_that_contradicts_itself_is_refused(files, tmp_path, change, refused):
    hf = _hf_classifier(files, tmp_path, ["no", "yes"], **change)
    with pytest.raises(InputError, match=refused):
        conversion.convert(conversion.ConversionConfig(hf, str(tmp_path / "back")))
    assert not (tmp_path / "back").exists()


def test_a_head_is_left_out_only_with_a_warning(files, tmp_path, caplog):
    """The original TF1 layout holds an encoder: converting a classifier to it says what it leaves out."""
    hf = _hf_classifier(files, tmp_path, ["no", "yes"])
    with caplog.at_level("WARNING"):
        conversion.convert(conversion.ConversionConfig(hf, str(tmp_path / "tf1"), output_format="tf1"))
    assert (
        "holds a fine-tuned classifier head, which tf1 does not hold (--output_format=ours keeps it): its "
        in caplog.text
    )
    assert model_loading.read_model_files(str(tmp_path / "tf1")).checkpoint_format == "tf1"
    # A pretrained Hugging Face folder still converts to an encoder.
    encoder_hf = tmp_path / "encoder_hf"
    hf_export.export_to_hugging_face(files.checkpoint.rsplit("/", 1)[0], str(encoder_hf))
    written = conversion.convert(conversion.ConversionConfig(str(encoder_hf), str(tmp_path / "encoder")))
    assert fine_tuned.describe(str(tmp_path / "encoder")).head is None and written.checkpoint_format == "ours"


def test_a_feature_based_tagger_is_refused_by_name_not_by_a_checkpoint_mismatch(files, tmp_path):
    """run_ner --feature_based's head is built from that job's flags (layers, BiLSTM): the export and the text task
    say so in one line instead of failing to restore it into a token classifier."""
    from official.nlp.modeling.feature_tagger import BertFeatureTagger

    tagger = BertFeatureTagger(BertEncoder.from_bert_config(files.config), 3, layers=(-1,), lstm_units=4)
    path = str(tmp_path / "tagger")
    fine_tuned.save_fine_tuned(
        tagger, path, files, task_name="conll_ner_feature_based", head="feature_tagger", labels=["O", "B", "I"]
    )
    model_files = model_loading.read_model_files(path)
    with pytest.raises(
        InputError,
        match=r"feature_tagger head, which only the job that trained it builds .* as a ner head; it is a "
        r"feature-based NER model .*: tag files with run_ner --do_predict",
    ):
        exporter.load_task_model("ner", model_files, path)
    assert fine_tuned.describe(path).labels == ["O", "B", "I"]
