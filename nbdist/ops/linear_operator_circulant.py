"""`tf.linalg.LinearOperatorCirculant`, `LinearOperatorCirculant2D`, `LinearOperatorCirculant3D`:
(nested block) circulant operators ``F^H diag(spectrum) F``, acting by `tf.fft` / `tf.fft2d` /
`tf.fft3d` over the blockified vector as TF's classes do; a real `input_output_dtype` keeps the
real part."""

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.linear_operator_base import LinearOperator, abs_value, adjoint_matrix

__all__ = ["LinearOperatorCirculant", "LinearOperatorCirculant2D", "LinearOperatorCirculant3D"]


def _to_complex(x):
    from nbdist.ops.cast_select_ops import cast  # noqa: PLC0415

    if x.dtype.is_complex:
        return x
    return cast(x, _dtypes.complex128 if x.dtype == _dtypes.float64 else _dtypes.complex64)


def _fft_ops(depth):
    from nbdist.ops import fft_ops  # noqa: PLC0415

    return {
        1: (fft_ops.fft, fft_ops.ifft),
        2: (fft_ops.fft2d, fft_ops.ifft2d),
        3: (fft_ops.fft3d, fft_ops.ifft3d),
    }[depth]


class _BaseCirculant(LinearOperator):
    """Shared by the three: `spectrum` ``[..., N0(, N1(, N2))]``, `block_depth` trailing axes."""

    def __init__(
        self,
        spectrum,
        block_depth,
        input_output_dtype,
        is_non_singular,
        is_self_adjoint,
        is_positive_definite,
        is_square,
        name,
    ):
        self._block_depth = block_depth
        self._spectrum = convert_to_tensor(spectrum, name="spectrum")
        if self._spectrum.shape.ndims is not None and self._spectrum.shape.ndims < block_depth:
            raise ValueError(
                f"Argument `spectrum` must have at least {block_depth} dimensions. "
                f"Received: {self._spectrum}."
            )
        if not self._spectrum.dtype.is_complex:
            if is_self_adjoint is False:
                raise ValueError(
                    "A real spectrum always corresponds to a self-adjoint operator. Expected argument "
                    "`is_self_adjoint` to be True when `spectrum.dtype.is_complex` = True. "
                    f"Received: {is_self_adjoint}."
                )
            is_self_adjoint = True
        if is_square is False:
            raise ValueError(
                f"A [[nested] block] circulant operator is always square. Expected argument `is_square` to "
                f"be True. Received: {is_square}."
            )
        super().__init__(
            _dtypes.as_dtype(input_output_dtype),
            [self._spectrum],
            is_non_singular,
            is_self_adjoint,
            is_positive_definite,
            True,
            name,
        )

    spectrum = property(lambda self: self._spectrum)
    block_depth = property(lambda self: self._block_depth)

    @property
    def block_shape(self):
        s = self._spectrum.shape
        return TensorShape(None if s.ndims is None else s.dims[-self._block_depth :])

    def block_shape_tensor(self):
        from nbdist.ops.shape_ops import shape  # noqa: PLC0415

        return shape(self._spectrum)[-self._block_depth :]

    def _n(self):
        block = self.block_shape
        if not block.is_fully_defined():
            raise ValueError(f"{self.name}: nbdist needs the spectrum's block shape statically, got {block}")
        n = 1
        for d in block.as_list():
            n *= d
        return n

    def _shape(self):
        s = self._spectrum.shape
        if s.ndims is None:
            return TensorShape(None)
        n = self._n()
        return TensorShape([*s.dims[: -self._block_depth], n, n])

    def _out(self, x):
        """`x` (complex) in the operator's dtype: the real part for a real dtype."""
        from nbdist.ops.cast_select_ops import cast  # noqa: PLC0415
        from nbdist.ops.complex_ops import real  # noqa: PLC0415

        if self.dtype.is_complex:
            return cast(x, self.dtype) if x.dtype != self.dtype else x
        x = real(x)
        return cast(x, self.dtype) if x.dtype != self.dtype else x

    def _apply(self, x, adjoint, adjoint_arg, divide):
        from nbdist.ops.complex_ops import conj  # noqa: PLC0415
        from nbdist.ops.concat_slice_ops import concat  # noqa: PLC0415
        from nbdist.ops.reshape_ops import expand_dims, reshape  # noqa: PLC0415
        from nbdist.ops.shape_ops import shape  # noqa: PLC0415

        fft, ifft = _fft_ops(self._block_depth)
        x = adjoint_matrix(x) if adjoint_arg else x
        spectrum = _to_complex(self._spectrum)
        spectrum = conj(spectrum) if adjoint else spectrum
        x = _to_complex(x)
        if x.dtype != spectrum.dtype:
            from nbdist.ops.cast_select_ops import cast  # noqa: PLC0415

            x = cast(x, spectrum.dtype)
        rows = _transpose(x)
        blocks = reshape(rows, concat([shape(rows)[:-1], self.block_shape.as_list()], 0))
        spectrum = expand_dims(spectrum, -self._block_depth - 1)
        transformed = fft(blocks)
        result = ifft(transformed / spectrum if divide else spectrum * transformed)
        flat = reshape(result, concat([shape(result)[: -self._block_depth], [self._n()]], 0))
        return self._out(_transpose(flat))

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        return self._apply(x, adjoint, adjoint_arg, divide=False)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        return self._apply(rhs, adjoint, adjoint_arg, divide=True)

    def _axes(self):
        return list(range(-self._block_depth, 0))

    def _determinant(self):
        from nbdist.ops.reduction_ops import reduce_prod  # noqa: PLC0415

        if not self._spectrum.dtype.is_complex:
            return self._out(_to_complex(reduce_prod(self._spectrum, axis=self._axes())))
        eigvals = self._eigvals()  # (nbdist's Prod takes real dtypes: a product of the n slices)
        det = eigvals[..., 0]
        for i in range(1, self._n()):
            det = det * eigvals[..., i]
        return self._out(det)

    def _log_abs_determinant(self):
        from nbdist.ops.cast_select_ops import cast  # noqa: PLC0415
        from nbdist.ops.reduction_ops import reduce_sum  # noqa: PLC0415
        from nbdist.ops.unary_ops import log  # noqa: PLC0415

        lad = reduce_sum(log(abs_value(self._spectrum)), axis=self._axes())
        return cast(lad, self.dtype) if lad.dtype != self.dtype else lad

    def trace(self, name="trace"):
        """The sum of the spectrum (its real part for a self-adjoint or real operator)."""
        from nbdist.ops.cast_select_ops import cast  # noqa: PLC0415
        from nbdist.ops.complex_ops import complex as tf_complex  # noqa: PLC0415
        from nbdist.ops.complex_ops import imag, real  # noqa: PLC0415
        from nbdist.ops.reduction_ops import reduce_sum  # noqa: PLC0415

        with self._scope(name):
            s = self._spectrum
            re = reduce_sum(real(s) if s.dtype.is_complex else s, axis=self._axes())
            if not self.dtype.is_complex:
                return cast(re, self.dtype) if re.dtype != self.dtype else re
            im = (
                re * 0
                if self.is_self_adjoint or not s.dtype.is_complex
                else reduce_sum(imag(s), axis=self._axes())
            )
            value = tf_complex(re, im)
            return cast(value, self.dtype) if value.dtype != self.dtype else value

    def _diag_part(self):
        from nbdist.ops.array_ops import ones  # noqa: PLC0415
        from nbdist.ops.reshape_ops import expand_dims  # noqa: PLC0415

        n = self._n()
        return expand_dims(self.trace() / float(n), -1) * ones([n], dtype=self.dtype)

    def _eigvals(self):
        from nbdist.ops.concat_slice_ops import concat  # noqa: PLC0415
        from nbdist.ops.reshape_ops import reshape  # noqa: PLC0415
        from nbdist.ops.shape_ops import shape  # noqa: PLC0415

        s = self._spectrum
        return reshape(s, concat([shape(s)[: -self._block_depth], [self._n()]], 0))

    def convolution_kernel(self, name="convolution_kernel"):
        """The kernel whose DFT is the spectrum: ``ifft(spectrum)`` in the operator's dtype."""
        with self._scope(name):
            return self._out(_fft_ops(self._block_depth)[1](_to_complex(self._spectrum)))


