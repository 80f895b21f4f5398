"""End-to-end tests of the pretraining-data generator on real text (the SQuAD v1.1 dev contexts)."""

import gzip
import json
import os
import pathlib

import numpy as np
import pytest
import tensorflow as tf

from official.nlp.data.pretraining import generator as pretraining_data
from official.nlp.data.pretraining import outputs
from official.nlp.data.pretraining.masking import rule as masking
from official.nlp.data.pretraining.masking.config import MaskingConfig
from official.nlp.tokenizers import tokenization
from tests.pretraining_records import parse_records as parse

GOLDEN = "pretraining_golden/squad_contexts.uncased.seq128.dupe5.tfrecord.gz"


def config(shared_data, tmp, **kw):
    base = dict(
        input_file=str(shared_data / "pretraining_golden" / "squad_contexts.txt"),
        output_file=str(tmp / "squad.tfrecord"),
        vocab_file=str(shared_data / "vocab" / "bert-base-uncased-vocab.txt"),
        do_lower_case=True,
        max_seq_length=128,
        max_predictions_per_seq=20,
        masked_lm_prob=0.15,
        random_seed=12345,
        dupe_factor=5,
        short_seq_prob=0.1,
        num_workers=1,
    )
    base.update(kw)
    return pretraining_data.PretrainingDataConfig(**base)


