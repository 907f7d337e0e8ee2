"""`tf.image`'s measurements and patch ops: `total_variation`, `image_gradients`,
`sobel_edges`, `psnr`, `ssim` (TF's compositions, so differentiable as TF's), and the kernels
`ExtractImagePatches` and `NonMaxSuppressionV3`."""

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import get_default_graph
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops._shapes import invalid_argument
from nbdist.ops.cast_select_ops import cast, zeros_like
from nbdist.ops.concat_slice_ops import concat
from nbdist.ops.constant_op import constant, convert_to_tensor
from nbdist.ops.conv_ops import depthwise_conv2d
from nbdist.ops.image_ops import convert_image_dtype, image_rank
from nbdist.ops.math_ops import abs, log, squared_difference  # noqa: A004 - tf.abs
from nbdist.ops.reduction_ops import reduce_mean, reduce_sum

__all__ = [
    "extract_image_patches",
    "image_gradients",
    "non_max_suppression",
    "psnr",
    "sobel_edges",
    "ssim",
    "total_variation",
]


def total_variation(images, name=None):
    """`tf.image.total_variation`: the sum of absolute differences of neighbouring pixels, per
    image (a scalar for a 3-D image)."""
    images = convert_to_tensor(images, name="images")
    ndims = image_rank(images, "total_variation")
    with get_default_graph().name_scope(name or "total_variation"):
        if ndims == 3:
            dif1, dif2, axis = (
                images[1:, :, :] - images[:-1, :, :],
                images[:, 1:, :] - images[:, :-1, :],
                None,
            )
        else:
            dif1, dif2 = (
                images[:, 1:, :, :] - images[:, :-1, :, :],
                images[:, :, 1:, :] - images[:, :, :-1, :],
            )
            axis = [1, 2, 3]
        return reduce_sum(abs(dif1), axis=axis) + reduce_sum(abs(dif2), axis=axis)


def image_gradients(image):
    """`tf.image.image_gradients`: ``(dy, dx)``, forward differences of a 4-D image, zero in the
    last row / column.

    Raises:
        ValueError: `image` is not 4-D.
    """
    image = convert_to_tensor(image, name="image")
    if image.shape.ndims != 4:
        raise ValueError(f"image_gradients expects a 4D tensor [batch_size, h, w, d], not {image.shape}.")
    dy = image[:, 1:, :, :] - image[:, :-1, :, :]
    dx = image[:, :, 1:, :] - image[:, :, :-1, :]
    dy = concat([dy, zeros_like(image[:, :1, :, :])], 1)
    dx = concat([dx, zeros_like(image[:, :, :1, :])], 2)
    return dy, dx


def sobel_edges(image):
    """`tf.image.sobel_edges`: the vertical and horizontal Sobel responses of a 4-D image
    (reflect-padded), stacked on a new last dimension: ``[batch, h, w, d, 2]``."""
    image = convert_to_tensor(image, name="image")
    if image.shape.ndims != 4 or image.shape.dims[-1] is None:
        raise ValueError(f"sobel_edges expects a 4D tensor with known channels, not {image.shape}.")
    depth = image.shape.dims[-1]
    kernels = np.asarray([[[-1, -2, -1], [0, 0, 0], [1, 2, 1]], [[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]]])
    kernels = np.tile(np.transpose(kernels, (1, 2, 0))[:, :, None, :], [1, 1, depth, 1])
    padded = concat([image[:, 1:2], image, image[:, -2:-1]], 1)  # REFLECT by one row / column
    padded = concat([padded[:, :, 1:2], padded, padded[:, :, -2:-1]], 2)
    out = depthwise_conv2d(padded, constant(kernels, image.dtype), [1, 1, 1, 1], "VALID")
    from nbdist.ops.reshape_ops import reshape  # noqa: PLC0415
    from nbdist.ops.shape_ops import shape  # noqa: PLC0415

    return reshape(out, concat([shape(image), [2]], 0))


def psnr(a, b, max_val, name=None):
    """`tf.image.psnr`: peak signal-to-noise ratio per image, in dB (float32)."""
    a, b = convert_to_tensor(a, name="a"), convert_to_tensor(b, name="b")
    with get_default_graph().name_scope(name or "PSNR"):
        max_val = convert_image_dtype(cast(max_val, a.dtype), _dtypes.float32)
        a, b = convert_image_dtype(a, _dtypes.float32), convert_image_dtype(b, _dtypes.float32)
        mse = reduce_mean(squared_difference(a, b), [-3, -2, -1])
        return 20 * log(max_val) / np.log(np.float32(10.0)) - np.float32(10 / np.log(10)) * log(mse)


