"""tile, broadcast_to, broadcast shapes, roll, reverse_sequence, repeat, meshgrid, linspace and
sequence_mask (nbdist/ops/tile_ops.py) against real TensorFlow: each call spelled as a program
spells it (``t.tile``), run in both libraries on the same inputs; values, dtypes, static shapes
and the errors for bad input."""

import numpy as np
import pytest

import nbdist as tf

_RNG = np.random.default_rng(32)
X = _RNG.standard_normal((2, 3))
X3 = _RNG.standard_normal((3, 4, 2))
INTS = np.arange(6, dtype=np.int32).reshape(2, 3)
EMPTY = np.zeros((0, 3))

CASES = {
    "tile": lambda t: (
        t.tile(t.constant(X), [2, 3]),
        t.tile(t.constant(INTS), t.constant([1, 2], t.int64)),
        t.tile(t.constant(EMPTY), [3, 2]),
        t.tile(t.constant(X), [0, 1]),
        t.tile(t.constant(7.0), []),
        t.tile(t.constant([b"a", b"b"]), [2]),
    ),
    "broadcast_to": lambda t: (
        t.broadcast_to(t.constant([1.0, 2.0, 3.0]), [2, 3]),
        t.broadcast_to(t.constant(INTS[:, :1]), t.constant([2, 4])),
        t.broadcast_to(t.constant(5), [2, 0]),
        t.broadcast_to(t.constant(X), [4, 2, 3]),
    ),
    "broadcast_dynamic_shape": lambda t: (
        t.broadcast_dynamic_shape(t.constant([2, 1, 3]), t.constant([4, 1])),
        t.broadcast_dynamic_shape(t.shape(t.constant(X)), t.constant([], t.int32)),
        t.broadcast_dynamic_shape(t.constant([5, 1], t.int64), t.constant([3], t.int64)),
    ),
    "roll": lambda t: (
        t.roll(t.constant(X), 1, -1),
        t.roll(t.constant(X3), [2, -1], [0, 2]),
        t.roll(t.constant(INTS), [1, 1], [1, 1]),
        t.roll(t.constant(INTS), 7, 0),
        t.roll(t.constant(EMPTY), 2, 1),
    ),
    "reverse_sequence": lambda t: (
        t.reverse_sequence(t.constant(X3), [4, 0, 2], seq_axis=1, batch_axis=0),
        t.reverse_sequence(t.constant(X3), t.constant([1, 3], t.int64), seq_axis=0, batch_axis=2),
        t.reverse_sequence(t.constant(INTS), [3, 2], seq_dim=1),
    ),
    "repeat": lambda t: (
        t.repeat(t.constant(X), 2),
        t.repeat(t.constant(X), 3, axis=1),
        t.repeat(t.constant(INTS), [1, 0, 2], axis=-1),
        t.repeat(t.constant(X3), [2, 1, 0], axis=0),
        t.repeat(t.constant(INTS), [2], axis=0),
        t.repeat(t.constant(4.0), 3),
        t.repeat(t.constant(EMPTY), 2, axis=0),
    ),
    "meshgrid": lambda t: (
        t.meshgrid([1, 2, 3], [4, 5]),
        t.meshgrid(t.constant([1.0, 2.0]), t.constant([3.0, 4.0, 5.0]), t.constant([6.0]), indexing="ij"),
        t.meshgrid(t.constant([1.0, 2.0]), t.constant([3.0, 4.0, 5.0]), t.constant([6.0, 7.0])),
        t.meshgrid(t.constant([1, 2])),
    ),
    "linspace": lambda t: (
        t.linspace(0.0, 1.0, 5),
        t.linspace(t.constant(-2.0, t.float64), 3.0, 7),
        t.linspace(1.0, 2.0, 1),
        t.linspace(1.0, 2.0, 0),
        t.linspace(t.constant([0.0, 5.0]), t.constant([10.0, 40.0]), 5, axis=-1),
        t.linspace(t.constant([[0.0], [1.0]]), t.constant([1.0, 2.0, 3.0]), t.constant(4, t.int64), axis=1),
    ),
    "lin_space": lambda t: t.lin_space(t.constant(3.0), t.constant(-1.0), t.constant(9)),
    "sequence_mask": lambda t: (
        t.sequence_mask([1, 3, 0]),
        t.sequence_mask(t.constant([[1, 2], [4, 0]]), 5, dtype=t.float32),
        t.sequence_mask(t.constant([2, 1], t.int64), t.constant(3, t.int64), dtype=t.int32),
        t.sequence_mask(t.constant([], t.int32)),
        t.sequence_mask([-1, 2], 3),
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
    if theirs.dtype.kind in "OSU":
        assert ours.tolist() == theirs.tolist(), name
    else:
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-9, err_msg=name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_match_tensorflow(tf1, name):
    _assert_same(_value(tf, CASES[name]), _value(tf1, CASES[name]), name)


def _static_shapes(lib):
    with lib.Graph().as_default():
        p = lib.placeholder(lib.float32, [None, 3])
        r = lib.placeholder(lib.float32, [2, None, 4])
        return [
            lib.tile(p, [2, 2]).shape.as_list(),
            lib.tile(lib.constant(X), [2, 3]).shape.as_list(),
            lib.broadcast_to(lib.constant([1.0, 2.0, 3.0]), [4, 3]).shape.as_list(),
            lib.roll(p, 1, 0).shape.as_list(),
            lib.reverse_sequence(p, [1, 2], 1).shape.as_list(),
            lib.repeat(lib.constant(X), 2, axis=0).shape.as_list(),
            lib.linspace(0.0, 1.0, 5).shape.as_list(),
            lib.linspace(lib.constant([0.0, 5.0]), lib.constant([1.0, 2.0]), 4, axis=-1).shape.as_list(),
            lib.sequence_mask(lib.constant([1, 2]), 4).shape.as_list(),
            lib.sequence_mask(lib.constant([1, 2])).shape.as_list(),
            [m.shape.as_list() for m in lib.meshgrid(lib.constant([1, 2, 3]), lib.constant([1, 2]))],
            lib.broadcast_static_shape(lib.TensorShape([None, 1, 3]), lib.TensorShape([4, 1])).as_list(),
            lib.broadcast_static_shape(lib.TensorShape([2, 1]), lib.TensorShape([None])).as_list(),
            # shapes known in part while building (TF's constant_value_as_shape)
            lib.broadcast_to(lib.constant([1.0, 2.0, 3.0]), lib.shape(p)).shape.as_list(),
            lib.broadcast_to(lib.constant([[1.0], [2.0]]), lib.placeholder(lib.int32, [2])).shape.as_list(),
            lib.broadcast_to(lib.constant(X), lib.stack([lib.shape(p)[0], 3])).shape.as_list(),
            lib.broadcast_to(lib.constant(np.ones((5, 1))), lib.shape(r)[1:]).shape.as_list(),
            lib.broadcast_to(lib.placeholder(lib.float32, [None, 4]), lib.shape(r)).shape.as_list(),
            lib.tile(p, lib.shape(p)).shape.as_list(),
        ]


def test_static_shapes_match_tensorflow(tf1):
    assert _static_shapes(tf) == _static_shapes(tf1)


def test_gradients_match_tensorflow(tf1):
    def build(t):
        x = t.constant(X3)
        y = (
            t.reduce_sum(t.tile(x, [2, 1, 3]) ** 2)
            + t.reduce_sum(t.broadcast_to(x[:, :1], [3, 4, 2]) * X3)
            + t.reduce_sum(t.roll(x, [1, -2], [0, 1]) * X3)
            + t.reduce_sum(t.reverse_sequence(x, [1, 4, 2], 1) * X3)
            + t.reduce_sum(t.repeat(x, [1, 0, 3], axis=0) ** 3)
            + t.reduce_sum(t.repeat(x, 2, axis=-1) ** 2)
            + t.reduce_sum(t.meshgrid(x[0, :, 0], x[1, :, 1])[0] ** 2)
            + t.reduce_sum(t.linspace(x[0, 0, 0], x[1, 1, 1], 5) ** 2)
        )
        return t.gradients(y, x)[0]

    _assert_same(_value(tf, build), _value(tf1, build), "gradients")


BAD_RUNS = {
    "tile multiples length": (lambda t, p: t.tile(p, [2, 2, 2]), "multiples"),
    "tile negative": (lambda t, p: t.tile(p, t.constant([-1, 1])), "multiples"),
    "broadcast_to": (lambda t, p: t.broadcast_to(p, [4, 5]), "broadcast"),
    "broadcast_dynamic_shape": (lambda t, p: t.broadcast_dynamic_shape(t.shape(p), [4, 5]), "ncompatible"),
    "roll axis out of range": (lambda t, p: t.roll(p, 1, 3), "out of range"),
    "reverse_sequence too long": (lambda t, p: t.reverse_sequence(p, [5, 1], 1), "seq_lens"),
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
    "tile rank": lambda t: t.tile(t.constant(X), [1, 2, 3]),
    "broadcast_to": lambda t: t.broadcast_to(t.constant(X), [3, 3]),
    "broadcast_static_shape": lambda t: t.broadcast_static_shape(t.TensorShape([2, 3]), t.TensorShape([4])),
    "sequence_mask maxlen": lambda t: t.sequence_mask([1, 2], [3, 4]),
    "meshgrid indexing": lambda t: t.meshgrid([1, 2], [3], indexing="xx"),
    "roll sizes differ": lambda t: t.roll(t.constant(X), [1, 2], [0]),
    "reverse_sequence lengths": lambda t: t.reverse_sequence(t.constant(X), [1, 2, 3], 1),
    "reverse_sequence negative axis": lambda t: t.reverse_sequence(t.constant(X3), [1, 3], -2, -1),
    "linspace negative num": lambda t: t.linspace(0.0, 1.0, -2),
    "repeat length": lambda t: t.repeat(t.constant(X), [1, 2, 3], axis=0),
}


@pytest.mark.parametrize("name", sorted(BAD_BUILDS))
def test_bad_static_input_raises_value_error_as_tensorflow(tf1, name):
    for lib in (tf, tf1):
        with lib.Graph().as_default(), pytest.raises(ValueError):
            BAD_BUILDS[name](lib)


EARLIER_THAN_TF = {
    "tile negative": lambda t: t.tile(t.constant(X), [1, -1]),
    "reverse_sequence same axes": lambda t: t.reverse_sequence(t.constant(X3), [1, 3, 2], 0, 0),
    "repeat negative": lambda t: t.repeat(t.constant(X), -1, axis=0),
}


@pytest.mark.parametrize("name", sorted(EARLIER_THAN_TF))
def test_bad_constant_input_raises_value_error_where_tensorflow_raises_when_run(tf1, name):
    with tf.Graph().as_default(), pytest.raises(ValueError):
        EARLIER_THAN_TF[name](tf)
    with tf1.Graph().as_default(), tf1.Session() as sess, pytest.raises(tf1.errors.InvalidArgumentError):
        sess.run(EARLIER_THAN_TF[name](tf1))


def test_meshgrid_and_repeat_argument_errors():
    with pytest.raises(TypeError, match="Invalid keyword argument"):
        tf.meshgrid([1, 2], sparse=True)
    with pytest.raises(TypeError, match="`axis` must be an int"):
        tf.repeat(tf.constant(X), 2, axis=tf.constant(0))
