"""`tf.gradients`: every differentiable op against finite differences, and the API's behaviours."""

import numpy as np
import pytest

import nbdist as tf
from gradcheck import check_gradients
from nbdist.ops import index_ops, math_ops, reduction_ops, registry, unary_ops

_RNG = np.random.default_rng(1234)


def r(*shape):
    """Standard normal values (away from 0, so |x| and relu have a derivative)."""
    x = _RNG.standard_normal(shape)
    return np.where(np.abs(x) < 0.05, 0.3, x)


def _untied(x):
    """`x` with distinct small offsets: max-based ops need no ties (`r` maps |x| < 0.05 to 0.3)."""
    return x + np.arange(x.size).reshape(x.shape) * 1e-3


def p(*shape):
    """Positive values in [0.5, 2) (for log, sqrt, division)."""
    return _RNG.uniform(0.5, 2.0, shape)


def _second_order(f):
    """``x -> d sum(f(x) * c) / dx``: checks the gradient of the gradient (c fixed, not all ones)."""

    def g(x):
        y = f(x)
        c = tf.constant(_RNG.standard_normal(y.shape.as_list()), dtype=tf.float64)
        return tf.gradients(tf.reduce_sum(y * c), x)[0]

    return g


def _bias_add_grad(g, data_format):
    """The `BiasAddGrad` of `g` (the bias's gradient when `g` is the output's)."""
    bias = tf.zeros([g.shape[1 if data_format == "NCHW" else -1]], tf.float64)
    return tf.gradients(tf.nn.bias_add(tf.zeros_like(g), bias, data_format), [bias], grad_ys=g)[0]


def dist(*shape):
    """Rows that are probability distributions (cross-entropy labels; TF assumes they sum to 1)."""
    x = p(*shape)
    return x / x.sum(axis=-1, keepdims=True)


def _f64(value):
    return tf.constant(value, dtype=tf.float64)


LOOSE = {"eps": 1e-3, "rtol": 1e-4, "atol": 1e-4}  # through float32: rounding error dominates
# tf.image computes in float32 (sums over many pixels): a wider step, looser bounds
FLOAT32_IMAGE = {"eps": 1e-2, "rtol": 1e-3, "atol": 1e-3}


# (op type the case checks, fn, inputs[, check_gradients kwargs]); one case at least per
# differentiable op type, more where the gradient has several paths (transposes, axes, broadcasts).
def _complex_parts(z):
    """A complex tensor's real and imaginary parts, stacked: both checked as real outputs."""
    return tf.stack([tf.real(z), tf.imag(z)])


def _after_assert(condition, value):
    with tf.control_dependencies([tf.Assert(condition, [condition])]):
        return tf.identity(value)


