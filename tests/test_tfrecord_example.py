"""TFRecord files (`tf.python_io`), `tf.train.Example` protos and their parsing ops, each
compared with real TensorFlow: files and protos one writes the other reads, byte for byte."""

import numpy as np
import pytest

import nbdist as tf
from nbdist.platform import tf_record

pytestmark = pytest.mark.tf

RECORDS = [b"hello", b"", bytes(range(256)) * 40, b"\x00" * 3]
COMPRESSIONS = ["", "GZIP", "ZLIB"]


def _write(module, path, records, options=None):
    with module.python_io.TFRecordWriter(str(path), options) as writer:
        for record in records:
            writer.write(record)


# -- TFRecord files ------------------------------------------------------------------------------------
@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_our_file_is_byte_identical_to_tfs_and_each_reads_the_other(tf1, tmp_path, compression):
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    _write(tf, ours, RECORDS, compression)
    _write(tf1, theirs, RECORDS, compression)
    assert ours.read_bytes() == theirs.read_bytes()
    assert list(tf1.python_io.tf_record_iterator(str(ours), compression)) == RECORDS
    assert list(tf.python_io.tf_record_iterator(str(theirs), compression)) == RECORDS


def test_options_object_and_compression_type_enum(tf1, tmp_path):
    options = tf.python_io.TFRecordOptions(tf.python_io.TFRecordCompressionType.GZIP)
    assert tf.python_io.TFRecordOptions.get_compression_type_string(options) == "GZIP"
    assert int(tf.python_io.TFRecordCompressionType.ZLIB) == tf1.python_io.TFRecordCompressionType.ZLIB
    _write(tf, tmp_path / "f", [b"a", b"b"], options)
    tf_options = tf1.python_io.TFRecordOptions(tf1.python_io.TFRecordCompressionType.GZIP)
    assert list(tf1.python_io.tf_record_iterator(str(tmp_path / "f"), tf_options)) == [b"a", b"b"]


def test_flush_makes_records_readable_before_close(tmp_path):
    path = tmp_path / "f"
    writer = tf.python_io.TFRecordWriter(str(path))
    writer.write(b"one")
    writer.flush()
    assert list(tf.python_io.tf_record_iterator(str(path))) == [b"one"]
    writer.close()
    writer.close()  # a second close does nothing


def test_write_after_close_is_a_failed_precondition(tmp_path):
    writer = tf.python_io.TFRecordWriter(str(tmp_path / "f"))
    writer.close()
    with pytest.raises(tf.errors.FailedPreconditionError, match="Writer is closed"):
        writer.write(b"x")


def test_a_large_file_reads_back_across_read_chunks(tmp_path):
    records = [bytes([i % 256]) * (1000 + i) for i in range(400)]  # ~0.6 MB: several chunks
    _write(tf, tmp_path / "f", records, "GZIP")
    assert list(tf.python_io.tf_record_iterator(str(tmp_path / "f"), "GZIP")) == records


def _corrupt(tmp_path, position):
    path = tmp_path / "bad"
    _write(tf, path, [b"hello", b"world"])
    data = bytearray(path.read_bytes())
    data[position] ^= 1
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize(
    ("position", "message"),
    [
        (9, r"corrupted record at 0 \(Is this even a TFRecord file\?\) in .*bad: the length's checksum"),
        (14, r"corrupted record at 12 in .*bad: the data's checksum"),
        (21 + 14, r"corrupted record at 33 in .*bad: the data's checksum"),
    ],
)
def test_a_bad_checksum_is_data_loss_naming_file_and_offset(tf1, tmp_path, position, message):
    path = _corrupt(tmp_path, position)
    with pytest.raises(tf.errors.DataLossError, match=message):
        list(tf.python_io.tf_record_iterator(str(path)))
    with pytest.raises(tf1.errors.DataLossError):  # TF agrees that the file is corrupt
        list(tf1.python_io.tf_record_iterator(str(path)))


def test_a_truncated_record_is_data_loss_naming_file_and_offset(tmp_path):
    path = tmp_path / "short"
    _write(tf, path, [b"hello", b"world"])
    path.write_bytes(path.read_bytes()[:-3])
    records = tf.python_io.tf_record_iterator(str(path))
    assert next(records) == b"hello"
    with pytest.raises(tf.errors.DataLossError, match=r"truncated record at 21 in .*short"):
        next(records)


def test_a_missing_file_is_not_found(tmp_path):
    with pytest.raises(tf.errors.NotFoundError, match="absent"):
        list(tf.python_io.tf_record_iterator(str(tmp_path / "absent")))


