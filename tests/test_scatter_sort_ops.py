"""N-d indexing, scatters, sorting and searching, and TF 1.x's division names
(ops/scatter_nd_ops.py, ops/sort_search_ops.py, ops/state_scatter_ops.py, ops/int_div_ops.py)
against real TensorFlow: each name spelled as a program spells it (``t.gather_nd``), run in both
libraries on the same inputs, values, dtypes and shapes compared; errors as TF's.
"""

import re

import numpy as np
import pytest

import nbdist as tf

_RNG = np.random.default_rng(32)
X = _RNG.standard_normal((3, 4))
CUBE = _RNG.standard_normal((2, 3, 4))
INTS = _RNG.integers(-9, 10, (3, 5)).astype(np.int32)
TIES = np.array([[3.0, 1.0, 3.0, -2.0, 1.0], [0.0, 0.0, -1.0, 5.0, 5.0]])
NUM = np.array([-7, 7, -8, 8, 0, 5], np.int32)
DEN = np.array([2, -2, 3, -3, 4, 5], np.int32)

PARITY = {
    # gather_nd / scatter_nd / tensor_scatter_*
    "gather_nd_elements": lambda t: t.gather_nd(t.constant(X), [[0, 1], [2, 3], [1, 0]]),
    "gather_nd_rows": lambda t: t.gather_nd(t.constant(CUBE), [[[1], [0]], [[0], [1]]]),
    "gather_nd_whole": lambda t: t.gather_nd(t.constant(INTS), np.zeros((2, 0), np.int32)),
    "gather_nd_empty": lambda t: t.gather_nd(t.constant(X), np.zeros((0, 2), np.int64)),
    "gather_nd_batch_dims": lambda t: t.gather_nd(t.constant(CUBE), [[[1], [0]], [[2], [2]]], batch_dims=1),
    "gather_nd_batch_dims_2": lambda t: t.gather_nd(
        t.constant(CUBE), [[[1], [0], [3]], [[2], [2], [0]]], batch_dims=2
    ),
    "gather_nd_batch_dims_full": lambda t: t.gather_nd(t.constant(CUBE), [[1, 0], [2, 3]], batch_dims=1),
    "gather_nd_ignore": lambda t: t.gather_nd(
        t.constant(X), [[0, 4], [1, 1], [-1, 0]], bad_indices_policy="IGNORE"
    ),
    "scatter_nd_ignore": lambda t: t.scatter_nd([[5], [1]], [1.0, 2.0], [4], bad_indices_policy="IGNORE"),
    "tensor_scatter_nd_add_ignore": lambda t: t.tensor_scatter_nd_add(
        t.ones([3]), [[5], [1]], [1.0, 2.0], bad_indices_policy="IGNORE"
    ),
    "gather_axis1": lambda t: t.gather(t.constant(CUBE), [[2, 0], [1, 1]], axis=1),
    "gather_axis_last": lambda t: t.gather(t.constant(INTS), [4, 0, 4], axis=-1),
    "gather_axis_tensor": lambda t: t.gather(t.constant(CUBE), t.constant(3, t.int64), axis=t.constant(2)),
    "gather_axis0_none": lambda t: t.gather(t.constant(X), [2, 0], axis=None),
    "scatter_nd": lambda t: t.scatter_nd([[1], [3], [1]], t.constant([1.0, 2.0, 3.0]), [5]),
    "scatter_nd_rows": lambda t: t.scatter_nd([[0, 2], [1, 0]], t.constant(X[:2]), [2, 3, 4]),
    "scatter_nd_int": lambda t: t.scatter_nd(
        t.constant([[2], [0]], t.int64), [7, 8], t.constant([4], t.int64)
    ),
    "tensor_scatter_nd_update": lambda t: t.tensor_scatter_nd_update(
        t.constant(X), [[0, 1], [2, 2]], [9.0, 8.0]
    ),
    "tensor_scatter_nd_add": lambda t: t.tensor_scatter_nd_add(t.constant(X), [[1], [1]], t.constant(X[:2])),
    "tensor_scatter_nd_sub": lambda t: t.tensor_scatter_nd_sub(t.constant(INTS), [[2, 4]], [5]),
    "tensor_scatter_nd_max": lambda t: t.tensor_scatter_nd_max(t.constant(X), [[0, 0], [0, 0]], [0.5, -9.0]),
    "tensor_scatter_nd_min": lambda t: t.tensor_scatter_nd_min(t.constant(INTS), [[1], [2]], INTS[:2]),
    "tensor_scatter_update": lambda t: t.tensor_scatter_update(t.constant(INTS), [[0]], INTS[2:]),
    "tensor_scatter_add": lambda t: t.tensor_scatter_add(t.constant(X), [[2, 0]], [1.0]),
    "tensor_scatter_sub": lambda t: t.tensor_scatter_sub(t.constant(X), [[2], [0]], t.constant(X[1:])),
    "batch_gather": lambda t: t.batch_gather(
        t.constant(CUBE), [[[2, 0], [1, 1], [0, 2]], [[1, 2], [2, 2], [0, 0]]]
    ),
    "batch_gather_2d": lambda t: t.batch_gather(t.constant(X), [[3, 0], [1, 1], [2, 0]]),
    # sort / argsort / searchsorted
    "sort": lambda t: t.sort(t.constant(TIES)),
    "sort_desc_axis0": lambda t: t.sort(t.constant(CUBE), axis=0, direction="DESCENDING"),
    "sort_int": lambda t: t.sort(t.constant(INTS), axis=-2),
    "sort_uint8": lambda t: t.sort(t.constant([[3, 255, 0, 7]], t.uint8)),
    "argsort": lambda t: t.argsort(t.constant(TIES)),
    "argsort_desc": lambda t: t.argsort(t.constant(TIES), direction="DESCENDING", stable=True),
    "argsort_axis1": lambda t: t.argsort(t.constant(CUBE), axis=1),
    "searchsorted": lambda t: t.searchsorted([1.0, 3.0, 3.0, 5.0], [3.0, 0.0, 6.0, 4.0]),
    "searchsorted_right": lambda t: t.searchsorted([[1, 3, 3], [0, 2, 9]], [[3, 4], [9, 0]], side="right"),
    "searchsorted_int64": lambda t: t.searchsorted([1, 2], [[2]], out_type=t.int64),
    # where_v2 / boolean_mask
    "where_v2_broadcast": lambda t: t.where_v2([[True], [False], [True]], t.constant(X), -1.0),
    "where_v2_indices": lambda t: t.where_v2(t.constant(X) > 0),
    "where_v2_numeric": lambda t: t.where_v2(t.constant(INTS)),
    "where_indices": lambda t: t.where(t.constant(CUBE) > 0.5),
    "where_indices_empty": lambda t: t.where(t.zeros([2, 0], t.bool)),
    "boolean_mask": lambda t: t.boolean_mask(t.constant(X), [True, False, True]),
    "boolean_mask_2d": lambda t: t.boolean_mask(t.constant(CUBE), CUBE[:, :, 0] > 0),
    "boolean_mask_axis": lambda t: t.boolean_mask(t.constant(CUBE), [False, True, False, True], axis=2),
    "boolean_mask_none": lambda t: t.boolean_mask(t.constant(INTS), [False, False, False]),
    # unique_with_counts / setdiff1d / histograms / arg_max
    "unique_with_counts": lambda t: t.unique_with_counts([3, 1, 3, 2, 1, 3]),
    "unique_with_counts_int64": lambda t: t.unique_with_counts([0.5, 0.5], out_idx=t.int64),
    "setdiff1d": lambda t: t.setdiff1d([1, 2, 3, 4, 2], [2, 5]),
    "setdiff1d_int64": lambda t: t.setdiff1d([4.0, 1.0], [], index_dtype=t.int64),
    "histogram_fixed_width": lambda t: t.histogram_fixed_width(t.constant(X), [-1.0, 1.0], nbins=5),
    "histogram_fixed_width_edges": lambda t: t.histogram_fixed_width(
        [0.0, 1.0, 5.0, -3.0, 10.0], [0.0, 10.0], 4
    ),
    "histogram_fixed_width_bins": lambda t: t.histogram_fixed_width_bins(
        t.constant(X, t.float32), [-1.0, 1.0], nbins=5
    ),
    "arg_max": lambda t: t.arg_max(t.constant(X), 1),
    "arg_min": lambda t: t.arg_min(t.constant(INTS), 0, t.int32),
    # division (and Python ints beyond int32: int64, as TF infers them)
    "constant_int64": lambda t: t.floor_div(t.constant([[5, -(2**40)], [0, 2**40]]), 3),
    "div_int": lambda t: t.div(NUM, DEN),
    "div_float": lambda t: t.div(t.constant(X), 2.0),
    "floor_div": lambda t: t.floor_div(NUM, DEN),
    "realdiv": lambda t: t.realdiv(t.constant(X), t.constant(X[::-1])),
    "truncatediv": lambda t: t.truncatediv(NUM, DEN),
    "truncatediv_float": lambda t: t.truncatediv(t.constant(X * 5), 2.0),
    "truncatemod": lambda t: t.truncatemod(NUM, DEN),
    "truncatemod_float": lambda t: t.truncatemod(t.constant(X * 5), -1.5),
    "clip_by_average_norm": lambda t: t.clip_by_average_norm(t.constant(X, t.float32), 0.1),
    "clip_by_average_norm_loose": lambda t: t.clip_by_average_norm(t.constant(X, t.float32), 10.0),
    "sparse_matmul": lambda t: t.sparse_matmul(
        t.constant(X, t.float32), t.constant(X, t.float32), transpose_b=True
    ),
    "sparse_matmul_hints": lambda t: t.sparse_matmul(
        t.constant(X.T, t.float32),
        t.constant(X.T, t.float32),
        transpose_a=True,
        a_is_sparse=True,
        b_is_sparse=True,
    ),
}


