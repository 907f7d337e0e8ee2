"""`tf.train`: optimizers, global step, and (lazily) the distributed runtime's entry points."""

from nbdist._facade import unsupported

__all__ = []


def __getattr__(name):
    return unsupported("tf.train", name)
