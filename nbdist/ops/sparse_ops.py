"""`tf.sparse`'s structural ops and their TF 1.x top-level names (`sparse_reorder`,
`sparse_concat`, ...): each a numpy kernel over a `SparseTensor`'s three arrays (indices,
values, dense shape), with TF's op type and none differentiable; results in TF's order
(row-major where TF's are). The arithmetic (reductions, matmul, softmax, segments) is in
ops/sparse_math_ops.py.
"""

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops._shapes import invalid_argument
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.indexed_slices import IndexedSlices
from nbdist.ops.reduction_ops import gather
from nbdist.ops.sparse_tensor import SparseTensor, SparseTensorValue

__all__ = [
    "sparse_add",
    "sparse_concat",
    "sparse_fill_empty_rows",
    "sparse_mask",
    "sparse_maximum",
    "sparse_minimum",
    "sparse_reorder",
    "sparse_reset_shape",
    "sparse_reshape",
    "sparse_retain",
    "sparse_slice",
    "sparse_split",
    "sparse_to_indicator",
    "sparse_transpose",
]


def as_sparse(sp_input, what="sp_input"):
    """`sp_input` as a `SparseTensor` (a `SparseTensorValue` becomes constants).

    Raises:
        TypeError: naming `what` if it is neither.
    """
    if isinstance(sp_input, SparseTensorValue):
        return SparseTensor(*sp_input)
    if not isinstance(sp_input, SparseTensor):
        raise TypeError(f"{what} must be a SparseTensor, got {type(sp_input).__name__}")
    return sp_input


def sparse_rank(sp):
    """The static rank of a `SparseTensor`, or None."""
    return sp.dense_shape.shape[0] if sp.dense_shape.shape.ndims == 1 else sp.indices.shape[1]


def sparse_specs(dtype, rank):
    """The output specs (indices, values, dense_shape) of an op that makes a `SparseTensor`."""
    return [
        (_dtypes.int64, TensorShape([None, rank])),
        (dtype, TensorShape([None])),
        (_dtypes.int64, TensorShape([rank])),
    ]


def row_major(indices):
    """The permutation that sorts `indices` (``[N, rank]``) in row-major order (stable)."""
    indices = np.asarray(indices).reshape(len(indices), -1)
    return np.lexsort(indices.T[::-1]) if indices.shape[1] else np.arange(len(indices))


def _out(indices, values, shape):
    return (
        np.asarray(indices, np.int64).reshape(len(values), -1),
        np.asarray(values),
        np.asarray(shape, np.int64),
    )


def _declare(op_type, shape_fn, kernel):
    registry.shape(op_type)(shape_fn)
    registry.kernel(op_type)(kernel)
    registry.no_gradient(op_type)


def _make(op_type, sp_inputs, extra=(), attrs=None, name=None):
    inputs = [t for sp in sp_inputs for t in (sp.indices, sp.values, sp.dense_shape)]
    return registry.make_op(op_type, [*inputs, *extra], attrs, name=name)


def _sparse_result(op, start=0):
    return SparseTensor(*op.outputs[start : start + 3])


def _like_first(inputs, attrs):
    return sparse_specs(inputs[1].dtype, inputs[0].shape[1] if inputs[0].shape.ndims == 2 else None)


# -- reorder / retain / reset_shape / transpose / expand_dims / reshape ---------------------------
def _reorder_kernel(ctx, node, indices, values, shape):
    order = row_major(indices)
    return _out(indices[order], values[order], shape)


_declare("SparseReorder", _like_first, _reorder_kernel)


def sparse_reorder(sp_input, name=None):
    """`tf.sparse.reorder`: the same entries in row-major order (and `sp_input`'s dense_shape
    tensor, as TF's, so its static value carries over)."""
    sp_input = as_sparse(sp_input)
    out = _sparse_result(_make("SparseReorder", [sp_input], name=name))
    return SparseTensor(out.indices, out.values, sp_input.dense_shape)


