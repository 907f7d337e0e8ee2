"""Sorting, searching and selecting: `tf.sort` / `tf.argsort` (built on `top_k` as TF's
``sort_ops.py``), `tf.searchsorted` (``LowerBound`` / ``UpperBound``), `tf.where_v2`
(``SelectV2`` with broadcasting, ``Where`` for the true positions), `tf.boolean_mask`,
`tf.unique_with_counts`, `tf.setdiff1d`, `tf.histogram_fixed_width(_bins)` and the
deprecated `tf.arg_max` / `tf.arg_min`. Each op's shape, kernel and gradient sit side by side.
"""

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import Tensor, name_scope
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import math_ops, reduction_ops, registry
from nbdist.ops import sparse_ops as _sparse_ops  # noqa: F401 - registers ListDiff (tf.setdiff1d)
from nbdist.ops._shapes import broadcast_shape, invalid_argument
from nbdist.ops.clip_ops import clip_by_value
from nbdist.ops.concat_slice_ops import concat
from nbdist.ops.constant_op import convert_n, convert_to_tensor
from nbdist.ops.reshape_ops import reshape, squeeze, transpose
from nbdist.ops.shape_ops import get_static_value, shape
from nbdist.ops.top_k_ops import top_k

__all__ = ["arg_max", "arg_min", "argsort", "boolean_mask", "histogram_fixed_width"]
__all__ += [
    "histogram_fixed_width_bins",
    "searchsorted",
    "setdiff1d",
    "sort",
    "unique_with_counts",
    "where_v2",
]


# -- sort, argsort ------------------------------------------------------------------------------------
def _descending_sort(values, axis, return_argsort):
    ndims = values.shape.ndims
    perm = None
    if axis != -1 and (ndims is None or axis + 1 != ndims):  # (top_k sorts the last axis: swap, and back)
        if ndims is None:
            raise ValueError(
                f"tf.sort: values {values.name} of unknown rank can only be sorted along axis -1"
            )
        axis = axis + ndims if axis < 0 else axis
        if not 0 <= axis < ndims:
            raise ValueError(f"tf.sort: axis {axis} is out of range for values of rank {ndims}")
        perm = [*range(axis), ndims - 1, *range(axis + 1, ndims - 1), axis]
        values = transpose(values, perm)
    last = values.shape[-1] if values.shape.ndims else None
    sorted_values, indices = top_k(values, last if last is not None else shape(values)[-1])
    out = indices if return_argsort else sorted_values
    return out if perm is None else transpose(out, perm)


def _ascending_sort(values, axis, return_argsort):
    """Descending order of values mapped by an order-reversing function (TF's)."""
    dtype = values.dtype
    if dtype.is_integer and dtype.name.startswith("uint"):
        offset = convert_to_tensor(np.iinfo(dtype.np).max, dtype=dtype)
        out = _descending_sort(offset - values, axis, return_argsort)
        return out if return_argsort else offset - out
    if dtype.is_integer:
        out = _descending_sort(-values - 1, axis, return_argsort)
        return out if return_argsort else -out - 1
    out = _descending_sort(-values, axis, return_argsort)
    return out if return_argsort else -out


_SORT = {"ASCENDING": _ascending_sort, "DESCENDING": _descending_sort}


def _sort_or_argsort(values, axis, direction, return_argsort):
    if direction not in _SORT:
        raise ValueError(
            f"Argument `direction` should be one of ASCENDING, DESCENDING. Received: direction={direction}"
        )
    static_axis = get_static_value(axis)
    if static_axis is None or np.ndim(static_axis) != 0:
        raise ValueError(f"Argument `axis` must be a constant scalar. Received: axis={axis}.")
    return _SORT[direction](convert_to_tensor(values, name="values"), int(static_axis), return_argsort)


def sort(values, axis=-1, direction="ASCENDING", name=None):
    """`tf.sort`: `values` sorted along `axis` (``"ASCENDING"`` or ``"DESCENDING"``).

    Raises:
        ValueError: an unknown `direction`, or an `axis` that is not a constant scalar.
    """
    with name_scope(name or "sort"):
        return _sort_or_argsort(values, axis, direction, return_argsort=False)


def argsort(values, axis=-1, direction="ASCENDING", stable=False, name=None):
    """`tf.argsort`: the int32 indices that sort `values` along `axis` (equal values keep their
    order, so every sort is stable, as TF's)."""
    del stable  # (top_k keeps equal values in order: always stable)
    with name_scope(name or "argsort"):
        return _sort_or_argsort(values, axis, direction, return_argsort=True)


