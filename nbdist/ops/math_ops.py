"""Elementwise and matrix math: constructor, shape, kernel and gradient side by side.

Also installs the arithmetic operators on `Tensor` (``a + b``, ``a @ b``, ``-a``...).
Binary ops broadcast as numpy does; their gradients are summed back to each
input's shape by `SumToShape` (so broadcasting works with unknown static shapes).
"""

import builtins

import numpy as np

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import Tensor
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops._shapes import broadcast_shape, same_as_input
from nbdist.ops.constant_op import convert_n, convert_to_tensor


# -- binary elementwise -------------------------------------------------------------------
def _binary_shape(inputs, attrs):
    x, y = inputs
    if x.dtype != y.dtype:
        raise TypeError(
            f"inputs must have the same dtype, got {x.dtype.name} ({x.name}) and "
            f"{y.dtype.name} ({y.name}); insert tf.cast() to convert one"
        )
    return [(x.dtype, broadcast_shape(x.shape, y.shape))]


def _bool_binary_shape(inputs, attrs):
    ((_, shape),) = _binary_shape(inputs, attrs)
    return [(_dtypes.bool, shape)]


def _binary(op_type, x, y, name):
    x, y = convert_n([x, y])
    return registry.make_op(op_type, [x, y], name=name).outputs[0]


def sum_to_shape(grad, like):
    """`grad` summed over the axes that broadcasting added to `like`'s shape."""
    if grad is None:
        return None
    if grad.shape.ndims is not None and grad.shape == like.shape and like.shape.is_fully_defined():
        return grad
    return registry.make_op("SumToShape", [grad, like]).outputs[0]


registry.shape("SumToShape")(lambda inputs, attrs: [(inputs[0].dtype, inputs[1].shape)])


@registry.kernel("SumToShape")
def _sum_to_shape_kernel(ctx, node, grad, like):
    target = np.shape(like)
    if grad.shape == target:
        return grad
    extra = grad.ndim - len(target)
    # (np.add.reduce is what ndarray.sum calls, without its Python wrapper)
    out = np.add.reduce(grad, axis=0 if extra == 1 else tuple(builtins.range(extra))) if extra > 0 else grad
    if out.shape == target:  # (a bias's gradient: the leading axes summed, nothing else)
        return out
    axes = tuple(i for i, d in enumerate(target) if d == 1 and out.shape[i] != 1)
    if axes:
        out = np.add.reduce(out, axis=axes, keepdims=True)
    return out.reshape(target)


@registry.gradient("SumToShape")
def _sum_to_shape_grad(op, grad):
    return [broadcast_to_like(grad, op.inputs[0]), None]


def broadcast_to_like(x, like):
    return registry.make_op("BroadcastToLike", [x, like]).outputs[0]


registry.shape("BroadcastToLike")(lambda inputs, attrs: [(inputs[0].dtype, inputs[1].shape)])


@registry.kernel("BroadcastToLike")
def _broadcast_to_like_kernel(ctx, node, x, like):
    out = np.empty(np.shape(like), np.result_type(x))  # (np.copyto broadcasts as np.broadcast_to does)
    np.copyto(out, x)
    return out


@registry.gradient("BroadcastToLike")
def _broadcast_to_like_grad(op, grad):
    return [sum_to_shape(grad, op.inputs[0]), None]


for _t in (
    "Add",
    "Sub",
    "Mul",
    "RealDiv",
    "DivNoNan",
    "FloorDiv",
    "FloorMod",
    "Pow",
    "Maximum",
    "Minimum",
    "SquaredDifference",
):
    registry.shape(_t)(_binary_shape)
registry.no_gradient("FloorDiv")  # as in TF: a floor has no useful gradient
for _t in ("Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual"):
    registry.shape(_t)(_bool_binary_shape)
    registry.no_gradient(_t)

