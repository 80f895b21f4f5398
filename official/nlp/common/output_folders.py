"""Output folders: which ones a job may write, replace or delete, and how two jobs on one output keep apart.

**A job deletes or replaces only what it can prove it wrote.** That is its own staging folders and claims (their
names carry the job's id, `claims.job_id`), its own earlier run (a folder whose `RUN_FILE` names the job) and its own
earlier export of the same kind: a model directory whose `OWNER_FILE` names the run now exporting
(`run_pretraining --export_dir`, a fine-tuning run's `best_model/`). Everything else is the user's. So every job
that writes an output folder checks it up front, before any training, and refuses, as one line, an output folder
that

- is the working folder or holds it (``--export_dir=.``, ``--export_dir=..``), or is the root of a bucket;
- is, or holds, another input or output of the job (``--export_dir=<model_dir>``, ``--export_dir=<model_dir>/..``),
  compared with symbolic links resolved (`normalized`): a link to an input folder is that folder;
- holds anything the job would not write itself (a fine-tuning run, a user's files).

A job whose output is a file refuses one that is an input file, links resolved too (`check_output_files`).

What a folder may already hold depends on its kind:

- a *run folder* (`run_folder`: a fine-tuning `--output_dir`, `run_pretraining --model_dir`,
  `reproduce_paper --output_dir`, which a rerun resumes): an earlier run of the same job, proven by the `RUN_FILE`
  the job writes as it starts (or, written by an earlier version, the job's settings file); the job holds a claim
  on the folder while it runs, so that a second job on it is refused at start-up, naming the first;
- a *new folder* (`check_new_folder`: `convert_checkpoint --output_dir`, `save_classifier`): nothing;
- a *replaceable export* (`check_export`: a model directory that a run writes again): this run's earlier export;
- a *version base* (`check_version_base`: `export_model --export_dir`, which adds a numbered version at each export):
  earlier versions and their side folders (`token_ids/`, `keras/`, `hub/`).

Two jobs on one output keep apart through names of their own and claims (`claims`).
"""

from __future__ import annotations

import contextlib
import json
import os
import posixpath
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence

from official.nlp.common import input_files, output_files, text_files
from official.nlp.common.claims import claim, is_job_file, remove_leftovers_of_gone_jobs, staging_name
from official.nlp.common.errors import InputError, OutputExistsError

OWNER_FILE = "export_owner.json"  # in a replaceable export: the run folder that may replace it, relative to it
RUN_FILE = "output_owner.json"  # in a folder a job writes and resumes: the job (see `run_folder`)


# ---------------------------------------------------------------------------------------------------------------
# Where an output folder may be, and what it may hold


def normalized(path: str) -> str:
    """`path` with `..`, `.` and symbolic links resolved (local), or `..` and `.` resolved (a store)."""
    path = os.fspath(path)
    if not input_files.is_remote(path):
        return os.path.realpath(path)
    scheme, rest = path.split("://", 1)
    return f"{scheme}://{posixpath.normpath(rest).lstrip('/')}" if rest.strip("/") else f"{scheme}://"


def _holds(outer: str, inner: str) -> bool:
    """Whether normalized path `inner` is `outer` or lies inside it."""
    return inner == outer or inner.startswith(outer.rstrip("/") + "/")


def _literal_part(pattern: str) -> str:
    """The part of an input pattern before its first glob character (``data/*.tfrecord`` -> ``data/``)."""
    cut = re.search(r"[*?\[]", pattern)
    return os.path.dirname(pattern[: cut.start()]) if cut else pattern


def _where(flag: str, path: str) -> str:
    return f"{flag}={path}" if flag.startswith("--") else f"{flag} {path}"


def _related_paths(related: Mapping[str, str | Sequence[str] | None]) -> Iterator[tuple[str, str, str]]:
    """`(flag, path as given, its literal part)` for each of a job's other paths (`related`: `{flag: path, paths or
    comma-separated patterns}`)."""
    for other_flag, value in dict(related).items():
        values = value.split(",") if isinstance(value, str) else list(value or ())
        for other in filter(None, (v.strip() for v in values)):
            yield other_flag, other, _literal_part(other)