def _retain_kernel(ctx, node, indices, values, shape, keep):
    keep = np.asarray(keep, bool).reshape(-1)
    if len(keep) != len(values):
        raise invalid_argument(node, f"to_retain has {len(keep)} entries, the SparseTensor {len(values)}")
    return _out(indices[keep], values[keep], shape)


_declare("SparseRetain", _like_first, _retain_kernel)


def sparse_retain(sp_input, to_retain):
    """`tf.sparse.retain`: the entries whose `to_retain` (a bool vector) is True."""
    keep = convert_to_tensor(to_retain, dtype=_dtypes.bool)
    return _sparse_result(_make("SparseRetain", [as_sparse(sp_input)], [keep]))


def _reset_shape_kernel(ctx, node, indices, values, shape, *new_shape):
    if not new_shape:
        return _out(indices, values, indices.max(axis=0) + 1 if len(values) else np.zeros_like(shape))
    new = np.asarray(new_shape[0], np.int64)
    if new.shape != shape.shape or np.any(new < shape):
        raise invalid_argument(node, f"new_shape {new.tolist()} must be at least the shape {shape.tolist()}")
    return _out(indices, values, new)


_declare("SparseResetShape", _like_first, _reset_shape_kernel)


def sparse_reset_shape(sp_input, new_shape=None):
    """`tf.sparse.reset_shape`: `new_shape` (no smaller than the old), or the tightest shape."""
    extra = [] if new_shape is None else [convert_to_tensor(new_shape, dtype=_dtypes.int64)]
    return _sparse_result(_make("SparseResetShape", [as_sparse(sp_input)], extra))


def _transpose_kernel(ctx, node, indices, values, shape, perm):
    perm = np.asarray(perm, np.int64)
    if sorted(perm.tolist()) != list(range(len(shape))):
        raise invalid_argument(node, f"perm {perm.tolist()} is not a permutation of {len(shape)} dims")
    return _reorder_kernel(ctx, node, indices[:, perm], values, shape[perm])


_declare("SparseTranspose", _like_first, _transpose_kernel)


def sparse_transpose(sp_input, perm=None, name=None):
    """`tf.sparse.transpose`: dimensions permuted by `perm` (reversed by default), reordered."""
    sp = as_sparse(sp_input)
    if perm is None:
        rank = sparse_rank(sp)
        if rank is None:
            raise ValueError("sparse_transpose without perm needs the SparseTensor's rank statically")
        perm = list(range(rank))[::-1]
    perm = convert_to_tensor(perm, dtype=_dtypes.int64)
    return _sparse_result(_make("SparseTranspose", [sp], [perm], name=name))


def _expand_dims_kernel(ctx, node, indices, values, shape, axis):
    rank = len(shape)
    axis = int(axis)
    if not -rank - 1 <= axis <= rank:
        raise invalid_argument(node, f"axis {axis} is out of range for a SparseTensor of rank {rank}")
    axis %= rank + 1
    out = np.insert(indices.reshape(len(values), rank), axis, 0, axis=1)
    return _out(out, values, np.insert(shape, axis, 1))


def _expand_dims_shape(inputs, attrs):
    rank = inputs[0].shape[1] if inputs[0].shape.ndims == 2 else None
    return sparse_specs(inputs[1].dtype, None if rank is None else rank + 1)


_declare("SparseExpandDims", _expand_dims_shape, _expand_dims_kernel)


def sparse_expand_dims(sp_input, axis=None, name=None):
    """`tf.sparse.expand_dims`: a dimension of size 1 inserted at `axis`."""
    axis = convert_to_tensor(-1 if axis is None else axis, dtype=_dtypes.int32)
    return _sparse_result(_make("SparseExpandDims", [as_sparse(sp_input)], [axis], name=name))


@registry.shape("SparseReshape")
def _reshape_shape(inputs, attrs):
    rank = inputs[2].shape[0] if inputs[2].shape.ndims == 1 else None
    return [(_dtypes.int64, TensorShape([None, rank])), (_dtypes.int64, TensorShape([rank]))]


