"""What TF builds over an LU factorisation and tridiagonal matrices: `tf.linalg.lu_solve`,
`lu_matrix_inverse`, `lu_reconstruct` (over `tf.linalg.lu`'s ``(lower_upper, perm)``, ``input[perm]
= L U``, as TF's), `tridiagonal_solve` and `tridiagonal_matmul` (TF's `TridiagonalSolve` and
`TridiagonalMatMul` ops with their gradients; 'compact', 'sequence' and 'matrix' formats) and
`eigh_tridiagonal` (SciPy's ``scipy.linalg.eigh_tridiagonal``; no gradient)."""

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import get_default_graph
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops._shapes import invalid_argument
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.einsum_ops import batch_matmul, einsum

__all__ = [
    "eigh_tridiagonal",
    "lu_matrix_inverse",
    "lu_reconstruct",
    "lu_solve",
    "tridiagonal_matmul",
    "tridiagonal_solve",
]


def _static_dim(x, axis, what):
    d = x.shape.dims[axis] if x.shape.ndims is not None else None
    if d is None:
        raise ValueError(f"{what}: nbdist needs the size of {x.name}'s axis {axis} statically, got {x.shape}")
    return d


# -- lu_solve / lu_matrix_inverse / lu_reconstruct ---------------------------------------------------
def _permutation_matrix(perm, n, dtype):
    """``P`` with ``P x = x[perm]`` (rows), batched as `perm`."""
    from nbdist.ops.reduction_ops import one_hot  # noqa: PLC0415

    return one_hot(perm, n, dtype=dtype)


def _unit_lower_and_upper(lower_upper):
    from nbdist.ops.cast_select_ops import ones_like  # noqa: PLC0415
    from nbdist.ops.linalg_ops import matrix_diag_part, matrix_set_diag  # noqa: PLC0415
    from nbdist.ops.linalg_solve_ops import matrix_band_part  # noqa: PLC0415

    lower = matrix_set_diag(matrix_band_part(lower_upper, -1, 0), ones_like(matrix_diag_part(lower_upper)))
    return lower, matrix_band_part(lower_upper, 0, -1)


def lu_solve(lower_upper, perm, rhs, validate_args=False, name=None):
    """`tf.linalg.lu_solve`: ``X`` with ``A X = rhs`` from ``(lower_upper, perm) = tf.linalg.lu(A)``:
    the rows of `rhs` permuted, then two triangular solves, as TF's; batch dimensions broadcast."""
    from nbdist.ops.linalg_solve_ops import matrix_triangular_solve  # noqa: PLC0415

    with get_default_graph().name_scope(name or "lu_solve"):
        lower_upper = convert_to_tensor(lower_upper, name="lower_upper")
        perm = convert_to_tensor(perm, name="perm")
        rhs = convert_to_tensor(rhs, dtype=lower_upper.dtype, name="rhs")
        n = _static_dim(lower_upper, -1, "tf.linalg.lu_solve")
        permuted = batch_matmul(_permutation_matrix(perm, n, lower_upper.dtype), rhs)
        lower, _ = _unit_lower_and_upper(lower_upper)
        y = matrix_triangular_solve(lower, permuted, lower=True)
        return matrix_triangular_solve(lower_upper, y, lower=False)


def lu_matrix_inverse(lower_upper, perm, validate_args=False, name=None):
    """`tf.linalg.lu_matrix_inverse`: ``A^-1`` from ``(lower_upper, perm) = tf.linalg.lu(A)``."""
    from nbdist.ops.linalg_ops import eye  # noqa: PLC0415

    with get_default_graph().name_scope(name or "lu_matrix_inverse"):
        lower_upper = convert_to_tensor(lower_upper, name="lower_upper")
        n = _static_dim(lower_upper, -1, "tf.linalg.lu_matrix_inverse")
        return lu_solve(lower_upper, perm, eye(n, dtype=lower_upper.dtype), validate_args)