@pytest.fixture(scope="module")
def squad_run(shared_data, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("squad")
    cfg = config(shared_data, tmp)
    stats = pretraining_data.create_pretraining_data(cfg)
    return cfg, stats, parse(cfg.output_file)


@pytest.fixture(scope="module")
def golden(shared_data):
    return parse(shared_data / GOLDEN, "GZIP")


def test_statistics_follow_the_rule_and_the_original(squad_run, golden, shared_data):
    cfg, stats, rec = squad_run
    lengths = rec["input_mask"].sum(1)
    rule = masking.num_to_predict(lengths, MaskingConfig(30522, 103, (101, 102), 20))
    np.testing.assert_array_equal(rec["masked_lm_weights"].sum(1), rule)  # Every instance follows the cap.
    rates = stats.to_dict()["rates"]
    assert abs(rates["masked_fraction_of_non_special"] - 0.15) < 0.01
    for name, expected in (("mask", 0.8), ("keep", 0.1), ("random", 0.1)):
        assert abs(rates["action_split"][name] - expected) < 0.01
    # The original on the same text: 62.6% random next (single-sentence chunks always take one), 15.3% masked.
    g_len = golden["input_mask"].sum(1)
    g_masked = golden["masked_lm_weights"].sum() / (g_len.sum() - 3 * len(g_len))
    assert abs(golden["next_sentence_labels"].mean() - 0.626) < 0.001
    assert abs(rates["random_next_rate"] - golden["next_sentence_labels"].mean()) < 0.02
    assert abs(rates["masked_fraction_of_non_special"] - g_masked) < 0.005
    assert abs(rates["short_target_document_fraction"] - 0.1) < 0.02
    assert abs(len(lengths) - len(g_len)) / len(g_len) < 0.02
    assert abs(lengths.mean() - g_len.mean()) < 1.0 and abs((lengths == 128).mean() - (g_len == 128).mean()) < 0.02
    assert abs((lengths < 64).mean() - (g_len < 64).mean()) < 0.02
    # The statistics file agrees with the records.
    saved = json.load(
        open(os.path.join(os.path.dirname(cfg.output_file), "stats", os.path.basename(cfg.output_file) + ".json"))
    )
    assert saved["instances"] == len(lengths) and saved["predictions"] == int(rule.sum())
    assert saved["length_histogram"] == np.bincount(lengths, minlength=129).tolist()
    assert saved["random_next"] == int(rec["next_sentence_labels"].sum())
    assert saved["input"]["documents"] == 2067 and saved["input"]["single_sentence_documents"] > 0
    observed = np.take_along_axis(rec["input_ids"], rec["masked_lm_positions"], 1)[rec["masked_lm_weights"] > 0]
    assert abs((observed == 103).mean() - 0.8) < 0.01


def test_every_record_is_valid(squad_run):
    _, _, rec = squad_run
    ids, mask, seg = rec["input_ids"], rec["input_mask"], rec["segment_ids"]
    pos, lab, w = rec["masked_lm_positions"], rec["masked_lm_ids"], rec["masked_lm_weights"]
    n, length = ids.shape
    lengths = mask.sum(1)
    p = np.arange(length)[None]
    assert ((ids >= 0) & (ids < 30522)).all() and ((lab >= 0) & (lab < 30522)).all()
    np.testing.assert_array_equal(mask, (p < lengths[:, None]).astype(mask.dtype))  # Ones, then padding.
    assert (ids[mask == 0] == 0).all() and (seg[mask == 0] == 0).all()
    assert (ids[:, 0] == 101).all()
    first_sep = (seg == 1).argmax(1) - 1  # A ends with [SEP] right before segment 1 starts.
    assert (ids[np.arange(n), first_sep] == 102).all()
    assert (ids[np.arange(n), lengths - 1] == 102).all()
    np.testing.assert_array_equal(seg, ((p > first_sep[:, None]) & (p < lengths[:, None])).astype(seg.dtype))
    assert (first_sep >= 2).all() and (lengths - first_sep >= 3).all()  # A and B hold >= 1 token each.
    valid = w > 0
    assert set(np.unique(w)) <= {0.0, 1.0}
    assert ((pos[valid] >= 1) & (pos[valid] < np.broadcast_to(lengths[:, None], pos.shape)[valid])).all()
    assert (pos[~valid] == 0).all() and (lab[~valid] == 0).all()
    assert (valid[:, :-1] >= valid[:, 1:]).all()  # Real predictions first.
    assert (np.diff(pos, axis=1)[valid[:, 1:]] > 0).all()
    assert not np.isin(lab[valid], [101, 102, 0]).any()  # Never predicts [CLS], [SEP] or padding.


def test_long_documents_give_half_random_next(shared_data, tmp_path):
    paras = (shared_data / "pretraining_golden" / "squad_contexts.txt").read_text().strip().split("\n\n")
    text = "\n\n".join("\n".join(paras[i : i + 20]) for i in range(0, len(paras), 20)) + "\n"
    (tmp_path / "long.txt").write_text(text)
    stats = pretraining_data.create_pretraining_data(
        config(shared_data, tmp_path, input_file=str(tmp_path / "long.txt"), short_seq_prob=0.0)
    )
    assert stats.instances > 10000
    assert abs(stats.to_dict()["rates"]["random_next_rate"] - 0.5) < 0.02


@pytest.mark.slow
def test_reference_order_reproduces_the_original_byte_for_byte(shared_data, tmp_path, golden):
    stats = pretraining_data.create_pretraining_data(config(shared_data, tmp_path, reference_order=True))
    assert stats.instances == 22936
    assert (tmp_path / "squad.tfrecord").read_bytes() == gzip.open(shared_data / GOLDEN).read()
    # The sample text: the original's file holds its map entries in another order, so compare the content.
    sample = pretraining_data.create_pretraining_data(
        config(
            shared_data,
            tmp_path,
            input_file=str(shared_data / "bert_sample_text.txt"),
            reference_order=True,
            output_file=str(tmp_path / "sample.tfrecord"),
        )
    )
    ours = parse(tmp_path / "sample.tfrecord")
    theirs = parse(shared_data / "pretraining_golden" / "sample_text.uncased.seq128.tfrecord.gz", "GZIP")
    assert sample.instances == 60
    for k in theirs:
        np.testing.assert_array_equal(ours[k], theirs[k], err_msg=k)


@pytest.mark.slow
def test_output_does_not_depend_on_worker_count_and_gzip_reads(shared_data, tmp_path):
    one = config(shared_data, tmp_path / "one", output_file=str(tmp_path / "one" / "x@3"), unit_mb=0.25, gzip=True)
    two = config(
        shared_data, tmp_path / "two", output_file=str(tmp_path / "two" / "x@3"), unit_mb=0.25, gzip=True, num_workers=2
    )
    s1 = pretraining_data.create_pretraining_data(one)
    s2 = pretraining_data.create_pretraining_data(two)
    names = [f"x-0000{i}-of-00003" for i in range(3)]
    for name in names:
        assert gzip.open(tmp_path / "one" / name).read() == gzip.open(tmp_path / "two" / name).read()
    assert s1.to_dict() == s2.to_dict()
    total = sum(len(parse(tmp_path / "two" / name, "GZIP")["input_ids"]) for name in names)
    assert total == s2.instances
    assert json.load(open(tmp_path / "two" / "stats" / "x.json"))["instances"] == total
    assert not list((tmp_path / "two").glob("*.incomplete*"))


def test_mlm_only_unmasked_records_feed_dynamic_masking(shared_data, tmp_path, uncased_vocab):
    cfg = config(
        shared_data,
        tmp_path,
        input_file=str(shared_data / "bert_sample_text.txt"),
        use_next_sentence_label=False,
        static_masking=False,
        do_whole_word_mask=True,
    )
    stats = pretraining_data.create_pretraining_data(cfg)
    rec = parse(cfg.output_file, preds=None, nsp=False)
    assert set(rec) == {"input_ids", "input_mask", "segment_ids"} and len(rec["input_ids"]) == stats.instances
    vocab = tokenization.load_vocab(str(uncased_vocab))
    mcfg = MaskingConfig.from_vocab(vocab, max_predictions_per_seq=20, whole_word_mask=True)
    ds = tf.data.Dataset.from_tensor_slices(rec).batch(8)
    out = [{k: v.numpy() for k, v in e.items()} for e in masking.dynamic_masking(ds, mcfg, seed=0)]
    w = np.concatenate([e["masked_lm_weights"] for e in out])
    np.testing.assert_array_equal(w.sum(1) <= masking.num_to_predict(rec["input_mask"].sum(1), mcfg), True)
    assert w.sum() > 0.8 * masking.num_to_predict(rec["input_mask"].sum(1), mcfg).sum()


def test_worker_side_stays_tensorflow_free(uncased_vocab):
    """Workers must not import TensorFlow (~600 MB and 5 s per process, and unsafe threads)."""
    import subprocess
    import sys

    code = (
        "import sys\nfrom official.nlp.data.pretraining import generator as pd\n"
        "pd._worker_init(pd.PretrainingDataConfig(input_file='x', output_file='y',\n"
        f"                                        vocab_file={str(uncased_vocab)!r}))\n"
        "assert 'tensorflow' not in sys.modules, 'a worker imported tensorflow'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=str(pathlib.Path(__file__).resolve().parents[4]))


@pytest.mark.parametrize(
    "flag, value, message",
    [
        ("max_seq_length", 4, "--max_seq_length=4: must be >= 5"),
        ("max_predictions_per_seq", 0, "--max_predictions_per_seq=0: must be >= 1"),
        ("dupe_factor", 0, "--dupe_factor=0: must be >= 1"),
        ("masked_lm_prob", 0.0, r"--masked_lm_prob=0.0: must be in \(0, 1\]"),
        ("masked_lm_prob", 1.5, r"--masked_lm_prob=1.5: must be in \(0, 1\]"),
        ("short_seq_prob", 1.5, r"--short_seq_prob=1.5: must be in \[0, 1\]"),
        ("short_seq_prob", -0.1, r"--short_seq_prob=-0.1: must be in \[0, 1\]"),
        ("unit_mb", 0.0, "--unit_mb=0.0: must be > 0"),
        ("unit_mb", -1.0, "--unit_mb=-1.0: must be > 0"),
        ("max_ngram_size", 0, "--max_ngram_size=0: must be >= 1"),
        ("max_line_bytes", 0, "--max_line_bytes=0: must be >= 1"),
        ("num_workers", -1, "--num_workers=-1: must be >= 0"),
        ("random_seed", -1, "--random_seed=-1: must be >= 0"),
        ("reference_order", {"max_seq_length": 3}, "--max_seq_length=3: must be >= 5"),
        ("reference_order", {"max_ngram_size": 2}, "--max_ngram_size=2: --reference_order reproduces the original"),
    ],
)
def test_bad_flags_are_refused_before_anything_is_made(shared_data, tmp_path, flag, value, message):
    out = tmp_path / "new"
    kw = dict(reference_order=True, **value) if flag == "reference_order" else {flag: value}
    with pytest.raises(ValueError, match=message):  # Before the input is even looked at.
        cfg = config(shared_data, tmp_path, output_file=str(out / "x@2"), input_file=str(tmp_path / "none*.txt"), **kw)
        pretraining_data.create_pretraining_data(cfg)
    assert not out.exists()


def test_an_output_that_is_not_a_regular_file_is_refused_before_any_work(shared_data, tmp_path):
    """Run as root, --output_file=/dev/full was replaced by a regular file and /dev/stats/ was made."""
    fifo = tmp_path / "full"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match=r"--output_file=.*full is a FIFO, not a regular file"):
        pretraining_data.create_pretraining_data(config(shared_data, tmp_path, output_file=str(fifo)))
    (tmp_path / "folder").mkdir()
    with pytest.raises(ValueError, match=r"--output_file=.*folder is a folder, not a regular file"):
        pretraining_data.create_pretraining_data(config(shared_data, tmp_path, output_file=str(tmp_path / "folder")))
    (tmp_path / "stats").mkdir()
    os.mkfifo(tmp_path / "stats" / "x.json")  # the statistics side-file is refused too
    with pytest.raises(ValueError, match=r"statistics file .*x.json is a FIFO"):
        pretraining_data.create_pretraining_data(config(shared_data, tmp_path, output_file=str(tmp_path / "x")))
    assert not os.path.isfile(fifo)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder", "full", "stats"]
    assert os.listdir(tmp_path / "stats") == ["x.json"] and os.listdir(tmp_path / "folder") == []


def test_flags_without_a_problem_pass_and_problems_are_reported_together(shared_data, tmp_path):
    pretraining_data.validate_config(
        config(
            shared_data,
            tmp_path,
            random_seed=-1,
            reference_order=True,
            short_seq_prob=1.0,
            masked_lm_prob=1.0,
            unit_mb=1e-6,
        )
    )
    with pytest.raises(ValueError, match=r"--dupe_factor=0: .*; --short_seq_prob=2"):
        pretraining_data.validate_config(config(shared_data, tmp_path, dupe_factor=0, short_seq_prob=2))
    with pytest.raises(ValueError, match="is the statistics file of one shard"):
        pretraining_data.create_pretraining_data(
            config(
                shared_data,
                tmp_path,
                output_file=str(tmp_path / "a,") + str(tmp_path / "b"),
                stats_file=str(tmp_path / "stats" / "b.json"),
            )
        )


def test_rerun_keeps_shards_of_the_same_settings_and_refuses_others(shared_data, tmp_path, uncased_vocab):
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes((shared_data / "bert_sample_text.txt").read_bytes())
    vocab = tmp_path / "vocab.txt"
    vocab.write_bytes(uncased_vocab.read_bytes())
    out = tmp_path / "out"
    base = dict(
        input_file=str(corpus), vocab_file=str(vocab), output_file=str(out / "x@2"), dupe_factor=1, unit_mb=0.001
    )
    first = pretraining_data.create_pretraining_data(config(shared_data, tmp_path, **base))
    names = ["x-00000-of-00002", "x-00001-of-00002"]
    written = {n: (out / n).read_bytes() for n in names}
    assert all(written.values()) and json.load(open(out / "stats" / "x.json"))["settings"]["dupe_factor"] == 1

    # Flags that do not change the bytes, and another spelling of the same vocabulary: the shards are kept.
    same = pretraining_data.create_pretraining_data(
        config(
            shared_data,
            tmp_path,
            **dict(
                base,
                num_workers=2,
                stats_file=str(tmp_path / "other.json"),
                vocab_file=str(tmp_path / "." / "vocab.txt"),
            ),
        )
    )
    assert same.to_dict() == first.to_dict()

    def refused(match, **changes):
        with pytest.raises(ValueError, match=match):
            pretraining_data.create_pretraining_data(config(shared_data, tmp_path, **dict(base, **changes)))
        assert {n: (out / n).read_bytes() for n in names} == written  # Nothing touched.
        assert not list(out.glob("*.incomplete*"))

    how = "delete the old outputs .* or choose another --output_file"
    refused(
        rf"x-00000-of-00002 was written with other settings than this run's \(--dupe_factor: 1 there, 2 "
        rf"now\)\. .*{how}",
        dupe_factor=2,
    )
    refused(r"--max_seq_length: 128 there, 64 now", max_seq_length=64)
    refused(r"--reference_order: False there, True now", reference_order=True)
    with open(vocab, "a") as f:
        f.write("zzzznewtoken\n")
    refused(r"--vocab_file \(its content\)")
    vocab.write_bytes(uncased_vocab.read_bytes())
    with open(corpus, "a") as f:
        f.write("\nOne more document.\n")
    refused(r"--input_file \(the files' names or sizes\): \{'count': 1, 'bytes': 4394")
    corpus.write_bytes((shared_data / "bert_sample_text.txt").read_bytes())
    record = json.load(open(out / "stats" / (names[1] + ".json")))
    del record["settings"]
    json.dump(record, open(out / "stats" / (names[1] + ".json"), "w"))
    refused(rf"{names[1]} is a complete shard, but .* does not record the settings")


def test_a_torn_or_replaced_shard_is_written_again_not_skipped(shared_data, tmp_path, uncased_vocab, caplog):
    """A shard whose bytes are not those of its record (two jobs tore it, a copy replaced it) never counts as
    complete: a rerun checks each shard's size and SHA-256 against its record and writes it again."""
    out = tmp_path / "out"
    cfg = config(
        shared_data,
        tmp_path,
        input_file=str(shared_data / "bert_sample_text.txt"),
        vocab_file=str(uncased_vocab),
        output_file=str(out / "x@2"),
        dupe_factor=1,
        unit_mb=0.001,
    )
    pretraining_data.create_pretraining_data(cfg)
    names = ["x-00000-of-00002", "x-00001-of-00002"]
    written = {n: (out / n).read_bytes() for n in names}
    record = json.loads((out / "stats" / (names[1] + ".json")).read_text())
    assert record["content"]["bytes"] == len(written[names[1]])

    # Torn: only its first record left (a whole record, so it still reads as a shard); replaced: one byte differs.
    first_length = int.from_bytes(written[names[1]][:8], "little")
    (out / names[1]).write_bytes(written[names[1]][: 16 + first_length])
    (out / names[0]).write_bytes(written[names[0]][:-1] + bytes([written[names[0]][-1] ^ 1]))
    caplog.set_level("INFO")
    again = pretraining_data.create_pretraining_data(cfg)
    assert "complete; skipped" not in caplog.text
    assert caplog.text.count("does not hold the bytes its record") == 2
    assert {n: (out / n).read_bytes() for n in names} == written
    assert again.instances == json.loads((out / "stats" / "x.json").read_text())["instances"] > 0

    # A file under a shard's name without a record was not put there by a job: written again too.
    (out / "stats" / (names[0] + ".json")).unlink()
    (out / names[0]).write_bytes(b"not a shard")
    caplog.clear()
    pretraining_data.create_pretraining_data(cfg)
    assert caplog.text.count("complete; skipped") == 1 and (out / names[0]).read_bytes() == written[names[0]]

    # Before a job reports success it checks that no job of other settings rewrote a shard meanwhile.
    paths = [str(out / n) for n in names]
    settings = outputs.output_settings(cfg, [cfg.input_file], len(paths))
    outputs.check_written(paths, settings)
    record_path = out / "stats" / (names[1] + ".json")
    record = json.loads(record_path.read_text())
    record_path.write_text(json.dumps(dict(record, settings=dict(record["settings"], dupe_factor=2))))
    with pytest.raises(ValueError, match=f"{names[1]} was removed or rewritten with other settings while this job"):
        outputs.check_written(paths, settings)


# ---- work units, random next segments and shards -----------------------------------------------------------------

DOCS = 8


@pytest.fixture(scope="module")
def disjoint_corpus(uncased_vocab, tmp_path_factory):
    """Eight documents of about 30 KB, each written with its own 30 words: a token tells its document."""
    words = [w for w in uncased_vocab.read_text().split("\n") if w.isalpha() and w.islower() and len(w) >= 4]
    rng = np.random.RandomState(0)
    words = [words[i] for i in rng.permutation(len(words))[: DOCS * 30]]
    text = []
    for d in range(DOCS):
        own = words[d * 30 : (d + 1) * 30]
        sentences = []
        while sum(len(s) + 1 for s in sentences) < 30_000:
            sentences.append(" ".join(rng.choice(own, rng.randint(4, 20))) + " .")
        text.append("\n".join(sentences) + "\n")
    path = tmp_path_factory.mktemp("disjoint") / "corpus.txt"
    path.write_text("\n".join(text))
    vocab = tokenization.load_vocab(str(uncased_vocab))
    return path, {vocab[w]: i // 30 for i, w in enumerate(words)}


def _segment_documents(rec, document_of):
    """Per instance: the documents of segment A's and of segment B's words (masked tokens restored first)."""
    ids = rec["input_ids"].copy()
    if "masked_lm_positions" in rec:
        rows, cols = np.nonzero(rec["masked_lm_weights"] > 0)
        ids[rows, rec["masked_lm_positions"][rows, cols]] = rec["masked_lm_ids"][rows, cols]
    out = []
    for row, segments in zip(ids, rec["segment_ids"]):
        docs = [{document_of[t] for t in row[(segments == s) & np.isin(row, list(document_of))]} for s in (0, 1)]
        assert len(docs[0]) == 1 and len(docs[1]) == 1  # A and B are each a run of text of one document.
        out.append((docs[0].pop(), docs[1].pop()))
    return np.array(out)


@pytest.mark.slow
@pytest.mark.parametrize("unit_mb, shards", [(4.0, 8), (0.01, 2)])
def test_random_next_never_comes_from_its_own_document_and_every_shard_loads(
    shared_data, tmp_path, disjoint_corpus, unit_mb, shards
):
    from official.nlp.data.pretraining.dataloader import PretrainDataConfig, PretrainDataLoader

    corpus, document_of = disjoint_corpus
    # (4.0, 8): the corpus is one unit dealt to 8 shards (it made 5 units of ~1 document, 3 empty shards).
    # (0.01, 2): units of 10 KB are smaller than a document; each still holds two.
    stats = pretraining_data.create_pretraining_data(
        config(
            shared_data,
            tmp_path,
            input_file=str(corpus),
            output_file=str(tmp_path / f"x@{shards}"),
            dupe_factor=2,
            unit_mb=unit_mb,
        )
    )
    paths = sorted(str(p) for p in tmp_path.glob(f"x-*-of-0000{shards}"))
    assert len(paths) == shards
    PretrainDataLoader(
        PretrainDataConfig(input_patterns=paths, seq_length=128, max_predictions_per_seq=20, global_batch_size=8)
    )  # checks every file's first record
    records = [parse(p) for p in paths]
    assert all(len(r["input_ids"]) for r in records)
    rec = {k: np.concatenate([r[k] for r in records]) for k in records[0]}
    pairs = _segment_documents(rec, document_of)
    random_next = rec["next_sentence_labels"][:, 0] == 1
    assert random_next.sum() > 100
    assert (pairs[random_next, 0] != pairs[random_next, 1]).all()  # counted here from the tokens themselves
    assert (pairs[~random_next, 0] == pairs[~random_next, 1]).all()
    assert len(np.unique(pairs[random_next, 1])) == DOCS  # and B is drawn from all over the corpus
    assert stats.same_document_random_next == 0 and stats.random_next == random_next.sum()


@pytest.mark.slow
def test_the_shard_count_does_not_change_the_instances(shared_data, tmp_path, disjoint_corpus):
    corpus, _ = disjoint_corpus
    rows = {}
    for shards in (1, 5):
        pretraining_data.create_pretraining_data(
            config(
                shared_data,
                tmp_path,
                input_file=str(corpus),
                output_file=str(tmp_path / f"s{shards}" / f"x@{shards}"),
                dupe_factor=1,
                static_masking=False,
            )
        )
        parts = [parse(p, preds=None) for p in sorted((tmp_path / f"s{shards}").glob(f"x-*-of-{shards:05d}"))]
        sizes = [len(p["input_ids"]) for p in parts]
        assert max(sizes) - min(sizes) <= 1  # dealt round-robin
        rows[shards] = sorted(
            map(bytes, np.concatenate([np.concatenate([p["input_ids"], p["segment_ids"]], 1) for p in parts]))
        )
    assert rows[1] == rows[5]


def test_a_single_document_is_counted_and_warned(shared_data, tmp_path, caplog):
    corpus = tmp_path / "one.txt"
    corpus.write_text("".join(f"sentence number {i} of the only document .\n" for i in range(200)))
    with caplog.at_level("WARNING"):
        stats = pretraining_data.create_pretraining_data(
            config(shared_data, tmp_path, input_file=str(corpus), dupe_factor=1)
        )
    assert stats.random_next > 0 and stats.same_document_random_next == stats.random_next
    assert any("come from their own document" in r.getMessage() for r in caplog.records)


def test_more_shards_than_instances_is_refused(shared_data, tmp_path):
    corpus = tmp_path / "small.txt"
    corpus.write_text("a first document .\nwith two lines .\n\nand a second one .\n")
    with pytest.raises(pretraining_data.InputError, match=r"x-00\d\d\d-of-00064 would hold no instance: .* fewer"):
        pretraining_data.create_pretraining_data(
            config(shared_data, tmp_path, input_file=str(corpus), output_file=str(tmp_path / "x@64"), dupe_factor=1)
        )
    assert not [p for p in tmp_path.glob("x-*-of-00064") if p.stat().st_size == 0]


def _contains(haystack: np.ndarray, needle: np.ndarray) -> bool:
    data, want = haystack.astype(np.int32).tobytes(), needle.astype(np.int32).tobytes()
    at = data.find(want)
    while at >= 0 and at % 4:
        at = data.find(want, at + 1)
    return at >= 0


def test_mlm_only_data_packs_contiguous_text(shared_data, tmp_path, disjoint_corpus, uncased_vocab):
    corpus, _ = disjoint_corpus
    stats = pretraining_data.create_pretraining_data(
        config(
            shared_data,
            tmp_path,
            input_file=str(corpus),
            use_next_sentence_label=False,
            static_masking=False,
            dupe_factor=1,
            short_seq_prob=0.3,
        )
    )
    rec = parse(tmp_path / "squad.tfrecord", preds=None, nsp=False)
    tokenizer = tokenization.FullTokenizer(str(uncased_vocab), do_lower_case=True)
    streams = [
        np.concatenate(
            [tokenizer.convert_tokens_to_ids(tokenizer.tokenize(line)) for line in doc.split("\n") if line.strip()]
        )
        for doc in corpus.read_text().split("\n\n")
    ]
    assert len(streams) == DOCS and stats.random_next == 0
    lengths = rec["input_mask"].sum(1)
    for ids, segments, length in zip(rec["input_ids"], rec["segment_ids"], lengths):
        first_sep = int(np.argmax(segments)) - 1
        a, b = ids[1:first_sep], ids[first_sep + 1 : length - 1]
        assert len(a) and len(b)
        # A then B is one run of tokens of one document: the text continues across [SEP].
        assert any(_contains(stream, np.concatenate([a, b])) for stream in streams)
    assert (lengths == 128).mean() > 0.5  # packed to full length, but for short targets and document ends
    # Nearly every token of the text is used once (dupe_factor=1); only over-long ends are cut.
    assert (lengths - 3).sum() > 0.95 * sum(len(s) for s in streams)