CASES = [
    ("Abs", tf.abs, [r(2, 3)]),
    ("Add", lambda x, y: x + y, [r(2, 3), r(3)]),
    ("AddN", lambda x, y: tf.add_n([x, y, x]), [r(2, 2), r(2, 2)]),
    ("BiasAdd", tf.nn.bias_add, [r(2, 3, 4), r(4)]),
    ("BroadcastToLike", lambda x: math_ops.broadcast_to_like(x, tf.zeros([2, 3], tf.float64)), [r(1, 3)]),
    ("BiasAdd", lambda v, b: tf.nn.bias_add(v, b, data_format="NCHW"), [r(2, 3, 2, 2), r(3)]),
    ("BiasAddGrad", lambda g: _bias_add_grad(g, "NCHW"), [r(2, 3, 2, 2)]),
    ("Conv2D", lambda x, w: tf.nn.conv2d(x, w, 2, "SAME"), [r(1, 5, 4, 2), r(3, 2, 2, 3)]),
    ("Conv2D", lambda x, w: tf.nn.conv2d(x, w, 1, "VALID", dilations=2), [r(2, 5, 5, 1), r(2, 2, 1, 2)]),
    (
        "Conv2D",
        lambda x, w: tf.nn.conv2d(x, w, [1, 1, 3, 1], "SAME", data_format="NCHW"),
        [r(1, 2, 4, 5), r(2, 1, 2, 2)],
    ),
    (
        "Conv2DBackpropInput",
        lambda v, w: tf.nn.conv2d_transpose(v, w, [1, 5, 4, 2], 2),
        [r(1, 3, 2, 3), r(3, 2, 2, 3)],
    ),
    (
        "Conv2DBackpropFilter",
        lambda x, g: tf.nn.conv2d_backprop_filter(x, [2, 2, 2, 3], g, 2, "VALID"),
        [r(1, 5, 4, 2), r(1, 2, 2, 3)],
    ),
    (
        "DepthwiseConv2dNative",
        lambda x, w: tf.nn.depthwise_conv2d(x, w, [1, 2, 2, 1], "SAME"),
        [r(1, 5, 4, 2), r(3, 2, 2, 2)],
    ),
    (
        "DepthwiseConv2dNative",
        lambda x, w: tf.nn.depthwise_conv2d(x, w, 1, "VALID", rate=2),
        [r(1, 5, 5, 2), r(2, 2, 2, 1)],
    ),
    (
        "DepthwiseConv2dNativeBackpropInput",
        lambda w, g: tf.nn.depthwise_conv2d_native_backprop_input([1, 4, 3, 2], w, g, [1, 2, 2, 1], "SAME"),
        [r(2, 2, 2, 2), r(1, 2, 2, 4)],
    ),
    (
        "DepthwiseConv2dNativeBackpropFilter",
        lambda x, g: tf.nn.depthwise_conv2d_native_backprop_filter(x, [2, 2, 2, 2], g, 1, "VALID"),
        [r(1, 3, 3, 2), r(1, 2, 2, 4)],
    ),
    (
        "DepthwiseConv2dNative",
        lambda x, w: tf.nn.separable_conv2d(x, w, _f64(r(1, 1, 4, 3)), 1, "SAME"),
        [r(1, 3, 3, 2), r(2, 2, 2, 2)],
    ),
    ("MaxPool", lambda x: tf.nn.max_pool(x, 3, 2, "SAME"), [r(2, 5, 4, 2)]),
    ("MaxPool", lambda x: tf.nn.max_pool(x, [1, 1, 2, 2], [1, 1, 3, 1], "VALID", "NCHW"), [r(1, 2, 5, 4)]),
    ("MaxPoolGrad", _second_order(lambda x: tf.nn.max_pool(x * x, 2, 1, "SAME")), [r(1, 3, 4, 2)]),
    (
        "MaxPoolGradGrad",
        _second_order(_second_order(lambda x: tf.nn.max_pool(x * x * x, 2, 2, "SAME"))),
        [r(1, 3, 3, 1)],
    ),
    ("AvgPool", lambda x: tf.nn.avg_pool(x, [3, 2], 2, "SAME"), [r(2, 5, 4, 2)]),
    ("AvgPool", lambda x: tf.nn.avg_pool(x, 2, 3, "VALID", "NCHW"), [r(1, 2, 5, 5)]),
    ("AvgPoolGrad", _second_order(lambda x: tf.nn.avg_pool(x * x, 3, 2, "SAME")), [r(1, 5, 4, 2)]),
    ("LRN", lambda x: tf.nn.lrn(x, 2, 1.5, 0.3, 0.75), [r(2, 2, 1, 6)]),
    (
        "Conv3D",
        lambda x, w: tf.nn.conv3d(x, w, [1, 2, 1, 1, 1], "SAME"),
        [r(1, 3, 4, 3, 2), r(2, 2, 2, 2, 2)],
    ),
    (
        "Conv3D",
        lambda x, w: tf.nn.conv3d(x, w, [1] * 5, "VALID", "NCDHW", [1, 1, 2, 1, 1]),
        [r(1, 2, 3, 4, 3), r(1, 2, 2, 2, 1)],
    ),
    (
        "Conv3DBackpropInputV2",
        lambda w, dy: tf.nn.conv3d_transpose(dy, w, [1, 4, 3, 4, 2], [1, 2, 1, 2, 1]),
        [r(2, 2, 2, 2, 3), r(1, 2, 3, 2, 3)],
    ),
    (
        "Conv3DBackpropFilterV2",
        lambda x, dy: tf.nn.conv3d_backprop_filter_v2(x, [2, 2, 1, 2, 3], dy, [1, 1, 2, 1, 1], "SAME"),
        [r(1, 3, 4, 2, 2), r(1, 3, 2, 2, 3)],
    ),
    ("MaxPool3D", lambda x: tf.nn.max_pool3d(x, 2, [1, 2, 1], "SAME"), [_untied(r(1, 3, 4, 3, 2))]),
    (
        "MaxPool3DGrad",
        _second_order(lambda x: tf.nn.max_pool3d(x * x, 2, 1, "SAME")),
        [_untied(r(1, 2, 3, 2, 2))],
    ),
    (
        "MaxPool3DGradGrad",
        _second_order(_second_order(lambda x: tf.nn.max_pool3d(x * x * x, 2, 1, "VALID"))),
        [_untied(r(1, 2, 3, 3, 1))],
    ),
    ("AvgPool3D", lambda x: tf.nn.avg_pool3d(x, [2, 3, 2], 2, "SAME", "NCDHW"), [r(1, 2, 3, 4, 3)]),
    ("AvgPool3DGrad", _second_order(lambda x: tf.nn.avg_pool3d(x * x, 2, 1, "SAME")), [r(1, 3, 2, 3, 2)]),
    (
        "FractionalMaxPool",
        lambda x: tf.nn.fractional_max_pool(x, [1.0, 2.0, 1.5, 1.0], deterministic=True, seed=1, seed2=2)[0],
        [_untied(r(1, 4, 5, 2))],
    ),
    (
        "FractionalAvgPool",
        lambda x: tf.nn.fractional_avg_pool(x, [1.0, 1.5, 2.0, 1.0], True, True, True, 3, 4)[0],
        [r(2, 5, 4, 1)],
    ),
    (
        "CTCLoss",
        lambda x: tf.nn.ctc_loss(tf.SparseTensor([[0, 0], [0, 1], [1, 0]], [1, 0, 1], [2, 2]), x, [4, 3]),
        [r(4, 2, 3)],
    ),
    (
        "FusedBatchNormV3",
        lambda x, s, o: tf.nn.fused_batch_norm(x, s, o)[0] * tf.sin(x),
        [r(2, 3, 2, 3), p(3), r(3)],
    ),
    (
        "FusedBatchNormV3",
        lambda x, s, o: tf.nn.fused_batch_norm(x, s, o, [0.5, -1.0], [2.0, 0.5], 0.1, "NCHW", False)[0],
        [r(2, 2, 3, 2), p(2), r(2)],
    ),
    (
        "Dilation2D",
        lambda x, k: tf.nn.dilation2d(x, k, [1, 2, 1, 1], [1, 1, 2, 1], "SAME"),
        [_untied(r(1, 4, 5, 2)), r(2, 2, 2)],
    ),
    (
        "MaxPoolWithArgmax",
        lambda x: tf.nn.max_pool_with_argmax(x, [1, 2, 2, 1], [1, 2, 1, 1], "SAME")[0],
        [_untied(r(2, 4, 3, 2))],
    ),
    ("Cast", lambda x: tf.cast(tf.cast(x, tf.float32) * 3.0, tf.float64), [r(3)], LOOSE),
    ("ConcatV2", lambda x, y: tf.concat([x, y], axis=1), [r(2, 3), r(2, 1)]),
    ("ConcatV2", lambda x, y: tf.concat([x, y, x], axis=-2), [r(1, 3), r(2, 3)]),
    ("DynamicPartition", lambda d: tf.dynamic_partition(d, [1, 0, 1, 2], 3)[1] * 2.0, [r(4, 2)]),
    ("DynamicStitch", lambda a, b: tf.dynamic_stitch([[0, 3], [1, 4, 2]], [a, b]), [r(2, 2), r(3, 2)]),
    (
        "ParallelDynamicStitch",
        lambda a, b: index_ops.parallel_dynamic_stitch([[2, 0], [1]], [a, b]),
        [r(2, 3), r(1, 3)],
    ),
    ("Cos", tf.cos, [r(2, 3)]),
    ("Elu", tf.nn.elu, [r(2, 3)]),
    ("Exp", tf.exp, [r(2, 3)]),
    ("FloorMod", tf.floormod, [np.array([2.3, -1.7, 5.2]), np.array([1.1, 0.9, -2.1])]),
    ("ExpandDims", lambda x: tf.expand_dims(x, 1) * _f64([[[1.0], [2.0]]]), [r(3, 2)]),
    ("Fill", lambda s: tf.fill([2, 3], s), [np.array(0.7)]),
    (
        "GatherDropNegatives",
        lambda x: reduction_ops.gather_drop_negatives(x, tf.constant([2, -1, 0, 2])),
        [r(3, 2)],
    ),
    ("GatherV2", lambda x: tf.gather(x, [3, 0, 3]), [r(4, 2)]),
    ("Identity", tf.identity, [r(3)]),
    ("CheckNumerics", lambda x: tf.check_numerics(x, "m") * x, [r(2, 3)]),
    ("Print", lambda x: tf.Print(x * x, [x], first_n=0), [r(3)]),
    ("L2Loss", tf.nn.l2_loss, [r(2, 3)]),
    ("Log", tf.log, [p(2, 3)]),
    ("Log1p", tf.log1p, [p(2, 3)]),
    ("LogSoftmax", tf.nn.log_softmax, [r(2, 4)]),
    ("LogSoftmax", lambda x: tf.nn.log_softmax(x, axis=0), [r(3, 2)]),
    ("BatchMatMulV2", tf.matmul, [r(2, 3, 4), r(4, 2)]),
    ("BatchMatMulV2", lambda a, b: tf.matmul(a, b, transpose_a=True), [r(3, 1, 4, 2), r(2, 4, 3)]),
    ("BatchMatMulV2", lambda a, b: tf.matmul(a, b, transpose_b=True), [r(2, 2, 3), r(2, 4, 3)]),
    ("BatchMatMulV2", lambda a, b: tf.matmul(a, b, adjoint_a=True, adjoint_b=True), [r(2, 3, 2), r(1, 4, 3)]),
    ("MatMul", tf.matmul, [r(2, 3), r(3, 4)]),
    ("MatMul", lambda a, b: tf.matmul(a, b, transpose_a=True), [r(3, 2), r(3, 4)]),
    ("MatMul", lambda a, b: tf.matmul(a, b, transpose_b=True), [r(2, 3), r(4, 3)]),
    ("MatMul", lambda a, b: tf.matmul(a, b, transpose_a=True, transpose_b=True), [r(3, 2), r(4, 3)]),
    ("Max", lambda x: tf.reduce_max(x, axis=1), [r(3, 4)]),
    ("Max", lambda x: tf.reduce_max(x, axis=0, keepdims=True), [r(3, 2)]),
    ("Maximum", tf.maximum, [r(2, 3), r(3)]),
    ("Mean", lambda x: tf.reduce_mean(x, axis=[0, 2], keepdims=True), [r(2, 3, 2)]),
    ("Mean", tf.reduce_mean, [r(3, 2)]),
    ("Min", lambda x: tf.reduce_min(x, axis=0), [r(3, 4)]),
    ("Minimum", tf.minimum, [r(3), r(2, 3)]),
    ("Mul", lambda x, y: x * y, [r(2, 1), r(1, 3)]),
    ("Neg", tf.negative, [r(3)]),
    ("Pack", lambda x, y: tf.stack([x, y], axis=1), [r(2, 3), r(2, 3)]),
    ("Pad", lambda x: tf.pad(x, [[1, 0], [0, 2]]), [r(2, 3)]),
    ("PadV2", lambda x: tf.pad(x, [[0, 1], [2, 1]], constant_values=3.0), [r(2, 2)]),
    ("Pow", tf.pow, [p(2, 3), r(2, 3)]),
    ("RealDiv", lambda x, y: x / y, [r(2, 3), p(3)]),
    ("DivNoNan", tf.div_no_nan, [r(2, 3), p(3)]),
    ("Reciprocal", tf.reciprocal, [p(3)]),
    ("Relu", tf.nn.relu, [r(3, 3)]),
    ("Relu6", tf.nn.relu6, [r(3, 3) * 4.0]),
    ("ReluGrad", unary_ops.relu_backprop, [r(3, 3), r(3, 3)]),
    ("Reshape", lambda x: tf.reshape(x, [3, -1]) * _f64([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), [r(2, 3)]),
    ("Selu", tf.nn.selu, [r(2, 3)]),
    ("Select", lambda x, y: tf.where(x > 0.0, x * 2.0, y), [r(2, 3), r(2, 3)]),
    ("Sigmoid", tf.sigmoid, [r(2, 3)]),
    ("Sin", tf.sin, [r(2, 3)]),
    ("Slice", lambda x: tf.slice(x, [1, 0], [1, -1]), [r(3, 4)]),
    ("StridedSlice", lambda x: x[1:, ::2] * x[0, -1], [r(3, 4)]),
    ("StridedSliceGrad", lambda x: tf.gradients(tf.reduce_sum(tf.square(x[1:, 0])), [x])[0], [r(3, 2)]),
    ("Softmax", tf.nn.softmax, [r(2, 4)]),
    ("Softmax", lambda x: tf.nn.softmax(x, axis=1), [r(2, 3, 2)]),
    (
        "SoftmaxCrossEntropyWithLogits",
        lambda z, labels: tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=z),
        [r(2, 4), dist(2, 4)],
    ),
    (
        "SoftmaxCrossEntropyWithLogits",
        lambda z: tf.nn.softmax_cross_entropy_with_logits(labels=_f64([[0.2, 0.8, 0.0]]), logits=z),
        [r(1, 3)],
    ),
    ("Softplus", tf.nn.softplus, [r(2, 3)]),
    ("Softsign", tf.nn.softsign, [r(2, 3)]),
    (
        "SparseSoftmaxCrossEntropyWithLogits",
        lambda z: tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[2, 0], logits=z),
        [r(2, 3)],
    ),
    ("Sqrt", tf.sqrt, [p(2, 3)]),
    ("Square", tf.square, [r(2, 3)]),
    ("SquaredDifference", tf.squared_difference, [r(2, 3), r(3)]),
    ("Squeeze", lambda x: tf.squeeze(x, axis=1), [r(2, 1, 3)]),
    ("Sub", lambda x, y: x - y, [r(3), r(2, 3)]),
    ("Sum", lambda x: tf.reduce_sum(x, axis=1, keepdims=True), [r(2, 3)]),
    ("Sum", lambda x: tf.reduce_sum(x, reduction_indices=[-1, 0]), [r(2, 3, 2)]),
    ("SumToShape", lambda x: math_ops.sum_to_shape(x, tf.zeros([1, 3], tf.float64)), [r(2, 2, 3)]),
    ("Tanh", tf.tanh, [r(2, 3)]),
    ("TopKV2", lambda x: tf.nn.top_k(x, 2)[0], [r(3, 4)]),
    ("TopKV2", lambda x: tf.nn.top_k(x, 3)[0], [r(2, 2, 3)]),
    ("Transpose", lambda x: tf.transpose(x, [1, 2, 0]), [r(2, 3, 4)]),
    ("Transpose", tf.transpose, [r(2, 3)]),
    ("Tile", lambda x: tf.tile(x, [2, 1, 3]), [r(2, 3, 1)]),
    ("Tile", lambda x: tf.tile(x, [3]), [r(2)]),
    ("BroadcastTo", lambda x: tf.broadcast_to(x, [2, 3, 4]), [r(3, 1)]),
    ("Roll", lambda x: tf.roll(x, [1, -2], [0, -1]), [r(3, 4)]),
    ("ReverseSequence", lambda x: tf.reverse_sequence(x, [3, 0, 1], seq_axis=1), [r(3, 4, 2)]),
    ("IdentityN", lambda x, y: tf.identity_n([x, y])[0] * tf.identity_n([x, y])[1], [r(2, 3), r(2, 3)]),
    ("EnsureShape", lambda x: tf.ensure_shape(x, [None, 3]) ** 2, [r(2, 3)]),
    ("SpaceToBatchND", lambda x: tf.space_to_batch_nd(x, [2, 2], [[1, 0], [0, 1]]), [r(1, 3, 3, 2)]),
    ("BatchToSpaceND", lambda x: tf.batch_to_space_nd(x, [2, 1], [[1, 0], [0, 1]]), [r(4, 2, 3, 1)]),
    ("SpaceToDepth", lambda x: tf.space_to_depth(x, 2), [r(1, 2, 4, 2)]),
    ("DepthToSpace", lambda x: tf.nn.depth_to_space(x, 2), [r(1, 2, 1, 8)]),
    (
        "ExtractImagePatches",
        lambda x: tf.extract_image_patches(x, [1, 2, 3, 1], [1, 2, 1, 1], [1, 1, 2, 1], "SAME"),
        [r(2, 3, 4, 2)],
    ),
    (
        "ExtractVolumePatches",
        lambda x: tf.extract_volume_patches(x, [1, 2, 1, 2, 1], [1, 1, 2, 1, 1], "SAME"),
        [r(1, 3, 3, 2, 2)],
    ),
    ("Unpack", lambda x: tf.stack(tf.unstack(x, axis=1)[::-1]), [r(2, 3)]),
    ("UnsortedSegmentSum", lambda x: tf.unsorted_segment_sum(x, [0, 2, 0, -1], 3), [r(4, 2)]),
    # tf.math (issue 32 §3): the trigonometric and hyperbolic functions, erf, the x*f(y) ops, scans,
    # reductions, segments and complex parts
    ("Tan", tf.tan, [r(2, 3) * 0.4]),
    ("Asin", tf.asin, [np.tanh(r(2, 3)) * 0.8]),
    ("Acos", tf.acos, [np.tanh(r(2, 3)) * 0.8]),
    ("Atan", tf.atan, [r(2, 3)]),
    ("Sinh", tf.sinh, [r(2, 3)]),
    ("Cosh", tf.cosh, [r(2, 3)]),
    ("Asinh", tf.asinh, [r(2, 3)]),
    ("Acosh", tf.acosh, [p(2, 3) + 1.0]),
    ("Atanh", tf.atanh, [np.tanh(r(2, 3)) * 0.8]),
    ("Erf", tf.erf, [r(2, 3)]),
    ("Erfc", tf.erfc, [r(2, 3)]),
    ("Expm1", tf.expm1, [r(2, 3)]),
    ("Rsqrt", tf.rsqrt, [p(2, 3)]),
    ("Atan2", tf.atan2, [r(2, 3), r(3)]),
    ("MulNoNan", tf.math.multiply_no_nan, [r(2, 3), r(3)]),
    ("Xlogy", tf.math.xlogy, [r(2, 3), p(3)]),
    ("Xdivy", tf.math.xdivy, [r(2, 3), p(3)]),
    ("Xlog1py", tf.math.xlog1py, [r(3), p(2, 3)]),
    ("Cumsum", lambda x: tf.cumsum(x, 1, exclusive=True, reverse=True), [r(2, 3)]),
    ("Cumprod", lambda x: tf.cumprod(x, axis=1, exclusive=True), [r(2, 4)]),
    ("Cumprod", lambda x: tf.cumprod(x, reverse=True), [r(3, 2)]),
    ("CumulativeLogsumexp", lambda x: tf.math.cumulative_logsumexp(x, 1, reverse=True), [r(2, 3)]),
    ("Prod", lambda x: tf.reduce_prod(x, [0, 2]), [r(2, 3, 2)]),
    ("Prod", lambda x: tf.reduce_prod(x, 1, keepdims=True), [np.array([[0.0, 1.5, 2.0], [0.0, 0.0, 3.0]])]),
    ("EuclideanNorm", lambda x: tf.math.reduce_euclidean_norm(x, 1), [r(2, 3)]),
    ("SegmentSum", lambda x: tf.segment_sum(x, [0, 0, 2]), [r(3, 2)]),
    ("SegmentMean", lambda x: tf.segment_mean(x, [0, 0, 2]), [r(3, 2)]),
    ("SegmentMax", lambda x: tf.segment_max(x, [0, 0, 2]), [r(3, 2)]),
    ("SegmentMin", lambda x: tf.segment_min(x, [0, 1, 1]), [r(3, 2)]),
    (
        "SegmentProd",
        lambda x: tf.segment_prod(x, [0, 0, 1, 1]),
        [np.array([[0.0, 2.0], [3.0, 0.0], [0.0, 1.5], [0.0, 2.5]])],
    ),
    ("UnsortedSegmentMax", lambda x: tf.unsorted_segment_max(x, [1, -1, 1, 0], 2), [r(4, 2)]),
    ("UnsortedSegmentMin", lambda x: tf.unsorted_segment_min(x, [[1, -1], [1, 0]], 2), [r(2, 2, 3)]),
    (
        "UnsortedSegmentProd",
        lambda x: tf.unsorted_segment_prod(x, [1, -1, 1, 3], 4),
        [np.array([0.0, 2.0, 1.5, -1.0])],
    ),
    ("Complex", lambda x, y: tf.real(tf.complex(x, y)) + tf.imag(tf.complex(y, x)) * 2.0, [r(2, 3), r(3)]),
    ("Real", lambda x, y: tf.real(tf.complex(x, y)) * x, [r(2, 3), r(2, 3)]),
    ("Imag", lambda x, y: tf.imag(tf.complex(x, y)) * x, [r(2, 3), r(2, 3)]),
    ("Conj", lambda x, y: tf.imag(tf.conj(tf.complex(x, y))) * x, [r(2, 3), r(2, 3)]),
    ("Angle", lambda x, y: tf.angle(tf.complex(x, y)), [r(2, 3), r(2, 3)]),
    ("Switch", lambda x, y: tf.cond(tf.constant(True), lambda: x * y, lambda: x - y), [r(3), r(3)]),
    ("Merge", lambda x, y: tf.cond(tf.constant(False), lambda: x * y, lambda: x - tf.sin(y)), [r(3), r(3)]),
    (
        "Switch",
        lambda x: tf.cond(tf.reduce_sum(x) > 100.0, lambda: x, lambda: tf.constant(2.0, tf.float64)),
        [r(2)],
    ),
    ("ReverseV2", lambda x: tf.reverse(x, [1]), [r(2, 3)]),
    ("SplitV", lambda x: tf.split(x, [1, 2], axis=1)[1] * tf.split(x, 3, axis=1)[0], [r(2, 3)]),
    ("MatrixDiag", tf.matrix_diag, [r(2, 3)]),
    ("MatrixDiagPart", tf.matrix_diag_part, [r(2, 3, 4)]),
    ("MatrixSetDiag", tf.matrix_set_diag, [r(2, 3, 3), r(2, 3)]),
    ("Diag", tf.diag, [r(2, 2)]),
    ("DiagPart", tf.diag_part, [r(3, 3)]),
    ("MatrixInverse", tf.matrix_inverse, [r(2, 3, 3) + 3 * np.eye(3)]),
    ("MatrixInverse", lambda x: tf.matrix_inverse(x, adjoint=True), [r(3, 3) + 3 * np.eye(3)]),
    ("MatrixDeterminant", tf.matrix_determinant, [r(2, 3, 3)]),
    ("Cholesky", lambda x: tf.cholesky(tf.einsum("...ij,...kj->...ik", x, x) + 3 * np.eye(3)), [r(2, 3, 3)]),
    ("Cross", tf.cross, [r(2, 3), r(2, 3)]),
    ("Einsum", lambda a, b: tf.einsum("bij,bjk->bik", a, b), [r(2, 2, 3), r(2, 3, 2)]),
    ("Einsum", lambda a, b: tf.einsum("ij,k->jk", a, b), [r(2, 3), r(2)]),
    ("Einsum", lambda a, b: tf.einsum("...ij,...j->...i", a, b), [r(2, 3, 3), r(3)]),
    ("LogMatrixDeterminant", lambda x: tf.linalg.slogdet(x)[1], [r(2, 3, 3) + 3 * np.eye(3)]),
    ("MatrixBandPart", lambda x: tf.matrix_band_part(x, 1, 0), [r(2, 3, 4)]),
    ("MatrixSolve", tf.matrix_solve, [r(2, 3, 3) + 3 * np.eye(3), r(2, 3, 2)]),
    ("MatrixSolve", lambda a, b: tf.matrix_solve(a, b, adjoint=True), [r(3, 3) + 3 * np.eye(3), r(3, 1)]),
    ("MatrixExponential", lambda a: tf.linalg.expm(a * 0.5), [r(2, 3, 3)]),
    (
        "MatrixSquareRoot",
        lambda a: tf.linalg.sqrtm(tf.einsum("...ij,...kj->...ik", a, a) + np.eye(3)),
        [r(2, 3, 3)],
    ),
    (
        "TridiagonalSolve",
        lambda d, b: tf.linalg.tridiagonal_solve(d + np.array([[0.0], [4.0], [0.0]]), b),
        [r(2, 3, 4), r(2, 4, 2)],
    ),
    ("TridiagonalMatMul", tf.linalg.tridiagonal_matmul, [r(2, 3, 4), r(2, 4, 3)]),
    ("MatrixTriangularSolve", tf.matrix_triangular_solve, [r(2, 3, 3) + 3 * np.eye(3), r(2, 3, 2)]),
    (
        "MatrixTriangularSolve",
        lambda a, b: tf.matrix_triangular_solve(a, b, lower=False, adjoint=True),
        [r(3, 3) + 3 * np.eye(3), r(3, 2)],
    ),
    ("PlaceholderWithDefault", lambda x: tf.placeholder_with_default(x, [2, 3]) * x, [r(2, 3)]),
    (
        "StatelessWhile",
        lambda x, y: tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * x + y), [0, x])[1],
        [r(3), r(3)],
    ),
    (
        "While",  # a stateful body (the Assert)
        lambda x: tf.while_loop(
            lambda i, a: i < 2,
            lambda i, a: (i + 1, _after_assert(i < 5, tf.sin(a) * x)),
            [0, x],
        )[1],
        [r(2)],
    ),
    ("StatelessWhile", lambda x: tf.map_fn(lambda e: e * tf.reduce_sum(x), x), [r(3)]),
    ("StatelessWhile", lambda x: tf.scan(lambda a, e: a * e, x), [r(4)]),
    # tf.image (nbdist/ops/image_*.py): the kernels' gradients and the compositions TF trains through
    (
        "ResizeBilinear",
        lambda x: tf.cast(tf.image.resize_bilinear(x, [5, 3]), tf.float64),
        [r(2, 3, 4, 2)],
        FLOAT32_IMAGE,
    ),
    (
        "ResizeBilinear",
        lambda x: tf.cast(tf.image.resize_bilinear(x, [2, 7], align_corners=True), tf.float64),
        [r(1, 3, 4, 1)],
        FLOAT32_IMAGE,
    ),
    (
        "ResizeBilinear",
        lambda x: tf.cast(tf.image.resize_bilinear(x, [5, 2], half_pixel_centers=True), tf.float64),
        [r(1, 3, 4, 2)],
        FLOAT32_IMAGE,
    ),
    # tf.image's bicubic / crop kernels (nbdist/ops/image_resize_more_ops.py, image_crop_ops.py)
    (
        "ResizeBicubic",
        lambda x: tf.cast(tf.image.resize_bicubic(x, [5, 3]), tf.float64),
        [r(2, 3, 4, 2)],
        FLOAT32_IMAGE,
    ),
    (
        "ResizeBicubic",
        lambda x: tf.cast(tf.image.resize_bicubic(x, [2, 7], half_pixel_centers=True), tf.float64),
        [r(1, 3, 4, 1)],
        FLOAT32_IMAGE,
    ),
    (
        "CropAndResize",
        lambda x: tf.cast(
            tf.image.crop_and_resize(x, [[0.1, 0.2, 0.7, 0.9], [0.8, 0.6, 0.3, 0.1]], [1, 0], [3, 4]),
            tf.float64,
        ),
        [r(2, 4, 5, 2)],
        FLOAT32_IMAGE,
    ),
    (
        "CropAndResize",
        lambda b: tf.cast(
            tf.image.crop_and_resize(_f64(r(2, 4, 5, 2)), tf.cast(b, tf.float32), [1, 0], [3, 2]), tf.float64
        ),
        [np.array([[0.13, 0.21, 0.72, 0.88], [0.81, 0.64, 0.33, 0.12]])],
        {"eps": 1e-3, "rtol": 2e-2, "atol": 2e-2},
    ),
    (
        "CropAndResize",
        lambda x: tf.cast(
            tf.image.crop_and_resize(x, [[0.1, 0.2, 0.7, 0.9]], [0], [3, 4], method="nearest"), tf.float64
        ),
        [r(1, 4, 5, 2)],
        FLOAT32_IMAGE,
    ),
    ("ResizeNearestNeighbor", lambda x: tf.image.resize_nearest_neighbor(x, [5, 3]), [r(2, 3, 4, 2)]),
    (
        "ResizeNearestNeighbor",
        lambda x: tf.image.resize_nearest_neighbor(x, [2, 7], align_corners=True),
        [r(1, 3, 4, 1)],
    ),
    ("ReverseV2", lambda x: tf.image.flip_left_right(x) * tf.image.flip_up_down(x), [r(2, 3, 4, 2)]),
    ("Slice", lambda x: tf.image.crop_to_bounding_box(x, 1, 0, 2, 3), [r(3, 4, 2)]),
    ("Slice", lambda x: tf.image.central_crop(x, 0.5), [r(1, 4, 4, 2)]),
    ("Pad", lambda x: tf.image.pad_to_bounding_box(x, 1, 2, 4, 5), [r(1, 2, 3, 2)]),
    ("Pad", lambda x: tf.image.resize_image_with_crop_or_pad(x, 2, 6), [r(3, 4, 2)]),
    (
        "Sqrt",
        lambda x: tf.cast(tf.image.per_image_standardization(x), tf.float64),
        [r(2, 3, 3, 2)],
        FLOAT32_IMAGE,
    ),
    ("Add", lambda x: tf.image.adjust_brightness(x, 0.2), [r(2, 3, 2)], FLOAT32_IMAGE),
    ("Mean", lambda x: tf.image.adjust_contrast(x, 1.6), [r(2, 3, 2, 2)], FLOAT32_IMAGE),
    (
        "Cast",
        lambda x: tf.cast(tf.image.convert_image_dtype(x, tf.float32), tf.float64),
        [r(2, 3, 2)],
        FLOAT32_IMAGE,
    ),
    # sparse_math_ops: a SparseTensor's values and the dense operand; the data of segment reductions
    (
        "SparseTensorDenseMatMul",
        lambda v, b: tf.sparse.sparse_dense_matmul(tf.SparseTensor([[0, 1], [1, 0], [1, 2]], v, [2, 3]), b),
        [r(3), r(3, 2)],
    ),
    ("SparseSegmentSum", lambda d: tf.sparse.segment_sum(d, [0, 2, 2], [0, 0, 1]), [r(3, 2)]),
    ("SparseSegmentMean", lambda d: tf.sparse.segment_mean(d, [0, 2, 2], [0, 0, 1]), [r(3, 2)]),
    ("SparseSegmentSqrtN", lambda d: tf.sparse.segment_sqrt_n(d, [0, 2, 1], [0, 0, 2]), [r(3, 2)]),
    # special functions (special_math_ops) and Fourier transforms (fft_ops)
    ("Lgamma", tf.lgamma, [p(2, 3)]),
    ("Digamma", tf.digamma, [p(2, 3)]),
    ("Polygamma", lambda x: tf.polygamma(_f64(np.full((2, 3), 2.0)), x), [p(2, 3)]),
    ("Igamma", tf.igamma, [p(2, 3), p(2, 3)]),
    ("Igammac", tf.igammac, [p(3), p(2, 3)]),
    ("Betainc", lambda x: tf.betainc(_f64(2.5), _f64(1.5), x), [_RNG.uniform(0.1, 0.9, (2, 3))]),
    ("Zeta", lambda q: tf.zeta(_f64(3.0), q), [p(2, 3)]),
    ("Erfinv", tf.math.erfinv, [_RNG.uniform(-0.9, 0.9, (2, 3))]),
    ("Ndtri", tf.math.ndtri, [_RNG.uniform(0.05, 0.95, (2, 3))]),
    ("BesselI0", tf.math.bessel_i0, [r(2, 3)]),
    ("BesselI0e", tf.math.bessel_i0e, [r(2, 3)]),
    ("BesselI1", tf.math.bessel_i1, [r(2, 3)]),
    ("BesselI1e", tf.math.bessel_i1e, [r(2, 3)]),
    ("FFT", lambda x, y: _complex_parts(tf.fft(tf.complex(x, y))), [r(2, 4), r(2, 4)]),
    ("IFFT", lambda x, y: _complex_parts(tf.ifft(tf.complex(x, y))), [r(3), r(3)]),
    ("FFT2D", lambda x, y: _complex_parts(tf.fft2d(tf.complex(x, y))), [r(2, 3), r(2, 3)]),
    ("IFFT2D", lambda x, y: _complex_parts(tf.ifft2d(tf.complex(x, y))), [r(2, 2, 3), r(2, 2, 3)]),
    ("FFT3D", lambda x, y: _complex_parts(tf.fft3d(tf.complex(x, y))), [r(2, 2, 3), r(2, 2, 3)]),
    ("IFFT3D", lambda x, y: _complex_parts(tf.ifft3d(tf.complex(x, y))), [r(1, 2, 2, 3), r(1, 2, 2, 3)]),
    (
        "FFTND",
        lambda x, y: _complex_parts(tf.fftnd(tf.complex(x, y), [3, 4], [0, -1])),
        [r(2, 3, 5), r(2, 3, 5)],
    ),
    ("IFFTND", lambda x, y: _complex_parts(tf.ifftnd(tf.complex(x, y), [2], [1])), [r(2, 3), r(2, 3)]),
    ("RFFTND", lambda x: _complex_parts(tf.rfftnd(x, [4, 7], [1, 2], Tcomplex=tf.complex128)), [r(2, 3, 5)]),
    ("RFFTND", lambda x: _complex_parts(tf.rfftnd(x, [4], [-1], Tcomplex=tf.complex128)), [r(2, 6)]),
    (
        "IRFFTND",
        lambda x, y: tf.irfftnd(tf.complex(x, y), [3, 6], [1, 2], Treal=tf.float64),
        [r(2, 3, 4), r(2, 3, 4)],
    ),
    ("IRFFTND", lambda x, y: tf.irfftnd(tf.complex(x, y), [5], [-1], Treal=tf.float64), [r(2, 4), r(2, 4)]),
    (
        "StatelessRandomGammaV2",
        lambda a: tf.random.stateless_gamma([2, 3], [1, 2], a, dtype=tf.float64),
        [p(3)],
    ),
    # (scatter_nd_ops, sort_search_ops: indexing by N-d coordinates, selecting with broadcasting)
    ("GatherNd", lambda x: tf.gather_nd(x, [[0, 1], [2, 0], [0, 1]]), [r(3, 2)]),
    ("GatherNd", lambda x: tf.gather_nd(x, [[[1], [0]]]), [r(2, 3, 2)]),
    ("ScatterNd", lambda u: tf.scatter_nd([[1, 0], [0, 2], [1, 0]], u, [2, 3, 2]), [r(3, 2)]),
    ("TensorScatterUpdate", lambda x, u: tf.tensor_scatter_nd_update(x, [[2], [0]], u), [r(3, 2), r(2, 2)]),
    ("TensorScatterAdd", lambda x, u: tf.tensor_scatter_nd_add(x, [[1, 1], [1, 1]], u), [r(2, 3), r(2)]),
    ("TensorScatterSub", lambda x, u: tf.tensor_scatter_nd_sub(x, [[0, 2]], u), [r(2, 3), r(1)]),
    ("TensorScatterMax", lambda x, u: tf.tensor_scatter_nd_max(x, [[0], [2]], u), [r(3, 2), r(2, 2)]),
    ("TensorScatterMin", lambda x, u: tf.tensor_scatter_nd_min(x, [[1, 0], [0, 1]], u), [r(2, 2), r(2)]),
    ("SelectV2", lambda x, y: tf.where_v2(x > 0.0, x * 2.0, y), [r(2, 3), r(3)]),
    ("SelectV2", lambda x, y: tf.where_v2([[True], [False]], x, y), [r(1, 3), r(2, 1)]),
    # tf.TensorArray (ops/tensor_array_kernels.py): the flow holds the array
    (
        "TensorArrayWrite",
        lambda x, v: tf.TensorArray(tf.float64, size=3).unstack(x).write(1, v).stack(),
        [r(3, 2), r(2)],
    ),
    (
        "TensorArrayWrite",
        lambda v: tf.TensorArray(tf.float64, size=1, dynamic_size=True).write(2, v).stack(),
        [r(2)],
    ),
    ("TensorArrayRead", lambda x: tf.TensorArray(tf.float64, size=3).unstack(x).read(2), [r(3, 2)]),
    (
        "TensorArrayGather",
        lambda x: tf.TensorArray(tf.float64, size=3).unstack(x).gather([2, 0, 2]),
        [r(3, 2)],
    ),
    (
        "TensorArrayScatter",
        lambda x, v: tf.TensorArray(tf.float64, size=4).unstack(x).scatter([3, 1], v).stack(),
        [r(4, 2), r(2, 2)],
    ),
    ("TensorArraySplit", lambda x: tf.TensorArray(tf.float64, size=2).split(x, [2, 2]).read(1), [r(4, 3)]),
    ("TensorArrayConcat", lambda x: tf.TensorArray(tf.float64, size=3).unstack(x).concat(), [r(3, 2, 2)]),
]