def _gaussian(size, sigma):
    coords = np.arange(size, dtype=np.float32) - np.float32(size - 1) / 2
    g = np.square(coords) * np.float32(-0.5 / np.square(np.float32(sigma)))
    g = (g[None, :] + g[:, None]).reshape(-1)
    g = np.exp(g - g.max())
    return (g / g.sum()).reshape(size, size, 1, 1).astype(np.float32)


def ssim(img1, img2, max_val, filter_size=11, filter_sigma=1.5, k1=0.01, k2=0.03):
    """`tf.image.ssim`: structural similarity of two batches of images (an 11x11 Gaussian window
    of width 1.5, VALID), the mean over positions and channels; images at least
    `filter_size` high and wide, with static channels."""
    img1, img2 = convert_to_tensor(img1, name="img1"), convert_to_tensor(img2, name="img2")
    depth = img1.shape.dims[-1] if img1.shape.ndims else None
    if img1.shape.ndims != 4 or depth is None:
        raise ValueError(f"tf.image.ssim (nbdist): img1 must be 4-D with known channels, got {img1.shape}")
    with get_default_graph().name_scope("SSIM"):
        max_val = convert_image_dtype(cast(max_val, img1.dtype), _dtypes.float32)
        x, y = convert_image_dtype(img1, _dtypes.float32), convert_image_dtype(img2, _dtypes.float32)
        kernel = constant(np.tile(_gaussian(filter_size, filter_sigma), [1, 1, depth, 1]))

        def reducer(t):
            return depthwise_conv2d(t, kernel, [1, 1, 1, 1], "VALID")

        c1, c2 = (k1 * max_val) ** 2, (k2 * max_val) ** 2
        mean0, mean1 = reducer(x), reducer(y)
        num0 = mean0 * mean1 * 2.0
        den0 = mean0 * mean0 + mean1 * mean1
        luminance = (num0 + c1) / (den0 + c1)
        num1 = reducer(x * y) * 2.0
        den1 = reducer(x * x + y * y)
        cs = (num1 - num0 + c2) / (den1 - den0 + c2)
        return reduce_mean(reduce_mean(luminance * cs, [-3, -2]), [-1])


