"""Small pretraining TFRecords with a learnable signal, written with plain tf.train.Example (an independent writer).

Each example is `[CLS] A [SEP] B [SEP] [PAD]...` where segment A repeats one random word. Next-sentence label 0
("B follows A"): B repeats the same word. Label 1 ("random B"): B repeats another word. So a masked token can be
read off its segment (the masked LM can get far below ln(vocab_size)), and the next-sentence label is visible by
comparing the two segments.

`parse_records` reads a whole file of pretraining records into numpy arrays, for the tests of the writer.
"""

from __future__ import annotations

import pathlib

import numpy as np
import tensorflow as tf

from official.nlp.data.pretraining import records as pretraining_records

PAD, CLS, SEP, MASK = 0, 1, 2, 3
FIRST_WORD = 10


def make_examples(
    num: int, *, vocab_size: int = 1000, seq_length: int = 32, max_predictions: int = 5, seed: int = 0
) -> list[dict[str, np.ndarray]]:
    rng = np.random.RandomState(seed)
    words = vocab_size - FIRST_WORD
    examples = []
    for _ in range(num):
        real = rng.randint(seq_length // 2, seq_length + 1)
        len_a = rng.randint(3, real - 5)
        len_b = real - 3 - len_a
        word = rng.randint(0, words)
        label = rng.randint(0, 2)
        other = (word + rng.randint(1, words)) % words
        run_a = np.full(len_a, word + FIRST_WORD)
        run_b = np.full(len_b, (word if label == 0 else other) + FIRST_WORD)
        ids = np.concatenate([[CLS], run_a, [SEP], run_b, [SEP]]).astype(np.int64)
        segments = np.concatenate([np.zeros(len_a + 2), np.ones(len_b + 1)]).astype(np.int64)
        candidates = [i for i in range(len(ids)) if ids[i] >= FIRST_WORD]
        count = min(max_predictions, max(1, int(round(len(ids) * 0.15))))
        positions = np.sort(rng.choice(candidates, count, replace=False))
        labels = ids[positions].copy()
        masked = ids.copy()
        for p in positions:
            draw = rng.rand()
            if draw < 0.8:
                masked[p] = MASK
            elif draw < 0.9:
                masked[p] = rng.randint(FIRST_WORD, vocab_size)
        pad = seq_length - len(ids)
        pad_p = max_predictions - count
        examples.append(
            {
                "input_ids": np.pad(masked, (0, pad)),
                "input_mask": np.pad(np.ones(len(ids), np.int64), (0, pad)),
                "segment_ids": np.pad(segments, (0, pad)),
                "masked_lm_positions": np.pad(positions, (0, pad_p)).astype(np.int64),
                "masked_lm_ids": np.pad(labels, (0, pad_p)).astype(np.int64),
                "masked_lm_weights": np.pad(np.ones(count, np.float32), (0, pad_p)),
                "next_sentence_labels": np.array([label], np.int64),
            }
        )
    return examples


def serialize(example: dict[str, np.ndarray]) -> bytes:
    features = {}
    for name, value in example.items():
        if value.dtype.kind == "f":
            features[name] = tf.train.Feature(float_list=tf.train.FloatList(value=value.tolist()))
        else:
            features[name] = tf.train.Feature(int64_list=tf.train.Int64List(value=value.tolist()))
    return tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString()


def write_records(
    directory,
    *,
    num_files: int = 2,
    per_file: int = 64,
    gzip: bool = False,
    seed: int = 0,
    drop: tuple[str, ...] = (),
    **kwargs,
) -> list[str]:
    """Writes `num_files` files of `per_file` examples, without the features named in `drop`; returns their paths."""
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    options = tf.io.TFRecordOptions(compression_type="GZIP" if gzip else "")
    paths = []
    for f in range(num_files):
        path = directory / f"part-{f:03d}.tfrecord{'.gz' if gzip else ''}"
        with tf.io.TFRecordWriter(str(path), options) as writer:
            for example in make_examples(per_file, seed=seed * 1000 + f, **kwargs):
                writer.write(serialize({k: v for k, v in example.items() if k not in drop}))
        paths.append(str(path))
    return paths


def parse_records(
    path, compression: str = "", *, seq: int = 128, preds: int | None = 20, nsp: bool = True
) -> dict[str, np.ndarray]:
    """Every record of a file, feature name -> [num_records, length] array (``preds=None``: unmasked records)."""
    spec = pretraining_records.feature_spec(seq, preds, nsp)
    ds = tf.data.TFRecordDataset(str(path), compression_type=compression)
    ds = ds.map(lambda r: tf.io.parse_single_example(r, spec)).batch(1 << 20)
    return {k: v.numpy() for k, v in next(iter(ds)).items()}


def write_vocab(path, vocab_size: int = 1000) -> str:
    tokens = ["[PAD]", "[CLS]", "[SEP]", "[MASK]", "[UNK]"] + [f"[unused{i}]" for i in range(FIRST_WORD - 5)]
    tokens += [f"w{i}" for i in range(vocab_size - FIRST_WORD)]
    pathlib.Path(path).write_text("\n".join(tokens) + "\n")
    return str(path)
