"""TF 1.x's discrete Fourier transforms at `tf.*`: `fft` / `ifft` over the innermost axis,
`fft2d` / `ifft2d` and `fft3d` / `ifft3d` over the innermost two and three, and the N-d forms
`fftnd` / `ifftnd` / `rfftnd` / `irfftnd` over given `axes` with given `fft_length` (an input
axis longer than its length is cropped, a shorter one padded with zeros, as numpy does).

Kernels are numpy's `np.fft`, in the input's precision (complex64 stays complex64). Gradients are
TF's: the adjoint transform scaled by the transform's size. For the N-d forms one op,
`FFTNDGrad`, computes the adjoint of each of the four (with the crop or the padding undone and
`irfftnd`'s Hermitian weights); it has no gradient itself, so their second derivatives are not
available (TF's are).
"""

import numpy as np

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops.cast_select_ops import cast
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.reduction_ops import reduce_prod
from nbdist.ops.shape_ops import shape

__all__ = ["fft", "fft2d", "fft3d", "fftnd", "ifft", "ifft2d", "ifft3d", "ifftnd", "irfftnd", "rfftnd"]


def _complex_input(inputs, rank, op_type):
    x = inputs[0]
    if not x.dtype.is_complex:
        raise TypeError(
            f"{op_type} takes complex64 or complex128 input, got {x.dtype.name} ({x.name}); tf.cast it"
        )
    if x.shape.ndims is not None and x.shape.ndims < rank:
        raise ValueError(f"{op_type} needs an input of rank >= {rank}, got {x.shape} ({x.name})")
    return [(x.dtype, x.shape)]


# -- fft / ifft over the innermost 1, 2 or 3 axes --------------------------------------------------
def _inner_size(t, rank):
    """The number of elements of `t`'s innermost `rank` axes, in `t`'s complex dtype."""
    return cast(reduce_prod(shape(t)[-rank:]), t.dtype)


def _inner_op(op_type, inverse_type, rank, numpy_fn, scale_up):
    axes = tuple(range(-rank, 0))
    registry.shape(op_type)(lambda inputs, attrs: _complex_input(inputs, rank, op_type))

    @registry.kernel(op_type)
    def _kernel(ctx, node, x):
        return numpy_fn(x, axes=axes).astype(x.dtype, copy=False)

    @registry.gradient(op_type)
    def _gradient(op, grad):
        adjoint = registry.make_op(inverse_type, [grad]).outputs[0]
        size = _inner_size(grad, rank)
        return [adjoint * size if scale_up else adjoint / size]

    def function(input, name=None):  # noqa: A002 - TF's argument name
        return registry.make_op(op_type, [convert_to_tensor(input)], name=name).outputs[0]

    function.__name__ = function.__qualname__ = op_type.lower()
    function.__doc__ = (
        f"`tf.{op_type.lower()}`: the {'inverse ' if not scale_up else ''}DFT over the innermost {rank} axes."
    )
    return function


fft = _inner_op("FFT", "IFFT", 1, np.fft.fftn, True)
ifft = _inner_op("IFFT", "FFT", 1, np.fft.ifftn, False)
fft2d = _inner_op("FFT2D", "IFFT2D", 2, np.fft.fftn, True)
ifft2d = _inner_op("IFFT2D", "FFT2D", 2, np.fft.ifftn, False)
fft3d = _inner_op("FFT3D", "IFFT3D", 3, np.fft.fftn, True)
ifft3d = _inner_op("IFFT3D", "FFT3D", 3, np.fft.ifftn, False)


# -- the N-d forms ---------------------------------------------------------------------------------
def _lengths_and_axes(node, x, fft_length, axes):
    lengths = [int(n) for n in np.asarray(fft_length).reshape(-1)]
    axes = [int(a) for a in np.asarray(axes).reshape(-1)]
    if len(lengths) != len(axes):
        raise errors.InvalidArgumentError(
            node.name, None, f"{node.op}: fft_length {lengths} and axes {axes} must have the same length"
        )
    rank = np.ndim(x)
    bad = [a for a in axes if not -rank <= a < rank]
    if bad or any(n < 1 for n in lengths):
        raise errors.InvalidArgumentError(
            node.name,
            None,
            f"{node.op}: axes {axes} must lie in [-{rank}, {rank}) for an input of rank {rank}, "
            f"and fft_length {lengths} must be positive",
        )
    return lengths, [a % rank for a in axes]


def _nd_shape(op_type):
    def shape_fn(inputs, attrs):
        x = inputs[0]
        if op_type == "RFFTND":
            return [
                (attrs["Tcomplex"], TensorShape(None if x.shape.ndims is None else [None] * x.shape.ndims))
            ]
        if op_type == "IRFFTND":
            return [(attrs["Treal"], TensorShape(None if x.shape.ndims is None else [None] * x.shape.ndims))]
        _complex_input(inputs, 0, op_type)
        return [(x.dtype, TensorShape(None if x.shape.ndims is None else [None] * x.shape.ndims))]

    return shape_fn