# -- searchsorted: LowerBound, UpperBound ------------------------------------------------------------
def _bound_shape(inputs, attrs):
    return [(attrs["out_type"], inputs[1].shape)]


def _bound_kernel(side):
    def kernel(ctx, node, sorted_inputs, values):
        sorted_inputs, values = np.asarray(sorted_inputs), np.asarray(values)
        if len(sorted_inputs) != len(values):
            raise invalid_argument(node, "Leading dim_size of both tensors must match.")
        out = np.empty(values.shape, dtype=node.attr["out_type"].np)
        for row, (seq, vals) in enumerate(zip(sorted_inputs, values)):
            out[row] = np.searchsorted(seq, vals, side=side)
        return out

    return kernel


for _t, _side in (("LowerBound", "left"), ("UpperBound", "right")):
    registry.shape(_t)(_bound_shape)
    registry.kernel(_t)(_bound_kernel(_side))
    registry.no_gradient(_t)


def searchsorted(sorted_sequence, values, side="left", out_type=_dtypes.int32, name=None):
    """`tf.searchsorted`: for each value, the index in its row of `sorted_sequence` (sorted on
    the last axis) where it would be inserted: before equal entries (``side="left"``) or after.

    Raises:
        ValueError: `side` other than ``"left"`` or ``"right"``.
    """
    if side not in ("left", "right"):
        raise ValueError(f"Argument `side` must be either 'right' or 'left'. Received: `side` = {side}.")
    with name_scope(name or "searchsorted"):
        sorted_sequence = convert_to_tensor(sorted_sequence, name="sorted_sequence")
        values = convert_to_tensor(values, name="values", dtype=sorted_sequence.dtype)
        seq_2d = reshape(sorted_sequence, [-1, shape(sorted_sequence)[-1]])
        values_2d = reshape(values, [-1, shape(values)[-1]])
        op_type = "UpperBound" if side == "right" else "LowerBound"
        attrs = {"out_type": _dtypes.as_dtype(out_type)}
        out = registry.make_op(op_type, [seq_2d, values_2d], attrs).outputs[0]
        return reshape(out, shape(values))


# -- where_v2: SelectV2, Where ------------------------------------------------------------------------
@registry.shape("SelectV2")
def _select_v2_shape(inputs, attrs):
    cond, x, y = inputs
    if x.dtype != y.dtype:
        raise TypeError(
            f"tf.where_v2: x and y must have the same dtype, got {x.dtype.name} and {y.dtype.name}"
        )
    return [(x.dtype, broadcast_shape(broadcast_shape(cond.shape, x.shape), y.shape))]


registry.kernel("SelectV2")(lambda ctx, node, c, x, y: np.where(c, x, y))


@registry.gradient("SelectV2")
def _select_v2_grad(op, grad):
    c, x, y = op.inputs
    zeros = math_ops.zeros_like(grad)
    gx = where_v2(c, grad, zeros)
    gy = where_v2(c, zeros, grad)
    return [None, math_ops.sum_to_shape(gx, x), math_ops.sum_to_shape(gy, y)]


@registry.shape("Where")
def _where_shape(inputs, attrs):
    return [(_dtypes.int64, TensorShape([None, inputs[0].shape.ndims]))]


registry.kernel("Where")(lambda ctx, node, c: np.argwhere(np.asarray(c)).astype(np.int64))
registry.no_gradient("Where")


def where_v2(condition, x=None, y=None, name=None):
    """`tf.where_v2`: `x` where `condition` is true, else `y`, all three broadcast together;
    with neither `x` nor `y`, the int64 coordinates ``[num_true, rank]`` of the true entries.

    Raises:
        ValueError: only one of `x` and `y` given.
    """
    if x is None and y is None:
        condition = convert_to_tensor(condition, preferred_dtype=_dtypes.bool, name="condition")
        return registry.make_op("Where", [condition], name=name).outputs[0]
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    condition = convert_to_tensor(condition, dtype=_dtypes.bool, name="condition")
    x, y = convert_n([x, y])
    return registry.make_op("SelectV2", [condition, x, y], name=name).outputs[0]


