"""The guard every job runs on its output folder before any work, and the claims that keep two jobs apart
(`official.nlp.common.output_folders`), on local disk and on ``ram://`` (the stand-in for a bucket)."""

from __future__ import annotations

import itertools
import json
import os
import subprocess

import pytest
import tensorflow as tf

from official.nlp.common import claims, input_files, output_files, output_folders
from official.nlp.common.errors import InputError, OutputExistsError

_RAM = itertools.count()


@pytest.fixture(params=["local", "ram"])
def root(request, tmp_path, monkeypatch):
    """A scratch folder (the working folder is elsewhere), local or in ram://."""
    monkeypatch.chdir(tmp_path)
    if request.param == "local":
        (tmp_path / "scratch").mkdir()
        return str(tmp_path / "scratch")
    path = f"ram://output-folders-{next(_RAM)}/scratch"
    tf.io.gfile.makedirs(path)
    return path


def _write(path: str, text: str = "the user's\n") -> None:
    output_files.makedirs_for(path)
    output_files.write_text(path, text)


def test_the_working_folder_and_its_parents_are_refused(tmp_path, monkeypatch):
    (tmp_path / "work" / "sub").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "work")
    for path, what in ((".", "is"), ("..", "holds"), ("/", "holds")):
        with pytest.raises(
            InputError, match=f"--export_dir={path} {what} the working folder: the output would replace"
        ):
            output_folders.check_export(path, flag="--export_dir", owner="run")
    output_folders.check_export("sub/export", flag="--export_dir", owner="run")  # a folder of its own
    with pytest.raises(InputError, match="root of its bucket"):
        output_folders.check_new_folder("gs://a-bucket/", flag="--output_dir")


def test_a_folder_that_is_or_holds_another_path_of_the_job_is_refused(root):
    model_dir, data = f"{root}/run", f"{root}/data"
    related = {"--model_dir": model_dir, "--input_file": f"{data}/*.tfrecord,{root}/more/x.tfrecord"}
    for path, what in (
        (model_dir, f"is --model_dir={model_dir}"),
        (f"{model_dir}/..", f"holds --model_dir={model_dir}"),
        (data, f"holds --input_file={data}/*.tfrecord"),
        (f"{root}/more", f"holds --input_file={root}/more/x.tfrecord"),
    ):
        with pytest.raises(InputError) as refused:
            output_folders.check_export(path, flag="--export_dir", owner=model_dir, related=related)
        assert str(refused.value).startswith(f"--export_dir={path} {what}: writing the output there would replace")
    output_folders.check_export(f"{model_dir}/export", flag="--export_dir", owner=model_dir, related=related)


def test_an_export_folder_is_replaceable_only_as_the_same_runs_export(root):
    run, other_run, export = f"{root}/run", f"{root}/other", f"{root}/export"
    output_folders.check_export(export, flag="--export_dir", owner=run)  # new
    tf.io.gfile.makedirs(export)
    output_folders.check_export(export, flag="--export_dir", owner=run)  # empty
    _write(f"{export}/checkpoint")
    with pytest.raises(OutputExistsError, match=r"holds files this run did not write \(checkpoint\)"):
        output_folders.check_export(export, flag="--export_dir", owner=run)
    _write(f"{export}/{output_folders.OWNER_FILE}", output_folders.owner_record(export, other_run, ["checkpoint"]))
    with pytest.raises(OutputExistsError, match="holds the export of another run .*/other"):
        output_folders.check_export(export, flag="--export_dir", owner=run)
    _write(f"{export}/{output_folders.OWNER_FILE}", output_folders.owner_record(export, run, ["checkpoint"]))
    output_folders.check_export(export, flag="--export_dir", owner=run)
    _write(f"{export}/notes.txt")  # added to the export since: the user's
    with pytest.raises(OutputExistsError, match=r"holds files this run did not write \(notes.txt\)"):
        output_folders.check_export(export, flag="--export_dir", owner=run)
    # The default layout (the export inside the run folder) names its run relatively: moved together, still owned.
    reference = output_folders.owner_record(f"{run}/export", run, [])
    assert json.loads(reference)["run"] == ".."
    _write(f"{root}/moved/export/{output_folders.OWNER_FILE}", reference)
    output_folders.check_export(f"{root}/moved/export", flag="--export_dir", owner=f"{root}/moved")


def test_a_new_folder_must_be_empty_and_a_version_base_hold_only_versions(root):
    output_folders.check_new_folder(f"{root}/new", flag="--output_dir")
    _write(f"{root}/new/README")
    with pytest.raises(OutputExistsError, match=r"--output_dir=.*new already holds files \(README\)"):
        output_folders.check_new_folder(f"{root}/new", flag="--output_dir")
    base, layout = f"{root}/exports", ("token_ids", "keras", "hub")
    for name in ("1/saved_model.pb", "token_ids/1/saved_model.pb", "keras/1.keras", ".2.claim-of-a-job"):
        _write(f"{base}/{name}")
    output_folders.check_version_base(base, flag="--export_dir", layout=layout)
    _write(f"{base}/checkpoint")
    with pytest.raises(OutputExistsError, match=r"holds files that are not exports \(checkpoint\)"):
        output_folders.check_version_base(base, flag="--export_dir", layout=layout)


def _gone_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def test_a_claim_held_by_another_job_is_refused_naming_it_and_one_of_a_gone_job_is_cleared(root):
    live, gone, host = os.getppid(), _gone_pid(), claims.host()
    other = f"{root}/.converted.{live}-0123abcd-{host}.claim"
    _write(other, json.dumps({"host": "that-host", "pid": live, "since": "2026-01-02 03:04:05 UTC"}))
    with pytest.raises(OutputExistsError) as refused:
        with claims.claim(root, "converted", what=f"{root}/converted"):
            pass
    assert f"{root}/converted is being written by another job: process {live} on host that-host since " in str(
        refused.value
    )
    assert other in str(refused.value) and "delete the claim file" in str(refused.value)
    assert input_files.listdir(root) == [os.path.basename(other)]  # its own claim withdrawn, the other's kept
    tf.io.gfile.remove(other)

    leftovers = [f".converted.{gone}-0123abcd-{host}.claim", f".converted.{gone}-0123abcd-{host}.incomplete"]
    _write(f"{root}/{leftovers[0]}")
    tf.io.gfile.makedirs(f"{root}/{leftovers[1]}")
    _write(f"{root}/{leftovers[1]}/ckpt-1.index")
    _write(f"{root}/user.txt")
    with claims.claim(root, "converted", what=f"{root}/converted"):
        assert claims.holds(root, "converted")
        assert [n for n in input_files.listdir(root) if n.endswith(".claim")] == [f".converted.{claims.job_id()}.claim"]
    assert input_files.listdir(root) == ["user.txt"]  # the gone job's leftovers and this job's claim are gone