def check_output_files(paths: Sequence[str], *, flag: str, inputs: Mapping[str, Sequence[str]], hint: str = "") -> None:
    """Refuses output files that are one of the job's input files, compared with symbolic links resolved (the one
    comparison of a job's outputs with its inputs, as `check_location` does for folders): an input that is a link
    to an output, or an output that is a link to an input (or reached through a linked folder), is the same file,
    and writing the output would replace or delete it. `inputs`: `{how the job names them ("--input_file=a/*"):
    the files}`; `hint`: more of what to change."""
    resolved = {normalized(f): (named, f) for named, files in inputs.items() for f in files}
    for path in paths:
        found = resolved.get(normalized(path))
        if found:
            named, name = found
            absolute = [p if input_files.is_remote(p) else os.path.abspath(p) for p in (name, path)]
            through = "" if absolute[0] == absolute[1] else f" ({name}, through a link)"
            raise InputError(
                f"{_where(flag, path)} is also an input{through} ({named} names it): writing the output would replace "
                f"it. Write the output to another folder{hint}"
            )


def check_location(path: str, *, flag: str, related: Mapping[str, str | Sequence[str] | None] = ()) -> None:
    """Refuses an output folder that is the working folder or holds it, the root of a bucket, or a folder that is
    or holds one of the job's other paths (`related`: `{flag: path, paths or comma-separated patterns}`)."""
    here = normalized(path)
    if not input_files.is_remote(path) and _holds(here, os.path.realpath(os.getcwd())):
        what = "is the working folder" if here == os.path.realpath(os.getcwd()) else "holds the working folder"
        raise InputError(
            f"{_where(flag, path)} {what}: the output would replace everything in it. Name a folder of its own "
            f"(a new one, such as {flag}=export)"
        )
    if input_files.is_remote(path) and not input_files.is_process_local(path) and "/" not in here.split("://", 1)[1]:
        raise InputError(f"{_where(flag, path)} is the root of its bucket; name a folder in it")
    for other_flag, other, literal in _related_paths(related):
        other_path = normalized(literal or ".")
        if _holds(here, other_path):
            what = "is" if other_path == here and literal == other else "holds"
            raise InputError(
                f"{_where(flag, path)} {what} {_where(other_flag, other)}: writing the output there would "
                f"replace it. Name a folder of its own for {flag}"
            )


def split(path: str) -> tuple[str, str]:
    """(parent folder, name) of output folder `path`: where its claim and staging go."""
    path = os.fspath(path).rstrip("/") or os.fspath(path)
    if input_files.is_remote(path):
        parent, name = path.rsplit("/", 1)
        return parent, name
    return os.path.split(os.path.abspath(path))


def _entries(path: str) -> list[str]:
    """The names in folder `path` ([] when there is none); a file in its place is refused."""
    output_files.check_target(path, folder=True)
    if not input_files.isdir(path):
        if input_files.exists(path):
            raise OutputExistsError(f"{path} is a file, not a folder; remove it or choose another path")
        return []
    return input_files.listdir(path)


def _listed(names: Sequence[str], limit: int = 4) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def check_new_folder(path: str, *, flag: str, related: Mapping = ()) -> None:
    """Refuses, before any work, an output folder that the job creates whole but that is not new or empty."""
    check_location(path, flag=flag, related=related)
    names = _entries(path)
    if names:
        raise OutputExistsError(
            f"{_where(flag, path)} already holds files ({_listed(names)}); this job writes a new folder and "
            "replaces nothing. Name a new or empty folder"
        )


def owner_reference(export_dir: str, owner: str) -> str:
    """How `export_dir`'s `OWNER_FILE` names its run folder `owner`: relative to the export where the two share a
    filesystem (so that a run moved with its export still owns it), else the full path."""
    export, run = normalized(export_dir), normalized(owner)
    if input_files.is_remote(export) or input_files.is_remote(run):
        export_root, run_root = export.split("/", 3)[:3], run.split("/", 3)[:3]  # scheme and bucket
        if export_root != run_root:
            return run
        return posixpath.relpath(run.split("://", 1)[1], export.split("://", 1)[1])
    return os.path.relpath(run, export)


