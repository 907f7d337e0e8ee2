"""TF's sparse names of ops/sparse_extra_ops.py - `tf.sparse_placeholder`, `tf.sparse_to_dense`,
`tf.sparse_merge`, `tf.edit_distance`, `tf.sparse.bincount`, `tf.sparse.cross`, and the
`tf.sparse` paths of `placeholder`, `merge` and `SparseConditionalAccumulator` - against real
TensorFlow: each spelled as a program spells it (``t.sparse.cross``), run in both libraries.
"""

import numpy as np
import pytest

import nbdist as tf


def _hyp(t):
    return t.SparseTensor([[0, 0, 0], [0, 0, 1], [1, 0, 0], [1, 1, 0]], ["a", "b", "c", "d"], [2, 3, 2])


def _truth(t):
    return t.SparseTensor([[0, 0, 0], [0, 1, 0], [1, 0, 0], [1, 0, 1]], ["a", "x", "c", "d"], [2, 2, 2])


def _ids(t):
    return t.SparseTensor([[0, 0], [0, 1], [1, 0], [2, 0], [2, 1]], [4, 1, 0, 2, 4], [3, 2])


def _weights(t):
    return t.SparseTensor([[0, 0], [0, 1], [1, 0], [2, 0], [2, 1]], [0.5, -1.0, 2.0, 3.0, 0.25], [3, 2])


def _int_sparse(t):
    return t.SparseTensor([[0, 0], [1, 1], [1, 2], [1, 3]], [3, 1, 3, 9], [2, 4])


PARITY = {
    "edit_distance": lambda t: t.edit_distance(_hyp(t), _truth(t)),
    "edit_distance_raw": lambda t: t.edit_distance(_hyp(t), _truth(t), normalize=False),
    "edit_distance_ints": lambda t: t.edit_distance(
        t.SparseTensor([[0, 0], [0, 1], [0, 2]], [1, 2, 3], [1, 3]),
        t.SparseTensor([[0, 0], [0, 1]], [2, 3], [1, 2]),
    ),
    "sparse_to_dense": lambda t: t.sparse_to_dense([[0, 1], [2, 0]], [3, 2], [5.0, -1.0], default_value=0.5),
    "sparse_to_dense_scalar_value": lambda t: t.sparse_to_dense([1, 3], [5], 7),
    "sparse_to_dense_int64": lambda t: t.sparse_to_dense(
        t.constant([[0], [2]], t.int64), [4], [True, True], False
    ),
    "sparse_merge": lambda t: t.sparse_merge(_ids(t), _weights(t), 5),
    "sparse_merge_sorted": lambda t: t.sparse_merge(_ids(t), _weights(t), t.constant(6), already_sorted=True),
    "sparse_merge_two": lambda t: t.sparse_merge([_ids(t), _ids(t)], _weights(t), [5, 7]),
    "merge": lambda t: t.sparse.merge(_ids(t), _weights(t), 5),
    "bincount": lambda t: t.sparse.bincount([[1, 2, 2], [0, 5, 5]]),
    "bincount_rows": lambda t: t.sparse.bincount([[1, 2, 2], [0, 5, 5]], axis=-1, minlength=8),
    "bincount_weights": lambda t: t.sparse.bincount(
        t.constant([[1, 2, 2], [0, 5, 5]]), weights=[[1.0, 2, 3], [4, 5, 6]], axis=-1
    ),
    "bincount_binary": lambda t: t.sparse.bincount(
        [[1, 2, 2], [0, 5, 5]], axis=-1, binary_output=True, maxlength=3
    ),
    "bincount_sparse_rows": lambda t: t.sparse.bincount(_int_sparse(t), axis=-1),
    "bincount_sparse_all": lambda t: t.sparse.bincount(_int_sparse(t), minlength=2),
    "bincount_int64": lambda t: t.sparse.bincount(t.constant([3, 0, 3, 1], t.int64)),
    "cross": lambda t: t.sparse.cross(
        [
            t.SparseTensor([[0, 0], [1, 0], [1, 1]], ["a", "b", "c"], [2, 2]),
            t.constant([["x", "y"], ["z", "w"]]),
        ]
    ),
    "cross_ints_separator": lambda t: t.sparse.cross(
        [
            t.SparseTensor([[0, 0], [1, 0], [1, 1]], t.constant([1, 2, 3], t.int64), [2, 2]),
            t.constant([["x"], ["z"]]),
        ],
        separator="#",
    ),
    "cross_empty_row": lambda t: t.sparse.cross(
        [
            t.SparseTensor([[1, 0]], ["b"], [3, 1]),
            t.SparseTensor([[0, 0], [1, 0], [1, 1], [2, 0]], ["p", "q", "r", "s"], [3, 2]),
            t.constant([["u"], ["v"], ["w"]]),
        ]
    ),
    "cross_hashed": lambda t: t.sparse.cross_hashed(
        [
            t.SparseTensor([[0, 0], [1, 0], [1, 1]], ["a", "b", "c"], [2, 2]),
            t.constant([["x", "y"], ["z", "w"]]),
        ]
    ),
    "cross_hashed_buckets_key": lambda t: t.sparse.cross_hashed(
        [t.SparseTensor([[0, 0], [1, 0], [1, 1]], ["", "b", "é"], [2, 2]), t.constant([[3], [-4]], t.int64)],
        num_buckets=100,
        hash_key=7,
    ),
    "cross_hashed_ints": lambda t: t.sparse.cross_hashed(
        [t.constant([[5, 9], [0, 2**40]], t.int64)], num_buckets=1000
    ),
    "cross_hashed_long_strings": lambda t: t.sparse.cross_hashed(
        [
            t.constant([["x" * 17, "y" * 40], ["z" * 70, "w" * 3]]),
            t.SparseTensor([[1, 0]], ["q" * 33], [2, 1]),
        ]
    ),
}


