"""Learning-rate schedules at `tf.train.*` against real TensorFlow, over steps that cross the
decay boundaries (before, at, just after, far beyond), in float32 and float64."""

import numpy as np
import pytest

import nbdist as tf

STEPS = [0, 1, 7, 99, 100, 101, 150, 250, 1000, 1001, 5000]

# name -> fn(lib, learning_rate, global_step)
SCHEDULES = {
    "exponential": lambda t, lr, s: t.train.exponential_decay(lr, s, 100, 0.9),
    "exponential_staircase": lambda t, lr, s: t.train.exponential_decay(lr, s, 100, 0.5, staircase=True),
    "natural_exp": lambda t, lr, s: t.train.natural_exp_decay(lr, s, 100, 0.3),
    "natural_exp_staircase": lambda t, lr, s: t.train.natural_exp_decay(lr, s, 100, 0.3, staircase=True),
    "inverse_time": lambda t, lr, s: t.train.inverse_time_decay(lr, s, 100, 0.5),
    "inverse_time_staircase": lambda t, lr, s: t.train.inverse_time_decay(lr, s, 100, 0.5, staircase=True),
    "polynomial": lambda t, lr, s: t.train.polynomial_decay(lr, s, 1000),
    "polynomial_power": lambda t, lr, s: t.train.polynomial_decay(lr, s, 250, 0.01, power=0.5),
    "polynomial_cycle": lambda t, lr, s: t.train.polynomial_decay(lr, s, 100, 0.01, power=2.0, cycle=True),
    "cosine": lambda t, lr, s: t.train.cosine_decay(lr, s, 1000),
    "cosine_alpha": lambda t, lr, s: t.train.cosine_decay(lr, s, 250, alpha=0.1),
    "piecewise_int64_step": lambda t, lr, s: t.train.piecewise_constant(
        s, [100, 250], [lr, lr / 10, lr / 100]
    ),
    "piecewise_one_boundary": lambda t, lr, s: t.train.piecewise_constant(s, [1], [lr, lr * 2]),
}

# TF's own cosine_decay and polynomial_decay(cycle=True) fail for a float64 rate (a float32 pi,
# a float32 1.0 in a where_v2): nbdist's float64 result is compared with TF's float32 one.
TF_FLOAT32_ONLY = {"polynomial_cycle", "cosine", "cosine_alpha"}


def _values(lib, fn, lr):
    with lib.Graph().as_default() as graph:
        step = lib.placeholder(lib.int64, [], name="global_step")
        out = fn(lib, lib.constant(lr), step)
        with lib.Session(graph=graph) as sess:
            return np.array([sess.run(out, {step: s}) for s in STEPS]), out.dtype


@pytest.mark.tf
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", SCHEDULES)
def test_schedule_matches_tensorflow(tf1, name, dtype):
    lr = dtype(0.1)
    ours, our_dtype = _values(tf, SCHEDULES[name], lr)
    rtol = 1e-6 if dtype == np.float32 else 1e-12
    if name in TF_FLOAT32_ONLY and dtype == np.float64:
        dtype, rtol = np.float32, 1e-6
    theirs, _ = _values(tf1, SCHEDULES[name], dtype(lr))
    assert our_dtype == tf.as_dtype(type(lr))
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=0)


@pytest.mark.tf
def test_piecewise_constant_on_a_float_step_matches_tensorflow(tf1):
    def build(lib):
        x = lib.placeholder(lib.float32, [])
        return x, lib.train.piecewise_constant(x, [0.5, 1.5, 2.5], [1, 2, 3, 4])

    results = []
    for lib in (tf, tf1):
        with lib.Graph().as_default() as graph:
            x, y = build(lib)
            with lib.Session(graph=graph) as sess:
                results.append([sess.run(y, {x: v}) for v in (-1.0, 0.5, 0.6, 1.5, 2.5, 2.51, 9.0)])
    assert results[0] == results[1] == [1, 1, 2, 2, 3, 4, 4]


def test_a_decayed_rate_trains_with_the_global_step(graph):
    global_step = tf.train.get_or_create_global_step()
    lr = tf.train.exponential_decay(1.0, global_step, 1, 0.5, staircase=True)
    w = tf.Variable(0.0)
    train_op = tf.train.GradientDescentOptimizer(lr).minimize(-w, global_step=global_step)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(train_op)
        assert sess.run(w) == pytest.approx(1.0 + 0.5 + 0.25)
        assert sess.run(lr) == pytest.approx(0.125)


def test_piecewise_constant_needs_one_more_value_than_boundaries(graph):
    with pytest.raises(ValueError, match=r"The length of boundaries should be 1 less"):
        tf.train.piecewise_constant(tf.constant(1), [1, 2], [0.1, 0.2])


def test_piecewise_constant_boundaries_take_the_steps_dtype(graph):
    with pytest.raises(ValueError, match=r"Boundaries \(float32\) must have the same dtype as x \(int32\)"):
        tf.train.piecewise_constant(tf.constant(1), [1.5], [0.1, 0.2])


def test_piecewise_constant_values_share_a_dtype(graph):
    with pytest.raises(
        ValueError, match=r"Values must have elements all with the same dtype \(float32 vs int32\)"
    ):
        tf.train.piecewise_constant(tf.constant(1), [1], [0.1, 2])


def test_a_schedule_needs_a_global_step(graph):
    with pytest.raises(ValueError, match=r"global_step is required for polynomial_decay"):
        tf.train.polynomial_decay(0.1, None, 100)


def test_the_schedule_is_named_as_in_tensorflow(graph):
    step = tf.constant(3, tf.int64)
    assert tf.train.exponential_decay(0.1, step, 10, 0.9).op.name == "ExponentialDecay"
    assert tf.train.polynomial_decay(0.1, step, 10, name="lr").op.name == "lr"
    assert tf.train.piecewise_constant(step, [1], [0.1, 0.2]).op.name == "PiecewiseConstant"
