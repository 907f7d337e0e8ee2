"""`tf.nn.conv1d_transpose`, `tf.nn.conv_transpose`, `tf.nn.atrous_conv2d_transpose`
(nbdist/ops/conv_transpose_ops.py) and `tf.conv`, `tf.conv2d_backprop_filter_v2`,
`tf.conv2d_backprop_input_v2` (conv_generic_ops.py): values, static shapes and gradients equal
real TF's on the same inputs."""

import numpy as np
import pytest

import nbdist as tf

RNG = np.random.RandomState(7)
X1 = RNG.randn(2, 5, 3).astype(np.float32)  # [batch, width, channels]
W1 = RNG.randn(3, 4, 3).astype(np.float32)  # [width, out, in]
X2 = RNG.randn(2, 5, 6, 3).astype(np.float32)
W2 = RNG.randn(3, 2, 4, 3).astype(np.float32)  # [h, w, out, in]
X3 = RNG.randn(1, 3, 4, 3, 3).astype(np.float32)
W3 = RNG.randn(2, 2, 2, 2, 3).astype(np.float32)
WF = RNG.randn(3, 2, 3, 4).astype(np.float32)  # [h, w, in, out]
W3C = RNG.randn(2, 2, 2, 3, 2).astype(np.float32)  # [d, h, w, in, out]
DY = RNG.randn(2, 3, 5, 4).astype(np.float32)


def _build(t):
    x1, w1, x2, w2, x3, w3 = (t.constant(v) for v in (X1, W1, X2, W2, X3, W3))
    ys = [
        t.nn.conv1d_transpose(x1, w1, [2, 10, 4], 2),
        t.nn.conv1d_transpose(x1, w1, [2, 7, 4], [1, 1, 1], padding="VALID"),
        t.nn.conv1d_transpose(x1, w1, [2, 9, 4], 1, dilations=2, padding="VALID"),
        t.nn.conv_transpose(x1, w1, [2, 10, 4], 2),
        t.nn.conv_transpose(x2, w2, [2, 10, 12, 4], [2, 2]),
        t.nn.conv_transpose(x2, w2, [2, 7, 7, 4], 1, padding="VALID"),
        t.nn.conv_transpose(x3, w3, t.constant([1, 6, 8, 6, 2]), 2, name="ct3"),
        t.nn.atrous_conv2d_transpose(x2, w2, [2, 5, 6, 4], 2, "SAME"),
        t.nn.atrous_conv2d_transpose(x2, w2, [2, 9, 8, 4], 2, "VALID"),
        t.nn.atrous_conv2d_transpose(x2, w2, [2, 5, 6, 4], 1, "SAME"),
        t.nn.atrous_conv2d_transpose(x2, w2, [2, 11, 9, 4], 3, "VALID"),
        t.conv(x2, t.constant(WF), [1, 1, 1, 1], "SAME"),
        t.conv(x2, t.constant(WF), [1, 2, 1, 1], "VALID", dilations=[1, 1, 2, 1]),
        t.conv(x3, t.constant(W3C), [1] * 5, "SAME"),
    ]
    grads = []
    for y in ys[:11]:  # (TF's Conv and Conv2DBackprop*V2 ops have no gradient)
        sources = [v for v in (x1, w1, x2, w2, x3, w3) if t.gradients(y, v)[0] is not None]
        grads += t.gradients(t.reduce_sum(y * y), sources)
    return ys, grads


def _run(t):
    with t.Graph().as_default():
        ys, grads = _build(t)
        shapes = [y.shape.as_list() for y in ys]
        with t.Session() as sess:
            return sess.run(ys + grads), shapes


@pytest.mark.tf
def test_transposed_and_generic_convolutions_match_tf(tf1):
    (ours, our_shapes), (theirs, their_shapes) = _run(tf), _run(tf1)
    assert our_shapes == their_shapes
    assert len(ours) == len(theirs)
    for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        assert a.shape == b.shape, i
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4, err_msg=f"fetch {i}")


