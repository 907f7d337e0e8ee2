"""`tf.layers`' 1-D layers, `conv2d_transpose`, the separable convolutions and `InputSpec`
(nbdist/ops/layers_conv_more.py, layers_conv.py): TF's variable names and shapes, and outputs
and gradients (inputs and variables) equal to real TF's `tf.compat.v1.layers` from the same
weights (TF's initial values loaded into nbdist's variables by name).

One graph per library for the whole module (CI time). channels_first is checked against
channels_last within nbdist: TF's CPU kernels have no NCHW convolution.
"""

import warnings

import numpy as np
import pytest

import nbdist as tf

pytestmark = pytest.mark.usefixtures("graph")

RNG = np.random.RandomState(0)
X1 = RNG.randn(2, 9, 3).astype(np.float32)  # [batch, width, channels]
X2 = RNG.randn(2, 5, 5, 3).astype(np.float32)  # [batch, height, width, channels]


def _model(t, x1, x2):
    """Every new layer, function and class forms, with the options learners' programs use."""
    l2 = lambda w: 0.01 * t.nn.l2_loss(w)  # noqa: E731 - a regularizer, as programs write it
    outputs = [
        t.layers.conv1d(x1, 4, 3, padding="same", activation=t.nn.relu, kernel_regularizer=l2),
        t.layers.conv1d(x1, 2, 2, strides=2, use_bias=False),
        t.layers.conv1d(x1, 2, 3, dilation_rate=2, bias_regularizer=t.reduce_sum),
        t.layers.max_pooling1d(x1, 2, 2),
        t.layers.average_pooling1d(x1, 3, 2, padding="same"),
        t.layers.MaxPooling1D(3, 1, padding="same")(x1),
        t.layers.conv2d_transpose(x2, 4, 3, strides=2, activation=t.nn.relu),
        t.layers.conv2d_transpose(x2, 2, (2, 3), strides=(2, 1), padding="same", kernel_regularizer=l2),
        t.layers.separable_conv2d(x2, 4, 3, depth_multiplier=2, pointwise_regularizer=l2),
        t.layers.separable_conv2d(x2, 3, 2, padding="same", dilation_rate=2, activation=t.nn.tanh),
        t.layers.separable_conv2d(x2, 2, 3, strides=2, padding="same", use_bias=False),
        t.layers.separable_conv1d(x1, 4, 3, depth_multiplier=2, depthwise_regularizer=l2),
        t.layers.separable_conv1d(x1, 3, 2, strides=2, padding="same", name="sep1"),
        t.layers.Conv1D(2, 3, padding="same")(x1),
        t.layers.Conv2DTranspose(2, 2, strides=2)(x2),
        t.layers.SeparableConv2D(2, 3)(x2),
        t.layers.SeparableConv1D(2, 3)(x1),
        t.layers.AveragePooling1D(2, 1)(x1),
    ]
    return outputs


