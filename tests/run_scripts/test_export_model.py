"""run_scripts/export_model.py: a checkpoint without the task's head is a user error (one line, exit 2)."""

import os
import pathlib
import subprocess
import sys

from official.nlp.checkpoints import model_dir
from official.nlp.modeling.configs import BertConfig
from official.nlp.modeling.encoder import BertEncoder

REPO = pathlib.Path(__file__).resolve().parents[2]


def test_head_missing_is_one_clean_line(tmp_path, uncased_vocab):
    encoder = BertEncoder.from_bert_config(
        BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64)
    )
    model_dir.save_model_dir(str(tmp_path / "pretrained"), encoder, vocab_file=str(uncased_vocab), do_lower_case=True)
    result = subprocess.run(
        [
            sys.executable,
            str(REPO / "run_scripts" / "export_model.py"),
            "--task=classifier",
            f"--init_checkpoint={tmp_path / 'pretrained'}",
            f"--export_dir={tmp_path / 'export'}",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=str(REPO),
    )
    assert result.returncode == 2, result.stderr[-2000:]
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("export_model: --init_checkpoint=") and "holds no fine-tuned classifier head" in last
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "export").exists()
