"""`tf.nn.fused_batch_norm`: TF's `FusedBatchNormV3` op (``epsilon``, ``exponential_avg_factor``,
``data_format``, ``is_training``), one kernel for the normalisation and its statistics.

Outputs as TF's: ``y``; ``batch_mean`` / ``batch_variance`` (training: the batch's mean and its
Bessel-corrected variance, moved by ``exponential_avg_factor`` from the given ones when it is
not 1; inference: the given mean and variance); ``reserve_space_1`` / ``_2`` (the batch mean
and biased variance) and an empty ``reserve_space_3``. The gradient (x, scale, offset; none for
mean and variance, as TF) is built from other ops, so that it has gradients itself.
"""

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import math_ops, registry
from nbdist.ops._shapes import invalid_argument
from nbdist.ops.constant_op import constant, convert_to_tensor
from nbdist.ops.reduction_ops import reduce_mean, reduce_sum
from nbdist.ops.reshape_ops import reshape
from nbdist.ops.shape_ops import size

__all__ = ["fused_batch_norm"]

_FORMATS = ("NHWC", "NCHW", "NDHWC", "NCDHW")
_MIN_EPSILON = 1.001e-5  # TF's floor (cuDNN's requirement), applied on every device


def _channel_first(data_format):
    return data_format in ("NCHW", "NCDHW")


def _axes(data_format, ndim):
    """The reduced axes: all but the channel one."""
    channel = 1 if _channel_first(data_format) else ndim - 1
    return tuple(a for a in range(ndim) if a != channel)


def _as_channels(v, data_format, ndim):
    """A ``[C]`` vector shaped to broadcast along `data_format`'s channel axis."""
    return np.reshape(v, (-1,) + (1,) * (ndim - 2)) if _channel_first(data_format) else v


@registry.shape("FusedBatchNormV3")
def _fused_shape(inputs, attrs):
    x, scale, offset, *_ = inputs
    fmt = attrs["data_format"]
    if x.shape.ndims not in (None, len(fmt)):
        raise ValueError(
            f"FusedBatchNormV3: input must be {len(fmt)}-D ({fmt}), {x.name} has shape {x.shape}"
        )
    channels = None
    if x.shape.ndims is not None:
        channels = x.shape[1 if _channel_first(fmt) else -1]
    for t, what in ((scale, "scale"), (offset, "offset")):
        if t.shape.ndims not in (None, 1):
            raise ValueError(f"FusedBatchNormV3: {what} must be 1-D, {t.name} has shape {t.shape}")
        if t.shape.ndims == 1 and None not in (channels, t.shape[0]) and t.shape[0] != channels:
            raise ValueError(
                f"FusedBatchNormV3: {what} {t.name} has {t.shape[0]} elements, the input {x.shape} has "
                f"{channels} channels"
            )
    vec = TensorShape([channels])
    u = scale.dtype
    return [(x.dtype, x.shape), (u, vec), (u, vec), (u, vec), (u, vec), (u, TensorShape([None]))]


@registry.kernel("FusedBatchNormV3")
def _fused_kernel(ctx, node, x, scale, offset, mean, variance):
    fmt, eps = node.attr["data_format"], node.attr["epsilon"]
    training, factor = node.attr["is_training"], node.attr["exponential_avg_factor"]
    if x.ndim != len(fmt):
        raise invalid_argument(
            node, f"FusedBatchNormV3: input must be {len(fmt)}-D ({fmt}), got {list(x.shape)}"
        )
    axes = _axes(fmt, x.ndim)
    channels = x.shape[1] if _channel_first(fmt) else x.shape[-1]
    for v, what in ((scale, "scale"), (offset, "offset")) + (
        ((mean, "mean"), (variance, "variance")) * (not training)
    ):
        if v.shape != (channels,):
            raise invalid_argument(
                node,
                f"FusedBatchNormV3: {what} must have the {channels} channels of x, got shape {list(v.shape)}",
            )
    xf = x.astype(np.float32) if x.dtype != np.float64 else x
    if training:
        batch_mean, batch_var = xf.mean(axis=axes), xf.var(axis=axes)
        count = x.size // max(channels, 1)
        corrected = batch_var * count / max(count - 1, 1)
        if factor != 1.0:
            out_mean, out_var = (
                (1 - factor) * mean + factor * batch_mean,
                (1 - factor) * variance + factor * corrected,
            )
        else:
            out_mean, out_var = batch_mean, corrected
        norm_mean, norm_var = batch_mean, batch_var
    else:
        out_mean, out_var = mean, variance
        norm_mean, norm_var = batch_mean, batch_var = mean, variance
    inv = scale / np.sqrt(norm_var + eps)
    y = (xf - _as_channels(norm_mean, fmt, x.ndim)) * _as_channels(inv, fmt, x.ndim) + _as_channels(
        offset, fmt, x.ndim
    )
    u = scale.dtype
    return (
        y.astype(x.dtype, copy=False),
        np.asarray(out_mean, u),
        np.asarray(out_var, u),
        np.asarray(batch_mean, u),
        np.asarray(batch_var, u),
        np.zeros([0], u),
    )


