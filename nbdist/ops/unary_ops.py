"""Unary elementwise math, one row per op: ``negative = _unary_op("Neg", np.negative, gradient,
"negative")`` registers the op's shape (its input's), its numpy kernel and its gradient (None:
not differentiable) and returns its tf function ``negative(x, name=None)`` (`shape`: another
shape function, as the bool output of `is_nan`). A row without a function name only registers
the op: its tf function is written by hand below (another
argument name, as `relu(features)`). Also `Relu`'s gradient op `ReluGrad`, and `Identity`
and `StopGradient`.

The gradients use `Tensor`'s arithmetic operators, which `math_ops` installs.
"""

import math

import numpy as np

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.ops import registry
from nbdist.ops._shapes import same_as_input
from nbdist.ops.cast_select_ops import zeros_like
from nbdist.ops.constant_op import convert_to_tensor


def _unary(op_type, x, name):
    x = convert_to_tensor(x)
    return registry.make_op(op_type, [x], name=name).outputs[0]


def _unary_op(op_type, numpy_fn, gradient, function=None, doc=None, *, shape=same_as_input):
    """Registers `op_type`: `shape`, kernel ``numpy_fn(x)`` and `gradient` (None: not differentiable).

    Returns:
        the tf function ``function(x, name=None)`` with docstring `doc`; None without `function`.
    """
    registry.shape(op_type)(shape)
    registry.kernel(op_type)(lambda ctx, node, x: numpy_fn(x))
    if gradient is None:
        registry.no_gradient(op_type)
    else:
        registry.gradient(op_type)(gradient)
    if function is None:
        return None

    def constructor(x, name=None):
        return _unary(op_type, x, name)

    constructor.__name__ = constructor.__qualname__ = function
    constructor.__doc__ = doc
    return constructor


def _stable_sigmoid(x):
    e = np.exp(-np.abs(x))  # never overflows
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e)).astype(x.dtype, copy=False)


def _softplus(x):
    return np.logaddexp(np.zeros((), x.dtype), x)


def _bool_shape(inputs, attrs):
    """A bool of `x`'s shape (IsNan, IsInf, IsFinite: defined for floats only, as TF's)."""
    x = inputs[0]
    if not x.dtype.is_floating:
        raise TypeError(
            f"Value passed to parameter 'x' has DataType {x.dtype.name} not in list of allowed "
            f"values: float16, float32, float64 ({x.name}: cast it to a float first)"
        )
    return [(_dtypes.bool, x.shape)]


def _elementwise(scalar_fn):
    """A numpy kernel from a Python scalar function (`math.erf`: numpy has none), in `x`'s dtype."""
    ufunc = np.frompyfunc(scalar_fn, 1, 1)
    return lambda x: np.asarray(ufunc(x), dtype=np.asarray(x).dtype)


_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _erf_grad(op, grad, sign=1.0):
    x = op.inputs[0]
    return [grad * (sign * _TWO_OVER_SQRT_PI) * exp(-square(x))]


def _sigmoid_grad(op, grad):
    return [grad * op.outputs[0] * (1.0 - op.outputs[0])]


def _relu_grad(op, grad):
    return [relu_backprop(grad, op.outputs[0])]


# -- the table: op type, numpy kernel, gradient, tf function --------------------------------------
negative = _unary_op("Neg", np.negative, lambda op, grad: [-grad], "negative")
square = _unary_op("Square", np.square, lambda op, grad: [grad * 2.0 * op.inputs[0]], "square")
sqrt = _unary_op("Sqrt", np.sqrt, lambda op, grad: [grad * 0.5 / op.outputs[0]], "sqrt")
exp = _unary_op("Exp", np.exp, lambda op, grad: [grad * op.outputs[0]], "exp")
log = _unary_op("Log", np.log, lambda op, grad: [grad / op.inputs[0]], "log")
abs = _unary_op("Abs", np.abs, lambda op, grad: [grad * sign(op.inputs[0])], "abs")  # noqa: A001 - tf.abs
sign = _unary_op("Sign", np.sign, None, "sign")
tanh = _unary_op("Tanh", np.tanh, lambda op, grad: [grad * (1.0 - square(op.outputs[0]))], "tanh")
sigmoid = _unary_op("Sigmoid", _stable_sigmoid, _sigmoid_grad, "sigmoid")
_unary_op("Relu", lambda x: np.maximum(x, 0).astype(x.dtype, copy=False), _relu_grad)  # relu(features)
reciprocal = _unary_op(
    "Reciprocal", np.reciprocal, lambda op, grad: [-grad * square(op.outputs[0])], "reciprocal"
)
log1p = _unary_op(
    "Log1p",
    np.log1p,
    lambda op, grad: [grad / (1.0 + op.inputs[0])],
    "log1p",
    doc="`tf.log1p`: ``log(1 + x)``, accurate for small `x`.",
)
_unary_op("Softplus", _softplus, lambda op, grad: [grad * sigmoid(op.inputs[0])])  # softplus(features)
# (Floor and Ceil are piecewise constant: their gradient is zero almost everywhere, as TF's None)
floor = _unary_op("Floor", np.floor, None, "floor")
ceil = _unary_op("Ceil", np.ceil, None, "ceil", doc="`tf.ceil`: the smallest integer not below `x`.")
sin = _unary_op("Sin", np.sin, lambda op, grad: [grad * cos(op.inputs[0])], "sin", doc="`tf.sin`: the sine.")
cos = _unary_op(
    "Cos", np.cos, lambda op, grad: [-grad * sin(op.inputs[0])], "cos", doc="`tf.cos`: the cosine."
)

