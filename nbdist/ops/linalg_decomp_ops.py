"""Decompositions and norms, batched over leading dimensions as TF's: `tf.qr`, `tf.svd`,
`tf.self_adjoint_eig` / `self_adjoint_eigvals`, `tf.linalg.lu`, `tf.cross` (with its gradient),
`tf.norm` and `tf.linalg.normalize`, `pinv`, `matrix_rank`, `adjoint` (numpy's LAPACK kernels:
the decompositions' signs may differ from TF's, their products do not)."""

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import get_default_graph
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops._shapes import broadcast_shape, invalid_argument
from nbdist.ops.constant_op import convert_n, convert_to_tensor
from nbdist.ops.einsum_ops import einsum

__all__ = ["cross", "norm", "qr", "self_adjoint_eig", "self_adjoint_eigvals", "svd"]


def _dims(x):
    """``(batch dims, m, n)`` of a static shape, or None when the rank is unknown."""
    if x.shape.ndims is None:
        return None
    if x.shape.ndims < 2:
        raise ValueError(f"{x.name} must be at least a matrix, got shape {x.shape}")
    return x.shape.dims[:-2], x.shape.dims[-2], x.shape.dims[-1]


def _min(a, b):
    return None if a is None or b is None else min(a, b)


def _check_matrices(node, x, square=False):
    if x.ndim < 2 or (square and x.shape[-1] != x.shape[-2]):
        kind = "square matrices" if square else "matrices"
        raise invalid_argument(node, f"{node.op}: input must be {kind}, got shape {list(x.shape)}")


# -- qr --------------------------------------------------------------------------------------------
@registry.shape("Qr")
def _qr_shape(inputs, attrs):
    x, d = inputs[0], _dims(inputs[0])
    if d is None:
        return [(x.dtype, TensorShape(None))] * 2
    batch, m, n = d
    k = m if attrs["full_matrices"] else _min(m, n)
    return [(x.dtype, TensorShape([*batch, m, k])), (x.dtype, TensorShape([*batch, k, n]))]


@registry.kernel("Qr")
def _qr_kernel(ctx, node, x):
    _check_matrices(node, x)
    q, r = np.linalg.qr(x, mode="complete" if node.attr["full_matrices"] else "reduced")
    return q.astype(x.dtype), r.astype(x.dtype)


def qr(input, full_matrices=False, name=None):  # noqa: A002 - TF's argument name
    """`tf.qr` (`tf.linalg.qr`): ``(q, r)``, ``q`` orthonormal columns, ``r`` upper triangular."""
    op = registry.make_op(
        "Qr", [convert_to_tensor(input)], {"full_matrices": bool(full_matrices)}, name=name or "Qr"
    )
    return op.outputs[0], op.outputs[1]


# -- svd -------------------------------------------------------------------------------------------
@registry.shape("Svd")
def _svd_shape(inputs, attrs):
    x, d = inputs[0], _dims(inputs[0])
    if d is None:
        return [(x.dtype, TensorShape(None))] * 3
    batch, m, n = d
    k = _min(m, n)
    if not attrs["compute_uv"]:
        return [(x.dtype, TensorShape([*batch, k])), (x.dtype, TensorShape([0])), (x.dtype, TensorShape([0]))]
    full = attrs["full_matrices"]
    u = TensorShape([*batch, m, m if full else k])
    v = TensorShape([*batch, n, n if full else k])
    return [(x.dtype, TensorShape([*batch, k])), (x.dtype, u), (x.dtype, v)]


@registry.kernel("Svd")
def _svd_kernel(ctx, node, x):
    _check_matrices(node, x)
    if not node.attr["compute_uv"]:
        empty = np.zeros((0,), x.dtype)
        return np.linalg.svd(x, compute_uv=False).astype(x.dtype), empty, empty
    u, s, vh = np.linalg.svd(x, full_matrices=node.attr["full_matrices"])
    return s.astype(x.dtype), u.astype(x.dtype), np.swapaxes(vh, -1, -2).conj().astype(x.dtype)


