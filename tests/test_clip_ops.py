"""`tf.clip_by_value`, `tf.clip_by_global_norm`, `tf.global_norm`, `tf.nn.xw_plus_b`: values,
names, gradients (float64 finite differences) and parity with real TensorFlow."""

import numpy as np
import pytest

import nbdist as tf
from gradcheck import check_gradients

RNG = np.random.default_rng(7)
X = np.array([[-2.0, -0.5, 0.25], [0.75, 1.5, 3.0]])
A, B = RNG.normal(size=(3, 4)), RNG.normal(size=5)


def _run(fetches, lib=tf):
    with lib.Session() as sess:
        return sess.run(fetches)


pytestmark = pytest.mark.usefixtures("graph")


def test_clip_by_value_clips_both_sides():
    np.testing.assert_array_equal(_run(tf.clip_by_value(X, -1.0, 1.0)), np.clip(X, -1.0, 1.0))


def test_clip_by_value_takes_tensor_bounds_of_the_same_shape():
    low, high = tf.constant(np.full((2, 3), -0.6)), tf.constant(np.full((2, 3), 2.0))
    np.testing.assert_array_equal(_run(tf.clip_by_value(X, low, high)), np.clip(X, -0.6, 2.0))


def test_clip_by_value_is_named_as_tf_names_it():
    assert tf.clip_by_value(X, 0.0, 1.0).name == "clip_by_value:0"
    assert tf.clip_by_value(X, 0.0, 1.0, name="c").name == "c:0"


def test_clip_by_value_refuses_bounds_that_broadcast_the_tensor():
    with pytest.raises(ValueError, match=r"would broadcast .* of shape \(3,\) to \(2, 3\)"):
        tf.clip_by_value(tf.constant([1.0, 2.0, 3.0]), tf.zeros([2, 3]), 5.0)


def test_clip_by_value_gradient():
    # Away from the bounds (finite differences are meaningless at a kink).
    check_gradients(lambda x: tf.clip_by_value(x, -1.0, 1.0), [X + 0.01])


def test_clip_by_value_gradient_passes_at_the_bounds_as_tensorflows():
    x = tf.constant([-1.0, 0.0, 1.0, 2.0])
    (g,) = tf.gradients(tf.reduce_sum(tf.clip_by_value(x, -1.0, 1.0)), [x])
    np.testing.assert_array_equal(_run(g), [1.0, 1.0, 1.0, 0.0])


@pytest.mark.parametrize(("clip_norm", "axes"), [(1.0, None), (100.0, None), (1.0, [1])])
def test_clip_by_norm(clip_norm, axes):
    norm = np.sqrt(np.sum(A**2, axis=None if axes is None else tuple(axes), keepdims=True))
    expected = A * clip_norm / np.maximum(norm, clip_norm)
    np.testing.assert_allclose(_run(tf.clip_by_norm(A, clip_norm, axes)), expected)
    assert tf.clip_by_norm(A, 1.0).name.startswith("clip_by_norm")


def test_clip_by_norm_gradient_is_finite_at_zero():
    check_gradients(lambda a: tf.clip_by_norm(a, 1.0), [A])
    x = tf.zeros([3])
    (g,) = tf.gradients(tf.reduce_sum(tf.clip_by_norm(x, 1.0)), [x])
    assert np.isfinite(_run(g)).all()


def test_global_norm_is_the_norm_of_all_tensors_together():
    norm = tf.global_norm([A, None, B])
    np.testing.assert_allclose(_run(norm), np.sqrt(np.sum(A**2) + np.sum(B**2)))
    assert norm.name == "global_norm/global_norm:0"


@pytest.mark.parametrize("clip_norm", [0.5, 100.0])
def test_clip_by_global_norm_scales_only_when_the_norm_is_larger(clip_norm):
    (ca, none, cb), norm = tf.clip_by_global_norm([A, None, B], clip_norm)
    assert none is None
    total = np.sqrt(np.sum(A**2) + np.sum(B**2))
    scale = clip_norm / max(total, clip_norm)
    got_a, got_b, got_norm = _run([ca, cb, norm])
    np.testing.assert_allclose(got_norm, total)
    np.testing.assert_allclose(got_a, A * scale)
    np.testing.assert_allclose(got_b, B * scale)


