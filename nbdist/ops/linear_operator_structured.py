"""Structured `tf.linalg.LinearOperator`s: `LinearOperatorPermutation`,
`LinearOperatorHouseholder`, `LinearOperatorToeplitz`, `LinearOperatorTridiag` (over
`tf.linalg.tridiagonal_matmul` / `tridiagonal_solve`) and `LinearOperatorBlockLowerTriangular`,
with TF's structured determinants, traces and solves."""

import numpy as np

from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops._shapes import broadcast_shape
from nbdist.ops.constant_op import constant, convert_to_tensor
from nbdist.ops.einsum_ops import einsum
from nbdist.ops.linear_operator_base import LinearOperator, adjoint_matrix, matmul_matrices

__all__ = [
    "LinearOperatorBlockLowerTriangular",
    "LinearOperatorHouseholder",
    "LinearOperatorPermutation",
    "LinearOperatorToeplitz",
    "LinearOperatorTridiag",
]


def _vector_tensor(x, what):
    x = convert_to_tensor(x, name=what)
    if x.shape.ndims is not None and x.shape.ndims < 1:
        raise ValueError(f"Argument {what} must have at least 1 dimension.  Found: {x}")
    return x


def _square_from_vector(v):
    return _square_from_shape(v.shape)


def _square_from_shape(shape):
    return TensorShape(None) if shape.ndims is None else TensorShape([*shape.dims, shape.dims[-1]])


def _static_n(v, cls):
    n = v.shape.dims[-1] if v.shape.ndims is not None else None
    if n is None:
        raise ValueError(f"{cls}: nbdist needs the operator's size statically, got shape {v.shape}")
    return n


def _batch_filled(vectors, value, dtype):
    """`value` in `dtype`, shaped as the batch of `vectors` ``[..., N]`` (known or not)."""
    from nbdist.ops.cast_select_ops import cast, zeros_like  # noqa: PLC0415

    zero = zeros_like(vectors[..., 0])
    return (cast(zero, dtype) if zero.dtype != dtype else zero) + value


class LinearOperatorPermutation(LinearOperator):
    """`tf.linalg.LinearOperatorPermutation`: ``P`` with ``(P x)[i] = x[perm[i]]``."""

    def __init__(
        self,
        perm,
        dtype=None,
        is_non_singular=None,
        is_self_adjoint=None,
        is_positive_definite=None,
        is_square=None,
        name="LinearOperatorPermutation",
    ):
        from nbdist.graph import dtypes as _dtypes  # noqa: PLC0415
        from nbdist.ops.shape_ops import get_static_value  # noqa: PLC0415

        self._perm = _vector_tensor(perm, "perm")
        if not self._perm.dtype.is_integer:
            raise TypeError(f"Argument `perm` must be integer dtype. Received: {self._perm}.")
        static = get_static_value(self._perm)
        if static is not None and np.any(np.sort(static, axis=-1) != np.arange(static.shape[-1])):
            raise ValueError(
                f"Argument `perm` must be a vector of unique integers from 0 to {static.shape[-1] - 1}."
            )
        if is_non_singular is False:
            raise ValueError(
                "A Permutation operator is always non-singular. Expected argument `is_non_singular` to be "
                f"True. Received: {is_non_singular}."
            )
        if is_square is False:
            raise ValueError(
                f"A Permutation operator is always square. Expected argument `is_square` to be True. "
                f"Received: {is_square}."
            )
        dtype = dtype or _dtypes.float32
        super().__init__(
            dtype, [self._perm], is_non_singular, is_self_adjoint, is_positive_definite, True, name
        )

    perm = property(lambda self: self._perm)

    def _shape(self):
        return _square_from_vector(self._perm)

    def _matrix(self):
        from nbdist.ops.reduction_ops import one_hot  # noqa: PLC0415

        return one_hot(self._perm, _static_n(self._perm, "LinearOperatorPermutation"), dtype=self.dtype)

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        return matmul_matrices(self._matrix(), x, adjoint_a=adjoint, adjoint_b=adjoint_arg)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        return self._matmul(rhs, adjoint=not adjoint, adjoint_arg=adjoint_arg)

    def _to_dense(self):
        return self._matrix()

    def _log_abs_determinant(self):
        return _batch_filled(self._perm, 0.0, self.dtype)

    def _assert_non_singular(self):
        from nbdist.ops.control_flow_ops import no_op  # noqa: PLC0415

        return no_op("assert_non_singular")


