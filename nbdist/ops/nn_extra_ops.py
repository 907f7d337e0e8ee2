"""`tf.nn`'s names that TF itself builds from other ops, built here the same way: 1-D convolution
and pooling over the 2-D ones, `atrous_conv2d`, `convolution` / `pool`, `relu_layer`, the
weighted and Poisson losses, the moments helpers, `batch_norm_with_global_normalization`,
`embedding_lookup_sparse` and the TF 2 loss scalers. Their gradients are those of the ops they
are made of (`space_to_depth` / `depth_to_space` are ops: nbdist/ops/space_batch_ops.py)."""

import math

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import get_default_graph
from nbdist.ops import math_ops
from nbdist.ops.cast_select_ops import cast, where, zeros_like
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.conv3d_ops import conv3d
from nbdist.ops.conv_ops import conv2d
from nbdist.ops.embedding_ops import embedding_lookup
from nbdist.ops.math_ops import relu
from nbdist.ops.nn_ops import xw_plus_b
from nbdist.ops.normalization_ops import batch_normalization
from nbdist.ops.pool3d_ops import avg_pool3d, max_pool3d
from nbdist.ops.pool_ops import avg_pool, max_pool
from nbdist.ops.reduction_ops import reduce_sum
from nbdist.ops.reshape_ops import expand_dims, squeeze
from nbdist.ops.shape_ops import shape

__all__ = [
    "atrous_conv2d",
    "avg_pool1d",
    "avg_pool2d",
    "avg_pool_v2",
    "batch_norm_with_global_normalization",
    "compute_average_loss",
    "conv1d",
    "convolution",
    "embedding_lookup_sparse",
    "log_poisson_loss",
    "max_pool1d",
    "max_pool2d",
    "max_pool_v2",
    "normalize_moments",
    "pool",
    "relu_layer",
    "scale_regularization_loss",
    "sufficient_statistics",
    "weighted_cross_entropy_with_logits",
    "weighted_moments",
]


def _scope(name, default):
    return get_default_graph().name_scope(name or default)


def _one(value, what):
    """An int from an int or a 1- or 3-element list (TF's 1-D strides and sizes)."""
    if isinstance(value, int):
        return value
    value = list(value)
    if len(value) == 1:
        return int(value[0])
    if len(value) == 3:
        return int(value[1])
    raise ValueError(f"{what} must be an int or a list of 1 or 3 ints, got {value!r}")


# -- 1-D convolution and pooling, as TF builds them: a height of one -------------------------------
def conv1d(
    value=None,
    filters=None,
    stride=None,
    padding=None,
    use_cudnn_on_gpu=None,
    data_format=None,
    name=None,
    input=None,  # noqa: A002 - TF's argument name
    dilations=None,
):
    """`tf.nn.conv1d`: a 1-D convolution of ``[batch, width, in]`` (NWC) by ``[width, in, out]``,
    computed as TF does, by `conv2d` on a height of one."""
    value = convert_to_tensor(value if value is not None else input)
    if data_format not in (None, "NWC"):
        raise ValueError(f"tf.nn.conv1d: nbdist supports data_format NWC, got {data_format!r}")
    with _scope(name, "conv1d"):
        out = conv2d(
            expand_dims(value, 1),
            expand_dims(convert_to_tensor(filters), 0),
            strides=[1, 1, _one(stride, "stride"), 1],
            padding=padding,
            dilations=[1, 1, _one(dilations, "dilations"), 1] if dilations is not None else (1, 1, 1, 1),
        )
        return squeeze(out, [1])


def _pool1d(pool_fn, value, ksize, strides, padding, data_format, name, default):
    if data_format not in (None, "NWC"):
        raise ValueError(f"tf.nn.{default}: nbdist supports data_format NWC, got {data_format!r}")
    with _scope(name, default):
        out = pool_fn(
            expand_dims(convert_to_tensor(value), 1),
            [1, 1, _one(ksize, "ksize"), 1],
            [1, 1, _one(strides, "strides"), 1],
            padding,
        )
        return squeeze(out, [1])


