"""`tf.image`'s resizing: `ResizeBilinear` and `ResizeNearestNeighbor` with TF 1.x's sampling
rules (`align_corners`, `half_pixel_centers`) and gradients, `resize_images` over them.

TF maps output pixel ``i`` to input coordinate ``i * scale`` (legacy) or ``(i + 0.5) * scale``
(``- 0.5`` for bilinear) with half-pixel centres, where ``scale = in / out``, or
``(in - 1) / (out - 1)`` with `align_corners`; coordinates are float32, as in TF's kernels,
so that nearest-neighbour rounding picks the same pixels.
"""

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import get_default_graph
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops._shapes import invalid_argument
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.image_ops import image_rank
from nbdist.ops.reshape_ops import expand_dims, squeeze
from nbdist.ops.shape_ops import get_static_value, shape

__all__ = ["ResizeMethod", "register_resizer", "resize_bilinear", "resize_images", "resize_nearest_neighbor"]


class ResizeMethod:
    """`tf.image.ResizeMethod`: TF 1.x's method codes for `resize_images`."""

    BILINEAR = 0
    NEAREST_NEIGHBOR = 1
    BICUBIC = 2
    AREA = 3


def _scale(in_size, out_size, align_corners):
    if align_corners and out_size > 1:
        return np.float32((in_size - 1) / np.float32(out_size - 1))
    return np.float32(in_size / np.float32(out_size))


def _bilinear_weights(in_size, out_size, align_corners, half_pixel):
    """Per output index: lower and upper input index and the upper one's weight (TF's
    ``compute_interpolation_weights``)."""
    scale = _scale(in_size, out_size, align_corners)
    i = np.arange(out_size, dtype=np.float32)
    x = (i + np.float32(0.5)) * scale - np.float32(0.5) if half_pixel else i * scale
    floor = np.floor(x)
    lower = np.maximum(floor, 0).astype(np.int64)
    upper = np.minimum(np.ceil(x), in_size - 1).astype(np.int64)
    return lower, upper, (x - floor).astype(np.float32)


def _nearest_index(in_size, out_size, align_corners, half_pixel):
    scale = _scale(in_size, out_size, align_corners)
    i = np.arange(out_size, dtype=np.float32)
    x = (i + np.float32(0.5)) * scale if half_pixel else i * scale
    index = np.floor(x + np.float32(0.5)) if align_corners else np.floor(x)  # (x >= 0: roundf)
    index = np.minimum(index.astype(np.int64), in_size - 1)
    return np.maximum(index, 0) if half_pixel else index


def _resize_shape(dtype):
    def shape_fn(inputs, attrs):
        images = inputs[0].shape
        size = get_static_value(inputs[1])
        hw = [None, None] if size is None else [int(s) for s in size]
        batch = None if images.ndims is None else images.dims[0]
        depth = None if images.ndims is None else images.dims[3]
        return [(dtype or inputs[0].dtype, TensorShape([batch, *hw, depth]))]

    return shape_fn


def _check(node, images, size):
    if images.ndim != 4:
        raise invalid_argument(
            node, f"{node.op}: input must be 4-dimensional, got shape {list(images.shape)}"
        )
    out_h, out_w = (int(s) for s in np.asarray(size).reshape(-1))
    if out_h <= 0 or out_w <= 0:
        raise invalid_argument(node, f"{node.op}: output dimensions must be positive, got {[out_h, out_w]}")
    return out_h, out_w


def _flags(node):
    return bool(node.attr.get("align_corners", False)), bool(node.attr.get("half_pixel_centers", False))


# -- ResizeBilinear ---------------------------------------------------------------------------------
registry.shape("ResizeBilinear")(_resize_shape(_dtypes.float32))