class LinearOperatorHouseholder(LinearOperator):
    """`tf.linalg.LinearOperatorHouseholder`: the reflection ``I - 2 v v^H / |v|^2`` about the
    hyperplane orthogonal to `reflection_axis` ``v``."""

    def __init__(
        self,
        reflection_axis,
        is_non_singular=None,
        is_self_adjoint=None,
        is_positive_definite=None,
        is_square=None,
        name="LinearOperatorHouseholder",
    ):
        self._reflection_axis = _vector_tensor(reflection_axis, "reflection_axis")
        if is_self_adjoint is False:
            raise ValueError("A Householder operator is always self adjoint.")
        if is_positive_definite is True:
            raise ValueError("A Householder operator is always non-positive definite.")
        if is_square is False:
            raise ValueError("A Householder operator is always square.")
        super().__init__(
            self._reflection_axis.dtype, [self._reflection_axis], is_non_singular, True, False, True, name
        )

    reflection_axis = property(lambda self: self._reflection_axis)

    def _axis(self):
        from nbdist.ops.normalization_ops import l2_normalize  # noqa: PLC0415
        from nbdist.ops.reshape_ops import expand_dims  # noqa: PLC0415

        return expand_dims(l2_normalize(self._reflection_axis, axis=-1), -1)

    def _shape(self):
        return _square_from_vector(self._reflection_axis)

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        x = adjoint_matrix(x) if adjoint_arg else x
        mat = self._axis()
        return x - 2 * mat * matmul_matrices(mat, x, adjoint_a=True)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        return self._matmul(rhs, adjoint, adjoint_arg)

    def _to_dense(self):
        from nbdist.ops.linalg_ops import matrix_diag_part, matrix_set_diag  # noqa: PLC0415

        mat = self._axis()
        matrix = -2 * matmul_matrices(mat, mat, adjoint_b=True)
        return matrix_set_diag(matrix, 1.0 + matrix_diag_part(matrix))

    def _diag_part(self):
        from nbdist.ops.normalization_ops import l2_normalize  # noqa: PLC0415

        v = l2_normalize(self._reflection_axis, axis=-1)
        return 1.0 - 2 * v * v

    def _determinant(self):
        return _batch_filled(self._reflection_axis, -1.0, self.dtype)

    def _log_abs_determinant(self):
        return _batch_filled(self._reflection_axis, 0.0, self.dtype)

    def _eigvals(self):
        from nbdist.ops.cast_select_ops import ones_like  # noqa: PLC0415
        from nbdist.ops.concat_slice_ops import concat  # noqa: PLC0415

        v = self._reflection_axis
        return concat([-ones_like(v[..., :1]), ones_like(v[..., 1:])], -1)


class LinearOperatorToeplitz(LinearOperator):
    """`tf.linalg.LinearOperatorToeplitz`: constant diagonals, first column `col` and first row
    `row` (``row[0]`` ignored: the diagonal is ``col[0]``)."""

    def __init__(
        self,
        col,
        row,
        is_non_singular=None,
        is_self_adjoint=None,
        is_positive_definite=None,
        is_square=None,
        name="LinearOperatorToeplitz",
    ):
        self._row = _vector_tensor(row, "row")
        self._col = _vector_tensor(col, "col")
        r, c = self._row.shape.dims[-1], self._col.shape.dims[-1]
        if r is not None and c is not None and r != c:
            raise ValueError("Expected square matrix, got row and col with mismatched dimensions.")
        if is_square is False:
            raise ValueError("Only square Toeplitz operators currently supported.")
        super().__init__(
            self._row.dtype,
            [self._row, self._col],
            is_non_singular,
            is_self_adjoint,
            is_positive_definite,
            True,
            name,
        )

    row = property(lambda self: self._row)
    col = property(lambda self: self._col)

    def _shape(self):
        return _square_from_shape(broadcast_shape(self._row.shape, self._col.shape))

    def _to_dense(self):
        from nbdist.ops.concat_slice_ops import concat  # noqa: PLC0415
        from nbdist.ops.reshape_ops import reverse  # noqa: PLC0415

        n = _static_n(self._row, "LinearOperatorToeplitz")
        zero = self._row * 0 + self._col * 0
        elements = concat([reverse(self._col + zero, [-1]), (self._row + zero)[..., 1:]], -1)
        select = np.zeros((2 * n - 1, n, n))
        i, j = np.indices((n, n))
        select[n - 1 + j - i, i, j] = 1.0
        return einsum("...k,kij->...ij", elements, constant(select, dtype=self.dtype))

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        return matmul_matrices(self._to_dense(), x, adjoint_a=adjoint, adjoint_b=adjoint_arg)

    def _diag_part(self):
        from nbdist.ops.array_ops import ones  # noqa: PLC0415

        return self._col[..., 0:1] * ones([_static_n(self._row, "LinearOperatorToeplitz")], dtype=self.dtype)

    def trace(self, name="trace"):
        with self._scope(name):
            return float(_static_n(self._row, "LinearOperatorToeplitz")) * self._col[..., 0]