registry.kernel("Add")(lambda ctx, node, x, y: np.add(x, y))
registry.kernel("Sub")(lambda ctx, node, x, y: np.subtract(x, y))
registry.kernel("Mul")(lambda ctx, node, x, y: np.multiply(x, y))
registry.kernel("FloorDiv")(lambda ctx, node, x, y: np.floor_divide(x, y))
registry.kernel("FloorMod")(lambda ctx, node, x, y: np.mod(x, y))  # the sign of y, as TF's floormod
registry.kernel("Maximum")(lambda ctx, node, x, y: np.maximum(x, y))
registry.kernel("Minimum")(lambda ctx, node, x, y: np.minimum(x, y))
registry.kernel("SquaredDifference")(lambda ctx, node, x, y: np.square(x - y))
registry.kernel("Equal")(lambda ctx, node, x, y: np.equal(x, y))
registry.kernel("NotEqual")(lambda ctx, node, x, y: np.not_equal(x, y))
registry.kernel("Less")(lambda ctx, node, x, y: np.less(x, y))
registry.kernel("LessEqual")(lambda ctx, node, x, y: np.less_equal(x, y))
registry.kernel("Greater")(lambda ctx, node, x, y: np.greater(x, y))
registry.kernel("GreaterEqual")(lambda ctx, node, x, y: np.greater_equal(x, y))


@registry.kernel("RealDiv")
def _div_kernel(ctx, node, x, y):
    dtype = np.asarray(x).dtype
    if not np.issubdtype(dtype, np.floating):  # TF registers RealDiv for floats only
        raise errors.InvalidArgumentError(
            node.name,
            None,
            f"RealDiv op {node.name!r} is not defined for {dtype} inputs (it would floor-divide); "
            "use tf.divide / tf.truediv (integers give floats) or tf.cast the inputs",
        )
    return np.divide(x, y)


@registry.kernel("DivNoNan")
def _div_no_nan_kernel(ctx, node, x, y):
    x, y = np.asarray(x), np.asarray(y)
    safe_y = np.where(y == 0, np.ones((), dtype=y.dtype), y)
    return np.where(y == 0, np.zeros((), dtype=x.dtype), np.divide(x, safe_y)).astype(x.dtype, copy=False)


@registry.kernel("Pow")
def _pow_kernel(ctx, node, x, y):
    return np.power(x, y)


@registry.gradient("Add")
def _add_grad(op, grad):
    x, y = op.inputs
    return [sum_to_shape(grad, x), sum_to_shape(grad, y)]


@registry.gradient("Sub")
def _sub_grad(op, grad):
    x, y = op.inputs
    return [sum_to_shape(grad, x), sum_to_shape(-grad, y)]


@registry.gradient("Mul")
def _mul_grad(op, grad):
    x, y = op.inputs
    return [sum_to_shape(grad * y, x), sum_to_shape(grad * x, y)]


@registry.gradient("RealDiv")
def _div_grad(op, grad):
    x, y = op.inputs
    return [sum_to_shape(grad / y, x), sum_to_shape(-grad * x / (y * y), y)]


@registry.gradient("DivNoNan")
def _div_no_nan_grad(op, grad):
    x, y = op.inputs
    return [sum_to_shape(div_no_nan(grad, y), x), sum_to_shape(grad * div_no_nan(div_no_nan(-x, y), y), y)]


@registry.gradient("Pow")
def _pow_grad(op, grad):
    x, y = op.inputs
    z = op.outputs[0]
    gx = grad * y * pow(x, y - 1.0)
    safe_x = where(x > 0.0, x, ones_like(x))
    gy = grad * z * where(x > 0.0, log(safe_x), zeros_like(x))
    return [sum_to_shape(gx, x), sum_to_shape(gy, y)]


@registry.gradient("SquaredDifference")
def _squared_difference_grad(op, grad):
    x, y = op.inputs
    d = grad * 2.0 * (x - y)
    return [sum_to_shape(d, x), sum_to_shape(-d, y)]


def _minmax_grad(op, grad, select):
    x, y = op.inputs
    mask = select(x, y)
    zeros = zeros_like(grad)
    return [sum_to_shape(where(mask, grad, zeros), x), sum_to_shape(where(mask, zeros, grad), y)]