def test_masked_crc_matches_tfs_framing():
    # TF's record of b"hello" (written by tf.python_io.TFRecordWriter)
    expected = b"\x05\x00\x00\x00\x00\x00\x00\x00\xea\xb2\x04>hello\xbb\x1f\x1c\x19"
    assert tf_record.encode_record(b"hello") == expected


# -- Example protos ----------------------------------------------------------------------------------
def _example(module):
    train = module.train
    return train.Example(
        features=train.Features(
            feature={
                "label": train.Feature(int64_list=train.Int64List(value=[3, -(2**40)])),
                "pixels": train.Feature(float_list=train.FloatList(value=[0.5, 1.25, -2.0])),
                "name": train.Feature(bytes_list=train.BytesList(value=[b"cat", b"\xff"])),
                "empty": train.Feature(),
            }
        )
    )


def _sequence_example(module):
    train = module.train
    step = train.Feature(float_list=train.FloatList(value=[1.0, 2.0]))
    return train.SequenceExample(
        context=_example(module).features,
        feature_lists=train.FeatureLists(feature_list={"steps": train.FeatureList(feature=[step, step])}),
    )


@pytest.mark.parametrize("make", [_example, _sequence_example])
def test_protos_are_wire_compatible_both_ways(tf1, make):
    ours, theirs = make(tf), make(tf1)
    assert ours.SerializeToString(deterministic=True) == theirs.SerializeToString(deterministic=True)
    assert type(theirs).FromString(ours.SerializeToString()) == theirs
    assert type(ours).FromString(theirs.SerializeToString()) == ours


def test_our_protos_do_not_clash_with_tfs_descriptors(tf1):
    assert tf.train.Example.DESCRIPTOR.full_name == "nbdist.example.Example"
    assert tf1.train.Example.DESCRIPTOR.full_name == "tensorflow.Example"


# -- parsing -----------------------------------------------------------------------------------------
def _run(module, build):
    with module.Graph().as_default(), module.Session() as sess:
        return sess.run(build(module))


def _both(tf1, build):
    return _run(tf, build), _run(tf1, build)


def _assert_same(ours, theirs):
    assert sorted(ours) == sorted(theirs)
    for key, value in theirs.items():
        if hasattr(value, "indices"):  # a SparseTensorValue
            assert type(ours[key]).__name__ == "SparseTensorValue"
            for a, b in zip(ours[key], value):
                np.testing.assert_array_equal(a, b)
                assert np.asarray(a).dtype == np.asarray(b).dtype
        else:
            np.testing.assert_array_equal(ours[key], value)
            assert np.asarray(ours[key]).dtype == np.asarray(value).dtype, key


def _features(module):
    return {
        "label": module.FixedLenFeature([2], module.int64),
        "pixels": module.FixedLenFeature([3], module.float32),
        "name": module.VarLenFeature(module.string),
        "missing": module.FixedLenFeature([2, 1], module.float32, default_value=[[7.0], [8.0]]),
        "missing_text": module.FixedLenFeature([], module.string, default_value="none"),
        "empty": module.VarLenFeature(module.int64),
    }


def test_parse_single_example_matches_tf(tf1):
    serialized = _example(tf1).SerializeToString()
    ours, theirs = _both(tf1, lambda m: m.parse_single_example(serialized, _features(m)))
    _assert_same(ours, theirs)


def test_parse_example_batch_with_defaults_varlen_and_sequences_matches_tf(tf1):
    train = tf1.train
    other = train.Example(
        features=train.Features(
            feature={
                "label": train.Feature(int64_list=train.Int64List(value=[1, 2])),
                "pixels": train.Feature(float_list=train.FloatList(value=[0, 0, 1])),
                "missing": train.Feature(float_list=train.FloatList(value=[1, 2])),
                "seq": train.Feature(float_list=train.FloatList(value=[4, 5, 6])),
            }
        )
    )
    batch = [_example(tf1).SerializeToString(), other.SerializeToString()]

    def build(m):
        features = _features(m)
        features["seq"] = m.FixedLenSequenceFeature([], m.float32, allow_missing=True, default_value=-1.0)
        features["rows"] = m.FixedLenSequenceFeature([3], m.float32, allow_missing=True)
        return m.parse_example(batch, features)

    ours, theirs = _both(tf1, build)
    _assert_same(ours, theirs)


