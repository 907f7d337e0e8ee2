"""Neural-network ops (`tf.nn`): softmax, log-softmax, bias_add, xw_plus_b, cross-entropy losses,
l2_loss, dropout.

Kernels are numerically stable (logits are shifted by their maximum before `exp`, the
log-sum-exp trick) and the gradients are TF's formulas, including the second-order term
of the cross-entropy ops (the gradient of their ``backprop`` output).
"""

import numpy as np

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import Tensor, get_default_graph
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import math_ops, registry
from nbdist.ops._shapes import same_as_input
from nbdist.ops.array_ops import expand_dims, shape, transpose
from nbdist.ops.bias_ops import bias_add  # both data formats
from nbdist.ops.constant_op import convert_n, convert_to_tensor
from nbdist.ops.random_ops import random_uniform
from nbdist.ops.reduction_ops import reduce_sum

__all__ = [
    "bias_add",
    "dropout",
    "l2_loss",
    "leaky_relu",
    "log_softmax",
    "sigmoid_cross_entropy_with_logits",
    "softmax",
    "softmax_cross_entropy_with_logits",
    "softmax_cross_entropy_with_logits_v2",
    "sparse_softmax_cross_entropy_with_logits",
]


def _log_softmax(x):
    shifted = x - np.max(x, axis=-1, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=-1, keepdims=True))


def _float_shape(inputs, attrs):
    x = inputs[0]
    if not x.dtype.is_floating:
        raise TypeError(f"expected a floating point tensor, got {x.dtype.name} ({x.name})")
    if x.shape.ndims == 0:
        raise ValueError(f"logits {x.name} must have rank >= 1, got a scalar")
    return same_as_input(inputs, attrs)


# -- softmax, log_softmax -----------------------------------------------------------------------------
registry.shape("Softmax")(_float_shape)
registry.shape("LogSoftmax")(_float_shape)
registry.kernel("Softmax")(lambda ctx, node, x: np.exp(_log_softmax(x)))
registry.kernel("LogSoftmax")(lambda ctx, node, x: _log_softmax(x))


@registry.gradient("Softmax")
def _softmax_grad(op, grad):
    y = op.outputs[0]
    return [(grad - reduce_sum(grad * y, -1, keepdims=True)) * y]


@registry.gradient("LogSoftmax")
def _log_softmax_grad(op, grad):
    return [grad - reduce_sum(grad, -1, keepdims=True) * math_ops.exp(op.outputs[0])]


def _swap_with_last(logits, axis, what):
    """The permutation that swaps `axis` with the last axis of `logits` (None when it is last).

    Raises:
        ValueError: if `axis` is out of range, or not last and the rank is unknown.
    """
    ndims = logits.shape.ndims
    if axis is None or axis == -1 or (ndims is not None and axis == ndims - 1):
        return None
    if ndims is None:
        raise ValueError(f"{what} on axis {axis} needs a tensor of known rank, {logits.name} has none")
    if not -ndims <= axis < ndims:
        raise ValueError(f"{what}: axis {axis} is out of range for {logits.name} of rank {ndims}")
    perm = list(np.arange(ndims))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    return None if axis % ndims == ndims - 1 else perm


def _on_last_axis(op_type, logits, axis, name):
    """Applies a last-axis op on `axis` by swapping that axis with the last one (as TF)."""
    logits = convert_to_tensor(logits)
    perm = _swap_with_last(logits, axis, op_type)
    if perm is None:
        return registry.make_op(op_type, [logits], name=name).outputs[0]
    out = registry.make_op(op_type, [transpose(logits, perm)]).outputs[0]
    return transpose(out, perm, name=name)


def _axis_alias(axis, dim):
    if dim is not None:
        if axis is not None:
            raise ValueError("pass either axis or dim (its TF1 alias), not both")
        return dim
    return axis


def softmax(logits, axis=None, name=None, dim=None):
    """`tf.nn.softmax`: ``exp(logits) / sum(exp(logits), axis)`` (default: the last axis)."""
    return _on_last_axis("Softmax", logits, _axis_alias(axis, dim), name)


