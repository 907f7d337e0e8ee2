"""`tf.nn.safe_embedding_lookup_sparse`, over `embedding_lookup_sparse` as TF builds it: ids of
any rank flattened to rows, invalid ids (negative) and, unless summing, non-positive weights
pruned, empty rows given `default_id` (or zeros), and the result reshaped back."""

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import name_scope
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import math_ops
from nbdist.ops.cast_select_ops import cast, ones_like, where, zeros_like
from nbdist.ops.concat_slice_ops import concat, stack
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.nn_extra_ops import embedding_lookup_sparse
from nbdist.ops.reduction_ops import gather, reduce_prod
from nbdist.ops.reshape_ops import reshape
from nbdist.ops.shape_ops import shape
from nbdist.ops.sparse_ops import sparse_fill_empty_rows, sparse_reshape, sparse_retain
from nbdist.ops.sparse_tensor import SparseTensor
from nbdist.ops.tile_ops import tile

__all__ = ["safe_embedding_lookup_sparse"]


def _prune_invalid_ids(sparse_ids, sparse_weights):
    is_id_valid = math_ops.greater_equal(sparse_ids.values, 0)
    if sparse_weights is not None:
        is_id_valid = math_ops.logical_and(is_id_valid, ones_like(sparse_weights.values, dtype=_dtypes.bool))
    sparse_ids = sparse_retain(sparse_ids, is_id_valid)
    if sparse_weights is not None:
        sparse_weights = sparse_retain(sparse_weights, is_id_valid)
    return sparse_ids, sparse_weights


def _prune_invalid_weights(sparse_ids, sparse_weights):
    if sparse_weights is not None:
        is_weights_valid = math_ops.greater(sparse_weights.values, 0)
        sparse_ids = sparse_retain(sparse_ids, is_weights_valid)
        sparse_weights = sparse_retain(sparse_weights, is_weights_valid)
    return sparse_ids, sparse_weights


def safe_embedding_lookup_sparse(
    embedding_weights,
    sparse_ids,
    sparse_weights=None,
    combiner="mean",
    default_id=None,
    name=None,
    partition_strategy="div",
    max_norm=None,
    allow_fast_lookup=False,
):
    """`tf.nn.safe_embedding_lookup_sparse`: `embedding_lookup_sparse` that tolerates invalid
    ids and empty rows.

    Args:
        embedding_weights: a tensor or variable ``[vocab, d]``, or a list of shards of one.
        sparse_ids: an int SparseTensor ``[d_0, ..., d_n-1, ids]`` (any rank >= 2).
        sparse_weights: float weights like `sparse_ids`, or None (all 1).
        combiner: ``"sum"``, ``"mean"`` (default) or ``"sqrtn"``.
        default_id: the id an empty row looks up; None: an empty row embeds as zeros.

    Returns:
        ``[d_0, ..., d_n-1, d]``.

    Raises:
        ValueError: no embedding weights.
    """
    del allow_fast_lookup  # TF's fast path computes the same values
    if embedding_weights is None:
        raise ValueError(f"Missing embedding_weights {embedding_weights}.")
    if not isinstance(embedding_weights, list):
        embedding_weights = (
            list(embedding_weights) if isinstance(embedding_weights, tuple) else [embedding_weights]
        )
    if not embedding_weights:
        raise ValueError(f"Missing embedding_weights {embedding_weights}.")
    dtype = sparse_weights.dtype if sparse_weights is not None else None
    embedding_weights = [
        w if dtype in (None, w.dtype) else convert_to_tensor(w, dtype=dtype) for w in embedding_weights
    ]
    with name_scope(name, "embedding_lookup") as scope:
        original_shape = sparse_ids.dense_shape
        rank_dim = original_shape.shape[0] if original_shape.shape.ndims == 1 else None
        original_rank = shape(original_shape)[0] if rank_dim is None else rank_dim
        sparse_ids = sparse_reshape(
            sparse_ids,
            stack(
                [reduce_prod(original_shape[: original_rank - 1]), gather(original_shape, original_rank - 1)]
            ),
        )
        if sparse_weights is not None:
            sparse_weights = SparseTensor(sparse_ids.indices, sparse_weights.values, sparse_ids.dense_shape)
        sparse_ids, sparse_weights = _prune_invalid_ids(sparse_ids, sparse_weights)
        if combiner != "sum":
            sparse_ids, sparse_weights = _prune_invalid_weights(sparse_ids, sparse_weights)
        sparse_ids, is_row_empty = sparse_fill_empty_rows(sparse_ids, default_id or 0)
        if sparse_weights is not None:
            sparse_weights, _ = sparse_fill_empty_rows(sparse_weights, 1.0)
        params = embedding_weights[0] if len(embedding_weights) == 1 else embedding_weights
        result = embedding_lookup_sparse(
            params,
            sparse_ids,
            sparse_weights,
            combiner=combiner,
            partition_strategy=partition_strategy,
            max_norm=max_norm,
        )
        if default_id is None:
            is_row_empty = tile(reshape(is_row_empty, [-1, 1]), stack([1, shape(result)[1]]))
            result = where(is_row_empty, zeros_like(result), result)
        final = reshape(
            result,
            concat([cast(original_shape, _dtypes.int32)[: original_rank - 1], shape(result)[1:]], 0),
            name=scope.rstrip("/"),
        )
        lead = TensorShape(None) if rank_dim is None else TensorShape([None] * (rank_dim - 1))
        final.set_shape(lead.concatenate(result.shape[1:]) if lead.ndims is not None else TensorShape(None))
        return final