def _owner_of(export_dir: str) -> tuple[str | None, list[str]]:
    """The normalized run folder that `export_dir`'s `OWNER_FILE` names (None without one) and the files it lists."""
    file = os.path.join(export_dir, OWNER_FILE)
    if not input_files.exists(file):
        return None, []
    try:
        record = json.loads(text_files.read_text(file))
        reference, files = record["run"], [str(f) for f in record["files"]]
    except (ValueError, TypeError, KeyError):
        return None, []
    if not isinstance(reference, str):
        return None, files
    if input_files.is_remote(reference) or os.path.isabs(reference):
        return normalized(reference), files
    return normalized(os.path.join(normalized(export_dir), reference)), files


def check_export(path: str, *, flag: str, owner: str, related: Mapping = ()) -> None:
    """Refuses, before any work, a replaceable export folder that holds anything but the earlier export of the run
    in folder `owner`: its `OWNER_FILE` must name that run, and every file there must be one the file lists (what
    the export wrote; a file added since is the user's)."""
    check_location(path, flag=flag, related=related)
    if not _entries(path):
        return
    found, written = _owner_of(path)
    others = [f for f in output_files.files_under(path) if f != OWNER_FILE and f not in set(written)]
    if found == normalized(owner) and not others:
        return
    if found is not None and found != normalized(owner):
        raise OutputExistsError(
            f"{_where(flag, path)} holds the export of another run ({found}), not of this one ({owner}): replacing "
            f"it would lose that model. Name another folder for {flag}, or delete that export first"
        )
    raise OutputExistsError(
        f"{_where(flag, path)} holds files this run did not write ({_listed(others)}): the export would replace "
        f"them. Name a new or empty folder for {flag}"
    )


def owner_record(export_dir: str, owner: str, files: Sequence[str]) -> str:
    """The text of `OWNER_FILE` for the export `export_dir` of the run in folder `owner`, made of `files`."""
    return (
        json.dumps(
            {
                "about": "a model directory exported by a run, which may replace it with a later export",
                "run": owner_reference(export_dir, owner),
                "files": sorted(files),
            },
            indent=1,
        )
        + "\n"
    )


def check_version_base(path: str, *, flag: str, layout: Iterable[str], related: Mapping = ()) -> None:
    """Refuses, before any work, a folder of numbered versions that holds something else: numeric versions, the
    side folders named in `layout` and hidden files (the jobs' claims and staging among them) are what it may
    hold. Nothing in it is ever replaced or deleted, but its kind is checked all the same: a model directory or a
    fine-tuning run given as the export folder is a mistake to name at once."""
    check_location(path, flag=flag, related=related)
    allowed = set(layout)
    others = [n for n in _entries(path) if not (n.isdigit() or n in allowed or n.startswith("."))]
    if others:
        raise OutputExistsError(
            f"{_where(flag, path)} holds files that are not exports ({_listed(others)}): exports go into a folder "
            f"of their own, one numbered version each. Name a new or empty folder for {flag}"
        )


def _marker_job(path: str) -> str | None:
    """The job that `path`'s `RUN_FILE` names ("" for an unreadable one; None without one)."""
    file = os.path.join(path, RUN_FILE)
    if not input_files.exists(file):
        return None
    try:
        job = json.loads(text_files.read_text(file)).get("job")
    except (ValueError, AttributeError, InputError):
        return ""
    return job if isinstance(job, str) else ""


def check_run_folder(path: str, *, flag: str, job: str, markers: Sequence[str] = (), related: Mapping = ()) -> bool:
    """Refuses, before any work, a folder that a job writes and resumes (a training run's `--output_dir` or
    `--model_dir`, a rerun of the paper) unless it is new, empty, or an earlier run of this same job: one whose
    `RUN_FILE` names `job` (written by `run_folder` as the job starts), or, written by an earlier version, one that
    holds a file of `markers` (the job's settings file). Whether an earlier run's settings fit is the job's own
    check (`training.run_settings.check_resume`). Returns whether the folder holds an earlier run."""
    check_location(path, flag=flag, related=related)
    names = [n for n in _entries(path) if not is_job_file(n)]
    if not names:
        return False
    found = _marker_job(path)
    if found == job or (found is None and any(m in names for m in markers)):
        return True
    if found:
        raise OutputExistsError(
            f"{_where(flag, path)} holds a run of {found}, not of {job} ({os.path.join(path, RUN_FILE)} says so): "
            f"this job would mix its files with that run's. Name a new or empty folder for {flag}"
        )
    raise OutputExistsError(
        f"{_where(flag, path)} holds files this job did not write ({_listed(sorted(names))}): it writes only into "
        f"a new or empty folder, or into its own earlier run. Name a new or empty folder for {flag}"
    )