def lu_reconstruct(lower_upper, perm, validate_args=False, name=None):
    """`tf.linalg.lu_reconstruct`: ``A`` back from ``(lower_upper, perm) = tf.linalg.lu(A)``:
    ``P^T L U``."""
    with get_default_graph().name_scope(name or "lu_reconstruct"):
        lower_upper = convert_to_tensor(lower_upper, name="lower_upper")
        perm = convert_to_tensor(perm, name="perm")
        n = _static_dim(lower_upper, -1, "tf.linalg.lu_reconstruct")
        lower, upper = _unit_lower_and_upper(lower_upper)
        p = _permutation_matrix(perm, n, lower_upper.dtype)
        return batch_matmul(p, batch_matmul(lower, upper), adjoint_a=True)


# -- tridiagonal matrices as three diagonals --------------------------------------------------------
def _shift_matrix(n, k, dtype):
    """``S`` with ``(S x)[i] = x[i + k]`` (zero past the ends)."""
    from nbdist.ops.constant_op import constant  # noqa: PLC0415

    return constant(np.eye(n, k=k), dtype=dtype)


def _shift_rows(x, k, n):
    """`x`'s `n` rows (next-to-last axis) moved by `k`: row ``i`` of the result is row ``i + k``."""
    return batch_matmul(_shift_matrix(n, k, x.dtype), x)


def _compact_from_matrix(matrix):
    """``[..., 3, M]``: superdiagonal (zero last), diagonal, subdiagonal (zero first)."""
    from nbdist.ops.concat_slice_ops import stack  # noqa: PLC0415

    n = _static_dim(matrix, -1, "diagonals_format='matrix'")
    sup = einsum("...ij,ij->...i", matrix, _shift_matrix(n, 1, matrix.dtype))
    sub = einsum("...ij,ij->...i", matrix, _shift_matrix(n, -1, matrix.dtype))
    main = einsum("...ii->...i", matrix)
    return stack([sup, main, sub], axis=-2)


def _dense_tridiagonal(diags):
    """numpy: the ``[..., M, M]`` matrices of compact ``[..., 3, M]`` diagonals."""
    sup, main, sub = diags[..., 0, :], diags[..., 1, :], diags[..., 2, :]
    n = main.shape[-1]
    out = np.zeros((*main.shape, n), diags.dtype)
    idx = np.arange(n)
    out[..., idx, idx] = main
    out[..., idx[:-1], idx[1:]] = sup[..., :-1]
    out[..., idx[1:], idx[:-1]] = sub[..., 1:]
    return out


def _same_dtype(op_type, inputs, names):
    first = inputs[0]
    for t, name in zip(inputs[1:], names[1:]):
        if t.dtype != first.dtype:
            raise TypeError(
                f"Input '{name}' of '{op_type}' Op has type {t.dtype.name} that does not match type "
                f"{first.dtype.name} of argument '{names[0]}'."
            )


@registry.shape("TridiagonalSolve")
def _tridiagonal_solve_shape(inputs, attrs):
    _same_dtype("TridiagonalSolve", inputs, ("diagonals", "rhs"))
    return [(inputs[1].dtype, inputs[1].shape)]


@registry.kernel("TridiagonalSolve")
def _tridiagonal_solve_kernel(ctx, node, diags, rhs):
    if diags.shape[-1] != rhs.shape[-2]:
        raise invalid_argument(
            node, f"TridiagonalSolve: expected {diags.shape[-1]} rows of rhs, got {list(rhs.shape)}"
        )
    if diags.shape[-1] == 0:
        return rhs.copy()
    from nbdist.ops import tridiagonal_solvers  # noqa: PLC0415

    batch = np.broadcast_shapes(diags.shape[:-2], rhs.shape[:-2])
    diags = np.broadcast_to(diags, (*batch, *diags.shape[-2:]))
    rhs = np.broadcast_to(rhs, (*batch, *rhs.shape[-2:]))
    if not node.attr["partial_pivoting"]:
        return tridiagonal_solvers.thomas(diags, rhs).astype(rhs.dtype)
    if not node.attr["perturb_singular"]:
        return tridiagonal_solvers.pivoted(diags, rhs).astype(rhs.dtype)
    out = np.empty(rhs.shape, rhs.dtype)
    for index in np.ndindex(*batch):
        out[index] = tridiagonal_solvers.solve_perturbed(*diags[index], rhs[index])
    return out


