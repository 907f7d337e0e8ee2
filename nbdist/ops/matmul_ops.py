"""`tf.matmul`: constructor, shape, kernel and gradient side by side (rank 2, TF's transpose flags)."""

from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
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


def matmul(a, b, transpose_a=False, transpose_b=False, name=None):
    """`tf.matmul` for rank-2 tensors, with TF's transpose flags."""
    a, b = convert_n([a, b])
    attrs = {"transpose_a": bool(transpose_a), "transpose_b": bool(transpose_b)}
    return registry.make_op("MatMul", [a, b], attrs, name=name).outputs[0]
