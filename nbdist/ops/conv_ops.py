"""Convolutions (`tf.nn`): conv2d, conv2d_transpose, depthwise_conv2d, separable_conv2d.

TF's op types and attrs (``strides``, ``padding``, ``data_format``, ``dilations``): `Conv2D`
with `Conv2DBackpropInput` / `Conv2DBackpropFilter`, and `DepthwiseConv2dNative` with its two
``Backprop*`` ops, each a family of three whose gradients are each other (`_FAMILIES`).
Kernels compute in NHWC (an NCHW input is
transposed in and out) on `Window.patches`, a strided view of the padded input, with one
BLAS call per op: ``tensordot`` for Conv2D (which copies the view out: im2col), a batched
``matmul`` over channels for the depthwise ops; the input gradients add the products back
with `Window.col2im`.
"""

import numpy as np

from nbdist.graph.graph import get_default_graph
from nbdist.ops import registry
from nbdist.ops._shapes import int_tensor, invalid_argument
from nbdist.ops._windows import (
    Window,
    check_format,
    check_padding,
    from_nhwc,
    nhwc_dims,
    shape_of_nhwc,
    sizes_shape,
    spatial_sequence,
    to_nhwc,
)
from nbdist.ops.array_ops import shape as shape_of
from nbdist.ops.constant_op import convert_n, convert_to_tensor
from nbdist.ops.shape_ops import get_static_value

__all__ = [
    "conv2d",
    "conv2d_backprop_filter",
    "conv2d_backprop_input",
    "conv2d_transpose",
    "depthwise_conv2d",
    "depthwise_conv2d_native",
    "depthwise_conv2d_native_backprop_filter",
    "depthwise_conv2d_native_backprop_input",
    "separable_conv2d",
]


# -- the numpy kernels of the two families (NHWC; w is [KH, KW, C, O] or [KH, KW, C, M]) ------------
def _conv_forward(win, x, w):
    xp, out_hw, _ = win.pad(x)
    return np.tensordot(win.patches(xp, out_hw), w, axes=3)  # im2col copy + one GEMM


def _conv_input(win, in_shape, w, dy):
    kh, kw, c, o = w.shape
    n, oh, ow, _ = dy.shape
    taps = w.transpose(0, 1, 3, 2).reshape(kh * kw, o, c)
    cols = np.matmul(dy.reshape(1, -1, o), taps)  # (KH*KW, NOO, C): one batched GEMM, tap-major
    return win.col2im(cols.reshape(kh, kw, n, oh, ow, c), in_shape)


def _conv_filter(win, x, dy):
    xp, out_hw, _ = win.pad(x)
    return np.tensordot(win.patches(xp, out_hw), dy, axes=([0, 1, 2], [0, 1, 2]))


def _by_channel(win, x):
    """The patches of `x` as ``(C, N*OH*OW, KH*KW)`` (copied: im2col), and ``(N, OH, OW)``."""
    xp, out_hw, _ = win.pad(x)
    p = win.patches(xp, out_hw)
    n, oh, ow, kh, kw, c = p.shape
    return p.transpose(5, 0, 1, 2, 3, 4).reshape(c, n * oh * ow, kh * kw), (n, oh, ow)


def _depthwise_forward(win, x, w):
    """A multiply-add per tap over the strided view: each channel's product has inner dimension
    KH*KW only, where a batched GEMM (with its im2col copy) measured 3.8x slower (docs/benchmarks.md)."""
    xp, out_hw, _ = win.pad(x)
    p = win.patches(xp, out_hw)
    kh, kw, c, m = w.shape
    y = np.zeros((*p.shape[:3], c, m), np.result_type(x, w))
    for i in range(kh):
        for j in range(kw):
            y += p[:, :, :, i, j, :, None] * w[i, j]
    return y.reshape(*p.shape[:3], c * m)


def _depthwise_input(win, in_shape, w, dy):
    _, _, c, m = w.shape
    n, oh, ow, _ = dy.shape
    cols = np.einsum("nhwcm,ijcm->ijnhwc", dy.reshape(n, oh, ow, c, m), w)  # tap-major, for col2im
    return win.col2im(cols, in_shape)


def _depthwise_filter(win, x, dy, filter_shape):
    cols, (n, oh, ow) = _by_channel(win, x)
    kh, kw, c, m = filter_shape
    g = dy.reshape(n * oh * ow, c, m).transpose(1, 0, 2)
    dw = np.matmul(cols.transpose(0, 2, 1), g)  # (C, KH*KW, M)
    return dw.transpose(1, 0, 2).reshape(kh, kw, c, m)