# -- boolean_mask --------------------------------------------------------------------------------------
def boolean_mask(tensor, mask, name="boolean_mask", axis=None):
    """`tf.boolean_mask`: the slices of `tensor` (from `axis`, over ``mask.ndim`` axes) where
    `mask` is true, flattened into one axis: built as TF's, a `gather` at ``where(mask)``.

    Raises:
        ValueError: a scalar mask, a mask of unknown rank, or one whose static shape does not
            match ``tensor.shape[axis:axis + mask.ndim]``.
    """
    with name_scope(name):
        tensor = convert_to_tensor(tensor, name="tensor")
        mask = convert_to_tensor(mask, name="mask")
        ndims_mask = mask.shape.ndims
        if ndims_mask == 0:
            raise ValueError("mask cannot be scalar.")
        if ndims_mask is None:
            raise ValueError(
                "Number of mask dimensions must be specified, even if some dimensions are None.  "
                "E.g. shape=[None] is ok, but shape=None is not."
            )
        axis = 0 if axis is None else int(get_static_value(axis))
        ndims = tensor.shape.ndims
        if ndims is None and axis != 0:
            raise ValueError(f"tf.boolean_mask: tensor {tensor.name} must have a known rank for axis={axis}")
        dims = shape(tensor)
        if ndims is None:  # (axis 0: the masked axes flattened, whatever follows them)
            leading = reduction_ops.reduce_prod(dims[:ndims_mask], axis=[0], keepdims=True)
            flat = reshape(tensor, concat([leading, dims[ndims_mask:]], 0))
        else:
            axis = axis + ndims if axis < 0 else axis
            masked = TensorShape(tensor.shape.as_list()[axis : axis + ndims_mask])
            if not masked.is_compatible_with(mask.shape):
                raise ValueError(f"Shapes {_tuple(masked)} and {_tuple(mask.shape)} are incompatible")
            leading = reduction_ops.reduce_prod(dims[axis : axis + ndims_mask], axis=[0], keepdims=True)
            flat = reshape(tensor, concat([dims[:axis], leading, dims[axis + ndims_mask :]], 0))
            static = tensor.shape.as_list()
            flat.set_shape(TensorShape([*static[:axis], masked.num_elements(), *static[axis + ndims_mask :]]))
        indices = squeeze(where_v2(reshape(mask, [-1])), axis=[1])
        if axis == 0:
            return reduction_ops.gather(flat, indices)
        perm = [axis, *range(axis), *range(axis + 1, ndims - ndims_mask + 1)]  # (nbdist gathers axis 0)
        inverse = [*range(1, axis + 1), 0, *range(axis + 1, ndims - ndims_mask + 1)]
        return transpose(reduction_ops.gather(transpose(flat, perm), indices), inverse)


def _tuple(shape_):
    dims = tuple(shape_.as_list()) if shape_.ndims is not None else None
    return dims


# -- unique_with_counts, setdiff1d ---------------------------------------------------------------------
@registry.shape("UniqueWithCounts")
def _unique_with_counts_shape(inputs, attrs):
    x = inputs[0]
    if x.shape.ndims not in (None, 1):
        raise ValueError(f"tf.unique_with_counts: x must be 1-D, got {x.name} of shape {x.shape}")
    return [
        (x.dtype, TensorShape([None])),
        (attrs["out_idx"], x.shape),
        (attrs["out_idx"], TensorShape([None])),
    ]


@registry.kernel("UniqueWithCounts")
def _unique_with_counts_kernel(ctx, node, x):
    if np.ndim(x) != 1:
        raise invalid_argument(node, f"unique expects a 1D vector, got shape {list(np.shape(x))}")
    values, first, inverse, counts = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
    order = np.argsort(first, kind="stable")  # (TF's order: first occurrence)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    out_idx = node.attr["out_idx"].np
    return values[order], rank[np.ravel(inverse)].astype(out_idx), counts[order].astype(out_idx)


registry.no_gradient("UniqueWithCounts")


def unique_with_counts(x, out_idx=_dtypes.int32, name=None):
    """`tf.unique_with_counts`: ``(y, idx, count)``: the distinct values of the 1-D `x` in
    order of first occurrence, each entry's position in `y`, and how often each occurs."""
    x = convert_to_tensor(x, name="x")
    op = registry.make_op("UniqueWithCounts", [x], {"out_idx": _dtypes.as_dtype(out_idx)}, name=name)
    return tuple(op.outputs)


def setdiff1d(x, y, index_dtype=_dtypes.int32, name=None):
    """`tf.setdiff1d`: ``(out, idx)``: the entries of the 1-D `x` not in `y`, in order, and
    their positions in `x` (``ListDiff``)."""
    x = convert_to_tensor(x, name="x")
    y = convert_to_tensor(y, dtype=x.dtype, name="y")
    op = registry.make_op("ListDiff", [x, y], {"out_idx": _dtypes.as_dtype(index_dtype)}, name=name)
    return op.outputs[0], op.outputs[1]