def max_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):  # noqa: A002 - TF's name
    """`tf.nn.max_pool1d` over ``[batch, width, channels]``."""
    return _pool1d(max_pool, input, ksize, strides, padding, data_format, name, "max_pool1d")


def avg_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):  # noqa: A002 - TF's name
    """`tf.nn.avg_pool1d` over ``[batch, width, channels]``."""
    return _pool1d(avg_pool, input, ksize, strides, padding, data_format, name, "avg_pool1d")


def max_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002 - TF's name
    """`tf.nn.max_pool2d`: `tf.nn.max_pool`."""
    return max_pool(input, ksize, strides, padding, data_format=data_format, name=name)


def avg_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002 - TF's name
    """`tf.nn.avg_pool2d`: `tf.nn.avg_pool`."""
    return avg_pool(input, ksize, strides, padding, data_format=data_format, name=name)


max_pool_v2 = max_pool2d
avg_pool_v2 = avg_pool2d


def atrous_conv2d(value, filters, rate, padding, name=None):
    """`tf.nn.atrous_conv2d`: `conv2d` with every filter tap `rate` apart (its dilation)."""
    return conv2d(
        value, filters, strides=1, padding=padding, dilations=[1, rate, rate, 1], name=name or "atrous_conv2d"
    )


def convolution(
    input,  # noqa: A002 - TF's argument name
    filter,  # noqa: A002 - TF's argument name
    padding,
    strides=None,
    dilation_rate=None,
    name=None,
    data_format=None,
    filters=None,
    dilations=None,
):
    """`tf.nn.convolution` for 1-D, 2-D and 3-D inputs (`conv1d` / `conv2d` / `conv3d`)."""
    filt = convert_to_tensor(filter if filter is not None else filters)
    rank = filt.shape.ndims - 2
    rate = dilation_rate if dilation_rate is not None else dilations
    if rank == 1:
        return conv1d(input, filt, stride=strides or 1, padding=padding, dilations=rate or 1, name=name)
    if rank == 2:
        strides = strides or [1, 1]
        rate = rate or [1, 1]
        fmt = data_format or "NHWC"
        as4 = (lambda v: [1, *v, 1]) if fmt == "NHWC" else (lambda v: [1, 1, *v])
        return conv2d(
            input, filt, as4(list(strides)), padding, data_format=fmt, dilations=as4(list(rate)), name=name
        )
    if rank == 3:
        fmt = data_format or "NDHWC"
        as5 = (lambda v: [1, *v, 1]) if fmt == "NDHWC" else (lambda v: [1, 1, *v])
        steps, rates = as5(list(strides or [1, 1, 1])), as5(list(rate or [1, 1, 1]))
        return conv3d(input, filt, steps, padding, data_format=fmt, dilations=rates, name=name)
    raise ValueError(f"tf.nn.convolution: nbdist has 1-D, 2-D and 3-D convolutions, not {rank}-D")


def pool(
    input,  # noqa: A002 - TF's argument name
    window_shape,
    pooling_type,
    padding,
    dilation_rate=None,
    strides=None,
    name=None,
    data_format=None,
):
    """`tf.nn.pool` for 2-D and 3-D windows ("MAX" or "AVG"; dilation 1)."""
    if dilation_rate is not None and any(int(d) != 1 for d in dilation_rate):
        raise ValueError("tf.nn.pool: nbdist pools without dilation")
    if len(window_shape) not in (2, 3):
        raise ValueError(f"tf.nn.pool: nbdist pools 2-D and 3-D windows, got window_shape {window_shape!r}")
    fn = {"MAX": max_pool, "AVG": avg_pool}.get(pooling_type)
    if fn is None:
        raise ValueError(f"tf.nn.pool: pooling_type must be 'MAX' or 'AVG', got {pooling_type!r}")
    if len(window_shape) == 3:
        fmt = data_format or "NDHWC"
        as5 = (lambda v: [1, *v, 1]) if fmt == "NDHWC" else (lambda v: [1, 1, *v])
        fn3 = max_pool3d if pooling_type == "MAX" else avg_pool3d
        return fn3(input, as5(list(window_shape)), as5(list(strides or [1, 1, 1])), padding, fmt, name=name)
    strides = list(strides or [1, 1])
    return fn(
        input, [1, *window_shape, 1], [1, *strides, 1], padding, data_format=data_format or "NHWC", name=name
    )


