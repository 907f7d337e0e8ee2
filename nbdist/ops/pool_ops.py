"""Pooling and local response normalisation (`tf.nn`): max_pool, avg_pool, lrn.

TF's op types and attrs: `MaxPool` (`ksize`, `strides`, `padding`, `data_format`) with
`MaxPoolGrad` and `MaxPoolGradGrad`, `AvgPool` with `AvgPoolGrad`, `LRN` with `LRNGrad`
(`depth_radius`, `bias`, `alpha`, `beta`). Kernels reduce `Window.patches`, a strided view of
the padded NHWC input (an NCHW input is transposed in and out): no loop over pixels.
`MaxPoolGrad` routes each gradient to the first maximum of its window in row-major order (TF's
CPU rule), as one ``bincount``; SAME average pooling divides by the number of real (unpadded)
elements, as TF.
"""

import numpy as np

from nbdist.ops import math_ops, registry
from nbdist.ops._shapes import invalid_argument, same_as_input
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
from nbdist.ops.constant_op import convert_to_tensor

__all__ = ["avg_pool", "local_response_normalization", "lrn", "max_pool"]

_POOL_ATTRS = ("ksize", "strides", "padding", "data_format")


def _pool_attrs(op):
    return {k: op.get_attr(k) for k in _POOL_ATTRS}


@registry.shape("MaxPool")
@registry.shape("AvgPool")
def _pool_shape(inputs, attrs):
    (x,) = inputs
    if x.shape.ndims not in (None, 4):
        raise ValueError(f"pooling needs a 4-D input, {x.name} has shape {x.shape}")
    fmt = attrs["data_format"]
    n, h, w, c = nhwc_dims(x.shape, fmt)
    try:
        (oh, _, _), (ow, _, _) = Window(attrs).out_hw(h, w)
    except ValueError as e:
        raise ValueError(f"pooling {x.name} {x.shape}: {e}") from None
    return [(x.dtype, shape_of_nhwc([n, oh, ow, c], fmt))]


def _pooled(node, x, fill):
    """``(window, padded NHWC x, patches view)`` of a pooling node's input `x`."""
    win = Window(node.attr)
    try:
        xp, out_hw, _ = win.pad(to_nhwc(x, win.data_format), fill)
    except ValueError as e:
        raise invalid_argument(node, f"{node.op}: {e}") from None
    return win, xp, win.patches(xp, out_hw)


# -- max_pool ---------------------------------------------------------------------------------------------
@registry.kernel("MaxPool")
def _max_pool_kernel(ctx, node, x):
    win, _, p = _pooled(node, x, -np.inf)
    return from_nhwc(p.max(axis=(3, 4)), win.data_format)


def _argmax_positions(node, x):
    """Flat positions in the padded NHWC input of each window's first maximum; and the window."""
    win, xp, p = _pooled(node, x, -np.inf)
    n, oh, ow, kh, kw, c = p.shape
    k = p.reshape(n, oh, ow, kh * kw, c).argmax(axis=3)  # first maximum, row-major in the window
    sh, sw = win.strides
    rows = np.arange(oh)[None, :, None, None] * sh + k // kw
    cols = np.arange(ow)[None, None, :, None] * sw + k % kw
    flat = ((np.arange(n)[:, None, None, None] * xp.shape[1] + rows) * xp.shape[2] + cols) * c
    return flat + np.arange(c), win, xp.shape


@registry.kernel("MaxPoolGrad")
def _max_pool_grad_kernel(ctx, node, x, y, grad):
    positions, win, padded = _argmax_positions(node, x)
    dx = np.bincount(positions.ravel(), to_nhwc(grad, win.data_format).ravel(), int(np.prod(padded)))
    h, w = to_nhwc(x, win.data_format).shape[1:3]
    (_, top, _), (_, left, _) = win.out_hw(h, w)
    dx = dx.reshape(padded)[:, top : top + h, left : left + w, :]
    return from_nhwc(dx.astype(x.dtype, copy=False), win.data_format)


