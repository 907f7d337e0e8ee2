"""The rest of TF's scatter writes into a variable, beside `scatter_add` / `scatter_update`
(`state_ops`): row-wise `tf.scatter_mul` / `scatter_div` / `scatter_min` / `scatter_max`,
N-d `tf.scatter_nd_update` / `scatter_nd_add` / `scatter_nd_sub`, and `tf.batch_scatter_update`
(built on `scatter_nd_update`, as TF's). Each takes the variable as a ref input: it runs where
the variable lives, swaps a new array in under the variable's lock, and returns the new value.
None is differentiable (TF's too). `tf.Variable` gets them as methods here (``v.scatter_max``).
"""

import numpy as np

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import name_scope
from nbdist.ops import math_ops, registry
from nbdist.ops._shapes import tf_dims
from nbdist.ops.concat_slice_ops import stack
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.indexed_slices import IndexedSlices
from nbdist.ops.reshape_ops import expand_dims, reshape
from nbdist.ops.shape_ops import shape
from nbdist.ops.state_ops import Variable

__all__ = ["batch_scatter_update", "scatter_div", "scatter_max", "scatter_min", "scatter_mul"]
__all__ += ["scatter_nd_add", "scatter_nd_sub", "scatter_nd_update"]


def _variable_tensor(ref, what):
    op = getattr(ref, "op", None)
    if getattr(op, "type", None) == "VariableV2":
        return op.outputs[0]
    raise TypeError(f"{what}: ref must be a tf.Variable, got {ref!r}")


def _bad_index(node, ref, message):
    return errors.InvalidArgumentError(node.name, None, f"{node.op} on {ref.name}: {message}")


# -- row-wise: ScatterMul / ScatterDiv / ScatterMin / ScatterMax --------------------------------------
def _scatter_shape(inputs, attrs):
    ref, indices, updates = inputs
    if ref.shape.ndims is not None and indices.shape.ndims is not None:
        expected = indices.shape.concatenate(ref.shape[1:])
        if updates.shape.ndims not in (0, None) and not updates.shape.is_compatible_with(expected):
            raise ValueError(
                f"scatter into {ref.op.name!r}: updates {updates.name} has shape {updates.shape}, "
                f"expected indices.shape + ref.shape[1:] = {expected}"
            )
    return [(ref.dtype, ref.shape)]


def _divide_at(rows, idx, upd):
    if not np.issubdtype(rows.dtype, np.integer):
        np.divide.at(rows, idx, upd)
        return
    for i, u in zip(idx, upd):  # (integers: C's division, rounding towards zero, as TF's)
        q = np.floor_divide(rows[i], u)
        rows[i] = q + ((np.remainder(rows[i], u) != 0) & ((rows[i] < 0) != (u < 0)))


_ROWS = {"ScatterMul": np.multiply.at, "ScatterDiv": _divide_at}
_ROWS.update({"ScatterMin": np.minimum.at, "ScatterMax": np.maximum.at})


def _rows_kernel(update):
    def kernel(ctx, node, ref, indices, updates):
        indices = np.asarray(indices)
        with ref.lock:
            current = ref.read()
            bad = (indices < 0) | (indices >= len(current))
            if np.any(bad):
                pos = tuple(int(i) for i in np.argwhere(bad)[0])
                raise _bad_index(
                    node, ref, f"indices{list(pos)} = {int(indices[pos])} is not in [0, {len(current)})"
                )
            updates = np.asarray(updates, dtype=current.dtype)
            rows_shape = indices.shape + current.shape[1:]
            if updates.ndim and updates.shape != rows_shape:
                raise _bad_index(
                    node,
                    ref,
                    f"updates of shape {list(updates.shape)} for indices of shape {list(indices.shape)} "
                    f"and a variable of shape {list(current.shape)}",
                )
            flat = indices.reshape(-1)
            new = current.copy()  # copy-on-write: values handed out earlier never change
            update(new, flat, np.broadcast_to(updates, rows_shape).reshape((len(flat), *current.shape[1:])))
            ref.value = new
            return new

    return kernel


