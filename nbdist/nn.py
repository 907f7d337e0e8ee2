"""`tf.nn`: activations, softmax, cross-entropy losses, normalizations, top_k, bias_add, xw_plus_b,
l2_loss, dropout."""

from nbdist._facade import unsupported as _unsupported
from nbdist.ns import rnn_cell
from nbdist.ops.activation_ops import crelu, elu, relu6, selu, silu, softsign, swish
from nbdist.ops.bias_ops import bias_add
from nbdist.ops.candidate_sampling_ops import (
    all_candidate_sampler,
    fixed_unigram_candidate_sampler,
    log_uniform_candidate_sampler,
    uniform_candidate_sampler,
)
from nbdist.ops.conv3d_ops import conv3d, conv3d_backprop_filter, conv3d_backprop_filter_v2, conv3d_transpose
from nbdist.ops.conv_ops import (
    conv2d,
    conv2d_backprop_filter,
    conv2d_backprop_input,
    conv2d_transpose,
    depthwise_conv2d,
    depthwise_conv2d_native,
    depthwise_conv2d_native_backprop_filter,
    depthwise_conv2d_native_backprop_input,
    separable_conv2d,
)
from nbdist.ops.conv_ops import (
    depthwise_conv2d_native_backprop_filter as depthwise_conv2d_backprop_filter,
)
from nbdist.ops.conv_ops import (
    depthwise_conv2d_native_backprop_input as depthwise_conv2d_backprop_input,
)
from nbdist.ops.conv_transpose_ops import atrous_conv2d_transpose, conv1d_transpose, conv_transpose
from nbdist.ops.ctc_ops import (
    collapse_repeated,
    ctc_beam_search_decoder,
    ctc_beam_search_decoder_v2,
    ctc_greedy_decoder,
    ctc_loss,
    ctc_loss_v2,
    ctc_unique_labels,
)
from nbdist.ops.embedding_more_ops import safe_embedding_lookup_sparse
from nbdist.ops.embedding_ops import embedding_lookup
from nbdist.ops.fractional_pool_ops import fractional_avg_pool, fractional_max_pool
from nbdist.ops.fused_batch_norm_ops import fused_batch_norm
from nbdist.ops.math_ops import relu, sigmoid, softplus, tanh
from nbdist.ops.morphology_ops import dilation2d, erosion2d, max_pool_with_argmax
from nbdist.ops.nn_extra_ops import (
    atrous_conv2d,
    avg_pool1d,
    avg_pool2d,
    avg_pool_v2,
    batch_norm_with_global_normalization,
    compute_average_loss,
    conv1d,
    convolution,
    embedding_lookup_sparse,
    log_poisson_loss,
    max_pool1d,
    max_pool2d,
    max_pool_v2,
    normalize_moments,
    pool,
    relu_layer,
    scale_regularization_loss,
    sufficient_statistics,
    weighted_cross_entropy_with_logits,
    weighted_moments,
)
from nbdist.ops.nn_ops import (
    dropout,
    l2_loss,
    leaky_relu,
    log_softmax,
    sigmoid_cross_entropy_with_logits,
    softmax,
    softmax_cross_entropy_with_logits,
    softmax_cross_entropy_with_logits_v2,
    sparse_softmax_cross_entropy_with_logits,
    xw_plus_b,
)
from nbdist.ops.normalization_ops import batch_normalization, l2_normalize, moments
from nbdist.ops.pool3d_ops import avg_pool3d, max_pool3d
from nbdist.ops.pool_ops import avg_pool, local_response_normalization, lrn, max_pool
from nbdist.ops.rnn_more_ops import raw_rnn, static_bidirectional_rnn, static_state_saving_rnn
from nbdist.ops.rnn_ops import bidirectional_dynamic_rnn, dynamic_rnn, static_rnn
from nbdist.ops.sampled_loss_ops import compute_accidental_hits, nce_loss, sampled_softmax_loss
from nbdist.ops.space_batch_ops import depth_to_space, space_to_batch, space_to_depth, with_space_to_batch
from nbdist.ops.statistics_ops import zero_fraction
from nbdist.ops.top_k_ops import in_top_k, top_k

