"""TF's math_ops names. Binary elementwise math is one table here, one row per op::

    add = _binary_op("Add", np.add, _add_grad, "add")

registers the op's shape (inputs of one dtype, broadcast as numpy does), its numpy kernel
and its gradient (None: not differentiable) and returns its tf function
``add(x, y, name=None)``. A row without a function name only registers the op: its tf
functions are written by hand below the table (`truediv` casts integers first). Each
gradient is summed back to its input's shape by `sum_to_shape` (so broadcasting works with
unknown static shapes). Also `tf.add_n`, `tf.range`, and TF's Python compositions of these
(`logical_xor`, `log_sigmoid`, `polyval`, `scalar_mul`...).

The rest of tf's math lives by responsibility beside this module, and is re-exported here
(``math_ops.cast``, ``tf.cast``): `unary_ops` (the unary table, `relu`, `identity`),
`cast_select_ops` (`cast`, `zeros_like`, `where`), `matmul_ops`, `broadcast_ops`
(`sum_to_shape`). This module installs `Tensor`'s arithmetic operators (``a + b``,
``a @ b``, ``-a``...).
"""

import builtins

import numpy as np

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import Tensor
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops._shapes import broadcast_shape
from nbdist.ops.broadcast_ops import broadcast_to_like, sum_to_shape
from nbdist.ops.cast_select_ops import (
    cast,
    ones_like,
    to_complex64,
    to_complex128,
    to_double,
    to_float,
    to_int32,
    to_int64,
    where,
    zeros_like,
)
from nbdist.ops.constant_op import convert_n, convert_to_tensor
from nbdist.ops.matmul_ops import matmul
from nbdist.ops.unary_ops import (
    abs,  # noqa: A004 - TF's public name tf.abs
    acos,
    acosh,
    asin,
    asinh,
    atan,
    atanh,
    ceil,
    cos,
    cosh,
    erf,
    erfc,
    exp,
    expm1,
    floor,
    identity,
    is_finite,
    is_inf,
    is_nan,
    log,
    log1p,
    logical_not,
    negative,
    reciprocal,
    relu,
    rint,
    round,  # noqa: A004 - TF's public name tf.round
    rsqrt,
    sigmoid,
    sign,
    sin,
    sinh,
    softplus,
    sqrt,
    square,
    stop_gradient,
    tan,
    tanh,
)

# The tf names (`nbdist/__init__.py` exports them as tf.*): this module's, then those it re-exports.
__all__ = ["add", "add_n", "div_no_nan", "divide", "equal", "floordiv", "floormod", "greater"]
__all__ += ["greater_equal", "less", "less_equal", "maximum", "minimum", "mod", "multiply", "not_equal"]
__all__ += ["pow", "range", "squared_difference", "subtract", "truediv"]
__all__ += ["accumulate_n", "atan2", "log_sigmoid", "logical_and", "logical_or", "logical_xor", "scalar_mul"]
__all__ += ["broadcast_to_like", "sum_to_shape"]  # broadcast_ops
__all__ += ["cast", "ones_like", "to_float", "where", "zeros_like"]  # cast_select_ops
__all__ += ["to_complex64", "to_complex128", "to_double", "to_int32", "to_int64"]
__all__ += ["matmul"]  # matmul_ops
__all__ += ["abs", "ceil", "cos", "exp", "floor", "identity", "log", "log1p", "negative"]  # unary_ops
__all__ += ["reciprocal", "relu", "sigmoid", "sign", "sin", "softplus", "sqrt", "square", "stop_gradient"]
__all__ += ["acos", "acosh", "asin", "asinh", "atan", "atanh", "cosh", "erf", "erfc", "expm1", "tanh"]
__all__ += ["is_finite", "is_inf", "is_nan", "logical_not", "rint", "round", "rsqrt", "sinh", "tan"]
# (tf.math only, not at tf.*: divide_no_nan, multiply_no_nan, reciprocal_no_nan, nextafter, polyval,
# xdivy, xlog1py, xlogy; nbdist/ns/math.py imports them)


# -- binary elementwise: shapes, kernels, gradients -----------------------------------------------
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