def _run(t, values=None):
    """Builds `_model` in a new graph of `t`: names, outputs, regularization losses, and the
    gradients of a loss on every output wrt the inputs and the variables."""
    with t.Graph().as_default(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TF's tf.layers deprecation warnings
        x1, x2 = t.placeholder(t.float32, [None, 9, 3]), t.placeholder(t.float32, [None, 5, 5, 3])
        outputs = _model(t, x1, x2)
        loss = t.add_n([t.reduce_sum(y * y) for y in outputs]) + t.losses.get_regularization_loss()
        variables = t.global_variables()
        grads = t.gradients(loss, [x1, x2, *variables])
        regs = t.get_collection(t.GraphKeys.REGULARIZATION_LOSSES)
        with t.Session() as sess:
            sess.run(t.global_variables_initializer())
            for v in variables:
                if values is not None:
                    v.load(values[v.name], sess)
            state = {v.name: value for v, value in zip(variables, sess.run(variables), strict=True)}
            results = sess.run([*outputs, *regs, *grads], {x1: X1, x2: X2})
    return {
        "variables": [(v.name, v.shape.as_list()) for v in variables],
        "shapes": [y.shape.as_list() for y in outputs],
        "regs": len(regs),
        "state": state,
        "results": results,
    }


@pytest.fixture(scope="module")
def parity(tf1):
    theirs = _run(tf1)
    ours = _run(tf, theirs["state"])
    return ours, theirs


@pytest.mark.tf
def test_variable_names_and_shapes_match_tf(parity):
    ours, theirs = parity
    assert ours["variables"] == theirs["variables"]
    names = dict(ours["variables"])
    assert names["conv1d/kernel:0"] == [3, 3, 4]
    assert names["conv2d_transpose/kernel:0"] == [3, 3, 4, 3]
    assert names["separable_conv2d/depthwise_kernel:0"] == [3, 3, 3, 2]
    assert names["separable_conv2d/pointwise_kernel:0"] == [1, 1, 6, 4]
    assert names["separable_conv1d/pointwise_kernel:0"] == [1, 6, 4]
    assert "sep1/bias:0" in names and "conv1d_1/bias:0" not in names  # use_bias=False


@pytest.mark.tf
def test_static_shapes_and_regularization_losses_match_tf(parity):
    ours, theirs = parity
    assert ours["shapes"] == theirs["shapes"]
    assert ours["regs"] == theirs["regs"] == 5


@pytest.mark.tf
def test_outputs_and_gradients_match_tf(parity):
    ours, theirs = parity
    assert len(ours["results"]) == len(theirs["results"])
    for a, b in zip(ours["results"], theirs["results"], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


def test_channels_first_equals_channels_last():
    x1 = tf.constant(X1)
    x2 = tf.constant(X2)
    init = tf.random_normal_initializer(seed=1)
    pairs = []
    for fmt in ("channels_last", "channels_first"):
        first = fmt == "channels_first"
        a = tf.transpose(x1, [0, 2, 1]) if first else x1
        b = tf.transpose(x2, [0, 3, 1, 2]) if first else x2
        with tf.variable_scope(fmt, initializer=init):
            ys = [
                tf.layers.conv1d(a, 2, 3, padding="same", data_format=fmt, name="c1"),
                tf.layers.max_pooling1d(a, 2, 2, data_format=fmt),
                tf.layers.average_pooling1d(a, 2, 1, data_format=fmt),
                tf.layers.conv2d_transpose(b, 2, 3, strides=2, data_format=fmt, name="ct"),
                tf.layers.separable_conv2d(b, 2, 3, data_format=fmt, name="s2"),
                tf.layers.separable_conv1d(a, 2, 3, data_format=fmt, name="s1"),
            ]
        if first:
            ys = [tf.transpose(y, [0, 2, 1] if y.shape.ndims == 3 else [0, 2, 3, 1]) for y in ys]
        pairs.append(ys)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for v in tf.global_variables():  # the same weights in both scopes
            if v.name.startswith("channels_first/"):
                twin = tf.get_default_graph().get_tensor_by_name(
                    v.name.replace("channels_first/", "channels_last/")
                )
                v.load(sess.run(twin), sess)
        last, first = sess.run(pairs)
    for a, b in zip(last, first, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_reuse_and_unique_scopes():
    x = tf.placeholder(tf.float32, [None, 9, 3])
    tf.layers.conv1d(x, 2, 3, name="c")
    tf.layers.conv1d(x, 2, 3, name="c", reuse=True)
    tf.layers.separable_conv1d(x, 2, 3)
    tf.layers.separable_conv1d(x, 2, 3)
    y = tf.placeholder(tf.float32, [None, 4, 4, 3])
    layer = tf.layers.Conv2DTranspose(2, 3)
    layer(y)
    layer(y)
    names = [v.name for v in tf.global_variables()]
    assert names == [
        "c/kernel:0",
        "c/bias:0",
        "separable_conv1d/depthwise_kernel:0",
        "separable_conv1d/pointwise_kernel:0",
        "separable_conv1d/bias:0",
        "separable_conv1d_1/depthwise_kernel:0",
        "separable_conv1d_1/pointwise_kernel:0",
        "separable_conv1d_1/bias:0",
        "conv2d_transpose/kernel:0",
        "conv2d_transpose/bias:0",
    ]
    assert layer.kernel.shape.as_list() == [3, 3, 2, 3]


def test_conv2d_transpose_dynamic_spatial_size():
    x = tf.placeholder(tf.float32, [None, None, None, 3])
    y = tf.layers.conv2d_transpose(x, 2, 3, strides=2)
    assert y.shape.as_list() == [None, None, None, 2]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(y, {x: X2}).shape == (2, 11, 11, 2)


def test_bad_arguments_say_what_was_wrong():
    x = tf.placeholder(tf.float32, [None, 9, 3])
    with pytest.raises(ValueError, match="kernel_size must be an int or an int"):
        tf.layers.conv1d(x, 2, (3, 3))
    with pytest.raises(ValueError, match="takes 3-D inputs"):
        tf.layers.conv1d(tf.placeholder(tf.float32, [None, 4, 4, 3]), 2, 3)
    with pytest.raises(ValueError, match="padding must be"):
        tf.layers.max_pooling1d(x, 2, 2, padding="full")
    with pytest.raises(ValueError, match="channel dimension"):
        tf.layers.separable_conv2d(tf.placeholder(tf.float32, [None, 4, 4, None]), 2, 3)


def test_input_spec_fields_as_tf(tf1):
    theirs = tf1.layers.InputSpec(dtype="float32", shape=(None, 4), axes={"1": 4})
    ours = tf.layers.InputSpec(dtype="float32", shape=(None, 4), axes={"1": 4})
    for field in ("dtype", "shape", "ndim", "max_ndim", "min_ndim", "axes"):
        assert getattr(ours, field) == getattr(theirs, field), field
    assert ours.get_config() == {k: v for k, v in theirs.get_config().items() if k in ours.get_config()}
    assert tf.layers.InputSpec(min_ndim=2).ndim is None
    assert repr(tf.layers.InputSpec(ndim=4)) == repr(tf1.layers.InputSpec(ndim=4))
