"""What is served is what was trained (issue 22): tiny models fine-tuned a few steps by the tasks that the scripts
run, their `--do_predict` answers, and the SavedModels exported from each job's `--output_dir`, loaded in ONE fresh
process that imports only TensorFlow and tensorflow_text, answer the same inputs alike.

The cases: a classifier on pairs (`--long_text=truncate`), one on single texts and a regression on pairs (both
`--long_text=sliding_window`), a multi-label classifier on GoEmotions (`--task_name=goemotions`, thresholds tuned
on dev, sliding windows), SQuAD v1.1 (contexts of several `--doc_stride` windows) with the dense span head and
with the BiLSTM one (`--span_head=bilstm`, which must also learn and be rebuilt by `--do_predict`), and the encoder
(`extract_features` against the encoder export). Inputs hold texts longer than `max_seq_length` on either side,
empty and zero-width (\u200b) second texts, accents and CJK. Labels and answers are equal; probabilities, scores,
vectors and span scores equal to 1e-5.
"""

import csv
import json
import pathlib

import keras
import numpy as np
import pytest
import tensorflow as tf

from official.nlp.checkpoints import model_dir
from official.nlp.checkpoints.peers import hf_export
from official.nlp.modeling.configs import BertConfig
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.serving import exporter
from official.nlp.tasks import classification, feature_extraction, question_answering
from official.nlp.tokenizers import text_layers
from tests.nlp.serving import fresh

pytestmark = pytest.mark.slow
HERE = pathlib.Path(__file__).resolve().parent
SEQ = 32
ZERO_WIDTH = "\u200b"


def _tsv(path, count):
    with open(path, encoding="utf-8-sig") as f:
        return list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1 : count + 1]


def _hard_texts(rows):
    """(text_a, text_b) pairs that stress packing: long on either side, empty or zero-width B, accents, CJK."""
    long_text = " ".join(row[0] for row in rows[:4])
    return [
        (long_text, "Short."),
        ("Short.", long_text),
        (long_text, long_text[::-1]),
        ("Naïve 東京 café", ZERO_WIDTH),
        ("Naïve 東京 café, once more", ""),
        (long_text + " 北京大学の学生", ""),
        ("Déjà vu: ½ price — naïve café", "北京大学の学生"),
        ("ÉCOLE Ärger ﬁne", "crème brûlée"),
    ]


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def _classifier(root, init, name, train, dev, test, **settings):
    """Fine-tunes with `run_classifier` on generic JSON lines; returns the --output_dir and the test inputs."""
    data = root / f"{name}_data"
    data.mkdir()
    for split, rows in (("train", train), ("dev", dev), ("test", test)):
        _write_jsonl(data / f"{split}.jsonl", rows)
    out = str(root / f"{name}_out")
    classification.run_classifier(
        classification.ClassifierConfig(
            task_name="generic",
            file_format="jsonl",
            text_a_column="text_a",
            data_dir=str(data),
            init_checkpoint=init,
            output_dir=out,
            max_seq_length=SEQ,
            train_batch_size=8,
            num_train_epochs=1,
            learning_rate=1e-3,
            do_train=True,
            do_predict=True,
            **settings,
        )
    )
    return out


def _split(field, kind):
    """A comma-separated field of the multi-label submission file (empty: no label predicted)."""
    return [kind(x) for x in field.split(",")] if field else []


def _squad_file(path, paragraphs):
    path.write_text(json.dumps({"version": "1.1", "data": [{"title": "t", "paragraphs": paragraphs}]}))
    return str(path)


