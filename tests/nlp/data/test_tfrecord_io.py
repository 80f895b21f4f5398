import numpy as np
import tensorflow as tf

from official.nlp.data import tfrecord_io


def test_crc32c_known_values():
    # RFC 3720 (iSCSI) test vectors for CRC-32C.
    assert tfrecord_io.crc32c(b"123456789") == 0xE3069283
    assert tfrecord_io.crc32c(bytes(32)) == 0x8A9136AA
    assert tfrecord_io.crc32c(bytes([0xFF] * 32)) == 0x62A8AB43
    assert tfrecord_io.crc32c(bytes(range(32))) == 0x46DD794E


def test_frame_records_reads_back_with_tf_data(tmp_path):
    rng = np.random.default_rng(0)
    lengths = np.array([0, 1, 3, 4, 5, 8, 255, 256, 1000] + list(rng.integers(0, 700, 50)))
    width = int(-(-lengths.max() // 4) * 4)
    matrix = np.zeros((len(lengths), width), dtype=np.uint8)
    records = []
    for i, n in enumerate(lengths):
        data = rng.integers(0, 256, n).astype(np.uint8)
        matrix[i, width - n:] = data
        records.append(data.tobytes())
    path = tmp_path / "x.tfrecord"
    path.write_bytes(tfrecord_io.frame_records(matrix, lengths))
    # tf.data checks both CRCs of every record.
    read = [r.numpy() for r in tf.data.TFRecordDataset(str(path))]
    assert read == records
    # Same bytes as TensorFlow's own writer.
    ref = tmp_path / "ref.tfrecord"
    with tf.io.TFRecordWriter(str(ref)) as w:
        for r in records:
            w.write(r)
    assert ref.read_bytes() == path.read_bytes()
