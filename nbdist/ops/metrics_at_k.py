"""`tf.metrics.precision_at_k` / `recall_at_k` (TF's ``metrics_impl``, the ``sparse_*_at_k``
family): how many of the top `k` predicted classes are among a row's labels.

TF counts with set operations on each row (``set_intersection`` / ``set_difference`` of the
top-k class ids and the label ids); here both sides become multi-hot rows over the classes
(``one_hot`` then a max over the ids, so repeated ids count once, as in a set) and the counts
are sums of their products. Label ids must lie in ``[0, num_classes)``: TF would count an
out-of-range label as a false negative. The state is float64, named as TF names it
(``precision_at_2/true_positive_at_2``, ``.../false_positive_at_2``), and the value is
``tp / (tp + fp)`` — NaN before anything was counted, as in TF.
"""

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import add_to_collection, name_scope
from nbdist.ops import math_ops, reduction_ops, state_ops
from nbdist.ops.concat_slice_ops import slice as _slice
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.metrics_ops import check_collections, metric_variable
from nbdist.ops.reshape_ops import expand_dims
from nbdist.ops.top_k_ops import top_k

__all__ = ["precision_at_k", "recall_at_k"]


def _at_k_name(kind, k, class_id):
    return f"{kind}_at_{k}" if class_id is None else f"{kind}_at_{k}_class{class_id}"


def _multi_hot(ids, num_classes, class_id):
    """``[..., n]`` class ids -> ``[..., num_classes]`` rows of 0/1 (float64), or only column
    `class_id` (``[..., 1]``) when given."""
    hot = reduction_ops.reduce_max(reduction_ops.one_hot(ids, num_classes, dtype=_dtypes.float64), -2)
    if class_id is None:
        return hot
    rank = hot.shape.ndims
    return _slice(hot, [0] * (rank - 1) + [int(class_id)], [-1] * (rank - 1) + [1])


def _stream_count(scope, kind, k, class_id, per_row, weights):
    """A float64 local variable ``<scope><kind>_at_<k>`` that adds up the (weighted) `per_row`
    counts; returns it and its update op (named ``.../update`` as TF's)."""
    var_name = _at_k_name(kind, k, class_id)
    counts = reduction_ops.reduce_sum(per_row, -1)  # over the classes
    if weights is not None:
        counts = counts * math_ops.cast(convert_to_tensor(weights), _dtypes.float64)
    variable = metric_variable([], _dtypes.float64, name=var_name)
    with name_scope(f"{scope}{var_name}/"):
        update = state_ops.assign_add(variable, reduction_ops.reduce_sum(counts), name="update")
    return variable, update


def _at_k(
    kind, other, labels, predictions, k, class_id, weights, metrics_collections, updates_collections, name
):
    check_collections(metrics_collections, updates_collections)
    predictions, labels = convert_to_tensor(predictions), convert_to_tensor(labels)
    with name_scope(name, _at_k_name(kind, k, class_id), [predictions, labels, weights]) as scope:
        _, top_k_idx = top_k(predictions, k)
        num_classes = predictions.shape.dims[-1]
        if num_classes is None:
            raise ValueError(
                f"tf.metrics.{kind}_at_k: the last axis of predictions (the classes) must be known"
            )
        if labels.shape.ndims == predictions.shape.ndims - 1:  # one label id a row
            labels = expand_dims(labels, -1)
        label_hot = _multi_hot(labels, num_classes, class_id)
        pred_hot = _multi_hot(top_k_idx, num_classes, class_id)
        tp, tp_update = _stream_count(scope, "true_positive", k, class_id, label_hot * pred_hot, weights)
        if other == "false_positive":
            rest = (1.0 - label_hot) * pred_hot
        else:
            rest = label_hot * (1.0 - pred_hot)
        o, o_update = _stream_count(scope, other, k, class_id, rest, weights)
        value = math_ops.divide(tp, tp + o, name=scope)
        update = math_ops.divide(tp_update, tp_update + o_update, name="update")
    for collection in metrics_collections or ():
        add_to_collection(collection, value)
    for collection in updates_collections or ():
        add_to_collection(collection, update)
    return value, update


def precision_at_k(
    labels,
    predictions,
    k,
    class_id=None,
    weights=None,
    metrics_collections=None,
    updates_collections=None,
    name=None,
):
    """`tf.metrics.precision_at_k`: the fraction of the top-`k` predicted classes that are labels.

    Args:
        labels: int64 class ids, ``[batch]`` or ``[batch, num_labels]``, in ``[0, num_classes)``.
        predictions: float ``[batch, num_classes]`` scores (the classes' axis statically known).
        k: the number of top predictions a row counts.
        class_id: optional: count only this class.
        weights: optional ``[batch]`` Tensor (or a scalar) weighting each row.
        metrics_collections, updates_collections: lists of collections to add the value and
            the update op to.
        name: the name scope (default ``precision_at_<k>``).

    Returns:
        ``(precision, update_op)``: float64 scalars, NaN until a prediction was counted.
    """
    return _at_k(
        "precision",
        "false_positive",
        labels,
        predictions,
        k,
        class_id,
        weights,
        metrics_collections,
        updates_collections,
        name,
    )


def recall_at_k(
    labels,
    predictions,
    k,
    class_id=None,
    weights=None,
    metrics_collections=None,
    updates_collections=None,
    name=None,
):
    """`tf.metrics.recall_at_k`: the fraction of the labels found among the top-`k` predictions.

    Args: as `precision_at_k` (name default ``recall_at_<k>``).

    Returns:
        ``(recall, update_op)``: float64 scalars, NaN until a label was counted.
    """
    return _at_k(
        "recall",
        "false_negative",
        labels,
        predictions,
        k,
        class_id,
        weights,
        metrics_collections,
        updates_collections,
        name,
    )
