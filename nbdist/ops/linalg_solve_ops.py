"""Solving linear systems, batched over leading dimensions as TF's: `tf.matrix_band_part`,
`tf.cholesky`, `tf.matrix_triangular_solve`, `tf.matrix_solve`, `tf.cholesky_solve`,
`tf.matrix_solve_ls`, `tf.linalg.slogdet` / `logdet`, with TF's gradients (real dtypes)."""

import numpy as np

from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops._shapes import int_tensor, invalid_argument
from nbdist.ops.constant_op import convert_n, convert_to_tensor
from nbdist.ops.einsum_ops import batch_matmul
from nbdist.ops.linalg_ops import (
    matrix_diag,
    matrix_diag_part,
    matrix_inverse,
    matrix_set_diag,
    matrix_transpose,
)

__all__ = [
    "cholesky",
    "cholesky_solve",
    "matrix_band_part",
    "matrix_solve",
    "matrix_solve_ls",
    "matrix_triangular_solve",
]


def _adjoint(x):
    return np.swapaxes(x, -1, -2).conj()


def _matrix_shape(inputs, attrs):
    x = inputs[0]
    if x.shape.ndims is not None and x.shape.ndims < 2:
        raise ValueError(f"{x.name} must be at least a matrix, got shape {x.shape}")
    return [(x.dtype, x.shape)]


def _solve_shape(inputs, attrs):
    from nbdist.ops._shapes import broadcast_shape  # noqa: PLC0415

    a, b = inputs
    _matrix_shape([a], attrs)
    _matrix_shape([b], attrs)
    if a.shape.ndims is None or b.shape.ndims is None:
        return [(b.dtype, TensorShape(None))]
    batch = broadcast_shape(TensorShape(a.shape.dims[:-2]), TensorShape(b.shape.dims[:-2]))
    return [(b.dtype, TensorShape([*batch.as_list(), *b.shape.dims[-2:]]))]


# -- band_part -------------------------------------------------------------------------------------
registry.shape("MatrixBandPart")(_matrix_shape)


@registry.kernel("MatrixBandPart")
def _band_part_kernel(ctx, node, x, num_lower, num_upper):
    rows, cols = np.indices(x.shape[-2:])
    keep = np.ones(x.shape[-2:], bool)
    if num_lower >= 0:
        keep &= rows - cols <= num_lower
    if num_upper >= 0:
        keep &= cols - rows <= num_upper
    return np.where(keep, x, np.zeros((), x.dtype))


registry.gradient("MatrixBandPart")(
    lambda op, grad: [matrix_band_part(grad, op.inputs[1], op.inputs[2]), None, None]
)


def matrix_band_part(input, num_lower, num_upper, name=None):  # noqa: A002 - TF's argument name
    """`tf.matrix_band_part` (`tf.linalg.band_part`): each matrix with what lies outside its band
    set to 0 (`num_lower` subdiagonals and `num_upper` superdiagonals kept; negative: all)."""
    inputs = [
        convert_to_tensor(input),
        int_tensor(num_lower, "num_lower"),
        int_tensor(num_upper, "num_upper"),
    ]
    return registry.make_op("MatrixBandPart", inputs, name=name or "MatrixBandPart").outputs[0]


# -- cholesky --------------------------------------------------------------------------------------
registry.shape("Cholesky")(_matrix_shape)


@registry.kernel("Cholesky")
def _cholesky_kernel(ctx, node, x):
    try:
        return np.linalg.cholesky(x).astype(x.dtype)
    except np.linalg.LinAlgError:
        raise invalid_argument(
            node, "Cholesky decomposition was not successful. The input might not be valid."
        ) from None


@registry.gradient("Cholesky")
def _cholesky_grad(op, grad):
    """TF's: ``Phi(L^H dL)`` sandwiched between ``L^-1``, symmetrised (Murray 2016)."""
    from nbdist.ops.cast_select_ops import ones_like  # noqa: PLC0415

    chol = op.outputs[0]
    chol_inv = matrix_triangular_solve(chol, matrix_diag(ones_like(matrix_diag_part(chol))))
    middle = batch_matmul(chol, grad, adjoint_a=True)
    middle = matrix_set_diag(middle, 0.5 * matrix_diag_part(middle))
    middle = matrix_band_part(middle, -1, 0)
    grad_a = batch_matmul(batch_matmul(chol_inv, middle, adjoint_a=True), chol_inv)
    return [0.5 * (grad_a + matrix_transpose(grad_a))]


