"""The absl script: a kill mid-run leaves no complete-looking shard and the rerun gives the same bytes; a rerun with
other flags is refused; bad input and bad flags fail with a message naming the file or the flag."""

import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import time

import pytest

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "run_scripts" / "create_pretraining_data.py"


def _args(shared_data, input_file, output_file, *extra):
    return [
        sys.executable,
        str(SCRIPT),
        f"--input_file={input_file}",
        f"--output_file={output_file}",
        f"--vocab_file={shared_data / 'vocab' / 'bert-base-uncased-vocab.txt'}",
        "--dupe_factor=3",
        "--unit_mb=0.3",
        *extra,
    ]


@pytest.mark.slow
def test_kill_mid_run_then_rerun_gives_the_same_bytes(shared_data, tmp_path):
    text = (shared_data / "pretraining_golden" / "squad_contexts.txt").read_bytes()
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(text * 2)
    shards = [f"out-{i:05d}-of-00008" for i in range(8)]
    subprocess.run(
        _args(shared_data, corpus, tmp_path / "full" / "out@8", "--num_workers=1"), check=True, capture_output=True
    )
    full = {name: (tmp_path / "full" / name).read_bytes() for name in shards}

    run_dir = tmp_path / "killed"
    proc = subprocess.Popen(
        _args(shared_data, corpus, run_dir / "out@8", "--num_workers=2"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.time() + 120
    while not (run_dir / shards[0]).exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)  # The whole job, workers included, as an OOM kill or a preemption would.
    proc.wait()
    present = [name for name in shards if (run_dir / name).exists()]
    assert present and len(present) < len(shards), "the kill should land mid-run"
    for name in present:  # Every shard under its final name is complete.
        assert (run_dir / name).read_bytes() == full[name]
    assert list(run_dir.glob("*.incomplete*"))  # Unfinished work sits under temporary names only.

    result = subprocess.run(
        _args(shared_data, corpus, run_dir / "out@8", "--num_workers=2"), check=True, capture_output=True, text=True
    )
    assert "is complete; skipped" in result.stderr
    for name in shards:
        assert (run_dir / name).read_bytes() == full[name]
    assert not list(run_dir.glob("*.incomplete*"))


SHARDS4 = [f"out-{i:05d}-of-00004" for i in range(4)]


@pytest.fixture(scope="module")
def half_squad(shared_data, tmp_path_factory):
    """The first half of the SQuAD contexts (800 KB): 8 work units of --unit_mb=0.1, two per shard of 4."""
    text = (shared_data / "pretraining_golden" / "squad_contexts.txt").read_bytes()
    path = tmp_path_factory.mktemp("corpus") / "half_squad.txt"
    path.write_bytes(text[: text.index(b"\n\n", len(text) // 2) + 2])
    return path


def _half_squad_args(shared_data, corpus, output_file, *extra):
    return _args(shared_data, corpus, output_file, "--dupe_factor=2", "--unit_mb=0.1", *extra)


@pytest.fixture(scope="module")
def reference_shards(shared_data, half_squad, tmp_path_factory):
    """One uninterrupted run into 4 shards: what every interrupted or shared run must give."""
    out = tmp_path_factory.mktemp("reference")
    subprocess.run(_half_squad_args(shared_data, half_squad, out / "out@4", "--num_workers=1"), check=True)
    return {name: (out / name).read_bytes() for name in SHARDS4}


def _count_records(data: bytes) -> int:
    count, offset = 0, 0
    while offset < len(data):  # TFRecord framing: length (8), its CRC (4), data, the data's CRC (4)
        offset += 16 + int.from_bytes(data[offset : offset + 8], "little")
        count += 1
    assert offset == len(data), "a torn record"
    return count


@pytest.mark.slow
def test_two_jobs_on_one_output_leave_whole_shards_that_match_their_records(
    shared_data, half_squad, tmp_path, reference_shards
):
    """A scheduler's retry while the first attempt still runs: two jobs of the same flags on one --output_file at
    once. Each stages under names of its own, so both finish, and the shards they leave are whole, hold as many
    records as their statistics say, and are the bytes of a single run; a rerun checks and keeps them."""
    args = _half_squad_args(shared_data, half_squad, tmp_path / "out@4")
    jobs = [subprocess.Popen(args + ["--num_workers=1"], stderr=subprocess.PIPE, text=True) for _ in range(2)]
    errors = [job.communicate(timeout=300)[1] for job in jobs]
    for job, stderr in zip(jobs, errors):
        assert job.returncode == 0 and "Traceback" not in stderr, stderr[-3000:]
    for name in SHARDS4:
        data = (tmp_path / name).read_bytes()
        record = json.loads((tmp_path / "stats" / f"{name}.json").read_text())
        assert _count_records(data) == record["instances"]
        assert data == reference_shards[name]
    assert sorted(p.name for p in tmp_path.iterdir()) == [*SHARDS4, "stats"]  # no staging left

    rerun = subprocess.run(args + ["--num_workers=1"], capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0 and rerun.stderr.count("is complete; skipped") == 4, rerun.stderr[-3000:]


@pytest.mark.slow
def test_ctrl_c_says_what_it_kept_and_the_same_command_resumes(shared_data, half_squad, tmp_path, reference_shards):
    """Ctrl-C (SIGINT to the whole process group, workers included) mid-run: one line, exit 130, no traceback from
    the job or its workers; the complete shards stay, and the same command keeps them and writes the rest."""
    args = _half_squad_args(shared_data, half_squad, tmp_path / "out@4")
    proc = subprocess.Popen(args + ["--num_workers=2"], stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.time() + 120
    while not (tmp_path / SHARDS4[0]).exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGINT)
    stderr = proc.communicate(timeout=120)[1]
    assert proc.returncode == 130, stderr[-3000:]
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr
    last = stderr.strip().splitlines()[-1]
    assert re.fullmatch(
        r"create_pretraining_data: interrupted with (\d) of 4 shards written; the same command keeps them and "
        r"writes the other \d",
        last,
    ), last
    kept = [name for name in SHARDS4 if (tmp_path / name).exists()]
    assert 1 <= len(kept) < 4 and int(re.search(r"with (\d)", last).group(1)) == len(kept)
    assert not [p for p in tmp_path.iterdir() if ".incomplete" in p.name]  # its own staging went with it

    rerun = subprocess.run(args + ["--num_workers=2"], capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0 and rerun.stderr.count("is complete; skipped") == len(kept), rerun.stderr[-3000:]
    assert {name: (tmp_path / name).read_bytes() for name in SHARDS4} == reference_shards


def test_bad_input_fails_with_a_clear_message(shared_data, tmp_path):
    bad = tmp_path / "latin1.txt"
    bad.write_bytes("First sentence.\n\nCaf\u00e9 cr\u00e8me.\n".encode("latin-1"))
    result = subprocess.run(
        _args(shared_data, bad, tmp_path / "out.tfrecord", "--num_workers=1"), capture_output=True, text=True
    )
    assert result.returncode != 0
    assert f"{bad}:3: not valid UTF-8" in result.stderr and "--skip_bad_lines" in result.stderr
    assert not (tmp_path / "out.tfrecord").exists()

    result = subprocess.run(
        _args(shared_data, tmp_path / "none*.txt", tmp_path / "out.tfrecord"), capture_output=True, text=True
    )
    assert result.returncode != 0 and "matches no file" in result.stderr


def test_vocabulary_that_does_not_fit_the_flags_is_refused(shared_data, tmp_path):
    args = _args(shared_data, shared_data / "bert_sample_text.txt", tmp_path / "out.tfrecord")
    args = [a for a in args if not a.startswith("--vocab_file")]
    cased = shared_data / "vocab" / "bert-base-cased-vocab.txt"
    result = subprocess.run(args + [f"--vocab_file={cased}", "--do_lower_case=True"], capture_output=True, text=True)
    assert result.returncode != 0 and f"{cased}: looks cased" in result.stderr


def test_rerun_with_another_max_seq_length_is_refused(shared_data, tmp_path):
    sample = shared_data / "bert_sample_text.txt"
    out = tmp_path / "out"
    args = _args(shared_data, sample, out / "x@2", "--num_workers=1", "--unit_mb=0.001")
    subprocess.run(args, check=True, capture_output=True)
    shards = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert shards == [
        "stats/x-00000-of-00002.json",
        "stats/x-00001-of-00002.json",
        "stats/x.json",
        "x-00000-of-00002",
        "x-00001-of-00002",
    ]
    assert sorted(p.name for p in out.glob("x-*")) == ["x-00000-of-00002", "x-00001-of-00002"]  # no stats caught
    before = {name: (out / name).read_bytes() for name in shards}

    result = subprocess.run(args + ["--max_seq_length=64"], capture_output=True, text=True)
    assert result.returncode != 0
    assert (
        f"{out / 'x-00000-of-00002'} was written with other settings than this run's (--max_seq_length: 128 "
        "there, 64 now)"
    ) in result.stderr
    assert "delete the old outputs" in result.stderr and "or choose another --output_file" in result.stderr
    assert {name: (out / name).read_bytes() for name in shards} == before
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()) == shards

    # The same flags (another worker count) keep the complete shards.
    result = subprocess.run(
        args[:-2] + ["--num_workers=2", "--unit_mb=0.001"], check=True, capture_output=True, text=True
    )
    assert result.stderr.count("is complete; skipped") == 2
    assert {name: (out / name).read_bytes() for name in shards} == before


def test_bad_flags_fail_before_any_output(shared_data, tmp_path):
    result = subprocess.run(
        _args(
            shared_data,
            shared_data / "bert_sample_text.txt",
            tmp_path / "new" / "x@2",
            "--dupe_factor=0",
            "--short_seq_prob=1.5",
        ),
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0
    assert "--dupe_factor=0: must be >= 1" in result.stderr and "--short_seq_prob=1.5" in result.stderr
    assert not (tmp_path / "new").exists()
