"""TF's special functions: `lgamma`, `digamma`, `polygamma`, `igamma` / `igammac` (the regularized
incomplete gamma functions), `betainc`, `zeta`, `lbeta`, `erfinv`, `erfcinv`, `ndtri`, the
modified Bessel functions `bessel_i0` / `i0e` / `i1` / `i1e`, and `sobol_sample`.

The kernels are SciPy's (`scipy.special`, imported when a kernel first runs, so a graph that
uses none of these costs nothing); the gradients are TF's (math_grad.py), built from the same
ops. One difference: TF's `IgammaGradA` (the derivative of `igamma` in `a`) is a series TF
evaluates in C++; here it is a central difference in float64 (relative error about 1e-9),
because SciPy has no such function.
"""

import math

import numpy as np

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import name_scope
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops._shapes import broadcast_shape
from nbdist.ops.broadcast_ops import sum_to_shape
from nbdist.ops.cast_select_ops import cast, where, zeros_like
from nbdist.ops.constant_op import convert_n, convert_to_tensor
from nbdist.ops.reduction_ops import reduce_sum
from nbdist.ops.unary_ops import exp, log, log1p, sign, square

__all__ = [
    "bessel_i0",
    "bessel_i0e",
    "bessel_i1",
    "bessel_i1e",
    "betainc",
    "digamma",
    "erfcinv",
    "erfinv",
    "igamma",
    "igammac",
    "lbeta",
    "lgamma",
    "ndtri",
    "polygamma",
    "sobol_sample",
    "zeta",
]


def _special():
    import scipy.special  # noqa: PLC0415 - SciPy loads when a special function first runs

    return scipy.special


def _in_dtype(fn):
    """A kernel that computes ``fn(*args)`` and keeps the first input's dtype."""

    def kernel(ctx, node, *args):
        return np.asarray(fn(*args)).astype(np.asarray(args[0]).dtype, copy=False)

    return kernel


def _float_shape(inputs, attrs):
    """All inputs floats of one dtype; the output has their broadcast shape."""
    first = inputs[0]
    for t in inputs:
        if t.dtype != first.dtype:
            raise TypeError(
                f"inputs must have the same dtype, got {first.dtype.name} ({first.name}) and "
                f"{t.dtype.name} ({t.name}); insert tf.cast() to convert one"
            )
        if not t.dtype.is_floating:
            raise TypeError(f"{t.name} is {t.dtype.name}: this function takes float16/32/64 inputs")
    shape = first.shape
    for t in inputs[1:]:
        shape = broadcast_shape(shape, t.shape)
    return [(first.dtype, shape)]


def _op(op_type, kernel, gradient, shape=_float_shape):
    registry.shape(op_type)(shape)
    registry.kernel(op_type)(kernel)
    if gradient is None:
        registry.no_gradient(op_type)
    else:
        registry.gradient(op_type)(gradient)


def _call(op_type, args, name):
    return registry.make_op(op_type, convert_n(list(args)), name=name).outputs[0]


# -- one-input functions ---------------------------------------------------------------------------
def _bessel_i1_grad(op, grad):
    x, y = op.inputs[0], op.outputs[0]
    safe_x = where(x == 0.0, 1.0 + zeros_like(x), x)
    return [grad * where(x == 0.0, 0.5 + zeros_like(x), bessel_i0(x) - y / safe_x)]


def _bessel_i1e_grad(op, grad):
    x, y = op.inputs[0], op.outputs[0]
    safe_x = where(x == 0.0, 1.0 + zeros_like(x), x)
    slope = bessel_i0e(x) - y * (sign(x) + 1.0 / safe_x)
    return [grad * where(x == 0.0, 0.5 + zeros_like(x), slope)]


