"""Every `--task` export, end to end: a tiny model trained a few steps on real data is saved as a model directory,
exported by `serving.exporter.export_model`, loaded in a fresh process that imports only TensorFlow and
tensorflow_text (never `official`), and every signature is checked against the in-memory Keras model fed by the
pure-Python tokenizer and the original packing rules. The token-id SavedModels are also run in a process without
tensorflow_text. SQuAD answers are checked against the `run_squad.py --do_predict` post-processing
(`official.nlp.data.squad.postprocessing`) on dev-set strings.
"""

import csv
import json
import pathlib
import re

import keras
import numpy as np
import pytest
import tensorflow as tf

from official.nlp.checkpoints import model_dir
from official.nlp.data.squad import examples as squad_examples
from official.nlp.data.squad import features as squad_features
from official.nlp.data.squad import postprocessing as squad_postprocessing
from official.nlp.modeling import models
from official.nlp.modeling.configs import BertConfig
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.serving import exporter, squad_export
from official.nlp.tasks.feature_extraction import truncate_seq_pair
from official.nlp.tokenizers.tokenization import FullTokenizer
from tests.nlp.serving import fresh

pytestmark = pytest.mark.slow
HERE = pathlib.Path(__file__).resolve().parent
L = 32
SQUAD = dict(doc_stride=16, max_query_length=12, n_best_size=5, max_answer_length=8)
SQUAD_L = 64
CONLL_LABELS = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC"]
MRPC_LABELS = ["not_equivalent", "equivalent"]
WINDOW_STRIDE = 5
ATOL = 2e-5


def tiny_config():
    return BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )


def py_pack(tok, a, b=None, seq_length=L, *, ids_a=None, ids_b=None):
    """The original packing, in Python: [CLS] A [SEP] (B [SEP]), `_truncate_seq_pair`, zero padding."""
    tokens_a = list(ids_a) if ids_a is not None else tok.convert_tokens_to_ids(tok.tokenize(a))
    pair = b is not None or ids_b is not None
    tokens_b = (list(ids_b) if ids_b is not None else tok.convert_tokens_to_ids(tok.tokenize(b))) if pair else []
    pair = pair and bool(tokens_b)  # a B with no token is no second segment (the original's `if tokens_b:`)
    if pair:
        truncate_seq_pair(tokens_a, tokens_b, seq_length - 3)
    else:
        tokens_a = tokens_a[: seq_length - 2]
    cls, sep = tok.vocab["[CLS]"], tok.vocab["[SEP]"]
    ids = [cls, *tokens_a, sep] + ([*tokens_b, sep] if pair else [])
    types = [0] * (len(tokens_a) + 2) + [1] * (len(tokens_b) + 1 if pair else 0)
    pad = seq_length - len(ids)
    return {
        "input_word_ids": np.array(ids + [0] * pad, np.int32),
        "input_mask": np.array([1] * len(ids) + [0] * pad, np.int32),
        "input_type_ids": np.array(types + [0] * pad, np.int32),
    }


def stack(rows):
    return {k: np.stack([r[k] for r in rows]) for k in rows[0]}


def tsv_rows(path):
    with open(path, encoding="utf-8-sig") as f:
        return list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]


def conll_sentences(path, count):
    sentences, words, tags = [], [], []
    for line in open(path, encoding="utf-8"):
        parts = line.split()
        if not parts or parts[0] == "-DOCSTART-":
            if words:
                sentences.append((words, tags))
                words, tags = [], []
            if len(sentences) == count:
                break
            continue
        words.append(parts[0])
        tags.append(parts[-1])
    return sentences


@pytest.fixture(scope="module")
def tok(uncased_vocab):
    return FullTokenizer(str(uncased_vocab), do_lower_case=True)


@pytest.fixture(scope="module")
def texts(shared_data):
    mrpc = tsv_rows(shared_data / "glue" / "MRPC" / "dev.tsv")
    pairs = [(r[3], r[4]) for r in mrpc[:40]]
    # Real text plus the edge cases: empty strings, an over-long text (truncated as in training), accents.
    pairs[1] = ("", "")
    pairs[2] = (" ".join(r[3] for r in mrpc[50:56]), "Déjà vu: ½ price — naïve café")
    pairs[3] = ("Naïve 東京 café", "\u200b")  # a B that tokenizes to nothing
    conll = conll_sentences(shared_data / "conll2003" / "iob2" / "valid.txt", 40)
    swag = [json.loads(line) for line in open(shared_data / "swag" / "hf_transformers_sample.jsonl")]
    with open(shared_data / "squad" / "dev-v1.1.json", encoding="utf-8") as f:
        articles = json.load(f)["data"]
    qa = [(q["question"], p["context"]) for a in articles[:2] for p in a["paragraphs"][:3] for q in p["qas"][:2]]
    sample = [line.strip() for line in open(shared_data / "bert_sample_text.txt", encoding="utf-8") if line.strip()]
    return dict(pairs=pairs, conll=conll, swag=swag, qa=qa, sample=sample)


