"""`tf.image`'s other resizers: `ResizeBicubic` (with `ResizeBicubicGrad`) and `ResizeArea`,
as TF 1.x's CPU kernels compute them, and `resize_image_with_pad` over the resizers.

Bicubic: Keys' cubic kernel with ``a = -0.75`` (legacy) or ``-0.5`` (`half_pixel_centers`,
whose out-of-image taps get weight 0 and the rest renormalised), its weights read from TF's
1025-entry table; rows are interpolated first, then columns, in float32 as TF's kernel.
Area: each output pixel the mean of the input area it covers (partial pixels weighted).
"""

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import get_default_graph
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops._shapes import invalid_argument
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.image_crop_ops import ranked_shape
from nbdist.ops.image_ops import image_rank, pad_to_bounding_box
from nbdist.ops.image_resize_ops import (
    ResizeMethod,
    register_resizer,
    resize_bilinear,
    resize_nearest_neighbor,
)
from nbdist.ops.reshape_ops import expand_dims, squeeze
from nbdist.ops.shape_ops import get_static_value

__all__ = ["resize_area", "resize_bicubic", "resize_image_with_pad"]

_TABLE_SIZE = 1024


def _coeffs_table(a):
    x = np.arange(_TABLE_SIZE + 1, dtype=np.float64) / _TABLE_SIZE
    x = x.astype(np.float32).astype(np.float64)
    near = (((a + 2) * x - (a + 3)) * x * x + 1).astype(np.float32)
    x = x + 1.0
    far = (((a * x - 5 * a) * x + 8 * a) * x - 4 * a).astype(np.float32)
    return near, far


_TABLES = {False: _coeffs_table(-0.75), True: _coeffs_table(-0.5)}


def _scale(in_size, out_size, align_corners):
    if align_corners and out_size > 1:
        return np.float32((in_size - 1) / np.float32(out_size - 1))
    return np.float32(in_size / np.float32(out_size))


def _cubic_weights(in_size, out_size, align_corners, half_pixel):
    """Per output index: the 4 input indices ``[out, 4]`` and their float32 weights."""
    scale = _scale(in_size, out_size, align_corners)
    i = np.arange(out_size, dtype=np.float32)
    loc = (i + np.float32(0.5)) * scale - np.float32(0.5) if half_pixel else i * scale
    base = np.floor(loc)
    delta = (loc - base).astype(np.float32)
    offset = np.rint(delta * np.float32(_TABLE_SIZE)).astype(np.int64)
    near, far = _TABLES[half_pixel]
    weights = np.stack([far[offset], near[offset], near[_TABLE_SIZE - offset], far[_TABLE_SIZE - offset]], 1)
    taps = base.astype(np.int64)[:, None] + np.arange(-1, 3)
    index = np.clip(taps, 0, in_size - 1)
    if half_pixel:
        weights = np.where(index == taps, weights, np.float32(0))
        total = weights[:, 0] + weights[:, 1] + weights[:, 2] + weights[:, 3]
        ok = np.abs(total) >= 1000 * np.finfo(np.float32).tiny
        weights = np.where(ok[:, None], weights * (np.float32(1) / np.where(ok, total, 1))[:, None], weights)
    return index, weights.astype(np.float32)


def _interp(values, weights, axis):
    """``w0 * v0 + w1 * v1 + w2 * v2 + w3 * v3`` in float32, summed left to right as TF's."""
    shape = [1] * values[0].ndim
    shape[axis] = -1
    out = values[0] * weights[:, 0].reshape(shape)
    for k in (1, 2, 3):
        out = out + values[k] * weights[:, k].reshape(shape)
    return out


def _resize_shape(inputs, attrs):
    images = inputs[0].shape
    size = get_static_value(inputs[1])
    hw = [None, None] if size is None else [int(s) for s in np.ravel(size)]
    batch, depth = (None, None) if images.ndims is None else (images.dims[0], images.dims[3])
    return [(_dtypes.float32, TensorShape([batch, *hw, depth]))]


def _check(node, images, size):
    if images.ndim != 4:
        raise invalid_argument(
            node, f"{node.op}: input must be 4-dimensional, got shape {list(images.shape)}"
        )
    size = np.ravel(size)
    if size.shape != (2,):
        raise invalid_argument(node, f"{node.op}: shape_t must have two elements, got {size.tolist()}")
    out_h, out_w = (int(s) for s in size)
    if out_h <= 0 or out_w <= 0:
        raise invalid_argument(node, f"{node.op}: output dimensions must be positive, got {[out_h, out_w]}")
    if images.shape[1] == 0 or images.shape[2] == 0:
        raise invalid_argument(
            node, f"{node.op}: input image must be of non-zero size, got {list(images.shape)}"
        )
    return out_h, out_w


