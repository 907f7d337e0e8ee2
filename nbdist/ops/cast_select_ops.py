"""`tf.cast`, `tf.zeros_like` / `tf.ones_like` and `tf.where`: constructor, shape, kernel and
gradient side by side. Other ops' gradients build on these (masks, zeros, dtype changes).
"""

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.ops import registry
from nbdist.ops._shapes import broadcast_shape, same_as_input
from nbdist.ops.broadcast_ops import sum_to_shape
from nbdist.ops.constant_op import convert_n, convert_to_tensor


# -- select -------------------------------------------------------------------------------------
@registry.shape("Select")
def _select_shape(inputs, attrs):
    cond, x, y = inputs
    return [(x.dtype, broadcast_shape(broadcast_shape(cond.shape, x.shape), y.shape))]


registry.kernel("Select")(lambda ctx, node, c, x, y: np.where(c, x, y))


@registry.gradient("Select")
def _select_grad(op, grad):
    c, x, y = op.inputs
    zeros = zeros_like(grad)
    return [None, sum_to_shape(where(c, grad, zeros), x), sum_to_shape(where(c, zeros, grad), y)]


def where(condition, x=None, y=None, name=None):
    """`tf.where(condition, x, y)`: elementwise select (broadcasting as numpy); `tf.where(condition)`:
    the int64 coordinates ``[num_true, rank]`` of its true entries (``Where``, in sort_search_ops).

    Raises:
        ValueError: only one of `x` and `y` given.
    """
    if x is None and y is None:
        condition = convert_to_tensor(condition, dtype=_dtypes.bool)
        return registry.make_op("Where", [condition], name=name).outputs[0]
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    condition = convert_to_tensor(condition, dtype=_dtypes.bool)
    x, y = convert_n([x, y])
    return registry.make_op("Select", [condition, x, y], name=name).outputs[0]


# -- zeros/ones like ----------------------------------------------------------------------------
registry.shape("ZerosLike")(same_as_input)
registry.shape("OnesLike")(same_as_input)
registry.kernel("ZerosLike")(
    lambda ctx, node, x: (
        np.full(np.shape(x), b"", object) if np.asarray(x).dtype == object else np.zeros_like(x)
    )
)  # a string tensor's zeros are b"", as TF's
registry.kernel("OnesLike")(lambda ctx, node, x: np.ones_like(x))
registry.no_gradient("ZerosLike")
registry.no_gradient("OnesLike")


def zeros_like(tensor, dtype=None, name=None):
    t = registry.make_op("ZerosLike", [convert_to_tensor(tensor)], name=name).outputs[0]
    return t if dtype is None else cast(t, dtype)


def ones_like(tensor, dtype=None, name=None):
    t = registry.make_op("OnesLike", [convert_to_tensor(tensor)], name=name).outputs[0]
    return t if dtype is None else cast(t, dtype)


# -- cast -----------------------------------------------------------------------------------------
registry.shape("Cast")(lambda inputs, attrs: [(attrs["DstT"], inputs[0].shape)])
registry.kernel("Cast")(lambda ctx, node, x: np.asarray(x).astype(node.attr["DstT"].np))


@registry.gradient("Cast")
def _cast_grad(op, grad):
    src = op.inputs[0].dtype
    if src.is_floating and op.outputs[0].dtype.is_floating:
        return [cast(grad, src)]
    return [None]


def cast(x, dtype, name=None):
    x = convert_to_tensor(x)
    dtype = _dtypes.as_dtype(dtype)
    if x.dtype == dtype:
        return x
    return registry.make_op("Cast", [x], {"DstT": dtype, "SrcT": x.dtype}, name=name).outputs[0]


def to_float(x, name="ToFloat"):
    return cast(x, _dtypes.float32, name=name)


def to_double(x, name="ToDouble"):
    return cast(x, _dtypes.float64, name=name)


def to_int32(x, name="ToInt32"):
    return cast(x, _dtypes.int32, name=name)


def to_int64(x, name="ToInt64"):
    return cast(x, _dtypes.int64, name=name)


def to_complex64(x, name="ToComplex64"):
    return cast(x, _dtypes.complex64, name=name)


def to_complex128(x, name="ToComplex128"):
    return cast(x, _dtypes.complex128, name=name)