# -- N-d: ScatterNdUpdate / ScatterNdAdd / ScatterNdSub -----------------------------------------------
def _scatter_nd_shape(inputs, attrs):
    ref, indices, updates = inputs
    if None not in (ref.shape.ndims, indices.shape.ndims) and indices.shape[-1] is not None:
        expected = indices.shape[:-1].concatenate(ref.shape[indices.shape[-1] :])
        if not updates.shape.is_compatible_with(expected):
            raise ValueError(
                f"scatter_nd into {ref.op.name!r}: updates {updates.name} has shape {updates.shape}, "
                f"expected indices.shape[:-1] + ref.shape[indices.shape[-1]:] = {expected}"
            )
    return [(ref.dtype, ref.shape)]


_ND = {
    "ScatterNdUpdate": lambda rows, idx, upd: rows.__setitem__(idx, upd),
    "ScatterNdAdd": np.add.at,
    "ScatterNdSub": np.subtract.at,
}


def _nd_kernel(update):
    def kernel(ctx, node, ref, indices, updates):
        indices = np.asarray(indices)
        with ref.lock:
            current = ref.read()
            k = indices.shape[-1]
            flat = indices.reshape(int(np.prod(indices.shape[:-1])), k).astype(np.int64)
            bad = np.flatnonzero(np.any((flat < 0) | (flat >= np.asarray(current.shape[:k])), axis=1))
            if bad.size:
                coords = ", ".join(str(int(c)) for c in flat[bad[0]])
                raise _bad_index(
                    node,
                    ref,
                    f"indices[{int(bad[0])}] = [{coords}] does not index into shape {tf_dims(current.shape)}",
                )
            inner = current.shape[k:]
            updates = np.asarray(updates, dtype=current.dtype)
            if updates.shape != indices.shape[:-1] + inner:
                raise _bad_index(
                    node,
                    ref,
                    f"updates of shape {list(updates.shape)} for indices of shape {list(indices.shape)}",
                )
            rows = (
                np.ravel_multi_index(tuple(flat.T), current.shape[:k]) if k else np.zeros(len(flat), np.int64)
            )
            new = current.copy().reshape((-1, *inner))
            update(new, rows, updates.reshape((len(rows), *inner)))
            ref.value = new.reshape(current.shape)
            return ref.value

    return kernel


for _table, _shape, _kernel in ((_ROWS, _scatter_shape, _rows_kernel), (_ND, _scatter_nd_shape, _nd_kernel)):
    for _t, _update in _table.items():
        registry.declare(_t, ref_inputs=(0,), stateful=True)
        registry.shape(_t)(_shape)
        registry.kernel(_t)(_kernel(_update))
        registry.no_gradient(_t)


def _scatter(op_type, ref, indices, updates, use_locking, name):
    ref_t = _variable_tensor(ref, f"tf.{op_type}")
    with ref_t.graph.colocate_with(ref_t.op):
        indices = convert_to_tensor(indices, preferred_dtype=_dtypes.int32, name="indices")
        if not indices.dtype.is_integer:
            raise TypeError(f"tf.{op_type}: indices must be int32 or int64, got {indices.dtype.name}")
        updates = convert_to_tensor(updates, dtype=ref_t.dtype, name="updates")
        attrs = {"use_locking": bool(use_locking)}
        return registry.make_op(op_type, [ref_t, indices, updates], attrs, name=name).outputs[0]


def scatter_mul(ref, indices, updates, use_locking=False, name=None):
    """`tf.scatter_mul`: ``ref[indices[i]] *= updates[i]`` (duplicates multiply); the new value."""
    return _scatter("ScatterMul", ref, indices, updates, use_locking, name)


def scatter_div(ref, indices, updates, use_locking=False, name=None):
    """`tf.scatter_div`: ``ref[indices[i]] /= updates[i]`` (integers floor-divide)."""
    return _scatter("ScatterDiv", ref, indices, updates, use_locking, name)