def _squad_paragraphs(shared_data):
    """Two dev-v1.1 paragraphs (each several windows of 64 tokens), six questions each, and one of accents and CJK
    with a question longer than --max_query_length."""
    with open(shared_data / "squad" / "dev-v1.1.json", encoding="utf-8") as f:
        article = json.load(f)["data"][0]
    paragraphs = [{**p, "qas": p["qas"][:6]} for p in article["paragraphs"][:2]]
    context = (
        "Zoë Ängström opened the Café Müller in Zürich in 1921, and its crème brûlée was famous. "
        "東京大学の学生 came every spring; the naïve décor never changed. " * 3
    )
    qas = [
        ("Who opened the Café Müller?", "Zoë Ängström"),
        (
            "Where was the Café Müller, the one with the famous crème brûlée and the naïve décor that never changed "
            "in all the years that students came every spring?",
            "Zürich",
        ),
        ("誰が来ましたか", "東京大学の学生"),
    ]
    paragraphs.append(
        {
            "context": context,
            "qas": [
                {"id": f"extra{i}", "question": q, "answers": [{"text": a, "answer_start": context.index(a)}]}
                for i, (q, a) in enumerate(qas)
            ],
        }
    )
    return paragraphs


@pytest.fixture(scope="module")
def runs(tmp_path_factory, shared_data, uncased_vocab):
    """Every job trained and predicted here, every export served by one fresh process: `(expected, served)`."""
    root = tmp_path_factory.mktemp("served")
    keras.utils.set_random_seed(4)
    config = BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    init = str(root / "model")
    model_dir.save_model_dir(
        init, BertEncoder.from_bert_config(config), vocab_file=str(uncased_vocab), do_lower_case=True
    )
    glue = shared_data / "glue"
    mrpc = [(r[3], r[4], r[0]) for r in _tsv(glue / "MRPC" / "train.tsv", 64) + _tsv(glue / "MRPC" / "dev.tsv", 24)]
    stsb = [(r[7], r[8], float(r[9])) for r in _tsv(glue / "STS-B" / "train.tsv", 72)]
    sst2 = [(r[0], None, r[1]) for r in _tsv(glue / "SST-2" / "train.tsv", 72)]
    pairs = [(a, b) for a, b, _ in mrpc[64:76]] + _hard_texts(mrpc)
    singles = [a for a, _, _ in sst2[64:]] + [a for a, _ in _hard_texts(mrpc)]

    def rows(examples, keys=("text_a", "text_b", "label")):
        return [{k: v for k, v in zip(keys, e) if v is not None} for e in examples]

    # One batch slice: each export traces, saves and loads one copy of the tokenization graph, not one per CPU
    # (`parallel_shards` changes no id or order: tests/nlp/tokenizers/test_text_layers.py checks that).
    expected, jobs = {}, []
    tokenizer = text_layers.BertTokenizer(str(uncased_vocab), True, parallel_shards=1)

    def export(name, task, out, inputs, **kwargs):
        path = exporter.export_model(
            task, out, str(root / f"{name}_export"), keras_file=False, tokenizer=tokenizer, **kwargs
        )["saved_model"]
        jobs.append(
            {
                "name": name,
                "path": path,
                "signature": "serving_default",
                "inputs": {k: {"dtype": "string", "value": v} for k, v in inputs.items()},
            }
        )

    def classifier_case(name, train, dev, test, **settings):
        out = _classifier(root, init, name, rows(train), rows(dev), rows(test, ("text_a", "text_b")), **settings)
        results = np.loadtxt(pathlib.Path(out) / "test_results.tsv", delimiter="\t", dtype=np.float64, ndmin=1)
        # The submission file: a header, then `index<TAB>prediction` per example.
        submission = (pathlib.Path(out) / "predictions.jsonl").read_text(encoding="utf-8").splitlines()[1:]
        expected[name] = (results, [line.split("\t")[1] for line in submission])
        columns = {"text_a": [t[0] for t in test]}
        if "text_b_column" in settings:
            columns["text_b"] = [t[1] for t in test]
        # The export reads everything from the job's --output_dir: labels, pair signature, long-text rule.
        export(name, "classifier", out, columns)

    classifier_case("pair", mrpc[:64], mrpc[64:], pairs, text_b_column="text_b")
    classifier_case(
        "single", sst2[:64], sst2[64:], [(t, None) for t in singles], long_text="sliding_window", doc_stride=7
    )
    classifier_case(
        "regression", stsb[:64], stsb[64:], pairs, text_b_column="text_b", regression=True, long_text="sliding_window"
    )

    # Multi-label: GoEmotions through its task name, thresholds tuned on dev and recorded with best_model/, which
    # --do_predict and the export both read.
    goemotions = root / "goemotions_data"
    goemotions.mkdir()
    source = shared_data / "goemotions"
    for split, count in (("train", 64), ("dev", 32)):
        lines = (source / f"{split}.tsv").read_text(encoding="utf-8").splitlines(keepends=True)[:count]
        (goemotions / f"{split}.tsv").write_text("".join(lines), encoding="utf-8")
    test_texts = [line.split("\t")[0] for line in (source / "test.tsv").read_text(encoding="utf-8").splitlines()[:12]]
    test_texts += [a for a, _ in _hard_texts(mrpc)]
    (goemotions / "test.tsv").write_text("".join(f"{t}\t0\tt{i}\n" for i, t in enumerate(test_texts)), "utf-8")
    multi_out = root / "goemotions_out"
    classification.run_classifier(
        classification.ClassifierConfig(
            task_name="goemotions",
            data_dir=str(goemotions),
            init_checkpoint=init,
            output_dir=str(multi_out),
            max_seq_length=SEQ,
            train_batch_size=8,
            num_train_epochs=1,
            learning_rate=1e-3,
            long_text="sliding_window",
            doc_stride=7,
            tune_thresholds=True,
            do_train=True,
            do_eval=True,
            do_predict=True,
        )
    )
    submission = [line.split("\t") for line in (multi_out / "goemotions.tsv").read_text("utf-8").splitlines()[1:]]
    expected["multi_label"] = (
        np.loadtxt(multi_out / "test_results.tsv", delimiter="\t", dtype=np.float64, ndmin=2),
        [(_split(row[1], str), _split(row[2], float)) for row in submission],
        json.loads((multi_out / "best_model" / "finetuning_settings.json").read_text())["thresholds"],
        root / "multi_label_export",
        test_texts,
    )
    export("multi_label", "classifier", str(multi_out), {"text_a": test_texts})

    # The encoder: extract_features' pooled vectors and last layer against the encoder export on the same texts
    # (extract_features writes a pair as `a ||| b` and an empty second text as the first text alone).
    lines = [f"{a} ||| {b}" if b else a for a, b in pairs]
    (root / "extract.txt").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    feature_extraction.run_feature_extraction(
        feature_extraction.FeatureExtractionConfig(
            input_file=str(root / "extract.txt"),
            output_file=str(root / "features.jsonl"),
            init_checkpoint=init,
            layers="-1",
            max_seq_length=SEQ,
            sentence_vectors_file=str(root / "pooled.npy"),
        )
    )
    features = [json.loads(line) for line in (root / "features.jsonl").read_text(encoding="utf-8").splitlines()]
    expected["encoder"] = (features, np.load(root / "pooled.npy"))
    export(
        "encoder",
        "encoder",
        init,
        {"text_a": [a for a, _ in pairs], "text_b": [b for _, b in pairs]},
        text_pair=True,
        max_seq_length=SEQ,
        hub_pair=False,
    )

    # SQuAD v1.1 through the task API: predict_file has answers, so predicting is the evaluation.
    paragraphs = _squad_paragraphs(shared_data)
    squad_file = _squad_file(root / "squad.json", paragraphs)
    squad_out = str(root / "squad_out")
    question_answering.run_squad(
        question_answering.SquadConfig(
            init_checkpoint=init,
            output_dir=squad_out,
            train_file=squad_file,
            predict_file=squad_file,
            do_train=True,
            do_predict=True,
            max_seq_length=64,
            doc_stride=24,
            max_query_length=16,
            train_batch_size=8,
            num_train_epochs=1,
            learning_rate=1e-3,
        )
    )
    questions = [(qa["id"], qa["question"], p["context"]) for p in paragraphs for qa in p["qas"]]
    squad_dir = pathlib.Path(squad_out)
    expected["squad"] = (
        [q for q, _, _ in questions],
        json.loads((squad_dir / "predictions.json").read_text(encoding="utf-8")),
        json.loads((squad_dir / "nbest_predictions.json").read_text(encoding="utf-8")),
    )
    squad_texts = {"question": [q for _, q, _ in questions], "context": [c for _, _, c in questions]}
    export("squad", "squad", squad_out, squad_texts)

    # The BiLSTM span head (--span_head=bilstm, the paper's "LTR + BiLSTM" row) on the same data for two epochs;
    # then --do_predict alone on its --output_dir, without --span_head: the run's head is rebuilt from its record.
    bilstm_out = root / "squad_bilstm_out"
    windows = dict(max_seq_length=64, doc_stride=24, max_query_length=16)
    question_answering.run_squad(
        question_answering.SquadConfig(
            init_checkpoint=init,
            output_dir=str(bilstm_out),
            train_file=squad_file,
            predict_file=squad_file,
            do_train=True,
            do_predict=True,
            train_batch_size=8,
            num_train_epochs=2,
            learning_rate=1e-3,
            steps_per_loop=2,
            span_head="bilstm",
            **windows,
        )
    )
    trained = json.loads((bilstm_out / "predictions.json").read_text(encoding="utf-8"))
    (bilstm_out / "predictions.json").unlink()
    question_answering.run_squad(
        question_answering.SquadConfig(
            init_checkpoint=init, output_dir=str(bilstm_out), predict_file=squad_file, do_predict=True, **windows
        )
    )
    expected["squad_bilstm"] = (
        [q for q, _, _ in questions],
        trained,
        json.loads((bilstm_out / "predictions.json").read_text(encoding="utf-8")),
        json.loads((bilstm_out / "nbest_predictions.json").read_text(encoding="utf-8")),
        _train_losses(bilstm_out / "summaries"),
        json.loads((bilstm_out / "best_model" / "finetuning.json").read_text(encoding="utf-8"))["head"],
    )
    export("squad_bilstm", "squad", str(bilstm_out), squad_texts)

    return expected, fresh.serve(root, jobs)


