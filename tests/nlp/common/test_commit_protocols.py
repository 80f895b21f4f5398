"""Every commit protocol, killed after each of its writes in turn on a store whose rename is not atomic.

`NonAtomicStore` stands in for a bucket behind `tf.io.gfile` (there is none here): it keeps the files in TensorFlow's
``ram://`` filesystem, writes an object whole when it is closed (as Cloud Storage does), renames a file by copying it
and then deleting the source, and a folder object by object. Each of those is one *write*; the store "kills the job"
at the n-th write by raising `Killed`, and refuses every later write (a dead job cleans nothing up). For every n,
what is left must hold no artifact that looks complete (its marker there) without being whole, and a rerun must
finish the artifact with the same bytes as a run that was never interrupted.
"""

from __future__ import annotations

import dataclasses
import io
import itertools
import json
import os

import pytest
import tensorflow as tf

from official.nlp.common import input_files, output_files

_RUNS = itertools.count()


class Killed(BaseException):
    """The job died here (a BaseException, so that no `except Exception` of the code under test catches it)."""


class _ObjectWriter:
    """A file opened for writing: its bytes reach the store only at close, whole (one write)."""

    def __init__(self, store, path, mode):
        self.store, self.path, self.mode = store, path, mode
        self.buffer = io.BytesIO() if "b" in mode else io.StringIO()

    def write(self, data):
        return self.buffer.write(data)

    def flush(self):
        pass

    def close(self):
        if self.buffer is None:
            return
        data, self.buffer = self.buffer.getvalue(), None
        self.store.step(f"write {self.path}")
        self.store.put(self.path, data)

    def __enter__(self):
        return self

    def __exit__(self, kind, *_):
        if kind is None:
            self.close()
        else:
            self.buffer = None  # the job died with the file open: the object never appears


class NonAtomicStore:
    """`tf.io.gfile` as a bucket behaves, killed at write number `kill_at` (None: never)."""

    def __init__(self, kill_at: int | None = None):
        self.kill_at, self.writes, self.log = kill_at, 0, []

    def step(self, what: str) -> None:
        self.writes += 1
        self.log.append(what)
        if self.kill_at is not None and self.writes >= self.kill_at:
            raise Killed(what)

    def __getattr__(self, name):  # reads: exists, isdir, glob, listdir, stat, walk
        return getattr(tf.io.gfile, name)

    def GFile(self, path, mode="r"):
        if "w" in mode or "a" in mode:
            return _ObjectWriter(self, path, mode)
        return tf.io.gfile.GFile(path, mode)

    def makedirs(self, path):
        tf.io.gfile.makedirs(path)  # a store has no folders: nothing is written

    def copy(self, source, target, overwrite=False):
        self.step(f"copy {source} -> {target}")
        # Read and written whole: ram://'s own copy empties a target whose name starts the source's (a.tmp -> a).
        with tf.io.gfile.GFile(source, "rb") as f:
            data = f.read()
        if not overwrite and input_files.exists(target):
            raise tf.errors.AlreadyExistsError(None, None, target)
        self.put(target, data)

    @staticmethod
    def put(path, data):
        """An object written whole, replacing an earlier one (ram:// would append to it)."""
        if input_files.exists(path):
            tf.io.gfile.remove(path)
        with tf.io.gfile.GFile(path, "wb" if isinstance(data, bytes) else "w") as f:
            f.write(data)

    def remove(self, path):
        self.step(f"delete {path}")
        tf.io.gfile.remove(path)

    def rename(self, source, target, overwrite=False):
        if input_files.isdir(source):
            for directory, _, names in list(tf.io.gfile.walk(source)):
                for name in names:
                    relative = os.path.relpath(os.path.join(directory, name), source)
                    tf.io.gfile.makedirs(os.path.dirname(os.path.join(target, relative)))
                    self.rename(os.path.join(directory, name), os.path.join(target, relative), overwrite)
            return
        self.copy(source, target, overwrite)
        self.remove(source)

    def rmtree(self, path):
        for directory, _, names in list(tf.io.gfile.walk(path)):
            for name in names:
                self.remove(os.path.join(directory, name))
        tf.io.gfile.rmtree(path)


def _tree(folder: str) -> dict[str, bytes]:
    """{relative path: bytes} of the files under `folder` ({} when there is none)."""
    if not input_files.exists(folder):
        return {}
    found = {}
    for directory, _, names in tf.io.gfile.walk(folder):
        for name in names:
            path = os.path.join(directory, name)
            with tf.io.gfile.GFile(path, "rb") as f:
                found[os.path.relpath(path, folder)] = f.read()
    return found


def _kill_after_each_write(monkeypatch, job, check):
    """Runs `job(root)` once whole, then killed at write 1, 2, ... in a fresh ram:// root each, calling
    `check(root, killed_at)` on what is left, and then `job(root)` again (a rerun) with `check(root, None)`.
    Returns the number of writes of a whole run."""
    store = NonAtomicStore()
    monkeypatch.setattr(input_files, "gfile", lambda: store)
    root = f"ram://commit-{next(_RUNS)}"
    job(root)
    total = store.writes
    assert total >= 2, store.log
    for kill_at in range(1, total + 1):
        root = f"ram://commit-{next(_RUNS)}"
        store.kill_at, store.writes, store.log = kill_at, 0, []
        with pytest.raises(Killed):
            job(root)
        check(root, kill_at)
        store.kill_at, store.writes = None, 0
        job(root)
        check(root, None)
    return total


