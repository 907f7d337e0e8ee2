"""`tf.linalg.LinearOperator`: TF's abstract base of the operator family, a matrix (batch) known
by how it acts, built from ops as TF's Python is. A subclass gives its static shape (`_shape`)
and `_matmul`; everything else has a dense default (`_to_dense` from `matmul` of an identity,
`solve` by `tf.linalg.solve`, determinants by `slogdet`) that subclasses replace where the
structure gives a cheaper form. The `is_*` hints are TF's: None unknown, True / False promised,
and methods refuse what a hint rules out (``solve`` of an operator hinted singular, ...)."""

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import get_default_graph
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops.constant_op import convert_to_tensor

__all__ = ["LinearOperator", "abs_value", "adjoint_matrix", "matmul_matrices", "register_derived"]

# The operator classes the base's methods return ("composition", "adjoint", "inversion",
# "lower_triangular"), registered by the modules defining them (no import back from here).
_DERIVED = {}


def register_derived(kind, cls):
    """Records `cls` as the operator class the base returns for `kind`."""
    _DERIVED[kind] = cls
    return cls


def abs_value(x):
    """``|x|`` in `x`'s real dtype (a complex modulus from its parts: nbdist's `tf.abs` of a complex
    tensor keeps the complex dtype)."""
    from nbdist.ops.complex_ops import imag, real  # noqa: PLC0415
    from nbdist.ops.unary_ops import abs as tf_abs  # noqa: PLC0415
    from nbdist.ops.unary_ops import sqrt  # noqa: PLC0415

    if not x.dtype.is_complex:
        return tf_abs(x)
    re, im = real(x), imag(x)
    return sqrt(re * re + im * im)


def adjoint_matrix(x):
    """The conjugate transpose of `x`'s last two dimensions."""
    from nbdist.ops.linalg_ops import matrix_transpose  # noqa: PLC0415

    return matrix_transpose(x, conjugate=x.dtype.is_complex)


def matmul_matrices(a, b, adjoint_a=False, adjoint_b=False):
    """``a @ b`` with broadcast batch dimensions, either side conjugate-transposed."""
    from nbdist.ops.einsum_ops import einsum  # noqa: PLC0415

    a = adjoint_matrix(a) if adjoint_a else a
    b = adjoint_matrix(b) if adjoint_b else b
    return einsum("...ij,...jk->...ik", a, b)


