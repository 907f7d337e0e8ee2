"""`tf.nn.embedding_lookup`: rows of an embedding table, read where the table lives.

Each lookup (`tf.gather`) is colocated with its params, as TF does, so with the table on a
ps only the looked-up rows travel to the worker, and the gradient (an `IndexedSlices`) of
just those rows travels back. A table given as several shards (a list, or a
`PartitionedVariable`) is looked up per shard and the rows are stitched back in the ids'
order; ids are spread over the shards by ``partition_strategy`` with TF's formulas:

- ``"mod"``: id ``i`` is row ``i // n`` of shard ``i % n``;
- ``"div"``: contiguous ranges, the first ``total % n`` shards one row longer.
"""

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import get_default_graph
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import array_ops, index_ops, math_ops, reduction_ops
from nbdist.ops.constant_op import constant, convert_to_tensor
from nbdist.ops.partitioned_variables import PartitionedVariable

__all__ = ["embedding_lookup"]


def embedding_lookup(
    params,
    ids,
    partition_strategy="mod",
    name=None,
    validate_indices=True,
    max_norm=None,
):
    """Looks up `ids` in the embedding table `params`: ``result[i...] = table[ids[i...]]``.

    Args:
        params: the table: a variable or tensor, a list of shards (same shape except the
            first dimension), or a `PartitionedVariable`.
        ids: an int32 or int64 tensor of row numbers in the whole table.
        partition_strategy: ``"mod"`` or ``"div"`` (see the module's doc); ignored for one shard.
        name: the name scope (default ``"embedding_lookup"``).
        validate_indices: accepted for TF's signature (ids are always checked).
        max_norm: not supported by nbdist (must be None).

    Returns:
        A tensor of shape ``ids.shape + params.shape[1:]``; its gradient with respect to each
        shard is an `IndexedSlices`.

    Raises:
        ValueError: for no params, an unknown `partition_strategy` or a `max_norm`.
    """
    if max_norm is not None:
        raise ValueError("tf.nn.embedding_lookup: max_norm is not supported by nbdist; clip the rows after")
    if partition_strategy not in ("mod", "div"):
        raise ValueError(f"Unrecognized partition strategy: {partition_strategy!r} (expected 'mod' or 'div')")
    if isinstance(params, PartitionedVariable):
        params = list(params)
    elif not isinstance(params, (list, tuple)):
        params = [params]
    if not params:
        raise ValueError("tf.nn.embedding_lookup: need at least one params tensor")
    graph = get_default_graph()
    with graph.name_scope(name or "embedding_lookup") as scope:
        ids = convert_to_tensor(ids, name="ids")
        if not ids.dtype.is_integer:
            raise TypeError(f"tf.nn.embedding_lookup: ids must be int32 or int64, got {ids.dtype.name}")
        if len(params) == 1:
            with graph.colocate_with(params[0]):
                result = reduction_ops.gather(params[0], ids, name=scope)
            return math_ops.identity(result)
        return _sharded_lookup(graph, params, ids, partition_strategy, scope)


def _sharded_lookup(graph, params, ids, partition_strategy, scope):
    n = len(params)
    flat_ids = array_ops.reshape(ids, [-1])
    original_indices = math_ops.range(array_ops.size(flat_ids))
    if partition_strategy == "mod":
        assignments = math_ops.floormod(flat_ids, n)
        new_ids = math_ops.floordiv(flat_ids, n)
    else:
        total = _total_rows(graph, params, flat_ids.dtype)
        ids_per_partition = math_ops.floordiv(total, n)
        extras = math_ops.floormod(total, n)
        assignments = math_ops.maximum(
            math_ops.floordiv(flat_ids, ids_per_partition + 1),
            math_ops.floordiv(flat_ids - extras, ids_per_partition),
        )
        new_ids = math_ops.where(
            math_ops.less(assignments, extras),
            math_ops.floormod(flat_ids, ids_per_partition + 1),
            math_ops.floormod(flat_ids - extras, ids_per_partition),
        )
    assignments = math_ops.cast(assignments, _dtypes.int32)
    gather_ids = index_ops.dynamic_partition(new_ids, assignments, n)
    positions = index_ops.dynamic_partition(original_indices, assignments, n)
    rows = []
    for shard, shard_ids in zip(params, gather_ids):
        with graph.colocate_with(shard):
            rows.append(reduction_ops.gather(shard, shard_ids))
    stitched = index_ops.parallel_dynamic_stitch(positions, rows, name=scope)
    row_shape = _row_shape(params)
    if row_shape.is_fully_defined():
        row_dims = constant(row_shape.as_list(), dtype=_dtypes.int32)
    else:
        with graph.colocate_with(params[0]):
            row_dims = array_ops.slice(array_ops.shape(params[0]), [1], [-1])
    result = array_ops.reshape(stitched, array_ops.concat([array_ops.shape(ids), row_dims], 0))
    result.set_shape(ids.shape.concatenate(row_shape))
    return result


def _row_shape(params):
    shape = TensorShape(params[0].shape)[1:]
    for p in params[1:]:
        shape = shape.merge_with(TensorShape(p.shape)[1:])
    return shape


def _total_rows(graph, params, dtype):
    """The table's row count: a constant when every shard's is known, else read per shard."""
    sizes = [TensorShape(p.shape)[0] for p in params]
    if all(s is not None for s in sizes):
        return constant(sum(int(s) for s in sizes), dtype=dtype)
    counts = []
    for p in params:
        with graph.colocate_with(p):
            counts.append(reduction_ops.gather(array_ops.shape(p, out_type=dtype), 0))
    return math_ops.add_n(counts)
