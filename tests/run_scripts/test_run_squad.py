"""run_squad.py end to end in a subprocess: a tiny model on a slice of real SQuAD v2.0 data."""

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT
from tests.nlp.serving import fresh
from tests.run_scripts.script_runs import run_in_one_process

SCRIPT = str(REPO_ROOT / "run_scripts" / "run_squad.py")


def _run(*args, timeout=300):
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), TF_CPP_MIN_LOG_LEVEL="2")
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, env=env, timeout=timeout)


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory, uncased_vocab):
    import keras

    from official.nlp.checkpoints import model_dir
    from official.nlp.modeling.configs import BertConfig
    from official.nlp.modeling.encoder import BertEncoder

    keras.utils.set_random_seed(0)
    config = BertConfig.preset(
        "tiny", vocab_size=30522, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, max_position_embeddings=64
    )
    folder = str(tmp_path_factory.mktemp("tiny") / "model")
    model_dir.save_model_dir(
        folder, BertEncoder.from_bert_config(config), vocab_file=str(uncased_vocab), do_lower_case=True
    )
    return folder


@pytest.fixture(scope="module")
def squad_slice(shared_data, tmp_path_factory):
    with open(shared_data / "squad" / "dev-v2.0-subset-Normans-Rhine.json", encoding="utf-8") as f:
        article = json.load(f)["data"][0]
    path = tmp_path_factory.mktemp("data") / "slice-v2.json"
    path.write_text(json.dumps({"version": "v2.0", "data": [{"title": "t", "paragraphs": article["paragraphs"][:2]}]}))
    return str(path)


