"""`tf.sparse` and TF 1.x's top-level sparse names against real TensorFlow: each name spelled
as a program spells it (``t.sparse.add``, ``t.sparse_add``), run in both libraries on the same
inputs; `sparse_tensor_dense_matmul`'s and the segment reductions' gradients against TF's and
finite differences."""

import numpy as np
import pytest

import nbdist as tf
from gradcheck import check_gradients

IDX = [[0, 1], [1, 0], [1, 3], [2, 2]]
VALS = [1.5, -2.0, 3.0, 0.5]
IDX_B = [[0, 1], [0, 2], [2, 2], [2, 3]]
VALS_B = [-1.5, 4.0, 1.0, -3.0]
SHAPE = [3, 4]
UNORDERED = ([[2, 0], [0, 3], [0, 1]], [7, 8, 9], [3, 4])
DENSE = (np.arange(12.0).reshape(3, 4) - 5).astype(np.float32)
DATA = np.arange(15.0).reshape(5, 3)
IDX3 = [[0, 0, 1], [0, 2, 0], [1, 1, 1]]


def sp(t, idx=IDX, vals=VALS, shape=SHAPE):
    return t.SparseTensor(idx, vals, shape)


def sp_b(t):
    return t.SparseTensor(IDX_B, VALS_B, SHAPE)


