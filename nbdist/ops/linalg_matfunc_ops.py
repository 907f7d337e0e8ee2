"""Matrix functions, batched over leading dimensions as TF's: `tf.linalg.expm`,
`tf.linalg.logm`, `tf.linalg.sqrtm` (`tf.matrix_square_root`), with TF's gradients where TF has
them (none for `logm`, as TF).

The kernels are SciPy's (`scipy.linalg`, imported when a kernel first runs, as
ops/special_math_ops.py does), one matrix at a time.
"""

import warnings

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import get_default_graph
from nbdist.ops import registry
from nbdist.ops._shapes import invalid_argument
from nbdist.ops.constant_op import convert_to_tensor

__all__ = ["matrix_square_root"]  # (the top-level name; tf.linalg takes expm, logm, sqrtm by name)

_FLOATS = (_dtypes.float16, _dtypes.float32, _dtypes.float64, _dtypes.complex64, _dtypes.complex128)
_COMPLEX = (_dtypes.complex64, _dtypes.complex128)


def _scipy_linalg():
    import scipy.linalg  # noqa: PLC0415 - SciPy loads when a matrix function first runs

    return scipy.linalg


def _square_shape(inputs, attrs):
    x = inputs[0]
    if x.shape.ndims is not None:
        if x.shape.ndims < 2:
            raise ValueError(f"{x.name} must be at least a matrix, got shape {x.shape}")
        m, n = x.shape.dims[-2:]
        if m is not None and n is not None and m != n:
            raise ValueError(f"{x.name} must be a batch of square matrices, got shape {x.shape}")
    return [(x.dtype, x.shape)]


def _per_matrix(node, x, fn):
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise invalid_argument(node, f"{node.op}: input must be square matrices, got shape {list(x.shape)}")
    if x.size == 0:
        return x.copy()
    flat = x.reshape(-1, *x.shape[-2:])
    out = np.empty(flat.shape, x.dtype)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # (SciPy's "singular matrix" notes: TF answers NaN silently)
        for i, m in enumerate(flat):
            value = fn(m.astype(np.complex128 if x.dtype.kind == "c" else np.float64))
            out[i] = value.real if x.dtype.kind != "c" else value
    return out.reshape(x.shape)


def _schur_blocks(t):
    """``(start, size)`` of the 1x1 and 2x2 diagonal blocks of a (real) quasi-triangular `t`."""
    blocks, i, n = [], 0, t.shape[0]
    while i < n:
        size = 2 if i + 1 < n and t[i + 1, i] != 0 else 1
        blocks.append((i, size))
        i += size
    return blocks


def _sqrtm_one(a):
    """The principal square root by the Schur method, as TF's (Eigen's) kernel: ``a = U T U^H``,
    the quasi-triangular ``T``'s root block by block (a real matrix's negative eigenvalue gives
    NaN, a zero sum of diagonal roots an infinite or NaN entry), then ``U R U^H``."""
    linalg = _scipy_linalg()
    t, u = linalg.schur(a, output="complex" if a.dtype.kind == "c" else "real")
    blocks = _schur_blocks(t)
    r = np.zeros_like(t)
    for start, size in blocks:
        part = slice(start, start + size)
        r[part, part] = np.sqrt(t[start, start]) if size == 1 else linalg.sqrtm(t[part, part]).real
    for j, (cj, sj) in enumerate(blocks):
        col = slice(cj, cj + sj)
        for ci, si in reversed(blocks[:j]):
            row = slice(ci, ci + si)
            rhs = t[row, col] - r[row, ci + si : cj] @ r[ci + si : cj, col]
            if si == sj == 1:
                r[row, col] = rhs / (r[ci, ci] + r[cj, cj])
            else:
                r[row, col] = linalg.solve_sylvester(r[row, row], r[col, col], rhs)
    return u @ r @ u.conj().T


def _checked(input, dtypes, op_type, name):  # noqa: A002 - TF's argument name
    x = convert_to_tensor(input, name="input")
    if x.dtype not in dtypes:
        allowed = ", ".join(d.name for d in dtypes)
        raise TypeError(
            f"Value passed to parameter 'input' has DataType {x.dtype.name} not in list of allowed "
            f"values: {allowed} (op {op_type}); cast the input first, e.g. tf.cast(x, tf.{dtypes[-1].name})"
        )
    return x


def _adjoint(x):
    from nbdist.ops.linalg_ops import matrix_transpose  # noqa: PLC0415

    return matrix_transpose(x, conjugate=x.dtype in _COMPLEX)


# -- expm ------------------------------------------------------------------------------------------
registry.shape("MatrixExponential")(_square_shape)


@registry.kernel("MatrixExponential")
def _expm_kernel(ctx, node, x):
    return _per_matrix(node, x, _scipy_linalg().expm)


