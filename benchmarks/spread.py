"""The measures of benchmarks/representation_spread.py, apart from its flags so that a test can import them."""

from __future__ import annotations

import numpy as np


def variance_share(vectors: np.ndarray) -> float:
    """Variance across rows (summed over dimensions) over the rows' mean squared norm."""
    return float(vectors.var(axis=0).sum() / np.square(vectors).sum(axis=1).mean())


def mean_cosine(vectors: np.ndarray) -> float:
    """The mean cosine between two different rows."""
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    cosines = unit @ unit.T
    count = len(unit)
    return float((cosines.sum() - np.trace(cosines)) / (count * (count - 1)))


def spread(encoder, tokenizer, texts: list[str], max_seq_length: int) -> dict[str, float]:
    ids = np.zeros((len(texts), max_seq_length), np.int32)
    mask = np.zeros_like(ids)
    for row, text in enumerate(texts):
        tokens = ["[CLS]"] + tokenizer.tokenize(text)[: max_seq_length - 2] + ["[SEP]"]
        ids[row, : len(tokens)] = tokenizer.convert_tokens_to_ids(tokens)
        mask[row, : len(tokens)] = 1
    outputs = encoder({"input_word_ids": ids, "input_mask": mask, "input_type_ids": np.zeros_like(ids)}, training=False)
    sequence = np.asarray(outputs["sequence_output"], np.float64)
    tokens = sequence[mask.astype(bool)]
    rng = np.random.default_rng(0)
    sample = tokens[rng.permutation(len(tokens))[:2000]]  # the cosine matrix is quadratic in the tokens
    return {
        "token share": variance_share(tokens),
        "token cos": mean_cosine(sample),
        "[CLS] share": variance_share(sequence[:, 0]),
        "[CLS] cos": mean_cosine(sequence[:, 0]),
        "pooled share": variance_share(np.asarray(outputs["pooled_output"], np.float64)),
    }
