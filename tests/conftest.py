"""Shared fixtures: where the real public data in ../shared/data lives.

The data directory is found from $BERT_SHARED_DATA, else ../shared/data next to the checkout. CI has it, so a
missing directory is an error rather than a skip: a skipped parity test would pass without checking anything.
"""

import os
import pathlib
import signal

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]


def _shared_data_dir() -> pathlib.Path:
    env = os.environ.get("BERT_SHARED_DATA")
    path = pathlib.Path(env) if env else REPO_ROOT.parent / "shared" / "data"
    return path


@pytest.fixture(scope="session")
def shared_data() -> pathlib.Path:
    path = _shared_data_dir()
    if not (path / "MANIFEST.md").exists():
        pytest.fail(f"shared test data not found at {path}; set BERT_SHARED_DATA to the folder that holds MANIFEST.md")
    return path


@pytest.fixture(scope="session")
def uncased_vocab(shared_data) -> pathlib.Path:
    return shared_data / "vocab" / "bert-base-uncased-vocab.txt"


@pytest.fixture(scope="session")
def cased_vocab(shared_data) -> pathlib.Path:
    return shared_data / "vocab" / "bert-base-cased-vocab.txt"


def pytest_configure(config):
    # A shell that starts the suite in the background (`cmd &` without job control, nohup) ignores SIGINT, and every
    # process it starts inherits that: the Ctrl-C tests' children would never see their SIGINT. Undo it here, in the
    # main process and in each xdist worker, so that those tests check the scripts, not how the suite was launched.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_xdist_auto_num_workers(config) -> int:
    """`-n auto`: one worker more than the available cores, at most 4 (each holds TensorFlow and its own module
    fixtures). A worker waits on its scripts' processes, sleeps in the Ctrl-C and concurrency tests and idles at the
    end while the other finishes a long file; the extra worker fills those gaps (docs/development.md: 966 -> 931 s
    of pytest on 2 cores)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cores + 1, 4))


# The files whose module fixtures take minutes go first, so that neither worker starts one while the other is idle,
# in the order of their cost (docs/development.md's table of CPU seconds; test_readme.py, which runs every docs page,
# is the largest).
# xdist hands out whole files in this order only with `--no-loadscope-reorder` (setup.cfg's addopts): its default
# sorts the files by their number of tests, which put these few-test files last, one worker running a long fixture
# alone at the end.
_LONGEST_FIRST = (
    "test_readme.py",
    "nlp/paper/test_reproduce.py",
    "nlp/serving/test_exports.py",
    "nlp/serving/test_served_equals_trained.py",
    "run_scripts/test_quickstart.py",
    "nlp/checkpoints/peers/test_tf_hub_saved_models.py",
    "nlp/serving/test_minilm_export.py",
    "run_scripts/test_labels_and_conversions.py",
    "test_docstrings.py",
    "run_scripts/test_run_classifier.py",
    "run_scripts/test_run_pretraining.py",
    "run_scripts/test_bad_input.py",
    "test_life_cycle_ram.py",
    "run_scripts/test_run_squad.py",
    "run_scripts/test_user_errors.py",
    "nlp/serving/test_hub_user.py",
    "nlp/text_tasks/test_round_trip.py",
    "run_scripts/test_path_errors.py",
    "nlp/checkpoints/peers/test_hf_export.py",
)


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(_LONGEST_FIRST)}

    def file_rank(item) -> int:
        relative = pathlib.Path(str(item.path)).relative_to(REPO_ROOT / "tests").as_posix()
        return rank.get(relative, len(rank))

    items.sort(key=file_rank)  # stable: the other files, and the tests within a file, keep their order