@registry.gradient("TridiagonalSolve")
def _tridiagonal_solve_grad(op, grad):
    """TF's: the transposed system solved for `grad`, and minus the three diagonals of
    ``grad_rhs x^T``."""
    from nbdist.ops.concat_slice_ops import stack  # noqa: PLC0415
    from nbdist.ops.reduction_ops import reduce_sum  # noqa: PLC0415

    diags, x = op.inputs[0], op.outputs[0]
    n = _static_dim(diags, -1, "TridiagonalSolve's gradient")
    sup, main, sub = diags[..., 0, :], diags[..., 1, :], diags[..., 2, :]
    shift = _shift_matrix(n, 1, diags.dtype)
    transposed = stack(
        [einsum("...j,ij->...i", sub, shift), main, einsum("...j,ji->...i", sup, shift)], axis=-2
    )
    grad_rhs = _tridiagonal_solve_op(
        transposed, grad, op.get_attr("partial_pivoting"), op.get_attr("perturb_singular")
    )
    grad_diags = stack(
        [
            reduce_sum(grad_rhs * _shift_rows(x, 1, n), axis=-1),
            reduce_sum(grad_rhs * x, axis=-1),
            reduce_sum(grad_rhs * _shift_rows(x, -1, n), axis=-1),
        ],
        axis=-2,
    )
    return [-grad_diags, grad_rhs]


def _tridiagonal_solve_op(diags, rhs, partial_pivoting, perturb_singular, name=None):
    attrs = {"partial_pivoting": bool(partial_pivoting), "perturb_singular": bool(perturb_singular)}
    return registry.make_op("TridiagonalSolve", [diags, rhs], attrs, name=name or "TridiagonalSolve").outputs[
        0
    ]


def _sequence_to_compact(diagonals):
    from nbdist.ops.concat_slice_ops import pad, stack  # noqa: PLC0415

    if not isinstance(diagonals, (tuple, list)) or len(diagonals) != 3:
        raise ValueError("Expected diagonals to be a sequence of length 3.")
    superdiag, maindiag, subdiag = (convert_to_tensor(d) for d in diagonals)
    if not (
        subdiag.shape[:-1].is_compatible_with(maindiag.shape[:-1])
        and superdiag.shape[:-1].is_compatible_with(maindiag.shape[:-1])
    ):
        raise ValueError(
            "Tensors representing the three diagonals must have the same shape,except for the last "
            f"dimension, got {subdiag.shape}, {maindiag.shape}, {superdiag.shape}"
        )
    m = maindiag.shape.dims[-1]

    def pad_if_necessary(t, what, last_dim_padding):
        n = t.shape.dims[-1]
        if not n or n == m:
            return t
        if n == m - 1:
            return pad(t, [[0, 0]] * (t.shape.ndims - 1) + [last_dim_padding])
        raise ValueError(f"Expected {what} to be have length {m} or {m - 1}, got {n}.")

    subdiag = pad_if_necessary(subdiag, "subdiagonal", [1, 0])
    superdiag = pad_if_necessary(superdiag, "superdiagonal", [0, 1])
    return stack([superdiag, maindiag, subdiag], axis=-2)


def _to_compact(diagonals, diagonals_format):
    if diagonals_format == "compact":
        return convert_to_tensor(diagonals, name="diagonals")
    if diagonals_format == "sequence":
        return _sequence_to_compact(diagonals)
    if diagonals_format == "matrix":
        diagonals = convert_to_tensor(diagonals, name="diagonals")
        m1, m2 = (
            (diagonals.shape.dims[-1], diagonals.shape.dims[-2]) if diagonals.shape.ndims else (None, None)
        )
        if m1 and m2 and m1 != m2:
            raise ValueError(f"Expected last two dimensions of diagonals to be same, got {m1} and {m2}")
        return _compact_from_matrix(diagonals)
    raise ValueError(f"Unrecognized diagonals_format: {diagonals_format}")


