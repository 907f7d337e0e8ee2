"""Reductions (`reduce_sum`, `reduce_mean`, `reduce_max`, `reduce_prod`, `argmax`, and TF's
`reduce_euclidean_norm`) and index ops (`gather`,
`unsorted_segment_sum`, `one_hot`), each with its shape function, kernel and gradient.

Reduction axes are an input tensor as in TF (``axis=None`` means all axes), and the
gradients rebuild the kept-dims shape at run time (`ReducedShape`), so they work when
static dimensions are unknown. The gradient of `gather` with respect to its params is an
`IndexedSlices` (the rows it read and their gradients, as TF); `unsorted_segment_sum` is
what densifies one (`tf.convert_to_tensor(indexed_slices)`, registered here).
"""

import functools
import warnings

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import Tensor
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import math_ops, registry
from nbdist.ops._shapes import int_tensor, invalid_argument, normalize_axis
from nbdist.ops.concat_slice_ops import concat
from nbdist.ops.concat_slice_ops import slice as _slice
from nbdist.ops.constant_op import constant, convert_to_tensor, register_tensor_conversion_function
from nbdist.ops.indexed_slices import IndexedSlices
from nbdist.ops.reshape_ops import expand_dims, reshape, transpose
from nbdist.ops.scan_ops import cumprod
from nbdist.ops.shape_ops import get_static_value, shape, size

__all__ = [
    "argmax",
    "argmin",
    "gather",
    "one_hot",
    "reduce_all",
    "reduce_any",
    "reduce_logsumexp",
    "reduce_max",
    "reduce_mean",
    "reduce_min",
    "reduce_prod",
    "reduce_sum",
    "unsorted_segment_sum",
]

_NUMERIC = ("Sum", "Mean", "Max", "Min", "Prod", "EuclideanNorm")
_BOOLEAN = ("All", "Any")


# -- shared: axes, shapes ------------------------------------------------------------------------
def _alias(value, alias, name, alias_name):
    if alias is not None:
        if value is not None:
            raise ValueError(f"pass either {name} or {alias_name} (its TF1 alias), not both")
        return alias
    return value


def _axes_tensor(x, axis):
    """`axis` as an int tensor; ``None`` means every axis of `x` (counted at run time if need be)."""
    if axis is None:
        if x.shape.ndims is not None:
            return constant(np.arange(x.shape.ndims, dtype=np.int32), name="reduction_indices")
        return math_ops.range(0, registry.make_op("Rank", [x]).outputs[0], 1)
    return int_tensor(axis, "axis", name="reduction_indices")


def _static_axes(axes, ndims, where):
    """The sorted, non-negative, distinct axes, as a tuple.

    Raises:
        ValueError: naming the bad axis.
    """
    flat = axes.ravel().tolist() if isinstance(axes, (np.ndarray, np.generic)) else np.ravel(axes).tolist()
    for a in flat:
        if not -ndims <= a < ndims:
            raise ValueError(f"{where}: invalid reduction axis {int(a)} for an input of rank {ndims}")
    if len(flat) == 1:  # (the common case)
        return (flat[0] % ndims,)
    return tuple(sorted({a % ndims for a in flat}))


def _reduce_shape(inputs, attrs, op_type):
    x, axes_t = inputs
    if op_type in _BOOLEAN and not x.dtype.is_bool:
        raise TypeError(f"tf.reduce_{op_type.lower()} needs a bool tensor, got {x.dtype.name} ({x.name})")
    if op_type in _NUMERIC and not (x.dtype.is_floating or x.dtype.is_integer):
        raise TypeError(f"{op_type} needs a numeric tensor, got {x.dtype.name} ({x.name})")
    keep = attrs["keep_dims"]
    axes = get_static_value(axes_t)
    if x.shape.ndims is None or axes is None:
        unknown = keep and x.shape.ndims is not None
        return [(x.dtype, TensorShape([None] * x.shape.ndims if unknown else None))]
    axes = _static_axes(axes, x.shape.ndims, f"tf.reduce_{op_type.lower()}({x.name})")
    dims = (
        [1 if i in axes else d for i, d in enumerate(x.shape)]
        if keep
        else [d for i, d in enumerate(x.shape) if i not in axes]
    )
    return [(x.dtype, TensorShape(dims))]


