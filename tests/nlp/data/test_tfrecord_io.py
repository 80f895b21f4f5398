import numpy as np
import pytest
import tensorflow as tf

from official.nlp.data import tfrecord_io


def test_crc32c_known_values():
    # RFC 3720 (iSCSI) test vectors for CRC-32C.
    assert tfrecord_io.crc32c(b"123456789") == 0xE3069283
    assert tfrecord_io.crc32c(bytes(32)) == 0x8A9136AA
    assert tfrecord_io.crc32c(bytes([0xFF] * 32)) == 0x62A8AB43
    assert tfrecord_io.crc32c(bytes(range(32))) == 0x46DD794E


@pytest.mark.parametrize("crc", ["native", "numpy"])
def test_frame_records_reads_back_with_tf_data(tmp_path, monkeypatch, crc):
    if crc == "numpy":  # The fallback where google-crc32c has no C implementation.
        monkeypatch.setattr(tfrecord_io, "_native_crc32c", None)
    elif tfrecord_io._native_crc32c is None:
        pytest.skip("google-crc32c has no C implementation on this platform")
    rng = np.random.default_rng(0)
    lengths = np.array([0, 1, 3, 4, 5, 8, 255, 256, 1000] + list(rng.integers(0, 700, 50)))
    records = [rng.integers(0, 256, n).astype(np.uint8).tobytes() for n in lengths]
    path = tmp_path / "x.tfrecord"
    path.write_bytes(tfrecord_io.frame_records(np.frombuffer(b"".join(records), np.uint8), lengths))
    # tf.data checks both CRCs of every record.
    read = [r.numpy() for r in tf.data.TFRecordDataset(str(path))]
    assert read == records
    # Same bytes as TensorFlow's own writer.
    ref = tmp_path / "ref.tfrecord"
    with tf.io.TFRecordWriter(str(ref)) as w:
        for r in records:
            w.write(r)
    assert ref.read_bytes() == path.read_bytes()


def test_frame_records_refuses_lengths_that_do_not_match_the_stream():
    with pytest.raises(ValueError, match="sum to 5"):
        tfrecord_io.frame_records(np.zeros(4, np.uint8), [2, 3])
    with pytest.raises(ValueError, match=">= 0"):
        tfrecord_io.frame_records(np.zeros(4, np.uint8), [5, -1])