def _fetch(lib, build):
    with lib.Graph().as_default(), lib.Session() as sess:
        return sess.run(build(lib))


def _assert_same(ours, theirs, name):
    if isinstance(theirs, tuple):
        for a, b in zip(ours, theirs, strict=True):
            _assert_same(a, b, name)
        return
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.shape == theirs.shape, name
    if theirs.dtype.kind == "O":
        assert ours.tolist() == theirs.tolist(), name
        return
    assert ours.dtype == theirs.dtype, name
    np.testing.assert_array_equal(ours, theirs, err_msg=name)


def _static(out):
    parts = [out.indices, out.values, out.dense_shape] if hasattr(out, "dense_shape") else [out]
    return [p.shape.as_list() if p.shape.ndims is not None else None for p in [*parts, out]]


def _all_values(lib):
    """Every parity case built in one graph (a name scope each) and run in one step."""
    with lib.Graph().as_default(), lib.Session() as sess:
        fetches = {}
        for name, build in PARITY.items():
            with lib.name_scope(name):
                fetches[name] = build(lib)
        values = sess.run(fetches)
        return {name: (values[name], _static(fetch)) for name, fetch in fetches.items()}


@pytest.fixture(scope="module")
def both(tf1):
    return _all_values(tf), _all_values(tf1)


@pytest.mark.parametrize("name", sorted(PARITY))
def test_values_match_tensorflow(both, name):
    _assert_same(both[0][name][0], both[1][name][0], name)


@pytest.mark.parametrize("name", sorted(PARITY))
def test_static_shapes_match_tensorflow(both, name):
    assert both[0][name][1] == both[1][name][1], name


@pytest.mark.parametrize("path", ["sparse_placeholder", "sparse.placeholder"])
def test_sparse_placeholder_is_fed_a_sparse_tensor_value(tf1, path):
    value = tf.SparseTensorValue([[0, 1], [2, 0]], [1.5, -2.0], [3, 4])

    def run(t):
        with t.Graph().as_default(), t.Session() as sess:
            if path == "sparse_placeholder":
                sp = t.sparse_placeholder(t.float32, shape=[None, 4], name="sp")
            else:
                sp = t.sparse.placeholder(t.float32, name="sp")
            static = sp.shape.as_list() if sp.shape.ndims is not None else None
            dense = t.sparse.to_dense(sp)
            out = sess.run([dense, sp.indices, sp.dense_shape], feed_dict={sp: value})
            return static, sp.indices.name, sp.values.name, out

    ours, theirs = run(tf), run(tf1)
    assert ours[:3] == theirs[:3]
    for a, b in zip(ours[3], theirs[3], strict=True):
        _assert_same(a, b, path)


