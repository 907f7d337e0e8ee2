"""`tf.image.combined_non_max_suppression` (`CombinedNonMaxSuppression`: per-class greedy NMS,
then the best `max_total_size` of all classes per image) and
`tf.image.sample_distorted_bounding_box` (`SampleDistortedBoundingBoxV2`: TF's rejection
sampler of a crop covering enough of a given box), as TF's CPU kernels."""

import collections

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import get_default_graph
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops._shapes import invalid_argument
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.image_crop_ops import ranked_shape
from nbdist.ops.image_nms_ops import greedy_nms, iou_fn
from nbdist.ops.random_ops import RandomState
from nbdist.ops.shape_ops import get_static_value

__all__ = ["combined_non_max_suppression", "sample_distorted_bounding_box"]

_F32 = np.float32

CombinedNonMaxSuppression = collections.namedtuple(
    "CombinedNonMaxSuppression", ["nmsed_boxes", "nmsed_scores", "nmsed_classes", "valid_detections"]
)


def _detections(per_class, num_classes, total, pad_per_class):
    return min(per_class * num_classes, total) if pad_per_class else total


def _combined_shape(inputs, attrs):
    boxes, scores = inputs[0].shape, inputs[1].shape
    batch = boxes.dims[0] if boxes.ndims else None
    classes = scores.dims[2] if scores.ndims == 3 else None
    per_class, total = get_static_value(inputs[2]), get_static_value(inputs[3])
    size = None
    if total is not None and (not attrs["pad_per_class"] or (per_class is not None and classes is not None)):
        size = _detections(int(per_class or 0), classes or 0, int(total), attrs["pad_per_class"])
    return [
        (_dtypes.float32, TensorShape([batch, size, 4])),
        (_dtypes.float32, TensorShape([batch, size])),
        (_dtypes.float32, TensorShape([batch, size])),
        (_dtypes.int32, TensorShape([batch])),
    ]


registry.shape("CombinedNonMaxSuppression")(
    ranked_shape(
        "CombinedNonMaxSuppression",
        [("boxes", 4), ("scores", 3), ("max_output_size_per_class", 0), ("max_total_size", 0)],
        _combined_shape,
    )
)
registry.no_gradient("CombinedNonMaxSuppression")


def _check_combined(node, boxes, scores, per_class, total, iou_threshold):
    if boxes.ndim != 4 or boxes.shape[3] != 4:
        raise invalid_argument(
            node, f"{node.op}: boxes must be 4-D [batch, num_boxes, q, 4], got {list(boxes.shape)}"
        )
    if scores.ndim != 3 or scores.shape[:2] != boxes.shape[:2]:
        raise invalid_argument(
            node,
            f"{node.op}: scores must be 3-D [batch, num_boxes, num_classes] matching boxes, "
            f"got {list(scores.shape)}",
        )
    if boxes.shape[2] not in (1, scores.shape[2]):
        raise invalid_argument(
            node, f"{node.op}: third dimension of boxes must be either 1 or num classes, got {boxes.shape[2]}"
        )
    if int(per_class) <= 0 or int(total) <= 0:
        raise invalid_argument(
            node,
            f"{node.op}: max_size_per_class and max_total_size must be > 0, "
            f"got {int(per_class)}, {int(total)}",
        )
    if not 0 <= float(iou_threshold) <= 1:
        raise invalid_argument(
            node, f"{node.op}: iou_threshold must be in [0, 1], got {float(iou_threshold)}"
        )


@registry.kernel("CombinedNonMaxSuppression")
def _combined_kernel(ctx, node, boxes, scores, per_class, total, iou_threshold, score_threshold):
    _check_combined(node, boxes, scores, per_class, total, iou_threshold)
    batch, _, q, _ = boxes.shape
    classes = scores.shape[2]
    per_class, total = int(per_class), int(total)
    size = _detections(per_class, classes, total, node.attr["pad_per_class"])
    out_boxes = np.zeros((batch, size, 4), _F32)
    out_scores, out_classes = np.zeros((batch, size), _F32), np.zeros((batch, size), _F32)
    valid = np.zeros(batch, np.int32)
    for b in range(batch):
        found = []  # (score, class, box) in class order, then index order within a class
        for c in range(classes):
            class_boxes = boxes[b, :, c if q > 1 else 0]
            sel, kept = greedy_nms(
                iou_fn(class_boxes), scores[b, :, c], per_class, iou_threshold, score_threshold
            )
            found += [(s, c, class_boxes[i]) for i, s in zip(sel, kept, strict=True)]
        found.sort(key=lambda f: -f[0])  # (stable: equal scores keep the class order)
        found = found[: min(len(found), size)]
        valid[b] = len(found)
        for k, (score, c, box) in enumerate(found):
            out_boxes[b, k] = np.clip(box, 0, 1) if node.attr["clip_boxes"] else box
            out_scores[b, k], out_classes[b, k] = score, c
    return out_boxes, out_scores, out_classes, valid


