"""`tf.sparse`: the `SparseTensor` type and its densification (only what parsing needs)."""

from nbdist._facade import unsupported as _unsupported
from nbdist.ops.sparse_tensor import SparseTensor, to_dense

__all__ = ["SparseTensor", "to_dense"]


def __getattr__(name):
    return _unsupported("tf.sparse", name)