# -- ExtractImagePatches ---------------------------------------------------------------------------
def _patch_geometry(in_size, k, stride, rate, padding):
    eff = k + (k - 1) * (rate - 1)
    if padding == "VALID":
        return max(-(-(in_size - eff + 1) // stride), 0), 0
    out = -(-in_size // stride)
    return out, max((out - 1) * stride + eff - in_size, 0) // 2


@registry.shape("ExtractImagePatches")
def _extract_patches_shape(inputs, attrs):
    x = inputs[0].shape
    if x.ndims is None:
        return [(inputs[0].dtype, TensorShape([None] * 4))]
    b, h, w, d = x.dims
    _, kh, kw, _ = attrs["ksizes"]
    dims = [b]
    for size, k, s, r in zip((h, w), (kh, kw), attrs["strides"][1:3], attrs["rates"][1:3], strict=True):
        dims.append(None if size is None else _patch_geometry(size, k, s, r, attrs["padding"])[0])
    return [(inputs[0].dtype, TensorShape([*dims, None if d is None else kh * kw * d]))]


@registry.kernel("ExtractImagePatches")
def _extract_patches_kernel(ctx, node, images):
    if images.ndim != 4:
        raise invalid_argument(node, f"ExtractImagePatches: input must be 4-D, got {list(images.shape)}")
    a = node.attr
    _, kh, kw, _ = a["ksizes"]
    (_, sh, sw, _), (_, rh, rw, _) = a["strides"], a["rates"]
    oh, top = _patch_geometry(images.shape[1], kh, sh, rh, a["padding"])
    ow, left = _patch_geometry(images.shape[2], kw, sw, rw, a["padding"])
    padded = np.zeros(
        (
            images.shape[0],
            images.shape[1] + 2 * top + kh * rh,
            images.shape[2] + 2 * left + kw * rw,
            images.shape[3],
        ),
        images.dtype,
    )
    padded[:, top : top + images.shape[1], left : left + images.shape[2]] = images
    rows = (np.arange(oh) * sh)[:, None] + np.arange(kh) * rh  # [oh, kh]
    cols = (np.arange(ow) * sw)[:, None] + np.arange(kw) * rw  # [ow, kw]
    patches = padded[:, rows[:, None, :, None], cols[None, :, None, :]]  # [b, oh, ow, kh, kw, d]
    return patches.reshape(images.shape[0], oh, ow, -1)


# (its gradient, TF's, is in nbdist/ops/patches_ops.py with ExtractVolumePatches')


def extract_image_patches(images, ksizes, strides, rates, padding, name=None):
    """`tf.image.extract_image_patches` (`tf.extract_image_patches`): each
    ``ksizes[1] x ksizes[2]`` patch (dilated by `rates`, every `strides`) flattened into the
    depth dimension."""
    images = convert_to_tensor(images, name="images")
    padding = padding.upper() if isinstance(padding, str) else padding
    if padding not in ("SAME", "VALID"):
        raise ValueError(f"padding must be 'SAME' or 'VALID', got {padding!r}")
    attrs = {
        "ksizes": [int(v) for v in ksizes],
        "strides": [int(v) for v in strides],
        "rates": [int(v) for v in rates],
        "padding": padding,
    }
    for key in ("ksizes", "strides", "rates"):
        if len(attrs[key]) != 4 or attrs[key][0] != 1 or attrs[key][3] != 1:
            raise ValueError(f"{key} must be [1, r, c, 1], got {attrs[key]}")
    return registry.make_op(
        "ExtractImagePatches", [images], attrs, name=name or "ExtractImagePatches"
    ).outputs[0]


# -- NonMaxSuppressionV3 ---------------------------------------------------------------------------
registry.shape("NonMaxSuppressionV3")(lambda inputs, attrs: [(_dtypes.int32, TensorShape([None]))])
registry.no_gradient("NonMaxSuppressionV3")


def _iou(box, others):
    ymin = np.minimum(box[0], box[2]), np.minimum(others[:, 0], others[:, 2])
    xmin = np.minimum(box[1], box[3]), np.minimum(others[:, 1], others[:, 3])
    ymax = np.maximum(box[0], box[2]), np.maximum(others[:, 0], others[:, 2])
    xmax = np.maximum(box[1], box[3]), np.maximum(others[:, 1], others[:, 3])
    area = [(ymax[i] - ymin[i]) * (xmax[i] - xmin[i]) for i in (0, 1)]
    inter_h = np.maximum(np.minimum(ymax[0], ymax[1]) - np.maximum(ymin[0], ymin[1]), 0)
    inter_w = np.maximum(np.minimum(xmax[0], xmax[1]) - np.maximum(xmin[0], xmin[1]), 0)
    inter = inter_h * inter_w
    union = area[0] + area[1] - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((area[0] <= 0) | (area[1] <= 0), 0.0, inter / union)


@registry.kernel("NonMaxSuppressionV3")
def _nms_kernel(ctx, node, boxes, scores, max_output_size, iou_threshold, score_threshold):
    if boxes.ndim != 2 or boxes.shape[1] != 4 or scores.shape != boxes.shape[:1]:
        raise invalid_argument(
            node,
            f"NonMaxSuppressionV3: boxes must be [n, 4] and scores [n], "
            f"got {list(boxes.shape)} and {list(scores.shape)}",
        )
    order = [i for i in np.argsort(-scores, kind="stable") if scores[i] > score_threshold]
    selected = []
    for i in order:
        if len(selected) >= int(max_output_size):
            break
        if not selected or np.all(_iou(boxes[i], boxes[selected]) <= iou_threshold):
            selected.append(i)
    return np.asarray(selected, np.int32)


def non_max_suppression(
    boxes, scores, max_output_size, iou_threshold=0.5, score_threshold=float("-inf"), name=None
):
    """`tf.image.non_max_suppression`: indices of up to `max_output_size` boxes, by decreasing
    score, none overlapping a chosen one by more than `iou_threshold` (IoU), scores above
    `score_threshold`."""
    with get_default_graph().name_scope(name or "non_max_suppression"):
        inputs = [
            convert_to_tensor(boxes, dtype=_dtypes.float32, name="boxes"),
            convert_to_tensor(scores, dtype=_dtypes.float32, name="scores"),
            convert_to_tensor(max_output_size, dtype=_dtypes.int32, name="max_output_size"),
            convert_to_tensor(iou_threshold, dtype=_dtypes.float32, name="iou_threshold"),
            convert_to_tensor(score_threshold, dtype=_dtypes.float32, name="score_threshold"),
        ]
        return registry.make_op("NonMaxSuppressionV3", inputs, name="NonMaxSuppressionV3").outputs[0]