# The inverse trigonometric and hyperbolic functions, and their gradients as TF's math_grad.py.
tan = _unary_op("Tan", np.tan, lambda op, grad: [grad * (1.0 + square(op.outputs[0]))], "tan")
asin = _unary_op("Asin", np.arcsin, lambda op, grad: [grad * rsqrt(1.0 - square(op.inputs[0]))], "asin")
acos = _unary_op("Acos", np.arccos, lambda op, grad: [-grad * rsqrt(1.0 - square(op.inputs[0]))], "acos")
atan = _unary_op("Atan", np.arctan, lambda op, grad: [grad / (1.0 + square(op.inputs[0]))], "atan")
sinh = _unary_op("Sinh", np.sinh, lambda op, grad: [grad * cosh(op.inputs[0])], "sinh")
cosh = _unary_op("Cosh", np.cosh, lambda op, grad: [grad * sinh(op.inputs[0])], "cosh")
asinh = _unary_op("Asinh", np.arcsinh, lambda op, grad: [grad / cosh(op.outputs[0])], "asinh")
acosh = _unary_op("Acosh", np.arccosh, lambda op, grad: [grad / sinh(op.outputs[0])], "acosh")
atanh = _unary_op("Atanh", np.arctanh, lambda op, grad: [grad / (1.0 - square(op.inputs[0]))], "atanh")
erf = _unary_op("Erf", _elementwise(math.erf), _erf_grad, "erf", doc="`tf.erf`: the Gauss error function.")
erfc = _unary_op("Erfc", _elementwise(math.erfc), lambda op, grad: _erf_grad(op, grad, -1.0), "erfc")
expm1 = _unary_op("Expm1", np.expm1, lambda op, grad: [grad * exp(op.inputs[0])], "expm1")
rsqrt = _unary_op(
    "Rsqrt",
    lambda x: np.reciprocal(np.sqrt(x)),
    lambda op, grad: [-0.5 * grad * op.outputs[0] * square(op.outputs[0])],
    "rsqrt",
)
# (Round and Rint are piecewise constant, as Floor: no gradient, as TF's None)
_unary_op("Round", np.round, None)  # round(): integers pass through; np.round halves to even, as TF
rint = _unary_op("Rint", np.rint, None, "rint", doc="`tf.rint`: the nearest integer, halves to even.")
is_finite = _unary_op("IsFinite", np.isfinite, None, "is_finite", shape=_bool_shape)
is_inf = _unary_op("IsInf", np.isinf, None, "is_inf", shape=_bool_shape)
is_nan = _unary_op("IsNan", np.isnan, None, "is_nan", shape=_bool_shape)
logical_not = _unary_op("LogicalNot", np.logical_not, None, "logical_not")


def round(x, name=None):  # noqa: A001 - TF's public name tf.round
    """`tf.round`: `x` rounded to the nearest integer, halves to even (banker's rounding, as TF)."""
    x = convert_to_tensor(x)
    return x if x.dtype.is_integer else _unary("Round", x, name)


def relu(features, name=None):
    return _unary("Relu", features, name)


def softplus(features, name=None):
    """`tf.nn.softplus`: ``log(1 + exp(features))``, computed without overflow."""
    return _unary("Softplus", features, name)


# -- ReluGrad -------------------------------------------------------------------------------------
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
    return [relu_backprop(grad, features), zeros_like(features)]


def relu_backprop(gradients, features):
    """The `ReluGrad` op: `gradients` where `features` (a Relu's output) is positive, else 0."""
    return registry.make_op("ReluGrad", [gradients, features]).outputs[0]


# -- identity, stop_gradient ----------------------------------------------------------------------
for _t in ("Identity", "StopGradient"):
    registry.shape(_t)(same_as_input)
    registry.kernel(_t)(lambda ctx, node, x: x)
registry.gradient("Identity", indexed_slices=True)(lambda op, grad: [grad])
registry.no_gradient("StopGradient")


def identity(input, name=None):  # noqa: A002 - TF's argument name
    return _unary("Identity", input, name)


def stop_gradient(input, name=None):  # noqa: A002 - TF's argument name
    return _unary("StopGradient", input, name)