registry.gradient("Maximum")(lambda op, grad: _minmax_grad(op, grad, greater_equal))
registry.gradient("Minimum")(lambda op, grad: _minmax_grad(op, grad, less_equal))


def add(x, y, name=None):
    return _binary("Add", x, y, name)


def subtract(x, y, name=None):
    return _binary("Sub", x, y, name)


def multiply(x, y, name=None):
    return _binary("Mul", x, y, name)


# TF's truediv: integers become floats first (small ints float32, 32/64-bit ints float64).
_TRUEDIV_FLOAT = {
    _dtypes.int8: _dtypes.float32,
    _dtypes.uint8: _dtypes.float32,
    _dtypes.int16: _dtypes.float32,
    _dtypes.int32: _dtypes.float64,
    _dtypes.int64: _dtypes.float64,
}


def truediv(x, y, name=None):
    """``x / y`` elementwise, always a float division (integer inputs give floats, as in TF)."""
    x, y = convert_n([x, y])
    target = _TRUEDIV_FLOAT.get(x.dtype)
    if target is not None and x.dtype == y.dtype:
        x, y = cast(x, target), cast(y, target)
    return registry.make_op("RealDiv", [x, y], name=name).outputs[0]


def divide(x, y, name=None):
    """``x / y`` elementwise (TF 1.x: `truediv`; integers give floats)."""
    return truediv(x, y, name)


def div_no_nan(x, y, name=None):
    """`tf.div_no_nan`: ``x / y`` elementwise, 0 where ``y`` is 0 (floats only, as TF's `DivNoNan`).

    Raises:
        TypeError: for integer inputs.
    """
    x, y = convert_n([x, y])
    if x.dtype not in (_dtypes.float16, _dtypes.float32, _dtypes.float64):
        raise TypeError(f"tf.div_no_nan takes float tensors, got {x.dtype.name} ({x.name}); tf.cast it first")
    return registry.make_op("DivNoNan", [x, y], name=name).outputs[0]


def floordiv(x, y, name=None):
    """``x // y`` elementwise: the floor of the quotient, in the inputs' dtype (TF's floordiv)."""
    return _binary("FloorDiv", x, y, name)


def floormod(x, y, name=None):
    """``x - floordiv(x, y) * y`` elementwise (the result has the sign of `y`; TF's floormod, ``%``)."""
    return _binary("FloorMod", x, y, name)


mod = floormod


@registry.gradient("FloorMod")
def _floormod_grad(op, grad):
    x, y = op.inputs
    return [sum_to_shape(grad, x), sum_to_shape(grad * negative(floordiv(x, y)), y)]


def pow(x, y, name=None):  # noqa: A001 - TF's public name tf.pow
    return _binary("Pow", x, y, name)


def maximum(x, y, name=None):
    return _binary("Maximum", x, y, name)


def minimum(x, y, name=None):
    return _binary("Minimum", x, y, name)


def squared_difference(x, y, name=None):
    return _binary("SquaredDifference", x, y, name)


def equal(x, y, name=None):
    return _binary("Equal", x, y, name)


def not_equal(x, y, name=None):
    return _binary("NotEqual", x, y, name)


def less(x, y, name=None):
    return _binary("Less", x, y, name)


def less_equal(x, y, name=None):
    return _binary("LessEqual", x, y, name)


def greater(x, y, name=None):
    return _binary("Greater", x, y, name)


def greater_equal(x, y, name=None):
    return _binary("GreaterEqual", x, y, name)


# -- unary elementwise ----------------------------------------------------------------------
def _stable_sigmoid(x):
    e = np.exp(-np.abs(x))  # never overflows
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e)).astype(x.dtype, copy=False)


_UNARY_KERNELS = {
    "Neg": np.negative,
    "Square": np.square,
    "Sqrt": np.sqrt,
    "Exp": np.exp,
    "Log": np.log,
    "Abs": np.abs,
    "Sign": np.sign,
    "Tanh": np.tanh,
    "Sigmoid": _stable_sigmoid,
    "Relu": lambda x: np.maximum(x, 0).astype(x.dtype, copy=False),
    "Identity": lambda x: x,
    "StopGradient": lambda x: x,
    "Reciprocal": np.reciprocal,
    "Log1p": np.log1p,
    "Softplus": lambda x: np.logaddexp(np.zeros((), x.dtype), x),
    "Floor": np.floor,
}