_SQRT_PI_OVER_2 = math.sqrt(math.pi) / 2.0
_SQRT_2PI = math.sqrt(2.0 * math.pi)
_UNARY = {
    # op type: (scipy.special's function name, gradient)
    "Lgamma": ("gammaln", lambda op, grad: [grad * digamma(op.inputs[0])]),
    "Digamma": ("psi", lambda op, grad: [grad * polygamma(1.0 + zeros_like(op.inputs[0]), op.inputs[0])]),
    "Erfinv": ("erfinv", lambda op, grad: [grad * _SQRT_PI_OVER_2 * exp(square(op.outputs[0]))]),
    "Ndtri": ("ndtri", lambda op, grad: [grad * _SQRT_2PI * exp(0.5 * square(op.outputs[0]))]),
    "BesselI0": ("i0", lambda op, grad: [grad * bessel_i1(op.inputs[0])]),
    "BesselI0e": (
        "i0e",
        lambda op, grad: [grad * (bessel_i1e(op.inputs[0]) - sign(op.inputs[0]) * op.outputs[0])],
    ),
    "BesselI1": ("i1", _bessel_i1_grad),
    "BesselI1e": ("i1e", _bessel_i1e_grad),
}
for _type, (_scipy_name, _grad) in _UNARY.items():
    _op(_type, _in_dtype(lambda *a, _n=_scipy_name: getattr(_special(), _n)(*a)), _grad)


def lgamma(x, name=None):
    """`tf.lgamma`: ``log(|Gamma(x)|)``."""
    return _call("Lgamma", [x], name)


def digamma(x, name=None):
    """`tf.digamma`: the derivative of `lgamma`, ``Psi(x)``."""
    return _call("Digamma", [x], name)


def erfinv(x, name=None):
    """`tf.math.erfinv`: the inverse of `tf.erf` on (-1, 1)."""
    return _call("Erfinv", [x], name)


def ndtri(x, name=None):
    """`tf.math.ndtri`: the standard normal distribution's quantile function."""
    return _call("Ndtri", [x], name)


def erfcinv(x, name=None):
    """`tf.math.erfcinv`: the inverse of `tf.erfc` on (0, 2), built as TF's: ``-ndtri(x / 2) / sqrt(2)``."""
    with name_scope(name, "erfcinv", [x]):
        return -ndtri(0.5 * convert_to_tensor(x)) * math.sqrt(0.5)


def bessel_i0(x, name=None):
    """`tf.math.bessel_i0`: the modified Bessel function of the first kind of order 0."""
    return _call("BesselI0", [x], name)


def bessel_i0e(x, name=None):
    """`tf.math.bessel_i0e`: ``exp(-|x|) * bessel_i0(x)``."""
    return _call("BesselI0e", [x], name)


def bessel_i1(x, name=None):
    """`tf.math.bessel_i1`: the modified Bessel function of the first kind of order 1."""
    return _call("BesselI1", [x], name)


def bessel_i1e(x, name=None):
    """`tf.math.bessel_i1e`: ``exp(-|x|) * bessel_i1(x)``."""
    return _call("BesselI1e", [x], name)


# -- two and three inputs ----------------------------------------------------------------------------
def _polygamma_grad(op, grad):
    a, x = op.inputs
    return [None, sum_to_shape(grad * polygamma(a + 1.0, x), x)]


def _igamma_partial_x(a, x):
    return exp(-x + (a - 1.0) * log(x) - lgamma(a))


def _igamma_grad(op, grad):
    a, x = op.inputs
    partial_a = registry.make_op("IgammaGradA", [a, x]).outputs[0]
    return [sum_to_shape(grad * partial_a, a), sum_to_shape(grad * _igamma_partial_x(a, x), x)]


def _igammac_grad(op, grad):
    ga, gx = _igamma_grad(op, grad)
    return [-ga, -gx]


def igamma_grad_a(a, x):
    """d igamma(a, x) / da, numpy arrays in and out: a central difference in float64 (SciPy has
    no closed form). (`IgammaGradA`'s kernel; the random Gamma draws' gradient uses it too.)"""
    a64, x64 = np.asarray(a, np.float64), np.asarray(x, np.float64)
    h = 1e-5 * np.maximum(1.0, np.abs(a64))
    gammainc = _special().gammainc
    return (gammainc(a64 + h, x64) - gammainc(a64 - h, x64)) / (2.0 * h)


def _betainc_grad(op, grad):
    a, b, x = op.inputs
    log_beta = lgamma(a) + lgamma(b) - lgamma(a + b)
    partial_x = exp((b - 1.0) * log1p(-x) + (a - 1.0) * log(x) - log_beta)
    return [None, None, sum_to_shape(grad * partial_x, x)]


