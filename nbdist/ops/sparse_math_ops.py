"""`tf.sparse`'s arithmetic and its TF 1.x top-level names: reductions (dense and sparse
results), `sparse_tensor_dense_matmul` (differentiable in the values and the dense operand,
as TF's), `sparse_softmax`, and the sparse segment reductions over dense data
(`sparse_segment_sum` / `mean` / `sqrt_n`, differentiable in the data)."""

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops._shapes import invalid_argument, unknown_dims
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.reduction_ops import gather, reduce_sum
from nbdist.ops.reshape_ops import transpose
from nbdist.ops.shape_ops import get_static_value
from nbdist.ops.shape_ops import shape as tf_shape
from nbdist.ops.sparse_ops import as_sparse, row_major, sparse_specs
from nbdist.ops.sparse_tensor import SparseTensor

__all__ = [
    "sparse_reduce_max",
    "sparse_reduce_max_sparse",
    "sparse_reduce_sum",
    "sparse_reduce_sum_sparse",
    "sparse_segment_mean",
    "sparse_segment_sqrt_n",
    "sparse_segment_sum",
    "sparse_softmax",
    "sparse_tensor_dense_matmul",
]


# -- reductions ------------------------------------------------------------------------------------
def _groups(node, indices, values, shape, axes):
    """The kept dimensions, the group of each entry and the groups present (row-major)."""
    rank = len(shape)
    axes = sorted({int(a) % rank for a in np.asarray(axes).reshape(-1)}) if np.size(axes) else []
    if any(not -rank <= int(a) < rank for a in np.asarray(axes).reshape(-1)):
        raise invalid_argument(node, f"reduction axes {axes} are out of range for rank {rank}")
    kept = [d for d in range(rank) if d not in axes]
    keys = indices.reshape(len(values), rank)[:, kept]
    present, group = np.unique(keys, axis=0, return_inverse=True)
    return kept, present, group.reshape(-1), axes


def _reduce(node, values, group, n):
    out = np.zeros(n, values.dtype)
    if node.op.startswith("SparseReduceSum"):
        np.add.at(out, group, values)
    else:
        out[:] = np.full(n, -np.inf if values.dtype.kind == "f" else np.iinfo(values.dtype).min, values.dtype)
        np.maximum.at(out, group, values)
    return out


def _reduce_shape(inputs, attrs):
    rank = inputs[0].shape[1] if inputs[0].shape.ndims == 2 else None
    axes = get_static_value(inputs[3])
    if rank is None or axes is None:
        return unknown_dims(inputs[1].dtype, rank if attrs["keep_dims"] else None)
    n_axes = len({int(a) % rank for a in np.asarray(axes).reshape(-1)}) if np.size(axes) else rank
    return unknown_dims(inputs[1].dtype, rank if attrs["keep_dims"] else rank - n_axes)


def _reduce_kernel(ctx, node, indices, values, shape, axes):
    if not np.size(axes):
        axes = np.arange(len(shape))
    kept, present, group, axes = _groups(node, indices, values, shape, axes)
    out = np.zeros([int(shape[d]) for d in kept], values.dtype)
    if len(values) and kept:
        out[tuple(present.T)] = _reduce(node, values, group, len(present))
    elif len(values):
        out = _reduce(node, values, group, 1).reshape(())
    if node.attr["keep_dims"]:
        out = out.reshape([1 if d in axes else int(s) for d, s in enumerate(shape)])
    return out


def _reduce_sparse_shape(inputs, attrs):
    return sparse_specs(inputs[1].dtype, None)


def _reduce_sparse_kernel(ctx, node, indices, values, shape, axes):
    if not np.size(axes):
        axes = np.arange(len(shape))
    kept, present, group, axes = _groups(node, indices, values, shape, axes)
    out_values = _reduce(node, values, group, len(present))
    out_shape = [int(shape[d]) for d in kept]
    if node.attr["keep_dims"]:
        full = np.zeros((len(present), len(shape)), np.int64)
        full[:, kept] = present
        present, out_shape = full, [1 if d in axes else int(s) for d, s in enumerate(shape)]
    return (
        np.asarray(present, np.int64).reshape(len(out_values), -1),
        out_values,
        np.asarray(out_shape, np.int64),
    )