@registry.kernel("ResizeBilinear")
def _resize_bilinear_kernel(ctx, node, images, size):
    out_h, out_w = _check(node, images, size)
    flags = _flags(node)
    top, bottom, dy = _bilinear_weights(images.shape[1], out_h, *flags)
    left, right, dx = _bilinear_weights(images.shape[2], out_w, *flags)
    x = images.astype(np.float32)
    dx = dx[None, None, :, None]
    top_rows, bottom_rows = x[:, top], x[:, bottom]
    t = top_rows[:, :, left] + (top_rows[:, :, right] - top_rows[:, :, left]) * dx
    b = bottom_rows[:, :, left] + (bottom_rows[:, :, right] - bottom_rows[:, :, left]) * dx
    return (t + (b - t) * dy[None, :, None, None]).astype(np.float32)


registry.shape("ResizeBilinearGrad")(lambda inputs, attrs: [(inputs[1].dtype, inputs[1].shape)])


@registry.kernel("ResizeBilinearGrad")
def _resize_bilinear_grad_kernel(ctx, node, grads, original):
    flags = _flags(node)
    in_h, in_w = original.shape[1:3]
    top, bottom, dy = _bilinear_weights(in_h, grads.shape[1], *flags)
    left, right, dx = _bilinear_weights(in_w, grads.shape[2], *flags)
    g = grads.astype(np.float64)
    rows = np.zeros((g.shape[0], in_h, g.shape[2], g.shape[3]))
    np.add.at(rows, (slice(None), top), g * (1 - dy)[None, :, None, None])
    np.add.at(rows, (slice(None), bottom), g * dy[None, :, None, None])
    out = np.zeros((g.shape[0], in_h, in_w, g.shape[3]))
    np.add.at(out, (slice(None), slice(None), left), rows * (1 - dx)[None, None, :, None])
    np.add.at(out, (slice(None), slice(None), right), rows * dx[None, None, :, None])
    return out.astype(original.dtype)


@registry.gradient("ResizeBilinear")
def _resize_bilinear_grad(op, grad):
    attrs = {k: op.get_attr(k) for k in ("align_corners", "half_pixel_centers")}
    images = op.inputs[0]
    if not images.dtype.is_floating:
        return [None, None]
    dx = registry.make_op("ResizeBilinearGrad", [grad, images], attrs, name="ResizeBilinearGrad").outputs[0]
    return [dx, None]


def resize_bilinear(images, size, align_corners=False, name=None, half_pixel_centers=False):
    """`tf.image.resize_bilinear`: bilinear interpolation of 4-D `images` to `size`
    (``[new_height, new_width]``), as float32."""
    return _resize_op("ResizeBilinear", images, size, align_corners, half_pixel_centers, name)


def _resize_op(op_type, images, size, align_corners, half_pixel_centers, name):
    images = convert_to_tensor(images, name="images")
    if align_corners and half_pixel_centers:
        raise ValueError("If half_pixel_centers is True, align_corners must be False.")
    size = convert_to_tensor(size, dtype=_dtypes.int32, name="size")
    attrs = {"align_corners": bool(align_corners), "half_pixel_centers": bool(half_pixel_centers)}
    return registry.make_op(op_type, [images, size], attrs, name=name or op_type).outputs[0]


# -- ResizeNearestNeighbor --------------------------------------------------------------------------
registry.shape("ResizeNearestNeighbor")(_resize_shape(None))


@registry.kernel("ResizeNearestNeighbor")
def _resize_nearest_kernel(ctx, node, images, size):
    out_h, out_w = _check(node, images, size)
    rows = _nearest_index(images.shape[1], out_h, *_flags(node))
    cols = _nearest_index(images.shape[2], out_w, *_flags(node))
    return images[:, rows][:, :, cols]


registry.shape("ResizeNearestNeighborGrad")(_resize_shape(None))