def _reduce_kernel(fn):
    def kernel(ctx, node, x, axes):
        try:
            axes = _static_axes(axes, np.ndim(x), "reduction")
        except ValueError as e:
            raise invalid_argument(node, f"{e} (input shape {list(np.shape(x))})") from None
        out = np.asarray(fn(x, axis=axes, keepdims=node.attr["keep_dims"]))
        return out if out.dtype == x.dtype else out.astype(x.dtype)

    return kernel


def _mean(x, axis, keepdims):
    """`np.mean`, without its Python-level bookkeeping for float32/64 (the same sum and the
    same division: numpy's own `_mean` divides the float sum by the count in place)."""
    if not (isinstance(x, np.ndarray) and x.dtype.char in "fd" and x.size):
        return np.mean(x, axis=axis, keepdims=keepdims)
    count = 1
    for a in axis:
        count *= x.shape[a]
    total = np.add.reduce(x, axis=axis, keepdims=keepdims)
    if isinstance(total, np.ndarray):
        return np.true_divide(total, count, out=total, casting="unsafe")
    return total.dtype.type(total / count)


# (np.add.reduce is what np.sum calls for an array, without its Python wrapper; the same dtypes)
def _euclidean_norm(x, axis, keepdims):
    return np.sqrt(np.add.reduce(np.square(x), axis=axis, keepdims=keepdims))


def _extreme(fn, lowest):
    """`np.max` / `np.min`; over no elements TF's identity (the dtype's lowest / highest value)."""

    def reduce(x, axis, keepdims):
        if np.size(x) or np.asarray(x).dtype.kind not in "iuf":
            return fn(x, axis=axis, keepdims=keepdims)
        if x.dtype.kind == "f":
            initial = -np.inf if lowest else np.inf
        else:
            initial = np.iinfo(x.dtype).min if lowest else np.iinfo(x.dtype).max
        return fn(x, axis=axis, keepdims=keepdims, initial=initial)

    return reduce


_KERNELS = {"Sum": np.add.reduce, "Mean": _mean, "All": np.all, "Any": np.any}
_KERNELS.update({"Max": _extreme(np.max, True), "Min": _extreme(np.min, False)})
_KERNELS.update({"Prod": np.multiply.reduce, "EuclideanNorm": _euclidean_norm})
for _t, _fn in _KERNELS.items():
    registry.shape(_t)(functools.partial(_reduce_shape, op_type=_t))
    registry.kernel(_t)(_reduce_kernel(_fn))
for _t in _BOOLEAN:
    registry.no_gradient(_t)


# `ReducedShape(input_shape, axes)`: input_shape with the reduced axes set to 1 (at run time).
registry.shape("ReducedShape")(lambda inputs, attrs: [(inputs[0].dtype, inputs[0].shape)])
registry.no_gradient("ReducedShape")


@registry.kernel("ReducedShape")
def _reduced_shape_kernel(ctx, node, input_shape, axes):
    dims = np.ravel(input_shape).tolist()
    for a in np.ravel(axes).tolist() if dims else ():
        dims[a % len(dims)] = 1
    return np.array(dims, dtype=np.asarray(input_shape).dtype)


def _kept_dims_shape(op):
    """The runtime shape of `op`'s output as if it had been built with ``keepdims=True``."""
    x, axes = op.inputs
    return registry.make_op("ReducedShape", [shape(x), axes]).outputs[0]


# -- gradients --------------------------------------------------------------------------------------
@registry.gradient("Sum")
def _sum_grad(op, grad):
    kept = grad if op.get_attr("keep_dims") else reshape(grad, _kept_dims_shape(op))
    return [math_ops.broadcast_to_like(kept, op.inputs[0]), None]


