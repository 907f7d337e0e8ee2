"""3-D convolutions (`tf.nn`): conv3d, conv3d_backprop_filter(_v2), conv3d_transpose.

TF's op types and attrs (``strides``, ``padding``, ``data_format``, ``dilations``, 5 entries
each): `Conv3D` with `Conv3DBackpropInputV2` / `Conv3DBackpropFilterV2`, a family of three whose
gradients are each other (as conv_ops' 2-D families). Kernels compute in NDHWC (an NCDHW input
is transposed in and out) on `Window3D.patches`, a strided view ``(N, OD, OH, OW, KD, KH, KW, C)``
of the padded input, with one ``tensordot`` per op; the input gradient adds the products back
with `Window3D.col2im`, one slice-add per kernel tap. `Window3D` is the pooling ops' too
(pool3d_ops).
"""

import itertools

import numpy as np
from numpy.lib.stride_tricks import as_strided

from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops._shapes import int_tensor, invalid_argument
from nbdist.ops._windows import check_padding, output_size
from nbdist.ops.array_ops import shape as shape_of
from nbdist.ops.constant_op import convert_n
from nbdist.ops.shape_ops import get_static_value

__all__ = ["conv3d", "conv3d_backprop_filter", "conv3d_backprop_filter_v2", "conv3d_transpose"]

FORMATS_3D = ("NDHWC", "NCDHW")


# -- the window geometry, shared with pool3d_ops -------------------------------------------------------
def check_format_3d(data_format, op_name):
    """`data_format` (None: NDHWC) when it is NDHWC or NCDHW; else ValueError naming them."""
    data_format = data_format or "NDHWC"
    if data_format not in FORMATS_3D:
        raise ValueError(
            f"{op_name}: data_format {data_format!r} is not supported; use one of {list(FORMATS_3D)}"
        )
    return data_format


def sequence_3d(value, what, data_format, op_name, lengths=(1, 3, 5)):
    """TF's ``_get_sequence`` for 3 spatial dimensions: an int or a list of 1, 3 or 5 ints as the
    5 per-dimension values in `data_format` order (batch and channel 1).

    Raises:
        ValueError: another length, or a 5-list asking for a batch or channel value other than 1.
    """
    values = [value] if isinstance(value, (int, np.integer)) else list(value)
    if not all(isinstance(v, (int, np.integer)) for v in values) or len(values) not in lengths:
        allowed = " or ".join(str(n) for n in lengths)
        raise ValueError(f"{op_name}: {what} should be an int or a list of {allowed} ints, got {value!r}")
    channel = 4 if data_format == "NDHWC" else 1
    if len(values) == 5:
        if values[0] != 1 or values[channel] != 1:
            raise ValueError(
                f"{op_name}: {what} {value!r}: the current implementation does not yet support {what} "
                f"in the batch and depth dimensions ({data_format}); use 1 there"
            )
        return [int(v) for v in values]
    spatial = [int(v) for v in (values * 3)[:3]]
    return [1, *spatial, 1] if data_format == "NDHWC" else [1, 1, *spatial]


def spatial_3d(values, data_format):
    """The (depth, height, width) entries of a 5-list in `data_format` order."""
    return tuple(values[1:4]) if data_format == "NDHWC" else tuple(values[2:5])


def ndhwc_dims(shape, data_format):
    """``[N, D, H, W, C]`` of a static shape (Nones where unknown)."""
    dims = shape.as_list() if shape.ndims is not None else [None] * 5
    return dims if data_format == "NDHWC" else [dims[0], *dims[2:], dims[1]]


def shape_of_ndhwc(dims, data_format):
    n, *spatial, c = dims
    return TensorShape(dims if data_format == "NDHWC" else [n, c, *spatial])


def sizes_shape_5d(sizes_tensor):
    """The static shape a 1-D sizes input gives, rank 5 when its value is unknown."""
    value = get_static_value(sizes_tensor)
    return TensorShape([int(v) for v in np.ravel(value)]) if value is not None else TensorShape([None] * 5)


def to_ndhwc(x, data_format):
    return x if data_format == "NDHWC" else np.transpose(x, (0, 2, 3, 4, 1))


def from_ndhwc(x, data_format):
    return x if data_format == "NDHWC" else np.ascontiguousarray(np.transpose(x, (0, 4, 1, 2, 3)))