@registry.kernel("MaxPoolGradGrad")
def _max_pool_grad_grad_kernel(ctx, node, x, y, grad):
    positions, win, _ = _argmax_positions(node, x)
    xn = to_nhwc(grad, win.data_format)
    (_, top, bottom), (_, left, right) = win.out_hw(xn.shape[1], xn.shape[2])
    gp = np.pad(xn, ((0, 0), (top, bottom), (left, right), (0, 0)))
    return from_nhwc(gp.ravel()[positions], win.data_format)


registry.shape("MaxPoolGrad")(same_as_input)
registry.shape("MaxPoolGradGrad")(lambda inputs, attrs: [(inputs[1].dtype, inputs[1].shape)])


@registry.gradient("MaxPool")
def _max_pool_grad(op, grad):
    return [registry.make_op("MaxPoolGrad", [op.inputs[0], op.outputs[0], grad], _pool_attrs(op)).outputs[0]]


@registry.gradient("MaxPoolGrad")
def _max_pool_grad_grad(op, grad):
    x, y, _ = op.inputs
    gg = registry.make_op("MaxPoolGradGrad", [x, y, grad], _pool_attrs(op)).outputs[0]
    return [math_ops.zeros_like(x), math_ops.zeros_like(y), gg]


@registry.gradient("MaxPoolGradGrad")
def _max_pool_grad_grad_grad(op, grad):
    x, y, _ = op.inputs
    g = registry.make_op("MaxPoolGrad", [x, y, grad], _pool_attrs(op)).outputs[0]
    return [math_ops.zeros_like(x), math_ops.zeros_like(y), g]


# -- avg_pool ---------------------------------------------------------------------------------------------
def _counts(win, h, w):
    """How many real (unpadded) input elements each output's window covers: ``(1, OH, OW, 1)``."""
    per_dim = []
    for size, k, s, (out, before, _) in zip((h, w), win.ksize, win.strides, win.out_hw(h, w)):
        start = np.arange(out) * s - before
        per_dim.append(np.clip(start + k, 0, size) - np.clip(start, 0, size))
    return np.multiply.outer(*per_dim)[None, :, :, None]


@registry.kernel("AvgPool")
def _avg_pool_kernel(ctx, node, x):
    win, _, p = _pooled(node, x, 0)
    h, w = to_nhwc(x, win.data_format).shape[1:3]
    out = p.sum(axis=(3, 4))
    out /= _counts(win, h, w).astype(out.dtype)
    return from_nhwc(out, win.data_format)


@registry.kernel("AvgPoolGrad")
def _avg_pool_grad_kernel(ctx, node, sizes, grad):
    win = Window(node.attr)
    n, *rest = (int(v) for v in sizes)
    in_shape = (n, *rest) if win.data_format == "NHWC" else (n, rest[1], rest[2], rest[0])
    g = to_nhwc(grad, win.data_format) / _counts(win, in_shape[1], in_shape[2]).astype(grad.dtype)
    cols = np.broadcast_to(g, (*win.ksize, *g.shape))
    return from_nhwc(win.col2im(cols, in_shape), win.data_format)


registry.shape("AvgPoolGrad")(lambda inputs, attrs: [(inputs[1].dtype, sizes_shape(inputs[0]))])


@registry.gradient("AvgPool")
def _avg_pool_grad(op, grad):
    sizes = shape_of(op.inputs[0])
    return [registry.make_op("AvgPoolGrad", [sizes, grad], _pool_attrs(op)).outputs[0]]


@registry.gradient("AvgPoolGrad")
def _avg_pool_grad_grad(op, grad):
    return [None, registry.make_op("AvgPool", [grad], _pool_attrs(op)).outputs[0]]


# -- constructors -----------------------------------------------------------------------------------------
def _pool(op_type, tf_name, value, input, ksize, strides, padding, data_format, name):  # noqa: A002
    if (value is None) == (input is None):
        raise ValueError(f"{tf_name}: pass exactly one of value and input")
    fmt = check_format(data_format, tf_name)
    attrs = {
        "ksize": spatial_sequence(ksize, "ksize", fmt, tf_name),
        "strides": spatial_sequence(strides, "strides", fmt, tf_name),
        "padding": check_padding(padding, tf_name),
        "data_format": fmt,
    }
    x = convert_to_tensor(value if value is not None else input)
    return registry.make_op(op_type, [x], attrs, name=name).outputs[0]


