"""`tf.losses`: weighted losses, their reductions and the LOSSES collection (TF 1.x's names)."""

from nbdist._facade import export_all as _export_all
from nbdist._facade import unsupported as _unsupported
from nbdist.ops import loss_ops as _loss_ops

_export_all(globals(), _loss_ops)  # the names of loss_ops.__all__, listed there once
__all__ = list(_loss_ops.__all__)


def __getattr__(name):
    return _unsupported("tf.losses", name)
