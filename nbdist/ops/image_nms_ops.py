"""`tf.image`'s other box selections, as TF's CPU kernels: `NonMaxSuppressionV4` (padded),
`NonMaxSuppressionV5` (scores and Soft-NMS), `NonMaxSuppressionWithOverlaps`,
(`CombinedNonMaxSuppression` and `SampleDistortedBoundingBoxV2` are in image_boxes_ops.py).

Greedy selection (TF's ``DoNonMaxSuppressionOp``): candidates above `score_threshold` leave a
priority queue by score (ties: the lower index first); one overlapping a selected box by more
than the threshold is dropped; with Soft-NMS (``sigma > 0``) instead no box is dropped for its
overlap: each selected box scales its score by ``exp(-0.5 * iou**2 / sigma)``, sending it back
to the queue (and out once at or below `score_threshold`).
"""

import heapq

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import get_default_graph
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops._shapes import invalid_argument
from nbdist.ops.concat_slice_ops import stack
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.image_crop_ops import ranked_shape
from nbdist.ops.reshape_ops import reshape
from nbdist.ops.shape_ops import get_static_value

__all__ = [
    "non_max_suppression_overlaps",
    "non_max_suppression_padded",
    "non_max_suppression_with_scores",
]

_F32 = np.float32


def iou_fn(boxes):
    """``iou(i, j)`` of rows of `boxes` (``[n, 4]``, any corner order) in float32, as TF's."""
    b = boxes.astype(_F32)
    ymin, xmin = np.minimum(b[:, 0], b[:, 2]), np.minimum(b[:, 1], b[:, 3])
    ymax, xmax = np.maximum(b[:, 0], b[:, 2]), np.maximum(b[:, 1], b[:, 3])
    area = (ymax - ymin) * (xmax - xmin)

    def iou(i, j):
        if area[i] <= 0 or area[j] <= 0:
            return _F32(0)
        h = max(min(ymax[i], ymax[j]) - max(ymin[i], ymin[j]), _F32(0))
        w = max(min(xmax[i], xmax[j]) - max(xmin[i], xmin[j]), _F32(0))
        inter = _F32(h * w)
        return _F32(inter / _F32(_F32(area[i] + area[j]) - inter))

    return iou


def greedy_nms(similarity, scores, max_output, threshold, score_threshold, sigma=0.0):
    """TF's ``DoNonMaxSuppressionOp``: ``(selected indices, their final scores)``."""
    soft = sigma > 0  # (TF 2's kernel: Soft-NMS only decays, whatever the threshold)
    scale = _F32(-0.5 / sigma) if soft else _F32(0)
    threshold, score_threshold = _F32(threshold), _F32(score_threshold)
    queue = [(-_F32(s), i, 0) for i, s in enumerate(scores) if _F32(s) > score_threshold]
    heapq.heapify(queue)
    selected, selected_scores = [], []
    while len(selected) < max_output and queue:
        neg, index, begin = heapq.heappop(queue)
        score = original = -neg
        hard = False
        for j in range(len(selected) - 1, begin - 1, -1):
            sim = _F32(similarity(index, selected[j]))
            if not soft and sim > threshold:
                hard = True
                break
            if soft:
                score = _F32(score * np.exp(_F32(scale * sim * sim)))
                if score <= score_threshold:
                    break
        if hard:
            continue
        if score == original:
            selected.append(index)
            selected_scores.append(score)
        elif score > score_threshold:
            heapq.heappush(queue, (-score, index, len(selected)))
    return selected, selected_scores


def _check_nms(node, boxes, scores, max_output, threshold, name="iou_threshold"):
    if boxes.ndim != 2 or boxes.shape[1] != 4:
        raise invalid_argument(node, f"{node.op}: boxes must be 2-D [num_boxes, 4], got {list(boxes.shape)}")
    if scores.ndim != 1 or scores.shape[0] != boxes.shape[0]:
        raise invalid_argument(
            node,
            f"{node.op}: scores has incompatible shape {list(scores.shape)} for boxes {list(boxes.shape)}",
        )
    if np.ndim(max_output) != 0:
        raise invalid_argument(
            node, f"{node.op}: max_output_size must be 0-D, got {list(np.shape(max_output))}"
        )
    if not 0 <= float(threshold) <= 1:
        raise invalid_argument(node, f"{node.op}: {name} must be in [0, 1], got {float(threshold)}")
    return int(max_output)


def _padded(values, valid, size, dtype):
    out = np.zeros(max(size, valid), dtype)
    out[:valid] = values[:valid]
    return out