def _train_losses(summaries: pathlib.Path) -> list[float]:
    """The training loss of each loop, in step order, as TensorBoard shows it."""
    losses = {}
    for events in summaries.glob("events.out.tfevents*"):
        for event in tf.compat.v1.train.summary_iterator(str(events)):
            for value in event.summary.value:
                if value.tag == "loss":
                    losses[event.step] = float(tf.make_ndarray(value.tensor))
    return [losses[step] for step in sorted(losses)]


@pytest.mark.parametrize("name", ["pair", "single"])
def test_classifier_served_equals_do_predict(runs, name):
    expected, served = runs
    probabilities, labels = expected[name]
    assert served[f"{name}/var:max_seq_length"] == SEQ
    np.testing.assert_allclose(served[f"{name}/probabilities"], probabilities, atol=1e-5)
    assert list(served[f"{name}/label_name"]) == labels


def test_multi_label_served_equals_do_predict(runs):
    expected, served = runs
    probabilities, predictions, thresholds, export_dir, _ = expected["multi_label"]
    np.testing.assert_allclose(served["multi_label/probabilities"], probabilities, atol=1e-5)
    for row, (names, scores) in enumerate(predictions):
        kept = served["multi_label/predicted_labels"][row] != ""
        assert list(served["multi_label/predicted_labels"][row][kept]) == names, row
        np.testing.assert_allclose(served["multi_label/predicted_scores"][row][kept], scores, atol=1e-5)
        assert served["multi_label/predicted_count"][row] == len(names)
    # The export serves the thresholds tuned on dev that best_model/ recorded, and they decide something here.
    served_thresholds = (export_dir / "1" / "assets" / "thresholds.txt").read_text().split()
    np.testing.assert_allclose([float(t) for t in served_thresholds], thresholds, rtol=1e-6)
    assert len(set(thresholds)) > 1 and len({len(names) for names, _ in predictions}) > 1
    assert (probabilities >= np.asarray(thresholds)).sum(1).tolist() == [len(n) for n, _ in predictions]


