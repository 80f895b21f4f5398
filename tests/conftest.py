"""Shared fixtures: where the real public data in ../shared/data lives.

The data directory is found from $BERT_SHARED_DATA, else ../shared/data next to the checkout. CI has it, so a
missing directory is an error rather than a skip: a skipped parity test would pass without checking anything.
"""
import os
import pathlib

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
