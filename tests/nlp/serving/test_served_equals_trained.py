"""What is served is what was trained (issue 22): a tiny classifier fine-tuned a few steps by `run_classifier`,
its `--do_predict` answers, and the SavedModel exported from the job's `--output_dir`, loaded in a fresh process
that imports only TensorFlow and tensorflow_text, answer the same inputs alike: texts longer than
`max_seq_length` on either side, a zero-width second text (no second segment), accents and CJK. Labels are equal
and probabilities equal to 1e-5.

An empty second text is not here: `run_classifier` refuses it as a bad row, where the export packs `[CLS] A [SEP]`
(tests/nlp/serving/test_exports.py checks that packing against the original's rule).
"""

import csv
import json
import pathlib
import subprocess
import sys

import keras
import numpy as np
import pytest

from official.nlp.checkpoints import model_dir
from official.nlp.modeling.configs import BertConfig
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.serving import exporter
from official.nlp.tasks import classification

pytestmark = pytest.mark.slow
HERE = pathlib.Path(__file__).resolve().parent
SEQ = 32


def _mrpc(shared_data, name, count):
    with open(shared_data / "glue" / "MRPC" / name, encoding="utf-8-sig") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1 : count + 1]
    return [{"text_a": r[3], "text_b": r[4], "label": r[0]} for r in rows]


@pytest.fixture(scope="module")
def classifier_run(tmp_path_factory, shared_data, uncased_vocab):
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
    data = root / "data"
    data.mkdir()
    dev = _mrpc(shared_data, "dev.tsv", 24)
    long_text = " ".join(r["text_a"] for r in dev[:4])
    test = [{"text_a": r["text_a"], "text_b": r["text_b"]} for r in dev[:12]] + [
        {"text_a": long_text, "text_b": "Short."},
        {"text_a": "Short.", "text_b": long_text},
        {"text_a": long_text, "text_b": long_text[::-1]},
        {"text_a": "Naïve 東京 café", "text_b": "\u200b"},
        {"text_a": "Déjà vu: ½ price — naïve café", "text_b": "北京大学の学生"},
        {"text_a": "ÉCOLE Ärger ﬁne", "text_b": "crème brûlée"},
    ]
    for name, rows in (("train.jsonl", _mrpc(shared_data, "train.tsv", 64)), ("dev.jsonl", dev), ("test.jsonl", test)):
        (data / name).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    out = str(root / "out")
    classification.run_classifier(
        classification.ClassifierConfig(
            task_name="generic",
            file_format="jsonl",
            text_a_column="text_a",
            text_b_column="text_b",
            data_dir=str(data),
            init_checkpoint=init,
            output_dir=out,
            max_seq_length=SEQ,
            train_batch_size=8,
            num_train_epochs=1,
            learning_rate=1e-3,
            do_train=True,
            do_predict=True,
        )
    )
    probabilities = np.loadtxt(pathlib.Path(out) / "test_results.tsv", delimiter="\t", dtype=np.float64)
    # The submission file: a header, then `index<TAB>label` per example.
    submission = (pathlib.Path(out) / "predictions.jsonl").read_text(encoding="utf-8").splitlines()[1:]
    labels = [line.split("\t")[1] for line in submission]
    # The export reads everything from the job's --output_dir: labels, pair signature, max_seq_length.
    paths = exporter.export_model("classifier", out, str(root / "export"), keras_file=False)
    jobs = [
        {
            "name": "classifier",
            "path": paths["saved_model"],
            "signature": "serving_default",
            "inputs": {name: {"dtype": "string", "value": [r[name] for r in test]} for name in ("text_a", "text_b")},
        }
    ]
    (root / "jobs.json").write_text(json.dumps(jobs))
    done = subprocess.run(
        [sys.executable, str(HERE / "fresh_process.py"), str(root / "jobs.json"), str(root / "out.npz"), "tf_text"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=str(root),
    )
    assert done.returncode == 0 and "modules ok" in done.stdout, done.stderr[-4000:]
    return probabilities, labels, dict(np.load(root / "out.npz"))


def test_classifier_pair_served_equals_do_predict(classifier_run):
    probabilities, labels, served = classifier_run
    assert served["classifier/var:max_seq_length"] == SEQ
    np.testing.assert_allclose(served["classifier/probabilities"], probabilities, atol=1e-5)
    assert list(served["classifier/label_name"]) == labels
