"""The elementary `tf.linalg.LinearOperator`s: `LinearOperatorFullMatrix`, `LinearOperatorDiag`,
`LinearOperatorIdentity`, `LinearOperatorScaledIdentity`, `LinearOperatorLowerTriangular`,
`LinearOperatorZeros`, each with the structured forms TF's classes use (a diagonal's
determinant is its product, a triangular solve for a triangular one, ...)."""

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.linear_operator_base import (
    LinearOperator,
    abs_value,
    adjoint_matrix,
    matmul_matrices,
    register_derived,
)

__all__ = [
    "LinearOperatorDiag",
    "LinearOperatorFullMatrix",
    "LinearOperatorIdentity",
    "LinearOperatorLowerTriangular",
    "LinearOperatorScaledIdentity",
    "LinearOperatorZeros",
]


def _conj(x):
    from nbdist.ops.complex_ops import conj  # noqa: PLC0415

    return conj(x) if x.dtype.is_complex else x


def _log_abs(x):
    """``log |x|`` in `x`'s dtype (TF's operators return the log-determinant in their dtype)."""
    from nbdist.ops.cast_select_ops import cast  # noqa: PLC0415
    from nbdist.ops.unary_ops import log  # noqa: PLC0415

    value = log(abs_value(x))
    return cast(value, x.dtype) if value.dtype != x.dtype else value


def _matrix_tensor(x, what, name):
    x = convert_to_tensor(x, name=name)
    if x.shape.ndims is not None and x.shape.ndims < 2:
        raise ValueError(f"Argument {what} must have at least 2 dimensions.  Found: {x}")
    return x


class LinearOperatorFullMatrix(LinearOperator):
    """`tf.linalg.LinearOperatorFullMatrix`: the operator of a dense ``[..., M, N]`` `matrix`."""

    def __init__(
        self,
        matrix,
        is_non_singular=None,
        is_self_adjoint=None,
        is_positive_definite=None,
        is_square=None,
        name="LinearOperatorFullMatrix",
    ):
        self._matrix = _matrix_tensor(matrix, "matrix", "matrix")
        super().__init__(
            self._matrix.dtype,
            [self._matrix],
            is_non_singular,
            is_self_adjoint,
            is_positive_definite,
            is_square,
            name,
        )

    def _shape(self):
        return self._matrix.shape

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        return matmul_matrices(self._matrix, x, adjoint_a=adjoint, adjoint_b=adjoint_arg)

    def _to_dense(self):
        return self._matrix


class LinearOperatorLowerTriangular(LinearOperator):
    """`tf.linalg.LinearOperatorLowerTriangular`: the lower triangle of `tril` ``[..., N, N]``
    (what lies above the diagonal is ignored); solves are triangular solves."""

    def __init__(
        self,
        tril,
        is_non_singular=None,
        is_self_adjoint=None,
        is_positive_definite=None,
        is_square=None,
        name="LinearOperatorLowerTriangular",
    ):
        from nbdist.ops.linalg_solve_ops import matrix_band_part  # noqa: PLC0415

        if is_square is False:
            raise ValueError("Only square lower triangular operators supported at this time.")
        self._tril = matrix_band_part(_matrix_tensor(tril, "tril", "tril"), -1, 0)
        super().__init__(
            self._tril.dtype, [self._tril], is_non_singular, is_self_adjoint, is_positive_definite, True, name
        )

    tril = property(lambda self: self._tril)

    def _shape(self):
        return self._tril.shape

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        return matmul_matrices(self._tril, x, adjoint_a=adjoint, adjoint_b=adjoint_arg)

    def _to_dense(self):
        return self._tril

    def _diag_part(self):
        from nbdist.ops.linalg_ops import matrix_diag_part  # noqa: PLC0415

        return matrix_diag_part(self._tril)

    def _determinant(self):
        from nbdist.ops.reduction_ops import reduce_prod  # noqa: PLC0415

        return reduce_prod(self._diag_part(), axis=-1)

    def _log_abs_determinant(self):
        from nbdist.ops.reduction_ops import reduce_sum  # noqa: PLC0415

        return reduce_sum(_log_abs(self._diag_part()), axis=-1)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        from nbdist.ops.linalg_solve_ops import matrix_triangular_solve  # noqa: PLC0415

        rhs = adjoint_matrix(rhs) if adjoint_arg else rhs
        return matrix_triangular_solve(self._tril, rhs, lower=True, adjoint=adjoint)