# The tests compare each export with the model it was exported from, so training need only move the weights off
# their initial values: one eager step does that without tracing (or XLA-compiling) a train function per model.
EAGER = dict(run_eagerly=True, jit_compile=False)
ONE_BATCH = 64  # every training set here fits one batch: one step per model


def _fit(model, x, y, loss):
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss=loss, **EAGER)
    model.fit(x, y, batch_size=ONE_BATCH, epochs=1, verbose=0)


def _trained_models(tok, texts):
    keras.utils.set_random_seed(7)
    sparse = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    trained = {}

    classifier = models.BertClassifier(BertEncoder.from_bert_config(tiny_config()), 2)
    x = stack([py_pack(tok, a, b) for a, b in texts["pairs"][3:]])
    _fit(classifier, x, np.array([i % 2 for i in range(len(texts["pairs"]) - 3)]), sparse)
    trained["classifier"] = classifier
    trained["encoder"] = classifier.encoder

    ner = models.BertTokenClassifier(BertEncoder.from_bert_config(tiny_config()), len(CONLL_LABELS))
    rows, labels = [], []
    for words, tags in texts["conll"]:
        rows.append(py_pack(tok, " ".join(words)))
        first = [CONLL_LABELS.index(t) for w, t in zip(words, tags) for k, _ in enumerate(tok.tokenize(w)) if k == 0]
        labels.append(np.array(([0] + first + [0] * L)[:L]))
    _fit(ner, stack(rows), np.stack(labels), sparse)
    trained["ner"] = ner

    swag = models.BertMultipleChoice(BertEncoder.from_bert_config(tiny_config()))
    x = stack(
        [stack([py_pack(tok, r["sent1"], f"{r['sent2']} {r[f'ending{i}']}") for i in range(4)]) for r in texts["swag"]]
    )
    _fit(swag, x, np.array([r["label"] for r in texts["swag"]]), sparse)
    trained["swag"] = swag

    span = models.BertSpanLabeler(BertEncoder.from_bert_config(tiny_config()))
    x = stack([py_pack(tok, q, c, SQUAD_L) for q, c in texts["qa"]])
    targets = np.full(len(texts["qa"]), 20)
    span.compile(optimizer=keras.optimizers.Adam(1e-3), loss={"start_logits": sparse, "end_logits": sparse}, **EAGER)
    span.fit(x, {"start_logits": targets, "end_logits": targets + 2}, batch_size=ONE_BATCH, epochs=1, verbose=0)
    trained["squad"] = span

    pretrainer = models.BertPretrainer(BertEncoder.from_bert_config(tiny_config()))
    x = stack([py_pack(tok, a, b) for a, b in zip(texts["sample"][:16], texts["sample"][1:17])])
    x["masked_lm_positions"] = np.tile(np.array([[1, 2, 3]], np.int32), [16, 1])
    y = {
        "masked_lm_ids": x["input_word_ids"][:, 1:4],
        "masked_lm_weights": np.ones((16, 3), np.float32),
        "next_sentence_labels": np.zeros((16, 1), np.int32),
    }
    pretrainer.compile(optimizer=keras.optimizers.Adam(1e-3), **EAGER)
    pretrainer.fit(x, y, batch_size=ONE_BATCH, epochs=1, verbose=0)
    trained["pretrainer"] = pretrainer
    return trained


@pytest.fixture(scope="module")
def graph_tokenizer(uncased_vocab):
    """The exports' tokenizer, one batch slice: every export traces, saves and (in the fresh processes) loads one
    copy of the tokenization graph instead of one per CPU (`parallel_shards` changes no id or order:
    tests/nlp/tokenizers/test_text_layers.py checks that)."""
    from official.nlp.tokenizers.text_layers import BertTokenizer

    return BertTokenizer(str(uncased_vocab), do_lower_case=True, parallel_shards=1)


