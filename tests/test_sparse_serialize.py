"""`tf.io.serialize_sparse`, `serialize_many_sparse` and `deserialize_many_sparse` (and their
top-level names) against real TensorFlow: the serialized bytes are TF's, and TF's serialized
rows deserialize to TF's `SparseTensor` (round trips both ways, empty rows, strings)."""

import numpy as np
import pytest

import nbdist as tf

INDICES = np.array([[0, 0, 1], [0, 2, 0], [2, 1, 1], [2, 1, 3], [3, 0, 0]], np.int64)
VALUES = np.array([1.5, -2.0, 3.25, 4.0, 0.5], np.float32)
SHAPE = np.array([4, 3, 5], np.int64)
WORDS = np.array([b"a", b"", "héllo".encode(), b"x" * 40, b"z"], dtype=object)


def _sparse(t, values=VALUES, indices=INDICES, shape=SHAPE):
    return t.SparseTensor(indices, values, shape)


def _value(lib, build):
    with lib.Graph().as_default(), lib.Session() as sess:
        return sess.run(build(lib))


def _round_trip(t, values, dtype):
    serialized = t.io.serialize_many_sparse(_sparse(t, values))
    return serialized, t.io.deserialize_many_sparse(serialized, dtype, rank=3)


CASES = {
    "serialize_sparse": lambda t: [
        t.io.serialize_sparse(_sparse(t)),
        t.serialize_sparse(_sparse(t, WORDS)),
        t.io.serialize_sparse(_sparse(t, np.zeros(0, np.int32), np.zeros((0, 2), np.int64), [3, 3])),
    ],
    "serialize_many_sparse": lambda t: [
        t.io.serialize_many_sparse(_sparse(t)),  # row 1 is empty
        t.serialize_many_sparse(_sparse(t, VALUES.astype(np.int64))),
    ],
    "round_trip_floats": lambda t: _round_trip(t, VALUES, t.float32),
    "round_trip_strings": lambda t: _round_trip(t, WORDS, t.string),
    "deserialize_rows_of_other_shapes": lambda t: t.deserialize_many_sparse(
        t.stack(
            [
                t.io.serialize_sparse(t.SparseTensor([[0, 1]], [7], [2, 3])),
                t.io.serialize_sparse(t.SparseTensor([[4, 0], [4, 2]], [8, 9], [5, 3])),
            ]
        ),
        t.int32,
    ),
}


def _flatten(x):
    if hasattr(x, "indices"):
        return [x.indices, x.values, x.dense_shape]
    if isinstance(x, (list, tuple)):
        return [a for item in x for a in _flatten(item)]
    return [x]


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_tensorflow(tf1, name):
    ours, theirs = _flatten(_value(tf, CASES[name])), _flatten(_value(tf1, CASES[name]))
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        a, b = np.asarray(a), np.asarray(b)
        assert (a.shape, a.dtype) == (b.shape, b.dtype)
        assert a.tolist() == b.tolist()


def test_tensorflows_bytes_deserialize_in_nbdist(tf1):
    serialized = _value(tf1, lambda t: t.io.serialize_many_sparse(_sparse(t, WORDS)))
    with tf.Graph().as_default(), tf.Session() as sess:
        sp = sess.run(tf.io.deserialize_many_sparse(serialized, tf.string))
    np.testing.assert_array_equal(sp.indices, INDICES)
    assert sp.values.tolist() == WORDS.tolist()
    np.testing.assert_array_equal(sp.dense_shape, SHAPE)


def test_static_shapes_are_tensorflows(tf1):
    def shapes(t):
        with t.Graph().as_default():
            sp = _sparse(t)
            out = t.io.deserialize_many_sparse(t.io.serialize_many_sparse(sp), t.float32, rank=3)
            return [
                t.io.serialize_sparse(sp).shape.as_list(),
                t.io.serialize_many_sparse(sp).shape.as_list(),
                out.indices.shape.as_list(),
                out.values.shape.as_list(),
                out.dense_shape.shape.as_list(),
            ]

    assert shapes(tf) == shapes(tf1)


@pytest.mark.parametrize("lib_name", ["nbdist", "tensorflow"])
def test_bad_input_raises_as_in_tensorflow(tf1, lib_name):
    t = tf if lib_name == "nbdist" else tf1
    with t.Graph().as_default(), t.Session() as sess:
        serialized = t.io.serialize_many_sparse(_sparse(t))
        with pytest.raises(t.errors.InvalidArgumentError, match="Requested SparseTensor of type int32"):
            sess.run(t.io.deserialize_many_sparse(serialized, t.int32).values)
        with pytest.raises(t.errors.InvalidArgumentError, match="should be > 1"):
            sess.run(t.io.serialize_many_sparse(t.SparseTensor([[1]], [1.0], [3])))
