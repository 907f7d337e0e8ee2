"""Patches: `extract_volume_patches` (``ExtractVolumePatches``), TF 1.x's top-level
`extract_image_patches` (``sizes`` as the newer name of ``ksizes``) and `tf.image.extract_patches`
over nbdist's ``ExtractImagePatches`` (nbdist/ops/image_analysis_ops.py), and both ops'
gradient as TF computes it: the patches of an image of flat indices say where each patch
element came from, and the gradient is summed back there (``UnsortedSegmentSum``).
"""

import numpy as np

from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import math_ops, registry
from nbdist.ops._shapes import invalid_argument
from nbdist.ops.concat_slice_ops import concat
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.image_analysis_ops import extract_image_patches as _image_patches
from nbdist.ops.reduction_ops import reduce_prod, unsorted_segment_sum
from nbdist.ops.reshape_ops import reshape, transpose
from nbdist.ops.shape_ops import shape

__all__ = ["extract_image_patches", "extract_volume_patches"]


def _window_geometry(in_size, k, stride, rate, padding):
    """``(output size, padding before)`` of one spatial dimension (TF's windowed output size)."""
    span = k + (k - 1) * (rate - 1)
    if padding == "VALID":
        return max(-(-(in_size - span + 1) // stride), 0), 0
    out = -(-in_size // stride)
    return out, max((out - 1) * stride + span - in_size, 0) // 2


def _patches(x, ksizes, strides, rates, padding):
    """The patches of ``x`` (``[batch, spatial..., depth]``): ``[batch, out..., prod(k) * depth]``."""
    n = x.ndim - 2
    geometry = [_window_geometry(x.shape[1 + i], ksizes[i], strides[i], rates[i], padding) for i in range(n)]
    room = [x.shape[1 + i] + 2 * geometry[i][1] + ksizes[i] * rates[i] for i in range(n)]
    padded = np.zeros([x.shape[0], *room, x.shape[-1]], x.dtype)
    padded[(slice(None), *(slice(g[1], g[1] + x.shape[1 + i]) for i, g in enumerate(geometry)))] = x
    index = []
    for i, (out, _) in enumerate(geometry):
        positions = (np.arange(out) * strides[i])[:, None] + np.arange(ksizes[i]) * rates[i]  # [out, k]
        dims = [1] * (2 * n)
        dims[i], dims[n + i] = out, ksizes[i]
        index.append(positions.reshape(dims))
    windows = padded[(slice(None), *index)]  # [batch, out..., k..., depth]
    return windows.reshape(x.shape[0], *(g[0] for g in geometry), -1)


def _patches_grad(op, grad, extract):
    """TF's gradient of a patches op: `extract` (the op on an index image) maps each patch
    element to its input position (0 for padding), where the gradient is summed."""
    x = op.inputs[0]
    dims = shape(x)
    spatial = dims[1:-1]
    count = reduce_prod(spatial)
    flat = math_ops.range(1, count + 1, 1)
    index_image = reshape(flat, concat([[1], spatial, [1]], 0))
    sources = reshape(extract(index_image), [-1]) - 1  # (padding: -1, dropped)
    batch, depth = dims[:1], dims[-1:]
    pieces = transpose(reshape(grad, concat([batch, [-1], depth], 0)), [1, 0, 2])
    summed = unsorted_segment_sum(pieces, sources, count)
    rank = x.shape.ndims
    dx = reshape(summed, concat([spatial, batch, depth], 0))
    dx = transpose(dx, [rank - 2, *range(rank - 2), rank - 1])
    dx.set_shape(x.shape)
    return [dx]


def _attrs(op, *names):
    return [op.get_attr(n) for n in names]


@registry.gradient("ExtractImagePatches")
def _extract_image_patches_grad(op, grad):
    ksizes, strides, rates, padding = _attrs(op, "ksizes", "strides", "rates", "padding")
    return _patches_grad(op, grad, lambda image: _image_patches(image, ksizes, strides, rates, padding))


# -- ExtractVolumePatches ----------------------------------------------------------------------------------
@registry.shape("ExtractVolumePatches")
def _extract_volume_patches_shape(inputs, attrs):
    x = inputs[0]
    if x.shape.ndims is None:
        return [(x.dtype, TensorShape([None] * 5))]
    if x.shape.ndims != 5:
        raise ValueError(f"tf.extract_volume_patches: input must be 5-D, got {x.name} of shape {x.shape}")
    b, *spatial, d = x.shape.as_list()
    ks, ss = attrs["ksizes"][1:4], attrs["strides"][1:4]
    out = [None] * 3  # (TF's: unknown unless every spatial size is known)
    if None not in spatial:
        out = [_window_geometry(s, k, st, 1, attrs["padding"])[0] for s, k, st in zip(spatial, ks, ss)]
    return [(x.dtype, TensorShape([b, *out, None if d is None else int(np.prod(ks)) * d]))]


@registry.kernel("ExtractVolumePatches")
def _extract_volume_patches_kernel(ctx, node, x):
    x = np.asarray(x)
    if x.ndim != 5:
        raise invalid_argument(node, f"ExtractVolumePatches: input must be 5-D, got shape {list(x.shape)}")
    a = node.attr
    return _patches(x, a["ksizes"][1:4], a["strides"][1:4], [1, 1, 1], a["padding"])


@registry.gradient("ExtractVolumePatches")
def _extract_volume_patches_grad(op, grad):
    ksizes, strides, padding = _attrs(op, "ksizes", "strides", "padding")
    return _patches_grad(op, grad, lambda volume: extract_volume_patches(volume, ksizes, strides, padding))


def _window_attr(value, key, rank):
    value = [int(v) for v in value]
    if len(value) != rank or value[0] != 1 or value[-1] != 1:
        raise ValueError(f"{key} must be a list of {rank} ints [1, ..., 1], got {value}")
    if any(v < 1 for v in value):
        raise ValueError(f"{key} must be positive, got {value}")
    return value


def extract_volume_patches(input, ksizes, strides, padding, name=None):  # noqa: A002 - TF's argument name
    """`tf.extract_volume_patches`: each ``ksizes[1] x ksizes[2] x ksizes[3]`` patch of a 5-D
    input (``[batch, planes, rows, cols, depth]``), every `strides`, flattened into the depth
    dimension.

    Raises:
        ValueError: ksizes / strides not ``[1, p, r, c, 1]``, or padding not SAME / VALID.
    """
    x = convert_to_tensor(input, name="input")
    padding = padding.upper() if isinstance(padding, str) else padding
    if padding not in ("SAME", "VALID"):
        raise ValueError(f"padding must be 'SAME' or 'VALID', got {padding!r}")
    attrs = {
        "ksizes": _window_attr(ksizes, "ksizes", 5),
        "strides": _window_attr(strides, "strides", 5),
        "padding": padding,
    }
    op = registry.make_op("ExtractVolumePatches", [x], attrs, name=name or "ExtractVolumePatches")
    return op.outputs[0]


def extract_image_patches(images, ksizes=None, strides=None, rates=None, padding=None, name=None, sizes=None):
    """`tf.extract_image_patches` (`tf.image.extract_image_patches`): each ``ksizes[1] x
    ksizes[2]`` patch (dilated by `rates`, every `strides`) flattened into the depth dimension
    (``sizes``: the newer name of ``ksizes``).

    Raises:
        ValueError: both ``ksizes`` and ``sizes``, or bad window attributes.
    """
    if ksizes is not None and sizes is not None and list(ksizes) != list(sizes):
        raise ValueError("Cannot specify both 'sizes' and 'ksizes'.")
    ksizes = ksizes if ksizes is not None else sizes
    if ksizes is None or strides is None or rates is None or padding is None:
        raise TypeError("extract_image_patches needs ksizes (or sizes), strides, rates and padding")
    return _image_patches(images, ksizes, strides, rates, padding, name=name)


def extract_patches(images, sizes, strides, rates, padding, name=None):
    """`tf.image.extract_patches`: `extract_image_patches` with TF 2's argument names."""
    return _image_patches(images, sizes, strides, rates, padding, name=name)