def cholesky(input, name=None):  # noqa: A002 - TF's argument name
    """`tf.cholesky`: the lower-triangular ``L`` with ``L L^H = input`` (read from its lower
    triangle); not positive definite: `InvalidArgumentError`, as TF."""
    return registry.make_op("Cholesky", [convert_to_tensor(input)], name=name or "Cholesky").outputs[0]


# -- triangular solve ------------------------------------------------------------------------------
registry.shape("MatrixTriangularSolve")(_solve_shape)


@registry.kernel("MatrixTriangularSolve")
def _triangular_solve_kernel(ctx, node, a, b):
    a = np.tril(a) if node.attr["lower"] else np.triu(a)
    if node.attr["adjoint"]:
        a = _adjoint(a)
    try:
        return np.linalg.solve(a, b).astype(b.dtype)
    except np.linalg.LinAlgError:
        raise invalid_argument(node, "Input matrix is not invertible.") from None


@registry.gradient("MatrixTriangularSolve")
def _triangular_solve_grad(op, grad):
    from nbdist.ops.broadcast_ops import sum_to_shape  # noqa: PLC0415

    a, b = op.inputs
    lower, adjoint = op.get_attr("lower"), op.get_attr("adjoint")
    c = op.outputs[0]
    grad_b = matrix_triangular_solve(a, grad, lower=lower, adjoint=not adjoint)
    grad_a = batch_matmul(c, grad_b, adjoint_b=True) if adjoint else batch_matmul(grad_b, c, adjoint_b=True)
    grad_a = matrix_band_part(-grad_a, -1, 0) if lower else matrix_band_part(-grad_a, 0, -1)
    return [sum_to_shape(grad_a, a), sum_to_shape(grad_b, b)]


def matrix_triangular_solve(matrix, rhs, lower=True, adjoint=False, name=None):
    """`tf.matrix_triangular_solve`: ``X`` with ``matrix X = rhs``, reading only the lower (or
    upper) triangle of `matrix` (``matrix^H X = rhs`` when `adjoint`)."""
    attrs = {"lower": bool(lower), "adjoint": bool(adjoint)}
    inputs = convert_n([matrix, rhs])
    return registry.make_op(
        "MatrixTriangularSolve", inputs, attrs, name=name or "MatrixTriangularSolve"
    ).outputs[0]


# -- solve -----------------------------------------------------------------------------------------
registry.shape("MatrixSolve")(_solve_shape)


@registry.kernel("MatrixSolve")
def _solve_kernel(ctx, node, a, b):
    if node.attr["adjoint"]:
        a = _adjoint(a)
    try:
        return np.linalg.solve(a, b).astype(b.dtype)
    except np.linalg.LinAlgError:
        raise invalid_argument(node, "Input matrix is not invertible.") from None


@registry.gradient("MatrixSolve")
def _solve_grad(op, grad):
    from nbdist.ops.broadcast_ops import sum_to_shape  # noqa: PLC0415

    a, b = op.inputs
    adjoint, c = op.get_attr("adjoint"), op.outputs[0]
    grad_b = matrix_solve(a, grad, adjoint=not adjoint)
    grad_a = batch_matmul(c, grad_b, adjoint_b=True) if adjoint else batch_matmul(grad_b, c, adjoint_b=True)
    return [sum_to_shape(-grad_a, a), sum_to_shape(grad_b, b)]


def matrix_solve(matrix, rhs, adjoint=False, name=None):
    """`tf.matrix_solve` (`tf.linalg.solve`): ``X`` with ``matrix X = rhs`` (``matrix^H X = rhs``
    when `adjoint`); a singular matrix is an `InvalidArgumentError`."""
    inputs = convert_n([matrix, rhs])
    return registry.make_op(
        "MatrixSolve", inputs, {"adjoint": bool(adjoint)}, name=name or "MatrixSolve"
    ).outputs[0]