@registry.kernel("ResizeNearestNeighborGrad")
def _resize_nearest_grad_kernel(ctx, node, grads, size):
    in_h, in_w = (int(s) for s in np.asarray(size).reshape(-1))
    rows = _nearest_index(in_h, grads.shape[1], *_flags(node))
    cols = _nearest_index(in_w, grads.shape[2], *_flags(node))
    out = np.zeros((grads.shape[0], in_h, in_w, grads.shape[3]), grads.dtype)
    np.add.at(out, (slice(None), rows[:, None], cols[None, :]), grads)
    return out


@registry.gradient("ResizeNearestNeighbor")
def _resize_nearest_grad(op, grad):
    attrs = {k: op.get_attr(k) for k in ("align_corners", "half_pixel_centers")}
    images = op.inputs[0]
    if not images.dtype.is_floating:
        return [None, None]
    hw = images.shape.dims[1:3]
    size = hw if None not in hw else shape(images)[1:3]
    size = convert_to_tensor(size, dtype=_dtypes.int32)
    op_type = "ResizeNearestNeighborGrad"
    return [registry.make_op(op_type, [grad, size], attrs, name=op_type).outputs[0], None]


def resize_nearest_neighbor(images, size, align_corners=False, name=None, half_pixel_centers=False):
    """`tf.image.resize_nearest_neighbor`: nearest-neighbour resizing of 4-D `images` to `size`,
    keeping their dtype."""
    return _resize_op("ResizeNearestNeighbor", images, size, align_corners, half_pixel_centers, name)


# -- resize_images -------------------------------------------------------------------------------
_RESIZERS = {ResizeMethod.BILINEAR: resize_bilinear, ResizeMethod.NEAREST_NEIGHBOR: resize_nearest_neighbor}
_METHOD_NAMES = {"bilinear": ResizeMethod.BILINEAR, "nearest": ResizeMethod.NEAREST_NEIGHBOR}


def register_resizer(method, method_name, resize_fn):
    """Makes `resize_images` resize by `resize_fn(images, size, align_corners=...)` for
    `method` (a `ResizeMethod` code) and its string name (how image_resize_more_ops adds
    bicubic and area without an import cycle)."""
    _RESIZERS[method] = resize_fn
    _METHOD_NAMES[method_name] = method


def resize_images(
    images, size, method=ResizeMethod.BILINEAR, align_corners=False, preserve_aspect_ratio=False, name=None
):
    """`tf.image.resize_images` (`tf.image.resize` in TF 1.x): 3-D or 4-D `images` resized to
    `size` by `method` (`ResizeMethod.BILINEAR`, `BICUBIC` or `AREA`, float32 out, or
    `NEAREST_NEIGHBOR`, `images`' dtype); `images` itself when its size is already `size`.

    Raises:
        ValueError: an unknown method, a bad `size`, or an image that is not 3-D or 4-D.
    """
    images = convert_to_tensor(images, name="images")
    ndims = image_rank(images, "resize_images")
    method = _METHOD_NAMES.get(method, method)
    if method not in _RESIZERS:
        raise ValueError(f"Resize method is not implemented: {method!r} (one of {sorted(_METHOD_NAMES)})")
    with get_default_graph().name_scope(name or "resize_images"):
        batch = images if ndims == 4 else expand_dims(images, 0)
        static = get_static_value(convert_to_tensor(size, dtype=_dtypes.int32))
        if static is None or np.shape(static) != (2,):
            raise ValueError(
                f"'size' must be a 1-D int32 Tensor of 2 elements known statically, got {size!r}"
            )
        new_h, new_w = (int(s) for s in static)
        h, w = batch.shape.dims[1:3]
        if preserve_aspect_ratio and h is not None and w is not None:
            factor = min(np.float32(new_h) / np.float32(h), np.float32(new_w) / np.float32(w))
            new_h, new_w = int(np.round(factor * np.float32(h))), int(np.round(factor * np.float32(w)))
        if [h, w] == [new_h, new_w]:
            return images
        out = _RESIZERS[method](batch, [new_h, new_w], align_corners=align_corners)
        return out if ndims == 4 else squeeze(out, [0])
