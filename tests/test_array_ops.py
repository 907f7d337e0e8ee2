"""Array ops: forward values against numpy, static shape inference and errors."""

import numpy as np
import pytest

import nbdist as tf
from local_run import run_in_session

pytestmark = pytest.mark.usefixtures("fresh_graph")

_RNG = np.random.default_rng(11)
X = _RNG.standard_normal((2, 3, 4))


# -- placeholder, shape, size, rank -----------------------------------------------------------------
def test_unfed_placeholder_says_how_to_fix():
    x = tf.placeholder(tf.float32, [None, 3], name="inputs")
    with pytest.raises(
        tf.errors.InvalidArgumentError, match=r"must feed a value for placeholder tensor 'inputs'"
    ):
        run_in_session(x * 2.0)


def test_shape_size_rank_at_run_time():
    x = tf.placeholder(tf.float32, None)
    s, n, r = tf.shape(x), tf.size(x), tf.rank(x)
    assert s.dtype == tf.int32 and s.shape.ndims == 1
    assert n.shape.ndims == 0 and r.shape.ndims == 0
    out = run_in_session([s, n, r], {x: np.zeros((2, 5), np.float32)})
    np.testing.assert_array_equal(out[0], [2, 5])
    assert (out[1], out[2]) == (10, 2)


def test_shape_has_static_length_when_rank_known():
    assert tf.shape(tf.placeholder(tf.float32, [None, 3])).shape.as_list() == [2]


def test_shape_out_type_int64():
    assert run_in_session(tf.shape(tf.zeros([2]), out_type=tf.int64)).dtype == np.int64


def test_get_static_value_of_constants_and_known_shapes():
    assert tf.get_static_value(tf.shape(tf.zeros([2, 3]))).tolist() == [2, 3]
    assert tf.get_static_value(tf.shape(tf.placeholder(tf.float32, [None]))) is None


# -- reshape -------------------------------------------------------------------------------------------
def test_reshape_infers_minus_one():
    y = tf.reshape(tf.constant(X), [4, -1])
    assert y.shape.as_list() == [4, 6]
    np.testing.assert_array_equal(run_in_session(y), X.reshape(4, -1))


def test_reshape_with_unknown_input_has_partly_known_shape():
    y = tf.reshape(tf.placeholder(tf.float32, [None, 3]), [-1, 3, 1])
    assert y.shape.as_list() == [None, 3, 1]


def test_reshape_with_runtime_shape():
    x = tf.placeholder(tf.float32, [2, 3])
    y = tf.reshape(x, tf.shape(tf.zeros([3, 2])))
    assert y.shape.as_list() == [3, 2]


def test_reshape_rejects_wrong_element_count():
    with pytest.raises(
        ValueError, match=r"cannot reshape a tensor with 24 elements to shape \[5, 5\] \(25 elements\)"
    ):
        tf.reshape(tf.constant(X), [5, 5])


def test_reshape_rejects_two_unknown_dimensions():
    with pytest.raises(ValueError, match=r"at most one -1"):
        tf.reshape(tf.constant(X), [-1, -1])


def test_reshape_wrong_element_count_at_run_time():
    x = tf.placeholder(tf.float32, None)
    with pytest.raises(
        tf.errors.InvalidArgumentError, match=r"Input to reshape has shape \[7\]: cannot reshape"
    ):
        run_in_session(tf.reshape(x, [2, -1]), {x: np.zeros(7, np.float32)})


# -- transpose -----------------------------------------------------------------------------------------
def test_transpose_with_perm():
    y = tf.transpose(tf.constant(X), [2, 0, 1])
    assert y.shape.as_list() == [4, 2, 3]
    np.testing.assert_array_equal(run_in_session(y), X.transpose(2, 0, 1))


def test_transpose_default_reverses_axes_even_of_unknown_rank():
    x = tf.placeholder(tf.float64, None)
    np.testing.assert_array_equal(run_in_session(tf.transpose(x), {x: X}), X.T)


def test_transpose_rejects_a_non_permutation():
    with pytest.raises(ValueError, match=r"perm \[0, 0, 1\] is not a permutation"):
        tf.transpose(tf.constant(X), [0, 0, 1])


