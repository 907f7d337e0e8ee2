"""`tf.nn.top_k` (`TopKV2`) and `tf.nn.in_top_k` (`InTopKV2`): constructor, shape, kernel and
gradient side by side.

Ties go to the lower index, as TF's kernel. `top_k`'s gradient scatters the values' gradient
back to the positions they came from (`UnsortedSegmentSum` over the flattened input, as TF's
`_TopKGrad`); `in_top_k` is not differentiable.
"""

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import math_ops, registry
from nbdist.ops._shapes import int_tensor, invalid_argument
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.reduction_ops import unsorted_segment_sum
from nbdist.ops.reshape_ops import reshape
from nbdist.ops.shape_ops import get_static_value, shape, size

__all__ = ["in_top_k", "top_k"]


# -- top_k ------------------------------------------------------------------------------------------------
@registry.shape("TopKV2")
def _top_k_shape(inputs, attrs):
    x, k_t = inputs
    k = get_static_value(k_t)
    if x.shape.ndims == 0:
        raise ValueError(f"tf.nn.top_k: input {x.name} must have rank >= 1, got a scalar")
    if k is not None and k < 0:
        raise ValueError(f"tf.nn.top_k: k must be >= 0, got {int(k)}")
    if x.shape.ndims is None:
        return [(x.dtype, TensorShape(None)), (attrs["index_type"], TensorShape(None))]
    last = x.shape[-1]
    if None not in (k, last) and k > last:
        raise ValueError(f"tf.nn.top_k: input {x.name} must have at least k={int(k)} columns, has {last}")
    out = TensorShape([*x.shape.as_list()[:-1], None if k is None else int(k)])
    return [(x.dtype, out), (attrs["index_type"], out)]


def _descending_keys(x):
    """Keys whose ascending stable order is `x`'s descending order (ties: lower index first)."""
    if np.issubdtype(x.dtype, np.integer):
        return np.invert(x.astype(np.int64))  # ~x = -x - 1: order-reversing, never overflows
    return np.negative(x)


@registry.kernel("TopKV2")
def _top_k_kernel(ctx, node, x, k):
    k = int(k)
    if np.ndim(x) < 1 or k < 0 or k > np.shape(x)[-1]:
        raise invalid_argument(
            node, f"input must have at least k={k} columns (and rank >= 1), got shape {list(np.shape(x))}"
        )
    indices = np.argsort(_descending_keys(x), axis=-1, kind="stable")[..., :k]
    values = np.take_along_axis(x, indices, axis=-1)
    return values, indices.astype(node.attr["index_type"].np)


@registry.gradient("TopKV2")
def _top_k_grad(op, grad_values, grad_indices):
    """The values' gradient added at their indices in the flattened input."""
    x, indices = op.inputs[0], op.outputs[1]
    k = shape(indices)[-1]
    row = math_ops.range(size(indices)) // k  # (empty when k is 0)
    flat = reshape(math_ops.cast(indices, _dtypes.int32), [-1]) + row * shape(x)[-1]
    scattered = unsorted_segment_sum(reshape(grad_values, [-1]), flat, size(x))
    return [reshape(scattered, shape(x)), None]


def top_k(input, k=1, sorted=True, index_type=_dtypes.int32, name=None):  # noqa: A002 - TF's argument names
    """`tf.nn.top_k`: the `k` largest entries of the last axis, and their indices.

    Returns:
        ``(values, indices)``, both ``input.shape[:-1] + [k]``; sorted descending (also for
        ``sorted=False``, which TF leaves unspecified). Equal values come lower index first.

    Raises:
        ValueError: for ``k < 0`` or ``k`` above the last dimension, when known statically.
    """
    x = convert_to_tensor(input)
    attrs = {"sorted": bool(sorted), "index_type": _dtypes.as_dtype(index_type)}
    op = registry.make_op("TopKV2", [x, int_tensor(k, "k")], attrs, name=name)
    return op.outputs[0], op.outputs[1]


# -- in_top_k ---------------------------------------------------------------------------------------------
@registry.shape("InTopKV2")
def _in_top_k_shape(inputs, attrs):
    predictions, targets, _ = inputs
    if predictions.shape.ndims not in (None, 2):
        raise ValueError(f"tf.nn.in_top_k: predictions must be 2-D, got shape {predictions.shape}")
    if targets.shape.ndims not in (None, 1):
        raise ValueError(f"tf.nn.in_top_k: targets must be 1-D, got shape {targets.shape}")
    batch = predictions.shape[0] if predictions.shape.ndims else None
    if batch is None and targets.shape.ndims:
        batch = targets.shape[0]
    return [(_dtypes.bool, TensorShape([batch]))]


@registry.kernel("InTopKV2")
def _in_top_k_kernel(ctx, node, predictions, targets, k):
    """TF's rule: a target is in the top k when fewer than k predictions are strictly larger;
    a target out of range, or a non-finite prediction in its row, gives False."""
    if np.ndim(predictions) != 2 or np.ndim(targets) != 1 or len(targets) != len(predictions):
        raise invalid_argument(
            node,
            f"predictions must be 2-D and targets 1-D of the same first dimension, got "
            f"{list(np.shape(predictions))} and {list(np.shape(targets))}",
        )
    classes = np.shape(predictions)[1]
    valid = (targets >= 0) & (targets < classes)
    target_pred = predictions[np.arange(len(targets)), np.where(valid, targets, 0)]
    more_probable = np.sum(predictions > target_pred[:, None], axis=1)
    finite = np.all(np.isfinite(predictions), axis=1)
    return valid & finite & (more_probable < int(k))


registry.no_gradient("InTopKV2")


def in_top_k(predictions, targets, k, name=None):
    """`tf.nn.in_top_k`: whether each ``targets[i]`` is among the `k` largest of ``predictions[i]``.

    Args:
        predictions: float32 ``[batch, classes]``.
        targets: int32 or int64 ``[batch]`` class ids.
        k: the number of top entries to look at.

    Returns:
        A bool ``[batch]`` Tensor. Ties count in the target's favour; a target out of range or a
        row with a non-finite prediction gives False (as TF).
    """
    predictions = convert_to_tensor(predictions)
    targets = convert_to_tensor(targets, preferred_dtype=_dtypes.int32)
    if not targets.dtype.is_integer:
        raise TypeError(f"tf.nn.in_top_k: targets must be int32 or int64, got {targets.dtype.name}")
    k = math_ops.cast(k, targets.dtype) if hasattr(k, "dtype") else convert_to_tensor(k, dtype=targets.dtype)
    return registry.make_op("InTopKV2", [predictions, targets, k], name=name).outputs[0]
