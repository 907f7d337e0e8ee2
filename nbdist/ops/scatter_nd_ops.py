"""N-d indexing: `tf.gather_nd`, `tf.scatter_nd`, the `tf.tensor_scatter_*` family and
`tf.batch_gather`.

An index is a vector of ``K`` coordinates (the last axis of `indices`) naming a slice
``x[i0, ..., iK-1]`` of a tensor; `GatherNd` reads such slices, `ScatterNd` adds updates into
zeros at them, `TensorScatter*` write them into a copy of a tensor. The kernels flatten the
first ``K`` axes so every index becomes one row number. Each op's shape, kernel and gradient sit
side by side, as TF's ``array_grad.py`` defines them.
"""

import numpy as np

from nbdist.graph.graph import name_scope
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import math_ops, registry
from nbdist.ops._shapes import int_tensor, invalid_argument, tf_dims
from nbdist.ops.concat_slice_ops import concat, stack
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.reduction_ops import gather, reduce_prod
from nbdist.ops.reshape_ops import reshape
from nbdist.ops.shape_ops import get_static_value, shape

__all__ = ["batch_gather", "gather_nd", "scatter_nd", "tensor_scatter_add", "tensor_scatter_nd_add"]
__all__ += ["tensor_scatter_nd_max", "tensor_scatter_nd_min", "tensor_scatter_nd_sub"]
__all__ += ["tensor_scatter_nd_update", "tensor_scatter_sub", "tensor_scatter_update"]


def _rows(node, indices, shape_, what):
    """`indices` ``[..., K]`` as row numbers of `shape_` with its first K axes flattened, and
    the mask of the valid ones (all, unless the node's ``bad_indices_policy`` is ``"IGNORE"``).

    Raises:
        InvalidArgumentError: an index outside `shape_` (naming it, as TF).
    """
    indices = np.asarray(indices)
    k = indices.shape[-1]
    if k > len(shape_):
        raise invalid_argument(
            node, f"index depth {k} is larger than the rank {len(shape_)} of shape {list(shape_)}"
        )
    flat = indices.reshape(int(np.prod(indices.shape[:-1])), k).astype(np.int64)
    outer = np.asarray(shape_[:k], dtype=np.int64)
    invalid = np.any((flat < 0) | (flat >= outer), axis=1)
    bad = np.flatnonzero(invalid)
    if bad.size and node.attr.get("bad_indices_policy") == "IGNORE":
        flat = np.where(invalid[:, None], 0, flat)
    elif bad.size:
        i = int(bad[0])
        coords = ", ".join(str(int(c)) for c in flat[i])
        if (
            what == "param shape" and indices.ndim > 1
        ):  # (GatherNd names the index's position, ScatterNd its number)
            i = ",".join(str(int(w)) for w in np.unravel_index(i, indices.shape[:-1]))
        raise invalid_argument(
            node, f"indices[{i}] = [{coords}] does not index into {what} {tf_dims(shape_)}"
        )
    valid = ~invalid
    if k == 0:
        return np.zeros(len(flat), dtype=np.int64), 1, valid
    return np.ravel_multi_index(tuple(flat.T), tuple(shape_[:k])), int(np.prod(shape_[:k])), valid


_POLICIES = ("", "DEFAULT", "ERROR", "IGNORE")


def _policy_of(op):
    """The ``bad_indices_policy`` of an op (``""`` for one imported without it)."""
    try:
        return op.get_attr("bad_indices_policy")
    except (KeyError, ValueError):
        return ""


def _policy(bad_indices_policy, what):
    if bad_indices_policy not in _POLICIES:
        raise ValueError(
            f"{what}: bad_indices_policy must be one of {list(_POLICIES)}, got {bad_indices_policy!r}"
        )
    return {"bad_indices_policy": bad_indices_policy}


def _slice_dims(indices_shape, target_shape):
    """The static ``indices.shape[:-1] + target.shape[K:]``, or an unknown shape."""
    if indices_shape.ndims is None or target_shape.ndims is None or indices_shape[-1] is None:
        return TensorShape(None)
    k = indices_shape[-1]
    if k > target_shape.ndims:
        raise ValueError(
            f"indices.shape[-1] = {k} must be <= the rank of the indexed tensor, {target_shape.ndims}"
        )
    return indices_shape[:-1].concatenate(target_shape[k:])


# -- GatherNd ----------------------------------------------------------------------------------------
@registry.shape("GatherNd")
def _gather_nd_shape(inputs, attrs):
    params, indices = inputs
    return [(params.dtype, _slice_dims(indices.shape, params.shape))]