# The same checks with placeholders of unknown shape: gradients must use runtime shapes.
UNKNOWN_SHAPE_CASES = [
    ("Reshape", lambda x: tf.reshape(x, [-1]), [r(2, 3)]),
    ("Sum", lambda x: tf.reduce_sum(x, axis=0), [r(2, 3)]),
    ("Sum", tf.reduce_sum, [r(2, 3)]),
    ("Mean", lambda x: tf.reduce_mean(x, axis=1), [r(2, 3)]),
    ("Max", lambda x: tf.reduce_max(x, axis=-1), [r(2, 3)]),
    ("Add", lambda x, y: x + y, [r(2, 3), r(3)]),
    ("ConcatV2", lambda x, y: tf.concat([x, y], 0), [r(1, 2), r(2, 2)]),
    ("Slice", lambda x: tf.slice(x, [0, 1], [2, 2]), [r(2, 3)]),
    ("StridedSlice", lambda x: x[..., 1:, None], [r(2, 3)]),
    ("Pack", lambda x, y: tf.reduce_sum([[x, y], [y, x]], axis=0), [r(2, 3), r(2, 3)]),
    ("Pad", lambda x: tf.pad(x, [[0, 1], [1, 1]]), [r(2, 2)]),
    ("GatherV2", lambda x: tf.gather(x, [[1, 1], [0, 1]]), [r(2, 3)]),
    ("ExpandDims", lambda x: tf.expand_dims(x, 0), [r(2, 3)]),
    ("Squeeze", tf.squeeze, [r(2, 1)]),
    ("Transpose", tf.transpose, [r(2, 3)]),
    ("Tile", lambda x: tf.tile(x, [2, 2]), [r(2, 3)]),
    ("BroadcastTo", lambda x: tf.broadcast_to(x, [2, 3]), [r(1, 3)]),
    ("BiasAdd", tf.nn.bias_add, [r(2, 3), r(3)]),
    ("MaxPool", lambda x: tf.nn.max_pool(x, 2, 2, "SAME"), [_untied(r(1, 3, 5, 2))]),
    ("AvgPool", lambda x: tf.nn.avg_pool(x, 2, 2, "SAME", "NCHW"), [r(1, 2, 3, 5)]),
    (
        "Conv2D",
        lambda x, w: tf.nn.conv2d(x, w, 2, "SAME", data_format="NCHW"),
        [r(1, 2, 5, 4), r(3, 2, 2, 3)],
    ),
    (
        "DepthwiseConv2dNative",
        lambda x, w: tf.nn.depthwise_conv2d(x, w, 1, "VALID"),
        [r(1, 4, 3, 2), r(2, 2, 2, 2)],
    ),
    ("Softmax", tf.nn.softmax, [r(2, 3)]),
    ("TopKV2", lambda x: tf.nn.top_k(x, 2)[0], [r(2, 3)]),
    (
        "SoftmaxCrossEntropyWithLogits",
        lambda z, labels: tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=z),
        [r(2, 3), dist(2, 3)],
    ),
]

