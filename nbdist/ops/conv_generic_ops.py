"""TF's generated convolution ops at `tf.*`: `tf.conv` (op `Conv`: 2-D or 3-D by the input's
rank, extra batch dimensions, CHANNELS_LAST / CHANNELS_FIRST, groups) and
`tf.conv2d_backprop_filter_v2` / `tf.conv2d_backprop_input_v2` (ops `Conv2DBackpropFilterV2` /
`Conv2DBackpropInputV2`: the backprop ops given the filter or the input itself instead of its
shape; TF's CPU build has no kernel for them, nbdist runs them). Their kernels are the `Conv2D`
/ `Conv3D` family's (conv_ops, conv3d_ops). As in TF, none of the three has a gradient:
`tf.gradients` through them raises `LookupError`.
"""

from types import SimpleNamespace

import numpy as np

from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import conv3d_ops, conv_ops, registry  # noqa: F401 - (the kernels these ops run)
from nbdist.ops._windows import check_padding, output_size
from nbdist.ops.constant_op import convert_n

__all__ = ["conv", "conv2d_backprop_filter_v2", "conv2d_backprop_input_v2"]

_FORMATS = {("CHANNELS_LAST", 4): "NHWC", ("CHANNELS_FIRST", 4): "NCHW"}
_FORMATS |= {("CHANNELS_LAST", 5): "NDHWC", ("CHANNELS_FIRST", 5): "NCDHW"}


def _no_explicit(padding, explicit_paddings, op_name):
    if padding == "EXPLICIT" or list(explicit_paddings or []):
        raise ValueError(
            f"{op_name}: explicit paddings are not supported by nbdist; pad with tf.pad, then 'VALID'"
        )


# -- Conv2DBackpropFilterV2 / Conv2DBackpropInputV2 -----------------------------------------------------
registry.shape("Conv2DBackpropFilterV2")(lambda inputs, attrs: [(inputs[0].dtype, inputs[1].shape)])
registry.shape("Conv2DBackpropInputV2")(lambda inputs, attrs: [(inputs[1].dtype, inputs[0].shape)])


@registry.kernel("Conv2DBackpropFilterV2")
def _filter_v2_kernel(ctx, node, x, w, dy):
    return registry.lookup("Conv2DBackpropFilter").kernel(ctx, node, x, np.asarray(w.shape, np.int32), dy)


@registry.kernel("Conv2DBackpropInputV2")
def _input_v2_kernel(ctx, node, x, w, dy):
    return registry.lookup("Conv2DBackpropInput").kernel(ctx, node, np.asarray(x.shape, np.int32), w, dy)


def _backprop_v2(
    op_type, tf_name, tensors, strides, padding, explicit_paddings, data_format, dilations, name
):
    _no_explicit(padding, explicit_paddings, tf_name)
    if len(list(strides)) != 4 or len(list(dilations)) != 4:
        raise ValueError(
            f"{tf_name}: strides and dilations must be lists of 4 ints, got {strides!r}, {dilations!r}"
        )
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError(f"{tf_name}: data_format must be 'NHWC' or 'NCHW', got {data_format!r}")
    attrs = {
        "strides": [int(s) for s in strides],
        "padding": check_padding(padding, tf_name),
        "data_format": data_format,
        "dilations": [int(d) for d in dilations],
    }
    return registry.make_op(op_type, convert_n(tensors), attrs, name=name).outputs[0]


def conv2d_backprop_filter_v2(
    input,  # noqa: A002 - TF's argument name
    filter,  # noqa: A002 - TF's argument name
    out_backprop,
    strides,
    padding,
    use_cudnn_on_gpu=True,
    explicit_paddings=(),
    data_format="NHWC",
    dilations=(1, 1, 1, 1),
    name=None,
):
    """`tf.conv2d_backprop_filter_v2`: `tf.nn.conv2d_backprop_filter` given the filter (its
    shape is used) instead of its sizes; strides and dilations are lists of 4 ints."""
    return _backprop_v2(
        "Conv2DBackpropFilterV2",
        "tf.conv2d_backprop_filter_v2",
        [input, filter, out_backprop],
        strides,
        padding,
        explicit_paddings,
        data_format,
        dilations,
        name,
    )


def conv2d_backprop_input_v2(
    input,  # noqa: A002 - TF's argument name
    filter,  # noqa: A002 - TF's argument name
    out_backprop,
    strides,
    padding,
    use_cudnn_on_gpu=True,
    explicit_paddings=(),
    data_format="NHWC",
    dilations=(1, 1, 1, 1),
    name=None,
):
    """`tf.conv2d_backprop_input_v2`: `tf.nn.conv2d_backprop_input` given the input (its shape
    is used) instead of its sizes; strides and dilations are lists of 4 ints."""
    return _backprop_v2(
        "Conv2DBackpropInputV2",
        "tf.conv2d_backprop_input_v2",
        [input, filter, out_backprop],
        strides,
        padding,
        explicit_paddings,
        data_format,
        dilations,
        name,
    )


