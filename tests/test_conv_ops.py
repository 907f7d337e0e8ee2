"""Convolutions and bias_add (`nbdist.ops.conv_ops`): values and gradients against real TF.

Each case builds the same graph in nbdist and in ``tensorflow.compat.v1`` from constants and
compares the output and the gradients of ``sum(y * c)`` (a fixed random `c`) wrt every float
input, in float64. NCHW cases are compared with TF's NHWC op between transposes (TF's CPU
kernels do not all take NCHW), so the reference never depends on which TF build runs.
"""

import numpy as np
import pytest

import nbdist as tf
from nbdist.export import to_tensorflow

_RNG = np.random.default_rng(29)


def r(*shape):
    return _RNG.standard_normal(shape)


def nchw(x):
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2))


def run_both(tf1, build, inputs, fmt="NHWC", dtype=np.float64):
    """``{"nbdist": [y, *grads], "tf": [...]}`` of ``build(module, fmt, *tensors)``.

    For TF and NCHW, `build` runs in NHWC between transposes of the 4-D inputs and output.
    """
    out = {}
    for label, t in (("nbdist", tf), ("tf", tf1)):
        with t.Graph().as_default():
            xs = [t.constant(np.asarray(x, dtype)) for x in inputs]
            if label == "tf" and fmt == "NCHW":
                to_nhwc = [
                    t.transpose(x, [0, 2, 3, 1]) if x.shape.ndims == 4 and i == 0 else x
                    for i, x in enumerate(xs)
                ]
                y = t.transpose(build(t, "NHWC", *to_nhwc), [0, 3, 1, 2])
            else:
                y = build(t, fmt, *xs)
            c = t.constant(np.random.default_rng(1).standard_normal(y.shape.as_list()).astype(dtype))
            grads = t.gradients(y, xs, grad_ys=c)
            with t.Session() as sess:
                out[label] = sess.run([y, *grads])
    return out


def assert_matches_tf(tf1, build, inputs, fmt="NHWC", dtype=np.float64):
    """Float64 to 1e-10; float32 (where TF's CPU kernels take dilations only in float32) to 1e-4."""
    got = run_both(tf1, build, inputs, fmt, dtype)
    atol, rtol = (1e-10, 1e-9) if dtype == np.float64 else (1e-4, 1e-5)
    for i, (a, b) in enumerate(zip(got["nbdist"], got["tf"])):
        what = "value" if i == 0 else f"gradient wrt input {i - 1}"
        assert np.shape(a) == np.shape(b), f"{what}: nbdist shape {np.shape(a)}, TF {np.shape(b)}"
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=what)
    return max(float(np.max(np.abs(a - b), initial=0.0)) for a, b in zip(got["nbdist"], got["tf"]))


# (x NHWC, filter, strides, padding, dilations): 1x1, odd sizes, stride > kernel, dilation, batch 1
CONV_CASES = {
    "1x1-valid": ((1, 5, 5, 3), (1, 1, 3, 2), 1, "VALID", 1),
    "odd-same-stride2x3": ((2, 7, 5, 3), (3, 2, 3, 4), [2, 3], "SAME", 1),
    "stride-over-kernel-same": ((1, 9, 8, 2), (2, 2, 2, 3), 3, "SAME", 1),
    "stride-over-kernel-valid": ((2, 9, 8, 2), (2, 2, 2, 3), 3, "VALID", 1),
    "dilation2-same": ((2, 8, 7, 2), (3, 3, 2, 2), 1, "SAME", 2),
    "dilation2x3-valid": ((1, 9, 10, 2), (2, 3, 2, 2), 1, "VALID", [2, 3]),
    "dilation-and-stride": ((1, 9, 9, 2), (3, 3, 2, 2), 2, "SAME", 2),
    "kernel-as-input-valid": ((1, 3, 4, 2), (3, 4, 2, 1), 1, "VALID", 1),
}


def _four(v, fmt):
    v = [v, v] if isinstance(v, int) else list(v)
    return [1, *v, 1] if fmt == "NHWC" else [1, 1, *v]


