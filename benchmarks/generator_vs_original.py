"""The pretraining-data generator side by side with the original google-research/bert script.

Both run as fresh processes on the same corpus with the same flags and one output file, so start-up (imports,
vocabulary) is counted on both sides, and in turn, round after round (load from other jobs then hits both alike).
Each run is timed by the wall clock; its instances are the records it wrote, counted from the TFRecord framing.
Peak RSS is sampled over the run's whole process tree (our workers included), and the largest single process is
taken from the kernel's account when the run ends.

The original is the user's own checkout; nothing here ships or imports it. It is written for TensorFlow 1, so
`original_tf1` starts it with ``tensorflow`` aliased to ``tensorflow.compat.v1``. Without a checkout only our rate
is measured, and the report says that no ratio was.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import random
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time

from official.nlp.common import text_files
from official.nlp.common.errors import InputError

# The flags of the comparison (the original's SQuAD settings); both scripts get exactly these.
FLAGS = (
    "--do_lower_case=True",
    "--max_seq_length=128",
    "--max_predictions_per_seq=20",
    "--masked_lm_prob=0.15",
    "--random_seed=12345",
    "--dupe_factor=5",
    "--short_seq_prob=0.1",
)
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclasses.dataclass
class DataBenchConfig:
    text_file: str  # real text in pretraining format, repeated into the corpus
    vocab_file: str
    corpus_mb: float = 64.0
    original: str | None = None  # a google-research/bert checkout (the folder of create_pretraining_data.py)
    original_corpus_mb: float | None = None  # the original's own corpus size (default: corpus_mb)
    rounds: int = 1
    extra_flags: tuple = ()  # ours only, e.g. ("--num_workers=2",)
    work_dir: str | None = None


@dataclasses.dataclass
class Run:
    name: str
    seconds: float
    instances: int
    peak_rss_mb: float  # the whole process tree, sampled
    largest_process_mb: float  # the largest single process (kernel's maxrss)
    cpu_seconds: float = 0.0  # user + system of the process and its workers (the kernel's account)

    @property
    def rate(self) -> float:
        return self.instances / self.seconds

    @property
    def cpu_rate(self) -> float:
        return self.instances / max(self.cpu_seconds, 1e-9)


def make_corpus(text_file: str, path: str, target_bytes: int) -> int:
    """Repeats the documents of ``text_file`` in a fresh random order per copy until ``target_bytes``."""
    docs = [d.strip("\n") for d in text_files.read_text(text_file).split("\n\n") if d.strip()]
    if not docs:
        raise InputError(f"--text_file={text_file} holds no document")
    rng = random.Random(0)
    written = 0
    # The corpus goes to the benchmark's own local scratch folder; only the source text is the user's.
    with open(path, "w", encoding="utf-8") as out:
        while written < target_bytes:
            rng.shuffle(docs)
            for d in docs:
                written += out.write(d + "\n\n")
    return os.path.getsize(path)


def count_records(path: str) -> int:
    """Records in an uncompressed TFRecord file, from its framing (length, then skip the payload and CRCs)."""
    count = 0
    with open(path, "rb") as f:
        while header := f.read(12):
            if len(header) < 12:
                raise ValueError(f"{path}: truncated TFRecord header after {count} records")
            (length,) = struct.unpack("<Q", header[:8])
            f.seek(length + 4, os.SEEK_CUR)
            count += 1
    return count


def _tree_rss_kb(pid: int) -> int:
    """Resident memory of ``pid`` and all its descendants (Linux /proc), in kB; 0 where /proc is missing."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return 0
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        p = int(entry)
        children.setdefault(int(fields[1]), []).append(p)  # fields[1]: the parent pid
        rss[p] = int(fields[21]) * (os.sysconf("SC_PAGE_SIZE") // 1024)  # fields[21]: rss in pages
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        total += rss.get(p, 0)
        stack.extend(children.get(p, []))
    return total


def timed_run(name: str, command: list, output: str, env: dict | None = None, log: str | None = None) -> Run:
    """Runs ``command`` to completion, timing it; its instances are the records in ``output``."""
    peak = [0]
    with open(log or os.devnull, "wb") as sink:
        start = time.perf_counter()
        proc = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, env=env, cwd=REPO_ROOT)
        done = threading.Event()

        def sample():
            while not done.wait(0.25):
                peak[0] = max(peak[0], _tree_rss_kb(proc.pid))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        done.set()
        sampler.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{name} failed (exit {proc.returncode}); its output is in {log}: {' '.join(command)}")
    cpu = usage.ru_utime + usage.ru_stime  # wait4 counts the workers too: they were waited for by the run
    return Run(name, seconds, count_records(output), peak[0] / 1024, usage.ru_maxrss / 1024, cpu)


