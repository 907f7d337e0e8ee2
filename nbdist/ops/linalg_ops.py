"""Small linear algebra, TF 1.x's top-level names: `eye`, `trace`, `diag` / `diag_part`,
`matrix_diag` / `matrix_diag_part`, `matrix_transpose`, `matrix_inverse`, `matrix_determinant`
(batched over leading dimensions, as TF's), with TF's gradients."""

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops._shapes import invalid_argument
from nbdist.ops.constant_op import constant, convert_to_tensor


def _square_batch(x, what):
    if x.shape.ndims is not None:
        if x.shape.ndims < 2:
            raise ValueError(f"{what}: {x.name} must be at least a matrix, got shape {x.shape}")
        n, m = x.shape.dims[-2:]
        if n is not None and m is not None and n != m:
            raise ValueError(f"{what}: {x.name} must be square in its last two dimensions, got {x.shape}")


def _check_square(node, x):
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise invalid_argument(node, f"{node.op}: input must be square matrices, got shape {list(x.shape)}")


# -- matrix_transpose ------------------------------------------------------------------------------
def matrix_transpose(a, name="matrix_transpose", conjugate=False):
    """`tf.matrix_transpose`: swaps the last two dimensions."""
    from nbdist.ops.reshape_ops import transpose  # noqa: PLC0415 - a thin wrapper over it
    from nbdist.ops.shape_ops import rank  # noqa: PLC0415

    a = convert_to_tensor(a)
    if a.shape.ndims is None:
        from nbdist.ops.concat_slice_ops import concat  # noqa: PLC0415
        from nbdist.ops.math_ops import range as tf_range  # noqa: PLC0415

        n = rank(a)
        perm = concat([tf_range(n - 2), [n - 1, n - 2]], 0)
    else:
        if a.shape.ndims < 2:
            raise ValueError(f"tf.matrix_transpose: {a.name} must be at least a matrix, got shape {a.shape}")
        perm = [*range(a.shape.ndims - 2), a.shape.ndims - 1, a.shape.ndims - 2]
    return transpose(a, perm, name=name)


# -- trace -----------------------------------------------------------------------------------------
def trace(x, name=None):
    """`tf.trace`: the sum of each matrix's diagonal (over the last two dimensions)."""
    from nbdist.ops.reduction_ops import reduce_sum  # noqa: PLC0415

    return reduce_sum(matrix_diag_part(x), axis=-1, name=name or "Trace")


# -- matrix_diag / matrix_diag_part ------------------------------------------------------------------
@registry.shape("MatrixDiag")
def _matrix_diag_shape(inputs, attrs):
    d = inputs[0].shape
    if d.ndims is None:
        return [(inputs[0].dtype, TensorShape(None))]
    return [(inputs[0].dtype, TensorShape([*d.dims, d.dims[-1]]))]


@registry.kernel("MatrixDiag")
def _matrix_diag_kernel(ctx, node, d):
    n = d.shape[-1]
    out = np.zeros((*d.shape, n), d.dtype)
    idx = np.arange(n)
    out[..., idx, idx] = d
    return out


@registry.shape("MatrixDiagPart")
def _matrix_diag_part_shape(inputs, attrs):
    x = inputs[0].shape
    if x.ndims is None:
        return [(inputs[0].dtype, TensorShape(None))]
    n, m = x.dims[-2:]
    k = None if n is None or m is None else min(n, m)
    return [(inputs[0].dtype, TensorShape([*x.dims[:-2], k]))]


registry.kernel("MatrixDiagPart")(lambda ctx, node, x: np.diagonal(x, axis1=-2, axis2=-1).copy())
registry.gradient("MatrixDiag")(lambda op, grad: [matrix_diag_part(grad)])


@registry.gradient("MatrixDiagPart")
def _matrix_diag_part_grad(op, grad):
    x = op.inputs[0]
    if x.shape.ndims is not None and x.shape.dims[-1] == x.shape.dims[-2] and x.shape.dims[-1] is not None:
        return [matrix_diag(grad)]
    from nbdist.ops.cast_select_ops import zeros_like  # noqa: PLC0415

    return [matrix_set_diag(zeros_like(x), grad)]