def max_pool(value=None, ksize=None, strides=None, padding=None, data_format="NHWC", name=None, input=None):  # noqa: A002
    """`tf.nn.max_pool`: the maximum of each `ksize` window (padding never wins).

    Args:
        value: a 4-D tensor in `data_format` (``"NHWC"`` or ``"NCHW"``; `input` in TF2).
        ksize, strides: an int or a list of 1, 2 or 4 ints (batch and channel entries 1).
        padding: ``"SAME"`` or ``"VALID"``.

    Raises:
        ValueError: bad sizes, padding or format, or a VALID window larger than the input.
    """
    return _pool("MaxPool", "tf.nn.max_pool", value, input, ksize, strides, padding, data_format, name)


def avg_pool(value=None, ksize=None, strides=None, padding=None, data_format="NHWC", name=None, input=None):  # noqa: A002
    """`tf.nn.avg_pool`: the mean of each `ksize` window; with SAME padding the mean of the
    window's real elements only (as TF).

    Raises:
        ValueError: bad sizes, padding or format, or a VALID window larger than the input.
    """
    return _pool("AvgPool", "tf.nn.avg_pool", value, input, ksize, strides, padding, data_format, name)


# -- lrn ---------------------------------------------------------------------------------------------------
_LRN_ATTRS = ("depth_radius", "bias", "alpha", "beta")


def _window_sum(x, radius):
    """``out[..., d] = sum(x[..., d - radius : d + radius + 1])`` (clipped at the ends)."""
    depth = x.shape[-1]
    radius = min(radius, depth - 1)
    padded = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(radius, radius)])
    out = padded[..., :depth].copy()
    for k in range(1, 2 * radius + 1):
        out += padded[..., k : k + depth]
    return out


def _lrn_norm(node, x):
    """``bias + alpha * sum of squares over the depth window``, and the attrs."""
    r, bias, alpha, beta = (node.attr[k] for k in _LRN_ATTRS)
    return bias + alpha * _window_sum(np.square(x), r), alpha, beta, r


def _lrn_shape(inputs, attrs):
    x = inputs[0]
    if x.shape.ndims not in (None, 4):
        raise ValueError(f"tf.nn.lrn needs a 4-D input (NHWC), {x.name} has shape {x.shape}")
    return same_as_input(inputs, attrs)


registry.shape("LRN")(_lrn_shape)
registry.shape("LRNGrad")(lambda inputs, attrs: [(inputs[1].dtype, inputs[1].shape)])


@registry.kernel("LRN")
def _lrn_kernel(ctx, node, x):
    norm, _, beta, _ = _lrn_norm(node, x)
    return (x * norm ** (-beta)).astype(x.dtype, copy=False)


@registry.kernel("LRNGrad")
def _lrn_grad_kernel(ctx, node, grad, x, y):
    """``dx = g * N^-beta - 2 alpha beta x * window_sum(g * y / N)``."""
    norm, alpha, beta, r = _lrn_norm(node, x)
    dx = grad * norm ** (-beta) - 2.0 * alpha * beta * x * _window_sum(grad * y / norm, r)
    return dx.astype(x.dtype, copy=False)


@registry.gradient("LRN")
def _lrn_grad(op, grad):
    attrs = {k: op.get_attr(k) for k in _LRN_ATTRS}
    return [registry.make_op("LRNGrad", [grad, op.inputs[0], op.outputs[0]], attrs).outputs[0]]


def local_response_normalization(input, depth_radius=5, bias=1.0, alpha=1.0, beta=0.5, name=None):  # noqa: A002
    """`tf.nn.lrn`: local response normalisation over the channels of a 4-D NHWC input.

    ``input / (bias + alpha * sqr_sum) ** beta``, where `sqr_sum` sums the squares of the
    ``2 * depth_radius + 1`` channels around each one (fewer at the ends).
    """
    x = convert_to_tensor(input)
    attrs = {
        "depth_radius": int(depth_radius),
        "bias": float(bias),
        "alpha": float(alpha),
        "beta": float(beta),
    }
    return registry.make_op("LRN", [x], attrs, name=name).outputs[0]


lrn = local_response_normalization