@pytest.fixture(scope="module")
def exported(tmp_path_factory, tok, texts, uncased_vocab, graph_tokenizer):
    root = tmp_path_factory.mktemp("serving")
    trained = _trained_models(tok, texts)
    paths = {}
    for task, model in trained.items():
        directory = root / f"{task}_model"
        model_dir.save_model_dir(str(directory), model, vocab_file=str(uncased_vocab), do_lower_case=True)
        kwargs = dict(
            max_seq_length=L, keras_file=task == "classifier", hub_pair=task == "encoder", tokenizer=graph_tokenizer
        )
        if task == "classifier":  # what a fine-tuning job records: the labels, the task, max_seq_length
            (directory / "finetuning.json").write_text(json.dumps({"task": "mrpc", "labels": MRPC_LABELS}))
            (directory / "finetuning_settings.json").write_text(json.dumps({"max_seq_length": L}))
            kwargs.pop("max_seq_length")
        elif task == "encoder":
            kwargs["text_pair"] = True
        elif task == "ner":
            kwargs["label_names"] = CONLL_LABELS
        elif task == "squad":
            kwargs.update(max_seq_length=SQUAD_L, squad_settings=SQUAD)
        paths[task] = exporter.export_model(task, str(directory), str(root / f"{task}_export"), **kwargs)
    # The classifier fine-tuned with --long_text=sliding_window: served with the same windows. A tiny model's
    # logits hardly depend on the input, so its head is scaled up until windows and truncation tell apart.
    windows_model = models.BertClassifier(BertEncoder.from_bert_config(tiny_config()), 2)
    windows_model.set_weights(trained["classifier"].get_weights())
    windows_model.classifier.kernel.assign(windows_model.classifier.kernel * 1000.0)
    trained["classifier_windows"] = windows_model
    directory = root / "classifier_windows_model"
    model_dir.save_model_dir(str(directory), windows_model, vocab_file=str(uncased_vocab), do_lower_case=True)
    (directory / "finetuning.json").write_text(json.dumps({"task": "mrpc", "labels": MRPC_LABELS}))
    (directory / "finetuning_settings.json").write_text(
        json.dumps({"max_seq_length": L, "long_text": "sliding_window", "doc_stride": WINDOW_STRIDE})
    )
    paths["classifier"]["sliding_window"] = exporter.export_model(
        "classifier",
        str(directory),
        str(root / "classifier_windows_export"),
        keras_file=False,
        hub_pair=False,
        tokenizer=graph_tokenizer,
    )["saved_model"]
    return trained, paths


def _strings(values):
    return {"dtype": "string", "value": values}


def _ints(values):
    return {"dtype": "int32", "value": np.asarray(values).tolist()}


def _example(features):
    return tf.train.Example(
        features=tf.train.Features(
            feature={
                k: tf.train.Feature(
                    bytes_list=tf.train.BytesList(value=[s.encode() for s in (v if isinstance(v, list) else [v])])
                )
                for k, v in features.items()
            }
        )
    ).SerializeToString()


def _ner_texts(texts):
    """CoNLL sentences, the empty string, odd whitespace, and three sentences as one (longer than a window)."""
    long = " ".join(w for words, _ in texts["conll"][6:9] for w in words)
    return [" ".join(words) for words, _ in texts["conll"][:6]] + ["", "EU  rejects\tGerman call", long]


def _window_pairs(texts):
    """Pairs for the sliding-window classifier: MRPC's, and edge cases longer than a window (empty and zero-width B,
    accents, CJK)."""
    return texts["pairs"][:8] + [("", "東京 " * 40), ("Déjà " * 50, "")]


