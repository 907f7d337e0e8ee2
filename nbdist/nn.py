"""`tf.nn`: activations, softmax, cross-entropy losses, bias_add, l2_loss, dropout."""

from nbdist._facade import unsupported as _unsupported
from nbdist.ops.embedding_ops import embedding_lookup
from nbdist.ops.math_ops import relu, sigmoid, softplus, tanh
from nbdist.ops.nn_ops import (
    bias_add,
    dropout,
    l2_loss,
    leaky_relu,
    log_softmax,
    sigmoid_cross_entropy_with_logits,
    softmax,
    softmax_cross_entropy_with_logits,
    softmax_cross_entropy_with_logits_v2,
    sparse_softmax_cross_entropy_with_logits,
)

__all__ = [
    "bias_add",
    "dropout",
    "embedding_lookup",
    "l2_loss",
    "leaky_relu",
    "log_softmax",
    "relu",
    "sigmoid",
    "sigmoid_cross_entropy_with_logits",
    "softmax",
    "softmax_cross_entropy_with_logits",
    "softmax_cross_entropy_with_logits_v2",
    "softplus",
    "sparse_softmax_cross_entropy_with_logits",
    "tanh",
]


def __getattr__(name):
    return _unsupported("tf.nn", name)