def test_clip_by_global_norm_uses_the_given_norm():
    (c,), norm = tf.clip_by_global_norm([A], 1.0, use_norm=tf.constant(4.0, tf.float64))
    np.testing.assert_allclose(_run(c), A / 4.0)
    assert _run(norm) == 4.0


def test_clip_by_global_norm_of_an_infinite_norm_is_nan():
    (c,), _ = tf.clip_by_global_norm([tf.constant([1.0, np.inf])], 1.0)
    assert np.isnan(_run(c)).all()


def test_clip_by_global_norm_keeps_each_result_with_its_tensor():
    with tf.device("/job:ps/task:1"):
        v = tf.Variable(A, name="v")
    with tf.device("/job:worker/task:0"):
        (c,), _ = tf.clip_by_global_norm([v], 1.0)
    assert c.device == "/job:ps/task:1"
    assert c.name == "clip_by_global_norm/clip_by_global_norm/_0:0"


def test_clip_by_global_norm_needs_a_list():
    with pytest.raises(TypeError, match="t_list should be a sequence"):
        tf.clip_by_global_norm(tf.constant(A), 1.0)


def test_clip_by_global_norm_gradient():
    def clipped(a, b):
        (ca, cb), _ = tf.clip_by_global_norm([a, b], 1.5)
        return tf.reduce_sum(ca * 3.0) + tf.reduce_sum(cb)

    check_gradients(clipped, [A, B])


def test_xw_plus_b():
    x, w, b = RNG.normal(size=(4, 3)), RNG.normal(size=(3, 2)), RNG.normal(size=2)
    y = tf.nn.xw_plus_b(x, w, b)
    assert y.name == "xw_plus_b:0" and y.op.type == "BiasAdd"
    assert y.op.inputs[0].op.type == "MatMul"
    np.testing.assert_allclose(_run(y), x @ w + b)
    assert tf.nn.xw_plus_b(x, w, b, name="layer").name == "layer:0"


def test_xw_plus_b_gradient():
    x, w, b = RNG.normal(size=(4, 3)), RNG.normal(size=(3, 2)), RNG.normal(size=2)
    check_gradients(tf.nn.xw_plus_b, [x, w, b])


def test_div_no_nan_is_zero_where_the_divisor_is():
    out = tf.div_no_nan(tf.constant([1.0, 2.0, 0.0]), tf.constant([2.0, 0.0, 0.0]))
    np.testing.assert_array_equal(_run(out), [0.5, 0.0, 0.0])


def test_div_no_nan_gradient():
    check_gradients(tf.div_no_nan, [X, np.array([[1.5, -2.0, 0.5], [3.0, 1.0, -1.0]])])


def test_div_no_nan_refuses_integers():
    with pytest.raises(TypeError, match="takes float tensors, got int32"):
        tf.div_no_nan(1, 2)


# -- parity with real TensorFlow -----------------------------------------------------------------------
def _clip_program(t):
    a, b = t.constant(A), t.constant(B)
    (ca, cb), norm = t.clip_by_global_norm([a, b], 2.0)
    x = t.constant(X)
    y = t.clip_by_value(x, -1.0, 1.0)
    ga, gx = t.gradients(t.reduce_sum(ca * ca) + t.reduce_sum(y * x), [a, x])
    xw = t.nn.xw_plus_b(x, t.constant(A), t.constant(B[:4]))
    dnn = t.div_no_nan(x, t.constant(np.array([[1.0, 0.0, 2.0], [0.0, 4.0, -1.0]])))
    cn = t.clip_by_norm(a, 1.5, axes=[0])
    (gcn,) = t.gradients(t.reduce_sum(cn * cn), [a])
    names = [ca.name, norm.name, y.name, xw.name, cn.name]
    return names, [ca, cb, norm, y, ga, gx, xw, dnn, cn, gcn]


@pytest.mark.tf
def test_clipping_matches_tensorflow(tf1_graph_mode):
    tf1 = tf1_graph_mode
    with tf1.Graph().as_default():
        names_tf, fetches = _clip_program(tf1)
        theirs = _run(fetches, tf1)
    names, fetches = _clip_program(tf)
    ours = _run(fetches)
    assert names == names_tf
    for i, (a, b) in enumerate(zip(ours, theirs)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg=f"fetch {i}")