def scatter_min(ref, indices, updates, use_locking=False, name=None):
    """`tf.scatter_min`: ``ref[indices[i]] = min(ref[indices[i]], updates[i])``."""
    return _scatter("ScatterMin", ref, indices, updates, use_locking, name)


def scatter_max(ref, indices, updates, use_locking=False, name=None):
    """`tf.scatter_max`: ``ref[indices[i]] = max(ref[indices[i]], updates[i])``."""
    return _scatter("ScatterMax", ref, indices, updates, use_locking, name)


def scatter_nd_update(ref, indices, updates, use_locking=True, name=None):
    """`tf.scatter_nd_update`: the slices of the variable at the N-d `indices` set to `updates`."""
    return _scatter("ScatterNdUpdate", ref, indices, updates, use_locking, name)


def scatter_nd_add(ref, indices, updates, use_locking=False, name=None):
    """`tf.scatter_nd_add`: `updates` added to the slices of the variable at the N-d `indices`."""
    return _scatter("ScatterNdAdd", ref, indices, updates, use_locking, name)


def scatter_nd_sub(ref, indices, updates, use_locking=False, name=None):
    """`tf.scatter_nd_sub`: `updates` subtracted from the slices at the N-d `indices`."""
    return _scatter("ScatterNdSub", ref, indices, updates, use_locking, name)


def batch_scatter_update(ref, indices, updates, use_locking=True, name=None):
    """`tf.batch_scatter_update`: ``ref[i1, ..., iN-1, indices[i1, ..., j]] = updates[i1, ..., j]``
    (the leading axes of `indices` are batch axes); built as TF's, `scatter_nd_update` at each
    index prefixed by its batch coordinates.

    Raises:
        ValueError: `indices` of unknown rank, or ranks that do not fit.
    """
    with name_scope(name or "BatchScatterUpdate"):
        indices = convert_to_tensor(indices, name="indices")
        updates = convert_to_tensor(updates, dtype=ref.dtype, name="updates")
        ndims = indices.shape.ndims
        if ndims is None:
            raise ValueError("batch_scatter_update does not allow indices with unknown shape.")
        ref_ndims = ref.shape.ndims
        if ref_ndims is not None and ref_ndims < ndims:
            raise ValueError(
                f"batch_scatter_update: ref of rank {ref_ndims} has fewer axes than indices ({ndims})"
            )
        dims = shape(indices, out_type=indices.dtype)
        columns = []
        for axis in range(ndims - 1):  # (each batch axis' coordinate, broadcast over the others)
            steps = math_ops.range(dims[axis], dtype=indices.dtype)
            view = [1] * ndims
            view[axis] = -1
            columns.append(math_ops.zeros_like(indices) + reshape(steps, view))
        nd = stack([*columns, indices], axis=-1) if columns else expand_dims(indices, -1)
        return scatter_nd_update(ref, nd, updates, use_locking=use_locking)


# -- tf.Variable's methods of these writes (TF's RefVariable has them), installed here -----------
def _rows_method(function):
    def method(self, sparse_delta, use_locking=False, name=None):
        if not isinstance(sparse_delta, IndexedSlices):
            raise TypeError(f"sparse_delta is not IndexedSlices: {sparse_delta}")
        return function(self, sparse_delta.indices, sparse_delta.values, use_locking=use_locking, name=name)

    method.__name__ = method.__qualname__ = function.__name__
    method.__doc__ = (
        f"`tf.{function.__name__}` of an `IndexedSlices` (its indices and values) into this variable."
    )
    return method


def _nd_method(function):
    def method(self, indices, updates, name=None):
        return function(self, indices, updates, use_locking=True, name=name)

    method.__name__ = method.__qualname__ = function.__name__
    method.__doc__ = f"`tf.{function.__name__}` into this variable."
    return method


for _function in (scatter_max, scatter_min, scatter_mul, scatter_div, batch_scatter_update):
    setattr(Variable, _function.__name__, _rows_method(_function))
for _function in (scatter_nd_add, scatter_nd_sub, scatter_nd_update):
    setattr(Variable, _function.__name__, _nd_method(_function))