class LinearOperator:
    """`tf.linalg.LinearOperator`: the base class. Subclasses implement `_shape` (a
    `TensorShape`) and `_matmul(x, adjoint, adjoint_arg)`; the rest is optional."""

    def __init__(
        self,
        dtype,
        graph_parents=None,
        is_non_singular=None,
        is_self_adjoint=None,
        is_positive_definite=None,
        is_square=None,
        name=None,
        parameters=None,
    ):
        if is_positive_definite:
            if is_non_singular is False:
                raise ValueError("A positive definite matrix is always non-singular.")
            is_non_singular = True
        if is_non_singular and is_square is False:
            raise ValueError("A non-singular matrix is always square.")
        if is_non_singular:
            is_square = True
        if is_self_adjoint:
            if is_square is False:
                raise ValueError("A self-adjoint matrix is always square.")
            is_square = True
        self._dtype = _dtypes.as_dtype(dtype) if dtype is not None else None
        self._graph_parents = list(graph_parents or [])
        self._is_non_singular = is_non_singular
        self._is_self_adjoint = is_self_adjoint
        self._is_positive_definite = is_positive_definite
        self._is_square_set = is_square
        self._name = name or type(self).__name__
        self._parameters = dict(parameters or {})

    # -- properties --------------------------------------------------------------------------------
    dtype = property(lambda self: self._dtype, doc="The dtype of the matrix.")
    name = property(lambda self: self._name, doc="The operator's name (its ops' name scope).")
    graph_parents = property(lambda self: list(self._graph_parents), doc="Tensors it was made of.")
    parameters = property(lambda self: dict(self._parameters), doc="The constructor's arguments.")
    is_non_singular = property(lambda self: self._is_non_singular)
    is_self_adjoint = property(lambda self: self._is_self_adjoint)
    is_positive_definite = property(lambda self: self._is_positive_definite)

    @property
    def is_square(self):
        """True / False when the static shape or a hint says so, else None."""
        rows, cols = self.range_dimension, self.domain_dimension
        if rows is not None and cols is not None:
            return rows == cols
        return self._is_square_set

    @property
    def shape(self):
        """The static `TensorShape` ``batch_shape + [M, N]``."""
        return self._shape()

    @property
    def batch_shape(self):
        return TensorShape(None) if self.shape.ndims is None else TensorShape(self.shape.dims[:-2])

    @property
    def tensor_rank(self):
        return self.shape.ndims

    @property
    def domain_dimension(self):
        """``N``, the columns (None when unknown)."""
        return None if self.shape.ndims is None else self.shape.dims[-1]

    @property
    def range_dimension(self):
        """``M``, the rows (None when unknown)."""
        return None if self.shape.ndims is None else self.shape.dims[-2]

    def shape_tensor(self, name="shape_tensor"):
        """The shape as an int32 tensor (from the static shape where it is known)."""
        from nbdist.ops.constant_op import constant  # noqa: PLC0415

        with self._scope(name):
            if self.shape.is_fully_defined():
                return constant(self.shape.as_list(), dtype=_dtypes.int32)
            return self._shape_tensor()

    def _shape_tensor(self):
        from nbdist.ops.shape_ops import shape  # noqa: PLC0415

        return shape(self.to_dense())

    def batch_shape_tensor(self, name="batch_shape_tensor"):
        with self._scope(name):
            return self.shape_tensor()[:-2]

    def tensor_rank_tensor(self, name="tensor_rank_tensor"):
        from nbdist.ops.shape_ops import size  # noqa: PLC0415

        with self._scope(name):
            return size(self.shape_tensor())

    def domain_dimension_tensor(self, name="domain_dimension_tensor"):
        with self._scope(name):
            return self.shape_tensor()[-1]

    def range_dimension_tensor(self, name="range_dimension_tensor"):
        with self._scope(name):
            return self.shape_tensor()[-2]

    def _scope(self, name):
        return get_default_graph().name_scope(f"{self._name}/{name}" if name else self._name)

    # -- products and solves -----------------------------------------------------------------------
    def matmul(self, x, adjoint=False, adjoint_arg=False, name="matmul"):
        """``self @ x`` (``self^H`` when `adjoint`, ``x^H`` when `adjoint_arg`); `x` a tensor
        ``[..., N, R]`` or another operator (the product is then a `LinearOperatorComposition`)."""
        if isinstance(x, LinearOperator):
            left = self.adjoint() if adjoint else self
            right = x.adjoint() if adjoint_arg else x
            return _DERIVED["composition"]([left, right])
        with self._scope(name):
            x = self._checked_arg(x, "x", -2 if adjoint else -1, -1 if adjoint_arg else -2)
            return self._matmul(x, adjoint=adjoint, adjoint_arg=adjoint_arg)

    def _checked_arg(self, x, name, self_axis, arg_axis):
        """`x` as a tensor of the operator's dtype whose `arg_axis` fits the operator's
        `self_axis` (TF's checks: `TypeError`, `ValueError`)."""
        x = convert_to_tensor(x, name=name)
        if x.dtype != self.dtype:
            raise TypeError(
                f"Expected argument to have dtype <dtype: '{self.dtype.name}'>.  Found: "
                f"<dtype: '{x.dtype.name}'> in tensor {x}"
            )
        mine = self.shape.dims[self_axis] if self.shape.ndims is not None else None
        theirs = x.shape.dims[arg_axis] if x.shape.ndims is not None else None
        if mine is not None and theirs is not None and mine != theirs:
            raise ValueError(f"Dimensions {mine} and {theirs} are not compatible")
        return x

    def __matmul__(self, other):
        return self.matmul(other)

    def matvec(self, x, adjoint=False, name="matvec"):
        """``self @ x`` for vectors `x` ``[..., N]``."""
        from nbdist.ops.reshape_ops import expand_dims, squeeze  # noqa: PLC0415

        with self._scope(name):
            x = self._checked_arg(x, "x", -2 if adjoint else -1, -1)
            return squeeze(self._matmul(expand_dims(x, -1), adjoint=adjoint, adjoint_arg=False), [-1])

    def _check_solvable(self, what):
        if self.is_non_singular is False:
            raise NotImplementedError(
                f"Exact {what} not implemented for an operator that is expected to be singular."
            )
        if self.is_square is False:
            raise NotImplementedError(
                f"Exact {what} not implemented for an operator that is expected to not be square."
            )

    def solve(self, rhs, adjoint=False, adjoint_arg=False, name="solve"):
        """``X`` with ``self @ X = rhs`` (``self^H`` when `adjoint`; ``rhs^H`` when `adjoint_arg`).

        Raises:
            NotImplementedError: the operator is hinted singular or not square (as TF).
        """
        self._check_solvable("solve")
        if isinstance(rhs, LinearOperator):
            left = self.adjoint() if adjoint else self
            right = rhs.adjoint() if adjoint_arg else rhs
            return left.inverse().matmul(right)
        with self._scope(name):
            rhs = self._checked_arg(rhs, "rhs", -1 if adjoint else -2, -1 if adjoint_arg else -2)
            return self._solve(rhs, adjoint=adjoint, adjoint_arg=adjoint_arg)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        from nbdist.ops.linalg_solve_ops import matrix_solve  # noqa: PLC0415

        rhs = adjoint_matrix(rhs) if adjoint_arg else rhs
        return matrix_solve(self.to_dense(), rhs, adjoint=adjoint)

    def solvevec(self, rhs, adjoint=False, name="solve"):
        """``x`` with ``self @ x = rhs`` for vectors ``[..., M]``."""
        from nbdist.ops.reshape_ops import expand_dims, squeeze  # noqa: PLC0415

        self._check_solvable("solve")
        with self._scope(name):
            rhs = self._checked_arg(rhs, "rhs", -1 if adjoint else -2, -1)
            return squeeze(self._solve(expand_dims(rhs, -1), adjoint=adjoint), [-1])

    # -- scalars -----------------------------------------------------------------------------------
    def determinant(self, name="det"):
        """``det`` of each matrix. Raises `NotImplementedError` when hinted not square."""
        if self.is_square is False:
            raise NotImplementedError(
                "Determinant not implemented for an operator that is expected to not be square."
            )
        with self._scope(name):
            return self._determinant()

    def _determinant(self):
        from nbdist.ops.linalg_ops import matrix_determinant  # noqa: PLC0415

        return matrix_determinant(self.to_dense())

    def log_abs_determinant(self, name="log_abs_det"):
        """``log |det|`` of each matrix."""
        if self.is_square is False:
            raise NotImplementedError(
                "Determinant not implemented for an operator that is expected to not be square."
            )
        with self._scope(name):
            return self._log_abs_determinant()

    def _log_abs_determinant(self):
        from nbdist.ops.linalg_solve_ops import slogdet  # noqa: PLC0415

        return slogdet(self.to_dense())[1]

    def trace(self, name="trace"):
        """The sum of each matrix's diagonal."""
        from nbdist.ops.reduction_ops import reduce_sum  # noqa: PLC0415

        with self._scope(name):
            return reduce_sum(self.diag_part(), axis=-1)

    def diag_part(self, name="diag_part"):
        """Each matrix's diagonal ``[..., min(M, N)]``."""
        with self._scope(name):
            return self._diag_part()

    def _diag_part(self):
        from nbdist.ops.linalg_ops import matrix_diag_part  # noqa: PLC0415

        return matrix_diag_part(self.to_dense())

    def cond(self, name="cond"):
        """The condition number: the ratio of the largest to the smallest singular value (of
        the eigenvalues' moduli when self-adjoint), as TF's."""
        from nbdist.ops.linalg_decomp_ops import svd  # noqa: PLC0415
        from nbdist.ops.reduction_ops import reduce_max, reduce_min  # noqa: PLC0415

        with self._scope(name):
            vals = (
                abs_value(self._eigvals()) if self.is_self_adjoint else svd(self.to_dense(), compute_uv=False)
            )
            return reduce_max(vals, axis=-1) / reduce_min(vals, axis=-1)

    def eigvals(self, name="eigvals"):
        """The eigenvalues, ascending (self-adjoint operators only, as TF).

        Raises:
            NotImplementedError: the operator is not hinted self-adjoint.
        """
        if not self.is_self_adjoint:
            raise NotImplementedError("Only self-adjoint matrices are supported.")
        with self._scope(name):
            return self._eigvals()

    def _eigvals(self):
        from nbdist.ops.linalg_decomp_ops import self_adjoint_eigvals  # noqa: PLC0415

        return self_adjoint_eigvals(self.to_dense())

    # -- derived operators and tensors ---------------------------------------------------------------
    def to_dense(self, name="to_dense"):
        """The matrices as a tensor ``[..., M, N]``."""
        with self._scope(name):
            return self._to_dense()

    def _to_dense(self):
        from nbdist.ops.linalg_ops import eye  # noqa: PLC0415

        if self.domain_dimension is None:
            raise ValueError(f"{self._name}.to_dense: nbdist needs the domain dimension statically")
        batch = self.batch_shape.as_list() if self.batch_shape.is_fully_defined() else None
        return self._matmul(eye(self.domain_dimension, batch_shape=batch, dtype=self.dtype), False, False)

    def add_to_tensor(self, x, name="add_to_tensor"):
        """``self.to_dense() + x``."""
        with self._scope(name):
            return self._add_to_tensor(convert_to_tensor(x, name="x"))

    def _add_to_tensor(self, x):
        return self.to_dense() + x

    def adjoint(self, name="adjoint"):
        """The operator's adjoint (itself when hinted self-adjoint), a `LinearOperatorAdjoint`."""
        if self.is_self_adjoint:
            return self
        return _DERIVED["adjoint"](self)

    H = property(adjoint)

    def inverse(self, name="inverse"):
        """The inverse, a `LinearOperatorInversion`.

        Raises:
            ValueError: the operator is hinted singular or not square (TF's messages).
        """
        if self.is_square is False:
            raise ValueError("Cannot take the Inverse: This operator represents a non square matrix.")
        if self.is_non_singular is False:
            raise ValueError("Cannot take the Inverse: This operator represents a singular matrix.")
        return _DERIVED["inversion"](self)

    def cholesky(self, name="cholesky"):
        """The lower-triangular Cholesky factor, a `LinearOperatorLowerTriangular`.

        Raises:
            ValueError: the operator is not hinted self-adjoint and positive definite.
        """
        if not (self.is_positive_definite and self.is_self_adjoint):
            raise ValueError(
                "Cholesky decomposition only applies to self-adjoint positive-definite operators."
            )
        with self._scope(name):
            return self._cholesky()

    def _cholesky(self):
        from nbdist.ops.linalg_solve_ops import cholesky  # noqa: PLC0415

        return _DERIVED["lower_triangular"](
            cholesky(self.to_dense()), is_non_singular=True, is_self_adjoint=False, is_square=True
        )

    # -- checks ------------------------------------------------------------------------------------
    def assert_non_singular(self, name="assert_non_singular"):
        """An op failing at run time unless every matrix's condition number is below
        ``1 / (max(100, N) eps)`` (TF's default check)."""
        with self._scope(name):
            return self._assert_non_singular()

    def _assert_non_singular(self):
        from nbdist.ops.check_ops import assert_less  # noqa: PLC0415
        from nbdist.ops.linalg_decomp_ops import svd  # noqa: PLC0415
        from nbdist.ops.reduction_ops import reduce_max, reduce_min  # noqa: PLC0415

        s = svd(self.to_dense(), compute_uv=False)
        cond = reduce_max(s, axis=-1) / reduce_min(s, axis=-1)
        eps = np.finfo(self.dtype.real_dtype.np).eps * max(100.0, float(self.range_dimension or 1))
        return assert_less(cond, (1.0 / eps) + 0 * cond, message="Singular matrix up to precision epsilon.")

    def assert_positive_definite(self, name="assert_positive_definite"):
        """An op failing at run time unless every matrix is positive definite (its Cholesky
        factor's diagonal positive)."""
        from nbdist.ops.check_ops import assert_positive  # noqa: PLC0415
        from nbdist.ops.linalg_ops import matrix_diag_part  # noqa: PLC0415
        from nbdist.ops.linalg_solve_ops import cholesky  # noqa: PLC0415

        with self._scope(name):
            return assert_positive(
                matrix_diag_part(cholesky(self.to_dense())), message="Matrix was not positive definite."
            )

    def assert_self_adjoint(self, name="assert_self_adjoint"):
        """An op failing at run time unless every matrix equals its adjoint."""
        from nbdist.ops.check_ops import assert_equal  # noqa: PLC0415

        with self._scope(name):
            dense = self.to_dense()
            return assert_equal(dense, adjoint_matrix(dense), message="Matrix was not equal to its adjoint.")

    def __repr__(self):
        return f"<tf.linalg.{type(self).__name__} '{self._name}' shape={self.shape} dtype={self.dtype.name}>"
