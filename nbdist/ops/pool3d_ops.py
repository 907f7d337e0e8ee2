"""3-D pooling (`tf.nn`): max_pool3d, avg_pool3d.

TF's op types and attrs (``ksize``, ``strides``, ``padding``, ``data_format``): `MaxPool3D` with
`MaxPool3DGrad` and `MaxPool3DGradGrad`, `AvgPool3D` with `AvgPool3DGrad`. Kernels reduce
`Window3D.patches` (conv3d_ops), a strided view of the padded NDHWC input. As TF's CPU kernels,
`MaxPool3DGrad` gives each window's gradient to every element equal to its maximum (ties all
receive it, where 2-D `MaxPoolGrad` picks the first) while `MaxPool3DGradGrad` reads the first
maximum's, and SAME average pooling divides by the
number of real (unpadded) elements.
"""

import numpy as np

from nbdist.ops import math_ops, registry
from nbdist.ops._shapes import invalid_argument
from nbdist.ops._windows import check_padding
from nbdist.ops.array_ops import shape as shape_of
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.conv3d_ops import (
    Window3D,
    check_format_3d,
    from_ndhwc,
    ndhwc_dims,
    sequence_3d,
    shape_of_ndhwc,
    sizes_shape_5d,
    to_ndhwc,
)

__all__ = ["avg_pool3d", "max_pool3d"]

_POOL_ATTRS = ("ksize", "strides", "padding", "data_format")
_WINDOW_AXES = (4, 5, 6)


def _pool_attrs(op):
    return {k: op.get_attr(k) for k in _POOL_ATTRS}


def _make(op_type, inputs, op):
    return registry.make_op(op_type, inputs, _pool_attrs(op)).outputs[0]


@registry.shape("MaxPool3D")
@registry.shape("AvgPool3D")
def _pool3d_shape(inputs, attrs):
    (x,) = inputs
    if x.shape.ndims not in (None, 5):
        raise ValueError(f"3-D pooling needs a 5-D input, {x.name} has shape {x.shape}")
    fmt = attrs["data_format"]
    n, *spatial, c = ndhwc_dims(x.shape, fmt)
    try:
        dims = Window3D(attrs).out_dims(spatial)
    except ValueError as e:
        raise ValueError(f"3-D pooling of {x.name} {x.shape}: {e}") from None
    return [(x.dtype, shape_of_ndhwc([n, *(d for d, _, _ in dims), c], fmt))]


registry.shape("MaxPool3DGrad")(lambda inputs, attrs: [(inputs[2].dtype, inputs[0].shape)])
registry.shape("MaxPool3DGradGrad")(lambda inputs, attrs: [(inputs[2].dtype, inputs[1].shape)])
registry.shape("AvgPool3DGrad")(lambda inputs, attrs: [(inputs[1].dtype, sizes_shape_5d(inputs[0]))])


def _pooled(node, x, fill):
    """``(window, patches view)`` of a pooling node's input `x`, padded with `fill`."""
    win = Window3D(node.attr)
    try:
        xp, out_dims = win.pad(to_ndhwc(x, win.data_format), fill)
    except ValueError as e:
        raise invalid_argument(node, f"{node.op}: {e}") from None
    return win, win.patches(xp, out_dims)


# -- max_pool3d -------------------------------------------------------------------------------------------
@registry.kernel("MaxPool3D")
def _max_pool3d_kernel(ctx, node, x):
    win, p = _pooled(node, x, -np.inf)
    return from_ndhwc(p.max(axis=_WINDOW_AXES).astype(x.dtype, copy=False), win.data_format)


def _maxima(node, x, y):
    """``(window, mask)``: mask ``(KD, KH, KW, N, OD, OH, OW, C)`` marks each window's elements
    equal to its maximum `y` (tap-major, for `col2im`)."""
    win, p = _pooled(node, x, -np.inf)
    return win, np.moveaxis(
        p == to_ndhwc(y, win.data_format)[:, :, :, :, None, None, None, :], _WINDOW_AXES, (0, 1, 2)
    )


@registry.kernel("MaxPool3DGrad")
def _max_pool3d_grad_kernel(ctx, node, x, y, grad):
    win, mask = _maxima(node, x, y)
    cols = np.where(mask, to_ndhwc(grad, win.data_format), 0).astype(grad.dtype, copy=False)
    return from_ndhwc(win.col2im(cols, to_ndhwc(x, win.data_format).shape), win.data_format)


@registry.kernel("MaxPool3DGradGrad")
def _max_pool3d_grad_grad_kernel(ctx, node, x, y, grad):
    """Each window's first maximum (row-major) picks its element of `grad`: TF's CPU rule here."""
    win, p = _pooled(node, x, -np.inf)
    _, g = _pooled(node, grad, 0)
    n, od, oh, ow, *_, c = p.shape
    first = p.reshape(n, od, oh, ow, -1, c).argmax(axis=4)[:, :, :, :, None]
    picked = np.take_along_axis(g.reshape(n, od, oh, ow, -1, c), first, axis=4)[:, :, :, :, 0]
    return from_ndhwc(picked.astype(grad.dtype, copy=False), win.data_format)