def _like(value, dtype, name):
    """`value` as a tensor: a Python value in `dtype` (as TF's op wrapper converts it), a tensor as is."""
    from nbdist.graph.tensor import Tensor  # noqa: PLC0415

    return value if isinstance(value, Tensor) else convert_to_tensor(value, dtype=dtype, name=name)


def tridiagonal_compact(diagonals, diagonals_format):
    """The compact ``[..., 3, M]`` form of tridiagonal `diagonals` in any of TF's formats."""
    return _to_compact(diagonals, diagonals_format)


def tridiagonal_solve(
    diagonals,
    rhs,
    diagonals_format="compact",
    transpose_rhs=False,
    conjugate_rhs=False,
    name=None,
    partial_pivoting=True,
    perturb_singular=False,
):
    """`tf.linalg.tridiagonal_solve`: ``X`` with ``A X = rhs`` for tridiagonal ``A`` given as
    'compact' ``[..., 3, M]`` (superdiagonal, diagonal, subdiagonal), a 'sequence' of the three
    or the 'matrix'; `rhs` ``[..., M, K]`` or ``[..., M]`` (a vector).

    Raises:
        ValueError: the argument checks of TF's, word for word.
    """
    from nbdist.ops.complex_ops import conj  # noqa: PLC0415
    from nbdist.ops.linalg_ops import matrix_transpose  # noqa: PLC0415
    from nbdist.ops.reshape_ops import expand_dims, squeeze  # noqa: PLC0415

    if perturb_singular and not partial_pivoting:
        raise ValueError("partial_pivoting must be True if perturb_singular is.")
    diagonals = _to_compact(diagonals, diagonals_format)
    rhs = _like(rhs, diagonals.dtype, "rhs")
    diags_rank, rhs_rank = diagonals.shape.ndims, rhs.shape.ndims
    if diags_rank:
        if diags_rank < 2:
            raise ValueError(f"Expected diagonals to have rank at least 2, got {diags_rank}")
        if rhs_rank and rhs_rank not in (diags_rank, diags_rank - 1):
            raise ValueError(
                f"Expected the rank of rhs to be {diags_rank - 1} or {diags_rank}, got {rhs_rank}"
            )
        if rhs_rank and not diagonals.shape[:-2].is_compatible_with(rhs.shape[: diags_rank - 2]):
            raise ValueError(
                f"Batch shapes {diagonals.shape[:-2]} and {rhs.shape[: diags_rank - 2]} are incompatible"
            )
        if diagonals.shape.dims[-2] and diagonals.shape.dims[-2] != 3:
            raise ValueError(f"Expected 3 diagonals got {diagonals.shape.dims[-2]}")
    vector = bool(rhs_rank and diags_rank and rhs_rank == diags_rank - 1)
    if vector:
        rhs = expand_dims(conj(rhs) if conjugate_rhs else rhs, -1)
    elif transpose_rhs:
        rhs = matrix_transpose(rhs, conjugate=conjugate_rhs)
    elif conjugate_rhs:
        rhs = conj(rhs)
    m, k = diagonals.shape.dims[-1] if diags_rank else None, rhs.shape.dims[-2] if rhs.shape.ndims else None
    if m and k and m != k:
        raise ValueError(
            f"Expected number of left-hand sided and right-hand sides to be equal, got {m} and {k}"
        )
    result = _tridiagonal_solve_op(diagonals, rhs, partial_pivoting, perturb_singular, name)
    return squeeze(result, [-1]) if vector else result


# -- tridiagonal_matmul ------------------------------------------------------------------------------
@registry.shape("TridiagonalMatMul")
def _tridiagonal_matmul_shape(inputs, attrs):
    _same_dtype("TridiagonalMatMul", inputs, ("superdiag", "maindiag", "subdiag", "rhs"))
    return [(inputs[3].dtype, inputs[3].shape)]