# -- layers and losses ---------------------------------------------------------------------------------
def relu_layer(x, weights, biases, name=None):
    """`tf.nn.relu_layer`: ``relu(x @ weights + biases)``."""
    with _scope(name, "relu_layer"):
        return relu(xw_plus_b(x, weights, biases))


def weighted_cross_entropy_with_logits(labels=None, logits=None, pos_weight=None, name=None, targets=None):
    """`tf.nn.weighted_cross_entropy_with_logits`: sigmoid cross-entropy with the positive term
    weighted by `pos_weight` (TF's stable formula)."""
    labels = convert_to_tensor(labels if labels is not None else targets)
    logits = convert_to_tensor(logits)
    with _scope(name, "logistic_loss"):
        log_weight = 1.0 + (pos_weight - 1.0) * labels
        softplus_neg_abs = math_ops.log1p(math_ops.exp(-math_ops.abs(logits)))
        return (1.0 - labels) * logits + log_weight * (softplus_neg_abs + relu(-logits))


def log_poisson_loss(targets, log_input, compute_full_loss=False, name=None):
    """`tf.nn.log_poisson_loss`: ``exp(log_input) - log_input * targets`` (+ Stirling's term)."""
    targets, log_input = convert_to_tensor(targets), convert_to_tensor(log_input)
    with _scope(name, "log_poisson_loss"):
        result = math_ops.exp(log_input) - log_input * targets
        if compute_full_loss:
            stirling = targets * math_ops.log(targets) - targets + 0.5 * math_ops.log(2.0 * math.pi * targets)
            stirling = where(targets <= 1.0, zeros_like(targets), stirling)
            result += stirling
        return result


def compute_average_loss(per_example_loss, sample_weight=None, global_batch_size=None):
    """`tf.nn.compute_average_loss`: the summed loss over `global_batch_size` (default: this batch)."""
    loss = convert_to_tensor(per_example_loss)
    if sample_weight is not None:
        loss = loss * sample_weight
    total = reduce_sum(loss)
    if global_batch_size is None:
        size = cast(shape(loss)[0], loss.dtype)
    else:
        size = convert_to_tensor(global_batch_size, dtype=loss.dtype)
    return total / size


def scale_regularization_loss(regularization_loss):
    """`tf.nn.scale_regularization_loss`: divided by the replicas in sync (one: a TF 1.x program's)."""
    return convert_to_tensor(regularization_loss) / 1.0


# -- moments -------------------------------------------------------------------------------------------
def sufficient_statistics(x, axes, shift=None, keep_dims=None, name=None, keepdims=None):
    """`tf.nn.sufficient_statistics`: ``(count, sum, sum of squares, shift)`` over `axes`."""
    x = convert_to_tensor(x)
    keep = bool(keepdims if keepdims is not None else keep_dims)
    with _scope(name, "sufficient_statistics"):
        dims = x.shape.as_list()
        count = 1.0
        for a in axes:
            count *= dims[a]
        counts = convert_to_tensor(count, dtype=x.dtype, name="count")
        if shift is not None:
            shift = convert_to_tensor(shift, dtype=x.dtype)
            m_ss, v_ss = math_ops.subtract(x, shift), math_ops.square(math_ops.subtract(x, shift))
        else:
            m_ss, v_ss = x, math_ops.square(x)
        return counts, reduce_sum(m_ss, axes, keepdims=keep), reduce_sum(v_ss, axes, keepdims=keep), shift