def svd(tensor, full_matrices=False, compute_uv=True, name=None):
    """`tf.svd` (`tf.linalg.svd`): ``(s, u, v)`` with ``tensor = u diag(s) v^H`` (TF's order: `s`
    first, `v` not transposed), or only `s` when not `compute_uv`; `s` descending."""
    attrs = {"full_matrices": bool(full_matrices), "compute_uv": bool(compute_uv)}
    op = registry.make_op("Svd", [convert_to_tensor(tensor)], attrs, name=name or "Svd")
    return tuple(op.outputs) if compute_uv else op.outputs[0]


# -- self-adjoint eigen-decomposition ----------------------------------------------------------------
@registry.shape("SelfAdjointEigV2")
def _eig_shape(inputs, attrs):
    x, d = inputs[0], _dims(inputs[0])
    if d is None:
        return [(x.dtype, TensorShape(None))] * 2
    batch, m, _ = d
    v = TensorShape([*batch, m, m]) if attrs["compute_v"] else TensorShape([0])
    return [(x.dtype, TensorShape([*batch, m])), (x.dtype, v)]


@registry.kernel("SelfAdjointEigV2")
def _eig_kernel(ctx, node, x):
    _check_matrices(node, x, square=True)
    if not node.attr["compute_v"]:
        return np.linalg.eigvalsh(x).astype(x.dtype), np.zeros((0,), x.dtype)
    e, v = np.linalg.eigh(x)
    return e.astype(x.dtype), v.astype(x.dtype)


def self_adjoint_eig(tensor, name=None):
    """`tf.self_adjoint_eig` (`tf.linalg.eigh`): ``(e, v)``, eigenvalues ascending and the
    eigenvectors as columns, from the lower triangle."""
    op = registry.make_op("SelfAdjointEigV2", [convert_to_tensor(tensor)], {"compute_v": True}, name=name)
    return op.outputs[0], op.outputs[1]


def self_adjoint_eigvals(tensor, name=None):
    """`tf.self_adjoint_eigvals` (`tf.linalg.eigvalsh`): the eigenvalues, ascending."""
    op = registry.make_op("SelfAdjointEigV2", [convert_to_tensor(tensor)], {"compute_v": False}, name=name)
    return op.outputs[0]


# -- lu --------------------------------------------------------------------------------------------
@registry.shape("Lu")
def _lu_shape(inputs, attrs):
    x, d = inputs[0], _dims(inputs[0])
    return [(x.dtype, x.shape), (attrs["output_idx_type"], TensorShape(None if d is None else [*d[0], d[1]]))]


def _lu_one(a):
    """Doolittle with partial pivoting (LAPACK's getrf's choices): ``a[p] = L U``."""
    a, n = a.copy(), a.shape[-1]
    perm = np.arange(n)
    for k in range(n):
        piv = k + int(np.argmax(np.abs(a[k:, k])))
        if piv != k:
            a[[k, piv]], perm[[k, piv]] = a[[piv, k]], perm[[piv, k]]
        if a[k, k] != 0:
            a[k + 1 :, k] /= a[k, k]
            a[k + 1 :, k + 1 :] -= np.outer(a[k + 1 :, k], a[k, k + 1 :])
    return a, perm


@registry.kernel("Lu")
def _lu_kernel(ctx, node, x):
    _check_matrices(node, x, square=True)
    flat = x.reshape(-1, *x.shape[-2:]).astype(x.dtype, copy=True)
    pairs = [_lu_one(m) for m in flat]
    lu_ = np.stack([p[0] for p in pairs]).reshape(x.shape) if pairs else flat.reshape(x.shape)
    perm = np.stack([p[1] for p in pairs]) if pairs else np.zeros((0, x.shape[-1]), int)
    return lu_, perm.reshape(x.shape[:-1]).astype(node.attr["output_idx_type"].np)


def lu(input, output_idx_type=_dtypes.int32, name=None):  # noqa: A002 - TF's argument name
    """`tf.linalg.lu`: ``(lu, p)``, ``L`` (unit diagonal, below) and ``U`` in one matrix, and the
    row permutation ``p`` with ``input[p] = L U``."""
    attrs = {"output_idx_type": _dtypes.as_dtype(output_idx_type)}
    op = registry.make_op("Lu", [convert_to_tensor(input)], attrs, name=name or "Lu")
    return op.outputs[0], op.outputs[1]