def _jobs(tok, texts, paths):
    """Inputs of every signature of every export (one fresh process runs them all)."""
    a = [p[0] for p in texts["pairs"][:8]]
    b = [p[1] for p in texts["pairs"][:8]]
    ner_text = _ner_texts(texts)
    swag = texts["swag"][:3]
    swag_context = [r["sent1"] for r in swag]
    swag_endings = [[f"{r['sent2']} {r[f'ending{i}']}" for i in range(4)] for r in swag]
    masked = ["The man went to the [MASK] store.", "[MASK]", "no mask here"]
    q = [x for x, _ in texts["qa"]] + ["", "what?"]
    c = [y for _, y in texts["qa"]] + ["", ""]
    raw = {
        "encoder": {"text_a": _strings(a), "text_b": _strings(b)},
        "classifier": {"text_a": _strings(a), "text_b": _strings(b)},
        "ner": {"text_a": _strings(ner_text)},
        "swag": {"context": _strings(swag_context), "endings": _strings(swag_endings)},
        "squad": {"question": _strings(q), "context": _strings(c)},
        "pretrainer": {"text_a": _strings(masked), "text_b": _strings(texts["sample"][:3])},
    }
    examples = {
        "encoder": [_example({"text_a": x, "text_b": y}) for x, y in zip(a, b)],
        "classifier": [_example({"text_a": x, "text_b": y}) for x, y in zip(a, b)],
        "ner": [_example({"text_a": x}) for x in ner_text],
        "swag": [_example({"context": x, "endings": y}) for x, y in zip(swag_context, swag_endings)],
        "squad": [_example({"question": x, "context": y}) for x, y in zip(q, c)],
        "pretrainer": [_example({"text_a": x, "text_b": y}) for x, y in zip(masked, texts["sample"][:3])],
    }
    ids = {task: stack([py_pack(tok, x, y) for x, y in zip(a, b)]) for task in ("encoder", "classifier")}
    ids["ner"] = stack([py_pack(tok, x) for x in ner_text])
    ids["swag"] = stack([stack([py_pack(tok, x, e) for e in ends]) for x, ends in zip(swag_context, swag_endings)])
    ids["squad"] = stack([py_pack(tok, x, y, SQUAD_L) for x, y in zip(q, c)])
    ids["pretrainer"] = {
        **stack([py_pack(tok, x, y) for x, y in zip(masked, texts["sample"][:3])]),
        "masked_lm_positions": np.array([[1, 2], [3, 4], [5, 6]], np.int32),
    }
    full, token_only = [], []
    for task, p in paths.items():
        full.append(
            {"name": f"{task}/raw", "path": p["saved_model"], "signature": "serving_default", "inputs": raw[task]}
        )
        full.append(
            {
                "name": f"{task}/examples",
                "path": p["saved_model"],
                "signature": "serve_examples",
                "inputs": {"examples": {"dtype": "latin1", "value": [e.decode("latin-1") for e in examples[task]]}},
            }
        )
        id_inputs = {k: _ints(v) for k, v in ids[task].items()}
        full.append(
            {"name": f"{task}/ids", "path": p["saved_model"], "signature": "serve_token_ids", "inputs": id_inputs}
        )
        token_only.append(
            {"name": f"{task}/ids", "path": p["token_ids"], "signature": "serve_token_ids", "inputs": id_inputs}
        )
    windows = _window_pairs(texts)
    full.append(
        {
            "name": "classifier_windows/raw",
            "path": paths["classifier"]["sliding_window"],
            "signature": "serving_default",
            "inputs": {"text_a": _strings([a for a, _ in windows]), "text_b": _strings([b for _, b in windows])},
        }
    )
    return full, token_only, ids


@pytest.fixture(scope="module")
def served(exported, tok, texts, tmp_path_factory):
    _, paths = exported
    full, token_only, ids = _jobs(tok, texts, paths)
    tmp = tmp_path_factory.mktemp("fresh")
    # The same processes also probe every signature with bad shapes (`probed`), on the models they load anyway.
    full_probe = [f"{task}={p['saved_model']}" for task, p in paths.items()]
    full_probe.append(f"classifier_windows={paths['classifier']['sliding_window']}")
    full_probe += [f"{name}={paths['encoder'][name]}" for name in ("hub_preprocessor", "hub_encoder")]
    token_probe = [f"{task}={p['token_ids']}" for task, p in paths.items()]
    return (
        fresh.serve(tmp, full, "tf_text", full_probe),
        fresh.serve(tmp, token_only, "no_tf_text", token_probe),
        ids,
        tmp,
    )


def _check_same(served_out, prefix, expected, names=None):
    for name in names or expected:
        got = served_out[f"{prefix}/{name}"]
        want = np.asarray(expected[name])
        if want.dtype.kind in "fc":
            np.testing.assert_allclose(got, want, atol=ATOL, err_msg=f"{prefix}/{name}")
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"{prefix}/{name}")