def _zeta_grad(op, grad):
    x, q = op.inputs
    return [None, sum_to_shape(grad * -x * zeta(x + 1.0, q), q)]


def _broadcast_kernel(fn):
    def kernel(ctx, node, *args):
        args = np.broadcast_arrays(*args)
        return np.asarray(fn(*args)).astype(args[0].dtype, copy=False)

    return kernel


_op("Polygamma", _broadcast_kernel(lambda a, x: _special().polygamma(a.astype(np.int64), x)), _polygamma_grad)
_op("Igamma", _broadcast_kernel(lambda a, x: _special().gammainc(a, x)), _igamma_grad)
_op("Igammac", _broadcast_kernel(lambda a, x: _special().gammaincc(a, x)), _igammac_grad)
_op("IgammaGradA", _broadcast_kernel(igamma_grad_a), None)
_op("Betainc", _broadcast_kernel(lambda a, b, x: _special().betainc(a, b, x)), _betainc_grad)
_op("Zeta", _broadcast_kernel(lambda x, q: _special().zeta(x, q)), _zeta_grad)


def polygamma(a, x, name=None):
    """`tf.polygamma`: the `a`-th derivative of `digamma` (`a` a non-negative whole number)."""
    return _call("Polygamma", [a, x], name)


def igamma(a, x, name=None):
    """`tf.igamma`: the lower regularized incomplete gamma function ``P(a, x)``."""
    return _call("Igamma", [a, x], name)


def igammac(a, x, name=None):
    """`tf.igammac`: the upper regularized incomplete gamma function ``Q(a, x) = 1 - P(a, x)``."""
    return _call("Igammac", [a, x], name)


def betainc(a, b, x, name=None):
    """`tf.betainc`: the regularized incomplete beta function ``I_x(a, b)``."""
    return _call("Betainc", [a, b, x], name)


def zeta(x, q, name=None):
    """`tf.zeta`: the Hurwitz zeta function ``sum((q + n) ** -x for n >= 0)``."""
    return _call("Zeta", [x, q], name)


def lbeta(x, name=None):
    """`tf.lbeta`: ``log(|Beta(x)|)`` over the last axis, built as TF's: ``sum(lgamma(x)) -
    lgamma(sum(x))`` (an empty last axis gives -inf, as TF)."""
    with name_scope(name, "lbeta", [x]):
        x = convert_to_tensor(x)
        return reduce_sum(lgamma(x), axis=[-1]) - lgamma(reduce_sum(x, axis=[-1]))


# -- sobol_sample ----------------------------------------------------------------------------------
def _sobol_shape(inputs, attrs):
    return [(attrs["dtype"], TensorShape([None, None]))]


@registry.kernel("SobolSample")
def _sobol_kernel(ctx, node, dim, num_results, skip):
    from scipy.stats import qmc  # noqa: PLC0415 - as _special()

    dim, num_results, skip = int(dim), int(num_results), int(skip)
    if dim < 1 or num_results < 1 or skip < 0:
        raise errors.InvalidArgumentError(
            node.name,
            None,
            f"SobolSample: dim ({dim}) and num_results ({num_results}) must be positive and skip "
            f"({skip}) non-negative",
        )
    engine = qmc.Sobol(dim, scramble=False)
    engine.fast_forward(skip + 1)  # TF's sequence starts after the all-zeros point
    return engine.random(num_results).astype(node.attr["dtype"].np)


registry.shape("SobolSample")(_sobol_shape)
registry.no_gradient("SobolSample")


def sobol_sample(dim, num_results, skip=0, dtype=_dtypes.float32, name=None):
    """`tf.math.sobol_sample`: `num_results` points of the `dim`-dimensional Sobol sequence
    (Joe and Kuo's direction numbers, as TF), after skipping `skip` points."""
    args = [cast(convert_to_tensor(v), _dtypes.int32) for v in (dim, num_results, skip)]
    return registry.make_op("SobolSample", args, {"dtype": _dtypes.as_dtype(dtype)}, name=name).outputs[0]