class Window3D:
    """A node's window in NDHWC terms: kernel ``(kd, kh, kw)``, strides, dilations, padding."""

    def __init__(self, attrs, ksize=None):
        fmt = attrs.get("data_format", "NDHWC")
        self.data_format = fmt
        self.padding = attrs["padding"]
        self.strides = spatial_3d(attrs["strides"], fmt)
        self.dilations = spatial_3d(attrs.get("dilations", [1] * 5), fmt)
        self.ksize = tuple(int(k) for k in ksize) if ksize is not None else spatial_3d(attrs["ksize"], fmt)

    def out_dims(self, sizes):
        """``(out, before, after)`` of each spatial dimension of an input of `sizes` (D, H, W)."""
        return tuple(
            output_size(size, k, s, d, self.padding)
            for size, k, s, d in zip(sizes, self.ksize, self.strides, self.dilations)
        )

    def pad(self, x, value=0.0):
        """`x` (NDHWC) padded for this window; returns ``(padded, (od, oh, ow))``."""
        dims = self.out_dims(x.shape[1:4])
        pads = [(before, after) for _, before, after in dims]
        if any(before or after for before, after in pads):
            x = np.pad(x, [(0, 0), *pads, (0, 0)], constant_values=value)
        return x, tuple(out for out, _, _ in dims)

    def patches(self, xp, out_dims):
        """The strided view ``(N, OD, OH, OW, KD, KH, KW, C)`` of padded `xp`: no copy."""
        s = xp.strides
        steps = [s[i + 1] * st for i, st in enumerate(self.strides)]
        taps = [s[i + 1] * d for i, d in enumerate(self.dilations)]
        shape = (xp.shape[0], *out_dims, *self.ksize, xp.shape[4])
        return as_strided(xp, shape, (s[0], *steps, *taps, s[4]), writeable=False)

    def col2im(self, cols, in_shape):
        """The adjoint of `patches`: adds ``cols (KD, KH, KW, N, OD, OH, OW, C)`` (tap-major) into
        an input of `in_shape` (NDHWC, unpadded), one slice-add per kernel tap."""
        dims = self.out_dims(in_shape[1:4])
        padded = [size + before + after for size, (_, before, after) in zip(in_shape[1:4], dims)]
        out = np.zeros((in_shape[0], *padded, in_shape[4]), cols.dtype)
        for tap in itertools.product(*(range(k) for k in self.ksize)):
            index = tuple(
                slice(t * d, t * d + (o - 1) * s + 1, s)
                for t, d, s, (o, _, _) in zip(tap, self.dilations, self.strides, dims)
            )
            out[(slice(None), *index)] += cols[tap]
        crop = tuple(slice(before, before + size) for size, (_, before, _) in zip(in_shape[1:4], dims))
        return out[(slice(None), *crop)]


# -- the numpy kernels (NDHWC; w is [KD, KH, KW, C, O]) ---------------------------------------------
def _forward(win, x, w):
    xp, out_dims = win.pad(x)
    return np.tensordot(win.patches(xp, out_dims), w, axes=4)


def _backprop_input(win, in_shape, w, dy):
    kd, kh, kw, c, o = w.shape
    taps = w.transpose(0, 1, 2, 4, 3).reshape(kd * kh * kw, o, c)
    cols = np.matmul(dy.reshape(1, -1, o), taps)  # (taps, N*OD*OH*OW, C): one batched GEMM
    return win.col2im(cols.reshape(kd, kh, kw, *dy.shape[:4], c), in_shape)


def _backprop_filter(win, x, dy):
    xp, out_dims = win.pad(x)
    return np.tensordot(win.patches(xp, out_dims), dy, axes=([0, 1, 2, 3], [0, 1, 2, 3]))


def _conv_attrs(op):
    return {k: op.get_attr(k) for k in ("strides", "padding", "data_format", "dilations")}


def _make(op_type, inputs, attrs, name=None):
    return registry.make_op(op_type, inputs, dict(attrs), name=name).outputs[0]


# -- shapes ----------------------------------------------------------------------------------------------
@registry.shape("Conv3D")
def _conv3d_shape(inputs, attrs):
    x, w = inputs
    for t, what in ((x, "input"), (w, "filter")):
        if t.shape.ndims not in (None, 5):
            raise ValueError(f"Conv3D: {what} must be 5-dimensional, {t.name} has shape {t.shape}")
    if x.dtype != w.dtype:
        raise TypeError(f"Conv3D: input is {x.dtype.name} but filter is {w.dtype.name}")
    if not x.dtype.is_floating:
        raise TypeError(f"Conv3D: expected a floating point input, got {x.dtype.name} ({x.name})")
    fmt = attrs["data_format"]
    n, *spatial, c = ndhwc_dims(x.shape, fmt)
    fdims = w.shape.as_list() if w.shape.ndims is not None else [None] * 5
    if None not in (c, fdims[3]) and c != fdims[3]:
        raise ValueError(
            f"Conv3D: input depth {c} of {x.name} {x.shape} is not the input depth of filter {w.name} "
            f"{w.shape} ({fdims[3]})"
        )
    try:
        dims = Window3D(attrs, [k or 1 for k in fdims[:3]]).out_dims(spatial)
    except ValueError as e:
        raise ValueError(f"Conv3D of {x.name} {x.shape} by {w.name} {w.shape}: {e}") from None
    out = [d if None not in fdims[:3] else None for d, _, _ in dims]
    return [(x.dtype, shape_of_ndhwc([n, *out, fdims[4]], fmt))]


