"""Segment reductions: the sorted `tf.segment_sum` / `_mean` / `_max` / `_min` / `_prod` (ids a
non-decreasing vector over `data`'s rows; as many segments as the last id + 1) and the unsorted
`tf.unsorted_segment_max` / `_min` / `_prod` (ids any prefix of `data`'s shape, negative ids
dropped; `unsorted_segment_sum` is in `reduction_ops`), with `unsorted_segment_mean` /
`_sqrt_n` composed from sums as TF does; and the counting ops built on them, `tf.bincount` and
`tf.confusion_matrix`. Shapes, numpy kernels (a ufunc's ``at``) and TF's gradients side by side.

Empty segments: 0 for the sorted ops (1 for the product), as TF; the unsorted max and min
give the dtype's lowest and highest value, their product 1.
"""

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import math_ops, registry
from nbdist.ops._shapes import int_tensor, invalid_argument
from nbdist.ops.concat_slice_ops import concat
from nbdist.ops.constant_op import constant, convert_to_tensor
from nbdist.ops.reduction_ops import gather, gather_drop_negatives, reduce_max, unsorted_segment_sum
from nbdist.ops.reshape_ops import reshape
from nbdist.ops.shape_ops import get_static_value

__all__ = ["bincount", "confusion_matrix", "segment_max", "segment_mean", "segment_min", "segment_prod"]
__all__ += ["segment_sum", "unsorted_segment_max", "unsorted_segment_mean", "unsorted_segment_min"]
__all__ += ["unsorted_segment_prod", "unsorted_segment_sqrt_n"]


def _lowest(dtype):
    return np.finfo(dtype).min if np.issubdtype(dtype, np.floating) else np.iinfo(dtype).min


def _highest(dtype):
    return np.finfo(dtype).max if np.issubdtype(dtype, np.floating) else np.iinfo(dtype).max


# kind -> (ufunc, the initial value of a segment as a function of the dtype)
_REDUCERS = {
    "Sum": (np.add, lambda dtype: 0),
    "Prod": (np.multiply, lambda dtype: 1),
    "Max": (np.maximum, _lowest),
    "Min": (np.minimum, _highest),
    "Mean": (np.add, lambda dtype: 0),
}


def _reduce_segments(kind, data, ids, num):
    """Segment `kind` of `data` by `ids` (a prefix of its shape) into `num` rows; and the counts."""
    data = np.asarray(data)
    ufunc, initial = _REDUCERS[kind]
    out = np.full((num, *data.shape[ids.ndim :]), initial(data.dtype), dtype=data.dtype)
    keep = ids >= 0
    ufunc.at(out, ids[keep], data[keep])
    counts = np.bincount(ids[keep], minlength=num)
    return out, counts.reshape((num,) + (1,) * (out.ndim - 1))


# -- sorted segments ----------------------------------------------------------------------------------
def _sorted_shape(inputs, attrs):
    data, ids = inputs
    if data.shape.ndims is None:
        return [(data.dtype, TensorShape(None))]
    if ids.shape.ndims not in (None, 1):
        raise ValueError(f"segment_ids {ids.name} must be a vector, got shape {ids.shape}")
    known = get_static_value(ids)
    rows = (int(known[-1]) + 1 if len(known) else 0) if known is not None else None
    return [(data.dtype, TensorShape([rows, *data.shape.as_list()[1:]]))]


def _sorted_kernel(kind):
    def kernel(ctx, node, data, ids):
        if np.ndim(ids) != 1 or np.ndim(data) < 1 or len(ids) != np.shape(data)[0]:
            raise invalid_argument(
                node,
                f"segment_ids of shape {list(np.shape(ids))} must be a vector as long as data's first "
                f"dimension (data shape {list(np.shape(data))})",
            )
        if len(ids) and (ids[0] < 0 or np.any(np.diff(ids) < 0)):
            raise invalid_argument(node, f"segment ids must be non-negative and sorted, got {ids.tolist()}")
        num = int(ids[-1]) + 1 if len(ids) else 0
        out, counts = _reduce_segments(kind, data, ids, num)
        if kind == "Mean":
            out = np.asarray(out / np.maximum(counts, 1)).astype(out.dtype)
        elif kind in ("Max", "Min"):
            out = np.where(counts > 0, out, np.zeros((), out.dtype))
        return out

    return kernel