def _variable(t, value):
    return t.Variable(value, name="v")


VARIABLES = {
    "scatter_mul": lambda t: t.scatter_mul(_variable(t, X), [2, 0, 2], t.constant(X)),
    "scatter_div": lambda t: t.scatter_div(_variable(t, X), [1], t.constant(X[:1] + 3.0)),
    "scatter_div_int": lambda t: t.scatter_div(_variable(t, INTS), [0, 2], np.stack([DEN[:5], DEN[:5] + 7])),
    "scatter_min": lambda t: t.scatter_min(_variable(t, INTS), [1, 1], INTS[:2]),
    "scatter_max": lambda t: t.scatter_max(_variable(t, X), [0, 2], t.constant(X[1:])),
    "scatter_nd_update": lambda t: t.scatter_nd_update(_variable(t, X), [[0, 1], [2, 3]], [7.0, 8.0]),
    "scatter_nd_add": lambda t: t.scatter_nd_add(
        _variable(t, CUBE), [[1, 2], [1, 2]], t.constant(CUBE[0, :2])
    ),
    "scatter_nd_sub": lambda t: t.scatter_nd_sub(_variable(t, INTS), [[2]], INTS[:1]),
    "batch_scatter_update": lambda t: t.batch_scatter_update(
        _variable(t, X), [[1], [0], [3]], [[1.0], [2.0], [3.0]]
    ),
    "batch_scatter_update_3d": lambda t: t.batch_scatter_update(
        _variable(t, CUBE), [[[0, 2], [1, 3], [2, 0]], [[3, 3], [0, 1], [1, 2]]], t.constant(CUBE[:, :, :2])
    ),
    "method_scatter_max": lambda t: _variable(t, X).scatter_max(
        t.IndexedSlices(t.constant(X[:1]), t.constant([2]))
    ),
    "method_scatter_min": lambda t: _variable(t, INTS).scatter_min(
        t.IndexedSlices(t.constant(INTS[1:]), t.constant([0, 0]))
    ),
    "method_scatter_mul": lambda t: _variable(t, X).scatter_mul(
        t.IndexedSlices(t.constant(X[:2]), t.constant([1, 1]))
    ),
    "method_scatter_div": lambda t: _variable(t, X).scatter_div(
        t.IndexedSlices(t.constant(X[:1] + 4), t.constant([0]))
    ),
    "method_batch_scatter_update": lambda t: _variable(t, X).batch_scatter_update(
        t.IndexedSlices(t.constant([[1.0], [2.0], [3.0]], t.float64), t.constant([[1], [0], [3]]))
    ),
    "method_scatter_nd_add": lambda t: _variable(t, X).scatter_nd_add([[0, 1], [0, 1]], [1.0, 2.0]),
    "method_scatter_nd_sub": lambda t: _variable(t, CUBE).scatter_nd_sub([[1, 0]], t.constant(CUBE[:1, 0])),
    "method_scatter_nd_update": lambda t: _variable(t, INTS).scatter_nd_update([[2]], INTS[:1]),
}