def test_multi_label_as_a_hugging_face_folder_equals_do_predict(runs, tmp_path):
    """The same run written by `convert_checkpoint --output_format=hf`: transformers' BertForSequenceClassification
    with the folder's own tokenizer gives --do_predict's probabilities on the texts that fit one window."""
    import torch
    import transformers

    expected, _ = runs
    probabilities, _, thresholds, export_dir, texts = expected["multi_label"]
    run_dir = export_dir.parent / "goemotions_out"
    hf_export.export_to_hugging_face(str(run_dir), str(tmp_path / "hf"))
    model = transformers.BertForSequenceClassification.from_pretrained(str(tmp_path / "hf")).eval()
    assert model.config.problem_type == "multi_label_classification"
    names = [model.config.id2label[i] for i in range(len(thresholds))]
    assert [model.config.multi_label_thresholds[name] for name in names] == pytest.approx(thresholds)
    tokenizer = transformers.BertTokenizerFast.from_pretrained(str(tmp_path / "hf"))
    fits = [i for i, text in enumerate(texts) if len(tokenizer(text)["input_ids"]) <= SEQ]
    assert len(fits) >= 10
    with torch.no_grad():
        logits = model(**tokenizer([texts[i] for i in fits], padding=True, return_tensors="pt")).logits
    np.testing.assert_allclose(torch.sigmoid(logits).numpy(), probabilities[fits], atol=1e-5)


