"""The side-by-side benchmark's plumbing, on a tiny corpus and a fake "original" (no timing is asserted)."""

import textwrap

import numpy as np
import tensorflow as tf

from benchmarks import generator_vs_original

# A stand-in for the original script: TF 1 names only (so it runs only through the tensorflow.compat.v1 alias),
# the comparison's flags required, one record per non-empty input line.
FAKE_ORIGINAL = textwrap.dedent(
    """
    import tensorflow as tf

    flags = tf.flags
    FLAGS = flags.FLAGS
    for name in ("input_file", "output_file", "vocab_file"):
        flags.DEFINE_string(name, None, "")
    flags.DEFINE_bool("do_lower_case", True, "")
    for name in ("max_seq_length", "max_predictions_per_seq", "random_seed", "dupe_factor"):
        flags.DEFINE_integer(name, 0, "")
    for name in ("masked_lm_prob", "short_seq_prob"):
        flags.DEFINE_float(name, 0.0, "")


    def main(_):
        assert FLAGS.max_seq_length == 128 and FLAGS.dupe_factor == 5 and FLAGS.do_lower_case
        with tf.gfile.GFile(FLAGS.input_file, "r") as f:
            lines = [line for line in f if line.strip()]
        writer = tf.python_io.TFRecordWriter(FLAGS.output_file)
        for line in lines:
            writer.write(line.encode())
        writer.close()


    if __name__ == "__main__":
        flags.mark_flag_as_required("input_file")
        tf.app.run()
    """
)


def test_side_by_side_counts_both_and_prints_the_ratio(shared_data, uncased_vocab, tmp_path, capsys):
    checkout = tmp_path / "bert"
    checkout.mkdir()
    (checkout / "create_pretraining_data.py").write_text(FAKE_ORIGINAL)
    config = generator_vs_original.DataBenchConfig(
        text_file=str(shared_data / "bert_sample_text.txt"),
        vocab_file=str(uncased_vocab),
        corpus_mb=0.02,
        original=str(checkout),
        rounds=2,
        work_dir=str(tmp_path / "work"),
    )
    runs = generator_vs_original.run(config)
    corpus = (tmp_path / "work" / "corpus.txt").read_text()
    assert [r.instances for r in runs["original"]] == [sum(1 for line in corpus.splitlines() if line.strip())] * 2
    ours = [r.instances for r in runs["ours"]]
    assert ours[0] == ours[1] > 0  # The same flags give the same records in each round.
    assert all(r.seconds > 0 and r.peak_rss_mb >= 0 and r.largest_process_mb > 0 for rs in runs.values() for r in rs)
    assert all(r.cpu_seconds > 0 for rs in runs.values() for r in rs)
    out = capsys.readouterr().out
    assert "x the original's instances/s" in out and "per CPU-second" in out
    assert "google-research/bert" in out and "cores" in out


def test_without_a_checkout_only_ours_runs(shared_data, uncased_vocab, tmp_path, capsys):
    config = generator_vs_original.DataBenchConfig(
        text_file=str(shared_data / "bert_sample_text.txt"), vocab_file=str(uncased_vocab), corpus_mb=0.01
    )
    runs = generator_vs_original.run(config)
    assert list(runs) == ["ours"] and runs["ours"][0].instances > 0
    assert "ratio: not measured" in capsys.readouterr().out


def test_records_are_counted_from_the_framing(tmp_path):
    path = str(tmp_path / "x.tfrecord")
    with tf.io.TFRecordWriter(path) as writer:
        for n in (0, 1, 300, 70000):
            writer.write(np.zeros(n, np.uint8).tobytes())
    assert generator_vs_original.count_records(path) == 4


def test_a_folder_without_the_script_is_a_user_error(tmp_path):
    import pytest

    from official.nlp.common.errors import InputError

    with pytest.raises(InputError, match=r"--original=.*: no create_pretraining_data.py there"):
        generator_vs_original.original_command(str(tmp_path), "c.txt", "o.tfrecord", "vocab.txt")


def test_stage_profile_times_every_stage(shared_data, uncased_vocab):
    from benchmarks import pretraining_stages

    instances, seconds = pretraining_stages.profile_stages(
        str(shared_data / "bert_sample_text.txt"), str(uncased_vocab), units=1
    )
    assert instances > 0 and tuple(seconds) == pretraining_stages.STAGES
    assert all(s >= 0 for s in seconds.values()) and sum(seconds.values()) > 0