class LinearOperatorDiag(LinearOperator):
    """`tf.linalg.LinearOperatorDiag`: the diagonal matrices of `diag` ``[..., N]``; a real
    diagonal is always self-adjoint (as TF)."""

    def __init__(
        self,
        diag,
        is_non_singular=None,
        is_self_adjoint=None,
        is_positive_definite=None,
        is_square=True,
        name="LinearOperatorDiag",
    ):
        self._diag = convert_to_tensor(diag, name="diag")
        if self._diag.shape.ndims is not None and self._diag.shape.ndims < 1:
            raise ValueError(f"Argument diag must have at least 1 dimension.  Found: {self._diag}")
        if not self._diag.dtype.is_complex:
            if is_self_adjoint is False:
                raise ValueError("A real diagonal operator is always self adjoint.")
            is_self_adjoint = True
        if is_square is False:
            raise ValueError("Only square diagonal operators currently supported.")
        super().__init__(
            self._diag.dtype, [self._diag], is_non_singular, is_self_adjoint, is_positive_definite, True, name
        )

    diag = property(lambda self: self._diag)

    def _shape(self):
        d = self._diag.shape
        return TensorShape(None) if d.ndims is None else TensorShape([*d.dims, d.dims[-1]])

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        from nbdist.ops.reshape_ops import expand_dims  # noqa: PLC0415

        d = _conj(self._diag) if adjoint else self._diag
        x = adjoint_matrix(x) if adjoint_arg else x
        return expand_dims(d, -1) * x

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        from nbdist.ops.reshape_ops import expand_dims  # noqa: PLC0415

        d = _conj(self._diag) if adjoint else self._diag
        rhs = adjoint_matrix(rhs) if adjoint_arg else rhs
        return rhs / expand_dims(d, -1)

    def _to_dense(self):
        from nbdist.ops.linalg_ops import matrix_diag  # noqa: PLC0415

        return matrix_diag(self._diag)

    def _diag_part(self):
        return self._diag + 0

    def _determinant(self):
        from nbdist.ops.reduction_ops import reduce_prod  # noqa: PLC0415

        return reduce_prod(self._diag, axis=-1)

    def _log_abs_determinant(self):
        from nbdist.ops.reduction_ops import reduce_sum  # noqa: PLC0415

        return reduce_sum(_log_abs(self._diag), axis=-1)

    def _eigvals(self):
        return self._diag + 0

    def _add_to_tensor(self, x):
        from nbdist.ops.linalg_ops import matrix_diag_part, matrix_set_diag  # noqa: PLC0415

        return matrix_set_diag(x, matrix_diag_part(x) + self._diag)

    def _cholesky(self):
        from nbdist.ops.unary_ops import sqrt  # noqa: PLC0415

        return LinearOperatorDiag(
            sqrt(self._diag), is_non_singular=True, is_self_adjoint=True, is_positive_definite=True
        )


class _BaseIdentity(LinearOperator):
    """Shared by the identity family: `num_rows` (a Python int) and an optional batch shape."""

    def _init_rows(self, num_rows, batch_shape):
        if not isinstance(num_rows, int) or num_rows < 0:
            raise ValueError(f"Argument num_rows must be a non-negative Python int, got {num_rows!r}.")
        self._num_rows = num_rows
        self._batch = list(batch_shape) if batch_shape is not None else []

    def _eye(self, batch=None):
        from nbdist.ops.linalg_ops import eye  # noqa: PLC0415

        return eye(
            self._num_rows, batch_shape=batch if batch is not None else self._batch or None, dtype=self.dtype
        )

    def _broadcast(self, x):
        """`x` broadcast against the operator's batch shape (TF's ``_possibly_broadcast_batch_shape``)."""
        from nbdist.ops.array_ops import zeros  # noqa: PLC0415

        return x + zeros([*self._batch, 1, 1], dtype=self.dtype) if self._batch else x