for _kind in ("Sum", "Mean", "Max", "Min", "Prod"):
    registry.shape(f"Segment{_kind}")(_sorted_shape)
    registry.kernel(f"Segment{_kind}")(_sorted_kernel(_kind))


def _segment(kind, data, segment_ids, name):
    inputs = [convert_to_tensor(data), int_tensor(segment_ids, "segment_ids")]
    return registry.make_op(f"Segment{kind}", inputs, name=name).outputs[0]


def segment_sum(data, segment_ids, name=None):
    """`tf.segment_sum`: ``out[i] = sum(data[j] for j where segment_ids[j] == i)``, ids sorted."""
    return _segment("Sum", data, segment_ids, name)


def segment_mean(data, segment_ids, name=None):
    """`tf.segment_mean`: the mean of each segment of `data`'s rows (ids sorted; empty: 0)."""
    return _segment("Mean", data, segment_ids, name)


def segment_max(data, segment_ids, name=None):
    """`tf.segment_max`: the maximum of each segment (ids sorted; empty: 0)."""
    return _segment("Max", data, segment_ids, name)


def segment_min(data, segment_ids, name=None):
    """`tf.segment_min`: the minimum of each segment (ids sorted; empty: 0)."""
    return _segment("Min", data, segment_ids, name)


def segment_prod(data, segment_ids, name=None):
    """`tf.segment_prod`: the product of each segment (ids sorted; empty: 1)."""
    return _segment("Prod", data, segment_ids, name)


@registry.gradient("SegmentSum")
def _segment_sum_grad(op, grad):
    return [gather(grad, op.inputs[1]), None]


@registry.gradient("SegmentMean")
def _segment_mean_grad(op, grad):
    data, ids = op.inputs
    counts = segment_sum(math_ops.ones_like(data), ids)  # (0 only for empty segments: never gathered)
    return [gather(grad / counts, ids), None]


def _segment_min_max_grad(op, grad):
    """TF's: the gradient is shared equally by the elements equal to their segment's result."""
    data, ids = op.inputs
    is_selected = math_ops.equal(data, gather(op.outputs[0], ids))
    num_selected = segment_sum(math_ops.cast(is_selected, grad.dtype), ids)
    gathered = gather(grad / num_selected, ids)
    return [math_ops.where(is_selected, gathered, math_ops.zeros_like(gathered)), None]


registry.gradient("SegmentMax")(_segment_min_max_grad)
registry.gradient("SegmentMin")(_segment_min_max_grad)


def _prod_partials(data, gather_rows, segment_sum_fn, segment_prod_fn, output, grad):
    """TF's product gradient without dividing by a zero: ``d out / d data`` times the gradient.

    A segment with two zeros or more has a zero gradient; with one zero, only the zero element
    has one: the product of the others.
    """
    is_zero = math_ops.equal(data, math_ops.zeros_like(data))
    num_zeros = segment_sum_fn(math_ops.cast(is_zero, _dtypes.int32))
    grad = math_ops.where(num_zeros > 1, math_ops.zeros_like(grad), grad)
    non_zero_data = math_ops.where(is_zero, math_ops.ones_like(data), data)
    non_zero_prod = segment_prod_fn(non_zero_data)
    partial = math_ops.where(is_zero, gather_rows(non_zero_prod), gather_rows(output) / non_zero_data)
    return gather_rows(grad) * partial


@registry.gradient("SegmentProd")
def _segment_prod_grad(op, grad):
    data, ids = op.inputs
    partial = _prod_partials(
        data,
        lambda rows: gather(rows, ids),
        lambda x: segment_sum(x, ids),
        lambda x: segment_prod(x, ids),
        op.outputs[0],
        grad,
    )
    return [partial, None]


# -- unsorted segments ----------------------------------------------------------------------------------
def _unsorted_shape(inputs, attrs):
    data, ids, num_t = inputs
    num = get_static_value(num_t)
    if data.shape.ndims is None or ids.shape.ndims is None:
        return [(data.dtype, TensorShape(None))]
    if not data.shape[: ids.shape.ndims].is_compatible_with(ids.shape):
        raise ValueError(f"segment_ids shape {ids.shape} must be a prefix of data shape {data.shape}")
    rest = data.shape.as_list()[ids.shape.ndims :]
    return [(data.dtype, TensorShape([None if num is None else int(num), *rest]))]


