"""TFRecord framing for many records at once, in numpy, without TensorFlow.

The pretraining-data workers never import TensorFlow: an import costs about 600 MB of RSS and 5 s per process, and
TF threads make forking unsafe. This module frames already-serialized records as TFRecord (length, masked CRC-32C
of the length, data, masked CRC-32C of the data) for a whole batch at once. Output is checked against
`tf.data.TFRecordDataset` and `tf.io.TFRecordWriter` in the tests.

The data CRCs come from `google-crc32c` (the hardware instruction, one call per record) where its C
implementation is installed, else from a vectorized numpy CRC over a *right-aligned* matrix (row ``r`` holds
record ``r`` in its last ``lengths[r]`` bytes).
Leading zero bytes are made neutral there by starting each row's CRC from a state that the zeros map onto the
standard initial state (the CRC step over a zero byte is invertible), so every row runs the same number of
vectorized steps.
"""

from __future__ import annotations

import functools

import numpy as np

try:  # Hardware CRC-32C (SSE 4.2 / ARMv8) through Google's C library; the numpy code below is the fallback.
    import google_crc32c

    _native_crc32c = google_crc32c.value if google_crc32c.implementation == "c" else None
except ImportError:
    _native_crc32c = None

_POLY = 0x82F63B78  # CRC-32C (Castagnoli), reflected.
_MASK_DELTA = 0xA282EAD8


@functools.cache
def _tables() -> np.ndarray:
    """Slicing-by-4 tables, shape [4, 256] uint32."""
    t0 = np.zeros(256, dtype=np.uint64)
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ _POLY if c & 1 else c >> 1
        t0[i] = c
    tables = [t0]
    for _ in range(3):
        prev = tables[-1]
        tables.append((prev >> np.uint64(8)) ^ t0[(prev & np.uint64(0xFF)).astype(np.int64)])
    return np.stack(tables).astype(np.uint32)


_PRESTATES: list[int] = [0xFFFFFFFF]


def _prestates(upto: int) -> np.ndarray:
    """``s[z]``: the CRC state that ``z`` zero bytes carry to the initial state 0xFFFFFFFF."""
    t0 = [int(x) for x in _tables()[0]]
    top_to_index = {x >> 24: i for i, x in enumerate(t0)}
    while len(_PRESTATES) <= upto:
        t = _PRESTATES[-1]
        # step(s) = t0[s & 0xff] ^ (s >> 8): the top byte of t comes from t0 alone and names the index.
        i = top_to_index[t >> 24]
        _PRESTATES.append((((t ^ t0[i]) << 8) & 0xFFFFFFFF) | i)
    return np.asarray(_PRESTATES[: upto + 1], dtype=np.uint32)


def crc32c_rows(words: np.ndarray, zero_prefix: np.ndarray) -> np.ndarray:
    """CRC-32C of each row of a right-aligned batch.

    Args:
      words: uint32 array [W4, N]: ``words[k, r]`` holds bytes ``4k..4k+3`` (little endian) of row ``r``.
      zero_prefix: int array [N], how many leading zero bytes of each row are padding, not data.

    Returns:
      uint32 [N], the (unmasked) CRC-32C of each row's data.
    """
    t = _tables()
    t0, t1, t2, t3 = t[0], t[1], t[2], t[3]
    crc = _prestates(int(zero_prefix.max(initial=0)))[zero_prefix]
    for k in range(words.shape[0]):
        x = crc ^ words[k]
        crc = t3[x & 0xFF] ^ t2[(x >> 8) & 0xFF] ^ t1[(x >> 16) & 0xFF] ^ t0[x >> 24]
    return crc ^ np.uint32(0xFFFFFFFF)