@registry.kernel("TridiagonalMatMul")
def _tridiagonal_matmul_kernel(ctx, node, sup, main, sub, rhs):
    m = rhs.shape[-2]
    if not sup.shape[-1] == main.shape[-1] == sub.shape[-1] == m:
        raise invalid_argument(
            node,
            f"TridiagonalMatMul: the diagonals need {m} elements (rhs's rows), got {list(main.shape)}",
        )
    diags = np.concatenate([sup, main, sub], axis=-2)
    return np.matmul(_dense_tridiagonal(diags), rhs).astype(rhs.dtype)


@registry.gradient("TridiagonalMatMul")
def _tridiagonal_matmul_grad(op, grad):
    """TF's: each diagonal's gradient from `rhs` shifted against `grad`; `rhs`'s from the
    diagonals (as columns) times `grad`, shifted back."""
    from nbdist.ops.linalg_ops import matrix_transpose  # noqa: PLC0415
    from nbdist.ops.reduction_ops import reduce_sum  # noqa: PLC0415
    from nbdist.ops.reshape_ops import expand_dims  # noqa: PLC0415

    sup, main, sub = (matrix_transpose(t) for t in op.inputs[:3])
    rhs = op.inputs[3]
    n = _static_dim(rhs, -2, "TridiagonalMatMul's gradient")
    sup_grad = reduce_sum(_shift_rows(rhs, 1, n) * grad, axis=-1)
    main_grad = reduce_sum(rhs * grad, axis=-1)
    sub_grad = reduce_sum(_shift_rows(rhs, -1, n) * grad, axis=-1)
    rhs_grad = _shift_rows(sup * grad, -1, n) + main * grad + _shift_rows(sub * grad, 1, n)
    return [expand_dims(sup_grad, -2), expand_dims(main_grad, -2), expand_dims(sub_grad, -2), rhs_grad]


def tridiagonal_matmul(diagonals, rhs, diagonals_format="compact", name=None):
    """`tf.linalg.tridiagonal_matmul`: ``A rhs`` for tridiagonal ``A`` in the 'compact',
    'sequence' or 'matrix' format (as `tridiagonal_solve`), `rhs` ``[..., M, N]``."""
    from nbdist.ops.reshape_ops import expand_dims  # noqa: PLC0415

    if diagonals_format == "compact":
        diagonals = convert_to_tensor(diagonals, name="diagonals")
        sup, main, sub = diagonals[..., 0, :], diagonals[..., 1, :], diagonals[..., 2, :]
    elif diagonals_format == "sequence":
        sup, main, sub = (convert_to_tensor(d) for d in diagonals)
    elif diagonals_format == "matrix":
        compact = _to_compact(diagonals, "matrix")
        sup, main, sub = compact[..., 0, :], compact[..., 1, :], compact[..., 2, :]
    else:
        raise ValueError(f"Unrecognized diagonals_format: {diagonals_format}")
    inputs = [expand_dims(d, -2) for d in (sup, main, sub)] + [_like(rhs, main.dtype, "rhs")]
    return registry.make_op("TridiagonalMatMul", inputs, name=name or "TridiagonalMatMul").outputs[0]


# -- eigh_tridiagonal --------------------------------------------------------------------------------
@registry.shape("EighTridiagonal")
def _eigh_tridiagonal_shape(inputs, attrs):
    alpha = inputs[0]
    n = alpha.shape.dims[-1] if alpha.shape.ndims else None
    if attrs["select"] != "a":
        n = None
    values = (alpha.dtype.real_dtype, TensorShape([n]))
    return [values, (alpha.dtype, TensorShape([alpha.shape.dims[-1] if alpha.shape.ndims else None, n]))]


@registry.kernel("EighTridiagonal")
def _eigh_tridiagonal_kernel(ctx, node, alpha, beta, select_range):
    import scipy.linalg  # noqa: PLC0415 - SciPy loads when the kernel first runs

    select = node.attr["select"]
    rng = None if select == "a" else tuple(select_range.tolist())
    d = alpha.real.astype(np.float64)
    e = beta.astype(np.complex128 if beta.dtype.kind == "c" else np.float64)
    if e.dtype.kind == "c":  # a Hermitian tridiagonal is unitarily similar to the real one with |beta|
        phases = np.concatenate(
            [[1.0], np.cumprod(np.where(e == 0, 1, e.conj() / np.where(e == 0, 1, np.abs(e))))]
        )
        e = np.abs(e)
    else:
        phases = None
    if select == "v" and not rng[0] < rng[1]:
        raise invalid_argument(node, "Got empty interval in select_range.")
    if select == "i" and not rng[0] <= rng[1]:
        raise invalid_argument(node, "Got empty index range in select_range.")
    vals, vecs = scipy.linalg.eigh_tridiagonal(d, e, select=select, select_range=rng)
    if phases is not None:
        vecs = phases[:, None] * vecs
    return vals.astype(alpha.real.dtype), vecs.astype(alpha.dtype)