def _binary_op(op_type, numpy_fn, gradient, function=None, doc=None, *, kernel=None, shape=_binary_shape):
    """Registers `op_type`: `shape`, kernel ``numpy_fn(x, y)`` (or `kernel`, a registry kernel)
    and `gradient` (None: not differentiable).

    Returns:
        the tf function ``function(x, y, name=None)`` with docstring `doc`; None without `function`.
    """
    registry.shape(op_type)(shape)
    registry.kernel(op_type)(kernel or (lambda ctx, node, x, y: numpy_fn(x, y)))
    if gradient is None:
        registry.no_gradient(op_type)
    else:
        registry.gradient(op_type)(gradient)
    if function is None:
        return None

    def constructor(x, y, name=None):
        return _binary(op_type, x, y, name)

    constructor.__name__ = constructor.__qualname__ = function
    constructor.__doc__ = doc
    return constructor


def _comparison_op(op_type, numpy_fn, function):
    """A comparison: a bool output, not differentiable."""
    return _binary_op(op_type, numpy_fn, None, function, shape=_bool_binary_shape)


def _div_kernel(ctx, node, x, y):
    dtype = np.asarray(x).dtype
    if not np.issubdtype(dtype, np.inexact):  # TF registers RealDiv for floats and complex only
        raise errors.InvalidArgumentError(
            node.name,
            None,
            f"RealDiv op {node.name!r} is not defined for {dtype} inputs (it would floor-divide); "
            "use tf.divide / tf.truediv (integers give floats) or tf.cast the inputs",
        )
    return np.divide(x, y)


def _integer_division(numpy_fn):
    """A kernel of ``numpy_fn(x, y)`` that refuses an integer 0 divisor, as TF's."""

    def kernel(ctx, node, x, y):
        y = np.asarray(y)
        # A zero divisor that meets an element of x (none does when x is empty; otherwise the
        # broadcast uses every divisor). dtype.kind and all(), not issubdtype and a broadcast
        # mask: a mean's gradient floor-divides two scalars at every training step.
        if y.dtype.kind in "iu" and np.size(x) and not y.all():
            raise errors.InvalidArgumentError(node.name, None, "Integer division by zero")  # (of an element)
        return numpy_fn(x, y)

    return kernel


def _safe_divide(x, y):
    x, y = np.asarray(x), np.asarray(y)
    safe_y = np.where(y == 0, np.ones((), dtype=y.dtype), y)
    return np.where(y == 0, np.zeros((), dtype=x.dtype), np.divide(x, safe_y)).astype(x.dtype, copy=False)


def _add_grad(op, grad):
    x, y = op.inputs
    return [sum_to_shape(grad, x), sum_to_shape(grad, y)]


def _sub_grad(op, grad):
    x, y = op.inputs
    return [sum_to_shape(grad, x), sum_to_shape(-grad, y)]


def _mul_grad(op, grad):
    x, y = op.inputs
    return [sum_to_shape(grad * y, x), sum_to_shape(grad * x, y)]


def _div_grad(op, grad):
    x, y = op.inputs
    return [sum_to_shape(grad / y, x), sum_to_shape(-grad * x / (y * y), y)]


def _div_no_nan_grad(op, grad):
    x, y = op.inputs
    return [sum_to_shape(div_no_nan(grad, y), x), sum_to_shape(grad * div_no_nan(div_no_nan(-x, y), y), y)]


def _floormod_grad(op, grad):
    x, y = op.inputs
    return [sum_to_shape(grad, x), sum_to_shape(grad * negative(floordiv(x, y)), y)]


def _pow_grad(op, grad):
    x, y = op.inputs
    z = op.outputs[0]
    gx = grad * y * pow(x, y - 1.0)
    safe_x = where(x > 0.0, x, ones_like(x))
    gy = grad * z * where(x > 0.0, log(safe_x), zeros_like(x))
    return [sum_to_shape(gx, x), sum_to_shape(gy, y)]


def _minmax_grad(op, grad, select):
    x, y = op.inputs
    mask = select(x, y)
    zeros = zeros_like(grad)
    return [sum_to_shape(where(mask, grad, zeros), x), sum_to_shape(where(mask, zeros, grad), y)]


def _atan2_grad(op, grad):
    y, x = op.inputs
    grad_inv = grad / (square(x) + square(y))
    return [sum_to_shape(x * grad_inv, y), sum_to_shape(-y * grad_inv, x)]


def _mul_no_nan_grad(op, grad):
    x, y = op.inputs
    return [sum_to_shape(multiply_no_nan(grad, y), x), sum_to_shape(multiply_no_nan(x, grad), y)]