def _backprop(t, v2):
    """The V2 backprop ops (given the filter / input) in nbdist, the sizes forms in TF, whose
    CPU build has no kernel for the V2 ops."""
    x, w, dy = t.constant(X2), t.constant(WF), t.constant(DY)
    if v2:
        return [
            t.conv2d_backprop_filter_v2(x, w, dy, [1, 1, 1, 1], "VALID"),
            t.conv2d_backprop_input_v2(x, w, dy, [1, 1, 1, 1], "VALID"),
            t.conv2d_backprop_filter_v2(x, w, dy[:, :, :3], [1, 2, 2, 1], "SAME", dilations=[1, 1, 1, 1]),
        ]
    return [
        t.nn.conv2d_backprop_filter(x, [3, 2, 3, 4], dy, [1, 1, 1, 1], "VALID"),
        t.nn.conv2d_backprop_input([2, 5, 6, 3], w, dy, [1, 1, 1, 1], "VALID"),
        t.nn.conv2d_backprop_filter(x, [3, 2, 3, 4], dy[:, :, :3], [1, 2, 2, 1], "SAME"),
    ]


@pytest.mark.tf
def test_backprop_v2_ops_equal_tf_backprop_ops(tf1):
    with tf.Graph().as_default():
        ys = _backprop(tf, True)
        assert [y.shape.as_list() for y in ys] == [[3, 2, 3, 4], [2, 5, 6, 3], [3, 2, 3, 4]]
        with tf.Session() as sess:
            ours = sess.run(ys)
        with pytest.raises(LookupError, match="Conv2DBackpropFilterV2"):
            tf.gradients(ys[0], tf.get_default_graph().get_operations()[0].outputs[0])
    with tf1.Graph().as_default(), tf1.Session() as sess:
        theirs = sess.run(_backprop(tf1, False))
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


def test_conv_extra_batch_dims_and_groups(graph):
    x = tf.constant(X2)
    w = tf.constant(WF)
    stacked = tf.stack([x, x * 2.0])
    y2 = tf.conv(stacked, w, [1, 2, 1, 1], "SAME", batch_dims=2)
    assert y2.shape.as_list() == [2, 2, 3, 6, 4]
    wg = tf.constant(RNG.randn(3, 2, 1, 6).astype(np.float32))  # 3 groups of one input channel
    yg = tf.conv(x, wg, [1, 1, 1, 1], "SAME", groups=3)
    parts = [tf.nn.conv2d(x[..., g : g + 1], wg[..., 2 * g : 2 * g + 2], 1, "SAME") for g in range(3)]
    nchw = tf.conv(tf.transpose(x, [0, 3, 1, 2]), w, [1, 1, 1, 1], "SAME", data_format="CHANNELS_FIRST")
    with tf.Session() as sess:
        a, b, g, expected, c, plain = sess.run(
            [
                y2[0],
                y2[1],
                yg,
                tf.concat(parts, -1),
                tf.transpose(nchw, [0, 2, 3, 1]),
                tf.nn.conv2d(x, w, 1, "SAME"),
            ]
        )
    np.testing.assert_allclose(b, 2 * a, rtol=1e-5)
    np.testing.assert_allclose(g, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c, plain, rtol=1e-5, atol=1e-5)


def test_errors_as_tf(graph):
    with pytest.raises(ValueError, match="must be 'NWC' or 'NCW'"):
        tf.nn.conv1d_transpose(X1, W1, [2, 10, 4], 2, data_format="NHWC")
    with pytest.raises(ValueError, match="must be of length 3, 4 or 5"):
        tf.nn.conv_transpose(X1, W1, [2, 10], 2)
    with pytest.raises(ValueError, match="`rate` cannot be less than one"):
        tf.nn.atrous_conv2d_transpose(X2, W2, [2, 5, 6, 4], 0, "SAME")
    with pytest.raises(ValueError, match="output channel count"):
        tf.nn.atrous_conv2d_transpose(X2, W2, [2, 5, 6, 5], 2, "SAME")
    with pytest.raises(ValueError, match="`padding` must be either 'VALID' or 'SAME'"):
        tf.nn.atrous_conv2d_transpose(X2, W2, [2, 5, 6, 4], 2, "FULL")
    with pytest.raises(ValueError, match="Stride attribute should contain 4 values, but got: 5"):
        tf.conv(X2, WF, [1] * 5, "SAME")
    with pytest.raises(ValueError, match="must be rank 4 or 5"):
        tf.conv(X1, W1, [1, 1, 1], "SAME")
    with pytest.raises(ValueError, match="explicit paddings are not supported"):
        tf.conv2d_backprop_input_v2(X2, WF, X2, [1] * 4, "EXPLICIT", explicit_paddings=[0] * 8)