# Gradients of gradients: the ops that gradient functions build are differentiable too.
SECOND_ORDER_CASES = [
    ("Sum", _second_order(lambda x: tf.square(tf.reduce_sum(x, axis=0))), [r(2, 3)]),
    ("Mul", _second_order(lambda x: x * x * tf.reduce_sum(x, axis=1, keepdims=True)), [r(2, 3)]),
    ("Softmax", _second_order(tf.nn.softmax), [r(2, 3)]),
    ("LogSoftmax", _second_order(tf.nn.log_softmax), [r(2, 3)]),
    (
        "SoftmaxCrossEntropyWithLogits",
        _second_order(
            lambda z: tf.nn.softmax_cross_entropy_with_logits_v2(
                labels=_f64([[0.1, 0.9, 0.0], [0.5, 0.25, 0.25]]), logits=z
            )
        ),
        [r(2, 3)],
    ),
    (
        "SparseSoftmaxCrossEntropyWithLogits",
        _second_order(lambda z: tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[1, 0], logits=z)),
        [r(2, 3)],
    ),
    ("Slice", _second_order(lambda x: tf.square(tf.slice(x, [1, 1], [1, 2]))), [r(2, 3)]),
    ("StridedSlice", _second_order(lambda x: tf.square(x[1, 1:])), [r(2, 3)]),
    ("Pad", _second_order(lambda x: tf.square(tf.pad(x, [[1, 1], [0, 1]]))), [r(2, 3)]),
    ("GatherV2", _second_order(lambda x: tf.square(tf.gather(x, [1, 1, 0]))), [r(2, 3)]),
    ("ConcatV2", _second_order(lambda x: tf.square(tf.concat([x, 2.0 * x], 1))), [r(2, 2)]),
    ("Max", _second_order(lambda x: tf.square(tf.reduce_max(x, axis=1))), [r(2, 3)]),
    ("Sigmoid", _second_order(tf.sigmoid), [r(2, 3)]),
    ("Softplus", _second_order(tf.nn.softplus), [r(2, 3)]),
    ("Tanh", _second_order(tf.tanh), [r(2, 3)]),
    ("Cos", _second_order(tf.cos), [r(2, 3)]),
    ("Elu", _second_order(tf.nn.elu), [r(2, 3)]),
    ("Selu", _second_order(tf.nn.selu), [r(2, 3)]),
    ("Softsign", _second_order(tf.nn.softsign), [r(2, 3)]),
    ("MatMul", _second_order(lambda x: tf.matmul(x, x, transpose_b=True)), [r(2, 3)]),
    ("Conv2D", _second_order(lambda w: tf.nn.conv2d(_f64(r(1, 4, 3, 2)), w * w, 2, "SAME")), [r(2, 2, 2, 1)]),
    (
        "DepthwiseConv2dNative",
        _second_order(lambda x: tf.nn.depthwise_conv2d(x * x, _f64(r(2, 2, 2, 1)), 1, "SAME")),
        [r(1, 3, 3, 2)],
    ),
]


