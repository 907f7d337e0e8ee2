"""parallel_stack, shape_n, identity_n, bitcast, saturate_cast, ensure_shape, unravel_index,
guarantee_const, newaxis, random_crop at tf.* (nbdist/ops/array_extra_ops.py) and Dimension,
dimension_value, dimension_at_index (nbdist/graph/dimension.py) against real TensorFlow: each
call spelled as a program spells it (``t.bitcast``), run in both libraries on the same inputs."""

import numpy as np
import pytest

import nbdist as tf

_RNG = np.random.default_rng(32)
X = _RNG.standard_normal((2, 3))
BIG = np.array([300.0, -5.0, 1e10, -1e10, np.inf, -np.inf, 2.5, 254.9], np.float32)

CASES = {
    "parallel_stack": lambda t: (
        t.parallel_stack([t.constant(X[0]), t.constant(X[1])]),
        t.parallel_stack([[1, 2], [3, 4], [5, 6]]),
        t.parallel_stack([t.constant(3.0)]),
    ),
    "shape_n": lambda t: (
        t.shape_n([t.constant(X), t.constant(1.0, t.float64), t.zeros([0, 4, 1], t.float64)]),
        t.shape_n([t.constant(X)], out_type=t.int64),
    ),
    "identity_n": lambda t: (
        t.identity_n([t.constant(X), t.constant([1, 2]), t.constant(b"s")]),
        t.identity_n([t.constant(X)]),
    ),
    "bitcast": lambda t: (
        t.bitcast(t.constant([1.0, -2.5], t.float32), t.int32),
        t.bitcast(t.constant([1.0, -2.5], t.float64), t.int32),
        t.bitcast(t.constant([[0, 0, 128, 63], [0, 0, 0, 192]], t.uint8), t.float32),
        t.bitcast(t.constant([-1, 5, -128], t.int8), t.uint8),
        t.bitcast(t.constant(7, t.int64), t.uint16),
    ),
    "saturate_cast": lambda t: (
        t.saturate_cast(t.constant(BIG), t.uint8),
        t.saturate_cast(t.constant(BIG), t.int32),
        t.saturate_cast(t.constant(BIG), t.int64),
        t.saturate_cast(t.constant(BIG), t.float16),
        t.saturate_cast(t.constant([2**40, -(2**40), 7], t.int64), t.int8),
        t.saturate_cast(t.constant([200, 5], t.uint8), t.int8),
        t.saturate_cast(t.constant([-3, 2**31 - 1], t.int32), t.float32),
        t.saturate_cast(t.constant([1e300, -3.5], t.float64), t.float32),
        t.saturate_cast(t.constant([1.5 + 2j, 300 - 1j], t.complex64), t.uint8),
        t.saturate_cast(t.constant([1e300 + 1e300j, 2 - 1j], t.complex128), t.complex64),
    ),
    "ensure_shape": lambda t: (
        t.ensure_shape(t.constant(X), [2, None]),
        t.ensure_shape(t.constant(X), t.TensorShape([None, 3])),
    ),
    "unravel_index": lambda t: (
        t.unravel_index(5, [3, 4]),
        t.unravel_index([0, 5, 11], [3, 4]),
        t.unravel_index(t.constant([7, 23], t.int64), t.constant([2, 3, 4], t.int64)),
    ),
    "guarantee_const": lambda t: t.guarantee_const(t.constant(X)),
    "newaxis": lambda t: (t.constant(X)[:, t.newaxis], t.constant(X)[t.newaxis, ..., t.newaxis]),
    "random_crop": lambda t: t.random_crop(t.constant(X), [2, 3], seed=3),
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
    assert ours.shape == theirs.shape, f"{name}: {ours.shape} != {theirs.shape}"
    assert ours.dtype == theirs.dtype, f"{name}: {ours.dtype} != {theirs.dtype}"
    if theirs.dtype.kind in "OSU":
        assert ours.tolist() == theirs.tolist(), name
    else:
        np.testing.assert_array_equal(ours, theirs, err_msg=name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_match_tensorflow(tf1, name):
    _assert_same(_value(tf, CASES[name]), _value(tf1, CASES[name]), name)


def test_random_crop_takes_a_window_of_the_value():
    value = np.arange(30.0).reshape(5, 6)
    with tf.Graph().as_default(), tf.Session() as sess:
        crops = sess.run([tf.random_crop(value, [2, 3], seed=s) for s in range(8)])
    windows = {value[i : i + 2, j : j + 3].tobytes() for i in range(4) for j in range(4)}
    assert all(c.tobytes() in windows for c in crops)
    assert len({c.tobytes() for c in crops}) > 1


def _static_shapes(lib):
    with lib.Graph().as_default():
        p = lib.placeholder(lib.float32, [None, 3])
        return [
            lib.parallel_stack([p[0], p[1]]).shape.as_list(),
            [s.shape.as_list() for s in lib.shape_n([p, lib.constant(1.0)])],
            [s.shape.as_list() for s in lib.shape_n([lib.placeholder(lib.int32)])],
            [x.shape.as_list() for x in lib.identity_n([p, lib.constant([1, 2])])],
            lib.bitcast(p, lib.uint8).shape.as_list(),
            lib.bitcast(lib.placeholder(lib.uint8, [None, 2]), lib.uint16).shape.as_list(),
            lib.bitcast(p, lib.int32).shape.as_list(),
            lib.saturate_cast(p, lib.uint8).shape.as_list(),
            lib.ensure_shape(p, [4, None]).shape.as_list(),
            lib.ensure_shape(lib.placeholder(lib.float32), [None, 2]).shape.as_list(),
            lib.unravel_index(lib.constant([1, 2, 3]), [4, 4]).shape.as_list(),
            lib.unravel_index(3, [4, 4]).shape.as_list(),
            lib.guarantee_const(p).shape.as_list(),
            lib.random_crop(p, [1, 2]).shape.as_list(),
            p[:, lib.newaxis].shape.as_list(),
        ]


def test_static_shapes_match_tensorflow(tf1):
    assert _static_shapes(tf) == _static_shapes(tf1)


def test_gradients_match_tensorflow(tf1):
    def build(t):
        x = t.constant(X)
        a, b = t.identity_n([x, x * 2.0])
        y = t.reduce_sum(a * b) + t.reduce_sum(t.ensure_shape(x, [2, 3]) ** 3)
        return t.gradients(y, x)[0]

    np.testing.assert_allclose(_value(tf, build), _value(tf1, build), rtol=1e-12)


BAD_RUNS = {
    "ensure_shape": (lambda t, p: t.ensure_shape(p, [2, 4]), "is not compatible with expected shape"),
    "unravel_index": (lambda t, p: t.unravel_index(t.constant([3, 12]), [3, 4]), "out of bound"),
    "unravel_index empty": (lambda t, p: t.unravel_index(t.constant([], t.int32), [2, 2]), "empty"),
}


@pytest.mark.parametrize("name", sorted(BAD_RUNS))
def test_bad_input_at_run_time_raises_invalid_argument_as_tensorflow(tf1, name):
    build, match = BAD_RUNS[name]
    for lib in (tf, tf1):
        with lib.Graph().as_default(), lib.Session() as sess:
            p = lib.placeholder(lib.float32)
            with pytest.raises(lib.errors.InvalidArgumentError, match=match):
                sess.run(build(lib, p), {p: X.astype(np.float32)})


BAD_BUILDS = {
    "ensure_shape": lambda t: t.ensure_shape(t.constant(X), [3, 2]),
    "bitcast last dimension": lambda t: t.bitcast(t.constant([1, 2, 3], t.uint8), t.int32),
}


@pytest.mark.parametrize("name", sorted(BAD_BUILDS))
def test_bad_static_input_raises_value_error_as_tensorflow(tf1, name):
    for lib in (tf, tf1):
        with lib.Graph().as_default(), pytest.raises(ValueError):
            BAD_BUILDS[name](lib)


def test_bitcast_of_bools_and_shape_n_of_mixed_dtypes_are_type_errors(tf1):
    for lib in (tf, tf1):
        with lib.Graph().as_default(), pytest.raises(TypeError):
            lib.bitcast(lib.constant([True]), lib.uint8)
        with lib.Graph().as_default(), pytest.raises(TypeError, match="don't all match"):
            lib.shape_n([lib.constant(1.0), lib.constant(1)])


def _dimensions(t):
    d3, d5, unknown = t.Dimension(3), t.Dimension(5), t.Dimension(None)
    shape = t.TensorShape([2, None])
    return [
        (d3 + d5).value,
        (d3 + 2).value,
        (4 - d3).value,
        (d5 * d3).value,
        (d5 // 2).value,
        (17 // d5).value,
        (d5 % 3).value,
        (d3 + unknown).value,
        (unknown * 2).value,
        d3 == 3,
        d3 == d5,
        d3 != 3,
        unknown == 3,
        d3 < d5,
        d3 >= 4,
        unknown < 1,
        d3.is_compatible_with(unknown),
        d3.is_compatible_with(4),
        d3.merge_with(unknown).value,
        unknown.merge_with(7).value,
        int(d5),
        bool(t.Dimension(0)),
        str(unknown),
        str(d3),
        repr(d5),
        t.Dimension(t.Dimension(4)).value,
        t.Dimension(np.int64(6)).value,
        t.dimension_value(d3),
        t.dimension_value(unknown),
        t.dimension_value(4),
        t.dimension_value(None),
        t.dimension_at_index(shape, 0).value,
        t.dimension_at_index(shape, 1).value,
        t.dimension_at_index(t.TensorShape(None), 3).value,
        t.TensorShape([d3, unknown, 2]).as_list(),
        [1, 2, 3, 4][: t.Dimension(2)],
    ]


def test_dimension_behaves_as_tensorflows(tf1):
    assert _dimensions(tf) == _dimensions(tf1)


def test_a_known_dimension_converts_to_a_tensor_as_in_tensorflow(tf1):
    def build(t):
        return (
            t.convert_to_tensor(t.Dimension(3)),
            t.convert_to_tensor(t.Dimension(4), t.int64),
            t.reshape(t.range(6), [t.Dimension(2), -1]),
        )

    _assert_same(_value(tf, build), _value(tf1, build), "Dimension")


@pytest.mark.parametrize(
    ("build", "error", "match"),
    [
        (lambda t: t.convert_to_tensor(t.Dimension(None)), ValueError, "unknown Dimension"),
        (lambda t: t.constant(t.Dimension(2)), TypeError, "Failed to convert elements"),
        (lambda t: t.constant([t.Dimension(2), 3]), TypeError, "Failed to convert elements"),
        (lambda t: t.constant(object()), TypeError, "Failed to convert elements"),
        (lambda t: t.Dimension(-1), ValueError, "must be >= 0"),
        (lambda t: t.Dimension("3"), TypeError, "must be integer or None"),
        (lambda t: t.Dimension(3).merge_with(4), ValueError, "not compatible"),
        (lambda t: t.Dimension(3) / 2, TypeError, "please use //"),
        (lambda t: 6 / t.Dimension(3), TypeError, "please use //"),
    ],
)
def test_dimension_errors_match_tensorflows(tf1, build, error, match):
    for lib in (tf, tf1):
        with lib.Graph().as_default(), pytest.raises(error, match=match):
            build(lib)