def test_classifier(exported, served, tok, texts):
    trained, paths = exported
    full, token_only, ids, _ = served
    model = trained["classifier"]
    logits = np.asarray(model(ids["classifier"], training=False))
    probabilities = tf.nn.softmax(logits).numpy()
    index = logits.argmax(-1)
    expected = {
        "probabilities": probabilities,
        "label_index": index,
        "label_name": np.array(MRPC_LABELS)[index],
        "logits": logits,
    }
    for signature in ("raw", "examples", "ids"):
        _check_same(full, f"classifier/{signature}", expected)
    _check_same(token_only, "classifier/ids", expected)
    # serve_examples also answers in TF Serving's classify convention.
    np.testing.assert_array_equal(full["classifier/examples/classes"], np.tile(MRPC_LABELS, [8, 1]))
    # The model describes itself: labels and length from the fine-tuning record, as variables and assets.
    assert list(full["classifier/raw/var:label_names"]) == MRPC_LABELS
    assert int(full["classifier/raw/var:max_seq_length"]) == L and bool(full["classifier/raw/var:do_lower_case"])
    assets = pathlib.Path(paths["classifier"]["saved_model"]) / "assets"
    assert (assets / "label_names.txt").read_text().split() == MRPC_LABELS
    assert (assets / "max_seq_length").read_text().strip() == str(L)
    assert json.loads((assets / "bert_config.json").read_text())["hidden_size"] == 32
    # The .keras file reloads to the same predictions.
    reloaded = keras.saving.load_model(paths["classifier"]["keras"])
    np.testing.assert_allclose(np.asarray(reloaded(ids["classifier"], training=False)), logits, atol=1e-6)


def test_classifier_sliding_window(exported, served, tok, texts):
    """Fine-tuned with --long_text=sliding_window: the export answers as run_classifier --do_predict does (logits
    averaged over the same windows of a long text), on the edge cases too (empty and zero-width B, accents, CJK).
    Served by the fresh process that loads the export anyway for its bad-shape probe."""
    from official.nlp.data import classifier_examples, classifier_features

    trained, _ = exported
    pairs = _window_pairs(texts)
    examples = [classifier_examples.InputExample(str(i), a, b, MRPC_LABELS[0]) for i, (a, b) in enumerate(pairs)]
    features = list(
        classifier_features.convert_examples(
            examples, tok, labels=MRPC_LABELS, max_seq_length=L, long_text="sliding_window", doc_stride=WINDOW_STRIDE
        )
    )
    assert len(features) > len(pairs) + 10  # several examples span windows
    x = {
        name: np.array([f[key] for f in features], np.int32)
        for name, key in (
            ("input_word_ids", "input_ids"),
            ("input_mask", "input_mask"),
            ("input_type_ids", "segment_ids"),
        )
    }
    model = trained["classifier_windows"]
    logits = classifier_features.average_by_example(
        np.asarray(model(x, training=False)), np.array([f["example_index"][0] for f in features]), len(pairs)
    )
    truncated = np.asarray(model(stack([py_pack(tok, a, b) for a, b in pairs]), training=False))
    assert np.abs(truncated - logits).max() > 1e-3  # this model tells windows and truncation apart
    got = served[0]
    np.testing.assert_array_equal(got["classifier_windows/raw/label_index"], logits.argmax(-1))
    np.testing.assert_allclose(got["classifier_windows/raw/probabilities"], tf.nn.softmax(logits).numpy(), atol=1e-5)
    np.testing.assert_allclose(got["classifier_windows/raw/logits"], logits, atol=ATOL)


def test_encoder(exported, served):
    trained, _ = exported
    full, token_only, ids, _ = served
    out = trained["encoder"](ids["encoder"], training=False)
    expected = {
        "pooled_output": out["pooled_output"],
        "sequence_output": out["sequence_output"],
        **{f"encoder_output_{i}": v for i, v in enumerate(out["encoder_outputs"])},
    }
    for signature in ("raw", "examples", "ids"):
        _check_same(full, f"encoder/{signature}", expected)
    _check_same(token_only, "encoder/ids", expected)
    # The in-graph tokenizer + packer give the Python tokenizer's ids, truncation and empty strings included.
    _check_same(full, "encoder/raw", ids["encoder"])


def test_hub_pair(exported, served, texts):
    """The TF-Hub-style pair reproduces the full export: tokenize -> bert_pack_inputs(seq_length) -> encoder."""
    import tensorflow_text  # noqa: F401

    _, paths = exported
    full, _, ids, _ = served
    preprocessor = tf.saved_model.load(paths["encoder"]["hub_preprocessor"])
    encoder = tf.saved_model.load(paths["encoder"]["hub_encoder"])
    a = [p[0] for p in texts["pairs"][:8]]
    b = [p[1] for p in texts["pairs"][:8]]
    packed = preprocessor.bert_pack_inputs(
        [preprocessor.tokenize(tf.constant(a)), preprocessor.tokenize(tf.constant(b))], seq_length=tf.constant(L)
    )
    for name, value in ids["encoder"].items():
        np.testing.assert_array_equal(packed[name].numpy(), value)
    out = encoder(packed)
    assert len(out["encoder_outputs"]) == 2
    np.testing.assert_allclose(out["pooled_output"].numpy(), full["encoder/raw/pooled_output"], atol=ATOL)
    longer = preprocessor.bert_pack_inputs([preprocessor.tokenize(tf.constant(a))], seq_length=48)
    assert longer["input_word_ids"].shape == (8, 48)


