"""`tf.image`'s box sampling: `CropAndResize` (bilinear / nearest, with TF's
`CropAndResizeGradImage` and `CropAndResizeGradBoxes`), `DrawBoundingBoxes` (V1 and V2) and
TF 1.x's `ExtractGlimpse`, as TF's CPU kernels compute them.

`CropAndResize` maps crop pixel ``y`` of a box ``[y1, x1, y2, x2]`` (normalised) to image row
``y1 * (h - 1) + y * (y2 - y1) * (h - 1) / (crop_h - 1)`` (the box's centre for a one-pixel
crop), in float32; a sample outside ``[0, h - 1]`` is `extrapolation_value`.
"""

import numpy as np

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops._shapes import invalid_argument
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.random_ops import RandomState
from nbdist.ops.shape_ops import get_static_value, shape

__all__ = ["crop_and_resize", "draw_bounding_boxes", "extract_glimpse", "ranked_shape"]

_F32 = np.float32


def ranked_shape(op_type, ranks, shape_fn):
    """`shape_fn` after TF's static rank checks: ``ranks[i]`` is ``(name, rank)`` of input ``i``
    (or None); a known rank that differs raises TF's ValueError at graph construction."""

    def checked(inputs, attrs):
        for t, spec in zip(inputs, ranks, strict=False):
            if spec is not None and t.shape.ndims is not None and t.shape.ndims != spec[1]:
                raise ValueError(
                    f"Shape must be rank {spec[1]} but is rank {t.shape.ndims} for '{op_type}' input "
                    f"'{spec[0]}' with input shapes: {', '.join(str(i.shape) for i in inputs)}."
                )
        return shape_fn(inputs, attrs)

    return checked


# -- CropAndResize ----------------------------------------------------------------------------------
def _crop_shape(inputs, attrs):
    image, boxes = inputs[0].shape, inputs[1].shape
    size = get_static_value(inputs[3])
    hw = [None, None] if size is None else [int(s) for s in np.ravel(size)]
    n = boxes.dims[0] if boxes.ndims else None
    depth = image.dims[3] if image.ndims == 4 else None
    return [(_dtypes.float32, TensorShape([n, *hw, depth]))]


registry.shape("CropAndResize")(
    ranked_shape("CropAndResize", [("image", 4), ("boxes", 2), ("box_ind", 1), ("crop_size", 1)], _crop_shape)
)


def _check_boxes(node, boxes, box_ind, batch):
    if boxes.ndim != 2 or boxes.shape[1] != 4:
        raise invalid_argument(
            node, f"{node.op}: boxes must be 2-D [num_boxes, 4], got shape {list(boxes.shape)}"
        )
    if box_ind.ndim != 1 or box_ind.shape[0] != boxes.shape[0]:
        raise invalid_argument(
            node,
            f"{node.op}: box_index has incompatible shape {list(box_ind.shape)} for boxes "
            f"{list(boxes.shape)}",
        )
    bad = box_ind[(box_ind < 0) | (box_ind >= batch)]
    if bad.size:
        raise errors.OutOfRangeError(
            node.name,
            None,
            f"box_index has values outside [0, batch_size): {int(bad[0])} with batch_size {batch}",
        )


def _axis_samples(lo, hi, size, crop):
    """One box side's sample coordinates (float32, TF's formula) and which lie in the image."""
    if crop > 1:
        scale = _F32(_F32(hi - lo) * _F32(size - 1)) / _F32(crop - 1)
        coords = _F32(lo * _F32(size - 1)) + np.arange(crop, dtype=_F32) * scale
    else:
        coords = np.full(1, _F32(0.5 * np.float64(_F32(lo + hi)) * (size - 1)), _F32)
    return coords, (coords >= 0) & (coords <= size - 1)


def _round_half_up(x):
    floor = np.floor(x)
    return (floor + (x - floor >= 0.5)).astype(np.int64)


def _bilinear_taps(coords, valid, size):
    lower = np.where(valid, np.floor(coords), 0).astype(np.int64)
    upper = np.where(valid, np.ceil(coords), 0).astype(np.int64)
    return np.clip(lower, 0, size - 1), np.clip(upper, 0, size - 1), (coords - np.floor(coords)).astype(_F32)


def _crop_samples(node, image_hw, box, crop_hw):
    (h, w), (ch, cw) = image_hw, crop_hw
    ys, vy = _axis_samples(box[0], box[2], h, ch)
    xs, vx = _axis_samples(box[1], box[3], w, cw)
    return ys, vy, xs, vx