def _ids(cases):
    return [f"{c[0]}-{i}" for i, c in enumerate(cases)]


def _run_case(case, **kwargs):
    op_type, fn, inputs, *extra = case
    forward_types = check_gradients(fn, inputs, **{**(extra[0] if extra else {}), **kwargs})
    assert op_type in forward_types, (
        f"case for {op_type} did not build a {op_type} op: {sorted(forward_types)}"
    )


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_gradient_matches_finite_differences(case):
    _run_case(case)


@pytest.mark.parametrize("case", UNKNOWN_SHAPE_CASES, ids=_ids(UNKNOWN_SHAPE_CASES))
def test_gradient_with_unknown_static_shapes(case):
    _run_case(case, static_shapes=False)


@pytest.mark.parametrize("case", SECOND_ORDER_CASES, ids=_ids(SECOND_ORDER_CASES))
def test_second_order_gradient_matches_finite_differences(case):
    _run_case(case, rtol=1e-4, atol=1e-6)


def test_every_differentiable_op_has_a_finite_difference_case():
    differentiable = {
        t
        for t in registry.registered_op_types()
        if (d := registry.lookup(t)).grad_fn is not None
        and not d.no_gradient
        and d.grad_fn.__module__.startswith("nbdist.ops.")
        and not t.startswith("CustomGradient-")  # (tf.custom_gradient's per-call types: the user's grad_fn)
    }
    missing = differentiable - {c[0] for c in CASES}
    assert not missing, f"add a case to CASES in tests/test_gradients.py for {sorted(missing)}"