CASES = {
    "sparse.from_dense": lambda t: t.sparse.from_dense(t.constant([[0, 3, 0], [4, 0, 5]])),
    "sparse.from_dense-strings": lambda t: t.sparse.from_dense(t.constant([["", "a"], ["b", ""]])),
    "sparse.to_dense": lambda t: t.sparse.to_dense(sp(t)),
    "sparse.add": lambda t: t.sparse.add(sp(t), sp_b(t)),
    "sparse.add-threshold": lambda t: t.sparse.add(sp(t), sp_b(t), threshold=1.0),
    "sparse.add-dense": lambda t: t.sparse.add(sp(t), t.constant(DENSE)),
    "sparse_add": lambda t: t.sparse_add(t.constant(DENSE), sp(t)),
    "sparse.reorder": lambda t: t.sparse.reorder(t.SparseTensor(*UNORDERED)),
    "sparse_reorder": lambda t: t.sparse_reorder(t.SparseTensor(*UNORDERED)),
    "sparse.retain": lambda t: t.sparse.retain(sp(t), [True, False, True, False]),
    "sparse_retain": lambda t: t.sparse_retain(sp(t), t.constant([False, True, True, True])),
    "sparse.reset_shape": lambda t: t.sparse.reset_shape(sp(t)),
    "sparse.reset_shape-new": lambda t: t.sparse.reset_shape(sp(t), [5, 6]),
    "sparse.concat": lambda t: t.sparse.concat(1, [sp(t), sp_b(t)]),
    "sparse_concat": lambda t: t.sparse_concat(0, [sp(t), sp_b(t)]),
    "sparse_concat-expand": lambda t: t.sparse_concat(
        0, [sp(t), t.SparseTensor([[0, 5]], [1.0], [1, 6])], expand_nonconcat_dim=True
    ),
    "sparse.slice": lambda t: t.sparse.slice(sp(t), [1, 1], [2, 5]),
    "sparse_slice": lambda t: t.sparse_slice(sp(t), [0, 0], [2, 2]),
    "sparse.reshape": lambda t: t.sparse.reshape(sp(t), [2, -1]),
    "sparse_reshape": lambda t: t.sparse_reshape(sp(t), [4, 3]),
    "sparse.transpose": lambda t: t.sparse.transpose(sp(t)),
    "sparse_transpose": lambda t: t.sparse_transpose(t.SparseTensor(IDX3, [1, 2, 3], [2, 3, 2]), [2, 0, 1]),
    "sparse.expand_dims": lambda t: t.sparse.expand_dims(sp(t), 1),
    "sparse.expand_dims-last": lambda t: t.sparse.expand_dims(sp(t), -1),
    "sparse.reduce_sum": lambda t: t.sparse.reduce_sum(sp(t), axis=1),
    "sparse.reduce_sum-all": lambda t: t.sparse.reduce_sum(sp(t)),
    "sparse_reduce_sum": lambda t: t.sparse_reduce_sum(sp(t), axis=0, keepdims=True),
    "sparse.reduce_max": lambda t: t.sparse.reduce_max(sp(t), axis=1),
    "sparse_reduce_max": lambda t: t.sparse_reduce_max(
        t.SparseTensor(IDX3, [1, -2, 3], [2, 3, 2]), axis=[0, 2]
    ),
    "sparse.reduce_sum_sparse": lambda t: t.sparse.reduce_sum_sparse(sp(t), axis=0),
    "sparse_reduce_sum_sparse": lambda t: t.sparse_reduce_sum_sparse(sp(t), axis=1, keepdims=True),
    "sparse.reduce_max_sparse": lambda t: t.sparse.reduce_max_sparse(sp(t), axis=1),
    "sparse.sparse_dense_matmul": lambda t: t.sparse.sparse_dense_matmul(sp(t), t.constant(DENSE.T)),
    "sparse.matmul-adjoint": lambda t: t.sparse.matmul(
        sp(t), t.constant(DENSE.T), adjoint_a=True, adjoint_b=True
    ),
    "sparse_tensor_dense_matmul": lambda t: t.sparse_tensor_dense_matmul(sp(t), t.constant(DENSE.T)),
    "sparse.to_indicator": lambda t: t.sparse.to_indicator(
        t.SparseTensor([[0, 0], [0, 1], [2, 0]], t.constant([3, 1, 4], t.int64), [3, 2]), 5
    ),
    "sparse_to_indicator": lambda t: t.sparse_to_indicator(
        t.SparseTensor([[0, 0], [1, 0]], t.constant([0, 2], t.int64), [2, 1]), 3
    ),
    "sparse.fill_empty_rows": lambda t: t.sparse.fill_empty_rows(t.SparseTensor(*UNORDERED[:2], [4, 4]), -1),
    "sparse_fill_empty_rows": lambda t: t.sparse_fill_empty_rows(sp(t, shape=[5, 4]), 9.0),
    "sparse.maximum": lambda t: t.sparse.maximum(sp(t), sp_b(t)),
    "sparse_maximum": lambda t: t.sparse_maximum(sp_b(t), sp(t)),
    "sparse.minimum": lambda t: t.sparse.minimum(sp(t), sp_b(t)),
    "sparse_minimum": lambda t: t.sparse_minimum(sp_b(t), sp(t)),
    "sparse.softmax": lambda t: t.sparse.softmax(sp(t)),
    "sparse_softmax": lambda t: t.sparse_softmax(t.SparseTensor(IDX3, [1.0, 2.0, 3.0], [2, 3, 2])),
    "sparse.split": lambda t: t.sparse.split(sp_input=sp(t), num_split=3, axis=1),
    "sparse_split": lambda t: t.sparse_split(sp_input=sp(t), num_split=2, axis=0),
    "sparse.segment_sum": lambda t: t.sparse.segment_sum(t.constant(DATA), [0, 2, 2, 4], [0, 0, 1, 3]),
    "sparse.segment_mean": lambda t: t.sparse.segment_mean(t.constant(DATA), [0, 2, 2, 4], [0, 0, 1, 3]),
    "sparse.segment_sqrt_n": lambda t: t.sparse.segment_sqrt_n(t.constant(DATA), [0, 2, 2], [0, 0, 1]),
    "sparse_segment_sum": lambda t: t.sparse_segment_sum(t.constant(DATA), [1, 3], [0, 1], num_segments=4),
    "sparse_segment_mean": lambda t: t.sparse_segment_mean(t.constant(DATA), [1, 3, 4], [0, 0, 2]),
    "sparse_segment_sqrt_n": lambda t: t.sparse_segment_sqrt_n(t.constant(DATA), [1, 3, 4], [1, 1, 1]),
    "sparse.eye": lambda t: t.sparse.eye(3, 4, dtype=t.float64),
    "sparse.mask": lambda t: t.convert_to_tensor(
        t.sparse.mask(
            t.IndexedSlices(t.constant(DATA), t.constant([0, 2, 4, 6, 8]), t.constant([9, 3])), [2, 8]
        )
    ),
}


def _value(lib, build):
    with lib.Graph().as_default(), lib.Session() as sess:
        return sess.run(build(lib))


def _assert_same(ours, theirs, name):
    if isinstance(theirs, (tuple, list)):
        assert len(ours) == len(theirs), name
        for a, b in zip(ours, theirs):
            _assert_same(a, b, name)
        return
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.shape == theirs.shape, f"{name}: {ours.shape} vs {theirs.shape}"
    if theirs.dtype.kind in "OS":
        assert ours.tolist() == theirs.tolist(), name
    else:
        assert ours.dtype == theirs.dtype, f"{name}: {ours.dtype} vs {theirs.dtype}"
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-9, err_msg=name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_sparse_op_matches_tensorflow(tf1, name):
    _assert_same(_value(tf, CASES[name]), _value(tf1, CASES[name]), name)