@registry.gradient("Mean")
def _mean_grad(op, grad):
    x, y = op.inputs[0], op.outputs[0]
    if x.shape.is_fully_defined() and y.shape.is_fully_defined():
        factor = constant(x.shape.num_elements() // max(y.shape.num_elements(), 1), dtype=grad.dtype)
    else:
        factor = math_ops.cast(math_ops.floordiv(size(x), math_ops.maximum(size(y), 1)), grad.dtype)
    return [_sum_grad(op, grad)[0] / factor, None]


def _max_min_grad(op, grad):
    """TF's rule: the gradient is shared equally by the elements equal to the result."""
    x, axes = op.inputs
    kept = _kept_dims_shape(op)
    indicators = math_ops.cast(math_ops.equal(reshape(op.outputs[0], kept), x), grad.dtype)
    count = reshape(reduce_sum(indicators, axes), kept)
    return [indicators / count * reshape(grad, kept), None]


registry.gradient("Max")(_max_min_grad)
registry.gradient("Min")(_max_min_grad)


def _others_product(x, axes):
    """Each element's product of the other elements over `axes` (no division: zeros are fine).

    Those whose index on ``axes[0]`` differs (an exclusive product both ways along it, then the
    product over the other axes), times those whose index on it is the same (recursively).
    """
    first, rest = axes[0], axes[1:]
    others = cumprod(x, first, exclusive=True) * cumprod(x, first, exclusive=True, reverse=True)
    if not rest:
        return others
    return reduce_prod(others, list(rest), keepdims=True) * _others_product(x, rest)


@registry.gradient("Prod")
def _prod_grad(op, grad):
    x, axes_t = op.inputs
    axes = get_static_value(axes_t)
    if axes is None or x.shape.ndims is None:
        raise ValueError(
            f"the gradient of tf.reduce_prod ({op.name}) needs static axes and rank; "
            f"got axes {axes_t.name} and an input of shape {x.shape}"
        )
    axes = _static_axes(axes, x.shape.ndims, f"the gradient of {op.name}")
    if not axes:
        return [grad, None]
    return [reshape(grad, _kept_dims_shape(op)) * _others_product(x, axes), None]


@registry.gradient("EuclideanNorm")
def _euclidean_norm_grad(op, grad):
    kept = _kept_dims_shape(op)
    return [op.inputs[0] / (reshape(op.outputs[0], kept) / reshape(grad, kept)), None]


# -- constructors -----------------------------------------------------------------------------------
def _reduce(op_type, input_tensor, axis, keepdims, name, reduction_indices, keep_dims):
    axis = _alias(axis, reduction_indices, "axis", "reduction_indices")
    keepdims = _alias(keepdims, keep_dims, "keepdims", "keep_dims")
    x = convert_to_tensor(input_tensor)
    attrs = {"keep_dims": bool(keepdims)}
    return registry.make_op(op_type, [x, _axes_tensor(x, axis)], attrs, name=name).outputs[0]


def reduce_sum(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None):
    """`tf.reduce_sum`: the sum over `axis` (an int, a list, or None for all axes).

    Args:
        keepdims: keep reduced axes with size 1 (``keep_dims`` is TF1's alias).
        reduction_indices: TF1's alias of `axis`.

    Raises:
        ValueError: for an axis out of range, or both a name and its alias.
    """
    return _reduce("Sum", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_mean(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None):
    """`tf.reduce_mean`: the mean over `axis` (integer inputs: truncated, as TF)."""
    return _reduce("Mean", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_max(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None):
    """`tf.reduce_max`: the maximum over `axis`; ties share the gradient equally."""
    return _reduce("Max", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_min(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None):
    """`tf.reduce_min`: the minimum over `axis`; ties share the gradient equally."""
    return _reduce("Min", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_all(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None):
    """`tf.reduce_all`: logical and over `axis` of a bool tensor."""
    return _reduce("All", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_any(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None):
    """`tf.reduce_any`: logical or over `axis` of a bool tensor."""
    return _reduce("Any", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_prod(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None):
    """`tf.reduce_prod`: the product over `axis` (its gradient handles zeros, as TF's)."""
    return _reduce("Prod", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_euclidean_norm(input_tensor, axis=None, keepdims=False, name=None):
    """`tf.math.reduce_euclidean_norm`: ``sqrt(sum(x ** 2))`` over `axis`."""
    return _reduce("EuclideanNorm", input_tensor, axis, keepdims, name, None, None)


def reduce_logsumexp(
    input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None
):
    """`tf.reduce_logsumexp`: ``log(sum(exp(x)))`` over `axis`, without overflow (TF's formula)."""
    axis = _alias(axis, reduction_indices, "axis", "reduction_indices")
    keepdims = bool(_alias(keepdims, keep_dims, "keepdims", "keep_dims"))
    x = convert_to_tensor(input_tensor)
    raw_max = reduce_max(x, axis, keepdims=True)
    finite = math_ops.less(math_ops.abs(raw_max), np.inf)
    shift = math_ops.stop_gradient(math_ops.where(finite, raw_max, math_ops.zeros_like(raw_max)))
    result = math_ops.log(reduce_sum(math_ops.exp(x - shift), axis, keepdims=keepdims))
    if not keepdims:
        shift = reshape(shift, shape(result))
    return math_ops.add(result, shift, name=name)


# -- argmax, argmin ---------------------------------------------------------------------------------
@registry.shape("ArgMax")
def _arg_shape(inputs, attrs):
    x, axis_t = inputs
    axis = get_static_value(axis_t)
    if x.shape.ndims is None or axis is None:
        return [
            (
                attrs["output_type"],
                TensorShape(None if x.shape.ndims is None else [None] * (x.shape.ndims - 1)),
            )
        ]
    dims = x.shape.as_list()
    del dims[normalize_axis(int(axis), len(dims), "tf.argmax")]
    return [(attrs["output_type"], TensorShape(dims))]


registry.shape("ArgMin")(_arg_shape)
registry.kernel("ArgMax")(
    lambda ctx, node, x, axis: np.argmax(x, int(axis)).astype(node.attr["output_type"].np)
)
registry.kernel("ArgMin")(
    lambda ctx, node, x, axis: np.argmin(x, int(axis)).astype(node.attr["output_type"].np)
)
registry.no_gradient("ArgMax")
registry.no_gradient("ArgMin")


def _arg(op_type, input, axis, name, dimension, output_type):  # noqa: A002 - TF's argument name
    axis = _alias(axis, dimension, "axis", "dimension")
    attrs = {"output_type": _dtypes.as_dtype(output_type)}
    inputs = [convert_to_tensor(input), int_tensor(0 if axis is None else axis, "axis", name="dimension")]
    return registry.make_op(op_type, inputs, attrs, name=name).outputs[0]


def argmax(input, axis=None, name=None, dimension=None, output_type=_dtypes.int64):  # noqa: A002
    """`tf.argmax`: the index of the largest value along `axis` (default 0; first one on ties)."""
    return _arg("ArgMax", input, axis, name, dimension, output_type)


def argmin(input, axis=None, name=None, dimension=None, output_type=_dtypes.int64):  # noqa: A002
    """`tf.argmin`: the index of the smallest value along `axis` (default 0; first one on ties)."""
    return _arg("ArgMin", input, axis, name, dimension, output_type)


# -- one_hot, gather ---------------------------------------------------------------------------------
@registry.shape("OneHot")
def _one_hot_shape(inputs, attrs):
    indices, depth_t, on, _ = inputs
    depth = get_static_value(depth_t)
    if indices.shape.ndims is None:
        return [(on.dtype, TensorShape(None))]
    dims = indices.shape.as_list()
    axis = attrs["axis"] % (len(dims) + 1)
    return [(on.dtype, TensorShape([*dims[:axis], None if depth is None else int(depth), *dims[axis:]]))]


@registry.kernel("OneHot")
def _one_hot_kernel(ctx, node, indices, depth, on, off):
    hot = np.expand_dims(indices, -1) == np.arange(int(depth))  # out-of-range rows are all off
    out = np.where(hot, on, off).astype(np.asarray(on).dtype, copy=False)
    return np.moveaxis(out, -1, node.attr["axis"] % out.ndim)


registry.no_gradient("OneHot")


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    """`tf.one_hot`: `on_value` where ``j == indices[...]`` on the new axis, `off_value` elsewhere.

    Indices outside ``[0, depth)`` give rows of `off_value` (as TF).
    """
    if dtype is None:
        known = [v for v in (on_value, off_value) if isinstance(v, Tensor)]
        dtype = known[0].dtype if known else _dtypes.float32
    on = convert_to_tensor(1 if on_value is None else on_value, dtype=dtype)
    off = convert_to_tensor(0 if off_value is None else off_value, dtype=dtype)
    inputs = [int_tensor(indices, "indices"), int_tensor(depth, "depth"), on, off]
    return registry.make_op("OneHot", inputs, {"axis": -1 if axis is None else int(axis)}, name=name).outputs[
        0
    ]


@registry.shape("GatherV2")
def _gather_shape(inputs, attrs):
    params, indices = inputs[:2]
    if params.shape.ndims is None or indices.shape.ndims is None:
        return [(params.dtype, TensorShape(None))]
    if params.shape.ndims == 0:
        raise ValueError(f"tf.gather: params {params.name} must have rank >= 1, got a scalar")
    return [(params.dtype, TensorShape(indices.shape.as_list() + params.shape.as_list()[1:]))]


@registry.kernel("GatherV2")
def _gather_kernel(ctx, node, params, indices, axis):
    bad = (indices < 0) | (indices >= len(params))
    if np.any(bad):
        pos = tuple(int(i) for i in np.argwhere(bad)[0])
        where = ",".join(str(i) for i in pos)  # (TF's "indices[0,1] = 5 is not in [0, 2)")
        raise invalid_argument(node, f"indices[{where}] = {int(indices[pos])} is not in [0, {len(params)})")
    return np.take(params, indices, axis=0)


@registry.gradient("GatherV2")
def _gather_grad(op, grad):
    """The rows that were read and their gradients: an `IndexedSlices`, as TF's.

    The params' shape is read where the params live (on the ps for a variable), so nothing
    of the table's size crosses the wire; only ``len(indices)`` rows of values do.
    """
    params, indices, _ = op.inputs
    with op.graph.colocate_with(params.op):
        params_shape = shape(params)
    indices_size = expand_dims(size(indices), 0)
    values_shape = concat([indices_size, _slice(params_shape, [1], [-1])], 0)
    values = reshape(_to_dense(grad), values_shape)
    num_indices = indices.shape.num_elements() if indices.shape.is_fully_defined() else None
    values.set_shape(TensorShape([num_indices]).concatenate(params.shape[1:]))
    return [IndexedSlices(values, reshape(indices, indices_size), params_shape), None, None]


def gather(params, indices, validate_indices=None, name=None, axis=None, batch_dims=0):
    """`tf.gather`: ``params[indices]`` along `axis` (0 when None; the gradient of axis 0 is an
    `IndexedSlices`). Another axis is `params` transposed to put it first, gathered, and back.

    Raises:
        ValueError: `batch_dims` (use `tf.batch_gather`), an axis that is not constant, or one
            other than 0 with `params` or `indices` of unknown rank.
    """
    if batch_dims != 0:
        raise ValueError(
            f"tf.gather: nbdist supports batch_dims=0 only, got {batch_dims!r}; see tf.batch_gather"
        )
    static_axis = get_static_value(0 if axis is None else axis)
    if static_axis is None:
        raise ValueError(f"tf.gather: nbdist needs a constant axis, got {axis!r}")
    params, indices = convert_to_tensor(params), int_tensor(indices, "indices")
    if int(static_axis) != 0:
        return _gather_along(params, indices, int(static_axis), name)
    inputs = [params, indices, constant(0, dtype=_dtypes.int32)]
    return registry.make_op("GatherV2", inputs, name=name).outputs[0]


def _gather_along(params, indices, axis, name):
    ndims, index_ndims = params.shape.ndims, indices.shape.ndims
    if ndims is None or index_ndims is None:
        raise ValueError(f"tf.gather: axis {axis} needs params and indices of known rank in nbdist")
    axis = normalize_axis(axis, ndims, "tf.gather")
    taken = gather(transpose(params, [axis, *range(axis), *range(axis + 1, ndims)]), indices)
    shift = [
        *range(index_ndims, index_ndims + axis),
        *range(index_ndims),
        *range(index_ndims + axis, taken.shape.ndims),
    ]
    return transpose(taken, shift, name=name or "GatherV2")


# -- IndexedSlices -> dense --------------------------------------------------------------------------
_LARGE_SPARSE_NUM_ELEMENTS = 100_000_000  # TF warns above this many elements


def _to_dense(value, name=None):
    """`value` as a dense tensor: an `IndexedSlices` is summed into its dense shape."""
    if not isinstance(value, IndexedSlices):
        return value
    if value.dense_shape is None:
        raise ValueError(f"Tensor conversion requested for IndexedSlices without dense_shape: {value}")
    known = get_static_value(value.dense_shape)
    rows = int(known[0]) if known is not None else gather(value.dense_shape, 0)
    return unsorted_segment_sum(value.values, value.indices, rows, name=name)


def _indexed_slices_to_tensor(value, dtype=None, name=None):
    """`tf.convert_to_tensor(indexed_slices)`: densifies, with TF's warnings about memory."""
    if dtype is not None and _dtypes.as_dtype(dtype) != value.dtype:
        raise ValueError(
            f"Tensor conversion requested dtype {_dtypes.as_dtype(dtype).name} for IndexedSlices "
            f"with dtype {value.dtype.name}"
        )
    if value.dense_shape is not None:
        known = get_static_value(value.dense_shape)
        if known is None:
            warnings.warn(
                "Converting sparse IndexedSlices to a dense Tensor of unknown shape. "
                "This may consume a large amount of memory.",
                UserWarning,
                stacklevel=3,
            )
        elif np.prod(known) >= _LARGE_SPARSE_NUM_ELEMENTS:
            warnings.warn(
                f"Converting sparse IndexedSlices to a dense Tensor with {int(np.prod(known))} elements. "
                "This may consume a large amount of memory.",
                UserWarning,
                stacklevel=3,
            )
    return _to_dense(value, name=name)


register_tensor_conversion_function(IndexedSlices, _indexed_slices_to_tensor)


# -- unsorted_segment_sum and its gradient, a gather that drops negative indices -----------------------
@registry.shape("UnsortedSegmentSum")
def _segment_sum_shape(inputs, attrs):
    data, ids, num_t = inputs
    num = get_static_value(num_t)
    if data.shape.ndims is None or ids.shape.ndims is None:
        return [(data.dtype, TensorShape(None))]
    if not data.shape[: ids.shape.ndims].is_compatible_with(ids.shape):
        raise ValueError(
            f"tf.unsorted_segment_sum: segment_ids shape {ids.shape} must be a prefix "
            f"of data shape {data.shape}"
        )
    rest = data.shape.as_list()[ids.shape.ndims :]
    return [(data.dtype, TensorShape([None if num is None else int(num), *rest]))]


@registry.kernel("UnsortedSegmentSum")
def _segment_sum_kernel(ctx, node, data, ids, num):
    num = int(num)
    if np.shape(data)[: np.ndim(ids)] != np.shape(ids):
        raise invalid_argument(
            node,
            f"segment_ids shape {list(np.shape(ids))} is not a prefix of data shape {list(np.shape(data))}",
        )
    if np.any(ids >= num):
        pos = tuple(int(i) for i in np.argwhere(ids >= num)[0])
        raise invalid_argument(node, f"segment_ids{list(pos)} = {int(ids[pos])} is out of range [0, {num})")
    out = np.zeros((num, *np.shape(data)[np.ndim(ids) :]), dtype=np.asarray(data).dtype)
    keep = ids >= 0  # negative ids are dropped, as TF does
    np.add.at(out, ids[keep], np.asarray(data)[keep])
    return out


registry.gradient("UnsortedSegmentSum")(
    lambda op, grad: [gather_drop_negatives(grad, op.inputs[1]), None, None]
)


def unsorted_segment_sum(data, segment_ids, num_segments, name=None):
    """`tf.unsorted_segment_sum`: ``out[i] = sum(data[j] for j where segment_ids[j] == i)``.

    `segment_ids` indexes the leading dimensions of `data`; negative ids are dropped.
    """
    inputs = [
        convert_to_tensor(data),
        int_tensor(segment_ids, "segment_ids"),
        int_tensor(num_segments, "num_segments"),
    ]
    return registry.make_op("UnsortedSegmentSum", inputs, name=name).outputs[0]


registry.shape("GatherDropNegatives")(_gather_shape)


@registry.kernel("GatherDropNegatives")
def _gather_drop_negatives_kernel(ctx, node, params, indices):
    if np.any(indices >= len(params)):
        raise invalid_argument(node, f"indices {indices.tolist()} must be < {len(params)}")
    out = np.take(params, np.maximum(indices, 0), axis=0)
    mask = (indices >= 0).reshape(np.shape(indices) + (1,) * (np.ndim(params) - 1))
    return np.where(mask, out, np.zeros((), out.dtype))


@registry.gradient("GatherDropNegatives")
def _gather_drop_negatives_grad(op, grad):
    params, indices = op.inputs
    return [unsorted_segment_sum(grad, indices, gather(shape(params), 0)), None]


def gather_drop_negatives(params, indices):
    """``params[indices]`` with zero rows where an index is negative (the gradient of a segment sum)."""
    return registry.make_op("GatherDropNegatives", [params, indices]).outputs[0]