def _value(lib, build):
    with lib.Graph().as_default(), lib.Session() as sess:
        fetch = build(lib)
        sess.run(lib.global_variables_initializer())
        return sess.run(fetch), _static(fetch)


def _static(fetch):
    if isinstance(fetch, (tuple, list)):
        return [_static(f) for f in fetch]
    return fetch.dtype.name.removesuffix(
        "_ref"
    ), fetch.shape.as_list() if fetch.shape.ndims is not None else None


def _assert_same(ours, theirs, name):
    if isinstance(theirs, (tuple, list)):
        for a, b in zip(ours, theirs, strict=True):
            _assert_same(a, b, name)
        return
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype, name
    assert ours.shape == theirs.shape, name
    np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-9, err_msg=name)


def _all_values(lib):
    """Every parity case built in one graph (a name scope each) and run in one step."""
    with lib.Graph().as_default(), lib.Session() as sess:
        fetches = {}
        for name, build in {**PARITY, **VARIABLES}.items():
            with lib.name_scope(name):
                fetches[name] = build(lib)
        sess.run(lib.global_variables_initializer())
        values = sess.run(fetches)
        return {name: (values[name], _static(fetch)) for name, fetch in fetches.items()}


@pytest.fixture(scope="module")
def both(tf1):
    return _all_values(tf), _all_values(tf1)