@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
@pytest.mark.parametrize("case", list(CONV_CASES), ids=list(CONV_CASES))
def test_conv2d_matches_tf(tf1, case, fmt):
    x_shape, w_shape, strides, padding, dilations = CONV_CASES[case]
    x = r(*x_shape)

    def build(t, f, x, w):
        return t.nn.conv2d(x, w, _four(strides, f), padding, data_format=f, dilations=_four(dilations, f))

    dtype = np.float32 if dilations != 1 else np.float64
    assert_matches_tf(tf1, build, [nchw(x) if fmt == "NCHW" else x, r(*w_shape)], fmt, dtype)


@pytest.mark.parametrize("case", ["odd-same-stride2x3", "stride-over-kernel-valid", "dilation2-same"])
def test_conv2d_transpose_matches_tf(tf1, case):
    x_shape, w_shape, strides, padding, dilations = CONV_CASES[case]
    with tf.Graph().as_default():
        y_shape = tf.nn.conv2d(
            tf.zeros(x_shape), tf.zeros(w_shape), strides, padding, dilations=dilations
        ).shape
    value = r(*y_shape.as_list())

    def build(t, f, v, w):
        return t.nn.conv2d_transpose(
            v, w, list(x_shape), _four(strides, f), padding, dilations=_four(dilations, f)
        )

    assert_matches_tf(tf1, build, [value, r(*w_shape)], dtype=np.float32 if dilations != 1 else np.float64)


@pytest.mark.parametrize(
    "case",
    [
        "1x1-valid",
        "stride-over-kernel-same",
        "stride-over-kernel-valid",
        "dilation2-same",
        "dilation2x3-valid",
    ],
)
def test_depthwise_conv2d_matches_tf(tf1, case):
    x_shape, w_shape, strides, padding, dilations = CONV_CASES[case]
    w_shape = (*w_shape[:3], 2)  # channel multiplier 2

    def build(t, f, x, w):
        rate = [dilations, dilations] if isinstance(dilations, int) else dilations
        return t.nn.depthwise_conv2d(
            x, w, _four(strides, f), padding, rate=rate
        )  # TF: SpaceToBatch if rate > 1

    assert_matches_tf(tf1, build, [r(*x_shape), r(*w_shape)])


def test_depthwise_conv2d_nchw_matches_tf(tf1):
    def build(t, f, x, w):
        return t.nn.depthwise_conv2d(x, w, _four(2, f), "SAME", data_format=f)

    assert_matches_tf(tf1, build, [nchw(r(2, 7, 6, 3)), r(3, 3, 3, 2)], "NCHW")


@pytest.mark.parametrize("rate", [1, 2])
def test_separable_conv2d_matches_tf(tf1, rate):
    def build(t, f, x, dw, pw):
        return t.nn.separable_conv2d(x, dw, pw, [1, 1, 1, 1], "SAME", rate=[rate, rate])

    assert_matches_tf(tf1, build, [r(2, 6, 7, 3), r(3, 3, 3, 2), r(1, 1, 6, 4)])


def test_separable_conv2d_names_its_ops_as_tf():
    with tf.Graph().as_default() as g:
        y = tf.nn.separable_conv2d(
            tf.zeros([1, 4, 4, 2]), tf.zeros([3, 3, 2, 1]), tf.zeros([1, 1, 2, 3]), 1, "SAME"
        )
        assert y.name == "separable_conv2d:0" and y.op.type == "Conv2D"
        assert g.get_operation_by_name("separable_conv2d/depthwise").type == "DepthwiseConv2dNative"


@pytest.mark.parametrize(
    ("shape", "fmt"), [((2, 3, 4, 5), "NHWC"), ((2, 5, 3, 4), "NCHW"), ((2, 4, 3), "NCHW"), ((3, 4), "NHWC")]
)
def test_bias_add_matches_tf(tf1, shape, fmt):
    channels = shape[1] if fmt == "NCHW" else shape[-1]

    def build(t, f, v, b):
        return t.nn.bias_add(v, b, data_format=fmt)

    assert_matches_tf(tf1, build, [r(*shape), r(channels)])


def test_bias_add_grad_is_tf_op_type():
    with tf.Graph().as_default():
        v, b = tf.zeros([2, 3, 4, 5]), tf.zeros([3])
        (g,) = tf.gradients(tf.nn.bias_add(v, b, data_format="NCHW"), [b])
        assert g.op.type == "BiasAddGrad" and g.op.get_attr("data_format") == "NCHW"