def _matmul_grads(t, adjoint_a, adjoint_b):
    rng = np.random.default_rng(5)
    inner, rows = (3, 4) if adjoint_a else (4, 3)
    b_used = rng.standard_normal((inner, 2))
    values = t.constant(VALS, t.float64)
    b = t.constant(b_used.T if adjoint_b else b_used)
    a = t.SparseTensor(IDX, values, SHAPE)
    y = t.sparse.sparse_dense_matmul(a, b, adjoint_a=adjoint_a, adjoint_b=adjoint_b)
    loss = t.reduce_sum(y * t.constant(rng.standard_normal((rows, 2))))
    return t.gradients(loss, [values, b])


@pytest.mark.parametrize("adjoint", [(False, False), (True, False), (False, True), (True, True)])
def test_sparse_dense_matmul_gradients_match_tensorflow(tf1, adjoint):
    ours = _value(tf, lambda t: _matmul_grads(t, *adjoint))
    _assert_same(ours, _value(tf1, lambda t: _matmul_grads(t, *adjoint)), f"grads {adjoint}")


def _segment_grads(t):
    data = t.constant(DATA)
    outs = [
        t.sparse.segment_sum(data, [0, 2, 2, 4], [0, 0, 1, 3]),
        t.sparse.segment_mean(data, [0, 2, 2, 4], [0, 0, 1, 3]),
        t.sparse.segment_sqrt_n(data, [0, 2, 2], [0, 0, 1]),
    ]
    return [t.convert_to_tensor(t.gradients(t.reduce_sum(o * o), data)[0]) for o in outs]


def test_sparse_segment_gradients_match_tensorflow(tf1):
    _assert_same(_value(tf, _segment_grads), _value(tf1, _segment_grads), "segment grads")


@pytest.mark.parametrize("adjoint", [(False, False), (True, True)])
def test_sparse_dense_matmul_gradient_matches_finite_differences(adjoint):
    adjoint_a, adjoint_b = adjoint
    rng = np.random.default_rng(3)
    b = rng.standard_normal((2, 3) if adjoint_b else (3, 2)) if adjoint_a else rng.standard_normal((4, 2))
    b = b.T if adjoint_b and not adjoint_a else b

    def fn(v, b):
        return tf.sparse.sparse_dense_matmul(
            tf.SparseTensor(IDX, v, SHAPE), b, adjoint_a=adjoint_a, adjoint_b=adjoint_b
        )

    check_gradients(fn, [rng.standard_normal(4), b])


def test_sparse_segment_gradient_matches_finite_differences():
    check_gradients(lambda d: tf.sparse.segment_sqrt_n(d, [0, 2, 2, 4], [0, 0, 1, 3]), [DATA])


def test_fetching_a_sparse_result_gives_a_sparse_tensor_value():
    with tf.Graph().as_default(), tf.Session() as sess:
        value = sess.run(tf.sparse.reorder(tf.SparseTensor(*UNORDERED)))
    assert type(value).__name__ == "SparseTensorValue"
    assert value.indices.tolist() == [[0, 1], [0, 3], [2, 0]] and value.values.tolist() == [9, 8, 7]


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: tf.sparse.add(sp(tf), tf.SparseTensor(IDX_B, VALS_B, [3, 5])), "shapes do not match"),
        (lambda: tf.sparse.segment_sum(tf.constant(DATA), [0, 1], [1, 0]), "not increasing"),
        (lambda: tf.sparse.reshape(sp(tf), [5, -1]), "dense values"),
        (lambda: tf.sparse.reset_shape(sp(tf), [2, 4]), "must be at least"),
    ],
)
def test_bad_values_raise_invalid_argument(build, match):
    with (
        tf.Graph().as_default(),
        tf.Session() as sess,
        pytest.raises(tf.errors.InvalidArgumentError, match=match),
    ):
        sess.run(build())


def test_api_misuse_raises_as_tf():
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="must be a SparseTensor"):
            tf.sparse.reorder(tf.constant([1.0]))
        with pytest.raises(ValueError, match="Keyword arguments are required"):
            tf.sparse.split(sp(tf), 2, 1)
        with pytest.raises(AttributeError, match=r"tf\.sparse\.map_values is not supported"):
            tf.sparse.map_values  # noqa: B018 - (TF 2's; not in tf.compat.v1.sparse)