registry.no_gradient("EighTridiagonal")


def _check_static_range(select, rng):
    """A constant empty range fails when the graph is built, as TF's constant-folded assert."""
    from nbdist import errors  # noqa: PLC0415
    from nbdist.ops.shape_ops import get_static_value  # noqa: PLC0415

    static = get_static_value(rng)
    if static is None:
        return
    if select == "v" and not static[0] < static[1]:
        raise errors.InvalidArgumentError(
            None, None, f"Got empty interval in select_range: {static.tolist()}"
        )
    if select == "i" and not static[0] <= static[1]:
        raise errors.InvalidArgumentError(
            None, None, f"Got empty index range in select_range: {static.tolist()}"
        )


def eigh_tridiagonal(alpha, beta, eigvals_only=True, select="a", select_range=None, tol=None, name=None):
    """`tf.linalg.eigh_tridiagonal`: the eigenvalues (ascending) of the Hermitian tridiagonal
    matrix with diagonal `alpha` ``[n]`` and superdiagonal `beta` ``[n-1]``, and the
    eigenvectors as columns when not `eigvals_only`. `select`: 'a' all, 'v' those in
    ``(select_range[0], select_range[1]]``, 'i' those of indices ``select_range[0] ..
    select_range[1]``. `tol` is accepted (SciPy's LAPACK picks its own).

    Raises:
        ValueError: a `select` other than 'a', 'v', 'i', or shapes TF refuses.
    """
    from nbdist.ops.constant_op import constant  # noqa: PLC0415

    with get_default_graph().name_scope(name or "eigh_tridiagonal"):
        alpha = convert_to_tensor(alpha, name="alpha")
        beta = convert_to_tensor(beta, name="beta")
        if alpha.shape.ndims is not None and alpha.shape.ndims != 1:
            raise ValueError(
                f"alpha must be a vector (it has no batch dimensions in TF), got shape {alpha.shape}"
            )
        n, nb = alpha.shape.dims[0], beta.shape.dims[0] if beta.shape.ndims else None
        if n is not None and nb is not None and nb != n - 1:
            raise ValueError(f"beta must have one element fewer than alpha: got {nb} and {n}")
        if n is not None and n <= 1:
            from nbdist.ops.complex_ops import real  # noqa: PLC0415

            return real(alpha) if alpha.dtype.is_complex else alpha + 0  # (TF's, vectors or not)
        if alpha.dtype != beta.dtype:
            raise ValueError("'alpha' and 'beta' must have the same type.")
        if select not in ("a", "v", "i"):
            raise ValueError("'select must have a value in {'a', 'i', 'v'}.")
        if select == "a":
            rng = constant([0, 0], dtype=_dtypes.float64)
        else:
            if select_range is None:
                raise ValueError(f"select={select!r} needs select_range, a pair (min, max)")
            rng = convert_to_tensor(
                select_range, dtype=_dtypes.int32 if select == "i" else alpha.dtype.real_dtype
            )
            _check_static_range(select, rng)
        op = registry.make_op("EighTridiagonal", [alpha, beta, rng], {"select": select})
        if select == "i":
            from nbdist.ops.shape_ops import get_static_value  # noqa: PLC0415

            static = get_static_value(rng)
            if static is not None:
                count = int(static[1]) - int(static[0]) + 1
                op.outputs[0].set_shape([count])
                op.outputs[1].set_shape([n, count])
        return op.outputs[0] if eigvals_only else (op.outputs[0], op.outputs[1])