def masked_crc32c(crc: np.ndarray) -> np.ndarray:
    """The TFRecord mask: rotate right by 15 and add a constant (so CRCs of CRCs stay well distributed)."""
    crc = crc.astype(np.uint64)
    return ((((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF).astype(np.uint32)


def crc32c(data: bytes) -> int:
    """CRC-32C of one byte string, by the numpy code (for tests and small inputs)."""
    return int(_numpy_stream_crc32c(np.frombuffer(data, dtype=np.uint8), np.array([len(data)]))[0])


def _to_words(matrix: np.ndarray) -> np.ndarray:
    """[N, W] uint8 (W % 4 == 0) -> [W/4, N] uint32 little-endian words, contiguous per step."""
    n, w = matrix.shape
    return np.ascontiguousarray(matrix.reshape(n, w // 4, 4).transpose(1, 0, 2)).view("<u4")[..., 0]


def _numpy_stream_crc32c(stream: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """CRC-32C of each record of a stream, vectorized over a right-aligned matrix of the records."""
    width = int(-(-max(int(lengths.max(initial=0)), 1) // 4) * 4)
    matrix = np.zeros((len(lengths), width), dtype=np.uint8)
    matrix[np.arange(width) >= (width - lengths)[:, None]] = stream
    return crc32c_rows(_to_words(matrix), width - lengths)


HEAD_BYTES = 12  # a framed record: [length, 8 bytes][masked CRC of the length, 4][data][masked CRC of the data, 4]
TAIL_BYTES = 4


def frame_records(stream: np.ndarray, lengths: np.ndarray) -> bytes:
    """TFRecord-frames a batch of serialized records.

    Args:
      stream: uint8, the records back to back.
      lengths: int [N], their lengths (summing to ``len(stream)``).

    Returns:
      The bytes of the N framed records, in order, ready to append to a .tfrecord file.
    """
    stream = np.asarray(stream, dtype=np.uint8).reshape(-1)
    lengths = np.asarray(lengths, dtype=np.int64).reshape(-1)
    if (lengths < 0).any():
        raise ValueError("record lengths must be >= 0")
    if int(lengths.sum()) != len(stream):
        raise ValueError(f"record lengths sum to {int(lengths.sum())}, but the stream holds {len(stream)} bytes")
    frame_start = np.cumsum(lengths + HEAD_BYTES + TAIL_BYTES) - (lengths + HEAD_BYTES + TAIL_BYTES)
    framed = np.empty(len(stream) + (HEAD_BYTES + TAIL_BYTES) * len(lengths), dtype=np.uint8)
    is_data = np.ones(len(framed), dtype=bool)
    is_data[(frame_start[:, None] + np.arange(HEAD_BYTES)).reshape(-1)] = False
    is_data[((frame_start + HEAD_BYTES + lengths)[:, None] + np.arange(TAIL_BYTES)).reshape(-1)] = False
    framed[is_data] = stream
    return fill_frames(framed, lengths).tobytes()


def fill_frames(framed: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Fills in the framing of records laid out with room for it; returns ``framed``, ready to write as it is
    (a file's ``write`` takes the array: no copy into a bytes object).

    Args:
      framed: uint8, for each record in turn `HEAD_BYTES` to fill, its ``lengths[r]`` bytes of data and
        `TAIL_BYTES` to fill (a serializer that leaves this room saves a second pass over every byte).
      lengths: int [N], the records' data lengths.
    """
    lengths = np.asarray(lengths, dtype=np.int64).reshape(-1)
    n = len(lengths)
    if len(framed) != int(lengths.sum()) + (HEAD_BYTES + TAIL_BYTES) * n:
        raise ValueError(f"{len(framed)} bytes do not hold {n} framed records of {int(lengths.sum())} data bytes")
    if n == 0:
        return framed
    frame_start = np.cumsum(lengths + HEAD_BYTES + TAIL_BYTES) - (lengths + HEAD_BYTES + TAIL_BYTES)
    data_start = frame_start + HEAD_BYTES
    data_crc = masked_crc32c(_frame_data_crc32c(framed, data_start, lengths))
    len_bytes = lengths.astype("<u8").view(np.uint8).reshape(n, 8)
    len_crc = masked_crc32c(crc32c_rows(_to_words(len_bytes), np.zeros(n, dtype=np.int64)))
    head = np.concatenate([len_bytes, len_crc.astype("<u4").view(np.uint8).reshape(n, 4)], axis=1)
    framed[frame_start[:, None] + np.arange(HEAD_BYTES)] = head
    framed[(data_start + lengths)[:, None] + np.arange(TAIL_BYTES)] = (
        data_crc.astype("<u4").view(np.uint8).reshape(n, TAIL_BYTES)
    )
    return framed


def _frame_data_crc32c(framed: np.ndarray, data_start: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """CRC-32C of each record's data inside a framed layout."""
    if _native_crc32c is None:
        rows = (data_start[:, None] + np.arange(int(lengths.max(initial=0)))).reshape(-1)
        inside = (np.arange(int(lengths.max(initial=0))) < lengths[:, None]).reshape(-1)
        return _numpy_stream_crc32c(framed[rows[inside]], lengths)
    data = framed.tobytes()  # the C function takes bytes, not a view
    return np.fromiter(
        (_native_crc32c(data[a:b]) for a, b in zip(data_start.tolist(), (data_start + lengths).tolist())),
        dtype=np.uint32,
        count=len(lengths),
    )