def combined_non_max_suppression(
    boxes,
    scores,
    max_output_size_per_class,
    max_total_size,
    iou_threshold=0.5,
    score_threshold=float("-inf"),
    pad_per_class=False,
    clip_boxes=True,
    name=None,
):
    """`tf.image.combined_non_max_suppression`: for each image of `boxes`
    (``[batch, num_boxes, q, 4]``, ``q`` 1 or one per class) and `scores`
    (``[batch, num_boxes, num_classes]``), greedy NMS per class keeping
    `max_output_size_per_class`, then the `max_total_size` best of all classes by score.

    Returns:
        A namedtuple ``(nmsed_boxes, nmsed_scores, nmsed_classes, valid_detections)``, zero padded
        (to ``min(max_output_size_per_class * num_classes, max_total_size)`` with
        `pad_per_class`), boxes clipped to [0, 1] with `clip_boxes`.
    """
    with get_default_graph().name_scope(name or "combined_non_max_suppression"):
        inputs = [
            convert_to_tensor(boxes, dtype=_dtypes.float32, name="boxes"),
            convert_to_tensor(scores, dtype=_dtypes.float32, name="scores"),
            convert_to_tensor(
                max_output_size_per_class, dtype=_dtypes.int32, name="max_output_size_per_class"
            ),
            convert_to_tensor(max_total_size, dtype=_dtypes.int32, name="max_total_size"),
            convert_to_tensor(iou_threshold, dtype=_dtypes.float32, name="iou_threshold"),
            convert_to_tensor(score_threshold, dtype=_dtypes.float32, name="score_threshold"),
        ]
        attrs = {"pad_per_class": bool(pad_per_class), "clip_boxes": bool(clip_boxes)}
        op = registry.make_op("CombinedNonMaxSuppression", inputs, attrs, name="CombinedNonMaxSuppression")
        return CombinedNonMaxSuppression(*op.outputs)


# -- SampleDistortedBoundingBoxV2 -------------------------------------------------------------------
def _sample_shape(inputs, attrs):
    dtype = inputs[0].dtype
    return [(dtype, TensorShape([3])), (dtype, TensorShape([3])), (_dtypes.float32, TensorShape([1, 1, 4]))]


registry.shape("SampleDistortedBoundingBoxV2")(
    ranked_shape(
        "SampleDistortedBoundingBoxV2",
        [("image_size", 1), ("bounding_boxes", 3), ("min_object_covered", 0)],
        _sample_shape,
    )
)
registry.no_gradient("SampleDistortedBoundingBoxV2")


def _area(r):
    return max(r[2] - r[0], 0) * max(r[3] - r[1], 0)


def _covers(crop, boxes, min_covered):
    if _area(crop) < 1:
        return False
    for box in boxes:
        area = _area(box)
        if area < 1:
            continue
        inter = (max(crop[0], box[0]), max(crop[1], box[1]), min(crop[2], box[2]), min(crop[3], box[3]))
        if _F32(_area(inter)) / _F32(area) >= min_covered:
            return True
    return False


def _random_crop(gen, width, height, boxes, min_covered, min_area, max_area, ratio):
    """TF's ``GenerateRandomCrop``: an ``(x0, y0, x1, y1)`` rectangle, or None."""
    min_h = int(np.rint(np.sqrt(min_area / ratio)))
    max_h = int(np.rint(np.sqrt(max_area / ratio)))
    if np.rint(max_h * ratio) > width:
        max_h = int((width + 0.5 - 1e-7) / ratio)
        if np.rint(max_h * ratio) > width:
            max_h -= 1
    max_h = min(max_h, height)
    min_h = min(min_h, max_h)
    h = min_h + (int(gen.integers(max_h - min_h + 1)) if min_h < max_h else 0)
    w = int(np.rint(h * ratio))
    area = _F32(w * h)
    if area < min_area:
        h += 1
        w = int(np.rint(h * ratio))
        area = _F32(w * h)
    if area > max_area:
        h -= 1
        w = int(np.rint(h * ratio))
        area = _F32(w * h)
    if area < min_area or area > max_area or w > width or h > height or w <= 0 or h <= 0:
        return None
    y = int(gen.integers(height - h)) if h < height else 0
    x = int(gen.integers(width - w)) if w < width else 0
    crop = (x, y, x + w, y + h)
    return crop if _covers(crop, boxes, min_covered) else None


def _check_sample(node, image_size, bounding_boxes, min_covered):
    if image_size.ndim != 1 or image_size.shape[0] != 3:
        raise invalid_argument(
            node, f"{node.op}: image_size must be 1-dimensional with 3 elements, got {image_size}"
        )
    height, width = int(image_size[0]), int(image_size[1])
    if height <= 0 or width <= 0:
        raise invalid_argument(
            node, f"{node.op}: image height and width must be positive, got {[height, width]}"
        )
    if bounding_boxes.ndim != 3 or bounding_boxes.shape[-1] != 4:
        raise invalid_argument(
            node,
            f"{node.op}: input boxes must be 3-dimensional [batch, num_boxes, coords], "
            f"got {list(bounding_boxes.shape)}",
        )
    if float(min_covered) < 0:
        raise invalid_argument(
            node, f"{node.op}: min_object_covered must be non-negative: {float(min_covered)}"
        )
    flat = bounding_boxes.reshape(-1, 4).astype(_F32)
    bad = flat[(flat < 0) | (flat > 1)]
    if bad.size:
        raise invalid_argument(
            node, f"{node.op}: All bounding box coordinates must be in [0.0, 1.0]: {bad[0]:g}"
        )
    return height, width, flat