def _unsorted_kernel(kind):
    def kernel(ctx, node, data, ids, num):
        num = int(num)
        if np.shape(data)[: np.ndim(ids)] != np.shape(ids):
            raise invalid_argument(
                node,
                f"segment_ids shape {list(np.shape(ids))} is not a prefix of data shape "
                f"{list(np.shape(data))}",
            )
        if np.any(ids >= num):
            raise invalid_argument(
                node, f"segment_ids {np.asarray(ids).tolist()} must be < num_segments {num}"
            )
        return _reduce_segments(kind, data, np.asarray(ids), num)[0]

    return kernel


for _kind in ("Max", "Min", "Prod"):
    registry.shape(f"UnsortedSegment{_kind}")(_unsorted_shape)
    registry.kernel(f"UnsortedSegment{_kind}")(_unsorted_kernel(_kind))


def _unsorted(kind, data, segment_ids, num_segments, name):
    inputs = [
        convert_to_tensor(data),
        int_tensor(segment_ids, "segment_ids"),
        int_tensor(num_segments, "num_segments"),
    ]
    return registry.make_op(f"UnsortedSegment{kind}", inputs, name=name).outputs[0]


def unsorted_segment_max(data, segment_ids, num_segments, name=None):
    """`tf.unsorted_segment_max`: each segment's maximum (empty: the dtype's lowest value)."""
    return _unsorted("Max", data, segment_ids, num_segments, name)


def unsorted_segment_min(data, segment_ids, num_segments, name=None):
    """`tf.unsorted_segment_min`: each segment's minimum (empty: the dtype's highest value)."""
    return _unsorted("Min", data, segment_ids, num_segments, name)


def unsorted_segment_prod(data, segment_ids, num_segments, name=None):
    """`tf.unsorted_segment_prod`: each segment's product (empty: 1)."""
    return _unsorted("Prod", data, segment_ids, num_segments, name)


def _segment_counts(data, segment_ids, num_segments):
    """How many ids name each segment, at least 1, shaped to divide the segment sums (TF's)."""
    data = convert_to_tensor(data)
    ids = int_tensor(segment_ids, "segment_ids")
    ones = math_ops.cast(math_ops.ones_like(ids), data.dtype)
    n = unsorted_segment_sum(ones, ids, num_segments)
    extra = data.shape.ndims - ids.shape.ndims if None not in (data.shape.ndims, ids.shape.ndims) else None
    if extra is None:
        raise ValueError(f"the ranks of data {data.name} and segment_ids {ids.name} must be known")
    num = reshape(int_tensor(num_segments, "num_segments"), [1])
    n = reshape(n, concat([num, constant([1] * extra, dtype=num.dtype)], 0)) if extra else n
    return math_ops.maximum(n, math_ops.ones_like(n))


def unsorted_segment_mean(data, segment_ids, num_segments, name=None):
    """`tf.unsorted_segment_mean`: each segment's sum over its count (empty: 0)."""
    total = unsorted_segment_sum(data, segment_ids, num_segments)
    return math_ops.truediv(total, _segment_counts(data, segment_ids, num_segments), name=name)


def unsorted_segment_sqrt_n(data, segment_ids, num_segments, name=None):
    """`tf.unsorted_segment_sqrt_n`: each segment's sum over the square root of its count (empty: 0)."""
    total = unsorted_segment_sum(data, segment_ids, num_segments)
    return math_ops.truediv(total, math_ops.sqrt(_segment_counts(data, segment_ids, num_segments)), name=name)


def _unsorted_min_max_grad(op, grad):
    data, ids, num = op.inputs
    gathered_out = gather_drop_negatives(op.outputs[0], ids)
    is_positive = math_ops.greater(gather_drop_negatives(math_ops.ones_like(op.outputs[0]), ids), 0)
    is_selected = math_ops.logical_and(math_ops.equal(data, gathered_out), is_positive)
    num_selected = unsorted_segment_sum(math_ops.cast(is_selected, grad.dtype), ids, num)
    gathered = gather_drop_negatives(grad / num_selected, ids)
    return [math_ops.where(is_selected, gathered, math_ops.zeros_like(gathered)), None, None]