@contextlib.contextmanager
def run_folder(
    path: str, *, flag: str, job: str, markers: Sequence[str] = (), related: Mapping = (), writer: bool = True
) -> Iterator[bool]:
    """Holds folder `path` for a job that writes and resumes it, for the block: checks it (`check_run_folder`),
    claims it (`claim` on its name in its parent: a second job on the same folder is refused at start-up, naming
    the first) and marks it as this job's (`RUN_FILE`) before the job writes anything else there. Yields whether
    the folder holds an earlier run. A process that does not write the folder itself (`writer=False`: a worker
    other than the chief of a multi-worker job, while the chief writes there) only checks where it is."""
    if not writer:
        check_location(path, flag=flag, related=related)
        yield input_files.isdir(path) and bool(input_files.listdir(path))
        return
    check_run_folder(path, flag=flag, job=job, markers=markers, related=related)  # before the claim makes a folder
    parent, name = split(path)
    with claim(parent, name, what=_where(flag, path)):
        earlier = check_run_folder(path, flag=flag, job=job, markers=markers, related=related)  # one ended meanwhile
        created = not input_files.isdir(path)
        marker = os.path.join(path, RUN_FILE)
        if _marker_job(path) != job:
            output_files.makedirs(path, name=flag)
            record = {"about": "a folder that this job writes and resumes; another job refuses it", "job": job}
            output_files.write_text(marker, json.dumps(record, indent=1) + "\n", name=flag)
        try:
            yield earlier
        except BaseException:
            # A job refused at start-up (a missing input, a bad flag found late) leaves the folder as it found it.
            if not earlier and input_files.isdir(path) and input_files.listdir(path) == [RUN_FILE]:
                output_files.remove(marker)
                if created:
                    output_files.rmtree(path)
            raise


@contextlib.contextmanager
def staging_folder(target: str) -> Iterator[str]:
    """A new folder of this job to write `target` in, deleted on exit: beside a local `target` (so that a rename
    puts it in place), a local temporary folder for one on another filesystem (a store's folder is copied file
    by file anyway)."""
    if input_files.is_remote(target):
        import tempfile

        staging = tempfile.mkdtemp(prefix="bert-output-")  # library-created local folder
    else:
        parent, name = split(target)
        output_files.makedirs(parent)
        remove_leftovers_of_gone_jobs(parent)
        staging = os.path.join(parent, staging_name(name))
        output_files.makedirs(staging)
    try:
        yield staging
    finally:
        output_files.rmtree(staging)


def commit_export(staging: str, target: str, *, marker: str, replace: bool) -> None:
    """Puts the whole folder `staging` (with its `OWNER_FILE` when `replace`) in place as `target`, marker last.

    Without `replace`, `target` must still be new or empty (`output_files.commit_folder`). With it, `target` may be
    this run's earlier export, which `check_export` has proved: a job killed on the way leaves the earlier export,
    none, or a folder without `marker` that still holds its `OWNER_FILE`, so that the rerun replaces it in turn. On
    local disk the earlier export is first renamed aside (to a name of this job, deleted once the new one is in
    place, and put back if the commit fails).
    """
    local = not (input_files.is_remote(staging) or input_files.is_remote(target))
    if not replace or not local or not input_files.isdir(target):
        output_files.commit_folder(staging, target, marker=marker, replace=replace, identity=OWNER_FILE)
        return
    parent, name = split(target)
    aside = os.path.join(parent, staging_name(name, ".replaced"))
    with input_files.user_path(target):
        os.replace(target, aside)
    try:
        output_files.commit_folder(staging, target, marker=marker)
    except BaseException:
        os.replace(aside, target)  # the commit is one rename, so nothing of the new folder is there
        raise
    output_files.rmtree(aside)