@registry.kernel("SparseReshape")
def _reshape_kernel(ctx, node, indices, shape, new_shape):
    new = np.asarray(new_shape, np.int64).copy()
    total = int(np.prod(shape))
    if (new == -1).sum() > 1:
        raise invalid_argument(node, f"only one dimension of new_shape {new.tolist()} can be -1")
    if (new == -1).any():
        known = int(np.prod(new[new != -1]))
        new[new == -1] = total // known if known else 0
    if int(np.prod(new)) != total:
        raise invalid_argument(
            node,
            f"Input to reshape is a SparseTensor with {total} dense values, but the requested "
            f"shape has {int(np.prod(new))}",
        )
    flat = np.ravel_multi_index(tuple(indices.T), tuple(shape)) if len(indices) else np.zeros(0, np.int64)
    out = np.stack(np.unravel_index(flat, tuple(new)), axis=1) if len(indices) else np.zeros((0, len(new)))
    return np.asarray(out, np.int64).reshape(len(indices), len(new)), new


registry.no_gradient("SparseReshape")


def sparse_reshape(sp_input, shape, name=None):
    """`tf.sparse.reshape`: the same dense values in row-major order in `shape` (one -1 inferred)."""
    sp = as_sparse(sp_input)
    new = convert_to_tensor(shape, dtype=_dtypes.int64)
    op = registry.make_op("SparseReshape", [sp.indices, sp.dense_shape, new], name=name)
    return SparseTensor(op.outputs[0], sp.values, op.outputs[1])


# -- concat / slice / split ------------------------------------------------------------------------
@registry.shape("SparseConcat")
def _concat_shape(inputs, attrs):
    return _like_first(inputs, attrs)


@registry.kernel("SparseConcat")
def _concat_kernel(ctx, node, *args):
    n = len(args) // 3
    parts = [args[3 * i : 3 * i + 3] for i in range(n)]
    shapes = np.stack([np.asarray(p[2], np.int64) for p in parts])
    axis = node.attr["axis"] % shapes.shape[1]
    others = np.delete(shapes, axis, axis=1)
    if not node.attr["expand_nonconcat_dim"] and np.any(others != others[0]):
        raise invalid_argument(
            node, f"the SparseTensors' shapes {shapes.tolist()} differ outside dimension {axis}"
        )
    offsets = np.concatenate([[0], np.cumsum(shapes[:, axis])[:-1]])
    indices = []
    for (ind, _, _), offset in zip(parts, offsets):
        ind = np.array(ind, np.int64).reshape(-1, shapes.shape[1])
        ind[:, axis] += offset
        indices.append(ind)
    indices = np.concatenate(indices)
    values = np.concatenate([np.asarray(p[1]) for p in parts])
    shape = shapes.max(axis=0)
    shape[axis] = shapes[:, axis].sum()
    order = row_major(indices)
    return _out(indices[order], values[order], shape)


registry.no_gradient("SparseConcat")


def sparse_concat(
    axis, sp_inputs, name=None, expand_nonconcat_dim=False, concat_dim=None, expand_nonconcat_dims=None
):
    """`tf.sparse.concat`: the SparseTensors joined along `axis`; with `expand_nonconcat_dim`
    the other dimensions grow to the largest."""
    axis = concat_dim if concat_dim is not None else axis
    expand = expand_nonconcat_dims if expand_nonconcat_dims is not None else expand_nonconcat_dim
    sps = [as_sparse(sp, "sp_inputs") for sp in sp_inputs]
    attrs = {"axis": int(axis), "expand_nonconcat_dim": bool(expand)}
    return _sparse_result(_make("SparseConcat", sps, attrs=attrs, name=name))


def _slice(indices, values, shape, start, size):
    start, size = np.asarray(start, np.int64), np.asarray(size, np.int64)
    end = np.minimum(start + size, shape)
    inside = np.all((indices >= start) & (indices < end), axis=1)
    return _out(indices[inside] - start, values[inside], np.maximum(end - start, 0))


def _slice_kernel(ctx, node, indices, values, shape, start, size):
    return _slice(indices.reshape(len(values), -1), values, shape, start, size)


_declare("SparseSlice", _like_first, _slice_kernel)