def test_check_gradients_reports_a_wrong_gradient():
    # Register nothing: break a gradient by using stop_gradient where the math says otherwise.
    with pytest.raises(AssertionError, match=r"(?s)gradient check failed for Mul.*analytic:.*numeric:"):
        check_gradients(lambda x: tf.stop_gradient(x) * x, [r(3)])


# -- tf.gradients behaviours ------------------------------------------------------------------------
def _value(fetch, feed=None):
    with tf.Session() as sess:
        return sess.run(fetch, feed)


def test_gradients_sum_over_multiple_paths():
    with tf.Graph().as_default():
        x = tf.constant([1.0, 2.0], dtype=tf.float64)
        y = x * x + 3.0 * x + tf.exp(x)
        (g,) = tf.gradients(y, x)
        np.testing.assert_allclose(_value(g), 2 * np.array([1.0, 2.0]) + 3.0 + np.exp([1.0, 2.0]))


def test_gradients_of_several_ys_are_summed():
    with tf.Graph().as_default():
        x = tf.constant(2.0, dtype=tf.float64)
        (g,) = tf.gradients([x * x, 5.0 * x], x)
        assert _value(g) == pytest.approx(9.0)


def test_gradients_return_none_for_unconnected_xs():
    with tf.Graph().as_default():
        x = tf.constant(1.0)
        z = tf.constant(2.0)
        gx, gz = tf.gradients(x * 3.0, [x, z])
        assert gz is None
        assert _value(gx) == pytest.approx(3.0)