def test_sparse_placeholder_dense_shape_defaults_to_the_given_shape(tf1):
    def run(t):
        with t.Graph().as_default(), t.Session() as sess:
            sp = t.sparse_placeholder(t.int32, shape=[2, 5])
            return sess.run(sp.dense_shape), sp.shape.as_list()

    ours, theirs = run(tf), run(tf1)
    _assert_same(ours[0], theirs[0], "dense_shape")
    assert ours[1] == theirs[1]


def test_sparse_conditional_accumulator_is_at_tf_sparse(tf1):
    def run(t):
        with t.Graph().as_default(), t.Session() as sess:
            acc = t.sparse.SparseConditionalAccumulator(t.float32, shape=[4, 2])
            apply1 = acc.apply_grad([0, 2], [[1.0, 2.0], [3.0, 4.0]], [4, 2])
            apply2 = acc.apply_grad([2], [[5.0, 6.0]], [4, 2])
            sess.run([apply1])
            sess.run([apply2])
            return sess.run(acc.take_grad(2))

    _assert_same(tuple(run(tf)), tuple(run(tf1)), "take_grad")


@pytest.mark.parametrize(
    ("build", "error", "message"),
    [
        (lambda t: t.sparse.bincount([1, 2], axis=1), ValueError, "Only 0 and -1 are currently supported"),
        (lambda t: t.sparse.cross(t.constant([["a"]])), TypeError, "Inputs must be a list"),
        (lambda t: t.sparse.cross([[["a"]]]), TypeError, "All inputs must be Tensor or SparseTensor"),
        (
            lambda t: t.edit_distance(t.constant([1]), _truth(t)),
            TypeError,
            "Hypothesis must be a SparseTensor",
        ),
        (lambda t: t.edit_distance(t.SparseTensor([[0, 0]], [1], [1, 1]), _truth(t)), TypeError, "int32"),
        (
            lambda t: t.sparse_merge(_ids(t), _weights(t), 5.0),
            TypeError,
            "vocab_size has to be a Tensor or Python int",
        ),
        (lambda t: t.sparse_merge([_ids(t)], _weights(t), [5, 6]), ValueError, "equal lengths"),
    ],
)
def test_bad_arguments_raise_as_tensorflow(tf1, build, error, message):
    with tf1.Graph().as_default(), pytest.raises(error, match=message):
        build(tf1)
    with tf.Graph().as_default(), pytest.raises(error, match=message):
        build(tf)


def test_bincount_of_negative_values_raises_invalid_argument(tf1):
    for lib in (tf1, tf):
        with (
            lib.Graph().as_default(),
            lib.Session() as sess,
            pytest.raises(lib.errors.InvalidArgumentError, match="Input values must all be non-negative"),
        ):
            sess.run(lib.sparse.bincount([3, -1]).values)


def test_sparse_to_dense_out_of_bounds_raises_invalid_argument(tf1):
    def build(t):
        return t.sparse_to_dense([[0], [4]], [3], [1.0, 2.0])

    with tf1.Graph().as_default(), tf1.Session() as sess, pytest.raises(tf1.errors.InvalidArgumentError):
        sess.run(build(tf1))
    with (
        tf.Graph().as_default(),
        tf.Session() as sess,
        pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[1\] = \[4\] is out of bounds"),
    ):
        sess.run(build(tf))


def test_the_graph_exports_to_tensorflow_and_gives_the_same_values(tf1):
    from nbdist.export import to_tensorflow

    with tf.Graph().as_default() as graph, tf.Session() as sess:
        strings = tf.SparseTensor([[0, 0], [1, 0], [1, 1]], ["a", "b", "c"], [2, 2])
        dense = tf.constant([["x"], ["y"]])
        fetches = [
            tf.sparse.cross([strings, dense]).values,
            tf.sparse.cross_hashed([strings, dense], num_buckets=50).values,
            tf.sparse.bincount([[1, 2, 2], [0, 5, 5]], axis=-1).values,
            tf.edit_distance(_hyp(tf), _truth(tf)),
        ]
        ours = sess.run(fetches)
    exported = to_tensorflow(graph)
    with tf1.Session(graph=exported.graph) as tf_sess:
        theirs = tf_sess.run([exported.graph.get_tensor_by_name(f.name) for f in fetches])
    for a, b in zip(ours, theirs, strict=True):
        _assert_same(a, b, "export")
