"""Complex numbers: `tf.complex` (two real tensors into one complex64 / complex128 tensor) and
its parts `tf.real`, `tf.imag`, `tf.conj`, `tf.angle`; shapes, numpy kernels and TF's gradients
side by side. On real tensors the parts are what TF gives: `real` and `conj` the input itself,
`imag` zeros, `angle` pi where negative and 0 elsewhere.
"""

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.ops import math_ops, registry
from nbdist.ops._shapes import broadcast_shape
from nbdist.ops.constant_op import constant, convert_n, convert_to_tensor

__all__ = ["angle", "complex", "conj", "imag", "real"]

_COMPLEX_OF = {_dtypes.float32: _dtypes.complex64, _dtypes.float64: _dtypes.complex128}


@registry.shape("Complex")
def _complex_shape(inputs, attrs):
    re, im = inputs
    if re.dtype != im.dtype or re.dtype not in _COMPLEX_OF:
        raise TypeError(
            f"tf.complex takes two float32 or two float64 tensors, got {re.dtype.name} ({re.name}) "
            f"and {im.dtype.name} ({im.name})"
        )
    return [(_COMPLEX_OF[re.dtype], broadcast_shape(re.shape, im.shape))]


@registry.kernel("Complex")
def _complex_kernel(ctx, node, re, im):
    dtype = np.result_type(re, np.complex64)  # (float32 -> complex64, float64 -> complex128)
    out = np.empty(np.broadcast_shapes(np.shape(re), np.shape(im)), dtype=dtype)
    out.real, out.imag = re, im
    return out


@registry.gradient("Complex")
def _complex_grad(op, grad):
    re, im = op.inputs
    return [math_ops.sum_to_shape(real(grad), re), math_ops.sum_to_shape(imag(grad), im)]


def complex(real, imag, name=None):  # noqa: A001 - TF's public name tf.complex
    """`tf.complex`: ``real + imag * 1j`` elementwise (float32 -> complex64, float64 -> complex128)."""
    re, im = convert_n([real, imag])
    return registry.make_op("Complex", [re, im], name=name).outputs[0]


def _part_shape(inputs, attrs):
    x = inputs[0]
    if not x.dtype.is_complex:
        raise TypeError(f"expected a complex64 or complex128 tensor, got {x.dtype.name} ({x.name})")
    return [(x.dtype.real_dtype, x.shape)]


for _t, _fn in (("Real", np.real), ("Imag", np.imag), ("Angle", np.angle)):
    registry.shape(_t)(_part_shape)
    registry.kernel(_t)(lambda ctx, node, x, fn=_fn: np.ascontiguousarray(fn(x)))
registry.shape("Conj")(lambda inputs, attrs: [(inputs[0].dtype, inputs[0].shape)])
registry.kernel("Conj")(lambda ctx, node, x: np.conj(x))


def _zero(grad):
    return constant(0, dtype=grad.dtype)


registry.gradient("Real")(lambda op, grad: [complex(grad, _zero(grad))])
registry.gradient("Imag")(lambda op, grad: [complex(_zero(grad), grad)])
registry.gradient("Conj")(lambda op, grad: [conj(grad)])


@registry.gradient("Angle")
def _angle_grad(op, grad):
    """TF's: ``-complex(grad, 0) / complex(imag(x), real(x))``."""
    x = op.inputs[0]
    z = math_ops.reciprocal(complex(imag(x), real(x)))
    return [-complex(grad, _zero(grad)) * z]


def _part(op_type, x, name):
    return registry.make_op(op_type, [x], name=name).outputs[0]


def real(input, name=None):  # noqa: A002 - TF's argument name
    """`tf.real`: the real part of a complex tensor (a real tensor: itself)."""
    x = convert_to_tensor(input)
    return _part("Real", x, name) if x.dtype.is_complex else x


def imag(input, name=None):  # noqa: A002 - TF's argument name
    """`tf.imag`: the imaginary part of a complex tensor (a real tensor: zeros)."""
    x = convert_to_tensor(input)
    return _part("Imag", x, name) if x.dtype.is_complex else math_ops.zeros_like(x, name=name)


def conj(x, name=None):
    """`tf.conj`: the complex conjugate (a real tensor: itself).

    Raises:
        TypeError: for a tensor that is not numeric.
    """
    x = convert_to_tensor(x)
    if x.dtype.is_complex:
        return _part("Conj", x, name)
    if not (x.dtype.is_floating or x.dtype.is_integer):
        raise TypeError(f"Expected numeric or variant tensor, got dtype {x.dtype.name} ({x.name})")
    return x


def angle(input, name=None):  # noqa: A002 - TF's argument name
    """`tf.angle`: the argument of a complex tensor, in ``[-pi, pi]`` (real: pi where negative, else 0)."""
    x = convert_to_tensor(input)
    if x.dtype.is_complex:
        return _part("Angle", x, name)
    pi = math_ops.ones_like(x) * np.pi
    return math_ops.where(x < 0, pi, math_ops.zeros_like(x), name=name)
