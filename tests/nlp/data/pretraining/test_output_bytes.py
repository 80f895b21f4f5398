"""The fast path's output bytes, pinned: a change of speed must not change a byte of the records.

Same flags and input give the same records (the design's promise, and what lets a rerun keep the complete shards
of an earlier run), so these digests hold across versions. A change that means to change the output (a new draw
order, a fix) updates them in the same commit and says why. Each case covers other code: the default SQuAD flags,
whole-word masking over several work units and gzip shards, n-gram masking at another length, and the MLM-only
modes with and without masking.
"""

import hashlib

import pytest

from official.nlp.data.pretraining import generator as pretraining_data

CASES = {
    "default": ({}, "4dbb03da2653c1136a837910499f09b5d2ecfbe563e947ec77096a661ff15dc9"),
    "whole_word_gzip_units_shards": (
        dict(do_whole_word_mask=True, gzip=True, unit_mb=0.25, output_file="x@3"),
        "4b2c8e0c2015d5589e58548c6e24f46a428723f2c01e6d139e3d77a55ae98387",
    ),
    "ngram3_seq64": (
        dict(max_ngram_size=3, max_seq_length=64, max_predictions_per_seq=10, dupe_factor=2),
        "aa01fdd4c3b8ce1331851ff0fe68136ebb80f31bc3dd60d410771072ce46cdb2",
    ),
    "mlm_only_unmasked": (
        dict(use_next_sentence_label=False, static_masking=False, dupe_factor=2),
        "12878aa999633f92cd40a81baaa526404fdf01767ff42f9c7704147a7a65b6e8",
    ),
    "mlm_only_whole_word": (
        dict(use_next_sentence_label=False, do_whole_word_mask=True, dupe_factor=2),
        "4027b32e797e6580f0d5209a880615f181d1660a9e501d1e23345f087c0748a8",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_records_are_byte_identical_to_the_pinned_ones(shared_data, uncased_vocab, tmp_path, case):
    flags, digest = CASES[case]
    flags = dict(flags)
    output = tmp_path / flags.pop("output_file", "out.tfrecord")
    config = dict(
        input_file=str(shared_data / "pretraining_golden" / "squad_contexts.txt"),
        output_file=str(output),
        vocab_file=str(uncased_vocab),
        do_lower_case=True,
        max_seq_length=128,
        max_predictions_per_seq=20,
        masked_lm_prob=0.15,
        random_seed=12345,
        dupe_factor=5,
        short_seq_prob=0.1,
        num_workers=1,
    )
    config.update(flags)
    pretraining_data.create_pretraining_data(pretraining_data.PretrainingDataConfig(**config))
    h = hashlib.sha256()
    for path in sorted(p for p in tmp_path.iterdir() if p.is_file()):  # The records; statistics are in stats/.
        h.update(path.name.encode())
        h.update(path.read_bytes())
    assert h.hexdigest() == digest