# -- histogram_fixed_width(_bins) ----------------------------------------------------------------------
@registry.shape("HistogramFixedWidth")
def _histogram_shape(inputs, attrs):
    nbins = get_static_value(inputs[2])
    return [(attrs["dtype"], TensorShape([None if nbins is None else int(nbins)]))]


@registry.kernel("HistogramFixedWidth")
def _histogram_kernel(ctx, node, values, value_range, nbins):
    values, value_range, nbins = np.asarray(values), np.asarray(value_range), int(nbins)
    if nbins <= 0:
        raise invalid_argument(node, f"nbins should be a positive number, but got '{nbins}'")
    low, high = value_range[0], value_range[1]
    if not low < high:
        raise invalid_argument(
            node, f"value_range should satisfy value_range[0] < value_range[1], but got '[{low:g}, {high:g}]'"
        )
    step = (float(high) - float(low)) / nbins  # (TF's kernel: the offset in the values' dtype, then double)
    offsets = (np.maximum(values, low) - low).astype(np.float64)
    bins = np.minimum(offsets / step, nbins - 1).astype(np.int64)
    return np.bincount(bins.ravel(), minlength=nbins).astype(node.attr["dtype"].np)


registry.no_gradient("HistogramFixedWidth")


def histogram_fixed_width(values, value_range, nbins=100, dtype=_dtypes.int32, name=None):
    """`tf.histogram_fixed_width`: counts of `values` in `nbins` equal bins over `value_range`
    (``[low, high]``; values below fall in the first bin, above in the last)."""
    with name_scope(name or "histogram_fixed_width") as scope:
        values = convert_to_tensor(values, name="values")
        value_range = convert_to_tensor(value_range, dtype=values.dtype, name="value_range")
        nbins = convert_to_tensor(nbins, dtype=_dtypes.int32, name="nbins")
        known = get_static_value(nbins)
        if known is not None and int(known) <= 0:
            raise ValueError(f"nbins should be a positive number, but got '{int(known)}'")
        attrs = {"dtype": _dtypes.as_dtype(dtype)}
        inputs = [values, value_range, nbins]
        return registry.make_op("HistogramFixedWidth", inputs, attrs, name=scope[:-1]).outputs[0]


def histogram_fixed_width_bins(values, value_range, nbins=100, dtype=_dtypes.int32, name=None):
    """`tf.histogram_fixed_width_bins`: the bin of each of `values` (as `histogram_fixed_width`
    counts them), of `values`' shape; built as TF's, from a floor and a clip."""
    with name_scope(name or "histogram_fixed_width_bins"):
        values = convert_to_tensor(values, name="values")
        dims = shape(values)
        flat = reshape(values, [-1])
        value_range = convert_to_tensor(value_range, dtype=values.dtype, name="value_range")
        nbins_float = math_ops.cast(convert_to_tensor(nbins, dtype=_dtypes.int32, name="nbins"), values.dtype)
        scaled = math_ops.truediv(
            flat - value_range[0], value_range[1] - value_range[0], name="scaled_values"
        )
        indices = math_ops.floor(nbins_float * scaled, name="indices")
        indices = math_ops.cast(clip_by_value(indices, 0, nbins_float - 1), _dtypes.as_dtype(dtype))
        return reshape(indices, dims)


# -- arg_max, arg_min (TF 1.x's raw-op names) ----------------------------------------------------------
def arg_max(input, dimension, output_type=_dtypes.int64, name=None):  # noqa: A002 - TF's argument name
    """`tf.arg_max`: `tf.argmax` with a required `dimension` (TF's deprecated raw-op name)."""
    if isinstance(dimension, Tensor) and not dimension.dtype.is_integer:
        raise TypeError(f"tf.arg_max: dimension must be int32 or int64, got {dimension.dtype.name}")
    return reduction_ops.argmax(input, dimension=dimension, name=name, output_type=output_type)


def arg_min(input, dimension, output_type=_dtypes.int64, name=None):  # noqa: A002 - TF's argument name
    """`tf.arg_min`: `tf.argmin` with a required `dimension` (TF's deprecated raw-op name)."""
    if isinstance(dimension, Tensor) and not dimension.dtype.is_integer:
        raise TypeError(f"tf.arg_min: dimension must be int32 or int64, got {dimension.dtype.name}")
    return reduction_ops.argmin(input, dimension=dimension, name=name, output_type=output_type)