for _op_type in ("SparseReduceSum", "SparseReduceMax"):
    registry.shape(_op_type)(_reduce_shape)
    registry.kernel(_op_type)(_reduce_kernel)
    registry.no_gradient(_op_type)
    registry.shape(_op_type + "Sparse")(_reduce_sparse_shape)
    registry.kernel(_op_type + "Sparse")(_reduce_sparse_kernel)
    registry.no_gradient(_op_type + "Sparse")


def _reduce_op(op_type, sp_input, axis, keepdims, reduction_axes, keep_dims):
    sp = as_sparse(sp_input)
    axis = reduction_axes if axis is None else axis
    keep = bool(keep_dims if keepdims is None else keepdims)
    axes = convert_to_tensor([] if axis is None else axis, dtype=_dtypes.int32)
    inputs = [sp.indices, sp.values, sp.dense_shape, axes]
    return registry.make_op(op_type, inputs, {"keep_dims": keep}, name=op_type)


def sparse_reduce_sum(sp_input, axis=None, keepdims=None, reduction_axes=None, keep_dims=None):
    """`tf.sparse.reduce_sum`: the dense sum over `axis` (all axes when None)."""
    return _reduce_op("SparseReduceSum", sp_input, axis, keepdims, reduction_axes, keep_dims).outputs[0]


def sparse_reduce_max(sp_input, axis=None, keepdims=None, reduction_axes=None, keep_dims=None):
    """`tf.sparse.reduce_max`: the dense maximum over `axis` of the entries present (missing
    entries do not count; a group without any is 0, as TF's)."""
    return _reduce_op("SparseReduceMax", sp_input, axis, keepdims, reduction_axes, keep_dims).outputs[0]


def sparse_reduce_sum_sparse(sp_input, axis=None, keepdims=None, reduction_axes=None, keep_dims=None):
    """`tf.sparse.reduce_sum_sparse`: the sum over `axis` as a `SparseTensor` of the groups present."""
    op = _reduce_op("SparseReduceSumSparse", sp_input, axis, keepdims, reduction_axes, keep_dims)
    return SparseTensor(*op.outputs)


def sparse_reduce_max_sparse(sp_input, axis=None, keepdims=None, reduction_axes=None, keep_dims=None):
    """`tf.sparse.reduce_max_sparse`: the maximum over `axis` as a `SparseTensor`."""
    op = _reduce_op("SparseReduceMaxSparse", sp_input, axis, keepdims, reduction_axes, keep_dims)
    return SparseTensor(*op.outputs)


# -- sparse_tensor_dense_matmul ----------------------------------------------------------------------
@registry.shape("SparseTensorDenseMatMul")
def _matmul_shape(inputs, attrs):
    b = inputs[3].shape
    cols = None if b.ndims != 2 else b.dims[0 if attrs["adjoint_b"] else 1]
    shape = get_static_value(inputs[2])
    rows = None if shape is None else int(shape[1 if attrs["adjoint_a"] else 0])
    return [(inputs[1].dtype, TensorShape([rows, cols]))]


@registry.kernel("SparseTensorDenseMatMul")
def _matmul_kernel(ctx, node, indices, values, shape, b):
    rows, inner = (int(shape[1]), int(shape[0])) if node.attr["adjoint_a"] else (int(shape[0]), int(shape[1]))
    b = np.asarray(b).T if node.attr["adjoint_b"] else np.asarray(b)
    if b.shape[0] != inner:
        raise invalid_argument(
            node, f"Cannot multiply A and B because inner dimension does not match: {inner} vs. {b.shape[0]}"
        )
    r, c = (indices[:, 1], indices[:, 0]) if node.attr["adjoint_a"] else (indices[:, 0], indices[:, 1])
    out = np.zeros((rows, b.shape[1]), np.result_type(values, b))
    np.add.at(out, r, values[:, None] * b[c])
    return out