@registry.kernel("CropAndResize")
def _crop_and_resize_kernel(ctx, node, image, boxes, box_ind, crop_size):
    if image.ndim != 4:
        raise invalid_argument(node, f"CropAndResize: input image must be 4-D, got shape {list(image.shape)}")
    if min(image.shape[1:3]) <= 0:
        raise invalid_argument(
            node, f"CropAndResize: image dimensions must be positive, got {list(image.shape)}"
        )
    crop = np.ravel(crop_size)
    if crop.shape != (2,):
        raise invalid_argument(
            node, f"CropAndResize: crop_size must be 1-D with two elements, got {crop.tolist()}"
        )
    ch, cw = int(crop[0]), int(crop[1])
    if ch <= 0 or cw <= 0:
        raise invalid_argument(node, f"CropAndResize: crop dimensions must be positive, got {[ch, cw]}")
    _check_boxes(node, boxes, box_ind, image.shape[0])
    h, w = image.shape[1:3]
    out = np.empty((boxes.shape[0], ch, cw, image.shape[3]), _F32)
    extrapolation = _F32(node.attr.get("extrapolation_value", 0.0))
    nearest = node.attr.get("method", "bilinear") == "nearest"
    for b, box in enumerate(boxes.astype(_F32)):
        ys, vy, xs, vx = _crop_samples(node, (h, w), box, (ch, cw))
        img = image[box_ind[b]].astype(_F32)
        if nearest:
            rows = np.clip(_round_half_up(np.where(vy, ys, 0)), 0, h - 1)
            cols = np.clip(_round_half_up(np.where(vx, xs, 0)), 0, w - 1)
            values = img[rows][:, cols]
        else:
            top, bottom, dy = _bilinear_taps(ys, vy, h)
            left, right, dx = _bilinear_taps(xs, vx, w)
            dx = dx[None, :, None]
            t_rows, b_rows = img[top], img[bottom]
            t = t_rows[:, left] + (t_rows[:, right] - t_rows[:, left]) * dx
            bot = b_rows[:, left] + (b_rows[:, right] - b_rows[:, left]) * dx
            values = t + (bot - t) * dy[:, None, None]
        out[b] = np.where((vy[:, None] & vx[None, :])[..., None], values, extrapolation)
    return out


registry.shape("CropAndResizeGradImage")(
    lambda inputs, attrs: [
        (
            attrs["T"],
            TensorShape(
                [int(d) for d in np.ravel(v)]
                if (v := get_static_value(inputs[3])) is not None
                else [None] * 4
            ),
        )
    ]
)
registry.no_gradient("CropAndResizeGradImage")


@registry.kernel("CropAndResizeGradImage")
def _crop_grad_image_kernel(ctx, node, grads, boxes, box_ind, image_size):
    batch, h, w, depth = (int(d) for d in np.ravel(image_size))
    _check_boxes(node, boxes, box_ind, batch)
    out = np.zeros((batch, h, w, depth))
    nearest = node.attr.get("method", "bilinear") == "nearest"
    ch, cw = grads.shape[1:3]
    for b, box in enumerate(boxes.astype(_F32)):
        ys, vy, xs, vx = _crop_samples(node, (h, w), box, (ch, cw))
        g = np.where((vy[:, None] & vx[None, :])[..., None], grads[b].astype(np.float64), 0.0)
        dst = out[box_ind[b]]
        if nearest:
            rows = np.clip(_round_half_up(np.where(vy, ys, 0)), 0, h - 1)
            cols = np.clip(_round_half_up(np.where(vx, xs, 0)), 0, w - 1)
            np.add.at(dst, (rows[:, None], cols[None, :]), g)
            continue
        top, bottom, dy = _bilinear_taps(ys, vy, h)
        left, right, dx = _bilinear_taps(xs, vx, w)
        dy, dx = dy.astype(np.float64)[:, None, None], dx.astype(np.float64)[None, :, None]
        for rows, wy in ((top, 1 - dy), (bottom, dy)):
            for cols, wx in ((left, 1 - dx), (right, dx)):
                np.add.at(dst, (rows[:, None], cols[None, :]), g * wy * wx)
    return out.astype(node.attr["T"].np)


registry.shape("CropAndResizeGradBoxes")(lambda inputs, attrs: [(_dtypes.float32, inputs[2].shape)])
registry.no_gradient("CropAndResizeGradBoxes")