# -- Conv ---------------------------------------------------------------------------------------------------
def _inner_attrs(attrs, rank):
    """The Conv2D / Conv3D attrs of a `Conv` node: the data_format as NHWC-style letters."""
    return {**attrs, "data_format": _FORMATS[(attrs["data_format"], rank)]}


@registry.shape("Conv")
def _conv_shape(inputs, attrs):
    x, w = inputs
    if x.dtype != w.dtype:
        raise TypeError(f"Conv: input is {x.dtype.name} but filter is {w.dtype.name}")
    if x.shape.ndims is None:
        return [(x.dtype, TensorShape(None))]
    dims, batch_dims = x.shape.as_list(), attrs["batch_dims"]
    rank = len(dims) - batch_dims + 1
    inner = dims[batch_dims - 1 :]
    first = attrs["data_format"] == "CHANNELS_FIRST"
    spatial, channels = (inner[2:], inner[1]) if first else (inner[1:-1], inner[-1])
    fdims = w.shape.as_list() if w.shape.ndims is not None else [None] * rank
    if None not in (channels, fdims[-2]) and channels != fdims[-2] * attrs["groups"]:
        raise ValueError(
            f"Conv: input depth {channels} of {x.name} is not {attrs['groups']} group(s) of the filter's "
            f"input depth {fdims[-2]} ({w.name} {w.shape})"
        )
    steps = attrs["strides"][2:] if first else attrs["strides"][1:-1]
    rates = attrs["dilations"][2:] if first else attrs["dilations"][1:-1]
    try:
        out = [
            output_size(size, k or 1, s, d, attrs["padding"])[0] if k is not None else None
            for size, k, s, d in zip(spatial, fdims[:-2], steps, rates, strict=True)
        ]
    except ValueError as e:
        raise ValueError(f"Conv of {x.name} {x.shape} by {w.name} {w.shape}: {e}") from None
    rest = [fdims[-1], *out] if first else [*out, fdims[-1]]
    return [(x.dtype, TensorShape([*dims[: batch_dims - 1], inner[0], *rest]))]


@registry.kernel("Conv")
def _conv_kernel(ctx, node, x, w):
    batch_dims, groups = node.attr["batch_dims"], node.attr["groups"]
    rank = x.ndim - batch_dims + 1
    inner = SimpleNamespace(attr=_inner_attrs(node.attr, rank), op=node.op, name=node.name)
    kernel = registry.lookup("Conv2D" if rank == 4 else "Conv3D").kernel
    flat = x.reshape(-1, *x.shape[batch_dims:])
    channel = 1 if node.attr["data_format"] == "CHANNELS_FIRST" else rank - 1
    parts = zip(np.split(flat, groups, axis=channel), np.split(w, groups, axis=-1), strict=True)
    y = np.concatenate([kernel(ctx, inner, a, b) for a, b in parts], axis=channel)
    return y.reshape(*x.shape[:batch_dims], *y.shape[1:])


def conv(
    input,  # noqa: A002 - TF's argument name
    filter,  # noqa: A002 - TF's argument name
    strides,
    padding,
    explicit_paddings=(),
    data_format="CHANNELS_LAST",
    dilations=(),
    batch_dims=1,
    groups=1,
    name=None,
):
    """`tf.conv`: TF's generic convolution, 2-D for an input of rank 4 and 3-D for rank 5 after
    `batch_dims` leading batch dimensions are taken as one.

    Args:
        strides, dilations: one entry per dimension of the one-batch input (batch and channel 1);
            dilations ``[]`` means ones.
        data_format: ``"CHANNELS_LAST"`` or ``"CHANNELS_FIRST"``.
        groups: input channels split into `groups`, each convolved by its share of the filter's
            output channels (the filter's input depth is channels / groups).

    Raises:
        ValueError: another rank, strides of another length, explicit paddings.
    """
    op_name = "tf.conv"
    _no_explicit(padding, explicit_paddings, op_name)
    x, w = convert_n([input, filter])
    if x.shape.ndims is None:
        raise ValueError(f"{op_name}: the input's rank must be known, got {x.shape}")
    rank = x.shape.ndims - batch_dims + 1
    if (data_format, rank) not in _FORMATS:
        raise ValueError(
            f"Input tensor must be rank 4 or 5, excluding extra batch dimensions, but got: {rank} "
            f"(data_format {data_format!r}: CHANNELS_LAST or CHANNELS_FIRST)"
        )
    if len(strides) != rank:
        raise ValueError(f"Stride attribute should contain {rank} values, but got: {len(strides)}")
    if not x.dtype.is_floating:
        raise TypeError(f"{op_name}: expected a floating point input, got {x.dtype.name}")
    attrs = {
        "strides": [int(s) for s in strides],
        "padding": check_padding(padding, op_name),
        "data_format": data_format,
        "dilations": [int(d) for d in dilations] or [1] * rank,
        "batch_dims": int(batch_dims),
        "groups": int(groups),
    }
    return registry.make_op("Conv", [x, w], attrs, name=name).outputs[0]
