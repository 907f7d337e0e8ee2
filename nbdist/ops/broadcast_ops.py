"""Broadcasting's two gradient ops: `SumToShape` and its inverse `BroadcastToLike`.

Every binary elementwise op broadcasts as numpy does, so its gradient for an input is the
output gradient summed back to that input's shape: `sum_to_shape` is that one helper (it
works with unknown static shapes, reading the shape from the input at run time).
"""

import builtins

import numpy as np

from nbdist.ops import registry


def sum_to_shape(grad, like):
    """`grad` summed over the axes that broadcasting added to `like`'s shape."""
    if grad is None:
        return None
    if grad.shape.ndims is not None and grad.shape == like.shape and like.shape.is_fully_defined():
        return grad
    return registry.make_op("SumToShape", [grad, like]).outputs[0]


registry.shape("SumToShape")(lambda inputs, attrs: [(inputs[0].dtype, inputs[1].shape)])


@registry.kernel("SumToShape")
def _sum_to_shape_kernel(ctx, node, grad, like):
    target = np.shape(like)
    if grad.shape == target:
        return grad
    extra = grad.ndim - len(target)
    # (np.add.reduce is what ndarray.sum calls, without its Python wrapper)
    out = np.add.reduce(grad, axis=0 if extra == 1 else tuple(builtins.range(extra))) if extra > 0 else grad
    if out.shape == target:  # (a bias's gradient: the leading axes summed, nothing else)
        return out
    axes = tuple(i for i, d in enumerate(target) if d == 1 and out.shape[i] != 1)
    if axes:
        out = np.add.reduce(out, axis=axes, keepdims=True)
    return out.reshape(target)


@registry.gradient("SumToShape")
def _sum_to_shape_grad(op, grad):
    return [broadcast_to_like(grad, op.inputs[0]), None]


def broadcast_to_like(x, like):
    return registry.make_op("BroadcastToLike", [x, like]).outputs[0]


registry.shape("BroadcastToLike")(lambda inputs, attrs: [(inputs[0].dtype, inputs[1].shape)])


@registry.kernel("BroadcastToLike")
def _broadcast_to_like_kernel(ctx, node, x, like):
    out = np.empty(np.shape(like), np.result_type(x))  # (np.copyto broadcasts as np.broadcast_to does)
    np.copyto(out, x)
    return out


@registry.gradient("BroadcastToLike")
def _broadcast_to_like_grad(op, grad):
    return [sum_to_shape(grad, op.inputs[0]), None]