def test_parsed_static_shapes_match_tf(tf1):
    def build(m):
        parsed = m.parse_example(m.placeholder(m.string, [4]), _features(m))
        return {
            k: (v.dense_shape.shape.as_list() if hasattr(v, "dense_shape") else v.shape.as_list())
            for k, v in parsed.items()
        }

    with tf.Graph().as_default():
        ours = build(tf)
    with tf1.Graph().as_default():
        theirs = build(tf1)
    assert ours == theirs


def test_a_missing_required_feature_names_it(tf1):
    serialized = _example(tf1).SerializeToString()
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=r"Feature: absent \(data type: float\) is required but could not be found",
    ):
        _run(tf, lambda m: m.parse_single_example(serialized, {"absent": m.FixedLenFeature([], m.float32)}))


def test_a_feature_of_the_wrong_type_names_it(tf1):
    serialized = _example(tf1).SerializeToString()
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=r"Name: <unknown>, Key: pixels, Index: 0.  Data types don't match. Data type: float but expected type: int64",
    ):
        _run(tf, lambda m: m.parse_example([serialized], {"pixels": m.FixedLenFeature([3], m.int64)}))


def test_a_wrong_number_of_values_names_the_feature(tf1):
    serialized = _example(tf1).SerializeToString()
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=r"Key: pixels, Index: 0.  Number of float values != expected.  Values size: 3 but output shape: \[2\]",
    ):
        _run(tf, lambda m: m.parse_example([serialized], {"pixels": m.FixedLenFeature([2], m.float32)}))


def test_bytes_that_are_no_example_are_invalid_argument():
    with pytest.raises(
        tf.errors.InvalidArgumentError, match="Could not parse example input, value: 'garbage'"
    ):
        _run(tf, lambda m: m.parse_single_example(b"garbage", {"x": m.VarLenFeature(m.int64)}))


def test_a_dtype_a_feature_cannot_hold_is_a_type_error():
    with pytest.raises(TypeError, match="feature 'x' has dtype int32"):
        tf.parse_single_example(b"", {"x": tf.FixedLenFeature([], tf.int32)})


def test_a_sequence_feature_must_allow_missing():
    with pytest.raises(ValueError, match="requires allow_missing to be True"):
        tf.parse_example([b""], {"x": tf.FixedLenSequenceFeature([], tf.float32)})


# -- decode_raw and SparseTensor ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("out_type", "little_endian"), [("uint8", True), ("int32", True), ("int32", False), ("float64", True)]
)
def test_decode_raw_matches_tf(tf1, out_type, little_endian):
    data = [bytes(range(16)), bytes(range(100, 116))]
    ours, theirs = _both(tf1, lambda m: m.decode_raw(data, getattr(m, out_type), little_endian=little_endian))
    np.testing.assert_array_equal(ours, theirs)
    assert ours.dtype == theirs.dtype


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            [b"abcd", b"abc"],
            "DecodeRaw requires input strings to all be the same size, but element 1 has size 3 != 4",
        ),
        ([b"abc"], "Input to DecodeRaw has length 3 that is not a multiple of 4, the size of int32"),
    ],
)
def test_decode_raw_errors_are_tfs(data, message):
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        _run(tf, lambda m: m.decode_raw(data, m.int32))


def test_sparse_to_dense_matches_tf(tf1):
    def build(m):
        sparse = m.SparseTensor([[0, 1], [2, 0]], [1.5, 2.5], [3, 2])
        return sparse, m.sparse_tensor_to_dense(sparse, default_value=-1.0), m.sparse.to_dense(sparse)

    (ours_value, *ours), (theirs_value, *theirs) = _both(tf1, build)
    assert type(ours_value).__name__ == "SparseTensorValue"
    for a, b in [*zip(ours_value, theirs_value), *zip(ours, theirs)]:
        np.testing.assert_array_equal(a, b)


def test_sparse_to_dense_rejects_unordered_indices():
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[1\] = \[0,0\] is out of order"):
        _run(tf, lambda m: m.sparse.to_dense(m.SparseTensor([[1, 0], [0, 0]], [1, 2], [2, 2])))


def test_a_parsed_example_read_from_a_tfrecord_file_written_by_tf(tf1, tmp_path):
    path = tmp_path / "data.tfrecord"
    _write(tf1, path, [_example(tf1).SerializeToString()] * 3, "GZIP")
    records = list(tf.python_io.tf_record_iterator(str(path), "GZIP"))
    parsed = _run(tf, lambda m: m.parse_example(records, {"pixels": m.FixedLenFeature([3], m.float32)}))
    np.testing.assert_array_equal(parsed["pixels"], [[0.5, 1.25, -2.0]] * 3)