def test_a_file_appears_whole_or_not_at_all(monkeypatch):
    text = "accuracy 0.84\n" * 1000

    def job(root):
        output_files.write_text(f"{root}/eval_results.txt", text)

    def check(root, killed_at):
        path = f"{root}/eval_results.txt"
        if killed_at is None:
            assert tf.io.gfile.GFile(path).read() == text
        elif input_files.exists(path):
            assert tf.io.gfile.GFile(path).read() == text

    assert _kill_after_each_write(monkeypatch, job, check) == 3  # the object, its copy, the deletion


class _Tiny(tf.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = tf.Variable([scale, 2 * scale])

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def __call__(self, x):
        return x * self.scale[0]


def test_an_export_version_counts_only_with_its_saved_model_pb_copied_last(monkeypatch):
    from official.nlp.serving import export_base, versions

    module = _Tiny(3.0)
    signatures = {"serving_default": module.__call__.get_concrete_function()}
    expected = {}

    def job(root):
        with versions.claim_version(f"{root}/export") as version:
            export_base.save_saved_model(module, f"{root}/export/{version}", signatures)
        if not expected:
            expected.update(_tree(f"{root}/export/1"))

    def check(root, killed_at):
        export = f"{root}/export"
        taken = versions.taken_versions(export)
        complete = [v for v in sorted(taken) if versions.is_complete(f"{export}/{v}")]
        for version in complete:  # TF Serving would load it: it must be whole (its bytes differ run to run)
            assert sorted(_tree(f"{export}/{version}")) == sorted(expected)
            assert float(tf.saved_model.load(f"{export}/{version}")(tf.constant([2.0]))[0]) == 6.0
        assert killed_at is not None or complete
        # Nothing of a version, whole or half-copied, is written again: the next export takes a new number.
        assert versions.next_version(export) == max(taken, default=0) + 1

    writes = _kill_after_each_write(monkeypatch, job, check)
    # One copy per file, no rename of the folder; and the version's claim: written under a temporary name and
    # renamed (a copy and a deletion), then withdrawn once the version is in place.
    assert writes == len(expected) + 4
    assert "saved_model.pb" in expected


def test_a_model_directory_counts_only_with_its_checkpoint_file_last(monkeypatch):
    from official.nlp.checkpoints import model_dir
    from official.nlp.modeling.encoder import BertEncoder

    config = dict(vocab_size=30, hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16)
    old, new = BertEncoder(**config), BertEncoder(**config)
    for variable in new.weights:
        variable.assign(variable + 1.0)
    trees = {}

    def files(folder):  # the `checkpoint` state file records the time of each save: its bytes differ run to run
        return {name: data for name, data in _tree(folder).items() if name != "checkpoint"}

    def job(root):
        if not input_files.exists(f"{root}/old_done"):  # the earlier export that the new one replaces
            store, kill_at = input_files.gfile(), input_files.gfile().kill_at
            store.kill_at = None
            model_dir.export_model_dir(old, f"{root}/export", vocab_file=None, do_lower_case=None, step=1, owner=root)
            output_files.write_text(f"{root}/old_done", "")
            trees["old"] = files(f"{root}/export")
            store.kill_at, store.writes = kill_at, 0
        model_dir.export_model_dir(new, f"{root}/export", vocab_file=None, do_lower_case=None, step=2, owner=root)
        trees.setdefault("new", files(f"{root}/export"))

    def check(root, killed_at):
        export = f"{root}/export"
        latest = tf.train.latest_checkpoint(export) if input_files.exists(export) else None
        if latest is not None:  # a reader takes it: it must be the old export or the new one, whole
            assert files(export) == trees["old" if latest.endswith("ckpt-1") else "new"]
        if killed_at is None:
            assert files(export) == trees["new"] and model_dir.export_is_current(export, 2)

    _kill_after_each_write(monkeypatch, job, check)
    assert trees["old"] != trees["new"] and "ckpt-2.index" in trees["new"]


def test_a_feature_cache_counts_only_with_its_key_written_last(monkeypatch):
    from official.nlp.data import feature_cache

    def build(n):
        return lambda: ({"input_ids": [i, i + 1, i + 2]} for i in range(n))

    def job(root):
        path = f"{root}/out/train.tf_record"
        if not input_files.exists(f"{root}/old"):
            store, kill_at = input_files.gfile(), input_files.gfile().kill_at
            store.kill_at = None  # an earlier cache of other settings, which this job rebuilds
            feature_cache.cached_records(path, {"max_seq_length": 64}, build(3))
            output_files.write_text(f"{root}/old", "")
            store.kill_at, store.writes = kill_at, 0
        assert feature_cache.cached_records(path, {"max_seq_length": 128}, build(7)) == 7

    def check(root, killed_at):
        path = f"{root}/out/train.tf_record"
        key = feature_cache.read_key(path)
        if key is not None:  # a reader takes the records: they must be the ones the key describes
            records = list(tf.data.TFRecordDataset(path).as_numpy_iterator())
            assert len(records) == key["count"] == {64: 3, 128: 7}[key["max_seq_length"]]
        if killed_at is None:
            assert key is not None and key["max_seq_length"] == 128

    _kill_after_each_write(monkeypatch, job, check)


def test_record_shards_count_only_with_their_statistics_and_a_rerun_finishes_them(monkeypatch, shared_data):
    from official.nlp.common import output_names
    from official.nlp.data.pretraining import generator, outputs

    text = (shared_data / "pretraining_golden" / "squad_contexts.txt").read_bytes()
    corpus = text[: text.index(b"\n\n", 6000) + 2]
    vocab = (shared_data / "vocab" / "bert-base-uncased-vocab.txt").read_bytes()
    expected = {}

    def config(root):
        return generator.PretrainingDataConfig(
            input_file=f"{root}/corpus.txt",
            output_file=f"{root}/out/train.tfrecord@2",
            vocab_file=f"{root}/vocab.txt",
            do_lower_case=True,
            max_seq_length=64,
            max_predictions_per_seq=10,
            dupe_factor=2,
            unit_mb=0.002,
            num_workers=1,
        )

    def job(root):
        if not input_files.exists(f"{root}/vocab.txt"):  # the inputs, there before the job starts
            for name, data in (("corpus.txt", corpus), ("vocab.txt", vocab)):
                with tf.io.gfile.GFile(f"{root}/{name}", "wb") as f:
                    f.write(data)
        generator.create_pretraining_data(config(root))
        if not expected:
            expected.update(_tree(f"{root}/out"))

    def check(root, killed_at):
        cfg = config(root)
        paths = output_names.output_paths(cfg.output_file)
        settings = outputs.output_settings(cfg, [cfg.input_file], len(paths))
        for s, path in enumerate(paths):
            name = os.path.relpath(path, f"{root}/out")
            if outputs.shard_state(path, settings, s) == "complete":  # a rerun skips it: it must be whole
                assert tf.io.gfile.GFile(path, "rb").read() == expected[name]
            elif killed_at is None:
                pytest.fail(f"{path} is not complete after a rerun")
        if killed_at is None:
            records = {k: v for k, v in _tree(f"{root}/out").items() if not k.startswith("stats/")}
            assert records == {k: v for k, v in expected.items() if not k.startswith("stats/")}
            totals = json.loads(_tree(f"{root}/out")["stats/train.tfrecord.json"])
            assert totals["instances"] == json.loads(expected["stats/train.tfrecord.json"])["instances"]

    store_writes = _kill_after_each_write(monkeypatch, job, check)
    # A rerun with other settings is refused before anything is touched, on the store as on local disk.
    root = f"ram://commit-{next(_RUNS)}"
    job(root)
    before = _tree(f"{root}/out")
    with pytest.raises(generator.InputError, match="dupe_factor"):
        generator.create_pretraining_data(dataclasses.replace(config(root), dupe_factor=3))
    assert _tree(f"{root}/out") == before
    assert store_writes >= 2 * 4  # per shard: the copy under a temporary name, its statistics, the rename


def test_a_prepared_corpus_counts_only_with_its_summary_written_last(monkeypatch, shared_data):
    from official.nlp.data.corpus.preparation import prepare_corpus
    from official.nlp.data.corpus.settings import CorpusConfig

    text = (shared_data / "wikipedia" / "wiki_00").read_bytes()
    wiki = text[: text.index(b"</doc>\n", 40_000) + 7]
    expected = {}

    def job(root):
        if not input_files.exists(f"{root}/wiki_00"):
            NonAtomicStore.put(f"{root}/wiki_00", wiki)
        prepare_corpus(CorpusConfig(input_file=f"{root}/wiki_00", output_file=f"{root}/out/wiki.txt@2", unit_mb=0.01))
        if not expected:
            expected.update(_tree(f"{root}/out"))

    def check(root, killed_at):
        left = _tree(f"{root}/out")
        # A temporary file or a claim carries its writer's name (a later job removes a dead writer's): not a final name.
        final = {k: v for k, v in left.items() if ".tmp-" not in k and not k.endswith(".claim")}
        for name, data in final.items():  # whatever has its final name is whole
            if name != "stats/wiki.txt.json":
                assert data == expected[name], (killed_at, name)
        if "stats/wiki.txt.json" in final or killed_at is None:  # the summary: every shard is there
            assert final.keys() == expected.keys()
        if killed_at is None:
            assert left.keys() == expected.keys()  # a rerun leaves no temporary file of the killed run

    _kill_after_each_write(monkeypatch, job, check)
    assert sorted(expected) == ["stats/wiki.txt.json", "wiki.txt-00000-of-00002", "wiki.txt-00001-of-00002"]