def _nd_kernel(op_type):
    def kernel(ctx, node, x, fft_length, axes):
        lengths, axes = _lengths_and_axes(node, x, fft_length, axes)
        if op_type == "FFTND":
            return np.fft.fftn(x, lengths, axes).astype(x.dtype, copy=False)
        if op_type == "IFFTND":
            return np.fft.ifftn(x, lengths, axes).astype(x.dtype, copy=False)
        if op_type == "RFFTND":
            return np.fft.rfftn(x, lengths, axes).astype(node.attr["Tcomplex"].np, copy=False)
        return np.fft.irfftn(x, lengths, axes).astype(node.attr["Treal"].np, copy=False)

    return kernel


def _resized(x, target_shape, axes):
    """`x` cropped or padded with zeros along `axes` to `target_shape`."""
    index = tuple(
        slice(0, min(x.shape[a], target_shape[a])) if a in axes else slice(None) for a in range(x.ndim)
    )
    out = np.zeros([target_shape[a] if a in axes else x.shape[a] for a in range(x.ndim)], x.dtype)
    out[index] = x[index]
    return out


@registry.kernel("FFTNDGrad")
def _fftnd_grad_kernel(ctx, node, grad, x, fft_length, axes):
    """The adjoint of the op `node.attr["forward"]` applied to `grad`, shaped as its input `x`."""
    lengths, axes = _lengths_and_axes(node, x, fft_length, axes)
    size = float(np.prod(lengths))
    forward = node.attr["forward"]
    if forward == "FFTND":
        adjoint = np.fft.ifftn(grad, lengths, axes) * size
    elif forward == "IFFTND":
        adjoint = np.fft.fftn(grad, lengths, axes) / size
    elif forward == "RFFTND":  # the half spectrum padded back to full length, then transformed
        adjoint = np.real(
            np.fft.ifftn(_resized(grad, _with(grad.shape, axes[-1], lengths[-1]), axes), lengths, axes)
        )
        adjoint = adjoint * size
    else:  # IRFFTND: numpy reads the half spectrum; TF's weights count each mirrored bin twice
        half = lengths[-1] // 2 + 1
        weights = np.full(half, 2.0)
        weights[0] = 1.0
        if lengths[-1] % 2 == 0:
            weights[-1] = 1.0
        adjoint = np.fft.rfftn(grad, lengths, axes) / size
        adjoint = adjoint * weights.reshape([-1 if a == axes[-1] else 1 for a in range(grad.ndim)])
    return _resized(adjoint, x.shape, axes).astype(x.dtype, copy=False)


def _with(shape_, axis, length):
    return tuple(length if a == axis else n for a, n in enumerate(shape_))


registry.shape("FFTNDGrad")(lambda inputs, attrs: [(inputs[1].dtype, inputs[1].shape)])
registry.no_gradient("FFTNDGrad")


def _nd_op(op_type):
    registry.shape(op_type)(_nd_shape(op_type))
    registry.kernel(op_type)(_nd_kernel(op_type))

    @registry.gradient(op_type)
    def _gradient(op, grad):
        x, fft_length, axes = op.inputs
        adjoint = registry.make_op("FFTNDGrad", [grad, x, fft_length, axes], {"forward": op_type})
        return [adjoint.outputs[0], None, None]


for _type in ("FFTND", "IFFTND", "RFFTND", "IRFFTND"):
    _nd_op(_type)


def _nd_inputs(input, fft_length, axes):  # noqa: A002 - TF's argument name
    return [
        convert_to_tensor(input),
        cast(convert_to_tensor(fft_length), _dtypes.int32),
        cast(convert_to_tensor(axes), _dtypes.int32),
    ]


def fftnd(input, fft_length, axes, name=None):  # noqa: A002 - TF's argument name
    """`tf.fftnd`: the DFT over `axes`, each cropped or zero-padded to its `fft_length`."""
    return registry.make_op("FFTND", _nd_inputs(input, fft_length, axes), name=name).outputs[0]


def ifftnd(input, fft_length, axes, name=None):  # noqa: A002 - TF's argument name
    """`tf.ifftnd`: the inverse DFT over `axes`, each cropped or zero-padded to its `fft_length`."""
    return registry.make_op("IFFTND", _nd_inputs(input, fft_length, axes), name=name).outputs[0]


def rfftnd(input, fft_length, axes, Tcomplex=_dtypes.complex64, name=None):  # noqa: A002, N803 - TF's names
    """`tf.rfftnd`: the DFT of a real signal over `axes`; the last axis keeps its
    ``fft_length // 2 + 1`` non-negative frequencies."""
    attrs = {"Tcomplex": _dtypes.as_dtype(Tcomplex)}
    return registry.make_op("RFFTND", _nd_inputs(input, fft_length, axes), attrs, name=name).outputs[0]


def irfftnd(input, fft_length, axes, Treal=_dtypes.float32, name=None):  # noqa: A002, N803 - TF's names
    """`tf.irfftnd`: the real signal whose `rfftnd` is `input`, `fft_length` long on each axis."""
    attrs = {"Treal": _dtypes.as_dtype(Treal)}
    return registry.make_op("IRFFTND", _nd_inputs(input, fft_length, axes), attrs, name=name).outputs[0]