# -- NonMaxSuppressionV4 / V5 -----------------------------------------------------------------------
def _nms_outputs_shape(n_outputs):
    def shape_fn(inputs, attrs):
        size = get_static_value(inputs[2]) if attrs.get("pad_to_max_output_size") else None
        dims = TensorShape([None if size is None else int(size)])
        outs = [(_dtypes.int32, dims)]
        if n_outputs == 3:
            outs.append((inputs[1].dtype, dims))
        return [*outs, (_dtypes.int32, TensorShape([]))]

    return shape_fn


_NMS_RANKS = [
    ("boxes", 2),
    ("scores", 1),
    ("max_output_size", 0),
    ("iou_threshold", 0),
    ("score_threshold", 0),
]
registry.shape("NonMaxSuppressionV4")(ranked_shape("NonMaxSuppressionV4", _NMS_RANKS, _nms_outputs_shape(2)))
registry.shape("NonMaxSuppressionV5")(
    ranked_shape("NonMaxSuppressionV5", [*_NMS_RANKS, ("soft_nms_sigma", 0)], _nms_outputs_shape(3))
)
registry.no_gradient("NonMaxSuppressionV4")
registry.no_gradient("NonMaxSuppressionV5")


@registry.kernel("NonMaxSuppressionV4")
def _nms_v4_kernel(ctx, node, boxes, scores, max_output, iou_threshold, score_threshold):
    size = _check_nms(node, boxes, scores, max_output, iou_threshold)
    sel, _ = greedy_nms(iou_fn(boxes), scores, size, iou_threshold, score_threshold)
    if node.attr.get("pad_to_max_output_size"):
        return _padded(np.asarray(sel, np.int32), len(sel), size, np.int32), np.int32(len(sel))
    return np.asarray(sel, np.int32), np.int32(len(sel))


@registry.kernel("NonMaxSuppressionV5")
def _nms_v5_kernel(ctx, node, boxes, scores, max_output, iou_threshold, score_threshold, sigma):
    size = _check_nms(node, boxes, scores, max_output, iou_threshold)
    if float(sigma) < 0:
        raise invalid_argument(node, f"{node.op}: soft_nms_sigma must be non-negative, got {float(sigma)}")
    sel, kept = greedy_nms(iou_fn(boxes), scores, size, iou_threshold, score_threshold, float(sigma))
    idx, kept = np.asarray(sel, np.int32), np.asarray(kept, scores.dtype)
    if node.attr.get("pad_to_max_output_size"):
        idx, kept = _padded(idx, len(sel), size, np.int32), _padded(kept, len(sel), size, scores.dtype)
    return idx, kept, np.int32(len(sel))


def _nms_inputs(boxes, scores, max_output_size, thresholds):
    out = [
        convert_to_tensor(boxes, dtype=_dtypes.float32, name="boxes"),
        convert_to_tensor(scores, dtype=_dtypes.float32, name="scores"),
        convert_to_tensor(max_output_size, dtype=_dtypes.int32, name="max_output_size"),
    ]
    return out + [convert_to_tensor(v, dtype=_dtypes.float32, name=n) for n, v in thresholds]


def non_max_suppression_with_scores(
    boxes,
    scores,
    max_output_size,
    iou_threshold=0.5,
    score_threshold=float("-inf"),
    soft_nms_sigma=0.0,
    name=None,
):
    """`tf.image.non_max_suppression_with_scores`: ``(selected_indices, selected_scores)`` of
    greedy NMS; with ``soft_nms_sigma > 0`` Soft-NMS (Bodla et al.), whose scores are the
    decayed ones."""
    with get_default_graph().name_scope(name or "non_max_suppression_with_scores"):
        thresholds = (("iou_threshold", iou_threshold), ("score_threshold", score_threshold))
        inputs = _nms_inputs(
            boxes, scores, max_output_size, (*thresholds, ("soft_nms_sigma", soft_nms_sigma))
        )
        op = registry.make_op(
            "NonMaxSuppressionV5", inputs, {"pad_to_max_output_size": False}, name="NonMaxSuppressionV5"
        )
        return op.outputs[0], op.outputs[1]