# -- cross -----------------------------------------------------------------------------------------
@registry.shape("Cross")
def _cross_shape(inputs, attrs):
    a, b = inputs
    for t in (a, b):
        if t.shape.ndims is not None and t.shape.dims[-1] not in (None, 3):
            raise ValueError(f"tf.cross: the last dimension of {t.name} must be 3, got shape {t.shape}")
    return [(a.dtype, broadcast_shape(a.shape, b.shape))]


registry.kernel("Cross")(lambda ctx, node, a, b: np.cross(a, b).astype(a.dtype))
registry.gradient("Cross")(lambda op, grad: [cross(op.inputs[1], grad), cross(grad, op.inputs[0])])


def cross(a, b, name=None):
    """`tf.cross` (`tf.linalg.cross`): the cross product of vectors of 3 along the last axis."""
    return registry.make_op("Cross", convert_n([a, b]), name=name or "Cross").outputs[0]


# -- norms -----------------------------------------------------------------------------------------
def _vector_norm(x, ord, axis):  # noqa: A002 - TF's argument name
    from nbdist.ops.math_ops import pow as tf_pow  # noqa: PLC0415
    from nbdist.ops.reduction_ops import reduce_max, reduce_sum  # noqa: PLC0415
    from nbdist.ops.unary_ops import abs as tf_abs  # noqa: PLC0415
    from nbdist.ops.unary_ops import sqrt  # noqa: PLC0415

    if ord in ("euclidean", "fro", 2, 2.0):
        return sqrt(reduce_sum(x * x, axis=axis, keepdims=True))
    if ord == 1:
        return reduce_sum(tf_abs(x), axis=axis, keepdims=True)
    if ord == np.inf:
        return reduce_max(tf_abs(x), axis=axis, keepdims=True)
    return tf_pow(reduce_sum(tf_pow(tf_abs(x), float(ord)), axis=axis, keepdims=True), 1.0 / ord)


def _matrix_norm(x, ord, rows, cols):  # noqa: A002 - TF's argument name
    from nbdist.ops.reduction_ops import reduce_max, reduce_sum  # noqa: PLC0415
    from nbdist.ops.reshape_ops import expand_dims, transpose  # noqa: PLC0415
    from nbdist.ops.unary_ops import abs as tf_abs  # noqa: PLC0415

    if ord in ("euclidean", "fro"):
        return _vector_norm(x, "euclidean", [rows, cols])
    if ord == 1:
        return reduce_max(reduce_sum(tf_abs(x), axis=rows, keepdims=True), axis=cols, keepdims=True)
    if ord == np.inf:
        return reduce_max(reduce_sum(tf_abs(x), axis=cols, keepdims=True), axis=rows, keepdims=True)
    n = x.shape.ndims
    perm = [i for i in range(n) if i not in (rows, cols)] + [rows, cols]
    largest = reduce_max(svd(transpose(x, perm), compute_uv=False), axis=-1)
    for axis in sorted((rows, cols)):
        largest = expand_dims(largest, axis)
    return largest