@registry.kernel("GatherNd")
def _gather_nd_kernel(ctx, node, params, indices):
    params, indices = np.asarray(params), np.asarray(indices)
    rows, n, valid = _rows(node, indices, params.shape, "param shape")
    k = indices.shape[-1]
    flat = params.reshape((n, *params.shape[k:]))
    out = flat[rows]
    out[~valid] = 0  # (ignored bad indices read zeros, as TF's)
    return out.reshape(indices.shape[:-1] + params.shape[k:])


@registry.gradient("GatherNd")
def _gather_nd_grad(op, grad):
    params, indices = op.inputs
    dense_shape = shape(params, out_type=indices.dtype)
    return [scatter_nd(indices, grad, dense_shape, bad_indices_policy=_policy_of(op)), None]


def gather_nd(params, indices, name=None, batch_dims=0, bad_indices_policy=""):
    """`tf.gather_nd`: the slices ``params[indices[..., :]]``: shape
    ``indices.shape[:-1] + params.shape[indices.shape[-1]:]``; with `batch_dims` ``b``, the
    first ``b`` axes of both are batch axes (each batch indexes its own slice of `params`).

    Raises:
        ValueError: a negative `batch_dims`, or one with `indices` of unknown rank, an index
            depth above the rank of `params`, or an unknown `bad_indices_policy`.
        InvalidArgumentError (when run): an index outside `params` (unless the policy is
            ``"IGNORE"``: its slice is zeros).
    """
    attrs = _policy(bad_indices_policy, "tf.gather_nd")
    params = convert_to_tensor(params, name="params")
    indices = int_tensor(indices, "tf.gather_nd: indices", name="indices")
    if batch_dims:
        indices = _with_batch_coordinates(indices, int(batch_dims))
    return registry.make_op("GatherNd", [params, indices], attrs, name=name).outputs[0]


def _with_batch_coordinates(indices, batch_dims):
    """`indices` with the coordinates of its first `batch_dims` axes prepended to each index."""
    ndims = indices.shape.ndims
    if batch_dims < 0 or ndims is None or batch_dims >= ndims:
        raise ValueError(
            f"tf.gather_nd: batch_dims must be in [0, rank(indices) - 1), got {batch_dims} "
            f"for indices of shape {indices.shape}"
        )
    dims = shape(indices, out_type=indices.dtype)
    prefix = math_ops.zeros_like(indices[..., 0])
    columns = []
    for axis in range(batch_dims):
        view = [1] * (ndims - 1)
        view[axis] = -1
        columns.append(prefix + reshape(math_ops.range(dims[axis], dtype=indices.dtype), view))
    return concat([stack(columns, axis=-1), indices], -1)


# -- ScatterNd ---------------------------------------------------------------------------------------
def _check_updates(indices, updates, target_shape, what):
    expected = _slice_dims(indices.shape, target_shape)
    if not updates.shape.is_compatible_with(expected):
        raise ValueError(
            f"{what}: updates {updates.name} has shape {updates.shape}, expected "
            f"indices.shape[:-1] + shape[indices.shape[-1]:] = {expected}"
        )


@registry.shape("ScatterNd")
def _scatter_nd_shape(inputs, attrs):
    indices, updates, shape_t = inputs
    known = get_static_value(shape_t)
    if known is not None:
        out = TensorShape([int(d) for d in np.ravel(known)])
        _check_updates(indices, updates, out, "tf.scatter_nd")
    elif shape_t.shape.ndims == 1 and shape_t.shape[0] is not None:
        out = TensorShape([None] * shape_t.shape[0])
    else:
        out = TensorShape(None)
    return [(updates.dtype, out)]


def _scatter_into(node, out, indices, updates, update):
    indices, updates = np.asarray(indices), np.asarray(updates, dtype=out.dtype)
    k = indices.shape[-1]
    rows, n, valid = _rows(node, indices, out.shape, "shape")
    inner = out.shape[k:]
    if updates.shape != indices.shape[:-1] + inner:
        raise invalid_argument(
            node,
            f"updates of shape {list(updates.shape)} do not fit indices of shape {list(indices.shape)} "
            f"into shape {list(out.shape)}: expected {list(indices.shape[:-1] + inner)}",
        )
    flat = out.reshape((n, *inner))
    update(flat, rows[valid], updates.reshape((len(rows), *inner))[valid])  # (ignored bad indices skipped)
    return flat.reshape(out.shape)