def log_softmax(logits, axis=None, name=None, dim=None):
    """`tf.nn.log_softmax`: ``logits - log(sum(exp(logits), axis))``, computed stably."""
    return _on_last_axis("LogSoftmax", logits, _axis_alias(axis, dim), name)


# -- xw_plus_b, l2_loss, activations ---------------------------------------------------------------------
def xw_plus_b(x, weights, biases, name=None):
    """`tf.nn.xw_plus_b`: ``matmul(x, weights) + biases`` (a `MatMul` then a `BiasAdd` named `name`).

    Args:
        x: a 2-D Tensor ``[batch, in]``; weights: ``[in, out]``; biases: 1-D ``[out]``.
        name: the name scope and the result's name (default ``xw_plus_b``).
    """
    with get_default_graph().name_scope(name or "xw_plus_b") as scope:
        x = convert_to_tensor(x, name="x")
        weights = convert_to_tensor(weights, name="weights")
        biases = convert_to_tensor(biases, name="biases")
        return bias_add(math_ops.matmul(x, weights), biases, name=scope)


registry.shape("L2Loss")(lambda inputs, attrs: [(inputs[0].dtype, TensorShape(()))])
registry.kernel("L2Loss")(
    lambda ctx, node, x: np.asarray(np.sum(np.square(x)) / 2, dtype=np.asarray(x).dtype)
)
registry.gradient("L2Loss")(lambda op, grad: [op.inputs[0] * grad])


def l2_loss(t, name=None):
    """`tf.nn.l2_loss`: ``sum(t ** 2) / 2``."""
    return registry.make_op("L2Loss", [convert_to_tensor(t)], name=name).outputs[0]


def leaky_relu(features, alpha=0.2, name=None):
    """`tf.nn.leaky_relu`: ``max(alpha * features, features)`` (for ``0 <= alpha <= 1``)."""
    features = convert_to_tensor(features)
    return math_ops.maximum(alpha * features, features, name=name)


# -- cross entropies --------------------------------------------------------------------------------------
def _xent_shape(inputs, attrs, sparse):
    logits, labels = inputs
    if not logits.dtype.is_floating:
        raise TypeError(f"logits must be floating point, got {logits.dtype.name} ({logits.name})")
    if sparse and not labels.dtype.is_integer:
        raise TypeError(f"sparse labels must be int32 or int64, got {labels.dtype.name} ({labels.name})")
    if not sparse and labels.dtype != logits.dtype:
        raise TypeError(f"labels are {labels.dtype.name} but logits are {logits.dtype.name}; use tf.cast")
    expected = logits.shape[:-1] if sparse and logits.shape.ndims is not None else logits.shape
    if sparse and logits.shape.ndims is None:
        expected = TensorShape(None)
    if not expected.is_compatible_with(labels.shape):
        what = "logits.shape[:-1]" if sparse else "logits"
        raise ValueError(f"labels shape {labels.shape} must equal {what} shape {expected}")
    if logits.shape.ndims == 0:
        raise ValueError(f"logits {logits.name} must have rank >= 1, got a scalar")
    loss_shape = TensorShape(None) if logits.shape.ndims is None else logits.shape[:-1]
    return [(logits.dtype, loss_shape), (logits.dtype, logits.shape)]


registry.shape("SoftmaxCrossEntropyWithLogits")(lambda inputs, attrs: _xent_shape(inputs, attrs, False))
registry.shape("SparseSoftmaxCrossEntropyWithLogits")(lambda inputs, attrs: _xent_shape(inputs, attrs, True))


def _shifted_exp(logits):
    """TF's xent kernels start so: ``shifted = logits - max``, ``e = exp(shifted)`` (a new array,
    to become the backprop) and ``s = sum(e)``, on the last axis (kept)."""
    shifted = np.subtract(logits, np.maximum.reduce(logits, axis=-1, keepdims=True))
    e = np.exp(shifted)
    return shifted, e, np.add.reduce(e, axis=-1, keepdims=True)