def test_regression_served_equals_do_predict(runs):
    expected, served = runs
    scores, _ = expected["regression"]  # test_results.tsv: the full-precision score of each example
    assert "regression/probabilities" not in served
    np.testing.assert_allclose(served["regression/score"], scores, atol=1e-5)


def test_encoder_served_equals_extract_features(runs, uncased_vocab):
    expected, served = runs
    features, pooled = expected["encoder"]
    vocab = {token: i for i, token in enumerate(uncased_vocab.read_text(encoding="utf-8").splitlines())}
    np.testing.assert_allclose(served["encoder/pooled_output"], pooled, atol=1e-5)
    for row, line in enumerate(features):
        tokens = [f["token"] for f in line["features"]]
        real = served["encoder/input_mask"][row].astype(bool)
        assert list(served["encoder/input_word_ids"][row][real]) == [vocab[t] for t in tokens], row
        values = np.array([f["layers"][0]["values"] for f in line["features"]])
        # The JSON lines round to 6 decimals, as the original's do.
        np.testing.assert_allclose(served["encoder/sequence_output"][row][real], values, atol=1e-5)


def test_squad_v1_served_equals_do_predict(runs):
    expected, served = runs
    ids, predictions, nbest = expected["squad"]
    assert list(served["squad/answer_text"]) == [predictions[q] for q in ids]
    best = [nbest[q][0]["start_logit"] + nbest[q][0]["end_logit"] for q in ids]
    np.testing.assert_allclose(served["squad/score"], best, atol=1e-5)


def test_squad_bilstm_head_learns_and_is_served_as_predicted(runs):
    expected, served = runs
    ids, trained, predicted_again, nbest, losses, head = expected["squad_bilstm"]
    # Two epochs of 10 steps, a loss per 2 steps: from ln(64) = 4.16 (uniform over the window) well down.
    assert len(losses) >= 8 and losses[0] > 4.0 and np.mean(losses[len(losses) // 2 :]) < losses[0] - 0.5, losses
    assert head == "span_bilstm"
    assert predicted_again == trained  # --do_predict without --span_head rebuilt the BiLSTM
    # The export rebuilt it too, from the checkpoint; serving pads each batch to its longest row, not to 64.
    assert list(served["squad_bilstm/answer_text"]) == [trained[q] for q in ids]
    best = [nbest[q][0]["start_logit"] + nbest[q][0]["end_logit"] for q in ids]
    np.testing.assert_allclose(served["squad_bilstm/score"], best, atol=1e-5)