@registry.kernel("SampleDistortedBoundingBoxV2")
def _sample_kernel(ctx, node, image_size, bounding_boxes, min_covered):
    height, width, flat = _check_sample(node, image_size, bounding_boxes, min_covered)
    a = node.attr
    boxes = [
        (int(b[1] * _F32(width)), int(b[0] * _F32(height)), int(b[3] * _F32(width)), int(b[2] * _F32(height)))
        for b in flat
    ]
    if not boxes:
        if not a["use_image_if_no_bounding_boxes"]:
            raise invalid_argument(
                node,
                f"{node.op}: No bounding boxes provided as input. One must enable "
                "use_image_if_no_bounding_boxes "
                "if you wish to not provide any bounding boxes.",
            )
        boxes = [(0, 0, width, height)]
    min_area = _F32(_F32(a["area_range"][0]) * _F32(height) * _F32(width))
    max_area = _F32(_F32(a["area_range"][1]) * _F32(height) * _F32(width))
    lo, hi = (_F32(r) for r in a["aspect_ratio_range"])
    state = ctx.resources.get_or_create(("", "rng", node.name), lambda: RandomState(a["seed"], a["seed2"]))
    crop = None
    with state.lock:
        for _ in range(a["max_attempts"]):
            ratio = _F32(_F32(state.generator.random()) * (hi - lo) + lo)
            crop = _random_crop(
                state.generator, width, height, boxes, _F32(min_covered), min_area, max_area, ratio
            )
            if crop is not None:
                break
    x0, y0, x1, y1 = crop or (0, 0, width, height)
    dtype = image_size.dtype
    begin = np.asarray([y0, x0, 0], dtype)
    size = np.asarray([y1 - y0, x1 - x0, -1], dtype)
    bbox = np.asarray([[[y0 / _F32(height), x0 / _F32(width), y1 / _F32(height), x1 / _F32(width)]]], _F32)
    return begin, size, bbox


def sample_distorted_bounding_box(
    image_size,
    bounding_boxes,
    seed=None,
    seed2=None,
    min_object_covered=0.1,
    aspect_ratio_range=None,
    area_range=None,
    max_attempts=None,
    use_image_if_no_bounding_boxes=None,
    name=None,
):
    """`tf.image.sample_distorted_bounding_box` (TF 1.x): a random crop of an image of
    `image_size` (``[height, width, channels]``) with an aspect ratio in `aspect_ratio_range`
    (default ``[0.75, 1.33]``), an area fraction in `area_range` (``[0.05, 1.0]``), covering at
    least `min_object_covered` of one of `bounding_boxes` (``[batch, N, 4]`` normalised); the
    whole image when `max_attempts` (100) tries fail. Seeded by `seed` / `seed2` as TF's op
    (no graph seed: both None draw fresh crops).

    Returns:
        ``(begin, size, bboxes)``: `tf.slice` arguments (`image_size`'s dtype) and the crop as a
        ``[1, 1, 4]`` float32 box.
    """
    with get_default_graph().name_scope(name or "sample_distorted_bounding_box"):
        inputs = [
            convert_to_tensor(image_size, name="image_size"),
            convert_to_tensor(bounding_boxes, dtype=_dtypes.float32, name="bounding_boxes"),
            convert_to_tensor(min_object_covered, dtype=_dtypes.float32, name="min_object_covered"),
        ]
        if inputs[0].dtype not in (_dtypes.uint8, _dtypes.int8, _dtypes.int16, _dtypes.int32, _dtypes.int64):
            raise TypeError(f"image_size must be an integer tensor, got {inputs[0].dtype.name}")
        attrs = {
            "seed": int(seed or 0),
            "seed2": int(seed2 or 0),
            "aspect_ratio_range": [float(v) for v in (aspect_ratio_range or [0.75, 1.33])],
            "area_range": [float(v) for v in (area_range or [0.05, 1.0])],
            "max_attempts": int(max_attempts or 100),
            "use_image_if_no_bounding_boxes": bool(use_image_if_no_bounding_boxes or False),
        }
        if len(attrs["area_range"]) != 2 or not 0 < attrs["area_range"][0] <= attrs["area_range"][1] <= 1:
            raise ValueError(f"area_range must be 2 values in (0, 1], got {attrs['area_range']}")
        if len(attrs["aspect_ratio_range"]) != 2 or min(attrs["aspect_ratio_range"]) <= 0:
            raise ValueError(
                f"aspect_ratio_range must be 2 positive values, got {attrs['aspect_ratio_range']}"
            )
        if attrs["max_attempts"] <= 0:
            raise ValueError(f"max_attempts must be positive, got {attrs['max_attempts']}")
        op = registry.make_op(
            "SampleDistortedBoundingBoxV2", inputs, attrs, name="SampleDistortedBoundingBoxV2"
        )
        return tuple(op.outputs)