def test_gradients_return_none_through_integer_ops():
    with tf.Graph().as_default():
        x = tf.constant([[1.0, 3.0], [2.0, 0.0]])
        y = tf.cast(tf.argmax(x, axis=1), tf.float32)
        assert tf.gradients(y, x) == [None]


def test_grad_ys_weights_the_output():
    with tf.Graph().as_default():
        x = tf.constant([1.0, 2.0, 3.0], dtype=tf.float64)
        (g,) = tf.gradients(tf.square(x), x, grad_ys=np.array([1.0, 0.0, -2.0]))
        np.testing.assert_allclose(_value(g), [2.0, 0.0, -12.0])


def test_grad_ys_count_must_match_ys():
    with tf.Graph().as_default():
        x = tf.constant(1.0)
        with pytest.raises(ValueError, match=r"2 grad_ys for 1 ys"):
            tf.gradients(x * 2.0, x, grad_ys=[1.0, 2.0])


def test_stop_gradient_blocks_its_input():
    with tf.Graph().as_default():
        x = tf.constant(3.0, dtype=tf.float64)
        (g,) = tf.gradients(tf.stop_gradient(x * x) + x, x)
        assert _value(g) == pytest.approx(1.0)


def test_stop_gradients_argument_treats_tensors_as_constants():
    with tf.Graph().as_default():
        x = tf.constant(3.0, dtype=tf.float64)
        h = x * x
        (g,) = tf.gradients(h * x, x, stop_gradients=[h])
        assert _value(g) == pytest.approx(9.0)