def normalize_moments(counts, mean_ss, variance_ss, shift, name=None):
    """`tf.nn.normalize_moments`: ``(mean, variance)`` from sufficient statistics."""
    with _scope(name, "normalize"):
        divisor = math_ops.reciprocal(counts)
        shifted_mean = mean_ss * divisor
        mean = shifted_mean if shift is None else shifted_mean + shift
        variance = variance_ss * divisor - math_ops.square(shifted_mean)
        return mean, variance


def weighted_moments(x, axes, frequency_weights, name=None, keep_dims=None, keepdims=None):
    """`tf.nn.weighted_moments`: the mean and variance of `x` weighted by `frequency_weights`."""
    keep = bool(keepdims if keepdims is not None else keep_dims)
    x = convert_to_tensor(x)
    with _scope(name, "weighted_moments"):
        weights = cast(convert_to_tensor(frequency_weights), x.dtype)
        weighted_sum = reduce_sum(weights * x, axes, keepdims=True)
        sum_of_weights = reduce_sum(weights + zeros_like(x), axes, keepdims=True)
        divisor = math_ops.reciprocal(sum_of_weights)
        mean = weighted_sum * divisor
        variance = reduce_sum(weights * math_ops.squared_difference(x, mean), axes, keepdims=True) * divisor
        if not keep:
            mean, variance = squeeze(mean, axes), squeeze(variance, axes)
        return mean, variance


def batch_norm_with_global_normalization(
    t=None,
    m=None,
    v=None,
    beta=None,
    gamma=None,
    variance_epsilon=None,
    scale_after_normalization=None,
    name=None,
    input=None,  # noqa: A002 - TF's argument name
    mean=None,
    variance=None,
):
    """`tf.nn.batch_norm_with_global_normalization` (TF's deprecated form of `batch_normalization`)."""
    t = input if input is not None else t
    m = mean if mean is not None else m
    v = variance if variance is not None else v
    return batch_normalization(
        t, m, v, beta, gamma if scale_after_normalization else None, variance_epsilon, name=name
    )


# -- embedding_lookup_sparse ----------------------------------------------------------------------------
def embedding_lookup_sparse(
    params, sp_ids, sp_weights, partition_strategy="mod", name=None, combiner=None, max_norm=None
):
    """`tf.nn.embedding_lookup_sparse`: per row of `sp_ids` (a SparseTensor of ids), the
    `combiner` ("sum", "mean", "sqrtn"; TF 1.x's default "mean") of its ids' embeddings, each
    weighted by `sp_weights` (a SparseTensor like `sp_ids`, or None)."""
    from nbdist.ops.segment_ops import segment_sum  # noqa: PLC0415 - the segment reductions' home

    combiner = combiner or "mean"
    if combiner not in ("sum", "mean", "sqrtn"):
        raise ValueError(
            f"embedding_lookup_sparse: combiner must be 'sum', 'mean' or 'sqrtn', got {combiner!r}"
        )
    if max_norm is not None:
        raise ValueError("embedding_lookup_sparse: nbdist does not support max_norm")
    with _scope(name, "embedding_lookup_sparse"):
        segment_ids = cast(sp_ids.indices[:, 0], _dtypes.int32)
        embeddings = embedding_lookup(params, sp_ids.values, partition_strategy=partition_strategy)
        if sp_weights is None:
            weights = None
        else:
            weights = cast(sp_weights.values, embeddings.dtype)
            embeddings = embeddings * expand_dims(weights, 1)
        total = segment_sum(embeddings, segment_ids)
        if combiner == "sum":
            return total
        ones = weights if weights is not None else cast(sp_ids.values * 0 + 1, embeddings.dtype)
        if combiner == "mean":
            return total / expand_dims(segment_sum(ones, segment_ids), 1)
        return total / expand_dims(math_ops.sqrt(segment_sum(math_ops.square(ones), segment_ids)), 1)