@registry.kernel("ScatterNd")
def _scatter_nd_kernel(ctx, node, indices, updates, shape_):
    out = np.zeros(tuple(int(d) for d in np.ravel(shape_)), dtype=np.asarray(updates).dtype)
    return _scatter_into(node, out, indices, updates, np.add.at)


@registry.gradient("ScatterNd")
def _scatter_nd_grad(op, grad):
    return [None, gather_nd(grad, op.inputs[0], bad_indices_policy=_policy_of(op)), None]


def scatter_nd(indices, updates, shape, bad_indices_policy="", name=None):
    """`tf.scatter_nd`: zeros of `shape` with `updates` added at `indices` (duplicates add up).

    Raises:
        ValueError: `updates` whose static shape is not ``indices.shape[:-1] + shape[K:]``.
        InvalidArgumentError (when run): an index outside `shape` (skipped with
            ``bad_indices_policy="IGNORE"``).
    """
    attrs = _policy(bad_indices_policy, "tf.scatter_nd")
    indices = int_tensor(indices, "tf.scatter_nd: indices", name="indices")
    updates = convert_to_tensor(updates, name="updates")
    shape_t = convert_to_tensor(shape, dtype=indices.dtype, name="shape")
    return registry.make_op("ScatterNd", [indices, updates, shape_t], attrs, name=name).outputs[0]


# -- TensorScatterUpdate / Add / Sub / Max / Min -----------------------------------------------------
def _tensor_scatter_shape(inputs, attrs):
    tensor, indices, updates = inputs
    if updates.dtype != tensor.dtype:
        raise TypeError(f"tensor_scatter: updates are {updates.dtype.name}, the tensor {tensor.dtype.name}")
    _check_updates(indices, updates, tensor.shape, "tf.tensor_scatter_nd")
    return [(tensor.dtype, tensor.shape)]


_TENSOR_SCATTER = {
    "TensorScatterUpdate": lambda rows, idx, upd: rows.__setitem__(idx, upd),  # (the last duplicate wins)
    "TensorScatterAdd": np.add.at,
    "TensorScatterSub": np.subtract.at,
    "TensorScatterMax": np.maximum.at,
    "TensorScatterMin": np.minimum.at,
}


def _tensor_scatter_kernel(update):
    def kernel(ctx, node, tensor, indices, updates):
        return _scatter_into(node, np.array(tensor, copy=True), indices, updates, update)

    return kernel


for _t, _update in _TENSOR_SCATTER.items():
    registry.shape(_t)(_tensor_scatter_shape)
    registry.kernel(_t)(_tensor_scatter_kernel(_update))


@registry.gradient("TensorScatterUpdate")
def _tensor_scatter_update_grad(op, grad):
    indices, updates = op.inputs[1], op.inputs[2]
    tensor_grad = tensor_scatter_nd_update(grad, indices, math_ops.zeros_like(updates))
    return [tensor_grad, None, gather_nd(grad, indices)]


@registry.gradient("TensorScatterAdd")
def _tensor_scatter_add_grad(op, grad):
    return [grad, None, gather_nd(grad, op.inputs[1], bad_indices_policy=_policy_of(op))]


@registry.gradient("TensorScatterSub")
def _tensor_scatter_sub_grad(op, grad):
    return [grad, None, math_ops.negative(gather_nd(grad, op.inputs[1], bad_indices_policy=_policy_of(op)))]


def _tensor_scatter_min_max_grad(op, grad):
    """TF's: the gradient split evenly between the tensor's entry and the updates equal to the result."""
    x, indices, y = op.inputs
    output = op.outputs[0]
    x_indicators = math_ops.cast(math_ops.equal(x, output), grad.dtype)
    policy = _policy_of(op)
    y_indicators = math_ops.cast(
        math_ops.equal(y, gather_nd(output, indices, bad_indices_policy=policy)), grad.dtype
    )
    ys_indicators = scatter_nd(
        indices, y_indicators, shape(x, out_type=indices.dtype), bad_indices_policy=policy
    )
    indicators = x_indicators + ys_indicators
    x_grad = grad * x_indicators / indicators
    y_grad = gather_nd(grad / indicators, indices, bad_indices_policy=policy) * y_indicators
    return [x_grad, None, y_grad]


registry.gradient("TensorScatterMax")(_tensor_scatter_min_max_grad)
registry.gradient("TensorScatterMin")(_tensor_scatter_min_max_grad)


