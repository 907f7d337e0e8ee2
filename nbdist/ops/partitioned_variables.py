"""Partitioned variables: a variable stored as shards, and the partitioners that cut it.

`tf.get_variable(..., partitioner=...)` (in `variable_scope`) asks a partitioner how many
shards each axis gets (only one axis may be cut), creates one variable per shard
(``name/part_i``, near-equal slices) and returns a `PartitionedVariable`. Each shard is its
own ``VariableV2`` op, so `replica_device_setter` spreads the shards over the ps tasks.
The partitioners' results equal TF's (checked in tests/test_variable_scope.py).
"""

import math

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import get_default_graph
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import array_ops
from nbdist.ops.constant_op import register_tensor_conversion_function

__all__ = ["fixed_size_partitioner", "min_max_variable_partitioner", "variable_axis_size_partitioner"]


class PartitionInfo:
    """Where one shard sits in its full variable (handed to initializers)."""

    def __init__(self, full_shape, var_offset):
        self.full_shape = list(full_shape)
        self.var_offset = list(var_offset)


class PartitionedVariable:
    """A variable stored as shards (one `Variable` per slice of one axis).

    Iterating gives the shards; used as a tensor it is their concatenation. Optimizers and
    savers work on the shards, which are ordinary variables in ``GLOBAL_VARIABLES``.
    """

    def __init__(self, name, shape, dtype, variable_list, partitions):
        self._name = name
        self._shape = TensorShape(shape)
        self._dtype = dtype
        self._variable_list = list(variable_list)
        self._partitions = list(partitions)

    name = property(lambda self: self._name)
    dtype = property(lambda self: self._dtype)
    shape = property(lambda self: self._shape)
    partitions = property(lambda self: list(self._partitions), doc="Shards per axis (nbdist's name).")

    def get_shape(self):
        return self._shape

    def __iter__(self):
        return iter(self._variable_list)

    def __len__(self):
        return len(self._variable_list)

    def _get_variable_list(self):
        return list(self._variable_list)

    def _get_partitions(self):  # TF's name, for programs that call it
        return self.partitions

    def _slice_axis(self):
        return next((i for i, p in enumerate(self._partitions) if p > 1), 0)

    def as_tensor(self):
        """The whole variable: its shards concatenated, an op named like the variable (as TF)."""
        graph = get_default_graph()
        values = [v.value() for v in self._variable_list]
        with graph.name_scope(None):
            if len(values) == 1:
                from nbdist.ops import math_ops  # noqa: PLC0415 - math_ops imports this module's peers

                return math_ops.identity(values[0], name=self._name)
            return array_ops.concat(values, self._slice_axis(), name=self._name)

    def __repr__(self):
        return f"<tf.PartitionedVariable '{self._name}' shape={self._shape} shards={len(self)}>"


register_tensor_conversion_function(PartitionedVariable, lambda v, dtype, name: v.as_tensor())


def fixed_size_partitioner(num_shards, axis=0):
    """A partitioner that cuts `axis` into `num_shards` (at most the axis' size)."""

    def _partitioner(shape, dtype):
        partitions = [1] * shape.ndims
        partitions[axis] = min(num_shards, shape.as_list()[axis])
        return partitions

    return _partitioner


def _element_size(dtype, bytes_per_string_element):
    dtype = _dtypes.as_dtype(dtype)
    return bytes_per_string_element if dtype == _dtypes.string else dtype.size


def variable_axis_size_partitioner(max_shard_bytes, axis=0, bytes_per_string_element=16, max_shards=None):
    """A partitioner that keeps every shard under `max_shard_bytes` (cutting `axis`).

    Raises:
        ValueError: for non-positive sizes.
    """
    if max_shard_bytes < 1 or bytes_per_string_element < 1:
        raise ValueError("Both max_shard_bytes and bytes_per_string_element must be positive.")
    if max_shards and max_shards < 1:
        raise ValueError("max_shards must be positive.")

    def _partitioner(shape, dtype):
        if not isinstance(shape, TensorShape):
            raise ValueError(f"shape is not a TensorShape: {shape!r}")
        if not shape.is_fully_defined():
            raise ValueError(f"shape is not fully defined: {shape}")
        dims = shape.as_list()
        element_size = _element_size(dtype, bytes_per_string_element)
        partitions = [1] * len(dims)
        bytes_per_slice = 1.0 * (shape.num_elements() / dims[axis]) * element_size
        slices_per_shard = max(1, math.floor(max_shard_bytes / bytes_per_slice))
        axis_shards = math.ceil(1.0 * dims[axis] / slices_per_shard)
        if max_shards:
            axis_shards = min(max_shards, axis_shards)
        partitions[axis] = axis_shards
        return partitions

    return _partitioner


def min_max_variable_partitioner(
    max_partitions=1, axis=0, min_slice_size=256 << 10, bytes_per_string_element=16
):
    """A partitioner: each shard at least `min_slice_size` bytes, at most `max_partitions` shards."""

    def _partitioner(shape, dtype):
        dims = shape.as_list()
        if axis >= len(dims):
            raise ValueError(
                f"Can not partition variable along axis {axis} when shape is only {len(dims)}-D."
            )
        total = shape.num_elements() * _element_size(dtype, bytes_per_string_element)
        partitions = [1] * len(dims)
        partitions[axis] = max(1, min(dims[axis], max_partitions, math.ceil(total / min_slice_size)))
        return partitions

    return _partitioner