def _unary_kernel(fn):
    return lambda ctx, node, x: fn(x)


for _t, _fn in _UNARY_KERNELS.items():
    registry.shape(_t)(same_as_input)
    registry.kernel(_t)(_unary_kernel(_fn))
registry.no_gradient("StopGradient")
registry.no_gradient("Sign")
registry.no_gradient("Floor")  # piecewise constant: zero almost everywhere, as TF's None


def _unary(op_type, x, name):
    x = convert_to_tensor(x)
    return registry.make_op(op_type, [x], name=name).outputs[0]


registry.gradient("Neg")(lambda op, grad: [-grad])
registry.gradient("Identity", indexed_slices=True)(lambda op, grad: [grad])
registry.gradient("Square")(lambda op, grad: [grad * 2.0 * op.inputs[0]])
registry.gradient("Sqrt")(lambda op, grad: [grad * 0.5 / op.outputs[0]])
registry.gradient("Exp")(lambda op, grad: [grad * op.outputs[0]])
registry.gradient("Log")(lambda op, grad: [grad / op.inputs[0]])
registry.gradient("Abs")(lambda op, grad: [grad * sign(op.inputs[0])])
registry.gradient("Tanh")(lambda op, grad: [grad * (1.0 - square(op.outputs[0]))])
registry.gradient("Sigmoid")(lambda op, grad: [grad * op.outputs[0] * (1.0 - op.outputs[0])])
registry.gradient("Reciprocal")(lambda op, grad: [-grad * square(op.outputs[0])])
registry.gradient("Log1p")(lambda op, grad: [grad / (1.0 + op.inputs[0])])
registry.gradient("Softplus")(lambda op, grad: [grad * sigmoid(op.inputs[0])])


@registry.gradient("Relu")
def _relu_grad(op, grad):
    return [_relu_backprop(grad, op.outputs[0])]


# `ReluGrad(gradients, features)`: TF's op for the gradient of `Relu` (``features`` is the Relu's
# output), ``gradients * (features > 0)``: one kernel instead of a select, so a NaN or inf
# gradient at an inactive unit gives NaN, as in TF.
@registry.shape("ReluGrad")
def _relu_grad_shape(inputs, attrs):
    gradients, features = inputs
    if gradients.dtype != features.dtype:
        raise TypeError(
            f"ReluGrad: gradients are {gradients.dtype.name} but features are {features.dtype.name}"
        )
    if not gradients.shape.is_compatible_with(features.shape):
        raise ValueError(
            f"ReluGrad: gradients {gradients.shape} and features {features.shape} differ in shape"
        )
    return [(gradients.dtype, gradients.shape.merge_with(features.shape))]


@registry.kernel("ReluGrad")
def _relu_grad_kernel(ctx, node, gradients, features):
    if np.shape(gradients) != np.shape(features):
        raise errors.InvalidArgumentError(
            node.name,
            None,
            f"ReluGrad: gradients of shape {list(np.shape(gradients))} and features of shape "
            f"{list(np.shape(features))} must have the same shape",
        )
    return np.multiply(gradients, features > 0)


@registry.gradient("ReluGrad")
def _relu_grad_grad(op, grad):
    features = op.inputs[1]
    return [_relu_backprop(grad, features), zeros_like(features)]


def _relu_backprop(gradients, features):
    return registry.make_op("ReluGrad", [gradients, features]).outputs[0]


def negative(x, name=None):
    return _unary("Neg", x, name)


def square(x, name=None):
    return _unary("Square", x, name)


def sqrt(x, name=None):
    return _unary("Sqrt", x, name)


def exp(x, name=None):
    return _unary("Exp", x, name)


def log(x, name=None):
    return _unary("Log", x, name)


