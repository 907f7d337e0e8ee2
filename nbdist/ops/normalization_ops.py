"""`tf.nn.moments`, `tf.nn.batch_normalization` and `tf.nn.l2_normalize`: TF's formulas, composed
from existing ops (their gradients and export come from those ops).

``1 / sqrt(v)`` stands for TF's `Rsqrt` (the values agree to float rounding).
"""

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import name_scope
from nbdist.ops import math_ops
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.reduction_ops import reduce_mean, reduce_sum
from nbdist.ops.reshape_ops import squeeze

__all__ = ["batch_normalization", "l2_normalize", "moments"]


def _rsqrt(x):
    return math_ops.reciprocal(math_ops.sqrt(x))


def _alias(value, alias, name, alias_name):
    if alias is not None:
        if value is not None:
            raise ValueError(f"pass either {name} or {alias_name} (its TF1 alias), not both")
        return alias
    return value


def moments(x, axes, shift=None, name=None, keep_dims=None, keepdims=None):
    """`tf.nn.moments`: the mean and variance of `x` over `axes`.

    Args:
        x: a Tensor (float16 is computed in float32 and cast back, as TF).
        axes: the axes to reduce (``[0]`` for a batch, ``[0, 1, 2]`` for NHWC images).
        shift: unused (as in TF).
        keepdims: keep the reduced axes with size 1 (`keep_dims` is its TF1 alias).

    Returns:
        ``(mean, variance)``; the variance is ``mean((x - stop_gradient(mean)) ** 2)``.
    """
    del shift  # TF ignores it too
    keepdims = bool(_alias(keepdims, keep_dims, "keepdims", "keep_dims"))
    with name_scope(name, "moments"):
        x = convert_to_tensor(x)
        y = math_ops.cast(x, _dtypes.float32) if x.dtype == _dtypes.float16 else x
        mean = reduce_mean(y, axes, keepdims=True, name="mean")
        variance = reduce_mean(
            math_ops.squared_difference(y, math_ops.stop_gradient(mean)), axes, keepdims=True, name="variance"
        )
        if not keepdims:
            mean, variance = squeeze(mean, axes), squeeze(variance, axes)
        if x.dtype == _dtypes.float16:
            return math_ops.cast(mean, _dtypes.float16), math_ops.cast(variance, _dtypes.float16)
        return mean, variance


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """`tf.nn.batch_normalization`: ``scale * (x - mean) / sqrt(variance + variance_epsilon) + offset``.

    Computed as TF does: ``inv = scale / sqrt(variance + eps)``, ``x * inv + (offset - mean * inv)``.
    `offset` and `scale` may be None (0 and 1).
    """
    with name_scope(name, "batchnorm"):
        x = convert_to_tensor(x)
        inv = _rsqrt(variance + variance_epsilon)
        if scale is not None:
            inv *= scale
        shift = offset - mean * inv if offset is not None else -mean * inv
        return x * math_ops.cast(inv, x.dtype) + math_ops.cast(shift, x.dtype)


def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    """`tf.nn.l2_normalize`: ``x / sqrt(max(sum(x ** 2, axis), epsilon))`` (every axis by default)."""
    axis = _alias(axis, dim, "axis", "dim")
    with name_scope(name, "l2_normalize") as scope:
        x = convert_to_tensor(x, name="x")
        square_sum = reduce_sum(math_ops.square(x), axis, keepdims=True)
        x_inv_norm = _rsqrt(math_ops.maximum(square_sum, epsilon))
        return math_ops.multiply(x, x_inv_norm, name=scope)