@pytest.mark.parametrize("name", sorted({**PARITY, **VARIABLES}))
def test_values_dtypes_and_static_shapes_match_tensorflow(both, name):
    (ours, our_static), (theirs, their_static) = both[0][name], both[1][name]
    _assert_same(ours, theirs, name)
    assert our_static == their_static, name


def _run_error(lib, build):
    with (
        lib.Graph().as_default(),
        lib.Session() as sess,
        pytest.raises(lib.errors.InvalidArgumentError) as info,
    ):
        fetch = build(lib)
        sess.run(lib.global_variables_initializer())
        sess.run(fetch)
    return str(info.value)


RUN_ERRORS = {
    "gather_nd": (
        lambda t: t.gather_nd([[1, 2], [3, 4]], [[0, 2]]),
        r"indices\[0\] = \[0, 2\] does not index into param shape \[2,2\]",
    ),
    "gather_nd_negative": (
        lambda t: t.gather_nd([[1, 2], [3, 4]], [[[0, -1]]]),
        r"indices\[0,0\] = \[0, -1\] does not",
    ),
    "scatter_nd": (
        lambda t: t.scatter_nd([[5]], [1.0], [4]),
        r"indices\[0\] = \[5\] does not index into shape \[4\]",
    ),
    "tensor_scatter_nd_add": (
        lambda t: t.tensor_scatter_nd_add(t.zeros([4, 2]), [[1], [4]], t.ones([2, 2])),
        r"indices\[1\] = \[4\] does not index into shape \[4,2\]",
    ),
    "gather_axis1": (
        lambda t: t.gather([[1, 2], [3, 4]], [[0, 5]], axis=1),
        r"indices\[0,1\] = 5 is not in \[0, 2\)",
    ),
    "searchsorted": (
        lambda t: t.searchsorted([[1, 2], [3, 4]], [[1]]),
        "Leading dim_size of both tensors must match",
    ),
    "histogram_fixed_width": (
        lambda t: t.histogram_fixed_width([1.0], [1.0, 0.0], 3),
        r"value_range should satisfy value_range\[0\] < value_range\[1\], but got '\[1, 0\]'",
    ),
    "scatter_nd_update": (
        lambda t: t.scatter_nd_update(t.Variable([1, 2]), [[2]], [3]),
        r"indices\[0\] = \[2\] does not index into shape \[2\]",
    ),
}