def _flags(node):
    return bool(node.attr.get("align_corners", False)), bool(node.attr.get("half_pixel_centers", False))


# -- ResizeBicubic ----------------------------------------------------------------------------------
registry.shape("ResizeBicubic")(ranked_shape("ResizeBicubic", [("images", 4), ("size", 1)], _resize_shape))


@registry.kernel("ResizeBicubic")
def _resize_bicubic_kernel(ctx, node, images, size):
    out_h, out_w = _check(node, images, size)
    ys, wy = _cubic_weights(images.shape[1], out_h, *_flags(node))
    xs, wx = _cubic_weights(images.shape[2], out_w, *_flags(node))
    x = images.astype(np.float32)
    columns = []
    for j in range(4):
        at_col = x[:, :, xs[:, j]]  # [b, in_h, out_w, c]
        columns.append(_interp([at_col[:, ys[:, k]] for k in range(4)], wy, 1))
    return _interp(columns, wx, 2).astype(np.float32)


registry.shape("ResizeBicubicGrad")(lambda inputs, attrs: [(inputs[1].dtype, inputs[1].shape)])


@registry.kernel("ResizeBicubicGrad")
def _resize_bicubic_grad_kernel(ctx, node, grads, original):
    in_h, in_w = original.shape[1:3]
    ys, wy = _cubic_weights(in_h, grads.shape[1], *_flags(node))
    xs, wx = _cubic_weights(in_w, grads.shape[2], *_flags(node))
    g = grads.astype(np.float64)
    rows = np.zeros((g.shape[0], in_h, g.shape[2], g.shape[3]))
    for k in range(4):
        np.add.at(rows, (slice(None), ys[:, k]), g * wy[:, k][None, :, None, None])
    out = np.zeros((g.shape[0], in_h, in_w, g.shape[3]))
    for k in range(4):
        np.add.at(out, (slice(None), slice(None), xs[:, k]), rows * wx[:, k][None, None, :, None])
    return out.astype(original.dtype)


@registry.gradient("ResizeBicubic")
def _resize_bicubic_grad(op, grad):
    images = op.inputs[0]
    if images.dtype not in (_dtypes.float32, _dtypes.float64):
        return [None, None]
    attrs = {k: op.get_attr(k) for k in ("align_corners", "half_pixel_centers")}
    dx = registry.make_op("ResizeBicubicGrad", [grad, images], attrs, name="ResizeBicubicGrad").outputs[0]
    return [dx, None]


def _resize_op(op_type, images, size, attrs, name):
    images = convert_to_tensor(images, name="images")
    size = convert_to_tensor(size, dtype=_dtypes.int32, name="size")
    return registry.make_op(op_type, [images, size], attrs, name=name or op_type).outputs[0]


def resize_bicubic(images, size, align_corners=False, name=None, half_pixel_centers=False):
    """`tf.image.resize_bicubic`: bicubic interpolation of 4-D `images` to `size`
    (``[new_height, new_width]``), as float32.

    Raises:
        ValueError: both `align_corners` and `half_pixel_centers`.
    """
    if align_corners and half_pixel_centers:
        raise ValueError("If half_pixel_centers is True, align_corners must be False.")
    attrs = {"align_corners": bool(align_corners), "half_pixel_centers": bool(half_pixel_centers)}
    return _resize_op("ResizeBicubic", images, size, attrs, name)


# -- ResizeArea -------------------------------------------------------------------------------------
registry.shape("ResizeArea")(ranked_shape("ResizeArea", [("images", 4), ("size", 1)], _resize_shape))
registry.no_gradient("ResizeArea")


def _area_spans(in_size, out_size, scale):
    """Per output index: the input indices it covers and each one's covered length (float32)."""
    spans = []
    for o in range(out_size):
        lo, hi = np.float32(o) * scale, np.float32(o + 1) * scale
        start, end = int(np.floor(lo)), int(np.ceil(hi))
        idx, w = [], []
        for i in range(start, end):
            if i < lo:
                w.append(scale if np.float32(i + 1) > hi else np.float32(i + 1) - lo)
            else:
                w.append(hi - np.float32(i) if np.float32(i + 1) > hi else np.float32(1))
            idx.append(min(max(i, 0), in_size - 1))
        spans.append((idx, [np.float32(v) for v in w]))
    return spans