def test_gradients_of_a_variable():
    with tf.Graph().as_default():
        w = tf.Variable([[1.0, 2.0]], dtype=tf.float64)
        loss = tf.reduce_sum(tf.square(w))
        (g,) = tf.gradients(loss, w)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_allclose(sess.run(g), [[2.0, 4.0]])


def test_colocate_gradients_with_ops_places_each_gradient_op_with_its_forward_op():
    with tf.Graph().as_default() as graph:
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        with tf.device("/job:worker/task:1"):
            w = tf.constant(np.ones((3, 2), np.float32), name="w")
            loss = tf.reduce_mean(tf.nn.softmax(tf.matmul(x, w)))
        n_forward = len(graph.get_operations())
        gx, _ = tf.gradients(loss, [x, w], colocate_gradients_with_ops=True)
        grad_ops = graph.get_operations()[n_forward:]
        assert grad_ops
        assert {op.device for op in grad_ops} == {loss.op.device}
        assert "worker" in loss.op.device and "task:1" in loss.op.device
        assert gx.op.device == loss.op.device


def test_without_colocation_gradient_ops_take_the_enclosing_device_scope():
    with tf.Graph().as_default() as graph:
        with tf.device("/job:worker/task:1"):
            x = tf.constant([1.0, 2.0])
            y = tf.reduce_sum(x * x)
        n_forward = len(graph.get_operations())
        with tf.device("/job:ps/task:0"):
            tf.gradients(y, x)
            reference = tf.no_op()
        assert {op.device for op in graph.get_operations()[n_forward:]} == {reference.device}
        assert reference.device != x.op.device