def abs(x, name=None):  # noqa: A001 - TF's public name tf.abs
    return _unary("Abs", x, name)


def sign(x, name=None):
    return _unary("Sign", x, name)


def tanh(x, name=None):
    return _unary("Tanh", x, name)


def sigmoid(x, name=None):
    return _unary("Sigmoid", x, name)


def relu(features, name=None):
    return _unary("Relu", features, name)


def log1p(x, name=None):
    """`tf.log1p`: ``log(1 + x)``, accurate for small `x`."""
    return _unary("Log1p", x, name)


def softplus(features, name=None):
    """`tf.nn.softplus`: ``log(1 + exp(features))``, computed without overflow."""
    return _unary("Softplus", features, name)


def floor(x, name=None):
    return _unary("Floor", x, name)


def reciprocal(x, name=None):
    return _unary("Reciprocal", x, name)


def identity(input, name=None):  # noqa: A002 - TF's argument name
    return _unary("Identity", input, name)


def stop_gradient(input, name=None):  # noqa: A002 - TF's argument name
    return _unary("StopGradient", input, name)


# -- select, zeros/ones like --------------------------------------------------------------------
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


def where(condition, x, y, name=None):
    """`tf.where(condition, x, y)`: elementwise select (broadcasting as numpy)."""
    condition = convert_to_tensor(condition, dtype=_dtypes.bool)
    x, y = convert_n([x, y])
    return registry.make_op("Select", [condition, x, y], name=name).outputs[0]


registry.shape("ZerosLike")(same_as_input)
registry.shape("OnesLike")(same_as_input)
registry.kernel("ZerosLike")(lambda ctx, node, x: np.zeros_like(x))
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


# -- matmul ---------------------------------------------------------------------------------------
@registry.shape("MatMul")
def _matmul_shape(inputs, attrs):
    a, b = inputs
    if a.dtype != b.dtype:
        raise TypeError(f"MatMul inputs must have one dtype, got {a.dtype.name} and {b.dtype.name}")
    for t in (a, b):
        if t.shape.ndims not in (None, 2):
            raise ValueError(f"MatMul needs rank-2 inputs, {t.name} has shape {t.shape}")
    da = a.shape.dims or [None, None]
    db = b.shape.dims or [None, None]
    if attrs.get("transpose_a"):
        da = da[::-1]
    if attrs.get("transpose_b"):
        db = db[::-1]
    if da[1] is not None and db[0] is not None and da[1] != db[0]:
        raise ValueError(
            f"MatMul: inner dimensions differ: {a.name} {a.shape} x {b.name} {b.shape} "
            f"(transpose_a={attrs.get('transpose_a')}, transpose_b={attrs.get('transpose_b')})"
        )
    return [(a.dtype, TensorShape([da[0], db[1]]))]


@registry.kernel("MatMul")
def _matmul_kernel(ctx, node, a, b):
    if node.attr.get("transpose_a"):
        a = a.T
    if node.attr.get("transpose_b"):
        b = b.T
    return a @ b


@registry.gradient("MatMul")
def _matmul_grad(op, grad):
    a, b = op.inputs
    ta, tb = op.get_attr("transpose_a"), op.get_attr("transpose_b")
    if not ta and not tb:
        return [matmul(grad, b, transpose_b=True), matmul(a, grad, transpose_a=True)]
    if not ta and tb:
        return [matmul(grad, b), matmul(grad, a, transpose_a=True)]
    if ta and not tb:
        return [matmul(b, grad, transpose_b=True), matmul(a, grad)]
    return [
        matmul(b, grad, transpose_a=True, transpose_b=True),
        matmul(grad, a, transpose_a=True, transpose_b=True),
    ]


def matmul(a, b, transpose_a=False, transpose_b=False, name=None):
    """`tf.matmul` for rank-2 tensors, with TF's transpose flags."""
    a, b = convert_n([a, b])
    attrs = {"transpose_a": bool(transpose_a), "transpose_b": bool(transpose_b)}
    return registry.make_op("MatMul", [a, b], attrs, name=name).outputs[0]