@registry.gradient("SparseTensorDenseMatMul")
def _matmul_grad(op, grad):
    """As TF's: ``d values[k] = <grad[row_k], B'[col_k]>``, ``d B' = A^T grad`` (B' = B or B^T)."""
    indices, values, shape, b = op.inputs
    adjoint_a, adjoint_b = op.get_attr("adjoint_a"), op.get_attr("adjoint_b")
    sp = SparseTensor(indices, values, shape)
    grad_b = sparse_tensor_dense_matmul(sp, grad, adjoint_a=not adjoint_a)
    if adjoint_b:
        grad_b = transpose(grad_b)
    rows, cols = (
        gather(transpose(indices), 1 if adjoint_a else 0),
        gather(transpose(indices), 0 if adjoint_a else 1),
    )
    b_rows = gather(transpose(b) if adjoint_b else b, cols)
    grad_values = reduce_sum(gather(grad, rows) * b_rows, axis=1)
    return [None, grad_values, None, grad_b]


def sparse_tensor_dense_matmul(sp_a, b, adjoint_a=False, adjoint_b=False, name=None):
    """`tf.sparse.sparse_dense_matmul` / `tf.sparse.matmul`: ``op(A) @ op(B)`` for a 2-D
    `SparseTensor` A and a dense matrix B (`op` the transpose when `adjoint_*`)."""
    sp = as_sparse(sp_a, "sp_a")
    b = convert_to_tensor(b, dtype=sp.dtype)
    attrs = {"adjoint_a": bool(adjoint_a), "adjoint_b": bool(adjoint_b)}
    inputs = [sp.indices, sp.values, sp.dense_shape, b]
    return registry.make_op("SparseTensorDenseMatMul", inputs, attrs, name=name).outputs[0]


# -- sparse_softmax --------------------------------------------------------------------------------
@registry.shape("SparseSoftmax")
def _softmax_shape(inputs, attrs):
    return [(inputs[1].dtype, TensorShape([None]))]


@registry.kernel("SparseSoftmax")
def _softmax_kernel(ctx, node, indices, values, shape):
    if len(shape) < 2:
        raise invalid_argument(node, f"sp_input must be at least a matrix, got rank {len(shape)}")
    order = row_major(indices)
    out = np.zeros_like(values)
    _, group = np.unique(indices.reshape(len(values), -1)[:, :-1], axis=0, return_inverse=True)
    group = group.reshape(-1)
    top = np.full(group.max() + 1 if len(group) else 0, -np.inf, values.dtype)
    np.maximum.at(top, group, values)
    e = np.exp(values - top[group])
    total = np.zeros_like(top)
    np.add.at(total, group, e)
    out = e / total[group]
    return out[order][np.argsort(order)]


registry.no_gradient("SparseSoftmax")


def sparse_softmax(sp_input, name=None):
    """`tf.sparse.softmax`: the softmax of each innermost row over the entries present."""
    sp = as_sparse(sp_input)
    values = registry.make_op("SparseSoftmax", [sp.indices, sp.values, sp.dense_shape], name=name).outputs[0]
    return SparseTensor(sp.indices, values, sp.dense_shape)


# -- sparse segment reductions ---------------------------------------------------------------------
_SEGMENT_SCALE = {
    "SparseSegmentSum": np.ones_like,
    "SparseSegmentMean": lambda counts: 1.0 / np.maximum(counts, 1),
    "SparseSegmentSqrtN": lambda counts: 1.0 / np.sqrt(np.maximum(counts, 1)),
}


def _segment_scale(node, ids, num):
    counts = np.bincount(ids, minlength=num)[:num].astype(np.float64)
    return _SEGMENT_SCALE[node.op.removesuffix("Grad")](counts)


def _segment_shape(inputs, attrs):
    data = inputs[0].shape
    num = get_static_value(inputs[3]) if len(inputs) > 3 else None
    rest = data.as_list()[1:] if data.ndims is not None else None
    return [
        (inputs[0].dtype, TensorShape(None if rest is None else [None if num is None else int(num), *rest]))
    ]


