"""Array ops, TF's `array_ops` module: placeholder, fill, zeros and ones here; and, under the
same names as in TF, the shape, layout and join/cut ops of `shape_ops`, `reshape_ops` and
`concat_slice_ops` (one responsibility each).
"""

import numpy as np

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import Tensor, get_default_graph
from nbdist.graph.tensor_shape import TensorShape, as_shape
from nbdist.ops import math_ops, registry
from nbdist.ops._shapes import int_tensor, invalid_argument, static_length, unknown_dims
from nbdist.ops.concat_slice_ops import concat, pad, slice, split, stack, unstack  # noqa: A004 - TF's tf.slice
from nbdist.ops.constant_op import constant, convert_to_tensor
from nbdist.ops.reshape_ops import (
    expand_dims,
    invert_permutation,
    reshape,
    reverse,
    reverse_v2,
    squeeze,
    transpose,
)
from nbdist.ops.shape_ops import get_static_value, rank, shape, size

__all__ = [
    "concat",
    "expand_dims",
    "fill",
    "get_static_value",
    "invert_permutation",
    "ones",
    "pad",
    "placeholder",
    "placeholder_with_default",
    "rank",
    "reshape",
    "reverse",
    "reverse_v2",
    "shape",
    "size",
    "slice",
    "split",
    "squeeze",
    "stack",
    "transpose",
    "unstack",
    "zeros",
]

_MAX_CONST_FILL = 1000  # zeros()/ones() above this many elements use a Fill op, as TF does


# -- placeholder -----------------------------------------------------------------------------
registry.shape("Placeholder")(lambda inputs, attrs: [(attrs["dtype"], attrs["shape"])])
registry.no_gradient("Placeholder")


@registry.kernel("Placeholder")
def _placeholder_kernel(ctx, node):
    shape = node.attr["shape"]
    raise errors.InvalidArgumentError(
        node.name,
        None,
        f"You must feed a value for placeholder tensor {node.name!r} with dtype "
        f"{node.attr['dtype'].name} and shape {shape}: add it to feed_dict",
    )


registry.shape("PlaceholderWithDefault")(lambda inputs, attrs: [(inputs[0].dtype, attrs["shape"])])
registry.kernel("PlaceholderWithDefault")(lambda ctx, node, value: value)
registry.gradient("PlaceholderWithDefault")(lambda op, grad: [grad])


def placeholder_with_default(input, shape, name=None):  # noqa: A002 - TF's argument name
    """`tf.placeholder_with_default`: `input`'s value unless a value is fed (a train/eval
    switch: ``training = tf.placeholder_with_default(False, [])``)."""
    value = convert_to_tensor(input)
    shape = as_shape(shape)
    if not shape.is_compatible_with(value.shape):
        raise ValueError(
            f"tf.placeholder_with_default: the default's shape {value.shape} does not fit {shape}"
        )
    attrs = {"dtype": value.dtype, "shape": shape}
    return registry.make_op(
        "PlaceholderWithDefault", [value], attrs, name=name or "PlaceholderWithDefault"
    ).outputs[0]


def placeholder(dtype, shape=None, name=None):
    """`tf.placeholder`: a tensor whose value must be fed (dtype and shape checked then)."""
    attrs = {"dtype": _dtypes.as_dtype(dtype), "shape": as_shape(shape)}
    return registry.make_op("Placeholder", [], attrs, name=name, graph=get_default_graph()).outputs[0]


# -- fill, zeros, ones -----------------------------------------------------------------------------
@registry.shape("Fill")
def _fill_shape(inputs, attrs):
    dims_t, value = inputs
    if value.shape.ndims not in (None, 0):
        raise ValueError(f"tf.fill: value must be a scalar, got shape {value.shape}")
    dims = get_static_value(dims_t)
    if dims is None:
        return unknown_dims(value.dtype, static_length(dims_t))
    return [(value.dtype, TensorShape([int(d) for d in dims]))]


@registry.kernel("Fill")
def _fill_kernel(ctx, node, dims, value):
    if np.any(np.asarray(dims) < 0):
        raise invalid_argument(node, f"Fill: dims must be non-negative, got {np.asarray(dims).tolist()}")
    return np.full([int(d) for d in dims], value, dtype=np.asarray(value).dtype)


registry.gradient("Fill")(lambda op, grad: [None, math_ops.sum_to_shape(grad, op.inputs[1])])


def fill(dims, value, name=None):
    """`tf.fill`: a tensor of shape `dims` with every element `value`."""
    return registry.make_op("Fill", [int_tensor(dims, "dims"), convert_to_tensor(value)], name=name).outputs[
        0
    ]


def _filled(shape, dtype, value, name):
    dtype = _dtypes.as_dtype(dtype)
    if isinstance(shape, Tensor):
        return fill(shape, constant(value, dtype=dtype), name=name)
    dims = as_shape(shape)
    if not dims.is_fully_defined():
        raise ValueError(f"shape {dims} must be fully defined; pass a shape tensor (tf.shape(x)) instead")
    dims = dims.as_list()
    if int(np.prod(dims)) <= _MAX_CONST_FILL:
        return constant(np.full(dims, value, dtype.np), dtype=dtype, name=name)
    return fill(dims, constant(value, dtype=dtype), name=name)


def zeros(shape, dtype=_dtypes.float32, name=None):
    """`tf.zeros`: a tensor of `shape` (a list or a 1-D int tensor) filled with zeros."""
    zero = b"" if _dtypes.as_dtype(dtype) is _dtypes.string else 0  # TF's zeros of strings
    return _filled(shape, dtype, zero, name or "zeros")


def ones(shape, dtype=_dtypes.float32, name=None):
    """`tf.ones`: a tensor of `shape` (a list or a 1-D int tensor) filled with ones."""
    return _filled(shape, dtype, 1, name or "ones")


def constant_strings(values, name=None):
    """A 1-D string constant (`str` items are UTF-8 encoded)."""
    array = np.array([v.encode() if isinstance(v, str) else v for v in values], dtype=object)
    return constant(array, dtype=_dtypes.string, name=name or "Const")