class LinearOperatorIdentity(_BaseIdentity):
    """`tf.linalg.LinearOperatorIdentity`: ``num_rows x num_rows`` identities, ``batch_shape``
    of them."""

    def __init__(
        self,
        num_rows,
        batch_shape=None,
        dtype=None,
        is_non_singular=True,
        is_self_adjoint=True,
        is_positive_definite=True,
        is_square=True,
        assert_proper_shapes=False,
        name="LinearOperatorIdentity",
    ):
        for flag, hint in (("non_singular", is_non_singular), ("self_adjoint", is_self_adjoint)):
            if not hint:
                raise ValueError(f"An identity operator is always {flag.replace('_', '-')}.")
        if not is_positive_definite:
            raise ValueError("An identity operator is always positive-definite.")
        if not is_square:
            raise ValueError("An identity operator is always square.")
        self._init_rows(num_rows, batch_shape)
        super().__init__(dtype or _dtypes.float32, [], True, True, True, True, name)

    def _shape(self):
        return TensorShape([*self._batch, self._num_rows, self._num_rows])

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        return self._broadcast(adjoint_matrix(x) if adjoint_arg else x)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        return self._matmul(rhs, adjoint, adjoint_arg)

    def _to_dense(self):
        return self._eye()

    def _diag_part(self):
        from nbdist.ops.array_ops import ones  # noqa: PLC0415

        return ones([*self._batch, self._num_rows], dtype=self.dtype)

    def _determinant(self):
        from nbdist.ops.array_ops import ones  # noqa: PLC0415

        return ones(self._batch, dtype=self.dtype)

    def _log_abs_determinant(self):
        from nbdist.ops.array_ops import zeros  # noqa: PLC0415

        return zeros(self._batch, dtype=self.dtype)

    def _eigvals(self):
        return self._diag_part()

    def _add_to_tensor(self, x):
        from nbdist.ops.linalg_ops import matrix_diag_part, matrix_set_diag  # noqa: PLC0415

        return matrix_set_diag(x, matrix_diag_part(x) + 1)

    def _cholesky(self):
        return self

    def inverse(self, name="inverse"):
        return self


