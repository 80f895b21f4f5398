"""Temporary names carry their writer, and a later job deletes only those of a writer proven gone."""

import os
import subprocess
import sys

import tensorflow as tf

from official.nlp.common import output_files
from official.nlp.common.processes import owners


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_leftovers_of_dead_writers_on_this_host_go_and_others_stay(tmp_path):
    target = tmp_path / "out [1].txt"  # a glob character in the name: found by listing, not by a pattern
    host, dead, live = owners.this_host(), _dead_pid(), os.getppid()
    names = {
        "dead": f"out [1].txt.tmp-{dead}-{host}",
        "older_version_dead": f"out [1].txt.tmp-{dead}",  # a name of an older version: no host, a local path
        "mine": os.path.basename(output_files.temporary_name(str(target))),  # an earlier call of this process
        "live": f"out [1].txt.tmp-{live}-{host}",
        "other_host": f"out [1].txt.tmp-{dead}-another.host",
        "other_file": f"out [1].txt.backup.tmp-{dead}-{host}",
        "not_a_tag": "out [1].txt.tmp-notes",
    }
    for name in names.values():
        (tmp_path / name).write_text("x")
    found = {os.path.basename(leftover.path): leftover for leftover in owners.leftovers(str(target), "tmp")}
    assert set(found) == {names[k] for k in ("dead", "older_version_dead", "mine", "live", "other_host")}
    assert found[names["live"]].describe() == f"pid {live} on {host}"

    output_files.write_text(str(target), "new\n")  # every write clears what its dead writers left
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted([target.name, names["live"], names["other_host"], names["other_file"], names["not_a_tag"]])


def test_on_a_store_only_tagged_names_of_this_host_count_as_this_hosts():
    root = "ram://owners-test"
    tf.io.gfile.makedirs(root)
    dead, host = _dead_pid(), owners.this_host()
    for tag in (f"{dead}-{host}", f"{dead}", f"{dead}-another.host"):
        with tf.io.gfile.GFile(f"{root}/x.json.tmp-{tag}", "w") as f:
            f.write("x")
    output_files.remove_leftovers([f"{root}/x.json"])
    # An untagged name on a bucket may be another host's: only the one tagged with this host went.
    assert sorted(tf.io.gfile.listdir(root)) == [f"x.json.tmp-{dead}", f"x.json.tmp-{dead}-another.host"]
