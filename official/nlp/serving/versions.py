"""The numbered versions of an export folder: which numbers are taken, and how a job claims the one it writes.

TF Serving watches `export_dir` and serves its largest numbered folder. A version is whole once its
`saved_model.pb` is there (written last); besides it a version has side outputs of the same number
(`token_ids/<version>/`, `keras/<version>.keras`, `hub/<version>/`). An export folder holds nothing else
(`check_export_dir`), and nothing in it is ever written twice: a number in use in any form, whole, half-copied by a
job that was killed, or claimed by a running job, is skipped by the next export (`taken_versions`). A job claims
its number before writing anything of it (`claim_version`, on `claims.claim`'s protocol, which needs no lock
and no atomic rename, so that it holds on a bucket too): two jobs started together into one folder write two
versions, and each reports the one it wrote.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from official.nlp.common import claims, input_files, output_files, output_folders
from official.nlp.common.errors import OutputExistsError

SAVED_MODEL_MARKER = "saved_model.pb"  # what TF Serving and every loader read first: written last
TOKEN_IDS_DIR = "token_ids"  # token_ids/<version>/ (export_base.py)
KERAS_DIR = "keras"  # keras/<version>.keras (exporter.py)
HUB_DIR = "hub"  # hub/<version>/{preprocessor,encoder} (hub.py)
LAYOUT = (TOKEN_IDS_DIR, KERAS_DIR, HUB_DIR)  # what an export folder holds besides its numbered versions
_CLAIM_TRIES = 20


def taken_versions(export_dir: str, *, with_claims: bool = True) -> set[int]:
    """Every version number in use in `export_dir`: numbered folders (whole, being written, or left half-copied on a
    store by a job that was killed), the side outputs' numbers, and (`with_claims`) the versions jobs have claimed.
    None of them is ever written again: a later export takes a new number."""
    if not input_files.isdir(export_dir):
        return set()
    names = set(input_files.listdir(export_dir))
    taken = {int(n) for n in names if n.isdigit()}
    if with_claims:
        taken |= {int(n) for n in claims.claimed_names(export_dir) if n.isdigit()}
    for side in LAYOUT:
        if side in names and input_files.isdir(os.path.join(export_dir, side)):
            stems = (n.split(".")[0] for n in input_files.listdir(os.path.join(export_dir, side)))
            taken |= {int(stem) for stem in stems if stem.isdigit()}
    return taken


def next_version(export_dir: str) -> int:
    """One more than the largest version in use in `export_dir` (1 for a new folder); see `taken_versions`."""
    return max(taken_versions(export_dir), default=0) + 1


def is_complete(saved_model_dir: str) -> bool:
    """Whether a version folder holds a whole SavedModel: its `saved_model.pb`, the file written last."""
    return input_files.exists(os.path.join(saved_model_dir, SAVED_MODEL_MARKER))


def check_export_dir(export_dir: str, *, flag: str = "--export_dir", related=()) -> None:
    """Refuses, before any work, an export folder that holds something other than exports (a model directory, a
    fine-tuning run, the user's files), or that is the working folder or holds one of the job's inputs."""
    output_folders.check_version_base(export_dir, flag=flag, layout=LAYOUT, related=related)


@contextlib.contextmanager
def claim_version(export_dir: str, version: int | None = None) -> Iterator[int]:
    """Holds a version number of `export_dir` for this job while it writes that version (its SavedModels and side
    outputs); yields it. `version` None takes the next free one: a job that loses it to another job at the same
    instant takes the one after. An explicit `version` in use, or held by another job, is refused. Reentrant.

    It holds on a bucket as on local disk: a claim is a file, written and then checked against the others by
    listing (see `output_folders`), so two jobs never get one version, whichever finishes first."""
    output_files.makedirs(export_dir, name="--export_dir")
    if version is not None and claims.holds(export_dir, str(version)):
        yield int(version)
        return
    if version is not None:
        version = int(version)
        check_version_free(export_dir, version)
        with claims.claim(export_dir, str(version), what=os.path.join(export_dir, str(version))):
            check_version_free(export_dir, version)  # again: another job may have finished it before our claim
            yield version
        return
    claims.remove_leftovers_of_gone_jobs(export_dir)
    for _ in range(_CLAIM_TRIES):
        version = next_version(export_dir)
        if claims.try_claim(export_dir, str(version)):
            if version not in taken_versions(export_dir, with_claims=False):
                try:
                    yield version
                finally:
                    claims.release(export_dir, str(version))
                return
            claims.release(export_dir, str(version))  # written by a job that finished meanwhile
        claims.pause()
    raise OutputExistsError(
        f"{export_dir}: no free version after {_CLAIM_TRIES} tries, other jobs claimed each one first; rerun, or "
        "pass --version"
    )


def check_version_free(export_dir: str, version: int) -> None:
    """Refuses an explicit `version` that `export_dir` holds already, whole or not."""
    target = os.path.join(export_dir, str(version))
    if is_complete(target):
        raise OutputExistsError(
            f"{target} already exists; TF Serving versions are immutable: pass another --version "
            "or leave it out to take the next one"
        )
    if version in taken_versions(export_dir, with_claims=False):
        raise OutputExistsError(
            f"version {version} of {export_dir} is in use: files of that number are there without its "
            f"{SAVED_MODEL_MARKER} (an export being written, or one that stopped half-way). Pass another --version "
            "or leave it out to take the next one"
        )