def _reference_words(tok, model, text):
    """What run_ner predicts for each whitespace word that has sub-tokens (the export's words): its label, from
    the window where it has the most context (`conll.convert_sentences`, `conll.word_predictions`), and its
    character span."""
    from official.nlp.data import conll

    matches = [m for m in re.finditer(r"\S+", text) if tok.tokenize(m.group())]
    words = [m.group() for m in matches]
    sentence = conll.Sentence(
        words=words, labels=["O"] * len(words), columns=[[w] for w in words], path="text", lines=list(range(len(words)))
    )
    features = conll.convert_sentences([sentence], tok, None, L)
    logits = np.asarray(model(features.model_inputs(), training=False))
    [tags] = conll.word_predictions(features, logits.argmax(-1), CONLL_LABELS, [sentence])
    return [(m.group(), CONLL_LABELS.index(t), m.start(), m.end()) for m, t in zip(matches, tags)], len(features)


def test_ner(exported, served, tok, texts):
    trained, _ = exported
    full, token_only, ids, _ = served
    logits = np.asarray(trained["ner"](ids["ner"], training=False))
    windows = 0
    for signature in ("raw", "examples"):
        prefix = f"ner/{signature}"
        for row, text in enumerate(_ner_texts(texts)):
            want, windows = _reference_words(tok, trained["ner"], text)
            n = int(full[f"{prefix}/num_words"][row])
            assert n == len(want), (text, n)
            assert list(full[f"{prefix}/words"][row][:n]) == [w for w, *_ in want]
            assert list(full[f"{prefix}/word_label_ids"][row][:n]) == [i for _, i, _, _ in want]
            assert list(full[f"{prefix}/word_labels"][row][:n]) == [CONLL_LABELS[i] for _, i, _, _ in want]
            assert list(full[f"{prefix}/word_start"][row][:n]) == [s for *_, s, _ in want]
            assert list(full[f"{prefix}/word_end"][row][:n]) == [e for *_, e in want]
            assert all(text[s:e] == w for w, _, s, e in want)
    assert windows > 1  # the last text spans several windows, and every one of its words is labelled
    assert full["ner/raw/num_words"][6] == 0  # the empty string: no words
    expected = {
        "logits": logits,
        "token_label_ids": logits.argmax(-1),
        "token_labels": np.array(CONLL_LABELS)[logits.argmax(-1)],
    }
    _check_same(full, "ner/ids", expected)
    _check_same(token_only, "ner/ids", expected)


def test_swag(exported, served):
    trained, _ = exported
    full, token_only, ids, _ = served
    logits = np.asarray(trained["swag"](ids["swag"], training=False))
    expected = {"logits": logits, "probabilities": tf.nn.softmax(logits).numpy(), "label_index": logits.argmax(-1)}
    for signature in ("raw", "examples", "ids"):
        _check_same(full, f"swag/{signature}", expected)
    _check_same(token_only, "swag/ids", expected)


def test_pretrainer(exported, served, tok, texts):
    trained, _ = exported
    full, token_only, ids, _ = served
    model = trained["pretrainer"]
    masked = ["The man went to the [MASK] store.", "[MASK]", "no mask here"]
    mask_id = tok.vocab["[MASK]"]
    rows = []
    for text_a, text_b in zip(masked, texts["sample"][:3]):
        parts = [tok.convert_tokens_to_ids(tok.tokenize(p)) for p in text_a.split("[MASK]")]
        ids_a = [t for k, p in enumerate(parts) for t in ([mask_id] if k else []) + p]
        rows.append(py_pack(tok, None, text_b, ids_a=ids_a))
    x = stack(rows)
    positions = [[i for i in range(L) if x["input_word_ids"][r, i] == mask_id] for r in range(3)]
    assert positions == [[6], [1], []]
    x["masked_lm_positions"] = np.array([[p[0] if p else 0] for p in positions], np.int32)
    out = model(x, training=False)
    probabilities = tf.nn.softmax(out["mlm_logits"]).numpy()[:, 0]
    top = probabilities.argmax(-1)
    for signature in ("raw", "examples"):
        prefix = f"pretrainer/{signature}"
        assert full[f"{prefix}/mlm_positions"].tolist() == [[6], [1], [-1]]
        assert full[f"{prefix}/mlm_token_ids"].tolist() == [[top[0]], [top[1]], [-1]]
        assert full[f"{prefix}/mlm_tokens"][0, 0] == tok.inv_vocab[top[0]]
        np.testing.assert_allclose(full[f"{prefix}/mlm_probabilities"][:2, 0], probabilities.max(-1)[:2], atol=ATOL)
        np.testing.assert_allclose(
            full[f"{prefix}/nsp_probabilities"], tf.nn.softmax(out["nsp_logits"]).numpy(), atol=ATOL
        )
    out = model(ids["pretrainer"], training=False)
    expected = {"mlm_logits": out["mlm_logits"], "nsp_logits": out["nsp_logits"]}
    _check_same(full, "pretrainer/ids", expected)
    _check_same(token_only, "pretrainer/ids", expected)