@registry.gradient("MaxPool3D")
def _max_pool3d_grad(op, grad):
    return [_make("MaxPool3DGrad", [op.inputs[0], op.outputs[0], grad], op)]


@registry.gradient("MaxPool3DGrad")
def _max_pool3d_grad_grad(op, grad):
    x, y, _ = op.inputs
    return [math_ops.zeros_like(x), math_ops.zeros_like(y), _make("MaxPool3DGradGrad", [x, y, grad], op)]


@registry.gradient("MaxPool3DGradGrad")
def _max_pool3d_grad_grad_grad(op, grad):
    x, y, _ = op.inputs
    return [math_ops.zeros_like(x), math_ops.zeros_like(y), _make("MaxPool3DGrad", [x, y, grad], op)]


# -- avg_pool3d -------------------------------------------------------------------------------------------
def _counts(win, sizes):
    """How many real (unpadded) input elements each output's window covers: ``(1, OD, OH, OW, 1)``."""
    per_dim = []
    for size, k, s, (out, before, _) in zip(sizes, win.ksize, win.strides, win.out_dims(sizes)):
        start = np.arange(out) * s - before
        per_dim.append(np.clip(start + k, 0, size) - np.clip(start, 0, size))
    return np.einsum("i,j,k->ijk", *per_dim)[None, :, :, :, None]


@registry.kernel("AvgPool3D")
def _avg_pool3d_kernel(ctx, node, x):
    win, p = _pooled(node, x, 0)
    out = p.sum(axis=_WINDOW_AXES)
    out = out / _counts(win, to_ndhwc(x, win.data_format).shape[1:4]).astype(out.dtype)
    return from_ndhwc(out.astype(x.dtype, copy=False), win.data_format)


@registry.kernel("AvgPool3DGrad")
def _avg_pool3d_grad_kernel(ctx, node, sizes, grad):
    win = Window3D(node.attr)
    sizes = [int(v) for v in sizes]
    in_shape = tuple(sizes if win.data_format == "NDHWC" else [sizes[0], *sizes[2:], sizes[1]])
    try:
        g = to_ndhwc(grad, win.data_format) / _counts(win, in_shape[1:4]).astype(grad.dtype)
    except ValueError as e:
        raise invalid_argument(node, f"{node.op}: {e}") from None
    cols = np.broadcast_to(g, (*win.ksize, *g.shape))
    return from_ndhwc(win.col2im(cols, in_shape).astype(grad.dtype, copy=False), win.data_format)


@registry.gradient("AvgPool3D")
def _avg_pool3d_grad(op, grad):
    return [_make("AvgPool3DGrad", [shape_of(op.inputs[0]), grad], op)]


@registry.gradient("AvgPool3DGrad")
def _avg_pool3d_grad_grad(op, grad):
    return [None, _make("AvgPool3D", [grad], op)]


# -- constructors -----------------------------------------------------------------------------------------
def _pool3d(op_type, tf_name, input, ksize, strides, padding, data_format, name):  # noqa: A002
    fmt = check_format_3d(data_format, tf_name)
    attrs = {
        "ksize": sequence_3d(ksize, "ksize", fmt, tf_name),
        "strides": sequence_3d(strides, "strides", fmt, tf_name),
        "padding": check_padding(padding, tf_name),
        "data_format": fmt,
    }
    x = convert_to_tensor(input)
    if not x.dtype.is_floating:
        raise TypeError(f"{tf_name}: expected a floating point input, got {x.dtype.name} ({x.name})")
    return registry.make_op(op_type, [x], attrs, name=name).outputs[0]


def max_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None):  # noqa: A002 - TF's name
    """`tf.nn.max_pool3d`: the maximum of each `ksize` window of a 5-D input (padding never wins).

    Args:
        input: ``[batch, depth, height, width, channels]`` (NDHWC) or NCDHW, floating point.
        ksize, strides: an int or a list of 1, 3 or 5 ints (batch and channel entries 1).
        padding: ``"SAME"`` or ``"VALID"``.

    Raises:
        ValueError: bad sizes, padding or format, or a VALID window larger than the input.
    """
    return _pool3d("MaxPool3D", "tf.nn.max_pool3d", input, ksize, strides, padding, data_format, name)


def avg_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None):  # noqa: A002 - TF's name
    """`tf.nn.avg_pool3d`: the mean of each `ksize` window of a 5-D input; with SAME padding the
    mean of the window's real elements only (as TF).

    Raises:
        ValueError: bad sizes, padding or format, or a VALID window larger than the input.
    """
    return _pool3d("AvgPool3D", "tf.nn.avg_pool3d", input, ksize, strides, padding, data_format, name)