@registry.kernel("CropAndResizeGradBoxes")
def _crop_grad_boxes_kernel(ctx, node, grads, image, boxes, box_ind):
    _check_boxes(node, boxes, box_ind, image.shape[0])
    h, w = image.shape[1:3]
    ch, cw = grads.shape[1:3]
    out = np.zeros((boxes.shape[0], 4))
    for b, box in enumerate(boxes.astype(_F32)):
        ys, vy, xs, vx = _crop_samples(node, (h, w), box, (ch, cw))
        img = image[box_ind[b]].astype(np.float64)
        top, bottom, dy = _bilinear_taps(ys, vy, h)
        left, right, dx = _bilinear_taps(xs, vx, w)
        dy, dx = dy.astype(np.float64)[:, None, None], dx.astype(np.float64)[None, :, None]
        tl, tr = img[top][:, left], img[top][:, right]
        bl, br = img[bottom][:, left], img[bottom][:, right]
        g = np.where((vy[:, None] & vx[None, :])[..., None], grads[b].astype(np.float64), 0.0)
        grad_y = ((1 - dx) * (bl - tl) + dx * (br - tr)) * g
        grad_x = ((1 - dy) * (tr - tl) + dy * (br - bl)) * g
        gy, gx = grad_y.sum(axis=(1, 2)), grad_x.sum(axis=(0, 2))
        for size, crop, gsum, lo, hi in ((h, ch, gy, 0, 2), (w, cw, gx, 1, 3)):
            if crop > 1:
                ratio = np.float64(_F32(size - 1) / _F32(crop - 1))
                pos = np.arange(crop) * ratio
                out[b, lo] += np.sum(gsum * (size - 1 - pos))
                out[b, hi] += np.sum(gsum * pos)
            else:
                out[b, lo] += np.sum(gsum) * 0.5 * (size - 1)
                out[b, hi] += np.sum(gsum) * 0.5 * (size - 1)
    return out.astype(_F32)


@registry.gradient("CropAndResize")
def _crop_and_resize_grad(op, grad):
    image, boxes, box_ind = op.inputs[:3]
    method = op.get_attr("method")
    dimage = None
    if image.dtype in (_dtypes.float16, _dtypes.float32, _dtypes.float64):
        dims = image.shape.as_list() if image.shape.is_fully_defined() else None
        size = shape(image) if dims is None else convert_to_tensor(dims, dtype=_dtypes.int32)
        attrs = {"T": image.dtype, "method": method}
        dimage = registry.make_op(
            "CropAndResizeGradImage", [grad, boxes, box_ind, size], attrs, name="CropAndResizeGradImage"
        ).outputs[0]
    dboxes = registry.make_op(
        "CropAndResizeGradBoxes",
        [grad, image, boxes, box_ind],
        {"method": "bilinear"},
        name="CropAndResizeGradBoxes",
    ).outputs[0]
    return [dimage, dboxes, None, None]


def crop_and_resize(
    image,
    boxes,
    box_ind=None,
    crop_size=None,
    method="bilinear",
    extrapolation_value=0,
    name=None,
    box_indices=None,
):
    """`tf.image.crop_and_resize`: for each of `boxes` (``[num_boxes, 4]``, normalised
    ``[y1, x1, y2, x2]``, flipped when ``y1 > y2``) a `crop_size` sample of image
    ``box_ind[i]`` of the 4-D `image`, by `method` (``"bilinear"`` or ``"nearest"``); float32.

    Raises:
        ValueError: both or neither of `box_ind` / `box_indices`, or a bad `method`.
    """
    if box_ind is not None and box_indices is not None:
        raise ValueError("Cannot specify both 'box_indices' and 'box_ind'.")
    box_ind = box_indices if box_ind is None else box_ind
    if box_ind is None or crop_size is None:
        raise ValueError("crop_and_resize needs box_ind (box_indices) and crop_size")
    if method not in ("bilinear", "nearest"):
        raise ValueError(f"method must be 'bilinear' or 'nearest', got {method!r}")
    inputs = [
        convert_to_tensor(image, name="image"),
        convert_to_tensor(boxes, dtype=_dtypes.float32, name="boxes"),
        convert_to_tensor(box_ind, dtype=_dtypes.int32, name="box_ind"),
        convert_to_tensor(crop_size, dtype=_dtypes.int32, name="crop_size"),
    ]
    attrs = {"T": inputs[0].dtype, "method": method, "extrapolation_value": float(extrapolation_value)}
    return registry.make_op("CropAndResize", inputs, attrs, name=name or "CropAndResize").outputs[0]


# -- DrawBoundingBoxes ------------------------------------------------------------------------------
_DEFAULT_COLORS = [
    [1, 1, 0, 1], [0, 0, 1, 1], [1, 0, 0, 1], [0, 1, 0, 1], [0.5, 0, 0.5, 1],
    [0.5, 0.5, 0, 1], [0.5, 0, 0, 1], [0, 0, 0.5, 1], [0, 1, 1, 1], [1, 0, 1, 1],
]  # fmt: skip


