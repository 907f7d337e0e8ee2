"""`tf.IndexedSlices`: a sparse slice of a tensor — some rows (`indices`) and their `values`.

It is what the gradient of `tf.gather` with respect to its `params` is (so of
`tf.nn.embedding_lookup`): the rows the batch touched, not a dense tensor of the whole
table. Optimizers apply one with sparse update ops on the variable's task
(``ScatterSub``, ``SparseApplyMomentum``, ...), so in a ps/worker job only the touched rows'
indices and values cross the wire.

Nothing here runs: an `IndexedSlices` is three graph tensors. Used where a dense tensor is
expected it is densified (`tf.convert_to_tensor`, by an ``UnsortedSegmentSum``,
registered in `nbdist.ops.reduction_ops`); fetched with `Session.run` it comes back as an
`IndexedSlicesValue`.
"""

import collections

from nbdist.graph.graph import Tensor
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import math_ops
from nbdist.ops.array_ops import get_static_value

IndexedSlicesValue = collections.namedtuple("IndexedSlicesValue", ["values", "indices", "dense_shape"])
IndexedSlicesValue.__doc__ = "The value of a fetched `IndexedSlices`: numpy arrays."


class IndexedSlices:
    """Rows `indices` of a tensor of shape `dense_shape`, holding `values`.

    ``dense[indices[i], ...] = values[i, ...]``; an index may repeat (its values then add up,
    as when a batch looks the same embedding row up twice).

    Args:
        values: a Tensor, ``[len(indices), *dense_shape[1:]]``.
        indices: a 1-D int32 or int64 Tensor.
        dense_shape: a 1-D integer Tensor, or None when the dense shape is not known.
    """

    def __init__(self, values, indices, dense_shape=None):
        for what, t in (("values", values), ("indices", indices)):
            if not isinstance(t, Tensor):
                raise TypeError(f"IndexedSlices {what} must be a Tensor, got {t!r}")
        if dense_shape is not None and not isinstance(dense_shape, Tensor):
            raise TypeError(f"IndexedSlices dense_shape must be a Tensor or None, got {dense_shape!r}")
        self._values = values
        self._indices = indices
        self._dense_shape = dense_shape

    values = property(lambda self: self._values)
    indices = property(lambda self: self._indices)
    dense_shape = property(lambda self: self._dense_shape)
    name = property(lambda self: self._values.name)
    device = property(lambda self: self._values.device)
    op = property(lambda self: self._values.op)
    dtype = property(lambda self: self._values.dtype)
    graph = property(lambda self: self._values.graph)

    @property
    def shape(self):
        """The dense shape as far as it is known while building (from `dense_shape` if constant)."""
        known = None if self._dense_shape is None else get_static_value(self._dense_shape)
        if known is not None:
            return TensorShape([int(d) if d >= 0 else None for d in known])
        if self._values.shape.ndims is None:
            return TensorShape(None)
        return TensorShape([None]).concatenate(self._values.shape[1:])

    def get_shape(self):
        return self.shape

    def consumers(self):
        return self._values.consumers()

    def __neg__(self):
        return IndexedSlices(math_ops.negative(self._values), self._indices, self._dense_shape)

    def __repr__(self):
        shape = "" if self._dense_shape is None else f", dense_shape={self._dense_shape}"
        return f"IndexedSlices(indices={self._indices}, values={self._values}{shape})"
