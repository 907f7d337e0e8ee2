"""TF 1.x's division names beside `tf.divide`: `tf.div` (Python 2's ``/``: floor division for
integers), `tf.floor_div`, `tf.realdiv`, `tf.truncatediv` / `tf.truncatemod` (C's rounding
towards zero, ``TruncateDiv`` / ``TruncateMod``), and two compositions that divide:
`tf.clip_by_average_norm` and `tf.sparse_matmul`. Shapes broadcast as numpy does.
"""

import numpy as np

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import name_scope
from nbdist.ops import math_ops, reduction_ops, registry
from nbdist.ops._shapes import broadcast_shape
from nbdist.ops.constant_op import constant, convert_to_tensor
from nbdist.ops.shape_ops import size

__all__ = [
    "clip_by_average_norm",
    "div",
    "floor_div",
    "realdiv",
    "sparse_matmul",
    "truncatediv",
    "truncatemod",
]


def _operands(x, y, what):
    x = convert_to_tensor(x, name="x")
    y = convert_to_tensor(y, dtype=x.dtype, name="y")
    if x.dtype != y.dtype:
        raise TypeError(f"{what}: x and y must have the same dtype, got {x.dtype.name} != {y.dtype.name}")
    return x, y


def _zero_divisor(node, x, y):
    y = np.asarray(y)
    if np.issubdtype(y.dtype, np.integer) and np.any((y == 0) & np.ones(np.shape(x), bool)):
        raise errors.InvalidArgumentError(node.name, None, "Integer division by zero")


# -- TruncateDiv, TruncateMod -------------------------------------------------------------------------
def _binary_shape(inputs, attrs):
    x, y = inputs
    if x.dtype != y.dtype:
        raise TypeError(f"inputs must have the same dtype, got {x.dtype.name} and {y.dtype.name}")
    return [(x.dtype, broadcast_shape(x.shape, y.shape))]


@registry.kernel("TruncateDiv")
def _truncate_div_kernel(ctx, node, x, y):
    x, y = np.asarray(x), np.asarray(y)
    if not np.issubdtype(x.dtype, np.integer):
        return np.trunc(x / y).astype(x.dtype, copy=False)
    _zero_divisor(node, x, y)
    q = np.floor_divide(x, y)
    inexact_negative = (np.remainder(x, y) != 0) & ((x < 0) != (y < 0))
    return (q + inexact_negative).astype(x.dtype, copy=False)  # (floor + 1 = towards zero)


@registry.kernel("TruncateMod")
def _truncate_mod_kernel(ctx, node, x, y):
    _zero_divisor(node, x, y)
    return np.fmod(x, y)  # (the sign of x, as C's %)


for _t in ("TruncateDiv", "TruncateMod"):
    registry.shape(_t)(_binary_shape)
registry.no_gradient("TruncateDiv")  # (TF's gradient is None for both inputs; TruncateMod has none at all)


def truncatediv(x, y, name=None):
    """`tf.truncatediv`: ``x / y`` rounded towards zero (C's integer division; ``-7 / 2 = -3``)."""
    x, y = _operands(x, y, "tf.truncatediv")
    return registry.make_op("TruncateDiv", [x, y], name=name).outputs[0]


def truncatemod(x, y, name=None):
    """`tf.truncatemod`: the remainder of `truncatediv`, with the sign of `x` (C's ``%``, ``fmod``)."""
    x, y = _operands(x, y, "tf.truncatemod")
    return registry.make_op("TruncateMod", [x, y], name=name).outputs[0]


# -- div, floor_div, realdiv ---------------------------------------------------------------------------
def realdiv(x, y, name=None):
    """`tf.realdiv`: ``x / y`` for float (or complex) tensors (``RealDiv``; integers fail when run)."""
    x, y = _operands(x, y, "tf.realdiv")
    return registry.make_op("RealDiv", [x, y], name=name).outputs[0]


def floor_div(x, y, name=None):
    """`tf.floor_div`: ``x // y``, rounded towards minus infinity (``FloorDiv``)."""
    x, y = _operands(x, y, "tf.floor_div")
    return registry.make_op("FloorDiv", [x, y], name=name).outputs[0]


def div(x, y, name=None):
    """`tf.div`: Python 2's ``x / y``: floor division for integers, `realdiv` for floats.

    Raises:
        TypeError: `x` and `y` of different dtypes.
    """
    with name_scope(name or "div") as scope:
        x, y = _operands(x, y, "tf.div")
        op_type = "RealDiv" if x.dtype.is_floating or x.dtype.is_complex else "FloorDiv"
        return registry.make_op(op_type, [x, y], name=scope[:-1]).outputs[0]


# -- clip_by_average_norm, sparse_matmul ---------------------------------------------------------------
def clip_by_average_norm(t, clip_norm, name=None):
    """`tf.clip_by_average_norm`: `t` scaled so that its L2 norm divided by its number of
    elements is at most `clip_norm` (float32, as TF builds it)."""
    with name_scope(name or "clip_by_average_norm") as scope:
        t = convert_to_tensor(t, name="t")
        n_element = math_ops.cast(size(t), _dtypes.float32)
        l2norm_inv = math_ops.rsqrt(reduction_ops.reduce_sum(t * t))  # (over every axis)
        scale = math_ops.minimum(l2norm_inv * n_element, constant(1.0) / clip_norm)
        return math_ops.identity(t * clip_norm * scale, name=scope[:-1])


def sparse_matmul(
    a, b, transpose_a=False, transpose_b=False, a_is_sparse=False, b_is_sparse=False, name=None
):
    """`tf.sparse_matmul`: `tf.matmul` of float32 matrices; the ``*_is_sparse`` hints only
    choose TF's kernel (nbdist's numpy product needs none).

    Raises:
        TypeError: inputs that are not float32 (TF's ``SparseMatMul`` takes float32 and bfloat16).
    """
    a, b = convert_to_tensor(a, name="a"), convert_to_tensor(b, name="b")
    for what, t in (("a", a), ("b", b)):
        if t.dtype != _dtypes.float32:
            raise TypeError(f"tf.sparse_matmul: {what} must be float32, got {t.dtype.name} ({t.name})")
    return math_ops.matmul(a, b, transpose_a=transpose_a, transpose_b=transpose_b, name=name)