# -- add_n ------------------------------------------------------------------------------------------
@registry.shape("AddN")
def _add_n_shape(inputs, attrs):
    shape = inputs[0].shape
    for t in inputs[1:]:
        shape = shape.merge_with(t.shape) if shape.is_compatible_with(t.shape) else TensorShape(None)
    return [(inputs[0].dtype, shape)]


@registry.kernel("AddN")
def _add_n_kernel(ctx, node, *xs):
    out = np.array(xs[0], copy=True)
    for x in xs[1:]:
        out += x
    return out


registry.gradient("AddN")(lambda op, grad: [grad] * len(op.inputs))


def add_n(inputs, name=None):
    """`tf.add_n`: the elementwise sum of a list of same-shaped tensors."""
    if not inputs:
        raise ValueError("add_n() needs at least one input tensor")
    inputs = convert_n(list(inputs))
    if len(inputs) == 1 and name is None:
        return inputs[0]
    return registry.make_op("AddN", inputs, name=name).outputs[0]


# -- range ------------------------------------------------------------------------------------------
def _static_scalar(t):
    if t.op.type == "Const" and t.op.get_attr("value").ndim == 0:
        return t.op.get_attr("value").item()
    return None


@registry.shape("Range")
def _range_shape(inputs, attrs):
    names = sorted({t.dtype.name for t in inputs})
    if len(names) != 1:
        raise TypeError(f"tf.range: start, limit and delta must share one dtype, got {names}")
    start, limit, delta = (_static_scalar(t) for t in inputs)
    if delta == 0:
        raise ValueError(f"tf.range: delta must not be 0 (start={start!r}, limit={limit!r})")
    if None in (start, limit, delta):
        return [(inputs[0].dtype, TensorShape([None]))]
    n = builtins.max(0, int(np.ceil((limit - start) / delta)))
    return [(inputs[0].dtype, TensorShape([n]))]


@registry.kernel("Range")
def _range_kernel(ctx, node, start, limit, delta):
    if delta == 0:
        raise errors.InvalidArgumentError(
            node.name, None, f"tf.range: delta must not be 0 (start={start}, limit={limit})"
        )
    return np.arange(start, limit, delta, dtype=np.asarray(start).dtype)


registry.no_gradient("Range")


def range(start, limit=None, delta=1, dtype=None, name="range"):  # noqa: A001 - TF's public name tf.range
    """`tf.range`: ``[start, start + delta, ...]`` up to but excluding `limit`.

    Args:
        start: first value, or the limit (starting at 0) when `limit` is None.
        limit: the exclusive end.
        delta: the step (not 0).
        dtype: element type (default: int32 for Python ints, float32 for floats).

    Raises:
        ValueError: if `delta` is statically 0.
    """
    if limit is None:
        start, limit = 0, start
    values = [start, limit, delta]
    if dtype is None and not any(isinstance(v, Tensor) for v in values):
        dtype = _dtypes.float32 if any(isinstance(v, float) for v in values) else _dtypes.int32
    if dtype is not None:
        values = [
            cast(v, dtype) if isinstance(v, Tensor) else convert_to_tensor(v, dtype=dtype) for v in values
        ]
    return registry.make_op("Range", convert_n(values), name=name).outputs[0]


# -- Tensor operators -------------------------------------------------------------------------------
def _install_operators():
    def reflected(fn):
        return lambda self, other: fn(other, self)

    for dunder, fn in (
        ("add", add),
        ("sub", subtract),
        ("mul", multiply),
        ("truediv", truediv),
        ("floordiv", floordiv),
        ("mod", floormod),
        ("pow", pow),
        ("matmul", matmul),
    ):
        setattr(Tensor, f"__{dunder}__", fn)
        setattr(Tensor, f"__r{dunder}__", reflected(fn))
    Tensor.__neg__ = negative
    Tensor.__abs__ = abs
    Tensor.__lt__ = less
    Tensor.__le__ = less_equal
    Tensor.__gt__ = greater
    Tensor.__ge__ = greater_equal


_install_operators()