class _Family:
    """A forward convolution and its two backprop ops, whose gradients are each other."""

    def __init__(self, forward, backprop_input, backprop_filter, kernels, out_channels):
        self.forward, self.backprop_input, self.backprop_filter = forward, backprop_input, backprop_filter
        self.kernels = kernels  # (forward, input, filter) numpy functions
        self.out_channels = out_channels  # (in channels, filter shape) -> out channels

    def make(self, op_type, inputs, attrs, name=None):
        return registry.make_op(op_type, inputs, dict(attrs), name=name).outputs[0]


def _conv_out_channels(c, filter_dims):
    return filter_dims[3]


def _depthwise_out_channels(c, filter_dims):
    _, _, fc, m = filter_dims
    return None if None in (fc, m) else fc * m


_FAMILIES = {
    "Conv2D": _Family(
        "Conv2D",
        "Conv2DBackpropInput",
        "Conv2DBackpropFilter",
        (_conv_forward, _conv_input, lambda win, x, dy, shape: _conv_filter(win, x, dy)),
        _conv_out_channels,
    ),
    "DepthwiseConv2dNative": _Family(
        "DepthwiseConv2dNative",
        "DepthwiseConv2dNativeBackpropInput",
        "DepthwiseConv2dNativeBackpropFilter",
        (_depthwise_forward, _depthwise_input, _depthwise_filter),
        _depthwise_out_channels,
    ),
}


def _conv_attrs(op):
    return {k: op.get_attr(k) for k in ("strides", "padding", "data_format", "dilations")}


# -- shapes ----------------------------------------------------------------------------------------------
def _check_rank4(t, what, op_type):
    if t.shape.ndims not in (None, 4):
        raise ValueError(f"{op_type}: {what} must be 4-D, {t.name} has shape {t.shape}")


def _forward_shape(family, op_type, x, w, attrs):
    for t, what in ((x, "input"), (w, "filter")):
        _check_rank4(t, what, op_type)
    if x.dtype != w.dtype:
        raise TypeError(f"{op_type}: input is {x.dtype.name} but filter is {w.dtype.name}")
    if not x.dtype.is_floating:
        raise TypeError(f"{op_type}: expected a floating point input, got {x.dtype.name} ({x.name})")
    fmt = attrs["data_format"]
    n, h, wd, c = nhwc_dims(x.shape, fmt)
    fdims = w.shape.as_list() if w.shape.ndims is not None else [None] * 4
    if None not in (c, fdims[2]) and c != fdims[2]:
        raise ValueError(
            f"{op_type}: input {x.name} has {c} channels but filter {w.name} {w.shape} expects {fdims[2]}"
        )
    ksize = [k if k is not None else 1 for k in fdims[:2]]
    try:
        (oh, _, _), (ow, _, _) = Window(attrs, ksize).out_hw(h, wd)
    except ValueError as e:
        raise ValueError(f"{op_type} of {x.name} {x.shape} by {w.name} {w.shape}: {e}") from None
    if None in fdims[:2]:
        oh = ow = None
    return shape_of_nhwc([n, oh, ow, family.out_channels(c, fdims)], fmt)


def _register_shapes(family):
    @registry.shape(family.forward)
    def _forward(inputs, attrs):
        x, w = inputs
        return [(x.dtype, _forward_shape(family, family.forward, x, w, attrs))]

    registry.shape(family.backprop_input)(lambda inputs, attrs: [(inputs[1].dtype, sizes_shape(inputs[0]))])
    registry.shape(family.backprop_filter)(lambda inputs, attrs: [(inputs[0].dtype, sizes_shape(inputs[1]))])


# -- kernels ---------------------------------------------------------------------------------------------
def _window(node, filter_shape):
    return Window(node.attr, filter_shape[:2])


def _run(node, fn):
    try:
        return fn()
    except ValueError as e:
        raise invalid_argument(node, f"{node.op}: {e}") from None


