"""tf.make_tensor_proto, tf.make_ndarray, tf.serialize_tensor / tf.parse_tensor (and their tf.io
paths) against real TensorFlow (issue 32): the same TensorProto bytes, the same arrays back."""

import numpy as np
import pytest

import nbdist as tf

pytestmark = pytest.mark.tf

VALUES = {
    "py_float": 1.0,
    "py_int": 3,
    "py_big_int": 2**40,
    "py_list": [1, 2],
    "py_bool": True,
    "bool_list": [True, False],
    "str": "ab",
    "bytes_list": [b"a", b"bc"],
    "np_float64": np.float64(2.0),
    "uint16": np.arange(3, dtype=np.uint16),
    "uint8": np.arange(4, dtype=np.uint8).reshape(2, 2),
    "int8": np.array([-3, 4], np.int8),
    "int16_scalar": np.int16(-7),
    "int64": np.array([[1, -(2**40)]], np.int64),
    "complex64": np.array([1 + 2j, -0.5j], np.complex64),
    "complex128": np.complex128(3 - 1j),
    "float16": np.float16([1, 2.5]),
    "float16_scalar": np.float16(0.5),
    "float32_3d": np.linspace(-1, 1, 24, dtype=np.float32).reshape(2, 3, 4),
    "empty": np.zeros([0, 3], np.float32),
    "nested": [[1.5, 2.0], [3.0, -4.0]],
}


@pytest.mark.parametrize("name", sorted(VALUES))
def test_make_tensor_proto_writes_tensorflows_bytes(tf1, name):
    ours, theirs = tf.make_tensor_proto(VALUES[name]), tf1.make_tensor_proto(VALUES[name])
    assert ours.SerializeToString() == theirs.SerializeToString()
    ours_back, theirs_back = tf.make_ndarray(ours), tf1.make_ndarray(theirs)
    assert ours_back.dtype == theirs_back.dtype
    np.testing.assert_array_equal(ours_back, theirs_back)
    # each reads the other's proto
    np.testing.assert_array_equal(tf.make_ndarray(theirs), theirs_back)


ARGS = {
    "fill": ((1.0,), {"shape": [2, 2]}),
    "partial": (([1, 2],), {"dtype": "float32", "shape": [3]}),
    "cast": (([1, 2],), {"dtype": "int64"}),
    "empty_shape": (([],), {"dtype": "int32", "shape": [0, 2]}),
    "broadcast_scalar": ((7,), {"shape": [3], "allow_broadcast": True}),
    "same_size_reshaped": (([1, 2, 3, 4],), {"shape": [2, 2]}),
    "string_fill": ((b"x",), {"shape": [2]}),
    "bool_fill": ((False,), {"shape": [3]}),
    "float16_fill": ((np.float16(1.5),), {"shape": [2]}),
}


@pytest.mark.parametrize("name", sorted(ARGS))
def test_make_tensor_proto_with_dtype_and_shape_equals_tensorflows(tf1, name):
    args, kwargs = ARGS[name]

    def run(t):
        kw = dict(kwargs)
        if "dtype" in kw:
            kw["dtype"] = getattr(t, kw["dtype"])
        proto = t.make_tensor_proto(*args, **kw)
        return proto.SerializeToString(), t.make_ndarray(proto)

    (ours, ours_array), (theirs, theirs_array) = run(tf), run(tf1)
    assert ours == theirs
    np.testing.assert_array_equal(ours_array, theirs_array)
    assert ours_array.dtype == theirs_array.dtype


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "match"),
    [
        (([1, 2, 3],), {"shape": [2]}, ValueError, "Too many elements provided. Takes at most 2, but got 3"),
        (([1, 2],), {"shape": [1, 2], "verify_shape": True}, TypeError, r"Expected Tensor's shape: \(1, 2\)"),
        (([1, 2],), {"shape": [3], "allow_broadcast": True}, TypeError, r"Expected Tensor's shape: \(3,\)"),
        (("a",), {"dtype": "float32"}, TypeError, "Expected float32, but got a of type 'str'"),
        ((1.5,), {"dtype": "int32"}, TypeError, "Expected int32, but got 1.5 of type 'float'"),
    ],
)
def test_make_tensor_proto_refuses_what_tensorflow_refuses(tf1, args, kwargs, error, match):
    for t in (tf, tf1):
        kw = dict(kwargs)
        if "dtype" in kw:
            kw["dtype"] = getattr(t, kw["dtype"])
        with pytest.raises(error, match=match):
            t.make_tensor_proto(*args, **kw)


def test_make_tensor_proto_takes_a_proto_as_is_and_make_ndarray_tensorflows(tf1):
    proto = tf.make_tensor_proto([1.5, 2.5])
    assert tf.make_tensor_proto(proto) is proto
    np.testing.assert_array_equal(tf.make_ndarray(tf1.make_tensor_proto([[1, 2]], dtype=tf1.int64)), [[1, 2]])


SERIALIZED = {
    "float32_scalar": np.float32(1),
    "int64": np.arange(4, dtype=np.int64).reshape(2, 2),
    "bool": np.array([True, False]),
    "strings": np.array([b"x", b"yz"], object),
    "empty": np.zeros([0, 3], np.float32),
    "float64": np.array([-1.5, 2.0]),
    "uint8": np.array([[0, 255]], np.uint8),
    "int8": np.array([-3], np.int8),
    "float16": np.float16([0.5, -2]),
    "complex64": np.array([1 - 1j], np.complex64),
}


def _round_trip(t, value):
    with t.Graph().as_default():
        s = t.serialize_tensor(value)
        parsed = t.parse_tensor(s, value.dtype if value.dtype != object else t.string)
        again = t.io.parse_tensor(t.io.serialize_tensor(parsed), parsed.dtype)
        with t.Session() as sess:
            out = sess.run([s, parsed, again])
    return out, parsed.shape.ndims, s.shape.as_list()


@pytest.mark.parametrize("name", sorted(SERIALIZED))
def test_serialize_and_parse_tensor_equal_tensorflows(tf1, name):
    (ours, ours_rank, ours_shape), (theirs, theirs_rank, theirs_shape) = (
        _round_trip(tf, SERIALIZED[name]),
        _round_trip(tf1, SERIALIZED[name]),
    )
    assert ours[0] == theirs[0]  # the TensorProto bytes
    for a, b in zip(ours[1:], theirs[1:]):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)
    assert (ours_rank, ours_shape) == (theirs_rank, theirs_shape) == (None, [])


@pytest.mark.parametrize(
    ("serialized", "out_type", "match"),
    [
        (None, "int32", r"Type mismatch between parsed tensor \(float\) and dtype \(int32\)"),
        (b"garbage\xff", "int32", "Could not parse `serialized` as TensorProto"),
    ],
)
def test_parse_tensor_errors_as_tensorflow(tf1, serialized, out_type, match):
    for t in (tf, tf1):
        with t.Graph().as_default():
            if serialized is None:
                source = t.serialize_tensor(np.float32([1, 2]))
            else:
                source = t.constant(serialized)
            parsed = t.parse_tensor(source, getattr(t, out_type))
            with t.Session() as sess, pytest.raises(t.errors.InvalidArgumentError, match=match):
                sess.run(parsed)