def _draw_kernel(ctx, node, images, boxes, colors=None):
    if images.ndim != 4:
        raise invalid_argument(
            node, f"{node.op}: The rank of the images should be 4, got {list(images.shape)}"
        )
    batch, height, width, depth = images.shape
    if depth not in (1, 3, 4):
        raise invalid_argument(
            node, f"{node.op}: Channel depth should be either 1 (GRY), 3 (RGB), or 4 (RGBA), got {depth}"
        )
    if boxes.ndim != 3 or boxes.shape[2] != 4:
        raise invalid_argument(
            node, f"{node.op}: boxes must be [batch, num_boxes, 4], got {list(boxes.shape)}"
        )
    if boxes.shape[0] != batch:
        raise invalid_argument(
            node, f"{node.op}: The batch sizes should be the same: images {batch}, boxes {boxes.shape[0]}"
        )
    table = [list(c) for c in (_DEFAULT_COLORS if colors is None or colors.size == 0 else colors.tolist())]
    if colors is not None and colors.size and (colors.ndim != 2 or colors.shape[1] < depth):
        raise invalid_argument(
            node,
            f"{node.op}: colors must have equal or more channels than the image provided: "
            f"{list(colors.shape)}",
        )
    if depth == 1 and (colors is None or colors.size == 0):  # (TF whitens only its own table)
        for c in table:
            c[0] = 1
    canvas = images.copy()
    for b in range(batch):
        for k, box in enumerate(boxes[b].astype(_F32)):
            color = np.asarray(table[k % len(table)][:depth], images.dtype)
            r0, c0 = int(box[0] * _F32(height - 1)), int(box[1] * _F32(width - 1))
            r1, c1 = int(box[2] * _F32(height - 1)), int(box[3] * _F32(width - 1))
            if r0 > r1 or c0 > c1 or r0 >= height or r1 < 0 or c0 >= width or c1 < 0:
                continue  # inverted or wholly outside: TF draws nothing
            rr0, rr1, cc0, cc1 = max(r0, 0), min(r1, height - 1), max(c0, 0), min(c1, width - 1)
            if r0 >= 0:
                canvas[b, r0, cc0 : cc1 + 1] = color
            if r1 < height:
                canvas[b, r1, cc0 : cc1 + 1] = color
            if c0 >= 0:
                canvas[b, rr0 : rr1 + 1, c0] = color
            if c1 < width:
                canvas[b, rr0 : rr1 + 1, c1] = color
    return canvas


def _draw_shape(inputs, attrs):
    images = inputs[0].shape
    if images.ndims == 4 and images.dims[3] not in (None, 1, 3, 4):
        raise ValueError(
            f"Channel depth should be either 1 (GRY), 3 (RGB), or 4 (RGBA) for 'DrawBoundingBoxes' with "
            f"input shapes: {', '.join(str(i.shape) for i in inputs)}."
        )
    return [(inputs[0].dtype, images)]


for _type in ("DrawBoundingBoxes", "DrawBoundingBoxesV2"):
    registry.shape(_type)(
        ranked_shape(
            _type,
            [("images", 4), ("boxes", 3), ("colors", 2)],
            _draw_shape,
        )
    )
    registry.kernel(_type)(_draw_kernel)
    registry.no_gradient(_type)


def draw_bounding_boxes(images, boxes, name=None, colors=None):
    """`tf.image.draw_bounding_boxes`: `images` (4-D float32 / half) with each of `boxes`
    (``[batch, num_boxes, 4]``, normalised ``[y_min, x_min, y_max, x_max]``) outlined one pixel
    wide in `colors` (rows cycled; TF's ten defaults when None).

    Raises:
        TypeError: `images` not float32 or half.
    """
    images = convert_to_tensor(images, name="images")
    if images.dtype not in (_dtypes.float32, _dtypes.float16):
        raise TypeError(
            f"Value passed to parameter 'images' has DataType {images.dtype.name} not in list of "
            "allowed values: float32, float16"
        )
    inputs = [images, convert_to_tensor(boxes, dtype=_dtypes.float32, name="boxes")]
    op_type = "DrawBoundingBoxes"
    if colors is not None:
        inputs.append(convert_to_tensor(colors, dtype=_dtypes.float32, name="colors"))
        op_type = "DrawBoundingBoxesV2"
    return registry.make_op(op_type, inputs, {"T": images.dtype}, name=name or op_type).outputs[0]