def test_invert_permutation():
    np.testing.assert_array_equal(run_in_session(tf.invert_permutation([2, 0, 1])), [1, 2, 0])


# -- concat, stack, unstack ----------------------------------------------------------------------------
def test_concat_joins_on_an_axis():
    a, b = X[:, :1], X[:, 1:]
    y = tf.concat([tf.constant(a), tf.constant(b)], axis=1)
    assert y.shape.as_list() == [2, 3, 4]
    np.testing.assert_array_equal(run_in_session(y), X)


def test_concat_negative_axis_and_unknown_dimension():
    y = tf.concat([tf.placeholder(tf.float32, [None, 2]), tf.zeros([3, 5])], axis=-1)
    assert y.shape.as_list() == [3, 7]


def test_concat_rejects_mismatched_dimensions():
    with pytest.raises(ValueError, match=r"dimension 0 differs between values: \[2, 3\]"):
        tf.concat([tf.zeros([2, 2]), tf.zeros([3, 2])], axis=1)


def test_concat_mismatch_at_run_time_names_shapes():
    x = tf.placeholder(tf.float32, None)
    with pytest.raises(
        tf.errors.InvalidArgumentError, match=r"ConcatOp: inputs of shapes \[\[2, 2\], \[3, 2\]\]"
    ):
        run_in_session(tf.concat([x, tf.zeros([3, 2])], 1), {x: np.zeros((2, 2), np.float32)})


def test_stack_and_unstack_round_trip():
    parts = tf.unstack(tf.constant(X), axis=1)
    assert len(parts) == 3 and parts[0].shape.as_list() == [2, 4]
    y = tf.stack(parts, axis=1)
    assert y.shape.as_list() == [2, 3, 4]
    np.testing.assert_array_equal(run_in_session(y), X)


def test_unstack_needs_num_for_unknown_dimension():
    with pytest.raises(ValueError, match=r"cannot infer num from shape \(\?, 3\); pass num="):
        tf.unstack(tf.placeholder(tf.float32, [None, 3]))


# -- slice, pad ----------------------------------------------------------------------------------------
def test_slice_with_minus_one_size():
    y = tf.slice(tf.constant(X), [1, 1, 0], [1, -1, 2])
    assert y.shape.as_list() == [1, 2, 2]
    np.testing.assert_array_equal(run_in_session(y), X[1:2, 1:, 0:2])


def test_slice_out_of_bounds_at_run_time():
    with pytest.raises(
        tf.errors.InvalidArgumentError, match=r"Slice: begin \[1, 0\] \+ size \[2, 1\] is out of bounds"
    ):
        run_in_session(tf.slice(tf.zeros([2, 2]), [1, 0], [2, 1]))


def test_pad_with_constant_values():
    y = tf.pad(tf.constant([[1, 2]]), [[1, 0], [0, 2]], constant_values=9)
    assert y.shape.as_list() == [2, 4]
    np.testing.assert_array_equal(run_in_session(y), [[9, 9, 9, 9], [1, 2, 9, 9]])


def test_pad_rejects_other_modes():
    with pytest.raises(ValueError, match=r"mode 'REFLECT' is not supported by nbdist"):
        tf.pad(tf.zeros([2]), [[1, 1]], mode="REFLECT")


def test_pad_rejects_paddings_of_wrong_shape():
    with pytest.raises(ValueError, match=r"paddings must have shape \[2, 2\]"):
        tf.pad(tf.zeros([2, 2]), [[1, 1]])


# -- fill, zeros, ones ---------------------------------------------------------------------------------
def test_zeros_and_ones():
    z, o = tf.zeros([2, 3], tf.int64), tf.ones([2])
    assert z.dtype == tf.int64 and o.dtype == tf.float32
    np.testing.assert_array_equal(run_in_session(z), np.zeros((2, 3)))
    np.testing.assert_array_equal(run_in_session(o), np.ones(2))


def test_large_zeros_use_fill_not_a_big_constant():
    z = tf.zeros([100, 100])
    assert z.op.type == "Fill"
    assert z.shape.as_list() == [100, 100]
    assert run_in_session(z).sum() == 0


def test_zeros_of_a_runtime_shape():
    x = tf.placeholder(tf.float32, [None, 2])
    z = tf.ones(tf.shape(x))
    assert z.shape.as_list() == [None, None]
    np.testing.assert_array_equal(run_in_session(z, {x: np.zeros((3, 2))}), np.ones((3, 2)))


