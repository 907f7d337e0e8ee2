"""`tf.matmul`: constructor, shapes, kernels and gradients side by side. Rank 2 is TF's
``MatMul`` (transpose flags); a higher rank is TF's ``BatchMatMulV2`` (adjoint flags, the batch
dimensions broadcast as numpy's ``@``), as TF 1.x's `tf.matmul` chooses."""

import numpy as np

from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops._shapes import broadcast_shape, invalid_argument, tf_dims
from nbdist.ops.broadcast_ops import sum_to_shape
from nbdist.ops.constant_op import convert_n


@registry.shape("MatMul")
def _matmul_shape(inputs, attrs):
    a, b = inputs
    if a.dtype != b.dtype:
        raise TypeError(f"MatMul inputs must have one dtype, got {a.dtype.name} and {b.dtype.name}")
    for t in (a, b):
        if t.shape.ndims not in (None, 2):
            raise ValueError(f"MatMul needs rank-2 inputs, {t.name} has shape {t.shape}")
    da = a.shape.dims or [None, None]
    db = b.shape.dims or [None, None]
    if attrs.get("transpose_a"):
        da = da[::-1]
    if attrs.get("transpose_b"):
        db = db[::-1]
    if da[1] is not None and db[0] is not None and da[1] != db[0]:
        raise ValueError(
            f"MatMul: inner dimensions differ: {a.name} {a.shape} x {b.name} {b.shape} "
            f"(transpose_a={attrs.get('transpose_a')}, transpose_b={attrs.get('transpose_b')})"
        )
    return [(a.dtype, TensorShape([da[0], db[1]]))]


@registry.kernel("MatMul")
def _matmul_kernel(ctx, node, a, b):
    if node.attr.get("transpose_a"):
        a = a.T
    if node.attr.get("transpose_b"):
        b = b.T
    return a @ b


@registry.gradient("MatMul")
def _matmul_grad(op, grad):
    a, b = op.inputs
    ta, tb = op.get_attr("transpose_a"), op.get_attr("transpose_b")
    if not ta and not tb:
        return [matmul(grad, b, transpose_b=True), matmul(a, grad, transpose_a=True)]
    if not ta and tb:
        return [matmul(grad, b), matmul(grad, a, transpose_a=True)]
    if ta and not tb:
        return [matmul(b, grad, transpose_b=True), matmul(a, grad)]
    return [
        matmul(b, grad, transpose_a=True, transpose_b=True),
        matmul(grad, a, transpose_a=True, transpose_b=True),
    ]


# -- BatchMatMulV2 ------------------------------------------------------------------------------
@registry.shape("BatchMatMulV2")
def _batch_matmul_shape(inputs, attrs):
    x, y = inputs
    if x.dtype != y.dtype:
        raise TypeError(f"BatchMatMulV2 inputs must have one dtype, got {x.dtype.name} and {y.dtype.name}")
    for t in (x, y):
        if t.shape.ndims is not None and t.shape.ndims < 2:
            raise ValueError(f"In[0] and In[1] must have rank >= 2: {t.name} has shape {t.shape}")
    if x.shape.ndims is None or y.shape.ndims is None:
        return [(x.dtype, TensorShape(None))]
    dx, dy = x.shape.dims, y.shape.dims
    rows, inner_x = (dx[-1], dx[-2]) if attrs.get("adj_x") else (dx[-2], dx[-1])
    inner_y, cols = (dy[-1], dy[-2]) if attrs.get("adj_y") else (dy[-2], dy[-1])
    if inner_x is not None and inner_y is not None and inner_x != inner_y:
        raise ValueError(
            f"Matrix size-incompatible: In[0]: {x.shape}, In[1]: {y.shape} "
            f"(adj_x={bool(attrs.get('adj_x'))}, adj_y={bool(attrs.get('adj_y'))})"
        )
    batch = broadcast_shape(TensorShape(dx[:-2]), TensorShape(dy[:-2]))
    return [(x.dtype, TensorShape([*(batch.dims or []), rows, cols]))]


def _adjoint(m, flag):
    return np.conj(np.swapaxes(m, -1, -2)) if flag else m


