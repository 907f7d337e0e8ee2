"""TF's smaller array ops at tf.*: `parallel_stack` (``ParallelConcat``), `shape_n` (``ShapeN``),
`identity_n` (``IdentityN``), `bitcast` (``Bitcast``), `saturate_cast` (a clamp and a cast, as
TF builds it), `ensure_shape` (``EnsureShape``: the static shapes merged, the value's checked
when it runs), `unravel_index` (``UnravelIndex``), `guarantee_const` (``GuaranteeConst``),
`newaxis`; `Dimension`, `dimension_value`, `dimension_at_index` (nbdist/graph/dimension.py);
`random_crop` is tf.image's (nbdist/ops/image_ops.py) at its other path.
"""

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.dimension import Dimension, dimension_at_index, dimension_value
from nbdist.graph.graph import get_default_graph
from nbdist.graph.tensor_shape import TensorShape, as_shape
from nbdist.ops import registry
from nbdist.ops._shapes import int_tensor, invalid_argument, same_as_input, tf_dims
from nbdist.ops.cast_select_ops import cast
from nbdist.ops.clip_ops import clip_by_value
from nbdist.ops.complex_ops import complex, imag, real  # noqa: A004 - TF's tf.complex
from nbdist.ops.constant_op import constant, convert_to_tensor, register_tensor_conversion_function
from nbdist.ops.image_ops import random_crop
from nbdist.ops.reshape_ops import expand_dims

__all__ = [
    "Dimension",
    "bitcast",
    "dimension_at_index",
    "dimension_value",
    "ensure_shape",
    "guarantee_const",
    "identity_n",
    "newaxis",
    "parallel_stack",
    "random_crop",
    "saturate_cast",
    "shape_n",
    "unravel_index",
]

newaxis = None  # `tf.newaxis`: ``x[:, tf.newaxis]`` adds an axis, as numpy's


def _dimension_to_tensor(dimension, dtype, name):
    """TF's conversion of a known `Dimension` to a scalar (int32 unless `dtype` says)."""
    if dimension.value is None:
        raise ValueError(f"Cannot convert an unknown Dimension to a Tensor: {dimension}")
    return constant(dimension.value, dtype=dtype or _dtypes.int32, name=name or "Const")


register_tensor_conversion_function(Dimension, _dimension_to_tensor)


# -- ParallelConcat ---------------------------------------------------------------------------------
registry.shape("ParallelConcat")(lambda inputs, attrs: [(inputs[0].dtype, attrs["shape"])])
registry.kernel("ParallelConcat")(lambda ctx, node, *xs: np.concatenate(xs, axis=0))
registry.no_gradient("ParallelConcat")  # (TF registers none)


def parallel_stack(values, name="parallel_stack"):
    """`tf.parallel_stack`: the tensors of `values` (one shape, fully known) stacked along a
    new first axis.

    Raises:
        ValueError: `values` is empty, or their shapes are not fully defined or differ.
    """
    with get_default_graph().name_scope(name):
        values = [convert_to_tensor(v) for v in values]
        if not values:
            raise ValueError("tf.parallel_stack: values must hold at least one tensor")
        dims = values[0].shape
        for v in values:
            if not v.shape.is_fully_defined() or v.shape != dims:
                raise ValueError(
                    f"tf.parallel_stack: every value needs the fully defined shape {dims}, "
                    f"got {v.name} of {v.shape}"
                )
        shape = TensorShape([len(values)]).concatenate(dims)
        parts = [expand_dims(v, 0) for v in values]
        return registry.make_op("ParallelConcat", parts, {"N": len(parts), "shape": shape}).outputs[0]


# -- ShapeN, IdentityN ------------------------------------------------------------------------------
@registry.shape("ShapeN")
def _shape_n_shape(inputs, attrs):
    return [(attrs["out_type"], TensorShape([x.shape.ndims])) for x in inputs]


@registry.kernel("ShapeN")
def _shape_n_kernel(ctx, node, *xs):
    shapes = tuple(np.asarray(np.shape(x), node.attr["out_type"].np) for x in xs)
    return shapes[0] if len(shapes) == 1 else shapes  # (one output: the array itself)


registry.no_gradient("ShapeN")


def shape_n(input, out_type=_dtypes.int32, name=None):  # noqa: A002 - TF's argument name
    """`tf.shape_n`: the shapes of the tensors of `input` (one dtype), a list of 1-D tensors.

    Raises:
        TypeError: the tensors' dtypes differ, or `out_type` is not int32 or int64.
    """
    xs = [convert_to_tensor(x) for x in input]
    if len({x.dtype for x in xs}) > 1:
        raise TypeError(
            "Tensors in list passed to 'input' of 'ShapeN' Op have types "
            f"[{', '.join(x.dtype.name for x in xs)}] that don't all match."
        )
    out_type = _dtypes.as_dtype(out_type)
    if out_type not in (_dtypes.int32, _dtypes.int64):
        raise TypeError(f"tf.shape_n: out_type must be int32 or int64, got {out_type.name}")
    attrs = {"N": len(xs), "out_type": out_type}
    return list(registry.make_op("ShapeN", xs, attrs, name=name or "ShapeN").outputs)