def _tensor_scatter(op_type, tensor, indices, updates, name, bad_indices_policy=""):
    attrs = _policy(bad_indices_policy, f"tf.{op_type}")
    tensor = convert_to_tensor(tensor, name="tensor")
    indices = int_tensor(indices, f"tf.{op_type}: indices", name="indices")
    updates = convert_to_tensor(updates, dtype=tensor.dtype, name="updates")
    return registry.make_op(op_type, [tensor, indices, updates], attrs, name=name).outputs[0]


def tensor_scatter_nd_update(tensor, indices, updates, name=None):
    """`tf.tensor_scatter_nd_update`: a copy of `tensor` with the slices at `indices` set to
    `updates` (``updates.shape == indices.shape[:-1] + tensor.shape[K:]``).

    Raises:
        ValueError: `updates` of the wrong static shape.
        InvalidArgumentError (when run): an index outside `tensor`.
    """
    return _tensor_scatter("TensorScatterUpdate", tensor, indices, updates, name)


def tensor_scatter_nd_add(tensor, indices, updates, bad_indices_policy="", name=None):
    """`tf.tensor_scatter_nd_add`: a copy of `tensor` with `updates` added at `indices`."""
    return _tensor_scatter("TensorScatterAdd", tensor, indices, updates, name, bad_indices_policy)


def tensor_scatter_nd_sub(tensor, indices, updates, bad_indices_policy="", name=None):
    """`tf.tensor_scatter_nd_sub`: a copy of `tensor` with `updates` subtracted at `indices`."""
    return _tensor_scatter("TensorScatterSub", tensor, indices, updates, name, bad_indices_policy)


def tensor_scatter_nd_max(tensor, indices, updates, bad_indices_policy="", name=None):
    """`tf.tensor_scatter_nd_max`: a copy of `tensor`, each slice at `indices` the maximum of it
    and the updates."""
    return _tensor_scatter("TensorScatterMax", tensor, indices, updates, name, bad_indices_policy)


def tensor_scatter_nd_min(tensor, indices, updates, bad_indices_policy="", name=None):
    """`tf.tensor_scatter_nd_min`: a copy of `tensor`, each slice at `indices` the minimum of it
    and the updates."""
    return _tensor_scatter("TensorScatterMin", tensor, indices, updates, name, bad_indices_policy)


tensor_scatter_update = tensor_scatter_nd_update  # (TF 1.x's earlier names of the same functions)
tensor_scatter_add = tensor_scatter_nd_add
tensor_scatter_sub = tensor_scatter_nd_sub


# -- batch_gather ------------------------------------------------------------------------------------
def batch_gather(params, indices, name=None):
    """`tf.batch_gather`: ``result[i1, ..., iN-1, j] = params[i1, ..., iN-1, indices[i1, ..., j]]``
    (the leading ``N - 1`` axes of `indices` are batch axes of `params`), built as TF builds it:
    one `gather` from `params` flattened, at the indices plus each batch's offset.

    Raises:
        ValueError: `indices` of unknown rank.
    """
    with name_scope(name or "BatchGather"):
        params = convert_to_tensor(params, name="params")
        indices = int_tensor(indices, "tf.batch_gather: indices", name="indices")
        if indices.shape.ndims is None:
            raise ValueError("batch_gather does not allow indices with unknown shape.")
        batch_dims = indices.shape.ndims - 1
        params_shape = shape(params, out_type=indices.dtype)
        offsets = math_ops.zeros_like(indices)
        stride = convert_to_tensor(1, dtype=indices.dtype)
        for dim in range(batch_dims, 0, -1):  # (row-major offsets of the batch positions)
            stride = stride * params_shape[dim]
            dim_shape = [1] * indices.shape.ndims
            dim_shape[dim - 1] = -1
            steps = math_ops.range(params_shape[dim - 1], dtype=indices.dtype) * stride
            offsets = offsets + reshape(steps, dim_shape)
        flat_count = reduce_prod(params_shape[: batch_dims + 1], axis=[0], keepdims=True)
        flat_params = reshape(params, concat([flat_count, params_shape[batch_dims + 1 :]], 0))
        flat = gather(flat_params, reshape(indices + offsets, [-1]))
        out_shape = concat([shape(indices, out_type=indices.dtype), params_shape[batch_dims + 1 :]], 0)
        result = reshape(flat, out_shape)
        result.set_shape(indices.shape.concatenate(params.shape[batch_dims + 1 :]))
        return result