def test_zeros_like_and_ones_like_keep_dtype():
    x = tf.constant([1, 2], tf.int32)
    assert run_in_session(tf.zeros_like(x)).dtype == np.int32
    np.testing.assert_array_equal(run_in_session(tf.ones_like(x)), [1, 1])


def test_fill():
    y = tf.fill([2, 2], 7.5)
    assert y.shape.as_list() == [2, 2]
    np.testing.assert_array_equal(run_in_session(y), np.full((2, 2), 7.5))


def test_fill_rejects_non_scalar_value():
    with pytest.raises(ValueError, match=r"tf.fill: value must be a scalar, got shape \(2,\)"):
        tf.fill([2], [1.0, 2.0])


def test_zeros_rejects_partly_unknown_shape():
    with pytest.raises(ValueError, match=r"must be fully defined"):
        tf.zeros([None, 2])


# -- expand_dims, squeeze ------------------------------------------------------------------------------
def test_expand_dims_negative_axis():
    y = tf.expand_dims(tf.constant(X), -1)
    assert y.shape.as_list() == [2, 3, 4, 1]
    assert run_in_session(y).shape == (2, 3, 4, 1)


def test_expand_dims_tf1_dim_alias():
    assert tf.expand_dims(tf.zeros([2]), dim=0).shape.as_list() == [1, 2]


def test_expand_dims_rejects_axis_out_of_range():
    with pytest.raises(ValueError, match=r"axis 3 is out of range for a tensor of rank 2"):
        tf.expand_dims(tf.zeros([2, 2]), 3)


@pytest.mark.parametrize(
    ("axis", "shape"), [(0, (1, 2, 3)), (2, (2, 3, 1)), (-1, (2, 3, 1)), (-3, (1, 2, 3))]
)
def test_expand_dims_with_an_axis_known_at_run_time(axis, shape):
    x, a = tf.placeholder(tf.float32, [2, 3]), tf.placeholder(tf.int32, [])
    value = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = run_in_session(tf.expand_dims(x, a), {x: value, a: axis})
    assert out.shape == shape
    np.testing.assert_array_equal(out, np.expand_dims(value, axis))


def test_expand_dims_rejects_an_axis_out_of_range_at_run_time():
    x, a = tf.placeholder(tf.float32, [2]), tf.placeholder(tf.int32, [])
    with pytest.raises(
        tf.errors.InvalidArgumentError, match=r"ExpandDims: axis -3 is out of range .* rank 1"
    ):
        run_in_session(tf.expand_dims(x, a), {x: np.zeros(2, np.float32), a: -3})


def test_squeeze_all_and_selected_axes():
    x = tf.zeros([1, 2, 1, 3])
    assert tf.squeeze(x).shape.as_list() == [2, 3]
    assert tf.squeeze(x, axis=[2]).shape.as_list() == [1, 2, 3]
    assert tf.squeeze(x, squeeze_dims=[0]).shape.as_list() == [2, 1, 3]
    assert run_in_session(tf.squeeze(x, [0, 2])).shape == (2, 3)


def test_squeeze_rejects_dimension_not_one():
    with pytest.raises(ValueError, match=r"cannot squeeze dim\[1\] .* expected a size of 1, got 2"):
        tf.squeeze(tf.zeros([1, 2]), axis=1)


def test_squeeze_dimension_not_one_at_run_time():
    x = tf.placeholder(tf.float32, [None, 1])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"cannot squeeze dim\[0\] of shape \[2, 1\]"):
        run_in_session(tf.squeeze(x, 0), {x: np.zeros((2, 1))})


# -- indexing (StridedSlice) and auto-packing of lists of tensors -------------------------------------
A24 = np.arange(24.0).reshape(2, 3, 4)
INDEXES = {
    "int": lambda x: x[1],
    "negative": lambda x: x[-1, -1, -1],
    "slice": lambda x: x[:, 1:],
    "step": lambda x: x[..., ::2],
    "reverse": lambda x: x[:, ::-1, 1],
    "newaxis": lambda x: x[:, None, 0],
    "clamped": lambda x: x[:, 1:100, -100:2],
    "ellipsis": lambda x: x[..., 0],
}


