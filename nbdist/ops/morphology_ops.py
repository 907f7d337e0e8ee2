"""Max-plus windows (`tf.nn`): dilation2d, erosion2d, max_pool_with_argmax.

TF's op types and attrs: `Dilation2D` (``strides``, ``rates``, ``padding``) with
`Dilation2DBackpropInput` / `Dilation2DBackpropFilter` (which, as in TF, have no gradient), and
`MaxPoolWithArgmax` (``ksize``, ``strides``, ``padding``, ``Targmax``,
``include_batch_in_index``) with `MaxPoolGradWithArgmax` (no gradient, as in TF).
Kernels reduce `Window.patches` (the strided view of the -inf padded NHWC input); a window's
gradient goes to its first maximum in row-major order, TF's CPU rule. `erosion2d` is TF's
duality: ``-dilation2d(-value, reverse(kernel))``.
"""

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import get_default_graph
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops._shapes import invalid_argument
from nbdist.ops._windows import Window, check_padding, spatial_sequence
from nbdist.ops.constant_op import convert_n, convert_to_tensor
from nbdist.ops.math_ops import negative
from nbdist.ops.reshape_ops import reverse_v2

__all__ = ["dilation2d", "erosion2d", "max_pool_with_argmax"]


def _four(value, what, op_name):
    """A 4-list ``[1, h, w, 1]`` (TF's dilation attrs), from 4 ints or (here too) an int or a pair."""
    values = [value] if isinstance(value, (int, np.integer)) else list(value)
    if len(values) in (1, 2):
        values = [1, *(values * 2)[:2], 1]
    if len(values) != 4 or not all(isinstance(v, (int, np.integer)) for v in values):
        raise ValueError(f"{op_name}: {what} should be a list of 4 ints [1, height, width, 1], got {value!r}")
    if values[0] != 1 or values[3] != 1:
        raise ValueError(
            f"{op_name}: {what} {value!r}: only 1 is supported in the batch and depth dimensions"
        )
    return [int(v) for v in values]


def _window(attrs, ksize):
    rates = attrs.get("rates", [1, 1, 1, 1])
    return Window({"strides": attrs["strides"], "dilations": rates, "padding": attrs["padding"]}, ksize)


def _out_hw(attrs, h, w, ksize, what):
    win = _window(attrs, ksize)
    try:
        return [o for o, _, _ in win.out_hw(h, w)]
    except ValueError as e:
        raise ValueError(f"{what}: {e}") from None


def _first_max(node, win, x, w=None):
    """Each window's maximum of ``x (+ w)`` and the flat tap index ``(N, OH, OW, C)`` of its first
    maximum; and the padded input's shape."""
    try:
        xp, out_hw, _ = win.pad(x, -np.inf)
    except ValueError as e:
        raise invalid_argument(node, f"{node.op}: {e}") from None
    p = win.patches(xp, out_hw)
    if w is not None:
        p = p + w[None, None, None]
    n, oh, ow, kh, kw, c = p.shape
    flat = p.reshape(n, oh, ow, kh * kw, c)
    taps = flat.argmax(axis=3)
    return np.take_along_axis(flat, taps[:, :, :, None], 3)[:, :, :, 0], taps, xp.shape


