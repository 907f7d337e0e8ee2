"""3-D convolution and pooling: `tf.nn.conv3d`, `conv3d_backprop_filter(_v2)`, `conv3d_transpose`,
`max_pool3d`, `avg_pool3d` (nbdist/ops/conv3d_ops.py, pool3d_ops.py), `tf.nn.convolution` and
`tf.nn.pool` in 3-D and `tf.layers`' 3-D layers
(layers_conv3d.py): values, static shapes and gradients equal real TF's on the same inputs and
weights; NCDHW is checked against NDHWC within nbdist."""

import warnings

import numpy as np
import pytest

import nbdist as tf

RNG = np.random.RandomState(3)
X = RNG.randn(2, 5, 6, 4, 3).astype(np.float32)  # [batch, depth, height, width, channels]
W = RNG.randn(2, 3, 2, 3, 4).astype(np.float32)  # [kd, kh, kw, in, out]
WT = RNG.randn(2, 2, 3, 5, 3).astype(np.float32)  # transposed: [kd, kh, kw, out, in]
TIES = np.round(RNG.rand(1, 3, 4, 3, 2) * 2).astype(np.float32)  # many equal maxima


def _ops(t):
    """Every 3-D op with its gradients, in `t`'s graph; returns ``(fetches, static shapes)``."""
    x, w, ties = t.constant(X), t.constant(W), t.constant(TIES)
    ys = [
        t.nn.conv3d(x, w, [1, 1, 1, 1, 1], "SAME"),
        t.nn.conv3d(x, w, [1, 2, 1, 2, 1], "VALID"),
        t.nn.conv3d(input=x, filters=w, strides=[1, 2, 2, 1, 1], padding="SAME", name="c3"),
        t.nn.conv3d(x, w, [1] * 5, "VALID", dilations=[1, 2, 1, 1, 1]),
        t.nn.conv3d_transpose(x, t.constant(WT), [2, 10, 12, 8, 5], [1, 2, 2, 2, 1], "SAME"),
        t.nn.conv3d_transpose(x, t.constant(WT), [2, 6, 7, 6, 5], [1] * 5, "VALID"),
        t.nn.conv3d_backprop_filter(x, [2, 3, 2, 3, 4], t.ones([2, 5, 6, 4, 4]), [1] * 5, "SAME"),
        t.nn.conv3d_backprop_filter_v2(x, [1, 2, 2, 3, 2], t.ones([2, 3, 3, 2, 2]), [1, 2, 2, 2, 1], "SAME"),
        t.nn.max_pool3d(x, 2, 2, "SAME"),
        t.nn.max_pool3d(x, [1, 3, 2, 2, 1], [1, 1, 2, 1, 1], "VALID"),
        t.nn.max_pool3d(ties, 2, 1, "SAME"),
        t.nn.avg_pool3d(x, 2, 2, "SAME"),
        t.nn.avg_pool3d(x, [3, 2, 2], [2, 1, 2], "SAME"),
        t.nn.avg_pool3d(x, [1, 1, 3, 1, 1], [1, 1, 1, 1, 1], "VALID"),
        t.nn.convolution(x, w, "SAME", strides=[2, 1, 1]),
        t.nn.convolution(x, w, "VALID", dilation_rate=[1, 2, 1]),
        t.nn.pool(x, [2, 2, 2], "MAX", "SAME", strides=[2, 2, 2]),
        t.nn.pool(x, [3, 1, 2], "AVG", "VALID", strides=[1, 1, 2]),
    ]
    grads = []
    for y in ys:
        ins = [v for v in (x, w, ties) if t.gradients(y, v)[0] is not None]
        grads += t.gradients(t.reduce_sum(y * y * 0.5 + y), ins)
    # second order through the pools: MaxPool3DGrad / MaxPool3DGradGrad / AvgPool3DGrad
    for pool, inp in ((t.nn.max_pool3d, ties), (t.nn.max_pool3d, x), (t.nn.avg_pool3d, x)):
        y = pool(inp, 2, 1, "SAME")
        ones = t.ones_like(y)
        gx = t.gradients(y, inp, grad_ys=ones)[0]
        grads += t.gradients(gx, ones, grad_ys=t.sin(inp))
    return ys + grads, [y.shape.as_list() for y in ys]


