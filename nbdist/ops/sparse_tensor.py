"""`tf.SparseTensor`: a tensor given by its non-default entries, and `tf.sparse.to_dense`.

Only what parsing needs (a `tf.VarLenFeature` parses to one): three graph tensors —
``indices`` (int64, ``[N, rank]``), ``values`` (``[N]``) and ``dense_shape`` (int64,
``[rank]``); fetched with `Session.run` it comes back as a `SparseTensorValue`, as in TF.
`sparse_tensor_to_dense` (``SparseToDense``) scatters the values over a default.
"""

import collections

import numpy as np

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import Tensor
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.shape_ops import get_static_value

__all__ = ["SparseTensor", "SparseTensorValue", "sparse_tensor_to_dense"]

SparseTensorValue = collections.namedtuple("SparseTensorValue", ["indices", "values", "dense_shape"])
SparseTensorValue.__doc__ = "The value of a fetched `SparseTensor`: numpy arrays."


class SparseTensor:
    """``dense[indices[i]] = values[i]``, every other entry the default (0, ``b""``).

    Args:
        indices: int64 ``[N, rank]``: the entries' coordinates, in row-major order.
        values: ``[N]``: their values.
        dense_shape: int64 ``[rank]``: the dense tensor's shape.
    """

    def __init__(self, indices, values, dense_shape):
        self._indices = convert_to_tensor(indices, dtype=_dtypes.int64, name="indices")
        self._values = values if isinstance(values, Tensor) else convert_to_tensor(values, name="values")
        self._dense_shape = convert_to_tensor(dense_shape, dtype=_dtypes.int64, name="dense_shape")
        for what, tensor, rank in (("indices", self._indices, 2), ("values", self._values, 1)):
            if tensor.shape.ndims not in (None, rank):  # TF's with_rank checks
                raise ValueError(f"Shape {tensor.shape} must have rank {rank}: a SparseTensor's {what}")
        if self._dense_shape.shape.ndims not in (None, 1):
            raise ValueError(
                f"Shape {self._dense_shape.shape} must have rank 1: a SparseTensor's dense_shape"
            )

    indices = property(lambda self: self._indices)
    values = property(lambda self: self._values)
    dense_shape = property(lambda self: self._dense_shape)
    dtype = property(lambda self: self._values.dtype)
    op = property(lambda self: self._values.op)
    graph = property(lambda self: self._values.graph)

    @property
    def shape(self):
        """The dense shape as far as it is known while building."""
        known = get_static_value(self._dense_shape)
        if known is not None:
            return TensorShape([int(d) for d in known])
        rank = self._dense_shape.shape[0] if self._dense_shape.shape.ndims == 1 else None
        return TensorShape(None) if rank is None else TensorShape([None] * rank)

    def get_shape(self):
        return self.shape

    def __repr__(self):
        return (
            f"SparseTensor(indices={self._indices}, values={self._values}, dense_shape={self._dense_shape})"
        )


@registry.shape("SparseToDense")
def _sparse_to_dense_shape(inputs, attrs):
    output_shape = inputs[1]
    known = get_static_value(output_shape)
    if known is not None:
        return [(inputs[2].dtype, TensorShape([int(d) for d in known]))]
    rank = output_shape.shape[0] if output_shape.shape.ndims == 1 else None
    return [(inputs[2].dtype, TensorShape(None) if rank is None else TensorShape([None] * rank))]


registry.no_gradient("SparseToDense")


def _bad_index(node, i, index, what):
    coords = ",".join(str(int(c)) for c in index)
    return errors.InvalidArgumentError(node.name, None, f"indices[{i}] = [{coords}] {what}")


@registry.kernel("SparseToDense")
def _sparse_to_dense_kernel(ctx, node, indices, output_shape, values, default_value):
    shape = tuple(int(d) for d in np.asarray(output_shape).reshape(-1))
    default_value = np.asarray(default_value)
    out = np.full(shape, default_value, dtype=default_value.dtype)
    indices = np.asarray(indices, dtype=np.int64).reshape(-1, len(shape))
    if not indices.size:
        return out
    outside = np.flatnonzero(np.any((indices < 0) | (indices >= shape), axis=1))
    if outside.size:
        i = outside[0]
        raise _bad_index(node, i, indices[i], f"is out of bounds: need 0 <= index < {list(shape)}")
    flat = np.ravel_multi_index(tuple(indices.T), shape)
    if node.attr.get("validate_indices", True):
        unordered = np.flatnonzero(flat[1:] <= flat[:-1])
        if unordered.size:
            i = unordered[0] + 1
            what = "is repeated" if flat[i] == flat[i - 1] else "is out of order"
            raise _bad_index(node, i, indices[i], f"{what}. Many sparse ops require sorted indices.")
    out.reshape(-1)[flat] = np.broadcast_to(np.asarray(values, dtype=out.dtype), flat.shape)
    return out


def sparse_tensor_to_dense(sp_input, default_value=None, validate_indices=True, name=None):
    """`tf.sparse_tensor_to_dense`: the dense tensor `sp_input` stands for.

    Args:
        sp_input: a `SparseTensor`.
        default_value: the value of the entries it does not name (None: 0, or ``b""`` for strings).
        validate_indices: check that the indices are in row-major order, none repeated.
        name: the op's name.

    Returns:
        A Tensor of `sp_input`'s dtype and dense shape.

    Raises:
        TypeError: `sp_input` is not a `SparseTensor`.
    """
    if not isinstance(sp_input, SparseTensor):
        raise TypeError(f"sparse_tensor_to_dense takes a SparseTensor, got {type(sp_input).__name__}")
    if default_value is None:
        default_value = b"" if sp_input.dtype is _dtypes.string else 0
    default = convert_to_tensor(default_value, dtype=sp_input.dtype, name="default_value")
    inputs = [sp_input.indices, sp_input.dense_shape, sp_input.values, default]
    attrs = {"validate_indices": bool(validate_indices)}
    return registry.make_op("SparseToDense", inputs, attrs, name=name).outputs[0]


def to_dense(sp_input, default_value=None, validate_indices=True, name=None):
    """`tf.sparse.to_dense`: `sparse_tensor_to_dense` with a default of the dtype's zero."""
    return sparse_tensor_to_dense(sp_input, default_value, validate_indices, name)