def _x_op_y_grad(partial_y):
    """The gradient of ``x * f(y)`` (0 where x is 0; TF's Xlogy, Xdivy, Xlog1py): `partial_y(x, y)`."""

    def gradient(op, grad):
        x, y = op.inputs
        not_zero_x = cast(not_equal(x, zeros_like(x)), x.dtype)
        partial_x = registry.make_op(op.type, [not_zero_x, y]).outputs[0]
        return [sum_to_shape(partial_x * grad, x), sum_to_shape(partial_y(x, y) * grad, y)]

    return gradient


def _zero_where_x_is_zero(fn):
    def kernel(x, y):
        return np.where(x == 0, np.zeros((), x.dtype), fn(x, y)).astype(x.dtype, copy=False)

    return kernel


def _squared_difference_grad(op, grad):
    x, y = op.inputs
    d = grad * 2.0 * (x - y)
    return [sum_to_shape(d, x), sum_to_shape(-d, y)]


# -- the table: op type, numpy kernel, gradient, tf function --------------------------------------
add = _binary_op("Add", np.add, _add_grad, "add")
subtract = _binary_op("Sub", np.subtract, _sub_grad, "subtract")
multiply = _binary_op("Mul", np.multiply, _mul_grad, "multiply")
_binary_op("RealDiv", None, _div_grad, kernel=_div_kernel)  # truediv(), divide(): integers cast first
_binary_op("DivNoNan", _safe_divide, _div_no_nan_grad)  # div_no_nan(): floats only
floordiv = _binary_op(  # (no gradient, as in TF: a floor has no useful gradient)
    "FloorDiv",
    np.floor_divide,
    None,
    "floordiv",
    doc="``x // y`` elementwise: the floor of the quotient, in the inputs' dtype (TF's floordiv).",
    kernel=_integer_division(np.floor_divide),
)
floormod = _binary_op(  # (np.mod: the sign of y, as TF's floormod)
    "FloorMod",
    np.mod,
    _floormod_grad,
    "floormod",
    doc="``x - floordiv(x, y) * y`` elementwise (the result has the sign of `y`; TF's floormod, ``%``).",
    kernel=_integer_division(np.mod),
)
pow = _binary_op("Pow", np.power, _pow_grad, "pow")  # noqa: A001 - TF's public name tf.pow
maximum = _binary_op("Maximum", np.maximum, lambda op, grad: _minmax_grad(op, grad, greater_equal), "maximum")
minimum = _binary_op("Minimum", np.minimum, lambda op, grad: _minmax_grad(op, grad, less_equal), "minimum")
squared_difference = _binary_op(
    "SquaredDifference", lambda x, y: np.square(x - y), _squared_difference_grad, "squared_difference"
)
equal = _comparison_op("Equal", np.equal, "equal")
not_equal = _comparison_op("NotEqual", np.not_equal, "not_equal")
less = _comparison_op("Less", np.less, "less")
less_equal = _comparison_op("LessEqual", np.less_equal, "less_equal")
greater = _comparison_op("Greater", np.greater, "greater")
greater_equal = _comparison_op("GreaterEqual", np.greater_equal, "greater_equal")
_binary_op("Atan2", np.arctan2, _atan2_grad)  # atan2(y, x)
_binary_op("NextAfter", np.nextafter, None)  # nextafter(x1, x2)
logical_and = _binary_op("LogicalAnd", np.logical_and, None, "logical_and")
logical_or = _binary_op("LogicalOr", np.logical_or, None, "logical_or")
multiply_no_nan = _binary_op(
    "MulNoNan",
    lambda x, y: np.where(y == 0, np.zeros((), x.dtype), x * y).astype(x.dtype, copy=False),
    _mul_no_nan_grad,
    "multiply_no_nan",
    doc="`tf.math.multiply_no_nan`: ``x * y``, 0 where `y` is 0 even if `x` is inf or NaN.",
)
xlogy = _binary_op(
    "Xlogy",
    _zero_where_x_is_zero(lambda x, y: x * np.log(y)),
    _x_op_y_grad(lambda x, y: xdivy(x, y)),  # noqa: PLW0108 - xdivy is defined below
    "xlogy",
    doc="`tf.math.xlogy`: ``x * log(y)``, 0 where `x` is 0.",
)
xdivy = _binary_op(
    "Xdivy",
    _zero_where_x_is_zero(np.divide),
    _x_op_y_grad(lambda x, y: xdivy(negative(x), square(y))),
    "xdivy",
    doc="`tf.math.xdivy`: ``x / y``, 0 where `x` is 0.",
)
xlog1py = _binary_op(
    "Xlog1py",
    _zero_where_x_is_zero(lambda x, y: x * np.log1p(y)),
    _x_op_y_grad(lambda x, y: xdivy(x, y + 1.0)),
    "xlog1py",
    doc="`tf.math.xlog1py`: ``x * log1p(y)``, 0 where `x` is 0.",
)