@registry.kernel("ResizeArea")
def _resize_area_kernel(ctx, node, images, size):
    out_h, out_w = _check(node, images, size)
    align = bool(node.attr.get("align_corners", False))
    hs, ws = _scale(images.shape[1], out_h, align), _scale(images.shape[2], out_w, align)
    inv = np.float32(1.0 / (np.float64(hs) * np.float64(ws)))
    x = images.astype(np.float32)
    cols = [(idx, w) for idx, w in _area_spans(images.shape[2], out_w, ws)]
    out = np.empty((x.shape[0], out_h, out_w, x.shape[3]), np.float32)
    for oy, (yidx, yw) in enumerate(_area_spans(images.shape[1], out_h, hs)):
        for ox, (xidx, xw) in enumerate(cols):
            total = np.zeros((x.shape[0], x.shape[3]), np.float32)
            for yi, ywt in zip(yidx, yw, strict=True):
                row = np.zeros_like(total)
                for xi, xwt in zip(xidx, xw, strict=True):
                    row = row + x[:, yi, xi] * xwt
                total = total + row * ywt
            out[:, oy, ox] = total * inv
    return out


def resize_area(images, size, align_corners=False, name=None):
    """`tf.image.resize_area`: 4-D `images` resized to `size` by area averaging, as float32
    (no gradient, as TF)."""
    return _resize_op("ResizeArea", images, size, {"align_corners": bool(align_corners)}, name)


register_resizer(ResizeMethod.BICUBIC, "bicubic", resize_bicubic)
register_resizer(ResizeMethod.AREA, "area", resize_area)


# -- resize_image_with_pad --------------------------------------------------------------------------
_BY_METHOD = {
    ResizeMethod.BILINEAR: resize_bilinear,
    ResizeMethod.NEAREST_NEIGHBOR: resize_nearest_neighbor,
    ResizeMethod.BICUBIC: resize_bicubic,
    ResizeMethod.AREA: resize_area,
}


def _static_int(value, what):
    static = get_static_value(convert_to_tensor(value, dtype=_dtypes.int32))
    if static is None:
        raise ValueError(
            f"tf.image.resize_image_with_pad (nbdist): {what} must be known statically, got {value!r}"
        )
    static = int(static)
    if static <= 0:
        raise ValueError(f"{what} must be > 0.")
    return static


def resize_image_with_pad(
    image, target_height, target_width, method=ResizeMethod.BILINEAR, align_corners=False
):
    """`tf.image.resize_image_with_pad`: `image` (3-D or 4-D) scaled by `method` to fit
    ``target_height x target_width`` keeping its aspect ratio, then zero-padded (centred) to it.

    Raises:
        ValueError: an image that is not 3-D or 4-D, unknown static height or width, a target
            that is not positive, or an unknown `method`.
    """
    image = convert_to_tensor(image, name="image")
    ndims = image_rank(image, "resize_image_with_pad")
    if method not in _BY_METHOD:
        raise ValueError(f"Resize method {method!r} is not supported (ResizeMethod.BILINEAR .. AREA)")
    with get_default_graph().name_scope("resize_image_with_pad"):
        batch = image if ndims == 4 else expand_dims(image, 0)
        height, width = batch.shape.dims[1:3]
        if height is None or width is None:
            raise ValueError(
                f"tf.image.resize_image_with_pad (nbdist): height and width of {image.shape} must be static"
            )
        th = _static_int(target_height, "target_height")
        tw = _static_int(target_width, "target_width")
        f32 = np.float32
        ratio = max(f32(width) / f32(tw), f32(height) / f32(th))
        new_h, new_w = f32(height) / ratio, f32(width) / ratio
        pad_h = max(0, int(np.floor((f32(th) - new_h) / f32(2))))
        pad_w = max(0, int(np.floor((f32(tw) - new_w) / f32(2))))
        size = [int(np.floor(new_h)), int(np.floor(new_w))]
        resized = _BY_METHOD[method](
            batch, size, align_corners=align_corners
        )  # (even to its own size, as TF)
        padded = pad_to_bounding_box(resized, pad_h, pad_w, th, tw)
        return padded if ndims == 4 else squeeze(padded, [0])