class LinearOperatorTridiag(LinearOperator):
    """`tf.linalg.LinearOperatorTridiag`: tridiagonal matrices given as `tf.linalg.tridiagonal_*`
    take them ('compact' ``[..., 3, N]``, 'sequence' of three ``[..., N]``, or 'matrix')."""

    def __init__(
        self,
        diagonals,
        diagonals_format="compact",
        is_non_singular=None,
        is_self_adjoint=None,
        is_positive_definite=None,
        is_square=None,
        name="LinearOperatorTridiag",
    ):
        if diagonals_format not in ("compact", "matrix", "sequence"):
            raise ValueError(
                "Argument `diagonals_format` must be one of compact, matrix, or sequence. "
                f"Received : {diagonals_format}."
            )
        if diagonals_format == "sequence":
            self._diagonals = [convert_to_tensor(d, name=f"diag_{i}") for i, d in enumerate(diagonals)]
            dtype = self._diagonals[0].dtype
        else:
            self._diagonals = convert_to_tensor(diagonals, name="diagonals")
            dtype = self._diagonals.dtype
        self._diagonals_format = diagonals_format
        super().__init__(dtype, [], is_non_singular, is_self_adjoint, is_positive_definite, is_square, name)

    diagonals = property(lambda self: self._diagonals)
    diagonals_format = property(lambda self: self._diagonals_format)

    def _shape(self):
        if self._diagonals_format == "matrix":
            return self._diagonals.shape
        if self._diagonals_format == "compact":
            d = self._diagonals.shape
            return (
                TensorShape(None) if d.ndims is None else TensorShape([*d.dims[:-2], d.dims[-1], d.dims[-1]])
            )
        shape = TensorShape([])
        for d in self._diagonals:
            shape = broadcast_shape(shape, d.shape)
        return _square_from_shape(shape)

    def _compact(self):
        from nbdist.ops.concat_slice_ops import stack  # noqa: PLC0415
        from nbdist.ops.linalg_lu_tridiag_ops import tridiagonal_compact  # noqa: PLC0415

        if self._diagonals_format == "sequence":
            zero = self._diagonals[0] * 0 + self._diagonals[1] * 0 + self._diagonals[2] * 0
            return stack([d + zero for d in self._diagonals], axis=-2)
        return tridiagonal_compact(self._diagonals, self._diagonals_format)

    def _adjoint_compact(self):
        from nbdist.ops.concat_slice_ops import stack  # noqa: PLC0415

        compact = self._compact()
        n = self.domain_dimension
        conj = _conj if self.dtype.is_complex else (lambda t: t)
        shift = constant(np.eye(n, k=1), dtype=self.dtype)
        sup = einsum("...j,ij->...i", conj(compact[..., 2, :]), shift)
        sub = einsum("...j,ji->...i", conj(compact[..., 0, :]), shift)
        return stack([sup, conj(compact[..., 1, :]), sub], axis=-2)

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        from nbdist.ops.linalg_lu_tridiag_ops import tridiagonal_matmul  # noqa: PLC0415

        diagonals = self._adjoint_compact() if adjoint else self._compact()
        x = adjoint_matrix(x) if adjoint_arg else x
        diagonals, x = _broadcast_batches(diagonals, x)
        return tridiagonal_matmul(diagonals, x)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        from nbdist.ops.linalg_lu_tridiag_ops import tridiagonal_solve  # noqa: PLC0415

        diagonals = self._adjoint_compact() if adjoint else self._compact()
        rhs = adjoint_matrix(rhs) if adjoint_arg else rhs
        diagonals, rhs = _broadcast_batches(diagonals, rhs)
        return tridiagonal_solve(diagonals, rhs)

    def _to_dense(self):
        if self._diagonals_format == "matrix":
            return self._diagonals
        compact, n = self._compact(), self.domain_dimension
        up = constant(np.eye(n, k=1), dtype=self.dtype)
        main = einsum("...i,ij->...ij", compact[..., 1, :], constant(np.eye(n), dtype=self.dtype))
        return (
            einsum("...i,ij->...ij", compact[..., 0, :], up)
            + main
            + einsum("...i,ji->...ij", compact[..., 2, :], up)
        )

    def _diag_part(self):
        return self._compact()[..., 1, :]