registry.shape("Conv3DBackpropInputV2")(lambda inputs, attrs: [(inputs[1].dtype, sizes_shape_5d(inputs[0]))])
registry.shape("Conv3DBackpropFilterV2")(lambda inputs, attrs: [(inputs[0].dtype, sizes_shape_5d(inputs[1]))])


# -- kernels ---------------------------------------------------------------------------------------------
def _run(node, fn):
    try:
        return fn()
    except ValueError as e:
        raise invalid_argument(node, f"{node.op}: {e}") from None


@registry.kernel("Conv3D")
def _conv3d_kernel(ctx, node, x, w):
    fmt = node.attr["data_format"]
    if x.ndim != 5 or w.ndim != 5 or x.shape[4 if fmt == "NDHWC" else 1] != w.shape[3]:
        raise invalid_argument(
            node, f"Conv3D: input {list(x.shape)} ({fmt}) and filter {list(w.shape)} do not match"
        )
    y = _run(node, lambda: _forward(Window3D(node.attr, w.shape[:3]), to_ndhwc(x, fmt), w))
    return from_ndhwc(y.astype(x.dtype, copy=False), fmt)


@registry.kernel("Conv3DBackpropInputV2")
def _conv3d_input_kernel(ctx, node, sizes, w, dy):
    fmt = node.attr["data_format"]
    sizes = [int(v) for v in sizes]
    in_shape = tuple(sizes if fmt == "NDHWC" else [sizes[0], *sizes[2:], sizes[1]])
    dx = _run(node, lambda: _backprop_input(Window3D(node.attr, w.shape[:3]), in_shape, w, to_ndhwc(dy, fmt)))
    return from_ndhwc(dx.astype(dy.dtype, copy=False), fmt)


@registry.kernel("Conv3DBackpropFilterV2")
def _conv3d_filter_kernel(ctx, node, x, sizes, dy):
    fmt, filter_shape = node.attr["data_format"], tuple(int(v) for v in sizes)
    win = Window3D(node.attr, filter_shape[:3])
    dw = _run(node, lambda: _backprop_filter(win, to_ndhwc(x, fmt), to_ndhwc(dy, fmt)))
    return np.ascontiguousarray(dw.reshape(filter_shape), dtype=x.dtype)


# -- gradients (TF's): each op of the family differentiates into the other two --------------------------
@registry.gradient("Conv3D")
def _conv3d_grad(op, grad):
    x, w = op.inputs
    attrs = _conv_attrs(op)
    return [
        _make("Conv3DBackpropInputV2", [shape_of(x), w, grad], attrs),
        _make("Conv3DBackpropFilterV2", [x, shape_of(w), grad], attrs),
    ]


@registry.gradient("Conv3DBackpropInputV2")
def _conv3d_input_grad(op, grad):
    _, w, dy = op.inputs
    attrs = _conv_attrs(op)
    return [
        None,
        _make("Conv3DBackpropFilterV2", [grad, shape_of(w), dy], attrs),
        _make("Conv3D", [grad, w], attrs),
    ]


@registry.gradient("Conv3DBackpropFilterV2")
def _conv3d_filter_grad(op, grad):
    x, _, dy = op.inputs
    attrs = _conv_attrs(op)
    return [
        _make("Conv3DBackpropInputV2", [shape_of(x), grad, dy], attrs),
        None,
        _make("Conv3D", [x, grad], attrs),
    ]


# -- constructors ----------------------------------------------------------------------------------------
def _attrs(op_name, strides, padding, data_format, dilations):
    """The attrs of TF's generated 3-D ops: `strides` and `dilations` 5-lists (ints allowed here)."""
    fmt = check_format_3d(data_format, op_name)
    if strides is None:
        raise ValueError(f"{op_name}: strides is required (a list of 5 ints, e.g. [1, 1, 1, 1, 1])")
    return {
        "strides": sequence_3d(strides, "strides", fmt, op_name),
        "padding": check_padding(padding, op_name),
        "data_format": fmt,
        "dilations": sequence_3d(1 if dilations is None else dilations, "dilations", fmt, op_name),
    }


