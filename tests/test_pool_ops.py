"""Pooling and LRN (`nbdist.ops.pool_ops`): values and gradients against real TF.

The comparison helpers are `test_conv_ops`'s: the same graph in nbdist and in
``tensorflow.compat.v1``, its output and the gradients of ``sum(y * c)``; NCHW against TF's NHWC
op between transposes.
"""

import numpy as np
import pytest

import nbdist as tf
from nbdist.export import to_tensorflow
from test_conv_ops import assert_matches_tf, nchw, r

# (x NHWC, ksize, strides, padding): 1x1, odd sizes, stride > kernel, window = input, batch 1
POOL_CASES = {
    "1x1": ((1, 4, 5, 2), 1, 1, "VALID"),
    "2x2-stride2-same-odd": ((2, 5, 7, 3), 2, 2, "SAME"),
    "3x2-stride1-same": ((1, 6, 5, 2), [3, 2], 1, "SAME"),
    "stride-over-kernel": ((2, 9, 8, 1), 2, 3, "SAME"),
    "stride-over-kernel-valid": ((1, 9, 8, 2), 2, 3, "VALID"),
    "3x3-stride2-valid": ((2, 7, 7, 2), 3, 2, "VALID"),
    "window-is-input": ((1, 3, 4, 2), [3, 4], 1, "VALID"),
}


def _four(v, fmt):
    v = [v, v] if isinstance(v, int) else list(v)
    return [1, *v, 1] if fmt == "NHWC" else [1, 1, *v]


@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
@pytest.mark.parametrize("pool", ["max_pool", "avg_pool"])
@pytest.mark.parametrize("case", list(POOL_CASES), ids=list(POOL_CASES))
def test_pool_matches_tf(tf1, case, pool, fmt):
    x_shape, ksize, strides, padding = POOL_CASES[case]
    x = r(*x_shape)

    def build(t, f, x):
        return getattr(t.nn, pool)(x, _four(ksize, f), _four(strides, f), padding, data_format=f)

    assert_matches_tf(tf1, build, [nchw(x) if fmt == "NCHW" else x], fmt)


@pytest.mark.parametrize("pool", ["max_pool", "avg_pool"])
def test_pool_second_order_gradient_matches_tf(tf1, pool):
    """`MaxPoolGradGrad` and `AvgPool`-of-the-gradient: the gradient of a pooling gradient."""

    def build(t, f, x):
        y = getattr(t.nn, pool)(x * x, [1, 3, 3, 1], [1, 2, 2, 1], "SAME")
        c = t.constant(np.random.default_rng(2).standard_normal([2, 3, 3, 2]))
        return t.gradients(t.reduce_sum(y * c), x)[0] * x

    assert_matches_tf(tf1, build, [r(2, 5, 6, 2)])


@pytest.mark.parametrize(
    ("radius", "bias", "alpha", "beta"), [(5, 1.0, 1.0, 0.5), (1, 2.0, 0.3, 0.75), (0, 1.0, 1e-4, 0.75)]
)
def test_lrn_matches_tf(tf1, radius, bias, alpha, beta):
    def build(t, f, x):
        return t.nn.lrn(x, radius, bias, alpha, beta)

    assert_matches_tf(tf1, build, [r(2, 3, 2, 7)], dtype=np.float32)  # TF's LRN has no float64 kernel


def test_local_response_normalization_is_lrn():
    assert tf.nn.local_response_normalization is tf.nn.lrn


def test_max_pool_static_shape_with_unknown_batch():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 28, 28, 32])
        assert tf.nn.max_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "SAME").shape.as_list() == [None, 14, 14, 32]
        y = tf.nn.avg_pool(x, ksize=3, strides=2, padding="VALID", data_format="NHWC")
        assert y.shape.as_list() == [None, 13, 13, 32]


def test_max_pool_rejects_a_depth_window():
    with (
        tf.Graph().as_default(),
        pytest.raises(ValueError, match=r"ksize \[1, 2, 2, 2\] asks for a value other than 1"),
    ):
        tf.nn.max_pool(tf.zeros([1, 4, 4, 2]), [1, 2, 2, 2], [1, 2, 2, 1], "SAME")


def test_avg_pool_rejects_a_window_larger_than_the_input():
    with tf.Graph().as_default(), pytest.raises(ValueError, match=r"the VALID output would be empty"):
        tf.nn.avg_pool(tf.zeros([1, 2, 2, 1]), 3, 1, "VALID")


def test_lrn_needs_a_4d_input():
    with tf.Graph().as_default(), pytest.raises(ValueError, match=r"tf.nn.lrn needs a 4-D input \(NHWC\)"):
        tf.nn.lrn(tf.zeros([2, 3]))


def test_pooling_and_lrn_export_to_tf(tf1):
    x_value = r(2, 6, 6, 3).astype(np.float32)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 6, 6, 3], name="x")
        y = tf.nn.lrn(tf.nn.avg_pool(tf.nn.max_pool(x, 2, 1, "SAME"), 3, 2, "VALID"), 2, 1.0, 0.1, 0.75)
        fetches = [y, *tf.gradients(tf.reduce_sum(y * y), [x])]
        with tf.Session() as sess:
            ours = sess.run(fetches, {x: x_value})
            exported = to_tensorflow(graph=sess.graph)
    with tf1.Session(graph=exported.graph) as tf_sess:
        theirs = tf_sess.run([exported[f.name] for f in fetches], {exported["x:0"]: x_value})
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