__all__ = [
    "all_candidate_sampler",
    "atrous_conv2d",
    "avg_pool",
    "avg_pool1d",
    "avg_pool2d",
    "avg_pool_v2",
    "batch_norm_with_global_normalization",
    "bias_add",
    "compute_accidental_hits",
    "compute_average_loss",
    "conv1d",
    "conv2d",
    "conv2d_backprop_filter",
    "conv2d_backprop_input",
    "conv2d_transpose",
    "convolution",
    "depth_to_space",
    "depthwise_conv2d",
    "depthwise_conv2d_backprop_filter",
    "depthwise_conv2d_backprop_input",
    "depthwise_conv2d_native",
    "depthwise_conv2d_native_backprop_filter",
    "depthwise_conv2d_native_backprop_input",
    "dropout",
    "embedding_lookup",
    "embedding_lookup_sparse",
    "fixed_unigram_candidate_sampler",
    "l2_loss",
    "leaky_relu",
    "local_response_normalization",
    "log_poisson_loss",
    "log_softmax",
    "log_uniform_candidate_sampler",
    "lrn",
    "max_pool",
    "max_pool1d",
    "max_pool2d",
    "max_pool_v2",
    "nce_loss",
    "normalize_moments",
    "pool",
    "relu",
    "relu_layer",
    "sampled_softmax_loss",
    "scale_regularization_loss",
    "separable_conv2d",
    "sigmoid",
    "sigmoid_cross_entropy_with_logits",
    "softmax",
    "softmax_cross_entropy_with_logits",
    "softmax_cross_entropy_with_logits_v2",
    "softplus",
    "space_to_depth",
    "sparse_softmax_cross_entropy_with_logits",
    "sufficient_statistics",
    "tanh",
    "uniform_candidate_sampler",
    "weighted_cross_entropy_with_logits",
    "weighted_moments",
    "xw_plus_b",
    "zero_fraction",
]

# Issue 29 §3: the remaining activations, normalizations, top_k / in_top_k.
__all__ += ["batch_normalization", "crelu", "elu", "in_top_k", "l2_normalize", "moments", "relu6"]
__all__ += ["selu", "silu", "softsign", "swish", "top_k"]

# Issue 32: TF 1.x's RNNs (tf.nn.rnn_cell's cells, dynamic_rnn on tf.while_loop).
__all__ += ["bidirectional_dynamic_rnn", "dynamic_rnn", "rnn_cell", "static_rnn"]

# Issue 32: 3-D convolution and pooling.
__all__ += ["avg_pool3d", "conv3d", "conv3d_backprop_filter", "conv3d_backprop_filter_v2", "conv3d_transpose"]
__all__ += ["max_pool3d"]

# Issue 32: fused_batch_norm and the max-plus windows.
__all__ += ["dilation2d", "erosion2d", "fused_batch_norm", "max_pool_with_argmax"]

# Issue 32: CTC.
__all__ += ["collapse_repeated", "ctc_beam_search_decoder", "ctc_beam_search_decoder_v2"]
__all__ += ["ctc_greedy_decoder", "ctc_loss", "ctc_loss_v2", "ctc_unique_labels"]


# Issue 32: the space-to-batch forms (dilated ops as TF builds them).
__all__ += ["space_to_batch", "with_space_to_batch"]

# Issue 32: the other transposed convolutions.
__all__ += ["atrous_conv2d_transpose", "conv1d_transpose", "conv_transpose"]

# Issue 32: the static RNNs, safe_embedding_lookup_sparse.
__all__ += ["safe_embedding_lookup_sparse", "static_bidirectional_rnn", "static_state_saving_rnn"]

# Issue 32: fractional pooling.
__all__ += ["fractional_avg_pool", "fractional_max_pool"]

# Issue 32: raw_rnn (on tf.while_loop and TensorArrays).
__all__ += ["raw_rnn"]


def __getattr__(name):
    return _unsupported("tf.nn", name)