@registry.gradient("MatrixExponential")
def _expm_grad(op, grad):
    """The Fréchet derivative's adjoint at ``A`` applied to `grad`: the upper-right block of
    ``expm([[A^H, grad], [0, A^H]])`` (Najfeld & Havel 1995)."""
    from nbdist.ops.cast_select_ops import zeros_like  # noqa: PLC0415
    from nbdist.ops.concat_slice_ops import concat  # noqa: PLC0415

    a_h = _adjoint(op.inputs[0])
    n = op.inputs[0].shape.dims[-1] if op.inputs[0].shape.ndims is not None else None
    if n is None:
        raise ValueError("tf.linalg.expm's gradient: nbdist needs the matrices' size statically")
    block = concat([concat([a_h, grad], -1), concat([zeros_like(a_h), a_h], -1)], -2)
    return [expm(block)[..., :n, n:]]


def expm(input, name=None):  # noqa: A002 - TF's argument name
    """`tf.linalg.expm`: the matrix exponential of each square matrix of `input` ``[..., M, M]``
    (float16/32/64, complex64/128), as ``scipy.linalg.expm``."""
    x = convert_to_tensor(input, name="input")
    if x.dtype not in _FLOATS:
        raise ValueError(f"tf.linalg.expm does not support matrices of type <dtype: '{x.dtype.name}'>")
    return registry.make_op("MatrixExponential", [x], name=name or "matrix_exponential").outputs[0]


# -- logm ------------------------------------------------------------------------------------------
registry.shape("MatrixLogarithm")(_square_shape)
registry.no_gradient("MatrixLogarithm")


def _logm_one(m):
    """The principal logarithm (SciPy's); a singular matrix (a zero eigenvalue: no logarithm) is
    all NaN, as TF's kernel answers."""
    linalg = _scipy_linalg()
    t, _ = linalg.schur(m, output="complex")
    if np.any(np.diag(t) == 0):
        return np.full(m.shape, np.nan + 1j * np.nan)
    value = linalg.logm(m)
    return value[0] if isinstance(value, tuple) else value


@registry.kernel("MatrixLogarithm")
def _logm_kernel(ctx, node, x):
    return _per_matrix(node, x, _logm_one)


def logm(input, name=None):  # noqa: A002 - TF's argument name
    """`tf.linalg.logm`: the principal matrix logarithm of each square matrix (complex64 or
    complex128 only, as TF's; no gradient, as TF)."""
    x = _checked(input, _COMPLEX, "MatrixLogarithm", name)
    return registry.make_op("MatrixLogarithm", [x], name=name or "MatrixLogarithm").outputs[0]


# -- sqrtm -----------------------------------------------------------------------------------------
registry.shape("MatrixSquareRoot")(_square_shape)


@registry.kernel("MatrixSquareRoot")
def _sqrtm_kernel(ctx, node, x):
    return _per_matrix(node, x, _sqrtm_one)


@registry.gradient("MatrixSquareRoot")
def _sqrtm_grad(op, grad):
    """TF's: ``A = S S``, so the gradient ``X`` solves the Sylvester equation
    ``S^H X + X S^H = grad``, here as one linear system over the Kronecker sum (row-major vec:
    ``(S^H ⊗ I + I ⊗ S^*) vec X = vec grad``)."""
    from nbdist.ops.einsum_ops import einsum  # noqa: PLC0415
    from nbdist.ops.linalg_ops import eye  # noqa: PLC0415
    from nbdist.ops.linalg_solve_ops import matrix_solve  # noqa: PLC0415
    from nbdist.ops.reshape_ops import reshape  # noqa: PLC0415
    from nbdist.ops.shape_ops import shape  # noqa: PLC0415

    s = op.outputs[0]
    n = s.shape.dims[-1] if s.shape.ndims is not None else None
    if n is None:
        raise ValueError("tf.linalg.sqrtm's gradient: nbdist needs the matrices' size statically")
    s_h = _adjoint(s)
    s_conj = s
    if s.dtype in _COMPLEX:
        from nbdist.ops.complex_ops import conj  # noqa: PLC0415

        s_conj = conj(s)
    ident = eye(n, dtype=s.dtype)
    ksum = einsum("...ik,jl->...ijkl", s_h, ident) + einsum("ik,...jl->...ijkl", ident, s_conj)
    from nbdist.ops.concat_slice_ops import concat  # noqa: PLC0415

    with get_default_graph().name_scope("MatrixSquareRootGrad"):
        batch = shape(s)[:-2]
        ksum = reshape(ksum, concat([batch, [n * n, n * n]], 0))
        vec = reshape(grad, concat([batch, [n * n, 1]], 0))
        return [reshape(matrix_solve(ksum, vec), shape(s))]


def sqrtm(input, name=None):  # noqa: A002 - TF's argument name
    """`tf.linalg.sqrtm` (`tf.matrix_square_root`): the principal square root ``S`` (``S S =
    input``) of each square matrix, as ``scipy.linalg.sqrtm``; real input stays real."""
    x = _checked(input, _FLOATS, "MatrixSquareRoot", name)
    return registry.make_op("MatrixSquareRoot", [x], name=name or "MatrixSquareRoot").outputs[0]


matrix_square_root = sqrtm
