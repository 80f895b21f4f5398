"""Running the scripts as a user does, for the tests of their user errors: one script per process
(`run_script`) or several in one (`run_in_one_process`, over every_script.py --cases), and the checks of a refusal
(`assert_user_error`: one line, exit status 2, no traceback, no TensorFlow start-up noise)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from tests.conftest import REPO_ROOT

# What TF 2.21 prints on start-up without the filter in official.nlp.common.cli.
NOISE = (
    "absl::InitializeLog",
    "oneDNN custom operations",
    "cuda drivers",
    "cuInit",
    "cpu_feature_guard",
    "INFO:tensorflow:",
    "Sharding callback",
)
CONFIG = dict(
    vocab_size=1000,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=64,
    max_position_embeddings=64,
)


def run_script(name: str, *args: str, cwd=REPO_ROOT, timeout: int = 300) -> subprocess.CompletedProcess:
    path = REPO_ROOT / "run_scripts" / name
    command = ["bash", str(path)] if name.endswith(".sh") else [sys.executable, str(path)]
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)  # what a user's shell has
    return subprocess.run(command + list(args), cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


class ScriptRun(subprocess.CompletedProcess):
    """One case of `run_in_one_process`: its exit status and stderr, and the stderr of the process it ran in."""

    def __init__(self, args, returncode, stdout, stderr, *, process_stderr: str):
        super().__init__(args, returncode, stdout, stderr)
        self.process_stderr = process_stderr


def assert_quiet(result: subprocess.CompletedProcess) -> None:
    for stderr in (result.stderr, getattr(result, "process_stderr", "")):
        for marker in NOISE:
            assert marker not in stderr, f"start-up noise {marker!r} in:\n{stderr[-3000:]}"


def assert_user_error(result: subprocess.CompletedProcess, *fragments: str) -> str:
    """One line `<script>: <message>` holding every fragment, exit 2, no traceback; returns the message."""
    assert "Traceback" not in result.stderr, result.stderr[-5000:]
    assert result.returncode == 2, (result.returncode, result.stderr[-3000:])
    script = None
    for line in result.stderr.splitlines():
        m = re.match(r"^(\w+): ", line)
        if m and all(f in line for f in fragments):
            script = m.group(1)
            message = line
    assert script is not None, f"no line with {fragments} in:\n{result.stderr[-3000:]}"
    assert result.stderr.count(message[len(script) + 2 :]) == 1, result.stderr  # printed once
    assert message[len(script) + 2 :] not in getattr(result, "process_stderr", ""), result.process_stderr  # not logged
    assert_quiet(result)
    return message


def run_in_one_process(cases: dict, cwd=REPO_ROOT) -> dict[object, ScriptRun]:
    """Runs `{case: (script, args)}` or `{case: (script, args, working folder)}` one after another in one process
    (tests/run_scripts/every_script.py --cases: TensorFlow is imported once), each as `python run_scripts/<script>
    <args>` would run in its working folder (`cwd` when the case names none): for each case its exit status and what
    it printed on stderr, with the process's own stderr (what reached file descriptor 2 outside the cases' captured
    `sys.stderr`: C++ start-up noise, log handlers) kept for `assert_user_error` to check too."""
    names = list(cases)
    runs = [[case[0], str(case[2] if len(case) > 2 else cwd), list(case[1])] for case in cases.values()]
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)  # what a user's shell has
    done = subprocess.run(
        [sys.executable, str(REPO_ROOT / "tests" / "run_scripts" / "every_script.py"), "--cases"],
        input=json.dumps(runs),
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-5000:]
    results = json.loads(done.stdout)
    assert len(results) == len(names)
    return {
        name: ScriptRun(cases[name][1], status, "", stderr, process_stderr=done.stderr)
        for name, (status, stderr) in zip(names, results)
    }


def save_tiny_encoder(model_dir: str, vocab: str, checkpoint_format: str) -> str:
    """A model directory of a seeded random `CONFIG` encoder (no pretraining heads) in `checkpoint_format`."""
    import keras

    from official.nlp.checkpoints import model_dir as model_dir_lib
    from official.nlp.modeling.configs import BertConfig
    from official.nlp.modeling.encoder import BertEncoder

    keras.utils.set_random_seed(0)
    encoder = BertEncoder.from_bert_config(BertConfig(**CONFIG))
    model_dir_lib.save_model_dir(
        model_dir, encoder, vocab_file=vocab, do_lower_case=True, checkpoint_format=checkpoint_format
    )
    return model_dir