def _run(t):
    with t.Graph().as_default():
        fetches, shapes = _ops(t)
        with t.Session() as sess:
            return sess.run(fetches), shapes


@pytest.mark.tf
def test_3d_ops_and_gradients_match_tf(tf1):
    (ours, our_shapes), (theirs, their_shapes) = _run(tf), _run(tf1)
    assert our_shapes == their_shapes
    assert len(ours) == len(theirs)
    for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        assert a.shape == b.shape and a.dtype == b.dtype, i
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4, err_msg=f"fetch {i}")


def test_ncdhw_equals_ndhwc(graph):
    x, w = tf.constant(X), tf.constant(W)
    xc = tf.transpose(x, [0, 4, 1, 2, 3])
    back = lambda y: tf.transpose(y, [0, 2, 3, 4, 1])  # noqa: E731
    pairs = [
        (tf.nn.conv3d(x, w, [1, 2, 1, 2, 1], "SAME"), tf.nn.conv3d(xc, w, [1, 1, 2, 1, 2], "SAME", "NCDHW")),
        (tf.nn.max_pool3d(x, 2, 2, "SAME"), tf.nn.max_pool3d(xc, 2, 2, "SAME", data_format="NCDHW")),
        (tf.nn.avg_pool3d(x, 3, 2, "SAME"), tf.nn.avg_pool3d(xc, 3, 2, "SAME", data_format="NCDHW")),
    ]
    fetches = []
    for a, b in pairs:
        fetches += [
            a,
            back(b),
            tf.gradients(tf.reduce_sum(a * a), x)[0],
            tf.gradients(tf.reduce_sum(b * b), x)[0],
        ]
    with tf.Session() as sess:
        values = sess.run(fetches)
    for a, b in zip(values[::2], values[1::2], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_3d_errors(graph):
    x = tf.placeholder(tf.float32, [1, 4, 4, 4, 2])
    with pytest.raises(ValueError, match=r"input depth 2 .* filter"):
        tf.nn.conv3d(x, tf.zeros([2, 2, 2, 3, 1]), [1] * 5, "SAME")
    with pytest.raises(ValueError, match="must be 5-dimensional"):
        tf.nn.conv3d(tf.zeros([1, 4, 4, 2]), tf.zeros([2, 2, 2, 2, 1]), [1] * 5, "SAME")
    with pytest.raises(ValueError, match="batch and depth dimensions"):
        tf.nn.conv3d(x, tf.zeros([2, 2, 2, 2, 1]), [2, 1, 1, 1, 1], "SAME")
    with pytest.raises(ValueError, match="ksize should be an int or a list of 1 or 3 or 5 ints"):
        tf.nn.max_pool3d(x, [2, 2], 1, "SAME")
    with pytest.raises(ValueError, match="VALID output would be empty"):
        tf.nn.avg_pool3d(x, 5, 1, "VALID")
    with pytest.raises(ValueError, match="padding 'FULL' is not supported"):
        tf.nn.max_pool3d(x, 2, 1, "FULL")
    with pytest.raises(TypeError, match="floating point"):
        tf.nn.max_pool3d(tf.zeros([1, 2, 2, 2, 1], tf.int32), 2, 1, "SAME")
    with pytest.raises(ValueError, match="4 channels but the filter's fourth dimension is 3"):
        tf.nn.conv3d_transpose(x, tf.zeros([2, 2, 2, 3, 2]), [1, 8, 8, 8, 4], [1, 2, 2, 2, 1])


# -- tf.layers ---------------------------------------------------------------------------------------------
def _layers(t, x):
    l2 = lambda w: 0.01 * t.nn.l2_loss(w)  # noqa: E731 - a regularizer, as programs write it
    return [
        t.layers.conv3d(x, 4, 3, padding="same", activation=t.nn.relu, kernel_regularizer=l2),
        t.layers.conv3d(x, 2, (2, 3, 1), strides=(1, 2, 2), use_bias=False),
        t.layers.conv3d(x, 2, 2, dilation_rate=(2, 1, 1), name="dil"),
        t.layers.Conv3D(3, 2, strides=2, padding="same")(x),
        t.layers.conv3d_transpose(x, 4, 3, strides=2, activation=t.nn.tanh),
        t.layers.conv3d_transpose(x, 2, (2, 3, 2), strides=(2, 1, 2), padding="same", kernel_regularizer=l2),
        t.layers.Conv3DTranspose(2, 2, strides=2)(x),
        t.layers.max_pooling3d(x, 2, 2),
        t.layers.average_pooling3d(x, 3, 2, padding="same"),
        t.layers.MaxPooling3D((1, 2, 2), 1, padding="same")(x),
        t.layers.AveragePooling3D(2, (1, 2, 1))(x),
    ]


def _run_layers(t, values=None):
    with t.Graph().as_default(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TF's tf.layers deprecation warnings
        x = t.placeholder(t.float32, [None, 5, 6, 4, 3])
        outputs = _layers(t, x)
        loss = t.add_n([t.reduce_sum(y * y) for y in outputs]) + t.losses.get_regularization_loss()
        variables = t.global_variables()
        grads = t.gradients(loss, [x, *variables])
        with t.Session() as sess:
            sess.run(t.global_variables_initializer())
            for v in variables:
                if values is not None:
                    v.load(values[v.name], sess)
            state = {v.name: value for v, value in zip(variables, sess.run(variables), strict=True)}
            results = sess.run([*outputs, *grads], {x: X})
    return {
        "variables": [(v.name, v.shape.as_list()) for v in variables],
        "shapes": [y.shape.as_list() for y in outputs],
        "state": state,
        "results": results,
    }


@pytest.mark.tf
def test_3d_layers_match_tf(tf1):
    theirs = _run_layers(tf1)
    ours = _run_layers(tf, theirs["state"])
    assert ours["variables"] == theirs["variables"]
    names = dict(ours["variables"])
    assert names["conv3d/kernel:0"] == [3, 3, 3, 3, 4]
    assert names["conv3d_transpose/kernel:0"] == [3, 3, 3, 4, 3]
    assert "conv3d_1/bias:0" not in names and "dil/bias:0" in names
    assert ours["shapes"] == theirs["shapes"]
    for a, b in zip(ours["results"], theirs["results"], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


def test_3d_layers_channels_first_equal_channels_last(graph):
    x = tf.constant(X)
    init = tf.random_normal_initializer(seed=1)
    pairs = []
    for fmt in ("channels_last", "channels_first"):
        first = fmt == "channels_first"
        a = tf.transpose(x, [0, 4, 1, 2, 3]) if first else x
        with tf.variable_scope(fmt, initializer=init):
            ys = [
                tf.layers.conv3d(a, 2, 3, padding="same", data_format=fmt, name="c"),
                tf.layers.conv3d_transpose(a, 2, 2, strides=2, data_format=fmt, name="t"),
                tf.layers.max_pooling3d(a, 2, 2, data_format=fmt),
                tf.layers.average_pooling3d(a, 2, 1, padding="same", data_format=fmt),
            ]
        pairs.append([tf.transpose(y, [0, 2, 3, 4, 1]) for y in ys] if first else ys)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for v in tf.global_variables():
            if v.name.startswith("channels_first/"):
                twin = tf.get_default_graph().get_tensor_by_name(
                    v.name.replace("channels_first/", "channels_last/")
                )
                v.load(sess.run(twin), sess)
        last, first = sess.run(pairs)
    for a, b in zip(last, first, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