def _transpose(x):
    from nbdist.ops.linalg_ops import matrix_transpose  # noqa: PLC0415

    return matrix_transpose(x)


class LinearOperatorCirculant(_BaseCirculant):
    """`tf.linalg.LinearOperatorCirculant`: circulant matrices of `spectrum` ``[..., N]``."""

    def __init__(
        self,
        spectrum,
        input_output_dtype=_dtypes.complex64,
        is_non_singular=None,
        is_self_adjoint=None,
        is_positive_definite=None,
        is_square=True,
        name="LinearOperatorCirculant",
    ):
        super().__init__(
            spectrum,
            1,
            input_output_dtype,
            is_non_singular,
            is_self_adjoint,
            is_positive_definite,
            is_square,
            name,
        )


class LinearOperatorCirculant2D(_BaseCirculant):
    """`tf.linalg.LinearOperatorCirculant2D`: block circulant with circulant blocks, `spectrum`
    ``[..., N0, N1]`` (size ``N0 * N1``)."""

    def __init__(
        self,
        spectrum,
        input_output_dtype=_dtypes.complex64,
        is_non_singular=None,
        is_self_adjoint=None,
        is_positive_definite=None,
        is_square=True,
        name="LinearOperatorCirculant2D",
    ):
        super().__init__(
            spectrum,
            2,
            input_output_dtype,
            is_non_singular,
            is_self_adjoint,
            is_positive_definite,
            is_square,
            name,
        )


class LinearOperatorCirculant3D(_BaseCirculant):
    """`tf.linalg.LinearOperatorCirculant3D`: nested block circulant, `spectrum`
    ``[..., N0, N1, N2]`` (size ``N0 * N1 * N2``)."""

    def __init__(
        self,
        spectrum,
        input_output_dtype=_dtypes.complex64,
        is_non_singular=None,
        is_self_adjoint=None,
        is_positive_definite=None,
        is_square=True,
        name="LinearOperatorCirculant3D",
    ):
        super().__init__(
            spectrum,
            3,
            input_output_dtype,
            is_non_singular,
            is_self_adjoint,
            is_positive_definite,
            is_square,
            name,
        )