# -- shapes and errors -------------------------------------------------------------------------------------
def test_conv2d_static_shape_with_unknown_batch():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 28, 28, 1])
        y = tf.nn.conv2d(x, tf.zeros([5, 5, 1, 32]), strides=[1, 2, 2, 1], padding="SAME")
        assert y.shape.as_list() == [None, 14, 14, 32]
        (dx,) = tf.gradients(tf.reduce_sum(y), [x])
        assert dx.shape.ndims == 4


def test_conv2d_rejects_a_channel_mismatch():
    with (
        tf.Graph().as_default(),
        pytest.raises(ValueError, match=r"Conv2D: input .* has 3 channels but filter"),
    ):
        tf.nn.conv2d(tf.zeros([1, 4, 4, 3]), tf.zeros([2, 2, 2, 1]), 1, "SAME")


def test_conv2d_rejects_a_valid_window_larger_than_the_input():
    with tf.Graph().as_default(), pytest.raises(ValueError, match=r"the VALID output would be empty"):
        tf.nn.conv2d(tf.zeros([1, 2, 4, 1]), tf.zeros([3, 3, 1, 1]), 1, "VALID")


def test_conv2d_rejects_a_batch_stride():
    with tf.Graph().as_default(), pytest.raises(ValueError, match=r"strides \[2, 1, 1, 1\] asks for a value"):
        tf.nn.conv2d(tf.zeros([1, 4, 4, 1]), tf.zeros([1, 1, 1, 1]), [2, 1, 1, 1], "SAME")


def test_conv2d_rejects_explicit_padding():
    with tf.Graph().as_default(), pytest.raises(ValueError, match=r"padding \[\[0, 0\].* pad with tf.pad"):
        tf.nn.conv2d(tf.zeros([1, 4, 4, 1]), tf.zeros([1, 1, 1, 1]), 1, [[0, 0], [1, 1], [1, 1], [0, 0]])


def test_depthwise_conv2d_rejects_rate_with_strides():
    with tf.Graph().as_default(), pytest.raises(ValueError, match=r"all values of strides must be 1"):
        tf.nn.depthwise_conv2d(
            tf.zeros([1, 4, 4, 1]), tf.zeros([2, 2, 1, 1]), [1, 2, 2, 1], "SAME", rate=[2, 2]
        )


def test_conv2d_checks_shapes_at_run_time():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, None)
        y = tf.nn.conv2d(x, tf.zeros([2, 2, 3, 1]), 1, "SAME")
        with (
            tf.Session() as sess,
            pytest.raises(tf.errors.InvalidArgumentError, match=r"Conv2D: input \[1, 4, 4, 2\]"),
        ):
            sess.run(y, {x: np.zeros([1, 4, 4, 2], np.float32)})


def test_bias_add_nchw_needs_rank_3():
    with (
        tf.Graph().as_default(),
        pytest.raises(ValueError, match=r"value must have rank >= 3, got shape \(2, 4\) \(NCHW\)"),
    ):
        tf.nn.bias_add(tf.zeros([2, 4]), tf.zeros([4]), data_format="NCHW")


def test_a_conv_net_and_its_gradients_export_to_tf(tf1):
    rng = np.random.default_rng(5)
    xv = rng.standard_normal((2, 6, 6, 2)).astype(np.float32)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 6, 6, 2], name="x")
        w = tf.Variable(rng.standard_normal((3, 3, 2, 4)).astype(np.float32), name="w")
        dw = tf.Variable(rng.standard_normal((2, 2, 4, 2)).astype(np.float32), name="dw")
        y = tf.nn.bias_add(tf.nn.conv2d(x, w, 2, "SAME"), tf.Variable(np.ones(4, np.float32), name="b"))
        z = tf.nn.depthwise_conv2d(y, dw, [1, 1, 1, 1], "VALID")
        t = tf.nn.conv2d_transpose(
            z, tf.constant(rng.standard_normal((2, 2, 3, 8)), tf.float32), [2, 3, 3, 3], 1, "VALID"
        )
        loss = tf.reduce_sum(tf.square(t), name="loss")
        fetches = [loss, *tf.gradients(loss, [w, dw, x])]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            ours = sess.run(fetches, {x: xv})
            exported = to_tensorflow(session=sess)
    with tf1.Session(graph=exported.graph) as tf_sess:
        exported.initialize(tf_sess)
        theirs = tf_sess.run([exported[f.name] for f in fetches], {exported["x:0"]: xv})
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5 * np.max(np.abs(b)))