@pytest.mark.slow
def test_train_predict_evaluate_and_predict_again(tmp_path, tiny_model_dir, squad_slice):
    out = str(tmp_path / "out")
    common = [
        f"--init_checkpoint={tiny_model_dir}",
        f"--predict_file={squad_slice}",
        "--version_2_with_negative",
        "--max_seq_length=64",
        "--doc_stride=24",
        "--max_query_length=16",
        f"--output_dir={out}",
    ]
    done = _run(
        *common,
        "--do_train",
        f"--train_file={squad_slice}",
        "--do_predict",
        "--train_batch_size=8",
        "--num_train_epochs=1",
        "--steps_per_loop=2",
        "--learning_rate=1e-3",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    with open(squad_slice, encoding="utf-8") as f:
        ids = {qa["id"] for p in json.load(f)["data"][0]["paragraphs"] for qa in p["qas"]}
    outputs = {
        name: json.load(open(os.path.join(out, name)))
        for name in ("predictions.json", "nbest_predictions.json", "null_odds.json", "eval_results.json")
    }
    assert set(outputs["predictions.json"]) == set(outputs["null_odds.json"]) == ids
    assert all(1 <= len(v) <= 20 for v in outputs["nbest_predictions.json"].values())
    results = outputs["eval_results.json"]
    assert results["total"] == len(ids) and {"HasAns_f1", "NoAns_f1", "best_f1", "best_f1_thresh"} <= set(results)
    events = os.listdir(os.path.join(out, "summaries", "eval"))
    assert events and events[0].startswith("events.out.tfevents")
    # The fine-tuned model directory, marked as a SQuAD head for later jobs.
    assert json.load(open(os.path.join(out, "best_model", "finetuning.json")))["task"] == "squad_v2.0"

    # Predicting again restores the fine-tuned model from --output_dir: the same answers.
    first = outputs["predictions.json"]
    os.remove(os.path.join(out, "predictions.json"))
    again = _run(*common, "--do_predict")
    assert again.returncode == 0, again.stderr[-3000:]
    assert json.load(open(os.path.join(out, "predictions.json"))) == first

    # Served is what was predicted: the SavedModel exported from the run's --output_dir, in a fresh process that
    # imports only TensorFlow and tensorflow_text, answers every question (contexts of several windows) as
    # predictions.json does.
    from official.nlp.serving import exporter

    saved = exporter.export_model("squad", out, str(tmp_path / "export"), keras_file=False)["saved_model"]
    with open(squad_slice, encoding="utf-8") as f:
        paragraphs = json.load(f)["data"][0]["paragraphs"]
    questions = [(qa["id"], qa["question"], p["context"]) for p in paragraphs for qa in p["qas"]]
    jobs = [
        {
            "name": "squad",
            "path": saved,
            "signature": "serving_default",
            "inputs": {
                "question": {"dtype": "string", "value": [q for _, q, _ in questions]},
                "context": {"dtype": "string", "value": [c for _, _, c in questions]},
            },
        }
    ]
    answers = fresh.serve(tmp_path, jobs)["squad/answer_text"]
    assert list(answers) == [first[qid] for qid, _, _ in questions]

    # The run's --output_dir as another job's --init_checkpoint: its best_model/, then (with best_model/ moved
    # away) its latest checkpoint read with the recorded config, case and vocabulary; both are the trained model.
    for case in ("best_model", "latest_checkpoint"):
        if case == "latest_checkpoint":
            os.rename(os.path.join(out, "best_model"), str(tmp_path / "moved_best_model"))
        other = str(tmp_path / case)
        done = _run(*_replace(common, out, other), "--do_predict")
        assert done.returncode == 0, done.stderr[-3000:]
        assert json.load(open(os.path.join(other, "predictions.json"))) == first, case


def _replace(flags, out, other):
    """`flags` predicting into `other` with `--init_checkpoint=out`."""
    replaced = {"--init_checkpoint": out, "--output_dir": other}
    return [f"{f.split('=')[0]}={replaced[f.split('=')[0]]}" if f.split("=")[0] in replaced else f for f in flags]


USER_ERRORS = [
    (["--do_train"], "--do_train needs --train_file"),
    (["--do_predict", "--predict_file=x.json", "--doc_stride=0"], "--doc_stride=0: must be >= 1"),
    (
        [
            "--do_predict",
            "--predict_file=missing.json",
            "--max_seq_length=64",
            "--max_query_length=16",
            "--doc_stride=32",
        ],
        "--do_predict needs missing.json (--predict_file), which does not exist",
    ),
    (
        ["--do_predict", "--predict_file=TMP/x.json"],  # a file that is there: input files are checked first
        "--max_seq_length=384 exceeds the model's max_position_embeddings (64)",
    ),
]


@pytest.fixture(scope="module")
def user_errors(tmp_path_factory, tiny_model_dir):
    """{case: (result, its folder)}: USER_ERRORS by index and "answers all miss", each in a folder of its own, all run
    in one process (tests/run_scripts/every_script.py: TensorFlow is imported once)."""
    root = tmp_path_factory.mktemp("user_errors")
    cases, folders = {}, {}
    for i, (args, _) in enumerate(USER_ERRORS):
        folders[i] = root / str(i)
        folders[i].mkdir()
        (folders[i] / "x.json").write_text('{"data": []}')
        args = [arg.replace("TMP", str(folders[i])) for arg in args]
        cases[i] = [f"--init_checkpoint={tiny_model_dir}", f"--output_dir={folders[i] / 'out'}", *args]
    # Every answer_start is wrong.
    folders["miss"] = root / "miss"
    folders["miss"].mkdir()
    context = "Steve Smith's team won in 1895. Then it lost."
    qas = [
        {"id": f"q{i}", "question": "Who?", "answers": [{"text": "Steve Smith", "answer_start": 30 + i}]}
        for i in range(3)
    ]
    path = folders["miss"] / "train.json"
    path.write_text(json.dumps({"data": [{"title": "t", "paragraphs": [{"context": context, "qas": qas}]}]}))
    cases["miss"] = [
        f"--init_checkpoint={tiny_model_dir}",
        f"--output_dir={folders['miss'] / 'out'}",
        "--do_train",
        f"--train_file={path}",
        "--max_seq_length=64",
        "--max_query_length=16",
        "--doc_stride=24",
    ]
    results = run_in_one_process({case: ("run_squad.py", args) for case, args in cases.items()})
    return {case: (results[case], folders[case]) for case in cases}


@pytest.mark.parametrize("case", range(len(USER_ERRORS)), ids=[message for _, message in USER_ERRORS])
def test_user_errors_are_one_line(user_errors, case):
    done, _ = user_errors[case]
    message = USER_ERRORS[case][1]
    assert done.returncode == 2
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("run_squad: ") and message in last
    assert "Traceback" not in done.stderr


def test_training_file_whose_answers_all_miss_says_why(user_errors):
    """Every answer_start is wrong: the job ends on one line that says why no question is left to train on."""
    done, folder = user_errors["miss"]
    path = folder / "train.json"
    assert done.returncode == 2 and "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"run_squad: {path}: none of its 3 question(s) can train: 3 left out of training")
    assert "answer_start" in last and "q0: answer_start=30 does not point at 'Steve Smith' (the text is at 0)" in last
