"""Ops that keep the elements and change the layout: reshape, transpose, expand_dims, squeeze.

Shapes, permutations and axes are *input tensors* as in TF (usually constants), so the
gradients can use runtime shapes (`tf.shape`) and work when static dimensions are unknown.
"""

import math

import numpy as np

from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import math_ops, registry
from nbdist.ops._shapes import (
    int_tensor,
    invalid_argument,
    normalize_axis,
    same_as_input,
    static_length,
    unknown_dims,
)
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.shape_ops import get_static_value, rank, shape

__all__ = ["expand_dims", "invert_permutation", "reshape", "squeeze", "transpose"]


# -- reshape -----------------------------------------------------------------------------------
def _reshape_dims(dims, total):
    """`dims` with its one -1 resolved against `total` elements (None when unknown)."""
    if sum(d == -1 for d in dims) > 1 or any(d < -1 for d in dims):
        raise ValueError(f"shape {dims} may hold at most one -1 and no other negative size")
    known = math.prod(d for d in dims if d != -1)
    if -1 in dims:
        if total is None:
            return [None if d == -1 else d for d in dims]
        if known == 0 or total % known:
            raise ValueError(f"cannot reshape a tensor with {total} elements to shape {dims}")
        return [total // known if d == -1 else d for d in dims]
    if total is not None and total != known:
        raise ValueError(f"cannot reshape a tensor with {total} elements to shape {dims} ({known} elements)")
    return dims


@registry.shape("Reshape")
def _reshape_shape(inputs, attrs):
    x, dims_t = inputs
    dims = get_static_value(dims_t)
    if dims is None:
        return unknown_dims(x.dtype, static_length(dims_t))
    dims = [int(d) for d in np.ravel(dims)]
    try:
        return [(x.dtype, TensorShape(_reshape_dims(dims, x.shape.num_elements())))]
    except ValueError as e:
        raise ValueError(f"tf.reshape({x.name}): {e}") from None


@registry.kernel("Reshape")
def _reshape_kernel(ctx, node, x, dims):
    dims = dims.ravel().tolist() if isinstance(dims, np.ndarray) else np.ravel(dims).tolist()
    x = np.asarray(x)
    if min(dims, default=0) >= 0 and math.prod(dims) == x.size:  # (the common case: no -1)
        return x.reshape(dims)
    try:
        return x.reshape(_reshape_dims(dims, x.size))
    except ValueError as e:
        raise invalid_argument(node, f"Input to reshape has shape {list(np.shape(x))}: {e}") from None


registry.gradient("Reshape")(lambda op, grad: [reshape(grad, shape(op.inputs[0])), None])


def reshape(tensor, shape, name=None):
    """`tf.reshape`: the same elements in a new shape; one dimension may be -1 (inferred).

    Raises:
        ValueError: if the element counts are known and differ.
    """
    tensor = convert_to_tensor(tensor)
    return registry.make_op("Reshape", [tensor, int_tensor(shape, "shape")], name=name).outputs[0]


# -- transpose -----------------------------------------------------------------------------------
@registry.shape("Transpose")
def _transpose_shape(inputs, attrs):
    x, perm_t = inputs
    perm = get_static_value(perm_t)
    if perm is None or x.shape.ndims is None:
        return unknown_dims(x.dtype, x.shape.ndims if x.shape.ndims is not None else static_length(perm_t))
    perm = [int(p) for p in perm]
    if sorted(perm) != list(np.arange(x.shape.ndims)):
        raise ValueError(
            f"tf.transpose: perm {perm} is not a permutation of the {x.shape.ndims} axes of {x.name}"
        )
    return [(x.dtype, TensorShape([x.shape[p] for p in perm]))]


@registry.kernel("Transpose")
def _transpose_kernel(ctx, node, x, perm):
    if sorted(int(p) for p in perm) != list(np.arange(np.ndim(x))):
        raise invalid_argument(
            node, f"transpose expects a permutation of range({np.ndim(x)}), got {np.asarray(perm).tolist()}"
        )
    return np.transpose(x, [int(p) for p in perm])


registry.gradient("Transpose")(lambda op, grad: [transpose(grad, invert_permutation(op.inputs[1])), None])
registry.shape("InvertPermutation")(same_as_input)
registry.kernel("InvertPermutation")(lambda ctx, node, p: np.argsort(p).astype(p.dtype))
registry.no_gradient("InvertPermutation")


def invert_permutation(x, name=None):
    """`tf.invert_permutation`: ``y[x[i]] = i``."""
    return registry.make_op("InvertPermutation", [int_tensor(x, "x")], name=name).outputs[0]


def transpose(a, perm=None, name="transpose", conjugate=False):
    """`tf.transpose`: permutes the axes of `a` (reverses them when `perm` is None)."""
    a = convert_to_tensor(a)
    if perm is None:
        if a.shape.ndims is not None:
            perm = np.arange(a.shape.ndims - 1, -1, -1, dtype=np.int32)
        else:
            r = rank(a)
            perm = (r - 1) - math_ops.range(0, r, 1)
    return registry.make_op("Transpose", [a, int_tensor(perm, "perm")], name=name).outputs[0]


# -- expand_dims, squeeze --------------------------------------------------------------------------
@registry.shape("ExpandDims")
def _expand_dims_shape(inputs, attrs):
    x, axis_t = inputs
    axis = get_static_value(axis_t)
    if x.shape.ndims is None:
        return [(x.dtype, TensorShape(None))]
    if axis is None:
        return unknown_dims(x.dtype, x.shape.ndims + 1)
    dims, axis = x.shape.as_list(), int(axis)
    if not -len(dims) - 1 <= axis <= len(dims):
        raise ValueError(
            f"tf.expand_dims: axis {axis} is out of range for a tensor of rank {len(dims)} "
            f"(expected {-len(dims) - 1} <= axis <= {len(dims)})"
        )
    axis %= len(dims) + 1
    return [(x.dtype, TensorShape([*dims[:axis], 1, *dims[axis:]]))]


@registry.kernel("ExpandDims")
def _expand_dims_kernel(ctx, node, x, axis):
    x, axis = np.asarray(x), int(axis)
    if not -x.ndim - 1 <= axis <= x.ndim:
        raise invalid_argument(node, f"ExpandDims: axis {axis} is out of range for a tensor of rank {x.ndim}")
    if axis < 0:
        axis += x.ndim + 1
    return x.reshape((*x.shape[:axis], 1, *x.shape[axis:]))  # (a view, as np.expand_dims gives)


registry.gradient("ExpandDims")(lambda op, grad: [reshape(grad, shape(op.inputs[0])), None])


def expand_dims(input, axis=None, name=None, dim=None):  # noqa: A002 - TF's argument name
    """`tf.expand_dims`: inserts a dimension of size 1 at `axis` (``dim`` is TF1's alias)."""
    if dim is not None:
        if axis is not None:
            raise ValueError("tf.expand_dims: pass either axis or dim, not both")
        axis = dim
    if axis is None:
        raise ValueError("tf.expand_dims: axis is required")
    inputs = [convert_to_tensor(input), int_tensor(axis, "axis")]
    return registry.make_op("ExpandDims", inputs, name=name).outputs[0]


@registry.shape("Squeeze")
def _squeeze_shape(inputs, attrs):
    x, axes = inputs[0], attrs["squeeze_dims"]
    if x.shape.ndims is None:
        return [(x.dtype, TensorShape(None))]
    dims = x.shape.as_list()
    if not axes:
        if None in dims:
            return [(x.dtype, TensorShape(None))]
        return [(x.dtype, TensorShape([d for d in dims if d != 1]))]
    axes = {normalize_axis(a, len(dims), "tf.squeeze") for a in axes}
    for a in sorted(axes):
        if dims[a] not in (None, 1):
            raise ValueError(
                f"tf.squeeze: cannot squeeze dim[{a}] of {x.name}: expected a size of 1, got {dims[a]}"
            )
    return [(x.dtype, TensorShape([d for i, d in enumerate(dims) if i not in axes]))]


@registry.kernel("Squeeze")
def _squeeze_kernel(ctx, node, x):
    axes = tuple(a % max(np.ndim(x), 1) for a in node.attr["squeeze_dims"])
    for a in axes:
        if np.shape(x)[a] != 1:
            raise invalid_argument(
                node, f"Squeeze: cannot squeeze dim[{a}] of shape {list(np.shape(x))}: it is not 1"
            )
    return np.squeeze(x, axis=axes or None)


registry.gradient("Squeeze")(lambda op, grad: [reshape(grad, shape(op.inputs[0]))])


def squeeze(input, axis=None, name=None, squeeze_dims=None):  # noqa: A002 - TF's argument name
    """`tf.squeeze`: removes dimensions of size 1 (all of them, or those in `axis`)."""
    if squeeze_dims is not None:
        if axis is not None:
            raise ValueError("tf.squeeze: pass either axis or squeeze_dims, not both")
        axis = squeeze_dims
    axes = [] if axis is None else [int(a) for a in np.atleast_1d(axis)]
    return registry.make_op("Squeeze", [convert_to_tensor(input)], {"squeeze_dims": axes}, name=name).outputs[
        0
    ]


# -- reverse ---------------------------------------------------------------------------------
@registry.shape("ReverseV2")
def _reverse_shape(inputs, attrs):
    x, axis = inputs
    axes = get_static_value(axis)
    if axes is not None and x.shape.ndims is not None:
        for a in np.asarray(axes).ravel():
            normalize_axis(int(a), x.shape.ndims, "ReverseV2")
    return [(x.dtype, x.shape)]


@registry.kernel("ReverseV2")
def _reverse_kernel(ctx, node, x, axis):
    axes = tuple(int(a) for a in np.asarray(axis).ravel())
    for a in axes:
        if not -x.ndim <= a < x.ndim:
            raise invalid_argument(node, f"ReverseV2: axis {a} is out of range for a tensor of rank {x.ndim}")
    return np.flip(x, axis=axes) if axes else x


registry.gradient("ReverseV2")(lambda op, grad: [reverse(grad, op.inputs[1]), None])


def reverse(tensor, axis, name=None):
    """`tf.reverse` (TF 1.x's `reverse_v2`): `tensor` with the order of the `axis` dimensions reversed."""
    inputs = [convert_to_tensor(tensor), int_tensor(axis, "axis")]
    return registry.make_op("ReverseV2", inputs, name=name or "ReverseV2").outputs[0]


reverse_v2 = reverse
