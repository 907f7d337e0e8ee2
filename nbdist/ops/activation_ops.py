"""`tf.nn`'s remaining activations: `Relu6`, `Elu`, `Selu` and `Softsign` (ops: constructor, shape,
kernel and gradient side by side) and the composites `crelu`, `swish` / `silu`.

The gradients are TF's formulas (TF's `Relu6Grad`, `EluGrad`, `SeluGrad`, `SoftsignGrad`) written
with elementwise ops, so they are differentiable again and export as plain TF ops.
"""

import numpy as np

from nbdist.graph.graph import name_scope
from nbdist.ops import math_ops, registry
from nbdist.ops._shapes import same_as_input
from nbdist.ops.concat_slice_ops import concat
from nbdist.ops.constant_op import convert_to_tensor

__all__ = ["crelu", "elu", "relu6", "selu", "silu", "softsign", "swish"]

# SELU's constants (Klambauer et al. 2017), as TF's kernel has them.
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _expm1_of_negative_part(x):
    """``exp(min(x, 0)) - 1``: ELU's negative branch, never overflowing for large positive `x`."""
    return np.expm1(np.minimum(x, 0))


def _relu6_kernel(ctx, node, x):
    return np.clip(x, 0, 6).astype(x.dtype, copy=False)


def _elu_kernel(ctx, node, x):
    return np.where(x < 0, _expm1_of_negative_part(x), x).astype(x.dtype, copy=False)


def _selu_kernel(ctx, node, x):
    negative = _SELU_SCALE * _SELU_ALPHA * _expm1_of_negative_part(x)
    return np.where(x < 0, negative, _SELU_SCALE * x).astype(x.dtype, copy=False)


def _softsign_kernel(ctx, node, x):
    return (x / (1 + np.abs(x))).astype(x.dtype, copy=False)


def _relu6_grad(op, grad):
    """TF's `Relu6Grad`: the gradient where ``0 < features < 6``, else 0."""
    x, zeros = op.inputs[0], math_ops.zeros_like(grad)
    return [math_ops.where(x > 0.0, math_ops.where(x < 6.0, grad, zeros), zeros)]


def _elu_grad(op, grad):
    """TF's `EluGrad` (from the output y): ``grad * (y + 1)`` where ``y < 0``, else `grad`."""
    y = op.outputs[0]
    return [math_ops.where(y < 0.0, grad * (y + 1.0), grad)]


def _selu_grad(op, grad):
    """TF's `SeluGrad` (from the output y): ``grad * (y + scale * alpha)`` where ``y < 0``,
    else ``grad * scale``."""
    y = op.outputs[0]
    return [math_ops.where(y < 0.0, grad * (y + _SELU_SCALE * _SELU_ALPHA), grad * _SELU_SCALE)]


def _softsign_grad(op, grad):
    """TF's `SoftsignGrad`: ``grad / (1 + |x|) ** 2``."""
    return [grad / math_ops.square(1.0 + math_ops.abs(op.inputs[0]))]


for _type, _kernel, _grad in (
    ("Relu6", _relu6_kernel, _relu6_grad),
    ("Elu", _elu_kernel, _elu_grad),
    ("Selu", _selu_kernel, _selu_grad),
    ("Softsign", _softsign_kernel, _softsign_grad),
):
    registry.shape(_type)(same_as_input)
    registry.kernel(_type)(_kernel)
    registry.gradient(_type)(_grad)


def _activation(op_type, features, name):
    return registry.make_op(op_type, [convert_to_tensor(features, name="features")], name=name).outputs[0]


def relu6(features, name=None):
    """`tf.nn.relu6`: ``min(max(features, 0), 6)``."""
    with name_scope(name, "Relu6") as scope:
        return _activation("Relu6", features, scope)


def elu(features, name=None):
    """`tf.nn.elu`: ``features`` where positive, else ``exp(features) - 1``."""
    return _activation("Elu", features, name)


def selu(features, name=None):
    """`tf.nn.selu`: ``scale * features`` where positive, else ``scale * alpha * (exp(features) - 1)``
    (TF's constants: alpha 1.6733, scale 1.0507)."""
    return _activation("Selu", features, name)


def softsign(features, name=None):
    """`tf.nn.softsign`: ``features / (abs(features) + 1)``."""
    return _activation("Softsign", features, name)


def crelu(features, name=None, axis=-1):
    """`tf.nn.crelu`: ``relu(concat([features, -features], axis))`` (twice the channels)."""
    with name_scope(name, "CRelu") as scope:
        features = convert_to_tensor(features, name="features")
        return math_ops.relu(concat([features, -features], axis, name=scope))


def swish(features, beta=1.0):
    """`tf.nn.swish`: ``features * sigmoid(beta * features)``."""
    features = convert_to_tensor(features, name="features")
    beta = math_ops.cast(convert_to_tensor(beta, name="beta"), features.dtype)
    return features * math_ops.sigmoid(beta * features)


def silu(features, beta=1.0):
    """`tf.nn.silu`: `tf.nn.swish`'s other name, ``features * sigmoid(beta * features)``."""
    return swish(features, beta)