@registry.kernel("SoftmaxCrossEntropyWithLogits")
def _xent_kernel(ctx, node, logits, labels):
    """TF's formulas: ``loss = sum(labels * (log(s) - shifted))``, ``backprop = e / s - labels``."""
    if np.shape(logits) != np.shape(labels):
        raise errors.InvalidArgumentError(
            node.name,
            None,
            f"logits and labels must be the same size: logits {list(np.shape(logits))} "
            f"vs. labels {list(np.shape(labels))}",
        )
    shifted, backprop, s = _shifted_exp(logits)
    backprop /= s
    backprop -= labels
    np.log(s, out=s)
    np.subtract(s, shifted, out=shifted)
    shifted *= labels
    return np.add.reduce(shifted, axis=-1), backprop


@registry.kernel("SparseSoftmaxCrossEntropyWithLogits")
def _sparse_xent_kernel(ctx, node, logits, labels):
    """TF's formulas: ``loss = log(s) - shifted[label]``, ``backprop = e / s - one_hot(label)``."""
    labels, depth = np.asarray(labels), np.shape(logits)[-1]
    if labels.size and (
        np.minimum.reduce(labels, axis=None) < 0 or np.maximum.reduce(labels, axis=None) >= depth
    ):
        bad = (labels < 0) | (labels >= depth)
        raise errors.InvalidArgumentError(
            node.name,
            None,
            f"Received a label value of {labels[bad].flat[0]} which is outside the valid "
            f"range of [0, {depth}); labels: {labels.tolist()}",
        )
    shifted, backprop, s = _shifted_exp(logits)
    backprop /= s
    rows, flat_labels = np.arange(labels.size), labels.reshape(-1)
    loss = np.log(s.reshape(labels.shape))
    loss -= shifted.reshape(-1, depth)[rows, flat_labels].reshape(labels.shape)
    backprop.reshape(-1, depth)[rows, flat_labels] -= 1  # (a view: backprop is new and contiguous)
    return loss, backprop


def _xent_logits_grad(op, grad_loss, grad_backprop):
    """TF's gradient wrt the logits: ``grad_loss * backprop``, plus the second-order term."""
    logits, backprop = op.inputs[0], op.outputs[1]
    grad = expand_dims(grad_loss, -1) * backprop
    if grad_backprop.op.type != "ZerosLike":  # someone differentiates the gradient itself
        p = softmax(logits)
        grad += (grad_backprop - reduce_sum(grad_backprop * p, -1, keepdims=True)) * p
    return grad


@registry.gradient("SoftmaxCrossEntropyWithLogits")
def _xent_grad(op, grad_loss, grad_backprop):
    labels_grad = expand_dims(grad_loss, -1) * -log_softmax(op.inputs[0])
    return [_xent_logits_grad(op, grad_loss, grad_backprop), labels_grad]


registry.gradient("SparseSoftmaxCrossEntropyWithLogits")(
    lambda op, grad_loss, grad_backprop: [_xent_logits_grad(op, grad_loss, grad_backprop), None]
)


def _named_only(sentinel, fn):
    if sentinel is not None:
        raise ValueError(f"Only call `{fn}` with named arguments (labels=..., logits=..., ...)")


def softmax_cross_entropy_with_logits_v2(labels, logits, axis=None, name=None, dim=None):
    """`tf.nn.softmax_cross_entropy_with_logits_v2`: ``-sum(labels * log_softmax(logits), axis)``.

    Gradients flow into both `logits` and `labels`.

    Raises:
        ValueError: if the shapes of `labels` and `logits` are known to differ.
    """
    axis = _axis_alias(axis, dim)
    logits, labels = convert_n([logits, labels])
    perm = _swap_with_last(logits, axis, "softmax_cross_entropy_with_logits")
    if perm is not None:
        logits, labels = transpose(logits, perm), transpose(labels, perm)
    op = registry.make_op("SoftmaxCrossEntropyWithLogits", [logits, labels], name=name)
    return op.outputs[0]


def softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, dim=-1, name=None, axis=None):
    """`tf.nn.softmax_cross_entropy_with_logits` (TF1): as `_v2`, but no gradient reaches `labels`."""
    _named_only(_sentinel, "softmax_cross_entropy_with_logits")
    labels = math_ops.stop_gradient(convert_to_tensor(labels, preferred_dtype=_dtype_of(logits)))
    return softmax_cross_entropy_with_logits_v2(labels, logits, axis=_axis_alias(axis, dim), name=name)


def sparse_softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, name=None):
    """`tf.nn.sparse_softmax_cross_entropy_with_logits`: ``-log_softmax(logits)[..., labels]``.

    Raises:
        ValueError: if ``labels.shape`` is known to differ from ``logits.shape[:-1]``.
        InvalidArgumentError: at run time, for a label outside ``[0, num_classes)``.
    """
    _named_only(_sentinel, "sparse_softmax_cross_entropy_with_logits")
    logits = convert_to_tensor(logits)
    labels = convert_to_tensor(labels, preferred_dtype=_dtypes.int32)
    op = registry.make_op("SparseSoftmaxCrossEntropyWithLogits", [logits, labels], name=name)
    return op.outputs[0]


def sigmoid_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, name=None):
    """`tf.nn.sigmoid_cross_entropy_with_logits`, TF's stable form:
    ``max(x, 0) - x * z + log(1 + exp(-abs(x)))`` for logits x and labels z.

    Raises:
        ValueError: if the shapes of `labels` and `logits` are known to differ.
    """
    _named_only(_sentinel, "sigmoid_cross_entropy_with_logits")
    logits, labels = convert_n([logits, labels])
    if not logits.shape.is_compatible_with(labels.shape):
        raise ValueError(f"logits and labels must have the same shape ({logits.shape} vs {labels.shape})")
    with get_default_graph().name_scope(name or "logistic_loss") as scope:
        zeros = math_ops.zeros_like(logits)
        positive = math_ops.greater_equal(logits, zeros)
        relu_logits = math_ops.where(positive, logits, zeros)
        neg_abs_logits = math_ops.where(positive, -logits, logits)
        return math_ops.add(
            relu_logits - logits * labels, math_ops.log1p(math_ops.exp(neg_abs_logits)), name=scope
        )


def _dtype_of(x):
    return x.dtype if isinstance(x, Tensor) else None


# -- dropout ------------------------------------------------------------------------------------------------
def dropout(x, keep_prob=None, noise_shape=None, seed=None, name=None, rate=None):
    """`tf.nn.dropout`: zeroes each element with probability ``1 - keep_prob``, scales the rest.

    Args:
        keep_prob: probability of keeping an element (``rate = 1 - keep_prob`` is the v2 form).
        noise_shape: shape of the random keep/drop mask, broadcast against `x`.

    Raises:
        ValueError: for a static `keep_prob` outside ``(0, 1]`` or both/neither of keep_prob and rate.
    """
    if (keep_prob is None) == (rate is None):
        raise ValueError("tf.nn.dropout: pass exactly one of keep_prob and rate")
    with get_default_graph().name_scope(name or "dropout") as scope:
        x = convert_to_tensor(x)
        if keep_prob is None:
            keep_prob = 1 - rate
        if not isinstance(keep_prob, Tensor) and not 0 < keep_prob <= 1:
            raise ValueError(f"tf.nn.dropout: keep_prob must be in (0, 1], got {keep_prob!r}")
        keep_prob = convert_to_tensor(keep_prob, dtype=x.dtype, name="keep_prob")
        noise_shape = shape(x) if noise_shape is None else noise_shape
        random = keep_prob + random_uniform(noise_shape, seed=seed, dtype=x.dtype)
        return math_ops.multiply(x / keep_prob, math_ops.floor(random), name=scope)
