"""`tf.nn`: activations and losses."""

from nbdist._facade import unsupported
from nbdist.ops.math_ops import relu, sigmoid, tanh

__all__ = ["relu", "sigmoid", "tanh"]


def __getattr__(name):
    return unsupported("tf.nn", name)