mod = floormod


def atan2(y, x, name=None):
    """`tf.atan2`: the angle of the point ``(x, y)``, in ``[-pi, pi]`` (note the order: y first)."""
    return _binary("Atan2", y, x, name)


def nextafter(x1, x2, name=None):
    """`tf.math.nextafter`: the next representable value after `x1` towards `x2`."""
    return _binary("NextAfter", x1, x2, name)


def logical_xor(x, y, name="LogicalXor"):
    """`tf.logical_xor`: ``(x or y) and not (x and y)``, as TF builds it."""
    return logical_and(logical_or(x, y), logical_not(logical_and(x, y)), name=name)


def log_sigmoid(x, name=None):
    """`tf.log_sigmoid`: ``log(1 / (1 + exp(-x)))``, as TF's ``-softplus(-x)`` (no overflow)."""
    x = convert_to_tensor(x)
    return negative(softplus(-x), name=name)


def scalar_mul(scalar, x, name=None):
    """`tf.scalar_mul`: ``scalar * x`` for a scalar `scalar`.

    Raises:
        ValueError: if `scalar` is not a scalar.
    """
    x = convert_to_tensor(x)
    scalar = convert_to_tensor(scalar, dtype=x.dtype)
    if scalar.shape.ndims not in (0, None):
        raise ValueError(f"Only scalar multiply works, got shape {scalar.shape} ({scalar.name})")
    return multiply(scalar, x, name=name)


def reciprocal_no_nan(x, name=None):
    """`tf.math.reciprocal_no_nan`: ``1 / x``, 0 where `x` is 0 (floats)."""
    x = convert_to_tensor(x)
    return div_no_nan(ones_like(x), x, name=name)


def polyval(coeffs, x, name=None):
    """`tf.math.polyval`: ``coeffs[0] * x**(n-1) + ... + coeffs[n-1]`` by Horner's rule, as TF.

    Raises:
        ValueError: if `coeffs` is not a list.
    """
    if not isinstance(coeffs, list):
        raise ValueError(f"Argument coeffs must be list type found {type(coeffs)}.")
    x = convert_to_tensor(x)
    if not coeffs:
        return zeros_like(x, name=name)
    coeffs = [convert_to_tensor(c, dtype=x.dtype) for c in coeffs]
    p = coeffs[0]
    for c in coeffs[1:]:
        p = c + p * x
    return identity(p, name=name) if name else p


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


divide_no_nan = div_no_nan  # (tf.math.divide_no_nan: TF's TF 2 name of tf.div_no_nan)


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


def accumulate_n(inputs, shape=None, tensor_dtype=None, name=None):
    """`tf.accumulate_n`: the elementwise sum of a list of tensors (nbdist: `add_n`).

    Raises:
        ValueError: for an empty list, or tensors not of `tensor_dtype` / `shape`.
    """
    if not inputs or not isinstance(inputs, (list, tuple)):
        raise ValueError("inputs must be a list of at least one Tensor with the same dtype and shape")
    inputs = convert_n(list(inputs))
    merged = TensorShape(shape)
    for t in inputs:
        merged = merged.merge_with(t.shape)  # ValueError for shapes that differ, as TF's
        if tensor_dtype is not None and t.dtype != _dtypes.as_dtype(tensor_dtype):
            raise TypeError(
                f"tf.accumulate_n: {t.name} is {t.dtype.name}, expected tensor_dtype {tensor_dtype}"
            )
        if shape is not None and not t.shape.is_compatible_with(TensorShape(shape)):
            raise ValueError(f"tf.accumulate_n: {t.name} has shape {t.shape}, expected {TensorShape(shape)}")
    return add_n(inputs, name=name)


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