def non_max_suppression_padded(
    boxes,
    scores,
    max_output_size,
    iou_threshold=0.5,
    score_threshold=float("-inf"),
    pad_to_max_output_size=False,
    name=None,
    sorted_input=False,
    canonicalized_coordinates=False,
    tile_size=512,
):
    """`tf.image.non_max_suppression_padded`: ``(selected_indices, valid_outputs)``; with
    `pad_to_max_output_size` the indices padded with 0 to `max_output_size`, and `boxes` may
    then be a batch (``[..., num_boxes, 4]``, static leading dimensions; one selection per item).
    `sorted_input`, `canonicalized_coordinates` and `tile_size` are TF's speed hints: the
    result is the same without them.

    Raises:
        ValueError: batched boxes without `pad_to_max_output_size`.
    """
    del sorted_input, canonicalized_coordinates, tile_size
    boxes = convert_to_tensor(boxes, dtype=_dtypes.float32, name="boxes")
    scores = convert_to_tensor(scores, dtype=_dtypes.float32, name="scores")
    rank = boxes.shape.ndims
    if not pad_to_max_output_size and rank is not None and rank > 2:
        raise ValueError(
            f"'pad_to_max_output_size' (value {pad_to_max_output_size}) must be True for batched input"
        )
    with get_default_graph().name_scope(name or "non_max_suppression_padded"):
        attrs = {"pad_to_max_output_size": bool(pad_to_max_output_size)}
        thresholds = (("iou_threshold", iou_threshold), ("score_threshold", score_threshold))
        if rank == 2:
            inputs = _nms_inputs(boxes, scores, max_output_size, thresholds)
            op = registry.make_op("NonMaxSuppressionV4", inputs, attrs, name="NonMaxSuppressionV4")
            return op.outputs[0], op.outputs[1]
        lead = boxes.shape.dims[:-2] if rank is not None else None
        if lead is None or None in lead:
            raise ValueError(
                f"non_max_suppression_padded (nbdist): batch dimensions of {boxes.shape} must be static"
            )
        n = int(np.prod(lead))
        flat_boxes, flat_scores = reshape(boxes, [n, -1, 4]), reshape(scores, [n, -1])
        flat_boxes, flat_scores = [flat_boxes[i] for i in range(n)], [flat_scores[i] for i in range(n)]
        picks, valid = [], []
        for b, s in zip(flat_boxes, flat_scores, strict=True):
            op = registry.make_op(
                "NonMaxSuppressionV4",
                _nms_inputs(b, s, max_output_size, thresholds),
                attrs,
                name="NonMaxSuppressionV4",
            )
            picks.append(op.outputs[0])
            valid.append(op.outputs[1])
        size = int(get_static_value(convert_to_tensor(max_output_size, dtype=_dtypes.int32)))
        return reshape(stack(picks), [*lead, size]), reshape(stack(valid), lead)


# -- NonMaxSuppressionWithOverlaps ------------------------------------------------------------------
registry.shape("NonMaxSuppressionWithOverlaps")(
    ranked_shape(
        "NonMaxSuppressionWithOverlaps",
        [
            ("overlaps", 2),
            ("scores", 1),
            ("max_output_size", 0),
            ("overlap_threshold", 0),
            ("score_threshold", 0),
        ],
        lambda inputs, attrs: [(_dtypes.int32, TensorShape([None]))],
    )
)
registry.no_gradient("NonMaxSuppressionWithOverlaps")


@registry.kernel("NonMaxSuppressionWithOverlaps")
def _nms_overlaps_kernel(ctx, node, overlaps, scores, max_output, overlap_threshold, score_threshold):
    if overlaps.ndim != 2 or overlaps.shape[0] != overlaps.shape[1]:
        raise invalid_argument(
            node, f"{node.op}: overlaps must be a square 2-D matrix, got {list(overlaps.shape)}"
        )
    if scores.ndim != 1 or scores.shape[0] != overlaps.shape[0]:
        raise invalid_argument(
            node,
            f"{node.op}: scores has incompatible shape {list(scores.shape)} for overlaps "
            f"{list(overlaps.shape)}",
        )
    sel, _ = greedy_nms(
        lambda i, j: overlaps[i, j], scores, int(max_output), overlap_threshold, score_threshold
    )
    return np.asarray(sel, np.int32)


def non_max_suppression_overlaps(
    overlaps, scores, max_output_size, overlap_threshold=0.5, score_threshold=float("-inf"), name=None
):
    """`tf.image.non_max_suppression_overlaps`: greedy NMS over a precomputed ``[n, n]``
    `overlaps` matrix (``overlaps[candidate, selected]`` above `overlap_threshold` suppresses)."""
    with get_default_graph().name_scope(name or "non_max_suppression_overlaps"):
        inputs = [
            convert_to_tensor(overlaps, dtype=_dtypes.float32, name="overlaps"),
            convert_to_tensor(scores, dtype=_dtypes.float32, name="scores"),
            convert_to_tensor(max_output_size, dtype=_dtypes.int32, name="max_output_size"),
            convert_to_tensor(overlap_threshold, dtype=_dtypes.float32, name="overlap_threshold"),
            convert_to_tensor(score_threshold, dtype=_dtypes.float32, name="score_threshold"),
        ]
        op_type = "NonMaxSuppressionWithOverlaps"
        return registry.make_op(op_type, inputs, name=op_type).outputs[0]