def _register_kernels(family):
    forward, backprop_input, backprop_filter = family.kernels

    @registry.kernel(family.forward)
    def _forward(ctx, node, x, w):
        fmt = node.attr["data_format"]
        if x.ndim != 4 or w.ndim != 4 or x.shape[3 if fmt == "NHWC" else 1] != w.shape[2]:
            raise invalid_argument(
                node, f"{node.op}: input {list(x.shape)} ({fmt}) and filter {list(w.shape)} do not match"
            )
        return from_nhwc(_run(node, lambda: forward(_window(node, w.shape), to_nhwc(x, fmt), w)), fmt)

    @registry.kernel(family.backprop_input)
    def _input(ctx, node, sizes, w, dy):
        fmt = node.attr["data_format"]
        n, *rest = (int(v) for v in sizes)
        in_shape = (n, *rest) if fmt == "NHWC" else (n, rest[1], rest[2], rest[0])
        dx = _run(node, lambda: backprop_input(_window(node, w.shape), in_shape, w, to_nhwc(dy, fmt)))
        return from_nhwc(dx.astype(dy.dtype, copy=False), fmt)

    @registry.kernel(family.backprop_filter)
    def _filter(ctx, node, x, sizes, dy):
        fmt, filter_shape = node.attr["data_format"], tuple(int(v) for v in sizes)
        win = _window(node, filter_shape)
        dw = _run(node, lambda: backprop_filter(win, to_nhwc(x, fmt), to_nhwc(dy, fmt), filter_shape))
        return np.ascontiguousarray(dw.reshape(filter_shape), dtype=x.dtype)


# -- gradients (TF's): each op of a family differentiates into the other two -----------------------------
def _register_gradients(family):
    @registry.gradient(family.forward)
    def _forward_grad(op, grad):
        x, w = op.inputs
        attrs = _conv_attrs(op)
        return [
            family.make(family.backprop_input, [shape_of(x), w, grad], attrs),
            family.make(family.backprop_filter, [x, shape_of(w), grad], attrs),
        ]

    @registry.gradient(family.backprop_input)
    def _input_grad(op, grad):
        _, w, dy = op.inputs
        attrs = _conv_attrs(op)
        return [
            None,
            family.make(family.backprop_filter, [grad, shape_of(w), dy], attrs),
            family.make(family.forward, [grad, w], attrs),
        ]

    @registry.gradient(family.backprop_filter)
    def _filter_grad(op, grad):
        x, _, dy = op.inputs
        attrs = _conv_attrs(op)
        return [
            family.make(family.backprop_input, [shape_of(x), grad, dy], attrs),
            None,
            family.make(family.forward, [x, grad], attrs),
        ]


for _family in _FAMILIES.values():
    _register_shapes(_family)
    _register_kernels(_family)
    _register_gradients(_family)


# -- constructors ----------------------------------------------------------------------------------------
def _attrs(op_name, strides, padding, data_format, dilations):
    fmt = check_format(data_format, op_name)
    return {
        "strides": spatial_sequence(strides, "strides", fmt, op_name),
        "padding": check_padding(padding, op_name),
        "data_format": fmt,
        "dilations": spatial_sequence(1 if dilations is None else dilations, "dilations", fmt, op_name),
    }


def _one_of(a, b, names, op_name):
    if (a is None) == (b is None):
        raise ValueError(f"{op_name}: pass exactly one of {names[0]} and {names[1]}")
    return a if a is not None else b


def conv2d(
    input,  # noqa: A002 - TF's argument name
    filter=None,  # noqa: A002 - TF's argument name
    strides=None,
    padding=None,
    use_cudnn_on_gpu=True,
    data_format="NHWC",
    dilations=(1, 1, 1, 1),
    name=None,
    filters=None,
):
    """`tf.nn.conv2d`: a 2-D convolution (cross-correlation, as TF) of a 4-D input by a filter.

    Args:
        input: ``[batch, height, width, in_channels]`` (NHWC) or ``[batch, in_channels, height,
            width]`` (NCHW), floating point.
        filter: ``[filter_height, filter_width, in_channels, out_channels]`` (`filters` in TF2).
        strides, dilations: an int or a list of 1, 2 or 4 ints (batch and channel entries 1).
        padding: ``"SAME"`` (output ``ceil(in / stride)``, zeros around) or ``"VALID"``.
        use_cudnn_on_gpu: ignored (nbdist runs on the CPU).

    Returns:
        The output, in `data_format`.

    Raises:
        ValueError: bad strides, dilations, padding or format, or shapes that do not fit.
    """
    attrs = _attrs("tf.nn.conv2d", strides, padding, data_format, dilations)
    x, w = convert_n([input, _one_of(filter, filters, ("filter", "filters"), "tf.nn.conv2d")])
    return registry.make_op("Conv2D", [x, w], attrs, name=name).outputs[0]