def ours_command(corpus: str, output: str, vocab_file: str, extra_flags=()) -> list:
    return [
        sys.executable,
        os.path.join(REPO_ROOT, "run_scripts", "create_pretraining_data.py"),
        f"--input_file={corpus}",
        f"--output_file={output}",
        f"--vocab_file={vocab_file}",
        *FLAGS,
        *extra_flags,
    ]


def original_command(checkout: str, corpus: str, output: str, vocab_file: str) -> list:
    script = os.path.join(checkout, "create_pretraining_data.py")
    if not os.path.isfile(script):
        raise InputError(
            f"--original={checkout}: no create_pretraining_data.py there; give the folder of a google-research/bert "
            "checkout"
        )
    return [
        sys.executable,
        "-m",
        "benchmarks.original_tf1",
        script,
        f"--input_file={corpus}",
        f"--output_file={output}",
        f"--vocab_file={vocab_file}",
        *FLAGS,
    ]


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cores() -> str:
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{usable} usable of {os.cpu_count()}"


def run(config: DataBenchConfig) -> dict:
    """Runs the comparison and prints its table; returns the runs by name."""
    work = config.work_dir or tempfile.mkdtemp(prefix="pdata_vs_original_")
    os.makedirs(work, exist_ok=True)
    corpus = os.path.join(work, "corpus.txt")
    size = make_corpus(config.text_file, corpus, int(config.corpus_mb * 2**20))
    original_corpus, sizes = corpus, {"ours": size, "original": size}
    if config.original and config.original_corpus_mb and config.original_corpus_mb != config.corpus_mb:
        original_corpus = os.path.join(work, "corpus_original.txt")
        sizes["original"] = make_corpus(config.text_file, original_corpus, int(config.original_corpus_mb * 2**20))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [REPO_ROOT, os.environ.get("PYTHONPATH")])))
    # In turn, the original first in each round.
    runs: dict[str, list[Run]] = {name: [] for name in (("original", "ours") if config.original else ("ours",))}
    for r in range(config.rounds):
        for name in runs:
            out_dir = os.path.join(work, f"{name}-{r}")
            shutil.rmtree(out_dir, ignore_errors=True)
            os.makedirs(out_dir)
            output = os.path.join(out_dir, "out.tfrecord")
            if name == "ours":
                command = ours_command(corpus, output, config.vocab_file, config.extra_flags)
            else:
                command = original_command(os.path.abspath(config.original), original_corpus, output, config.vocab_file)
            run_ = timed_run(name, command, output, env, log=os.path.join(work, f"{name}-{r}.log"))
            runs[name].append(run_)
            print(
                f"  round {r + 1} {name}: {run_.instances:,} instances in {run_.seconds:.1f} s, "
                f"{run_.rate:,.0f}/s, {run_.cpu_seconds:.1f} CPU-s, peak RSS {run_.peak_rss_mb:,.0f} MB",
                flush=True,
            )
            shutil.rmtree(out_dir, ignore_errors=True)  # the records of a 64 MB corpus take ~750 MB
    print_report(config, sizes, runs)
    return runs


def print_report(config: DataBenchConfig, sizes: dict, runs: dict) -> None:
    print(f"\n## pretraining data vs the original\n$ python {' '.join(sys.argv)}")
    print(f"machine: {cpu_model()}, {cores()} cores; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"flags (both): {' '.join(FLAGS)}; ours also: {' '.join(config.extra_flags) or '(defaults)'}")
    print(
        "| | corpus | instances | wall time | instances/s | instances per CPU-s | peak RSS (tree / largest process) |"
    )
    print("|---|---|---|---|---|---|---|")
    median = {}
    for name, label in (("original", "google-research/bert (tensorflow.compat.v1)"), ("ours", "ours")):
        if name not in runs:
            continue
        rs = runs[name]
        median[name] = statistics.median(r.rate for r in rs), statistics.median(r.cpu_rate for r in rs)
        spread = "" if len(rs) == 1 else f" (rounds {min(r.rate for r in rs):,.0f}..{max(r.rate for r in rs):,.0f})"
        print(
            f"| {label} | {sizes[name] / 2**20:.1f} MB | {rs[0].instances:,} | "
            f"{statistics.median(r.seconds for r in rs):.1f} s | {median[name][0]:,.0f}{spread} | "
            f"{median[name][1]:,.0f} | {max(r.peak_rss_mb for r in rs):,.0f} / "
            f"{max(r.largest_process_mb for r in rs):,.0f} MB |"
        )
    if "original" in runs:
        (ours, ours_cpu), (theirs, theirs_cpu) = median["ours"], median["original"]
        print(
            f"ratio: {ours / theirs:.1f}x the original's instances/s (medians of {config.rounds} interleaved rounds); "
            f"per CPU-second {ours_cpu / theirs_cpu:.1f}x"
        )
    else:
        print("ratio: not measured (no --original checkout given; pass --original=<google-research/bert folder>)")