def sparse_slice(sp_input, start, size, name=None):
    """`tf.sparse.slice`: the entries in ``[start, start + size)``, shifted to start at 0."""
    extra = [convert_to_tensor(start, dtype=_dtypes.int64), convert_to_tensor(size, dtype=_dtypes.int64)]
    return _sparse_result(_make("SparseSlice", [as_sparse(sp_input)], extra, name=name))


@registry.shape("SparseSplit")
def _split_shape(inputs, attrs):
    return _like_first(inputs, attrs) * attrs["num_split"]


@registry.kernel("SparseSplit")
def _split_kernel(ctx, node, indices, values, shape):
    n, axis = node.attr["num_split"], node.attr["axis"] % len(shape)
    sizes = [shape[axis] // n + (i < shape[axis] % n) for i in range(n)]
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    out = []
    for begin, sz in zip(starts, sizes):
        start, size = np.zeros_like(shape), shape.copy()
        start[axis], size[axis] = begin, sz
        out.extend(_slice(indices.reshape(len(values), -1), values, shape, start, size))
    return tuple(out)


registry.no_gradient("SparseSplit")


def sparse_split(keyword_required=None, sp_input=None, num_split=None, axis=None, name=None, split_dim=None):
    """`tf.sparse.split`: `num_split` SparseTensors along `axis` (the first ones one larger
    when it does not divide). Arguments by keyword, as TF requires."""
    if keyword_required is not None:
        raise ValueError("Keyword arguments are required for this function.")
    axis = split_dim if axis is None else axis
    attrs = {"num_split": int(num_split), "axis": int(axis)}
    op = _make("SparseSplit", [as_sparse(sp_input)], attrs=attrs, name=name)
    return [_sparse_result(op, 3 * i) for i in range(int(num_split))]


# -- fill_empty_rows / from_dense / eye / to_indicator ---------------------------------------------
@registry.shape("SparseFillEmptyRows")
def _fill_empty_rows_shape(inputs, attrs):
    return [
        *_like_first(inputs, attrs)[:2],
        (_dtypes.bool, TensorShape([None])),
        (_dtypes.int64, TensorShape([None])),
    ]


@registry.kernel("SparseFillEmptyRows")
def _fill_empty_rows_kernel(ctx, node, indices, values, shape, default):
    indices = indices.reshape(len(values), len(shape))
    rows = int(shape[0])
    empty = np.ones(rows, bool)
    empty[indices[:, 0]] = False
    fill = np.zeros((int(empty.sum()), len(shape)), np.int64)
    fill[:, 0] = np.flatnonzero(empty)
    all_indices = np.concatenate([indices, fill])
    all_values = np.concatenate([values, np.full(len(fill), default, dtype=values.dtype)])
    order = np.argsort(all_indices[:, 0], kind="stable")
    reverse = np.argsort(order)[: len(values)]
    return all_indices[order], all_values[order], empty, reverse.astype(np.int64)


registry.no_gradient("SparseFillEmptyRows")


def sparse_fill_empty_rows(sp_input, default_value, name=None):
    """`tf.sparse.fill_empty_rows`: ``(sp, empty_row_indicator)``: each empty row gets
    `default_value` at ``[row, 0, ...]``."""
    sp = as_sparse(sp_input)
    default = convert_to_tensor(default_value, dtype=sp.dtype)
    op = _make("SparseFillEmptyRows", [sp], [default], name=name)
    return SparseTensor(op.outputs[0], op.outputs[1], sp.dense_shape), op.outputs[2]


@registry.shape("DenseToSparse")
def _from_dense_shape(inputs, attrs):
    return sparse_specs(inputs[0].dtype, inputs[0].shape.ndims)


@registry.kernel("DenseToSparse")
def _from_dense_kernel(ctx, node, x):
    x = np.asarray(x)
    nonzero = x != (b"" if x.dtype == object else 0)
    return _out(np.argwhere(nonzero), x[nonzero], x.shape)


registry.no_gradient("DenseToSparse")


def from_dense(tensor, name=None):
    """`tf.sparse.from_dense`: the non-zero (non-empty) entries of a dense tensor."""
    return _sparse_result(registry.make_op("DenseToSparse", [convert_to_tensor(tensor)], name=name))


@registry.shape("SparseEye")
def _eye_shape(inputs, attrs):
    return sparse_specs(attrs["dtype"], 2)


@registry.kernel("SparseEye")
def _eye_kernel(ctx, node, rows, cols):
    n = min(int(rows), int(cols))
    i = np.arange(n)
    return _out(np.stack([i, i], axis=1), np.ones(n, node.attr["dtype"].np), [int(rows), int(cols)])


registry.no_gradient("SparseEye")


def sparse_eye(num_rows, num_columns=None, dtype=_dtypes.float32, name=None):
    """`tf.sparse.eye`: a sparse identity matrix, ``num_rows x num_columns``."""
    rows = convert_to_tensor(num_rows, dtype=_dtypes.int64)
    cols = rows if num_columns is None else convert_to_tensor(num_columns, dtype=_dtypes.int64)
    attrs = {"dtype": _dtypes.as_dtype(dtype)}
    return _sparse_result(registry.make_op("SparseEye", [rows, cols], attrs, name=name))


@registry.shape("SparseToIndicator")
def _indicator_shape(inputs, attrs):
    rank = inputs[0].shape[1] if inputs[0].shape.ndims == 2 else None
    return [(_dtypes.bool, TensorShape(None if rank is None else [None] * rank))]


@registry.kernel("SparseToIndicator")
def _indicator_kernel(ctx, node, indices, values, shape, vocab_size):
    out = np.zeros((*shape[:-1], int(vocab_size)), bool)
    ids = np.asarray(values, np.int64)
    if np.any((ids < 0) | (ids >= int(vocab_size))):
        raise invalid_argument(node, f"values {ids.tolist()} must be in [0, {int(vocab_size)})")
    out[(*indices.reshape(len(ids), -1)[:, :-1].T, ids)] = True
    return out


registry.no_gradient("SparseToIndicator")


def sparse_to_indicator(sp_input, vocab_size, name=None):
    """`tf.sparse.to_indicator`: a dense bool tensor whose last dimension (of `vocab_size`)
    marks the ids each row of `sp_input` holds."""
    vocab = convert_to_tensor(vocab_size, dtype=_dtypes.int64)
    return _make("SparseToIndicator", [as_sparse(sp_input)], [vocab], name=name).outputs[0]


# -- add / maximum / minimum -----------------------------------------------------------------------
def _merge(a, b, combine):
    """Two SparseTensors' entries merged: the union of their indices (row-major) and
    ``combine(a_value_or_0, b_value_or_0)``."""
    (ai, av, ashape), (bi, bv, _bshape) = a, b
    indices = np.concatenate([ai.reshape(len(av), -1), bi.reshape(len(bv), -1)])
    union, where = np.unique(indices, axis=0, return_inverse=True)
    where = where.reshape(-1)
    dtype = np.result_type(av, bv)
    left, right = np.zeros(len(union), dtype), np.zeros(len(union), dtype)
    left[where[: len(av)]] = av
    right[where[len(av) :]] = bv
    return union.reshape(-1, len(ashape)), combine(left, right)


@registry.shape("SparseAdd")
def _add_shape(inputs, attrs):
    return _like_first(inputs, attrs)


def _check_same_shape(node, ashape, bshape):
    if not np.array_equal(ashape, bshape):
        raise invalid_argument(node, f"Operands' shapes do not match: {ashape.tolist()} vs {bshape.tolist()}")


@registry.kernel("SparseAdd")
def _add_kernel(ctx, node, ai, av, ashape, bi, bv, bshape, thresh):
    _check_same_shape(node, ashape, bshape)
    indices, values = _merge((ai, av, ashape), (bi, bv, bshape), np.add)
    keep = np.abs(values) >= thresh
    return _out(indices[keep], values[keep], ashape)


registry.no_gradient("SparseAdd")


@registry.shape("SparseTensorDenseAdd")
def _dense_add_shape(inputs, attrs):
    return [(inputs[3].dtype, inputs[3].shape)]


@registry.kernel("SparseTensorDenseAdd")
def _dense_add_kernel(ctx, node, indices, values, shape, dense):
    _check_same_shape(node, shape, np.asarray(np.shape(dense)))
    out = np.array(dense, copy=True)
    np.add.at(out, tuple(indices.reshape(len(values), -1).T), values)
    return out


registry.no_gradient("SparseTensorDenseAdd")


def sparse_add(a, b, threshold=None, thresh=None):
    """`tf.sparse.add`: a `SparseTensor` for two SparseTensors (entries whose sum's magnitude
    is below `threshold` dropped), a dense tensor when one is dense."""
    threshold = thresh if threshold is None else threshold
    sparse_a = isinstance(a, (SparseTensor, SparseTensorValue))
    sparse_b = isinstance(b, (SparseTensor, SparseTensorValue))
    if sparse_a and sparse_b:
        a, b = as_sparse(a, "a"), as_sparse(b, "b")
        thresh = convert_to_tensor(0 if threshold is None else threshold, dtype=a.dtype.base_dtype)
        return _sparse_result(_make("SparseAdd", [a, b], [thresh]))
    if not (sparse_a or sparse_b):
        raise TypeError("sparse_add takes at least one SparseTensor")
    sp, dense = (as_sparse(a), b) if sparse_a else (as_sparse(b), a)
    return _make("SparseTensorDenseAdd", [sp], [convert_to_tensor(dense, dtype=sp.dtype)]).outputs[0]


def _minmax_kernel(ctx, node, ai, av, ashape, bi, bv, bshape):
    _check_same_shape(node, ashape, bshape)
    combine = np.maximum if node.op == "SparseSparseMaximum" else np.minimum
    return _out(*_merge((ai, av, ashape), (bi, bv, bshape), combine), ashape)


def _minmax_shape(inputs, attrs):
    return _like_first(inputs, attrs)[:2]


for _op_type in ("SparseSparseMaximum", "SparseSparseMinimum"):
    _declare(_op_type, _minmax_shape, lambda ctx, node, *args: _minmax_kernel(ctx, node, *args)[:2])


def sparse_maximum(sp_a, sp_b, name=None):
    """`tf.sparse.maximum`: the elementwise maximum of two SparseTensors of one shape
    (a missing entry counts as 0)."""
    a, b = as_sparse(sp_a, "sp_a"), as_sparse(sp_b, "sp_b")
    op = _make("SparseSparseMaximum", [a, b], name=name)
    return SparseTensor(op.outputs[0], op.outputs[1], a.dense_shape)


def sparse_minimum(sp_a, sp_b, name=None):
    """`tf.sparse.minimum`: the elementwise minimum (a missing entry counts as 0)."""
    a, b = as_sparse(sp_a, "sp_a"), as_sparse(sp_b, "sp_b")
    op = _make("SparseSparseMinimum", [a, b], name=name)
    return SparseTensor(op.outputs[0], op.outputs[1], a.dense_shape)


# -- mask (IndexedSlices) --------------------------------------------------------------------------
@registry.shape("ListDiff")
def _list_diff_shape(inputs, attrs):
    return [(inputs[0].dtype, TensorShape([None])), (attrs["out_idx"], TensorShape([None]))]


@registry.kernel("ListDiff")
def _list_diff_kernel(ctx, node, x, y):
    keep = np.flatnonzero(~np.isin(x, y))
    return np.asarray(x)[keep], keep.astype(node.attr["out_idx"].np)


registry.no_gradient("ListDiff")


def sparse_mask(a, mask_indices, name=None):
    """`tf.sparse.mask`: the `IndexedSlices` `a` without the rows `mask_indices`."""
    mask = convert_to_tensor(mask_indices, dtype=a.indices.dtype)
    op = registry.make_op("ListDiff", [a.indices, mask], {"out_idx": _dtypes.int32}, name=name)
    return IndexedSlices(gather(a.values, op.outputs[1]), op.outputs[0], a.dense_shape)
