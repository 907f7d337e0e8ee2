"""space_to_batch_nd / batch_to_space_nd, TF 1.x's space_to_batch / batch_to_space (also at
tf.nn), required_space_to_batch_paddings, tf.nn.with_space_to_batch and the top-level
space_to_depth / depth_to_space (nbdist/ops/space_batch_ops.py) against real TensorFlow: each
call spelled as a program spells it (``t.space_to_batch_nd``), run in both libraries on the
same inputs; values, static shapes, gradients and the errors for bad input."""

import numpy as np
import pytest

import nbdist as tf

_RNG = np.random.default_rng(32)
IMAGES = _RNG.standard_normal((2, 4, 6, 3))
SEQ = _RNG.standard_normal((3, 5, 2))
FILTER = _RNG.standard_normal((2, 2, 3, 2))
W = _RNG.standard_normal((8, 3, 5, 3))

CASES = {
    "space_to_batch_nd": lambda t: (
        t.space_to_batch_nd(t.constant(IMAGES), [2, 3], [[0, 0], [0, 0]]),
        t.space_to_batch_nd(t.constant(IMAGES), [2, 2], [[1, 1], [2, 0]]),
        t.space_to_batch_nd(t.constant(SEQ), t.constant([3], t.int64), t.constant([[0, 1]], t.int64)),
        t.space_to_batch_nd(t.constant(IMAGES), [1], [[0, 0]]),
        t.space_to_batch_nd(t.constant(np.arange(16).reshape(1, 4, 4, 1)), [2, 2], [[0, 0], [0, 0]]),
    ),
    "batch_to_space_nd": lambda t: (
        t.batch_to_space_nd(t.constant(IMAGES[:, :2]), [2, 1], [[1, 0], [0, 2]]),
        t.batch_to_space_nd(t.constant(SEQ[:2]), [2], [[0, 3]]),
        t.batch_to_space_nd(t.constant(np.arange(16).reshape(4, 2, 2, 1)), [2, 2], [[0, 0], [0, 0]]),
    ),
    "space_to_batch": lambda t: (
        t.space_to_batch(t.constant(IMAGES), [[0, 0], [1, 1]], 2),
        t.space_to_batch(t.constant(IMAGES), [[2, 0], [0, 2]], block_size=2),
        t.nn.space_to_batch(t.constant(IMAGES), [[0, 0], [0, 0]], 2),
    ),
    "batch_to_space": lambda t: (
        t.batch_to_space(t.constant(np.tile(IMAGES, (2, 1, 1, 1))), [[0, 1], [1, 0]], 2),
        t.batch_to_space(t.constant(np.tile(IMAGES, (2, 1, 1, 1))), [[0, 0], [0, 0]], 2),
    ),
    "required_space_to_batch_paddings": lambda t: (
        t.required_space_to_batch_paddings([4, 7], [2, 3]),
        t.required_space_to_batch_paddings([5, 5], [2, 2], [[1, 0], [2, 2]]),
        t.required_space_to_batch_paddings(t.shape(t.constant(IMAGES))[1:3], t.constant([3, 4])),
        t.required_space_to_batch_paddings([5], [1]),
    ),
    "with_space_to_batch": lambda t: (
        t.nn.with_space_to_batch(
            t.constant(IMAGES),
            [2, 2],
            "SAME",
            lambda x, n, pad: t.nn.conv2d(x, t.constant(FILTER), [1, 1, 1, 1], pad),
            filter_shape=[2, 2],
        ),
        t.nn.with_space_to_batch(
            t.constant(IMAGES),
            [2, 3],
            "VALID",
            lambda x, n, pad: t.nn.max_pool(x, [1, 2, 2, 1], [1, 1, 1, 1], pad),
        ),
        t.nn.with_space_to_batch(t.constant(IMAGES), [1, 1], "VALID", lambda x, n, pad: x * 2.0),
        t.nn.with_space_to_batch(t.constant(SEQ), [2], "SAME", lambda x, n, pad: x + 1.0, filter_shape=[3]),
    ),
    "space_to_depth": lambda t: (
        t.space_to_depth(t.constant(IMAGES), 2),
        t.depth_to_space(t.constant(np.tile(IMAGES, (1, 1, 1, 4))), 2),
        t.nn.space_to_depth(t.constant(np.arange(72).reshape(1, 6, 6, 2)), 3),
        t.nn.depth_to_space(t.constant(np.arange(72).reshape(2, 3, 3, 4)), 2),
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
    assert ours.shape == theirs.shape, f"{name}: {ours.shape} != {theirs.shape}"
    assert ours.dtype == theirs.dtype, f"{name}: {ours.dtype} != {theirs.dtype}"
    np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-9, err_msg=name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_match_tensorflow(tf1, name):
    _assert_same(_value(tf, CASES[name]), _value(tf1, CASES[name]), name)


def _static_shapes(lib):
    with lib.Graph().as_default():
        p = lib.placeholder(lib.float32, [None, 4, None, 3])
        return [
            lib.space_to_batch_nd(p, [2, 2], [[0, 0], [0, 0]]).shape.as_list(),
            lib.space_to_batch_nd(lib.constant(IMAGES), [2, 2], [[1, 1], [0, 2]]).shape.as_list(),
            lib.batch_to_space_nd(lib.constant(IMAGES), [2, 1], [[0, 1], [0, 0]]).shape.as_list(),
            lib.batch_to_space_nd(p, [1, 1], [[1, 1], [0, 0]]).shape.as_list(),
            lib.space_to_batch(p, [[0, 0], [0, 0]], 2).shape.as_list(),
            lib.batch_to_space(lib.placeholder(lib.float32), [[0, 0], [0, 0]], 2).shape.as_list(),
            lib.space_to_depth(lib.placeholder(lib.float32, [None, None, 6, 3]), 2).shape.as_list(),
            lib.depth_to_space(lib.placeholder(lib.float32, [None, 2, None, 8]), 2).shape.as_list(),
            lib.nn.space_to_depth(lib.placeholder(lib.float32), 3).shape.as_list(),
            lib.space_to_batch_nd(
                lib.placeholder(lib.float32, [None, 4]), lib.placeholder(lib.int32, [1]), [[0, 0]]
            ).shape.as_list(),
        ]


def test_static_shapes_match_tensorflow(tf1):
    assert _static_shapes(tf) == _static_shapes(tf1)


def test_gradients_match_tensorflow(tf1):
    def build(t):
        x = t.constant(IMAGES)
        w = t.constant(W, x.dtype)
        y = t.reduce_sum(t.space_to_batch_nd(x, [2, 2], [[1, 1], [0, 2]]) ** 2)
        y += t.reduce_sum(t.batch_to_space_nd(x, [2, 1], [[0, 1], [1, 1]]) ** 3)
        y += t.reduce_sum(t.space_to_batch(x, [[0, 2], [2, 2]], 2) * w)
        y += t.reduce_sum(t.depth_to_space(t.space_to_depth(x, 2) ** 2, 2) * x)
        y += t.reduce_sum(
            t.nn.with_space_to_batch(
                x,
                [2, 2],
                "SAME",
                lambda v, n, pad: t.nn.conv2d(v, t.constant(FILTER), [1, 1, 1, 1], pad),
                [2, 2],
            )
            ** 2
        )
        return t.gradients(y, x)[0]

    np.testing.assert_allclose(_value(tf, build), _value(tf1, build), rtol=1e-9)


BAD_RUNS = {
    "space_to_batch_nd not divisible": (
        lambda t, p, c: t.space_to_batch_nd(p, [3, 2], [[0, 0], [0, 0]]),
        "not divisible by block_shape",
    ),
    "batch_to_space_nd batch not divisible": (
        lambda t, p, c: t.batch_to_space_nd(p, [3, 1], [[0, 0], [0, 0]]),
        "not divisible by product of block sizes",
    ),
    "space_to_batch_nd negative padding": (
        lambda t, p, c: t.space_to_batch_nd(p, [2, 2], c),
        "non-negative",
    ),
}


@pytest.mark.parametrize("name", sorted(BAD_RUNS))
def test_bad_input_at_run_time_raises_invalid_argument_as_tensorflow(tf1, name):
    build, match = BAD_RUNS[name]
    for lib in (tf, tf1):
        with lib.Graph().as_default(), lib.Session() as sess:
            p = lib.placeholder(lib.float32)
            c = lib.placeholder(lib.int32)
            out = build(lib, p, c)
            with pytest.raises(lib.errors.InvalidArgumentError, match=match):
                sess.run(out, {p: IMAGES.astype(np.float32), c: [[-2, 0], [0, 0]]})


BAD_BUILDS = {
    "space_to_batch_nd not divisible": lambda t: t.space_to_batch_nd(
        t.constant(IMAGES), [3, 2], [[0, 0], [0, 0]]
    ),
    "batch_to_space_nd batch": lambda t: t.batch_to_space_nd(t.constant(IMAGES), [3, 1], [[0, 0], [0, 0]]),
    "batch_to_space_nd crops": lambda t: t.batch_to_space_nd(t.constant(IMAGES), [2, 1], [[5, 4], [0, 0]]),
    "paddings shape": lambda t: t.space_to_batch_nd(t.constant(IMAGES), [2, 2], [[0, 0]]),
    "block_size and block_shape": lambda t: t.space_to_batch(
        t.constant(IMAGES), [[0, 0], [0, 0]], 2, block_shape=3
    ),
    "with_space_to_batch rate": lambda t: t.nn.with_space_to_batch(t.constant(IMAGES), [0, 1], "VALID", None),
    "space_to_depth not divisible": lambda t: t.space_to_depth(t.constant(IMAGES[:, :3]), 2),
    "depth_to_space not divisible": lambda t: t.depth_to_space(t.constant(IMAGES), 2),
    "space_to_depth rank": lambda t: t.nn.space_to_depth(t.constant(SEQ), 2),
    "with_space_to_batch SAME without filter_shape": lambda t: t.nn.with_space_to_batch(
        t.constant(IMAGES), [2, 2], "SAME", None
    ),
}


@pytest.mark.parametrize("name", sorted(BAD_BUILDS))
def test_bad_static_input_raises_value_error_as_tensorflow(tf1, name):
    for lib in (tf, tf1):
        with lib.Graph().as_default(), pytest.raises(ValueError):
            BAD_BUILDS[name](lib)