def _run_squad_answers(model, tok, pairs, seq_length, settings, version_2_with_negative=False):
    """What `run_squad.py --do_predict` writes for these strings: its features, the model, its post-processing."""
    examples = squad_examples.examples_from_strings(pairs)
    features, _ = squad_features.convert_examples_to_features(
        examples,
        tok,
        max_seq_length=seq_length,
        doc_stride=settings["doc_stride"],
        max_query_length=settings["max_query_length"],
        is_training=False,
    )
    x = stack(
        [
            {
                "input_word_ids": np.array(f.input_ids, np.int32),
                "input_mask": np.array(f.input_mask, np.int32),
                "input_type_ids": np.array(f.segment_ids, np.int32),
            }
            for f in features
        ]
    )
    out = model(x, training=False)
    post = squad_postprocessing.AnswerSettings(
        n_best_size=settings["n_best_size"],
        max_answer_length=settings["max_answer_length"],
        version_2_with_negative=version_2_with_negative,
    )
    result = squad_postprocessing.postprocess(examples, features, out["start_logits"], out["end_logits"], post)
    return [result.predictions[str(i)] for i in range(len(pairs))], len(features)


def test_squad_matches_run_squad(exported, served, tok, texts):
    trained, _ = exported
    full, token_only, ids, _ = served
    answers, num_features = _run_squad_answers(trained["squad"], tok, texts["qa"], SQUAD_L, SQUAD)
    assert num_features > 2 * len(texts["qa"])  # several windows per context: max-context decides
    for signature in ("raw", "examples"):
        got = list(full[f"squad/{signature}/answer_text"])
        assert got[: len(answers)] == answers
        assert got[-2:] == ["", ""]  # an empty context has no answer
        starts, ends = full[f"squad/{signature}/answer_start"], full[f"squad/{signature}/answer_end"]
        for i, (answer, (_, context)) in enumerate(zip(answers, texts["qa"])):
            assert " ".join(context[starts[i] : ends[i]].split()) == answer
    out = trained["squad"](ids["squad"], training=False)
    expected = {"start_logits": out["start_logits"], "end_logits": out["end_logits"]}
    _check_same(full, "squad/ids", expected)
    _check_same(token_only, "squad/ids", expected)


def test_squad_v2_null_threshold(exported, tok, shared_data, uncased_vocab, graph_tokenizer):
    """SQuAD 2.0 in the graph (in-memory module, same code as the export): null answers and the threshold."""
    trained, _ = exported
    with open(shared_data / "squad" / "dev-v2.0-subset-Normans-Rhine.json", encoding="utf-8") as f:
        paragraphs = json.load(f)["data"][0]["paragraphs"][:4]
    pairs = [(q["question"], p["context"]) for p in paragraphs for q in p["qas"][:3]]
    for threshold in (-1.0, 0.0, 1.0):
        module = squad_export.SpanLabelerExport(
            trained["squad"],
            vocab_file=str(uncased_vocab),
            do_lower_case=True,
            max_seq_length=SQUAD_L,
            tokenizer=graph_tokenizer,
            answer_settings=squad_postprocessing.AnswerSettings(
                version_2_with_negative=True, null_score_diff_threshold=threshold, **SQUAD
            ),
        )
        got = module.serve_text(
            {"question": tf.constant([q for q, _ in pairs]), "context": tf.constant([c for _, c in pairs])}
        )
        examples = squad_examples.examples_from_strings(pairs)
        features, _ = squad_features.convert_examples_to_features(
            examples,
            tok,
            max_seq_length=SQUAD_L,
            is_training=False,
            doc_stride=SQUAD["doc_stride"],
            max_query_length=SQUAD["max_query_length"],
        )
        x = stack(
            [
                {
                    "input_word_ids": np.array(f.input_ids, np.int32),
                    "input_mask": np.array(f.input_mask, np.int32),
                    "input_type_ids": np.array(f.segment_ids, np.int32),
                }
                for f in features
            ]
        )
        out = trained["squad"](x, training=False)
        result = squad_postprocessing.postprocess(
            examples,
            features,
            out["start_logits"],
            out["end_logits"],
            squad_postprocessing.AnswerSettings(
                n_best_size=SQUAD["n_best_size"],
                max_answer_length=SQUAD["max_answer_length"],
                version_2_with_negative=True,
                null_score_diff_threshold=threshold,
            ),
        )
        want = [result.predictions[str(i)] for i in range(len(pairs))]
        assert [s.decode() for s in got["answer_text"].numpy()] == want, threshold
        np.testing.assert_allclose(
            got["null_score_diff"].numpy(), [result.null_odds[str(i)] for i in range(len(pairs))], atol=1e-4
        )