@registry.gradient("FusedBatchNormV3")
def _fused_grad(op, grad, *unused_statistics_grads):
    """TF's formulas: with ``xhat = (x - mean) * rstd``, ``doffset = sum(g)``, ``dscale = sum(g * xhat)``;
    training: ``dx = scale * rstd * (g - doffset / n - xhat * dscale / n)``, else ``g * scale * rstd``."""
    x, scale, _, mean, variance = op.inputs
    fmt, eps = op.get_attr("data_format"), op.get_attr("epsilon")
    ndim = x.shape.ndims if x.shape.ndims is not None else len(fmt)
    axes = list(_axes(fmt, ndim))
    xf = math_ops.cast(x, scale.dtype) if x.dtype != scale.dtype else x
    g = math_ops.cast(grad, scale.dtype) if grad.dtype != scale.dtype else grad
    channels = (lambda v: reshape(v, [-1] + [1] * (ndim - 2))) if _channel_first(fmt) else (lambda v: v)
    if op.get_attr("is_training"):
        mean = reduce_mean(xf, axes)
        variance = reduce_mean(math_ops.square(xf - channels(mean)), axes)
    rstd = math_ops.reciprocal(math_ops.sqrt(variance + eps))
    xhat = (xf - channels(mean)) * channels(rstd)
    doffset = reduce_sum(g, axes)
    dscale = reduce_sum(g * xhat, axes)
    if op.get_attr("is_training"):
        n = math_ops.cast(size(xf), scale.dtype) / math_ops.cast(size(scale), scale.dtype)
        dx = channels(scale * rstd) * (g - channels(doffset / n) - xhat * channels(dscale / n))
    else:
        dx = g * channels(scale * rstd)
    if dx.dtype != x.dtype:
        dx = math_ops.cast(dx, x.dtype)
    return [dx, dscale, doffset, None, None]


def fused_batch_norm(
    x,
    scale,
    offset,
    mean=None,
    variance=None,
    epsilon=0.001,
    data_format="NHWC",
    is_training=True,
    name=None,
    exponential_avg_factor=1.0,
):
    """`tf.nn.fused_batch_norm`: batch normalisation of a 4-D (or 5-D) input in one op.

    Args:
        x: ``NHWC`` / ``NCHW`` (or ``NDHWC`` / ``NCDHW``), float16, float32 or float64.
        scale, offset: ``[C]``.
        mean, variance: ``[C]``, for inference (or for moving averages with
            `exponential_avg_factor` below 1); None when training.
        epsilon: added to the variance; at least 1.001e-5 (TF's floor).

    Returns:
        ``(y, batch_mean, batch_variance)``: in training the batch's mean and (Bessel-corrected)
        variance, else `mean` and `variance`.

    Raises:
        ValueError: `mean` / `variance` missing for inference, or a bad data_format.
    """
    if (not is_training or exponential_avg_factor != 1.0) and (mean is None or variance is None):
        raise ValueError(
            "Both `mean` and `variance` must be a 1D tensor when is_training is False or "
            f"exponential_avg_factor != 1.0. Received: `mean` {mean!r} and `variance` {variance!r}"
        )
    if data_format not in _FORMATS:
        raise ValueError(
            f"tf.nn.fused_batch_norm: data_format {data_format!r} is not one of {list(_FORMATS)}"
        )
    x = convert_to_tensor(x, name="input")
    scale = convert_to_tensor(scale, name="scale")
    offset = convert_to_tensor(offset, name="offset")
    mean = constant([], dtype=scale.dtype) if mean is None else convert_to_tensor(mean, dtype=scale.dtype)
    variance = (
        constant([], dtype=scale.dtype)
        if variance is None
        else convert_to_tensor(variance, dtype=scale.dtype)
    )
    if not x.dtype.is_floating or scale.dtype not in (_dtypes.float32, _dtypes.float64):
        raise TypeError(
            "tf.nn.fused_batch_norm: x must be floating point and scale float32, "
            f"got {x.dtype.name} and {scale.dtype.name}"
        )
    attrs = {
        "epsilon": float(max(epsilon, _MIN_EPSILON)),
        "exponential_avg_factor": float(exponential_avg_factor),
        "data_format": data_format,
        "is_training": bool(is_training),
        "T": x.dtype,
        "U": scale.dtype,
    }
    op = registry.make_op("FusedBatchNormV3", [x, scale, offset, mean, variance], attrs, name=name)
    return op.outputs[0], op.outputs[1], op.outputs[2]