def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None, keep_dims=None):  # noqa: A002 - TF's
    """`tf.norm` (`tf.linalg.norm`): a vector norm over `axis` (None: the whole tensor as one
    vector; ``ord`` ``'euclidean'``, 1, 2, ``np.inf`` or any ``p > 0``) or a matrix norm over a
    pair of axes (``'fro'`` / ``'euclidean'``, 1, ``np.inf``, 2: the largest singular value).

    Raises:
        ValueError: an `ord` or `axis` TF refuses.
    """
    from nbdist.ops.reshape_ops import reshape, squeeze  # noqa: PLC0415

    keepdims = bool(keepdims if keepdims is not None else keep_dims)
    x = convert_to_tensor(tensor, name="tensor")
    matrix = isinstance(axis, (list, tuple)) and len(axis) == 2
    if isinstance(axis, (list, tuple)) and not matrix:
        raise ValueError(f"tf.norm: 'axis' must be None, an integer or a pair of integers, got {axis!r}")
    if matrix and ord not in ("euclidean", "fro", 1, 2, np.inf):
        raise ValueError(f"tf.norm: 'ord' must be a supported matrix norm, got {ord!r}")
    if not matrix and (ord == "fro" or (not isinstance(ord, str) and ord <= 0)):
        raise ValueError(f"tf.norm: 'ord' must be a supported vector norm, got {ord!r}")
    if (matrix or axis is None) and x.shape.ndims is None:
        raise ValueError("tf.norm: nbdist needs the tensor's rank statically for this axis")
    with get_default_graph().name_scope(name or "norm"):
        if axis is None:
            result = _vector_norm(reshape(x, [-1]), ord, 0)
            return reshape(result, [1] * x.shape.ndims) if keepdims else reshape(result, [])
        if matrix:
            rows, cols = (a % x.shape.ndims for a in axis)
            result = _matrix_norm(x, ord, rows, cols)
            return result if keepdims else squeeze(result, [rows, cols])
        result = _vector_norm(x, ord, axis)
        return result if keepdims else squeeze(result, [axis])


def normalize(tensor, ord="euclidean", axis=None, name=None):  # noqa: A002 - TF's argument name
    """`tf.linalg.normalize`: ``(tensor / norm, norm)``, the norm kept with its reduced axes."""
    with get_default_graph().name_scope(name or "normalize"):
        x = convert_to_tensor(tensor, name="tensor")
        n = norm(x, ord=ord, axis=axis, keepdims=True)
        return x / n, n


# -- pinv / matrix_rank / adjoint ------------------------------------------------------------------
def _eps_times_size(x, s, scale):
    d = _dims(x)
    if d is None or None in d[1:]:
        raise ValueError("nbdist needs the matrices' last two dimensions statically")
    return scale * max(d[1], d[2]) * np.finfo(x.dtype.np).eps


def pinv(a, rcond=None, validate_args=False, name=None):
    """`tf.linalg.pinv`: the Moore-Penrose pseudo-inverse from the SVD, singular values at most
    ``rcond * max(s)`` dropped (TF's default ``rcond``: ``10 * max(m, n) * eps``)."""
    from nbdist.ops.cast_select_ops import ones_like, where  # noqa: PLC0415
    from nbdist.ops.reduction_ops import reduce_max  # noqa: PLC0415

    with get_default_graph().name_scope(name or "pinv"):
        a = convert_to_tensor(a, name="a")
        s, u, v = svd(a, full_matrices=False)
        rcond = _eps_times_size(a, s, 10.0) if rcond is None else rcond
        cutoff = rcond * reduce_max(s, axis=-1, keepdims=True)
        s = where(s > cutoff, s, ones_like(s) * np.inf)
        return einsum("...nk,...k,...mk->...nm", v, 1.0 / s, u)


def matrix_rank(a, tol=None, validate_args=False, name=None):
    """`tf.linalg.matrix_rank`: the number of singular values above `tol` (TF's default:
    ``max(s) * max(m, n) * eps``)."""
    from nbdist.ops.cast_select_ops import cast  # noqa: PLC0415
    from nbdist.ops.reduction_ops import reduce_max, reduce_sum  # noqa: PLC0415

    with get_default_graph().name_scope(name or "matrix_rank"):
        a = convert_to_tensor(a, name="a")
        s = svd(a, compute_uv=False)
        if tol is None:
            tol = _eps_times_size(a, s, 1.0) * reduce_max(s, axis=-1, keepdims=True)
        return reduce_sum(cast(s > tol, _dtypes.int64), axis=-1)


def adjoint(matrix, name=None):
    """`tf.linalg.adjoint`: the conjugate transpose of the last two dimensions."""
    from nbdist.ops.linalg_ops import matrix_transpose  # noqa: PLC0415

    return matrix_transpose(matrix, name=name or "adjoint", conjugate=True)
