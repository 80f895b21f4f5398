"""run_swag.py end to end on the real SWAG sample with a tiny model: training, per-epoch accuracy, predictions,
a bad row named (and skipped with --skip_bad_rows)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from official.nlp.checkpoints import model_dir
from official.nlp.common.errors import InputError
from official.nlp.data import swag
from official.nlp.modeling.configs import BertConfig
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.tasks import finetuning_outputs, multiple_choice
from tests.conftest import REPO_ROOT
from tests.nlp.serving import fresh

SCRIPT = str(REPO_ROOT / "run_scripts" / "run_swag.py")
TINY = dict(
    vocab_size=30522,
    hidden_size=32,
    num_hidden_layers=1,
    num_attention_heads=2,
    intermediate_size=64,
    max_position_embeddings=64,
)


def _run(args):
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    return subprocess.run(
        [sys.executable, SCRIPT, *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=400
    )


@pytest.mark.slow
def test_run_swag_on_the_sample(shared_data, tmp_path):
    keras.utils.set_random_seed(5)
    init = str(tmp_path / "model")
    model_dir.save_model_dir(
        init,
        BertEncoder.from_bert_config(BertConfig(**TINY)),
        vocab_file=str(shared_data / "vocab" / "bert-base-uncased-vocab.txt"),
        do_lower_case=True,
    )
    sample = shared_data / "swag" / "hf_transformers_sample.jsonl"
    rows = sample.read_text().splitlines()
    bad = tmp_path / "with_bad_row.jsonl"
    broken = json.loads(rows[0])
    broken["ending3"] = ""
    bad.write_text("\n".join(rows + [json.dumps(broken)]) + "\n")
    out = tmp_path / "out"
    flags = [
        f"--init_checkpoint={init}",
        f"--output_dir={out}",
        f"--train_file={bad}",
        f"--eval_file={sample}",
        f"--predict_file={sample}",
        "--do_train",
        "--do_eval",
        "--do_predict",
        "--max_seq_length=40",
        "--train_batch_size=2",
        "--num_train_epochs=2",
        "--learning_rate=1e-3",
        "--steps_per_loop=5",
        "--dropout_rate=0",
    ]

    # Without --skip_bad_rows the bad row stops the job, named (from Python here: a subprocess costs ~10 s).
    config = multiple_choice.MultipleChoiceConfig(
        output_dir=str(tmp_path / "refused"),
        init_checkpoint=init,
        train_file=str(bad),
        do_train=True,
        max_seq_length=40,
    )
    with pytest.raises(InputError, match=r"with_bad_row\.jsonl:11: missing ending: 'ending3'"):
        multiple_choice.run_swag(config)

    run = _run(flags + ["--skip_bad_rows"])
    assert run.returncode == 0, run.stderr[-3000:]
    assert "skipped 1 bad row(s) in the train file" in run.stdout
    history = json.loads((out / finetuning_outputs.EVAL_HISTORY_FILE).read_text())
    assert [e["epoch"] for e in history] == [1, 2] and all(e["examples"] == 10 for e in history)
    # Training on the evaluation examples themselves: the loss on them falls.
    assert history[-1]["loss"] < history[0]["loss"]
    assert "accuracy = " in (out / finetuning_outputs.EVAL_RESULTS_FILE).read_text()
    with open(out / "test_results.csv") as f:
        predictions = list(csv.DictReader(f))
    assert len(predictions) == 10 and predictions[0]["source"] == f"{sample}:1"
    assert abs(sum(float(predictions[0][f"probability{i}"]) for i in range(4)) - 1) < 1e-4
    _check_served_equals_predicted(out, sample, predictions, tmp_path)


def _check_served_equals_predicted(out, sample, predictions, tmp_path):
    """The SavedModel exported from the job's --output_dir, in a fresh process that imports only TensorFlow and
    tensorflow_text, gives the probabilities of test_results.csv to 1e-5 and the same predicted ending (issue 22).
    The export takes each choice as the script builds it: `start ending`. --do_predict predicts with the model of
    the run, its best_model/ (the best of the two epochs), which is what exporting the output directory serves."""
    from official.nlp.serving import exporter

    saved = exporter.export_model("swag", str(out), str(tmp_path / "export"), keras_file=False)["saved_model"]
    examples = swag.read_swag(str(sample)).examples
    jobs = [
        {
            "name": "swag",
            "path": saved,
            "signature": "serving_default",
            "inputs": {
                "context": {"dtype": "string", "value": [e.context for e in examples]},
                "endings": {
                    "dtype": "string",
                    "value": [[f"{e.start} {ending}".strip() for ending in e.endings] for e in examples],
                },
            },
        }
    ]
    served = fresh.serve(tmp_path, jobs)
    expected = np.array([[float(p[f"probability{i}"]) for i in range(4)] for p in predictions])
    np.testing.assert_allclose(served["swag/probabilities"], expected, atol=1e-5)
    assert list(served["swag/label_index"]) == [int(p["prediction"]) for p in predictions]


def test_predict_takes_json_lines_without_labels(shared_data, tmp_path):
    """A test split has no labels: --do_predict reads JSON lines without `label` (the CSV test split already was)
    and writes one full-precision row per example, the probabilities those of the model's own logits."""
    keras.utils.set_random_seed(5)
    init = str(tmp_path / "model")
    model_dir.save_model_dir(
        init,
        BertEncoder.from_bert_config(BertConfig(**TINY)),
        vocab_file=str(shared_data / "vocab" / "bert-base-uncased-vocab.txt"),
        do_lower_case=True,
    )
    rows = [json.loads(line) for line in (shared_data / "swag" / "hf_transformers_sample.jsonl").open()]
    unlabelled = tmp_path / "test.jsonl"
    unlabelled.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "label"}) + "\n" for r in rows))
    config = multiple_choice.MultipleChoiceConfig(
        output_dir=str(tmp_path / "out"),
        init_checkpoint=init,
        predict_file=str(unlabelled),
        do_predict=True,
        max_seq_length=40,
    )
    task = multiple_choice.make_swag_task(config)
    model = task.build_model(BertEncoder.from_bert_config(BertConfig(**TINY)))
    with open(task.predict(model)) as f:
        predictions = list(csv.DictReader(f))
    assert [p["source"] for p in predictions] == [f"{unlabelled}:{i}" for i in range(1, 11)]
    features = swag.convert_swag_examples(swag.read_swag(str(unlabelled), labelled=False).examples, task.tokenizer, 40)
    expected = keras.ops.convert_to_numpy(keras.ops.softmax(model(features.model_inputs()), axis=-1))
    got = np.array([[float(p[f"probability{i}"]) for i in range(4)] for p in predictions])
    np.testing.assert_allclose(got, expected, atol=1e-6)
    assert [int(p["prediction"]) for p in predictions] == list(expected.argmax(-1))