def _conj(x):
    from nbdist.ops.complex_ops import conj  # noqa: PLC0415

    return conj(x)


def _broadcast_batches(diagonals, x):
    """The compact diagonals ``[..., 3, N]`` and `x` ``[..., N, K]`` with one batch shape."""
    from nbdist.ops.array_ops import zeros  # noqa: PLC0415

    batch = broadcast_shape(TensorShape(diagonals.shape.dims[:-2]), TensorShape(x.shape.dims[:-2])).as_list()
    return diagonals + zeros([*batch, 1, 1], dtype=x.dtype), x + zeros([*batch, 1, 1], dtype=x.dtype)


class LinearOperatorBlockLowerTriangular(LinearOperator):
    """`tf.linalg.LinearOperatorBlockLowerTriangular`: `operators` a list of rows, row ``i``
    holding the ``i + 1`` blocks on and left of the (square) diagonal block."""

    def __init__(
        self,
        operators,
        is_non_singular=None,
        is_self_adjoint=None,
        is_positive_definite=None,
        is_square=None,
        name="LinearOperatorBlockLowerTriangular",
    ):
        self._operators = [list(row) for row in operators]
        if not self._operators:
            raise ValueError(f"Expected a non-empty list of `operators`. Found: {operators}")
        for i, row in enumerate(self._operators):
            if len(row) != i + 1:
                raise ValueError(
                    f"Argument `operators[{i}]` must contain `{i + 1}` blocks. Received: {len(row)} blocks."
                )
        if all(row[-1].is_non_singular for row in self._operators) and is_non_singular is None:
            is_non_singular = True
        super().__init__(
            self._operators[0][0].dtype,
            [],
            is_non_singular,
            is_self_adjoint,
            is_positive_definite,
            True,
            name,
        )

    operators = property(lambda self: [list(row) for row in self._operators])

    def _sizes(self):
        sizes = [row[-1].domain_dimension for row in self._operators]
        if None in sizes:
            raise ValueError(f"{self.name}: nbdist needs each block's dimensions statically")
        return sizes

    def _shape(self):
        batch = TensorShape([])
        for row in self._operators:
            for op in row:
                batch = broadcast_shape(batch, op.batch_shape)
        n = sum(self._sizes())
        return TensorShape([*batch.as_list(), n, n])

    def _to_dense(self):
        from nbdist.ops.concat_slice_ops import concat  # noqa: PLC0415
        from nbdist.ops.linear_operator_combinations import broadcast_batches  # noqa: PLC0415

        sizes, rows = self._sizes(), []
        for i, row in enumerate(self._operators):
            blocks = [op.to_dense() for op in row]
            rest = sum(sizes[i + 1 :])
            if rest:
                zero = blocks[-1][..., :, :1] * 0
                blocks.append(concat([zero] * rest, -1))
            rows.append(concat(broadcast_batches(blocks), -1))
        return concat(broadcast_batches(rows), -2)

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        return matmul_matrices(self._to_dense(), x, adjoint_a=adjoint, adjoint_b=adjoint_arg)

    def _determinant(self):
        result = self._operators[0][0].determinant()
        for row in self._operators[1:]:
            result = result * row[-1].determinant()
        return result

    def _log_abs_determinant(self):
        result = self._operators[0][0].log_abs_determinant()
        for row in self._operators[1:]:
            result = result + row[-1].log_abs_determinant()
        return result