registry.shape("MatrixSetDiag")(lambda inputs, attrs: [(inputs[0].dtype, inputs[0].shape)])


@registry.kernel("MatrixSetDiag")
def _matrix_set_diag_kernel(ctx, node, x, d):
    out = np.array(x, copy=True)
    k = min(x.shape[-2:])
    idx = np.arange(k)
    out[..., idx, idx] = d
    return out


@registry.gradient("MatrixSetDiag")
def _matrix_set_diag_grad(op, grad):
    from nbdist.ops.cast_select_ops import zeros_like  # noqa: PLC0415

    return [matrix_set_diag(grad, zeros_like(matrix_diag_part(grad))), matrix_diag_part(grad)]


def matrix_diag(diagonal, name=None):
    """`tf.matrix_diag`: matrices with `diagonal`'s last dimension on their diagonals."""
    return registry.make_op("MatrixDiag", [convert_to_tensor(diagonal)], name=name or "MatrixDiag").outputs[0]


def matrix_diag_part(input, name=None):  # noqa: A002 - TF's argument name
    """`tf.matrix_diag_part`: the diagonals of the last two dimensions."""
    x = convert_to_tensor(input)
    if x.shape.ndims is not None and x.shape.ndims < 2:
        raise ValueError(f"tf.matrix_diag_part: {x.name} must be at least a matrix, got shape {x.shape}")
    return registry.make_op("MatrixDiagPart", [x], name=name or "MatrixDiagPart").outputs[0]


def matrix_set_diag(input, diagonal, name=None):  # noqa: A002 - TF's argument name
    """`tf.matrix_set_diag`: `input` with its diagonals replaced by `diagonal`."""
    inputs = [convert_to_tensor(input), convert_to_tensor(diagonal)]
    return registry.make_op("MatrixSetDiag", inputs, name=name or "MatrixSetDiag").outputs[0]


# -- diag / diag_part (any rank k <-> 2k) -----------------------------------------------------------
@registry.shape("Diag")
def _diag_shape(inputs, attrs):
    d = inputs[0].shape
    return [(inputs[0].dtype, TensorShape(None if d.ndims is None else [*d.dims, *d.dims]))]


@registry.kernel("Diag")
def _diag_kernel(ctx, node, d):
    flat = d.ravel()
    return np.diag(flat).reshape((*d.shape, *d.shape)) if d.ndim else d