def _one_of(a, b, names, op_name):
    if (a is None) == (b is None):
        raise ValueError(f"{op_name}: pass exactly one of {names[0]} and {names[1]}")
    return a if a is not None else b


def conv3d(
    input,  # noqa: A002 - TF's argument name
    filter=None,  # noqa: A002 - TF's argument name
    strides=None,
    padding=None,
    data_format="NDHWC",
    dilations=(1, 1, 1, 1, 1),
    name=None,
    filters=None,
):
    """`tf.nn.conv3d`: a 3-D convolution (cross-correlation, as TF) of a 5-D input by a filter.

    Args:
        input: ``[batch, depth, height, width, in_channels]`` (NDHWC) or NCDHW, floating point.
        filter: ``[filter_depth, filter_height, filter_width, in_channels, out_channels]``
            (`filters` in TF2).
        strides, dilations: lists of 5 ints (batch and channel entries 1).
        padding: ``"SAME"`` or ``"VALID"``.

    Raises:
        ValueError: bad strides, dilations, padding or format, or shapes that do not fit.
    """
    attrs = _attrs("tf.nn.conv3d", strides, padding, data_format, dilations)
    x, w = convert_n([input, _one_of(filter, filters, ("filter", "filters"), "tf.nn.conv3d")])
    return registry.make_op("Conv3D", [x, w], attrs, name=name).outputs[0]


def conv3d_backprop_filter_v2(
    input,  # noqa: A002 - TF's argument name
    filter_sizes,
    out_backprop,
    strides,
    padding,
    data_format="NDHWC",
    dilations=(1, 1, 1, 1, 1),
    name=None,
):
    """`tf.nn.conv3d_backprop_filter_v2` (and TF1's `conv3d_backprop_filter`, the same op): the
    gradient of `conv3d` wrt its filter, of shape `filter_sizes`."""
    attrs = _attrs("tf.nn.conv3d_backprop_filter_v2", strides, padding, data_format, dilations)
    x, dy = convert_n([input, out_backprop])
    sizes = int_tensor(filter_sizes, "filter_sizes")
    return registry.make_op("Conv3DBackpropFilterV2", [x, sizes, dy], attrs, name=name).outputs[0]


conv3d_backprop_filter = conv3d_backprop_filter_v2


def conv3d_transpose(
    value,
    filter=None,  # noqa: A002 - TF's argument name
    output_shape=None,
    strides=None,
    padding="SAME",
    data_format="NDHWC",
    name=None,
    input=None,  # noqa: A002 - TF's argument name
    filters=None,
    dilations=None,
):
    """`tf.nn.conv3d_transpose`: the transpose (gradient) of `conv3d`, a `Conv3DBackpropInputV2`.

    Args:
        value: ``[batch, depth, height, width, in_channels]`` (NDHWC).
        filter: ``[depth, height, width, output_channels, in_channels]``.
        output_shape: the 1-D shape of the output (a list or an int tensor).

    Raises:
        ValueError: the filter's last dimension is not `value`'s channels, or `output_shape`'s
            channels are not the filter's fourth dimension.
    """
    op_name = "tf.nn.conv3d_transpose"
    attrs = _attrs(op_name, strides, padding, data_format, dilations)
    value = value if value is not None else input
    x, w = convert_n([value, _one_of(filter, filters, ("filter", "filters"), op_name)])
    sizes = int_tensor(output_shape, "output_shape")
    channel = 4 if attrs["data_format"] == "NDHWC" else 1
    in_c = x.shape[channel] if x.shape.ndims == 5 else None
    if w.shape.ndims == 5 and None not in (in_c, w.shape[4]) and in_c != w.shape[4]:
        raise ValueError(
            f"{op_name}: input channels {in_c} differ from the filter's last dimension {w.shape[4]}"
        )
    out = get_static_value(sizes)
    if out is not None and w.shape.ndims == 5 and w.shape[3] not in (None, int(np.ravel(out)[channel])):
        raise ValueError(
            f"{op_name}: output_shape {np.ravel(out).tolist()} has {np.ravel(out)[channel]} channels "
            f"but the filter's fourth dimension is {w.shape[3]}"
        )
    return registry.make_op(
        "Conv3DBackpropInputV2", [sizes, w, x], attrs, name=name or "conv3d_transpose"
    ).outputs[0]