def _positions(win, taps, padded):
    """Flat positions in the padded input (NHWC) of each window's chosen tap."""
    n, oh, ow, c = taps.shape
    kw = win.ksize[1]
    (sh, sw), (dh, dw) = win.strides, win.dilations
    rows = np.arange(oh)[None, :, None, None] * sh + (taps // kw) * dh
    cols = np.arange(ow)[None, None, :, None] * sw + (taps % kw) * dw
    return ((np.arange(n)[:, None, None, None] * padded[1] + rows) * padded[2] + cols) * c + np.arange(c)


def _crop(win, values, padded, h, w):
    (_, top, _), (_, left, _) = win.out_hw(h, w)
    return values.reshape(padded)[:, top : top + h, left : left + w, :]


# -- Dilation2D ---------------------------------------------------------------------------------------------
@registry.shape("Dilation2D")
def _dilation_shape(inputs, attrs):
    x, w = inputs
    if x.shape.ndims not in (None, 4) or w.shape.ndims not in (None, 3):
        raise ValueError(f"Dilation2D: input must be 4-D and filter 3-D, got {x.shape} and {w.shape}")
    if x.dtype != w.dtype:
        raise TypeError(f"Dilation2D: input is {x.dtype.name} but filter is {w.dtype.name}")
    n, h, wd, c = x.shape.as_list() if x.shape.ndims else [None] * 4
    kh, kw, fc = w.shape.as_list() if w.shape.ndims else [None] * 3
    if None not in (c, fc) and c != fc:
        raise ValueError(f"Dilation2D: input depth {c} of {x.name} must equal filter depth {fc} of {w.name}")
    oh, ow = (None, None) if None in (kh, kw) else _out_hw(attrs, h, wd, (kh, kw), f"Dilation2D of {x.name}")
    return [(x.dtype, TensorShape([n, oh, ow, c if c is not None else fc]))]


registry.shape("Dilation2DBackpropInput")(lambda inputs, attrs: [(inputs[0].dtype, inputs[0].shape)])
registry.shape("Dilation2DBackpropFilter")(lambda inputs, attrs: [(inputs[1].dtype, inputs[1].shape)])


@registry.kernel("Dilation2D")
def _dilation_kernel(ctx, node, x, w):
    if x.ndim != 4 or w.ndim != 3 or x.shape[3] != w.shape[2]:
        raise invalid_argument(
            node, f"Dilation2D: input {list(x.shape)} and filter {list(w.shape)} do not match"
        )
    out, _, _ = _first_max(node, _window(node.attr, w.shape[:2]), x, w)
    return out.astype(x.dtype, copy=False)


@registry.kernel("Dilation2DBackpropInput")
def _dilation_input_kernel(ctx, node, x, w, dy):
    win = _window(node.attr, w.shape[:2])
    _, taps, padded = _first_max(node, win, x, w)
    dx = np.bincount(_positions(win, taps, padded).ravel(), dy.ravel(), int(np.prod(padded)))
    return _crop(win, dx, padded, x.shape[1], x.shape[2]).astype(x.dtype)


@registry.kernel("Dilation2DBackpropFilter")
def _dilation_filter_kernel(ctx, node, x, w, dy):
    _, taps, _ = _first_max(node, _window(node.attr, w.shape[:2]), x, w)
    c = w.shape[2]
    dw = np.bincount((taps * c + np.arange(c)).ravel(), dy.ravel(), w.size)
    return dw.reshape(w.shape).astype(w.dtype)


def _dilation_attrs(op):
    return {k: op.get_attr(k) for k in ("strides", "rates", "padding")}


@registry.gradient("Dilation2D")
def _dilation_grad(op, grad):
    x, w = op.inputs
    attrs = _dilation_attrs(op)
    return [
        registry.make_op("Dilation2DBackpropInput", [x, w, grad], attrs).outputs[0],
        registry.make_op("Dilation2DBackpropFilter", [x, w, grad], attrs).outputs[0],
    ]


def dilation2d(
    input,  # noqa: A002 - TF's argument name
    filter=None,  # noqa: A002 - TF's argument name
    strides=None,
    rates=None,
    padding=None,
    name=None,
    filters=None,
    dilations=None,
):
    """`tf.nn.dilation2d`: grayscale morphological dilation, per channel:
    ``out[b, y, x, c] = max over (dy, dx) of input[b, y*sh + dy*rh, x*sw + dx*rw, c] + filter[dy, dx, c]``.

    Args:
        input: ``[batch, height, width, depth]``.
        filter: ``[filter_height, filter_width, depth]`` (`filters` in TF2).
        strides, rates: 4-lists ``[1, h, w, 1]`` (`dilations` is TF2's `rates`).
        padding: ``"SAME"`` or ``"VALID"``.
    """
    op_name = "tf.nn.dilation2d"
    if (filter is None) == (filters is None) or (rates is not None and dilations is not None):
        raise ValueError(f"{op_name}: pass one of filter / filters, and at most one of rates / dilations")
    attrs = {
        "strides": _four(strides, "strides", op_name),
        "rates": _four(rates if rates is not None else dilations, "rates", op_name),
        "padding": check_padding(padding, op_name),
    }
    x, w = convert_n([input, filter if filter is not None else filters])
    return registry.make_op("Dilation2D", [x, w], attrs, name=name).outputs[0]


def erosion2d(value, kernel, strides, rates, padding, name=None):
    """`tf.nn.erosion2d`: grayscale morphological erosion,
    ``out = min over (dy, dx) of value[b, y*sh - dy*rh, x*sw - dx*rw, c] - kernel[dy, dx, c]``,
    computed as TF does: ``-dilation2d(-value, reverse(kernel, [0, 1]))``."""
    with get_default_graph().name_scope(name or "erosion2d") as scope:
        value, kernel = convert_n([value, kernel])
        return negative(
            dilation2d(
                negative(value), reverse_v2(kernel, [0, 1]), strides, rates, padding, name=scope.rstrip("/")
            )
        )


# -- MaxPoolWithArgmax ------------------------------------------------------------------------------------
def _argmax_window(attrs):
    return Window({"strides": attrs["strides"], "padding": attrs["padding"], "ksize": attrs["ksize"]})


@registry.shape("MaxPoolWithArgmax")
def _argmax_shape(inputs, attrs):
    (x,) = inputs
    if x.shape.ndims not in (None, 4):
        raise ValueError(f"MaxPoolWithArgmax: input must be 4-D (NHWC), {x.name} has shape {x.shape}")
    n, h, w, c = x.shape.as_list() if x.shape.ndims else [None] * 4
    try:
        (oh, _, _), (ow, _, _) = _argmax_window(attrs).out_hw(h, w)
    except ValueError as e:
        raise ValueError(f"MaxPoolWithArgmax of {x.name} {x.shape}: {e}") from None
    out = TensorShape([n, oh, ow, c])
    return [(x.dtype, out), (attrs["Targmax"], out)]


@registry.kernel("MaxPoolWithArgmax")
def _argmax_kernel(ctx, node, x):
    win = _argmax_window(node.attr)
    out, taps, padded = _first_max(node, win, x)
    _, h, w, c = x.shape
    (_, top, _), (_, left, _) = win.out_hw(h, w)
    flat = _positions(win, taps, padded)
    b, rest = np.divmod(flat, padded[1] * padded[2] * c)
    row, rest = np.divmod(rest, padded[2] * c)
    col, ch = np.divmod(rest, c)
    index = ((row - top) * w + (col - left)) * c + ch
    if node.attr["include_batch_in_index"]:
        index = index + b * (h * w * c)
    return out.astype(x.dtype, copy=False), index.astype(node.attr["Targmax"].np)


def _argmax_targets(node, argmax, size_per_batch, n):
    """`argmax` as positions in the flattened input (batch included)."""
    if node.attr["include_batch_in_index"]:
        return argmax.ravel()
    return (argmax + (np.arange(n) * size_per_batch)[:, None, None, None]).ravel()


@registry.kernel("MaxPoolGradWithArgmax")
def _grad_with_argmax_kernel(ctx, node, x, grad, argmax):
    per_batch = int(np.prod(x.shape[1:]))
    targets = _argmax_targets(node, argmax, per_batch, x.shape[0])
    if targets.size and (targets.min() < 0 or targets.max() >= x.size):
        raise invalid_argument(
            node, f"{node.op}: argmax holds an index outside the input of {x.size} elements"
        )
    return np.bincount(targets, grad.ravel(), x.size).reshape(x.shape).astype(x.dtype)


registry.shape("MaxPoolGradWithArgmax")(lambda inputs, attrs: [(inputs[0].dtype, inputs[0].shape)])


def _argmax_attrs(op):
    return {k: op.get_attr(k) for k in ("ksize", "strides", "padding", "include_batch_in_index")}


@registry.gradient("MaxPoolWithArgmax")
def _max_pool_with_argmax_grad(op, grad, unused_argmax_grad=None):
    x, argmax = op.inputs[0], op.outputs[1]
    return [registry.make_op("MaxPoolGradWithArgmax", [x, grad, argmax], _argmax_attrs(op)).outputs[0]]


def max_pool_with_argmax(
    input,  # noqa: A002 - TF's argument name
    ksize,
    strides,
    padding,
    data_format="NHWC",
    Targmax=None,  # noqa: N803 - TF's argument name
    name=None,
    output_dtype=None,
    include_batch_in_index=False,
):
    """`tf.nn.max_pool_with_argmax`: `max_pool` and the flattened index of each maximum.

    The index of ``[b, y, x, c]`` is ``((b * height + y) * width + x) * channels + c`` with
    `include_batch_in_index`, else ``(y * width + x) * channels + c``; ties: the first in the
    window (row-major).

    Args:
        ksize, strides: an int or a list of 1, 2 or 4 ints (batch and channel entries 1).
        Targmax, output_dtype: the index dtype, `tf.int64` (default) or `tf.int32`.

    Returns:
        ``(output, argmax)``.

    Raises:
        ValueError: a data_format other than NHWC, or both `Targmax` and `output_dtype`.
    """
    op_name = "tf.nn.max_pool_with_argmax"
    if data_format != "NHWC":
        raise ValueError(
            f"{op_name}: data formats other than 'NHWC' are not yet supported, got {data_format!r}"
        )
    if Targmax is not None and output_dtype is not None and Targmax != output_dtype:
        raise ValueError(f"{op_name}: Targmax {Targmax!r} and output_dtype {output_dtype!r} differ; pass one")
    dtype = _dtypes.as_dtype(Targmax or output_dtype or _dtypes.int64)
    if dtype not in (_dtypes.int32, _dtypes.int64):
        raise TypeError(f"{op_name}: Targmax must be int32 or int64, got {dtype.name}")
    attrs = {
        "ksize": spatial_sequence(ksize, "ksize", "NHWC", op_name),
        "strides": spatial_sequence(strides, "strides", "NHWC", op_name),
        "padding": check_padding(padding, op_name),
        "Targmax": dtype,
        "include_batch_in_index": bool(include_batch_in_index),
    }
    op = registry.make_op("MaxPoolWithArgmax", [convert_to_tensor(input)], attrs, name=name)
    return op.outputs[0], op.outputs[1]