def test_bad_requests_get_tfs_own_errors(exported):
    """A wrong dtype or rank is refused at the signature boundary, naming the input and the expected spec."""
    import tensorflow_text  # noqa: F401

    _, paths = exported
    serve = tf.saved_model.load(paths["classifier"]["saved_model"]).signatures["serving_default"]
    with pytest.raises((TypeError, ValueError, tf.errors.InvalidArgumentError)) as wrong_dtype:
        serve(text_a=tf.constant([1, 2]), text_b=tf.constant(["a", "b"]))
    assert "string" in str(wrong_dtype.value) or "text_a" in str(wrong_dtype.value)
    with pytest.raises((TypeError, ValueError, tf.errors.InvalidArgumentError)) as wrong_rank:
        serve(text_a=tf.constant([["a"]]), text_b=tf.constant([["b"]]))
    assert "shape" in str(wrong_rank.value).lower() or "text_a" in str(wrong_rank.value)
    with pytest.raises(TypeError, match="text_b"):
        serve(text_a=tf.constant(["only one input"]))


@pytest.fixture(scope="module")
def probed(served):
    """Every signature of every export given an empty batch, a scalar and an extra dimension on each input, in the
    fresh processes of `served` (`bad_shapes_process.py`)."""
    tmp = served[3]
    return {
        **json.loads((tmp / "probed_tf_text.json").read_text()),
        **json.loads((tmp / "probed_no_tf_text.json").read_text()),
    }


@pytest.mark.parametrize(
    "task",
    [
        "encoder",
        "classifier",
        "classifier_windows",
        "ner",
        "swag",
        "squad",
        "pretrainer",
        "hub_preprocessor",
        "hub_encoder",
    ],
)
def test_empty_batches_and_wrong_ranks(probed, task):
    """Issue 23: an empty batch gives empty outputs; a scalar or an extra dimension on any input gets one
    `InvalidArgument` naming the signature, the input and the shape it takes (before: `TensorScatterUpdate` and
    `MatMul` graph errors from inside the model, and a crashed process for 3-D token ids)."""
    signatures = {key[: -len("/spec")] for key in probed if key.startswith(task + "/") and key.endswith("/spec")}
    # The full export's signatures and the token-id model's; the TF-Hub pair's models have one each.
    assert len(signatures) >= (1 if task.startswith("hub_") else 2), signatures
    for prefix in signatures:
        signature = prefix.rsplit("/", 1)[-1]
        if "/token_ids/" in prefix:  # the token-id model serves serve_token_ids under both names
            signature = "serve_token_ids"
        empty = probed[f"{prefix}/empty"]
        assert "ok" in empty, (prefix, empty.get("message", "")[-800:])
        assert all(shape and shape[0] == 0 for shape in empty["ok"].values()), (prefix, empty)
        if task == "swag":  # [0, choices], from tf.Examples too (before: [0, 1] from serve_examples)
            assert all(shape[1:] in ([], [4]) for shape in empty["ok"].values()), (prefix, empty)
        for key, result in probed.items():
            if not key.startswith(prefix + "/") or key.endswith(("/spec", "/empty")):
                continue
            name = key[len(prefix) + 1 :].split("/")[0]
            assert result.get("error") == "InvalidArgumentError", (key, result)
            pattern = rf"{signature}: {name} must be a \d-D \w+ tensor \[batch[^\]]*\]; got one of shape"
            assert re.search(pattern, result["message"]), (key, result["message"][-800:])