@registry.shape("DiagPart")
def _diag_part_shape(inputs, attrs):
    x = inputs[0].shape
    if x.ndims is not None and x.ndims % 2:
        raise ValueError(f"tf.diag_part: the rank of {inputs[0].name} must be even, got {x.ndims}")
    return [(inputs[0].dtype, TensorShape(None if x.ndims is None else x.dims[: x.ndims // 2]))]


@registry.kernel("DiagPart")
def _diag_part_kernel(ctx, node, x):
    k = x.ndim // 2
    if x.ndim % 2 or x.shape[:k] != x.shape[k:]:
        raise invalid_argument(node, f"DiagPart: input must have shape [D1..Dk, D1..Dk], got {list(x.shape)}")
    size = int(np.prod(x.shape[:k]))
    return np.diagonal(x.reshape(size, size)).reshape(x.shape[:k]).copy()


registry.gradient("Diag")(lambda op, grad: [diag_part(grad)])
registry.gradient("DiagPart")(lambda op, grad: [diag(grad)])


def diag(diagonal, name=None):
    """`tf.diag`: the tensor of rank 2k with `diagonal` (rank k) on its diagonal."""
    return registry.make_op("Diag", [convert_to_tensor(diagonal)], name=name or "Diag").outputs[0]


def diag_part(input, name=None):  # noqa: A002 - TF's argument name
    """`tf.diag_part`: the diagonal of a tensor of rank 2k."""
    return registry.make_op("DiagPart", [convert_to_tensor(input)], name=name or "DiagPart").outputs[0]


# -- eye -------------------------------------------------------------------------------------------
def eye(num_rows, num_columns=None, batch_shape=None, dtype=_dtypes.float32, name=None):
    """`tf.eye`: identity matrices (a Python size: a constant, as TF folds it)."""
    dtype = _dtypes.as_dtype(dtype)
    cols = num_rows if num_columns is None else num_columns
    if not all(isinstance(v, (int, np.integer)) for v in (num_rows, cols)):
        raise TypeError("tf.eye: nbdist needs Python ints for num_rows / num_columns")
    value = np.eye(num_rows, cols, dtype=dtype.np)
    if batch_shape is not None:
        value = np.broadcast_to(value, (*batch_shape, num_rows, cols)).copy()
    return constant(value, dtype=dtype, name=name or "eye")


# -- matrix_inverse / matrix_determinant -------------------------------------------------------------
@registry.shape("MatrixInverse")
def _inverse_shape(inputs, attrs):
    _square_batch(inputs[0], "tf.matrix_inverse")
    return [(inputs[0].dtype, inputs[0].shape)]


@registry.kernel("MatrixInverse")
def _inverse_kernel(ctx, node, x):
    _check_square(node, x)
    a = np.swapaxes(x, -1, -2).conj() if node.attr.get("adjoint") else x
    try:
        return np.linalg.inv(a).astype(x.dtype)
    except np.linalg.LinAlgError:
        raise invalid_argument(node, "Input is not invertible.") from None


@registry.gradient("MatrixInverse")
def _inverse_grad(op, grad):
    attrs = {"adjoint": op.get_attr("adjoint")}
    return [
        registry.make_op("MatrixInverseGrad", [op.outputs[0], grad], attrs, name="MatrixInverseGrad").outputs[
            0
        ]
    ]


registry.shape("MatrixInverseGrad")(lambda inputs, attrs: [(inputs[0].dtype, inputs[0].shape)])
registry.no_gradient("MatrixInverseGrad")


@registry.kernel("MatrixInverseGrad")
def _inverse_grad_kernel(ctx, node, inv, grad):
    """TF's gradient of the inverse, batched: ``-inv^H g inv^H`` (``-inv g^H inv`` for adjoint=True)."""
    if node.attr.get("adjoint"):
        return -(inv @ np.swapaxes(grad, -1, -2).conj() @ inv)
    inv_h = np.swapaxes(inv, -1, -2).conj()
    return -(inv_h @ grad @ inv_h)


def matrix_inverse(input, adjoint=False, name=None):  # noqa: A002 - TF's argument name
    """`tf.matrix_inverse` (`tf.linalg.inv`): the inverse of each square matrix; a singular one is
    an `InvalidArgumentError` ("Input is not invertible.", as TF's)."""
    attrs = {"adjoint": bool(adjoint)}
    return registry.make_op(
        "MatrixInverse", [convert_to_tensor(input)], attrs, name=name or "MatrixInverse"
    ).outputs[0]


@registry.shape("MatrixDeterminant")
def _determinant_shape(inputs, attrs):
    x = inputs[0]
    _square_batch(x, "tf.matrix_determinant")
    return [(x.dtype, TensorShape(None if x.shape.ndims is None else x.shape.dims[:-2]))]


@registry.kernel("MatrixDeterminant")
def _determinant_kernel(ctx, node, x):
    _check_square(node, x)
    return np.asarray(np.linalg.det(x), dtype=x.dtype)


@registry.gradient("MatrixDeterminant")
def _determinant_grad(op, grad):
    from nbdist.ops.reshape_ops import expand_dims  # noqa: PLC0415

    a, det = op.inputs[0], op.outputs[0]
    scale = expand_dims(expand_dims(grad * det, -1), -1)
    return [scale * matrix_transpose(matrix_inverse(a))]


def matrix_determinant(input, name=None):  # noqa: A002 - TF's argument name
    """`tf.matrix_determinant` (`tf.linalg.det`): the determinant of each square matrix."""
    x = convert_to_tensor(input)
    return registry.make_op("MatrixDeterminant", [x], name=name or "MatrixDeterminant").outputs[0]


__all__ = [
    "diag",
    "diag_part",
    "eye",
    "matrix_determinant",
    "matrix_diag",
    "matrix_diag_part",
    "matrix_inverse",
    "matrix_set_diag",
    "matrix_transpose",
    "trace",
]