@registry.kernel("BatchMatMulV2")
def _batch_matmul_kernel(ctx, node, x, y):
    for i, t in enumerate((x, y)):
        if np.ndim(t) < 2:
            raise invalid_argument(node, f"In[{i}] ndims must be >= 2: {np.ndim(t)}")
    adj_x, adj_y = bool(node.attr.get("adj_x")), bool(node.attr.get("adj_y"))
    x, y = _adjoint(x, adj_x), _adjoint(y, adj_y)
    try:
        np.broadcast_shapes(x.shape[:-2], y.shape[:-2])
    except ValueError:
        raise invalid_argument(
            node,
            f"In[0] and In[1] must have compatible batch dimensions: {tf_dims(x.shape)} vs. "
            f"{tf_dims(y.shape)}",
        ) from None
    if x.shape[-1] != y.shape[-2]:
        raise invalid_argument(
            node,
            f"Matrix size-incompatible: In[0]: {tf_dims(x.shape)}, In[1]: {tf_dims(y.shape)} "
            f"{int(adj_x)} {int(adj_y)}",
        )
    return np.matmul(x, y)


@registry.gradient("BatchMatMulV2")
def _batch_matmul_grad(op, grad):
    x, y = op.inputs
    adj_x, adj_y = op.get_attr("adj_x"), op.get_attr("adj_y")
    if not adj_x and not adj_y:
        gx, gy = matmul(grad, y, adjoint_b=True), matmul(x, grad, adjoint_a=True)
    elif not adj_x:
        gx, gy = matmul(grad, y), matmul(grad, x, adjoint_a=True)
    elif not adj_y:
        gx, gy = matmul(y, grad, adjoint_b=True), matmul(x, grad)
    else:
        gx, gy = (
            matmul(y, grad, adjoint_a=True, adjoint_b=True),
            matmul(grad, x, adjoint_a=True, adjoint_b=True),
        )
    return [sum_to_shape(gx, x), sum_to_shape(gy, y)]


def _batched(t):
    """TF's choice of ``BatchMatMulV2``: a rank above 2, or unknown."""
    return t.shape.ndims is None or t.shape.ndims > 2


def _conj(t):
    """`t`'s complex conjugate (the ``Conj`` op of ops/complex_ops.py); `t` for a real dtype."""
    return registry.make_op("Conj", [t]).outputs[0] if t.dtype.is_complex else t


def matmul(
    a,
    b,
    transpose_a=False,
    transpose_b=False,
    adjoint_a=False,
    adjoint_b=False,
    a_is_sparse=False,
    b_is_sparse=False,
    name=None,
):
    """`tf.matmul`: ``a @ b`` with TF's transpose / adjoint flags (at most one of each pair);
    rank 2 is a ``MatMul``, a higher rank a ``BatchMatMulV2`` whose batch dimensions broadcast.
    (`a_is_sparse` / `b_is_sparse` are hints, accepted.)

    Raises:
        ValueError: both `transpose_a` and `adjoint_a` (or the b pair), TF's words.
    """
    for side, transpose, adjoint in (("a", transpose_a, adjoint_a), ("b", transpose_b, adjoint_b)):
        if transpose and adjoint:
            raise ValueError(
                f"Only one of `transpose_{side}` and `adjoint_{side}` can be True. Received "
                f"`transpose_{side}`={transpose}, `adjoint_{side}`={adjoint}."
            )
    a, b = convert_n([a, b])
    if _batched(a) or _batched(b):
        if transpose_a and a.dtype.is_complex:
            a = _conj(a)  # a transpose is the adjoint of the conjugate
        if transpose_b and b.dtype.is_complex:
            b = _conj(b)
        attrs = {"adj_x": bool(transpose_a or adjoint_a), "adj_y": bool(transpose_b or adjoint_b)}
        return registry.make_op("BatchMatMulV2", [a, b], attrs, name=name).outputs[0]
    if adjoint_a:
        a = _conj(a)
    if adjoint_b:
        b = _conj(b)
    attrs = {"transpose_a": bool(transpose_a or adjoint_a), "transpose_b": bool(transpose_b or adjoint_b)}
    return registry.make_op("MatMul", [a, b], attrs, name=name).outputs[0]