@pytest.mark.parametrize("name", sorted(RUN_ERRORS))
def test_bad_values_raise_invalid_argument_as_tensorflow(tf1, name):
    build, message = RUN_ERRORS[name]
    assert re.search(message, _run_error(tf1, build))
    with (
        tf.Graph().as_default(),
        tf.Session() as sess,
        pytest.raises(tf.errors.InvalidArgumentError, match=message),
    ):
        fetch = build(tf)
        sess.run(tf.global_variables_initializer())
        sess.run(fetch)


def test_scatter_rows_out_of_range_names_the_variable_and_index():
    with tf.Graph().as_default(), tf.Session() as sess:
        v = tf.Variable([1.0, 2.0], name="w")
        sess.run(v.initializer)
        with pytest.raises(
            tf.errors.InvalidArgumentError, match=r"ScatterMul on w: indices\[1\] = 2 is not in"
        ):
            sess.run(tf.scatter_mul(v, [0, 2], [1.0, 1.0]))


def test_variable_row_methods_take_indexed_slices_only(tf1):
    for lib in (tf1, tf):
        with lib.Graph().as_default(), pytest.raises(TypeError, match="sparse_delta is not IndexedSlices"):
            lib.Variable([1.0, 2.0]).scatter_max([[0], [3.0]])


@pytest.mark.parametrize("op", ["truncatediv", "truncatemod", "floor_div", "div", "floordiv", "floormod"])
def test_integer_division_by_zero_raises_as_floor_div_does_in_tensorflow(tf1, op):
    with tf1.Graph().as_default(), tf1.Session() as sess, pytest.raises(tf1.errors.OpError):
        sess.run(getattr(tf1, op)([7, 1], [2, 0]))
    with (
        tf.Graph().as_default(),
        tf.Session() as sess,
        pytest.raises(tf.errors.InvalidArgumentError, match="Integer division by zero"),
    ):
        sess.run(getattr(tf, op)([7, 1], [2, 0]))


@pytest.mark.parametrize(
    ("build", "error", "message"),
    [
        (lambda t: t.sort([3, 1], direction="DOWN"), ValueError, "should be one of ASCENDING, DESCENDING"),
        (
            lambda t: t.argsort([3, 1], axis=t.placeholder(t.int32, [])),
            ValueError,
            "must be a constant scalar",
        ),
        (lambda t: t.searchsorted([1, 2], [1], side="middle"), ValueError, "either 'right' or 'left'"),
        (lambda t: t.where_v2([True], [1]), ValueError, "x and y must both be non-None or both be None"),
        (lambda t: t.where([True], y=[1]), ValueError, "x and y must both be non-None or both be None"),
        (lambda t: t.boolean_mask([1, 2], True), ValueError, "mask cannot be scalar"),
        (
            lambda t: t.boolean_mask([[1, 2], [3, 4], [5, 6]], [True, False]),
            ValueError,
            r"Shapes \(3,\) and \(2,\)",
        ),
        (lambda t: t.sparse_matmul([[1.0]], t.constant([[1.0]], t.float64)), TypeError, "float32"),
        (
            lambda t: t.histogram_fixed_width([1.0], [0.0, 1.0], 0),
            ValueError,
            "nbins should be a positive number",
        ),
        (lambda t: t.tensor_scatter_nd_update(t.zeros([3]), [[0]], [1.0, 2.0]), ValueError, "shape"),
    ],
)
def test_bad_arguments_raise_when_built(tf1, build, error, message):
    with tf1.Graph().as_default(), pytest.raises((ValueError, TypeError)):
        build(tf1)
    with tf.Graph().as_default(), pytest.raises(error, match=message):
        build(tf)