def cholesky_solve(chol, rhs, name=None):
    """`tf.cholesky_solve`: ``X`` with ``A X = rhs`` given ``chol = cholesky(A)``: two triangular
    solves, as TF's."""
    from nbdist.graph.graph import get_default_graph  # noqa: PLC0415

    with get_default_graph().name_scope(name or "cholesky_solve"):
        y = matrix_triangular_solve(chol, rhs, adjoint=False, lower=True)
        return matrix_triangular_solve(chol, y, adjoint=True, lower=True)


def matrix_solve_ls(matrix, rhs, l2_regularizer=0.0, fast=True, name=None):
    """`tf.matrix_solve_ls` (`tf.linalg.lstsq`): the least-squares (minimum-norm when
    underdetermined) solutions by TF's fast path, the normal equations' Cholesky (with
    ``l2_regularizer`` on the diagonal); nbdist takes that path for ``fast=False`` too.

    Raises:
        ValueError: `matrix`'s last two dimensions unknown.
    """
    from nbdist.graph.graph import get_default_graph  # noqa: PLC0415
    from nbdist.ops.linalg_ops import eye  # noqa: PLC0415

    matrix, rhs = convert_n([matrix, rhs])
    dims = matrix.shape.dims[-2:] if matrix.shape.ndims is not None else [None, None]
    if None in dims:
        raise ValueError("tf.matrix_solve_ls: nbdist needs the matrix's last two dimensions statically")
    m, n = dims
    with get_default_graph().name_scope(name or "matrix_solve_ls"):
        if m >= n:
            gram = batch_matmul(matrix, matrix, adjoint_a=True) + l2_regularizer * eye(n, dtype=matrix.dtype)
            return cholesky_solve(cholesky(gram), batch_matmul(matrix, rhs, adjoint_a=True))
        gram = batch_matmul(matrix, matrix, adjoint_b=True) + l2_regularizer * eye(m, dtype=matrix.dtype)
        return batch_matmul(matrix, cholesky_solve(cholesky(gram), rhs), adjoint_a=True)


# -- slogdet / logdet ------------------------------------------------------------------------------
@registry.shape("LogMatrixDeterminant")
def _slogdet_shape(inputs, attrs):
    x = inputs[0]
    batch = TensorShape(None if x.shape.ndims is None else x.shape.dims[:-2])
    return [(x.dtype, batch), (x.dtype, batch)]


@registry.kernel("LogMatrixDeterminant")
def _slogdet_kernel(ctx, node, x):
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise invalid_argument(
            node, f"LogMatrixDeterminant: input must be square matrices, got {list(x.shape)}"
        )
    sign, logabs = np.linalg.slogdet(x)
    return np.asarray(sign, x.dtype), np.asarray(logabs, x.dtype)


@registry.gradient("LogMatrixDeterminant")
def _slogdet_grad(op, grad_sign, grad_logabs):
    from nbdist.ops.reshape_ops import expand_dims  # noqa: PLC0415

    if grad_logabs is None:
        return [None]
    return [expand_dims(expand_dims(grad_logabs, -1), -1) * matrix_inverse(op.inputs[0], adjoint=True)]


def slogdet(input, name=None):  # noqa: A002 - TF's argument name
    """`tf.linalg.slogdet`: ``(sign, log|det|)`` of each square matrix."""
    op = registry.make_op(
        "LogMatrixDeterminant", [convert_to_tensor(input)], name=name or "LogMatrixDeterminant"
    )
    return op.outputs[0], op.outputs[1]


def logdet(matrix, name=None):
    """`tf.linalg.logdet`: ``log det`` of each Hermitian positive definite matrix, from its
    Cholesky factor as TF's (``2 sum log diag L``)."""
    from nbdist.graph.graph import get_default_graph  # noqa: PLC0415
    from nbdist.ops.reduction_ops import reduce_sum  # noqa: PLC0415
    from nbdist.ops.unary_ops import log  # noqa: PLC0415

    with get_default_graph().name_scope(name or "logdet"):
        return 2.0 * reduce_sum(log(matrix_diag_part(cholesky(matrix))), axis=-1)