# -- ExtractGlimpse ---------------------------------------------------------------------------------
def _glimpse_shape(inputs, attrs):
    x = inputs[0].shape
    size = get_static_value(inputs[1])
    hw = [None, None] if size is None else [int(s) for s in np.ravel(size)]
    batch, depth = (None, None) if x.ndims != 4 else (x.dims[0], x.dims[3])
    offsets = inputs[2].shape
    if batch is None and offsets.ndims == 2:
        batch = offsets.dims[0]
    return [(_dtypes.float32, TensorShape([batch, *hw, depth]))]


registry.shape("ExtractGlimpse")(
    ranked_shape("ExtractGlimpse", [("input", 4), ("size", 1), ("offsets", 2)], _glimpse_shape)
)
registry.no_gradient("ExtractGlimpse")


def _glimpse_origin(offset, in_size, out_size, centered, normalized):
    """TF 1.x's (version 1) glimpse corner along one axis, truncated toward zero."""
    v = _F32(offset)
    if normalized:
        v = _F32(v * _F32(in_size))
    if centered:
        v = _F32(_F32(v / _F32(2)) + _F32(in_size) / _F32(2))
    return int(_F32(v - _F32(out_size) / _F32(2)))


def _glimpse_noise(gen, mode, image, shape):
    if mode == "zero":
        return np.zeros(shape, _F32)
    if mode == "gaussian":
        mean, sigma = image.mean(axis=(0, 1)), image.std(axis=(0, 1))
        return (mean + gen.standard_normal(shape) * sigma).astype(_F32)
    low = image.min()
    return (low + gen.random(shape) * (image.max() - low)).astype(_F32)


@registry.kernel("ExtractGlimpse")
def _glimpse_kernel(ctx, node, images, size, offsets):
    if images.ndim != 4:
        raise invalid_argument(node, f"ExtractGlimpse: input must be 4-dimensional, got {list(images.shape)}")
    size = np.ravel(size)
    if size.shape != (2,):
        raise invalid_argument(
            node, f"ExtractGlimpse: input must be a vector of size 2 (height, width), got {size.tolist()}"
        )
    if offsets.ndim != 2 or offsets.shape != (images.shape[0], 2):
        raise invalid_argument(
            node,
            f"ExtractGlimpse: offsets must be [batch_size, 2] = {[images.shape[0], 2]}, "
            f"got {list(offsets.shape)}",
        )
    gh, gw = int(size[0]), int(size[1])
    if gh <= 0 or gw <= 0:
        raise invalid_argument(node, f"ExtractGlimpse: glimpse size must be positive, got {[gh, gw]}")
    a = node.attr
    mode = a.get("noise", "uniform") or ("uniform" if a.get("uniform_noise", True) else "gaussian")
    state = ctx.resources.get_or_create(("", "rng", node.name), lambda: RandomState(0, 0))
    _, h, w, depth = images.shape
    out = np.empty((images.shape[0], gh, gw, depth), _F32)
    for b in range(images.shape[0]):
        y0 = _glimpse_origin(offsets[b, 0], h, gh, a["centered"], a["normalized"])
        x0 = _glimpse_origin(offsets[b, 1], w, gw, a["centered"], a["normalized"])
        rows, cols = y0 + np.arange(gh), x0 + np.arange(gw)
        vr, vc = (rows >= 0) & (rows < h), (cols >= 0) & (cols < w)
        img = images[b].astype(_F32)
        if vr.all() and vc.all():
            out[b] = img[rows][:, cols]
            continue
        with state.lock:
            out[b] = _glimpse_noise(state.generator, mode, img, (gh, gw, depth))
        out[b][np.ix_(vr, vc)] = img[rows[vr]][:, cols[vc]]
    return out


def extract_glimpse(input, size, offsets, centered=True, normalized=True, uniform_noise=True, name=None):  # noqa: A002 - TF's name
    """`tf.image.extract_glimpse` (TF 1.x's `ExtractGlimpse`): a `size` (``[height, width]``)
    window of each 4-D float32 image at `offsets` (``[batch, 2]``, y then x; relative to the
    centre when `centered`, in [-1, 1] when `normalized`); parts outside the image are noise
    (uniform between the image's extremes, TF's `noise="uniform"` default whatever
    `uniform_noise` says)."""
    inputs = [
        convert_to_tensor(input, dtype=_dtypes.float32, name="input"),
        convert_to_tensor(size, dtype=_dtypes.int32, name="size"),
        convert_to_tensor(offsets, dtype=_dtypes.float32, name="offsets"),
    ]
    attrs = {
        "centered": bool(centered),
        "normalized": bool(normalized),
        "uniform_noise": bool(uniform_noise),
        "noise": "uniform",
    }
    return registry.make_op("ExtractGlimpse", inputs, attrs, name=name or "ExtractGlimpse").outputs[0]