def conv2d_backprop_input(
    input_sizes,
    filter=None,  # noqa: A002 - TF's argument name
    out_backprop=None,
    strides=None,
    padding=None,
    use_cudnn_on_gpu=True,
    data_format="NHWC",
    dilations=(1, 1, 1, 1),
    name=None,
    filters=None,
):
    """`tf.nn.conv2d_backprop_input`: the gradient of `conv2d` wrt its input of shape `input_sizes`."""
    attrs = _attrs("tf.nn.conv2d_backprop_input", strides, padding, data_format, dilations)
    w, dy = convert_n(
        [_one_of(filter, filters, ("filter", "filters"), "conv2d_backprop_input"), out_backprop]
    )
    sizes = int_tensor(input_sizes, "input_sizes")
    return registry.make_op("Conv2DBackpropInput", [sizes, w, dy], attrs, name=name).outputs[0]


def conv2d_backprop_filter(
    input,  # noqa: A002 - TF's argument name
    filter_sizes,
    out_backprop,
    strides,
    padding,
    use_cudnn_on_gpu=True,
    data_format="NHWC",
    dilations=(1, 1, 1, 1),
    name=None,
):
    """`tf.nn.conv2d_backprop_filter`: the gradient of `conv2d` wrt its filter of shape `filter_sizes`."""
    attrs = _attrs("tf.nn.conv2d_backprop_filter", strides, padding, data_format, dilations)
    x, dy = convert_n([input, out_backprop])
    sizes = int_tensor(filter_sizes, "filter_sizes")
    return registry.make_op("Conv2DBackpropFilter", [x, sizes, dy], attrs, name=name).outputs[0]


def conv2d_transpose(
    value=None,
    filter=None,  # noqa: A002 - TF's argument name
    output_shape=None,
    strides=None,
    padding="SAME",
    data_format="NHWC",
    name=None,
    input=None,  # noqa: A002 - TF's argument name
    filters=None,
    dilations=None,
):
    """`tf.nn.conv2d_transpose`: the transpose (gradient) of `conv2d`, a `Conv2DBackpropInput`.

    Args:
        value: ``[batch, height, width, in_channels]`` (NHWC) (`input` in TF2).
        filter: ``[height, width, output_channels, in_channels]`` (`filters` in TF2).
        output_shape: the 1-D shape of the output (a list or an int tensor).

    Raises:
        ValueError: the filter's last dimension is not `value`'s channels, or `output_shape`'s
            channels are not the filter's third dimension.
    """
    op_name = "tf.nn.conv2d_transpose"
    attrs = _attrs(op_name, strides, padding, data_format, dilations)
    value = _one_of(value, input, ("value", "input"), op_name)
    x, w = convert_n([value, _one_of(filter, filters, ("filter", "filters"), op_name)])
    sizes = int_tensor(output_shape, "output_shape")
    channel = 3 if attrs["data_format"] == "NHWC" else 1
    in_c = x.shape[channel] if x.shape.ndims == 4 else None
    if w.shape.ndims == 4 and None not in (in_c, w.shape[3]) and in_c != w.shape[3]:
        raise ValueError(
            f"{op_name}: input channels {in_c} differ from the filter's last dimension {w.shape[3]}"
        )
    out_c = get_static_value(sizes)
    if out_c is not None and w.shape.ndims == 4 and w.shape[2] not in (None, int(np.ravel(out_c)[channel])):
        raise ValueError(
            f"{op_name}: output_shape {np.ravel(out_c).tolist()} has {np.ravel(out_c)[channel]} channels "
            f"but the filter's third dimension is {w.shape[2]}"
        )
    return registry.make_op(
        "Conv2DBackpropInput", [sizes, w, x], attrs, name=name or "conv2d_transpose"
    ).outputs[0]


def _rate_as_dilations(op_name, strides, rate, dilations, data_format):
    """TF1's `rate` of depthwise/separable convolutions as `dilations` (they are one thing)."""
    if rate is not None and dilations is not None:
        raise ValueError(f"{op_name}: pass rate or dilations, not both")
    dilations = rate if rate is not None else dilations
    fmt = check_format(data_format, op_name)
    d = spatial_sequence(1 if dilations is None else dilations, "rate", fmt, op_name)
    s = spatial_sequence(strides, "strides", fmt, op_name)
    if max(d) > 1 and max(s) > 1:
        raise ValueError(
            f"{op_name}: When dilation rate is greater than 1, then all values of strides must be 1. "
            f"Received: `dilation rate` {dilations!r} and `strides` {strides!r}"
        )
    return d