registry.gradient("UnsortedSegmentMax")(_unsorted_min_max_grad)
registry.gradient("UnsortedSegmentMin")(_unsorted_min_max_grad)


@registry.gradient("UnsortedSegmentProd")
def _unsorted_segment_prod_grad(op, grad):
    data, ids, num = op.inputs
    clipped = math_ops.maximum(ids, math_ops.zeros_like(ids))
    partial = _prod_partials(
        data,
        lambda rows: gather(rows, clipped),
        lambda x: unsorted_segment_sum(x, ids, num),
        lambda x: unsorted_segment_prod(x, ids, num),
        op.outputs[0],
        grad,
    )
    is_positive = math_ops.greater(gather_drop_negatives(math_ops.ones_like(op.outputs[0]), ids), 0)
    return [math_ops.where(is_positive, partial, math_ops.zeros_like(partial)), None, None]


# -- bincount, confusion_matrix --------------------------------------------------------------------------
@registry.shape("Bincount")
def _bincount_shape(inputs, attrs):
    size = get_static_value(inputs[1])
    return [(inputs[2].dtype, TensorShape([None if size is None else int(size)]))]


@registry.kernel("Bincount")
def _bincount_kernel(ctx, node, arr, size, weights):
    arr, weights, size = np.ravel(arr), np.ravel(weights), int(size)
    if np.any(arr < 0):
        raise invalid_argument(node, f"Input arr must be non-negative, got {arr.tolist()}")
    keep = arr < size  # (values at or above size are dropped, as TF's maxlength)
    counts = np.bincount(arr[keep], weights=weights[keep] if weights.size else None, minlength=size)
    return counts.astype(np.asarray(weights).dtype)


registry.no_gradient("Bincount")


def bincount(arr, weights=None, minlength=None, maxlength=None, dtype=_dtypes.int32):
    """`tf.bincount`: how many times each value ``0 .. max(arr)`` occurs in `arr` (or its weights' sum).

    Args:
        arr: non-negative int32 values.
        weights: as many as `arr` (the output then has their dtype), or None to count.
        minlength, maxlength: at least / at most this many bins (values beyond are dropped).
        dtype: the counts' dtype without `weights`.
    """
    arr = int_tensor(arr, "arr")
    flat = reshape(arr, [-1])
    size = reduce_max(concat([flat, constant([-1], dtype=arr.dtype)], 0)) + 1  # (0 for an empty arr)
    if minlength is not None:
        size = math_ops.maximum(int_tensor(minlength, "minlength"), size)
    if maxlength is not None:
        size = math_ops.minimum(int_tensor(maxlength, "maxlength"), size)
    weights = constant([], dtype=dtype) if weights is None else reshape(convert_to_tensor(weights), [-1])
    return registry.make_op("Bincount", [flat, size, weights], name="bincount").outputs[0]


def confusion_matrix(labels, predictions, num_classes=None, dtype=_dtypes.int32, name=None, weights=None):
    """`tf.confusion_matrix`: ``m[i, j]`` counts (or sums `weights` of) the examples of label `i`
    predicted as `j`; `num_classes` defaults to the largest label or prediction + 1.
    """
    labels = math_ops.cast(reshape(convert_to_tensor(labels), [-1]), _dtypes.int64)
    predictions = math_ops.cast(reshape(convert_to_tensor(predictions), [-1]), _dtypes.int64)
    known = None
    if num_classes is None:
        num_classes = math_ops.maximum(reduce_max(predictions), reduce_max(labels)) + 1
    else:
        num_classes = int_tensor(num_classes, "num_classes")
        known = get_static_value(num_classes)
        num_classes = math_ops.cast(num_classes, _dtypes.int64)
    values = (
        math_ops.ones_like(predictions, dtype=dtype)
        if weights is None
        else reshape(convert_to_tensor(weights, dtype=dtype), [-1])
    )
    flat = unsorted_segment_sum(values, labels * num_classes + predictions, num_classes * num_classes)
    if known is not None:  # TF's static [n, n]
        return reshape(flat, [int(known), int(known)], name=name)
    side = reshape(math_ops.cast(num_classes, _dtypes.int32), [1])
    return reshape(flat, concat([side, side], 0), name=name)
