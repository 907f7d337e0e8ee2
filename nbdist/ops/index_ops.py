"""Splitting and joining tensors by index: `unique`, `dynamic_partition`, `dynamic_stitch`.

They are what a lookup in a sharded embedding is made of (`tf.nn.embedding_lookup` on a
`PartitionedVariable`): the ids are partitioned by shard, each shard gathers its rows where
it lives, and `dynamic_stitch` puts the rows back in the ids' order. `unique` is how an
optimizer sums the duplicate rows of a sparse gradient before a sparse update.
Each op's shape function, kernel and gradient sit side by side, as TF defines them.
"""

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops._shapes import int_tensor, invalid_argument
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.math_ops import range as _range
from nbdist.ops.reduction_ops import gather
from nbdist.ops.reshape_ops import reshape
from nbdist.ops.shape_ops import shape, size

__all__ = ["dynamic_partition", "dynamic_stitch", "unique"]  # parallel_dynamic_stitch is not at tf.*


# -- Unique -----------------------------------------------------------------------------------------
@registry.shape("Unique")
def _unique_shape(inputs, attrs):
    x = inputs[0]
    if x.shape.ndims not in (None, 1):
        raise ValueError(f"tf.unique: x must be 1-D, got {x.name} of shape {x.shape}")
    return [(x.dtype, TensorShape([None])), (attrs["out_idx"], x.shape)]


@registry.kernel("Unique")
def _unique_kernel(ctx, node, x):
    if np.ndim(x) != 1:
        raise invalid_argument(node, f"unique expects a 1-D vector, got shape {list(np.shape(x))}")
    values, first, inverse = np.unique(x, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")  # TF keeps the order of first occurrence
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return values[order], rank[inverse].astype(node.attr["out_idx"].np)


registry.no_gradient("Unique")


def unique(x, out_idx=_dtypes.int32, name=None):
    """`tf.unique`: ``(y, idx)`` with `y` the distinct values of `x` in order of first
    occurrence and ``x == gather(y, idx)``."""
    x = convert_to_tensor(x)
    op = registry.make_op("Unique", [x], {"out_idx": _dtypes.as_dtype(out_idx)}, name=name)
    return op.outputs[0], op.outputs[1]


# -- DynamicPartition --------------------------------------------------------------------------------
@registry.shape("DynamicPartition")
def _partition_shape(inputs, attrs):
    data, partitions = inputs
    if data.shape.ndims is None or partitions.shape.ndims is None:
        return [(data.dtype, TensorShape(None))] * attrs["num_partitions"]
    if not data.shape[: partitions.shape.ndims].is_compatible_with(partitions.shape):
        raise ValueError(
            f"tf.dynamic_partition: partitions shape {partitions.shape} must be a prefix of "
            f"data shape {data.shape}"
        )
    rest = data.shape.as_list()[partitions.shape.ndims :]
    return [(data.dtype, TensorShape([None, *rest]))] * attrs["num_partitions"]


@registry.kernel("DynamicPartition")
def _partition_kernel(ctx, node, data, partitions):
    n = node.attr["num_partitions"]
    data = np.asarray(data)
    if data.shape[: np.ndim(partitions)] != np.shape(partitions):
        raise invalid_argument(
            node,
            f"partitions shape {list(np.shape(partitions))} is not a prefix of data shape {list(data.shape)}",
        )
    bad = (partitions < 0) | (partitions >= n)
    if np.any(bad):
        pos = tuple(int(i) for i in np.argwhere(bad)[0])
        raise invalid_argument(node, f"partitions{list(pos)} = {int(partitions[pos])} is not in [0, {n})")
    return tuple(data[partitions == p] for p in range(n))


@registry.gradient("DynamicPartition")
def _partition_grad(op, *grads):
    data, partitions = op.inputs
    original = reshape(_range(size(partitions)), shape(partitions))
    positions = dynamic_partition(original, partitions, op.get_attr("num_partitions"))
    return [reshape(parallel_dynamic_stitch(positions, grads), shape(data)), None]


def dynamic_partition(data, partitions, num_partitions, name=None):
    """`tf.dynamic_partition`: `num_partitions` tensors; output ``p`` holds the slices
    ``data[i]`` with ``partitions[i] == p``, in order.

    Raises:
        ValueError: `num_partitions` < 1.
    """
    if int(num_partitions) < 1:
        raise ValueError(f"tf.dynamic_partition: num_partitions must be at least 1, got {num_partitions!r}")
    inputs = [convert_to_tensor(data), int_tensor(partitions, "partitions")]
    op = registry.make_op("DynamicPartition", inputs, {"num_partitions": int(num_partitions)}, name=name)
    return list(op.outputs)


# -- DynamicStitch -----------------------------------------------------------------------------------
def _stitch_shape(inputs, attrs):
    n = len(inputs) // 2
    indices, data = inputs[:n], inputs[n:]
    first, d0 = indices[0], data[0]
    if first.shape.ndims is None or d0.shape.ndims is None:
        return [(d0.dtype, TensorShape(None))]
    return [(d0.dtype, TensorShape([None, *d0.shape.as_list()[first.shape.ndims :]]))]


def _stitch_kernel(ctx, node, *args):
    n = len(args) // 2
    indices, data = args[:n], [np.asarray(d) for d in args[n:]]
    total = 1 + max((int(np.max(i)) for i in indices if np.size(i)), default=-1)
    slice_shape = data[0].shape[np.ndim(indices[0]) :]
    out = np.zeros((total, *slice_shape), dtype=data[0].dtype)
    for m, (idx, d) in enumerate(zip(indices, data)):
        if d.shape[: np.ndim(idx)] != np.shape(idx):
            raise invalid_argument(
                node,
                f"data[{m}] shape {list(d.shape)} does not start with "
                f"indices[{m}] shape {list(np.shape(idx))}",
            )
        if np.any(idx < 0):
            raise invalid_argument(node, f"indices[{m}] has a negative index: {np.asarray(idx).tolist()}")
        out[np.ravel(idx)] = d.reshape((-1, *slice_shape))  # later inputs win, as TF
    return out


def _stitch_grad(op, grad):
    n = len(op.inputs) // 2
    return [None] * n + [gather(grad, op.inputs[i]) for i in range(n)]


for _t in ("DynamicStitch", "ParallelDynamicStitch"):
    registry.shape(_t)(_stitch_shape)
    registry.kernel(_t)(_stitch_kernel)
    registry.gradient(_t)(_stitch_grad)


def _stitch(op_type, indices, data, name):
    indices = [int_tensor(i, "indices") for i in indices]
    data = [convert_to_tensor(d) for d in data]
    if len(indices) != len(data) or not indices:
        raise ValueError(f"tf.{op_type}: needs as many indices as data tensors (and one at least)")
    return registry.make_op(op_type, indices + data, {"N": len(indices)}, name=name).outputs[0]


def dynamic_stitch(indices, data, name=None):
    """`tf.dynamic_stitch`: ``merged[indices[m][i]] = data[m][i]``; the rows of ``max(indices) + 1``."""
    return _stitch("DynamicStitch", list(indices), list(data), name)


def parallel_dynamic_stitch(indices, data, name=None):
    """`tf.parallel_dynamic_stitch`: `dynamic_stitch` (which duplicate index wins is unspecified in TF)."""
    return _stitch("ParallelDynamicStitch", list(indices), list(data), name)