class LinearOperatorScaledIdentity(_BaseIdentity):
    """`tf.linalg.LinearOperatorScaledIdentity`: ``multiplier * I`` (`multiplier` ``[...]``: the
    batch shape)."""

    def __init__(
        self,
        num_rows,
        multiplier,
        is_non_singular=None,
        is_self_adjoint=None,
        is_positive_definite=None,
        is_square=True,
        assert_proper_shapes=False,
        name="LinearOperatorScaledIdentity",
    ):
        if not is_square:
            raise ValueError("A ScaledIdentity operator is always square.")
        self._multiplier = convert_to_tensor(multiplier, name="multiplier")
        if not self._multiplier.dtype.is_complex:
            if is_self_adjoint is False:
                raise ValueError("A real diagonal operator is always self adjoint.")
            is_self_adjoint = True
        self._init_rows(num_rows, None)
        super().__init__(
            self._multiplier.dtype,
            [self._multiplier],
            is_non_singular,
            is_self_adjoint,
            is_positive_definite,
            True,
            name,
        )

    multiplier = property(lambda self: self._multiplier)

    def _shape(self):
        m = self._multiplier.shape
        return (
            TensorShape(None) if m.ndims is None else TensorShape([*m.dims, self._num_rows, self._num_rows])
        )

    def _scale(self, conj=False):
        from nbdist.ops.reshape_ops import expand_dims  # noqa: PLC0415

        m = _conj(self._multiplier) if conj else self._multiplier
        return expand_dims(expand_dims(m, -1), -1)

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        return self._scale(adjoint) * (adjoint_matrix(x) if adjoint_arg else x)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        return (adjoint_matrix(rhs) if adjoint_arg else rhs) / self._scale(adjoint)

    def _to_dense(self):
        return self._scale() * self._eye([])

    def _diag_part(self):
        from nbdist.ops.array_ops import ones  # noqa: PLC0415
        from nbdist.ops.reshape_ops import expand_dims  # noqa: PLC0415

        return expand_dims(self._multiplier, -1) * ones([self._num_rows], dtype=self.dtype)

    def _determinant(self):
        return self._multiplier**self._num_rows

    def _log_abs_determinant(self):
        return self._num_rows * _log_abs(self._multiplier)

    def _eigvals(self):
        return self._diag_part()

    def _add_to_tensor(self, x):
        from nbdist.ops.linalg_ops import matrix_diag_part, matrix_set_diag  # noqa: PLC0415
        from nbdist.ops.reshape_ops import expand_dims  # noqa: PLC0415

        return matrix_set_diag(x, matrix_diag_part(x) + expand_dims(self._multiplier, -1))

    def _cholesky(self):
        from nbdist.ops.unary_ops import sqrt  # noqa: PLC0415

        return LinearOperatorScaledIdentity(
            self._num_rows,
            sqrt(self._multiplier),
            is_non_singular=True,
            is_self_adjoint=True,
            is_positive_definite=True,
        )


class LinearOperatorZeros(_BaseIdentity):
    """`tf.linalg.LinearOperatorZeros`: ``num_rows x num_columns`` zero matrices."""

    def __init__(
        self,
        num_rows,
        num_columns=None,
        batch_shape=None,
        dtype=None,
        is_non_singular=False,
        is_self_adjoint=True,
        is_positive_definite=False,
        is_square=True,
        assert_proper_shapes=False,
        name="LinearOperatorZeros",
    ):
        if is_non_singular:
            raise ValueError("A zero operator is always singular.")
        if is_positive_definite:
            raise ValueError("A zero operator is always not positive-definite.")
        self._init_rows(num_rows, batch_shape)
        self._num_columns = num_rows if num_columns is None else num_columns
        if is_square and self._num_columns != num_rows:
            raise ValueError(
                f"LinearOperatorZeros initialized as is_square=True, but got num_rows({num_rows}) != "
                f"num_columns({self._num_columns})"
            )
        square = self._num_columns == num_rows
        super().__init__(dtype or _dtypes.float32, [], False, square and is_self_adjoint, False, square, name)

    def _shape(self):
        return TensorShape([*self._batch, self._num_rows, self._num_columns])

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        from nbdist.ops.array_ops import zeros  # noqa: PLC0415

        x = adjoint_matrix(x) if adjoint_arg else x
        rows = self._num_columns if adjoint else self._num_rows
        return self._broadcast(matmul_matrices(zeros([rows, 1], dtype=self.dtype), x[..., :1, :]))

    def _to_dense(self):
        from nbdist.ops.array_ops import zeros  # noqa: PLC0415

        return zeros([*self._batch, self._num_rows, self._num_columns], dtype=self.dtype)

    def _diag_part(self):
        from nbdist.ops.array_ops import zeros  # noqa: PLC0415

        return zeros([*self._batch, min(self._num_rows, self._num_columns)], dtype=self.dtype)

    def _determinant(self):
        from nbdist.ops.array_ops import zeros  # noqa: PLC0415

        return zeros(self._batch, dtype=self.dtype)

    def _log_abs_determinant(self):
        from nbdist.ops.array_ops import zeros  # noqa: PLC0415

        return zeros(self._batch, dtype=self.dtype) - float("inf")

    def _eigvals(self):
        return self._diag_part()

    def _add_to_tensor(self, x):
        return x + self._to_dense()


register_derived("lower_triangular", LinearOperatorLowerTriangular)
