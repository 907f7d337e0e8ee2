"""`tf.random`: TF's random names (`normal`, `uniform`, `shuffle`, ...) over ops/random_ops.py."""

from nbdist._facade import unsupported as _unsupported
from nbdist.ops.random_ops import get_seed, set_random_seed, truncated_normal
from nbdist.ops.random_ops import random_normal as normal
from nbdist.ops.random_ops import random_shuffle as shuffle
from nbdist.ops.random_ops import random_uniform as uniform

__all__ = ["get_seed", "normal", "set_random_seed", "shuffle", "truncated_normal", "uniform"]


def __getattr__(name):
    return _unsupported("tf.random", name)