@pytest.mark.parametrize("name", sorted(INDEXES))
def test_indexing_matches_numpy(name):
    y = INDEXES[name](tf.constant(A24))
    with tf.Session() as sess:
        value = sess.run(y)
    expected = INDEXES[name](A24)
    np.testing.assert_array_equal(value, expected)
    assert y.shape.as_list() == list(np.shape(expected))


def test_indexing_with_a_tensor_and_of_a_variable():
    i = tf.placeholder(tf.int32, [])
    v = tf.Variable(A24, name="v")
    y = v[i, :, i]
    assert y.shape.as_list() == [3] and y.op.type == "StridedSlice"
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(y, {i: 1}), A24[1, :, 1])


def test_static_shape_of_a_slice_of_an_unknown_dimension_is_unknown():
    p = tf.placeholder(tf.float32, [None, 5])
    assert p[1:3].shape.as_list() == [None, 5]
    assert p[0].shape.as_list() == [5]
    assert p[:, 2:].shape.as_list() == [None, 3]


def test_an_index_out_of_range_is_an_error():
    with pytest.raises(ValueError, match=r"out of bounds"):
        tf.constant(A24)[2]
    i = tf.placeholder(tf.int32, [])
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError, match="out of bounds"):
        sess.run(tf.constant(A24)[i], {i: 5})


def test_only_integer_indices():
    with pytest.raises(TypeError, match=r"are valid indices, got 1\.5"):
        tf.constant(A24)[1.5]


def test_a_list_of_tensors_is_packed():
    a, b = tf.constant([1.0, 2.0]), tf.constant([3.0, 4.0])
    total = tf.reduce_sum([(a, b), (b, 5.0 * a)], axis=0)
    assert total.op.inputs[0].op.type == "Pack"
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(total), [[4.0, 6.0], [8.0, 14.0]])
        np.testing.assert_array_equal(sess.run(tf.convert_to_tensor([a, [0.0, 1.0]])), [[1, 2], [0, 1]])


def test_packing_tensors_of_different_dtypes_is_refused():
    with pytest.raises(TypeError, match="Cannot convert a list containing a tensor of dtype int32"):
        tf.convert_to_tensor([tf.constant(1.0), tf.constant(1)])


@pytest.mark.tf
def test_indexing_and_packing_match_tensorflow(tf1_graph_mode):
    def program(t):
        x = t.constant(A24)
        i = t.constant(1)
        outs = [f(x) for f in INDEXES.values()] + [x[i, 1:, i], t.reduce_sum([x[0], x[1]], axis=0)]
        grad = t.gradients(t.reduce_sum(x[1, ::2] * x[0, 1:]), [x])[0]
        return [o.shape.as_list() for o in outs], [*outs, grad]

    with tf1_graph_mode.Graph().as_default():
        shapes_tf, fetches = program(tf1_graph_mode)
        with tf1_graph_mode.Session() as sess:
            theirs = sess.run(fetches)
    shapes, fetches = program(tf)
    with tf.Session() as sess:
        ours = sess.run(fetches)
    assert shapes == shapes_tf
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    ("shape", "splits", "axis"),
    [((6, 4), 3, 0), ((6, 4), [1, 3], 1), ((6, 4), [2, -1, 1], 0), ((2, 6, 3), 2, -2), ((4,), [4], 0)],
)
def test_split_matches_tensorflow(tf1, shape, splits, axis):
    value = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    results = []
    for t in (tf, tf1):
        with t.Graph().as_default(), t.Session() as sess:
            x = t.constant(value)
            parts = t.split(x, splits, axis=axis)
            weights = [t.constant(np.full(p.shape.as_list(), k + 1.0)) for k, p in enumerate(parts)]
            loss = t.add_n([t.reduce_sum(p * w) for p, w in zip(parts, weights)])
            results.append(sess.run([parts, t.gradients(loss, x)[0]]))
    (ours, our_grad), (theirs, their_grad) = results
    assert [p.shape for p in ours] == [p.shape for p in theirs]
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(our_grad, their_grad)


def test_split_into_unequal_parts_says_so(graph):
    with pytest.raises(ValueError, match="does not split into 4 equal parts"):
        tf.split(tf.zeros([6, 2]), 4)