registry.shape("IdentityN")(lambda inputs, attrs: [(x.dtype, x.shape) for x in inputs])
registry.kernel("IdentityN")(lambda ctx, node, *xs: xs[0] if len(xs) == 1 else xs)
registry.gradient("IdentityN")(lambda op, *grads: list(grads))


def identity_n(input, name=None):  # noqa: A002 - TF's argument name
    """`tf.identity_n`: the tensors of `input`, passed through as one op (a list)."""
    xs = [convert_to_tensor(x) for x in input]
    return list(
        registry.make_op("IdentityN", xs, {"T": [x.dtype for x in xs]}, name=name or "IdentityN").outputs
    )


# -- Bitcast -----------------------------------------------------------------------------------------
def _bitcast_sizes(source, target):
    for dtype in (source, target):
        if dtype.is_bool or dtype == _dtypes.string:
            raise TypeError(f"tf.bitcast: {dtype.name} cannot be bitcast (numbers only)")
    return source.size, target.size


@registry.shape("Bitcast")
def _bitcast_shape(inputs, attrs):
    x, target = inputs[0], attrs["type"]
    n_in, n_out = _bitcast_sizes(x.dtype, target)
    if n_in == n_out or x.shape.ndims is None:
        return [(target, x.shape if n_in == n_out else TensorShape(None))]
    dims = x.shape.as_list()
    if n_in > n_out:
        return [(target, TensorShape([*dims, n_in // n_out]))]
    if not dims or dims[-1] not in (None, n_out // n_in):
        raise ValueError(
            f"tf.bitcast: cannot bitcast {x.name} of shape {x.shape} from {x.dtype.name} to "
            f"{target.name}: its last dimension must be {n_out // n_in}"
        )
    return [(target, TensorShape(dims[:-1]))]


@registry.kernel("Bitcast")
def _bitcast_kernel(ctx, node, x):
    x, target = np.array(x, copy=None, order="C"), node.attr["type"].np  # (0-d stays 0-d)
    n_in, n_out = x.dtype.itemsize, target.itemsize
    if n_in < n_out and (x.ndim == 0 or x.shape[-1] != n_out // n_in):
        raise invalid_argument(
            node,
            f"Cannot bitcast from {x.dtype} to {target}: shape {list(x.shape)} "
            f"needs a last dimension of {n_out // n_in}",
        )
    if n_in == n_out:
        return x.view(target)
    if n_in > n_out:
        return x.reshape(*x.shape, 1).view(target)
    return x.view(target).reshape(x.shape[:-1])


registry.no_gradient("Bitcast")


def bitcast(input, type, name=None):  # noqa: A002 - TF's argument names
    """`tf.bitcast`: the same bytes read as `type`; a smaller type adds a last dimension, a
    larger one consumes it.

    Raises:
        TypeError: bool or string dtypes.
        ValueError: the last dimension does not hold one value of the larger type.
    """
    x = convert_to_tensor(input, name="input")
    attrs = {"T": x.dtype, "type": _dtypes.as_dtype(type)}
    return registry.make_op("Bitcast", [x], attrs, name=name or "Bitcast").outputs[0]


# -- saturate_cast --------------------------------------------------------------------------------------
def _limits(in_dtype, out_dtype):
    """TF's clamp bounds: the output type's range, nudged inside where the input type rounds it out."""
    np_dtype = in_dtype.np
    promoted = np.promote_types(np_dtype, out_dtype.np)
    low = np_dtype.type(np.maximum(in_dtype.min, out_dtype.min))
    if np.array([low, out_dtype.min], dtype=promoted)[0] < np.array([low, out_dtype.min], dtype=promoted)[1]:
        low = np.nextafter(low, np_dtype.type(0), dtype=np_dtype)
    high = np_dtype.type(np.minimum(float(in_dtype.max), float(out_dtype.max)))
    if (
        np.array([high, out_dtype.max], dtype=promoted)[0]
        > np.array([high, out_dtype.max], dtype=promoted)[1]
    ):
        high = np.nextafter(high, np_dtype.type(0), dtype=np_dtype)
    return low, high


def saturate_cast(value, dtype, name=None):
    """`tf.saturate_cast`: `value` clamped into `dtype`'s range, then cast (a complex input cast
    to a real type keeps its real part)."""
    with get_default_graph().name_scope(name or "saturate_cast"):
        value = convert_to_tensor(value, name="value")
        dtype = _dtypes.as_dtype(dtype)
        in_dtype = value.dtype
        if in_dtype.is_complex:
            if dtype.is_complex:
                low, high = _limits(in_dtype.real_dtype, dtype.real_dtype)
                parts = [clip_by_value(p, low, high) for p in (real(value), imag(value))]
                return cast(complex(*parts), dtype)
            value, in_dtype = real(value), in_dtype.real_dtype
        low, high = _limits(in_dtype, dtype.real_dtype)
        low, high = convert_to_tensor(low, dtype=in_dtype), convert_to_tensor(high, dtype=in_dtype)
        return cast(clip_by_value(value, low, high, name="clamp"), dtype)


# -- EnsureShape ---------------------------------------------------------------------------------------
@registry.shape("EnsureShape")
def _ensure_shape_shape(inputs, attrs):
    x, expected = inputs[0], attrs["shape"]
    if not x.shape.is_compatible_with(expected):
        raise ValueError(f"tf.ensure_shape: {x.name} of shape {x.shape} is not compatible with {expected}")
    return [(x.dtype, x.shape.merge_with(expected))]


@registry.kernel("EnsureShape")
def _ensure_shape_kernel(ctx, node, x):
    expected = node.attr["shape"]
    if not expected.is_compatible_with(np.shape(x)):
        dims = tf_dims(np.shape(x))
        raise invalid_argument(
            node, f"Shape of tensor {node.name} {dims} is not compatible with expected shape {expected}."
        )
    return x


registry.gradient("EnsureShape")(lambda op, grad: [grad])


def ensure_shape(x, shape, name=None):
    """`tf.ensure_shape`: `x`, its static shape merged with `shape`; running it checks the value.

    Raises:
        ValueError: the static shapes are not compatible.
        InvalidArgumentError: at run time, when the value's shape does not fit `shape`.
    """
    x = convert_to_tensor(x, name="x")
    attrs = {"T": x.dtype, "shape": as_shape(shape)}
    return registry.make_op("EnsureShape", [x], attrs, name=name or "EnsureShape").outputs[0]


# -- UnravelIndex, GuaranteeConst ------------------------------------------------------------------------
@registry.shape("UnravelIndex")
def _unravel_index_shape(inputs, attrs):
    indices, dims = inputs
    if indices.dtype != dims.dtype:
        raise TypeError(
            f"tf.unravel_index: indices ({indices.dtype.name}) and dims ({dims.dtype.name}) differ"
        )
    if indices.shape.ndims not in (None, 0, 1) or dims.shape.ndims not in (None, 1):
        raise ValueError(
            "tf.unravel_index: indices must be a scalar or 1-D and dims 1-D, "
            f"got {indices.shape} and {dims.shape}"
        )
    n = dims.shape[0] if dims.shape.ndims == 1 else None
    if indices.shape.ndims == 0:
        return [(indices.dtype, TensorShape([n]))]
    if indices.shape.ndims == 1:
        return [(indices.dtype, TensorShape([n, indices.shape[0]]))]
    return [(indices.dtype, TensorShape(None))]


@registry.kernel("UnravelIndex")
def _unravel_index_kernel(ctx, node, indices, dims):
    indices, dims = np.asarray(indices), np.asarray(dims)
    total = int(np.prod(dims))
    if indices.size == 0:
        raise invalid_argument(node, "UnravelIndex: received empty tensor indices")
    if np.any(dims <= 0):
        raise invalid_argument(node, f"UnravelIndex: dims must be positive, got {dims.tolist()}")
    if np.any((indices < 0) | (indices >= total)):
        raise invalid_argument(
            node,
            f"UnravelIndex: index out of bound as with dims: {indices.tolist()} for dims {dims.tolist()}",
        )
    return np.asarray(np.unravel_index(indices, dims), indices.dtype)


registry.no_gradient("UnravelIndex")


def unravel_index(indices, dims, name=None):
    """`tf.unravel_index`: the coordinates in an array of shape `dims` of the flat `indices`
    (a scalar: ``[len(dims)]``; 1-D: ``[len(dims), len(indices)]``).

    Raises:
        InvalidArgumentError: at run time, for an index out of ``[0, prod(dims))`` or no indices.
    """
    indices = int_tensor(indices, "indices")
    dims = (
        int_tensor(dims, "dims")
        if not isinstance(dims, (list, tuple))
        else convert_to_tensor(dims, indices.dtype)
    )
    return registry.make_op("UnravelIndex", [indices, dims], name=name or "UnravelIndex").outputs[0]


registry.shape("GuaranteeConst")(same_as_input)
registry.kernel("GuaranteeConst")(lambda ctx, node, x: x)
registry.no_gradient("GuaranteeConst")  # (TF registers none)


def guarantee_const(input, name=None):  # noqa: A002 - TF's argument name
    """`tf.guarantee_const`: `input`, promised constant for the run (a hint TF's compilers use;
    nbdist passes the value through)."""
    x = convert_to_tensor(input, name="input")
    return registry.make_op("GuaranteeConst", [x], name=name or "GuaranteeConst").outputs[0]