def depthwise_conv2d_native(
    input,  # noqa: A002 - TF's argument name
    filter,  # noqa: A002 - TF's argument name
    strides,
    padding,
    data_format="NHWC",
    dilations=(1, 1, 1, 1),
    name=None,
):
    """`tf.nn.depthwise_conv2d_native`: each input channel convolved by its own `M` filters.

    Args:
        filter: ``[height, width, in_channels, channel_multiplier]``; the output has
            ``in_channels * channel_multiplier`` channels, channel ``c * M + m``.
    """
    attrs = _attrs("tf.nn.depthwise_conv2d_native", strides, padding, data_format, dilations)
    x, w = convert_n([input, filter])
    return registry.make_op("DepthwiseConv2dNative", [x, w], attrs, name=name).outputs[0]


def depthwise_conv2d_native_backprop_input(
    input_sizes,
    filter,  # noqa: A002 - TF's argument name
    out_backprop,
    strides,
    padding,
    data_format="NHWC",
    dilations=(1, 1, 1, 1),
    name=None,
):
    """`tf.nn.depthwise_conv2d_native_backprop_input`: the gradient wrt the input."""
    attrs = _attrs("depthwise_conv2d_native_backprop_input", strides, padding, data_format, dilations)
    w, dy = convert_n([filter, out_backprop])
    sizes = int_tensor(input_sizes, "input_sizes")
    return registry.make_op("DepthwiseConv2dNativeBackpropInput", [sizes, w, dy], attrs, name=name).outputs[0]


def depthwise_conv2d_native_backprop_filter(
    input,  # noqa: A002 - TF's argument name
    filter_sizes,
    out_backprop,
    strides,
    padding,
    data_format="NHWC",
    dilations=(1, 1, 1, 1),
    name=None,
):
    """`tf.nn.depthwise_conv2d_native_backprop_filter`: the gradient wrt the filter."""
    attrs = _attrs("depthwise_conv2d_native_backprop_filter", strides, padding, data_format, dilations)
    x, dy = convert_n([input, out_backprop])
    sizes = int_tensor(filter_sizes, "filter_sizes")
    return registry.make_op("DepthwiseConv2dNativeBackpropFilter", [x, sizes, dy], attrs, name=name).outputs[
        0
    ]


def depthwise_conv2d(
    input,  # noqa: A002 - TF's argument name
    filter,  # noqa: A002 - TF's argument name
    strides,
    padding,
    rate=None,
    name=None,
    data_format=None,
    dilations=None,
):
    """`tf.nn.depthwise_conv2d`: `depthwise_conv2d_native` with TF1's `rate` (its dilations).

    Raises:
        ValueError: a rate above 1 with strides above 1 (as TF).
    """
    d = _rate_as_dilations("tf.nn.depthwise_conv2d", strides, rate, dilations, data_format)
    return depthwise_conv2d_native(
        input, filter, strides, padding, data_format or "NHWC", d, name=name or "depthwise"
    )


def separable_conv2d(
    input,  # noqa: A002 - TF's argument name
    depthwise_filter,
    pointwise_filter,
    strides,
    padding,
    rate=None,
    name=None,
    data_format=None,
    dilations=None,
):
    """`tf.nn.separable_conv2d`: a depthwise convolution, then a 1x1 `conv2d` mixing channels.

    Args:
        depthwise_filter: ``[height, width, in_channels, channel_multiplier]``.
        pointwise_filter: ``[1, 1, in_channels * channel_multiplier, out_channels]``.

    Raises:
        ValueError: a pointwise filter that is not 1x1, or a rate above 1 with strides above 1.
    """
    op_name = "tf.nn.separable_conv2d"
    d = _rate_as_dilations(op_name, strides, rate, dilations, data_format)
    with get_default_graph().name_scope(name or "separable_conv2d") as scope:
        pointwise_filter = convert_to_tensor(pointwise_filter, name="pointwise_filter")
        if pointwise_filter.shape.ndims == 4 and pointwise_filter.shape.as_list()[:2] != [1, 1]:
            raise ValueError(f"{op_name}: pointwise_filter must be [1, 1, ...], got {pointwise_filter.shape}")
        depthwise = depthwise_conv2d_native(
            input, depthwise_filter, strides, padding, data_format or "NHWC", d, name="depthwise"
        )
        return conv2d(depthwise, pointwise_filter, 1, "VALID", data_format=data_format or "NHWC", name=scope)