def _segment_kernel(ctx, node, data, indices, ids, num=None):
    data, indices, ids = np.asarray(data), np.asarray(indices, np.int64), np.asarray(ids, np.int64)
    if len(indices) != len(ids):
        raise invalid_argument(
            node, f"segment_ids and indices should have same size, got {len(ids)} and {len(indices)}"
        )
    if np.any(np.diff(ids) < 0):
        raise invalid_argument(node, f"segment ids are not increasing: {ids.tolist()}")
    if np.any((indices < 0) | (indices >= len(data))):
        raise invalid_argument(node, f"indices {indices.tolist()} out of range [0, {len(data)})")
    num = (int(ids[-1]) + 1 if len(ids) else 0) if num is None else int(num)
    out = np.zeros((num, *data.shape[1:]), data.dtype)
    np.add.at(out, ids, data[indices])
    scale = _segment_scale(node, ids, num).reshape(-1, *[1] * (data.ndim - 1))
    return (out * scale).astype(data.dtype)


def _segment_grad(op, grad):
    data, indices, ids = op.inputs[:3]
    dim0 = gather(tf_shape(data), 0)
    inputs = [grad, indices, ids, dim0]
    grad_data = registry.make_op(op.type + "Grad", inputs).outputs[0]
    return [grad_data, None, None] + [None] * (len(op.inputs) - 3)


def _segment_grad_shape(inputs, attrs):
    return unknown_dims(inputs[0].dtype, inputs[0].shape.ndims)


def _segment_grad_kernel(ctx, node, grad, indices, ids, dim0):
    grad = np.asarray(grad)
    scale = _segment_scale(node, np.asarray(ids, np.int64), len(grad)).reshape(-1, *[1] * (grad.ndim - 1))
    out = np.zeros((int(dim0), *grad.shape[1:]), grad.dtype)
    np.add.at(out, np.asarray(indices, np.int64), (grad * scale)[np.asarray(ids, np.int64)])
    return out


for _op_type in _SEGMENT_SCALE:
    registry.shape(_op_type)(_segment_shape)
    registry.kernel(_op_type)(_segment_kernel)
    registry.gradient(_op_type)(_segment_grad)
    registry.shape(_op_type + "Grad")(_segment_grad_shape)
    registry.kernel(_op_type + "Grad")(_segment_grad_kernel)
    registry.no_gradient(_op_type + "Grad")


def _segment_op(op_type, data, indices, segment_ids, name, num_segments):
    inputs = [
        convert_to_tensor(data),
        convert_to_tensor(indices, dtype=_dtypes.int32),
        convert_to_tensor(segment_ids, dtype=_dtypes.int32),
    ]
    if num_segments is not None:
        inputs.append(convert_to_tensor(num_segments, dtype=_dtypes.int32))
    return registry.make_op(op_type, inputs, name=name).outputs[0]


def sparse_segment_sum(data, indices, segment_ids, name=None, num_segments=None, sparse_gradient=False):
    """`tf.sparse.segment_sum`: ``out[s] = sum(data[indices[i]] for i where segment_ids[i] == s)``
    (`segment_ids` sorted; ``segment_ids[-1] + 1`` rows unless `num_segments`)."""
    return _segment_op("SparseSegmentSum", data, indices, segment_ids, name, num_segments)


def sparse_segment_mean(data, indices, segment_ids, name=None, num_segments=None, sparse_gradient=False):
    """`tf.sparse.segment_mean`: `sparse_segment_sum` divided by each segment's size."""
    return _segment_op("SparseSegmentMean", data, indices, segment_ids, name, num_segments)


def sparse_segment_sqrt_n(data, indices, segment_ids, name=None, num_segments=None, sparse_gradient=False):
    """`tf.sparse.segment_sqrt_n`: `sparse_segment_sum` divided by the root of each segment's size."""
    return _segment_op("SparseSegmentSqrtN", data, indices, segment_ids, name, num_segments)