def test_boolean_mask_of_a_tensor_of_unknown_rank_matches_tensorflow(tf1):
    def run(t):
        with t.Graph().as_default(), t.Session() as sess:
            x = t.placeholder(t.float64)
            out = t.boolean_mask(x, [[True, False, True], [False, False, True]])
            return sess.run(out, {x: CUBE[:, :3]}), out.shape.ndims

    (ours, our_rank), (theirs, their_rank) = run(tf), run(tf1)
    _assert_same(ours, theirs, "boolean_mask")
    assert our_rank == their_rank


def test_sort_of_a_tensor_of_unknown_rank_matches_tensorflow(tf1):
    def run(t):
        with t.Graph().as_default(), t.Session() as sess:
            x = t.placeholder(t.int32)
            return sess.run([t.sort(x, direction="DESCENDING"), t.argsort(x)], {x: INTS})

    _assert_same(run(tf), run(tf1), "sort")


def test_gradients_of_indexing_and_sorting_match_tensorflow(tf1):
    def build(t):
        x = t.constant(X)
        y = t.reduce_sum(t.gather_nd(x, [[0, 9], [2, 3]], bad_indices_policy="IGNORE") * [5.0, 7.0])
        y += t.reduce_sum(t.gather_nd(t.reshape(x, [3, 2, 2]), [[[1], [0]]] * 3, batch_dims=1) * 0.5)
        y += t.reduce_sum(t.gather_nd(x, [[0, 1], [2, 3], [0, 1]]) * [1.0, 2.0, 3.0])
        y += t.reduce_sum(t.gather(x, [[3, 0], [3, 3]], axis=1) * [[1.0, 2.0], [3.0, 4.0]])
        y += t.reduce_sum(t.sort(x, axis=0) * X)
        y += t.reduce_sum(t.boolean_mask(x, [True, False, True]) ** 2)
        y += t.reduce_sum(t.where_v2(x > 0, x, [[0.5], [1.0], [2.0]]) * X)
        y += t.reduce_sum(t.tensor_scatter_nd_max(x, [[1, 1], [0, 0]], [0.3, 5.0]) * X)
        return t.gradients(y, x)[0]

    _assert_same(_value(tf, build)[0], _value(tf1, build)[0], "gradient")


def test_the_graph_exports_to_tensorflow_and_gives_the_same_values(tf1):
    from nbdist.export import to_tensorflow

    with tf.Graph().as_default() as graph, tf.Session() as sess:
        v = tf.Variable(X, name="v")
        x = tf.constant(CUBE)
        fetches = [
            tf.gather_nd(x, [[[1], [0]], [[2], [2]]], batch_dims=1),
            tf.tensor_scatter_nd_max(x, [[0, 1]], [np.full(4, 0.5)]),
            tf.where(x > 0.5),
            tf.searchsorted(tf.sort(x), x),
            tf.truncatemod(NUM, DEN),
            tf.gradients(tf.reduce_sum(tf.where_v2(x > 0, x, 0.0) * CUBE), x)[0],
        ]
        update = tf.scatter_nd_add(v, [[0, 1], [2, 3]], [1.0, 2.0])
        sess.run(v.initializer)
        exported = to_tensorflow(graph, session=sess)  # (the variable's value before the update)
        ours = sess.run([*fetches, update])
    with tf1.Session(graph=exported.graph) as tf_sess:
        exported.initialize(tf_sess)
        theirs = tf_sess.run([exported.graph.get_tensor_by_name(f.name) for f in [*fetches, update]])
    for a, b in zip(ours, theirs, strict=True):
        _assert_same(a, b, "export")
