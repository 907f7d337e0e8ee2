"""`tf.metrics`: streaming metrics with local state, each returning ``(value, update_op)``."""

from nbdist._facade import unsupported as _unsupported
from nbdist.ops.metrics_ops import accuracy, mean

__all__ = ["accuracy", "mean"]


def __getattr__(name):
    return _unsupported("tf.metrics", name)
