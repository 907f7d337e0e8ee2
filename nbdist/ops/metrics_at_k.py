"""`tf.metrics`' top-k metrics (TF's ``metrics_impl``, the ``sparse_*_at_k`` family):
`precision_at_k` / `recall_at_k` (and `sparse_precision_at_k`), `precision_at_top_k` /
`recall_at_top_k` (given the top-k class ids), `average_precision_at_k` (and
`sparse_average_precision_at_k`).

TF counts with set operations on each row (``set_intersection`` / ``set_difference`` of the
top-k class ids and the label ids); here each id is compared with every id of the other side
(``equal`` of the two rows broadcast against each other), and an id repeated in its row counts
once, as in a set. Any id counts, -1 and ids past the classes too (TF's dense sets do the
same: such a label is a false negative). The state is float64, named as TF names it
(``precision_at_2/true_positive_at_2``, ``.../false_positive_at_2``), and the value is
``tp / (tp + fp)`` — NaN before anything was counted, as in TF.
"""

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import add_to_collection, name_scope
from nbdist.ops import math_ops, reduction_ops, state_ops
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.metrics_ops import check_collections, metric_variable
from nbdist.ops.reshape_ops import expand_dims
from nbdist.ops.scan_ops import cumsum
from nbdist.ops.shape_ops import size
from nbdist.ops.top_k_ops import top_k

__all__ = [
    "average_precision_at_k",
    "precision_at_k",
    "precision_at_top_k",
    "recall_at_k",
    "recall_at_top_k",
    "sparse_average_precision_at_k",
    "sparse_precision_at_k",
]


def _at_k_name(kind, k=None, class_id=None):
    name = f"{kind}_at_k" if k is None else f"{kind}_at_{k}"
    return name if class_id is None else f"{name}_class{class_id}"


def _collect(metrics_collections, updates_collections, value, update):
    for collection in metrics_collections or ():
        add_to_collection(collection, value)
    for collection in updates_collections or ():
        add_to_collection(collection, update)
    return value, update


def _as_float(t):
    return math_ops.cast(t, _dtypes.float64)


def _found_in(ids, others):
    """``[..., n]`` float64: 1 where ``ids[..., j]`` is one of its row's `others`."""
    same = math_ops.equal(expand_dims(ids, -1), expand_dims(others, -2))  # [..., n, m]
    return reduction_ops.reduce_max(_as_float(same), -1)


def _first_of_value(ids):
    """``[..., n]`` float64: 1 where an id is the first of its value in its row (a set)."""
    n = ids.shape.dims[-1]
    if n is None:
        raise ValueError(f"tf.metrics: the last axis of the ids {ids.name} must be statically known")
    earlier = convert_to_tensor(np.triu(np.ones((n, n)), 1))  # [i, j]: 1 where i < j
    same = _as_float(math_ops.equal(expand_dims(ids, -1), expand_dims(ids, -2)))
    return 1.0 - reduction_ops.reduce_max(same * earlier, -2)


def _selected(ids, class_id):
    """The ids of a set that count: each value once, and only `class_id` when given."""
    hot = _first_of_value(ids)
    if class_id is not None:
        hot = hot * _as_float(math_ops.equal(ids, math_ops.cast(class_id, ids.dtype)))
    return hot


def _stream_count(scope, kind, k, class_id, per_row, weights):
    """A float64 local variable ``<scope><kind>_at_<k>`` that adds up the (weighted) `per_row`
    counts; returns it and its update op (named ``.../update`` as TF's)."""
    var_name = _at_k_name(kind, k, class_id)
    counts = reduction_ops.reduce_sum(per_row, -1)  # over the ids of a row
    if weights is not None:
        counts = counts * _as_float(convert_to_tensor(weights))
    variable = metric_variable([], _dtypes.float64, name=var_name)
    with name_scope(f"{scope}{var_name}/"):
        update = state_ops.assign_add(variable, reduction_ops.reduce_sum(counts), name="update")
    return variable, update


def _maybe_expand_labels(labels, predictions_idx):
    labels = convert_to_tensor(labels)
    if labels.shape.ndims == predictions_idx.shape.ndims - 1:  # one label id a row
        labels = expand_dims(labels, -1)
    return math_ops.cast(labels, _dtypes.int64)


def _at_top_k(kind, other, labels, predictions_idx, k, class_id, weights, collections, name):
    check_collections(*collections)
    predictions_idx = convert_to_tensor(predictions_idx)
    with name_scope(name, _at_k_name(kind, k, class_id), [predictions_idx, labels, weights]) as scope:
        labels = _maybe_expand_labels(labels, predictions_idx)
        top_k_idx = math_ops.cast(predictions_idx, _dtypes.int64)
        predicted, in_labels = _selected(top_k_idx, class_id), _found_in(top_k_idx, labels)
        tp, tp_update = _stream_count(scope, "true_positive", k, class_id, predicted * in_labels, weights)
        if other == "false_positive":
            rest = predicted * (1.0 - in_labels)
        else:
            rest = _selected(labels, class_id) * (1.0 - _found_in(labels, top_k_idx))
        o, o_update = _stream_count(scope, other, k, class_id, rest, weights)
        value = math_ops.divide(tp, tp + o, name=scope)
        update = math_ops.divide(tp_update, tp_update + o_update, name="update")
    return _collect(*collections, value, update)


def _at_k(kind, other, labels, predictions, k, class_id, weights, collections, name):
    predictions = convert_to_tensor(predictions)
    with name_scope(name, _at_k_name(kind, k, class_id), [predictions, labels, weights]) as scope:
        _, top_k_idx = top_k(predictions, k)
        return _at_top_k(kind, other, labels, top_k_idx, k, class_id, weights, collections, scope)


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
        labels: int64 class ids, ``[batch]`` or ``[batch, num_labels]``.
        predictions: float ``[batch, num_classes]`` scores.
        k: the number of top predictions a row counts.
        class_id: optional: count only this class.
        weights: optional ``[batch]`` Tensor (or a scalar) weighting each row.
        metrics_collections, updates_collections: lists of collections to add the value and
            the update op to.
        name: the name scope (default ``precision_at_<k>``).

    Returns:
        ``(precision, update_op)``: float64 scalars, NaN until a prediction was counted.
    """
    collections = (metrics_collections, updates_collections)
    return _at_k("precision", "false_positive", labels, predictions, k, class_id, weights, collections, name)


def sparse_precision_at_k(
    labels,
    predictions,
    k,
    class_id=None,
    weights=None,
    metrics_collections=None,
    updates_collections=None,
    name=None,
):
    """`tf.metrics.sparse_precision_at_k`: TF's deprecated name of `precision_at_k`."""
    collections = (metrics_collections, updates_collections)
    return _at_k("precision", "false_positive", labels, predictions, k, class_id, weights, collections, name)


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
    collections = (metrics_collections, updates_collections)
    return _at_k("recall", "false_negative", labels, predictions, k, class_id, weights, collections, name)


def precision_at_top_k(
    labels,
    predictions_idx,
    k=None,
    class_id=None,
    weights=None,
    metrics_collections=None,
    updates_collections=None,
    name=None,
):
    """`tf.metrics.precision_at_top_k`: `precision_at_k` given the top-k class ids themselves.

    Args:
        labels: int64 class ids, ``[batch]`` or ``[batch, num_labels]``.
        predictions_idx: integer ``[batch, k]`` predicted class ids (a repeated id counts once).
        k: only names the scope and state (``precision_at_<k>``, ``precision_at_k`` if None).
        class_id, weights, metrics_collections, updates_collections, name: as `precision_at_k`.

    Returns:
        ``(precision, update_op)``: float64 scalars, NaN until a prediction was counted.
    """
    collections = (metrics_collections, updates_collections)
    return _at_top_k(
        "precision", "false_positive", labels, predictions_idx, k, class_id, weights, collections, name
    )


def recall_at_top_k(
    labels,
    predictions_idx,
    k=None,
    class_id=None,
    weights=None,
    metrics_collections=None,
    updates_collections=None,
    name=None,
):
    """`tf.metrics.recall_at_top_k`: `recall_at_k` given the top-k class ids themselves.

    Args: as `precision_at_top_k` (name default ``recall_at_<k>``).

    Returns:
        ``(recall, update_op)``: float64 scalars, NaN until a label was counted.
    """
    collections = (metrics_collections, updates_collections)
    return _at_top_k(
        "recall", "false_negative", labels, predictions_idx, k, class_id, weights, collections, name
    )


# -- average precision ----------------------------------------------------------------------------
def _average_precision(labels, predictions_idx, k):
    """Each row's average precision of its `k` ranked ids: the sum of the precisions at the
    ranks that found a label, over ``min(number of labels >= 0, k)`` (NaN for a row without
    one, as TF's)."""
    with name_scope(None, "average_precision", [predictions_idx, labels]) as scope:
        relevant = _found_in(predictions_idx, labels)
        precision = cumsum(relevant, axis=-1) / cumsum(relevant * 0.0 + 1.0, axis=-1)
        precision_sum = reduction_ops.reduce_sum(precision * relevant, -1)
        num_labels = reduction_ops.reduce_sum(_as_float(math_ops.greater_equal(labels, 0)), -1)
        return math_ops.divide(precision_sum, math_ops.minimum(num_labels, float(k)), name=scope)


def _stream_average_precision(labels, predictions_idx, k, weights, collections, scope):
    """The ``max`` and ``total`` float64 local variables of TF's
    ``_streaming_sparse_average_precision_at_top_k``, and the mean of the rows' precisions."""
    average_precision = _average_precision(labels, predictions_idx, k)
    if weights is not None:
        weights = _as_float(convert_to_tensor(weights)) * math_ops.ones_like(average_precision)
        average_precision = average_precision * weights
    with name_scope(None, "max", [average_precision]) as max_scope:
        max_var = metric_variable([], _dtypes.float64, name=max_scope)
        if weights is None:
            batch_max = _as_float(size(average_precision, name="batch_max"))
        else:
            batch_max = reduction_ops.reduce_sum(weights, name="batch_max")
        max_update = state_ops.assign_add(max_var, batch_max, name="update")
    with name_scope(None, "total", [average_precision]) as total_scope:
        total_var = metric_variable([], _dtypes.float64, name=total_scope)
        batch_total = reduction_ops.reduce_sum(average_precision, name="batch_total")
        total_update = state_ops.assign_add(total_var, batch_total, name="update")
    value = math_ops.div_no_nan(total_var, max_var, name="mean")
    update = math_ops.div_no_nan(total_update, max_update, name=scope)
    return _collect(*collections, value, update)


def average_precision_at_k(
    labels, predictions, k, weights=None, metrics_collections=None, updates_collections=None, name=None
):
    """`tf.metrics.average_precision_at_k`: the mean over the rows of the average precision of
    their top-`k` predicted classes.

    Args:
        labels: int64 class ids, ``[batch]`` or ``[batch, num_labels]``. A row's number of
            labels counts its ids in ``[0, num_classes)`` (ids past the classes become -1, as
            TF cleans them), each repeat too; a row without one makes the metric NaN, as in TF.
        predictions: float ``[batch, num_classes]`` scores.
        k: a Python int >= 1.
        weights: optional ``[batch]`` Tensor (or a scalar) weighting each row.
        metrics_collections, updates_collections: lists of collections to add the value and
            the update op to.
        name: the name scope (default ``average_precision_at_<k>``).

    Returns:
        ``(mean_average_precision, update_op)``: float64 scalars (0 before any row). The state
        is ``average_precision_at_<k>/max_1`` (the rows' weights) and ``.../total``, as TF
        names them.

    Raises:
        ValueError: if `k` < 1.
    """
    if k < 1:
        raise ValueError(f"Invalid k={k!r}. `k` should be >= 1.")
    collections = (metrics_collections, updates_collections)
    check_collections(*collections)
    predictions = convert_to_tensor(predictions)
    with name_scope(name, _at_k_name("average_precision", k), [predictions, labels, weights]) as scope:
        _, predictions_idx = top_k(predictions, k)
        labels = convert_to_tensor(labels)
        num_classes = math_ops.cast(predictions.shape.dims[-1], labels.dtype)
        reduction_ops.reduce_max(labels)  # TF's op `Max` (for its cond): the state is then `max_1`
        labels = math_ops.where(
            math_ops.greater_equal(labels, num_classes), math_ops.zeros_like(labels) - 1, labels
        )
        labels = _maybe_expand_labels(labels, predictions_idx)
        predictions_idx = math_ops.cast(predictions_idx, _dtypes.int64)
        return _stream_average_precision(labels, predictions_idx, k, weights, collections, scope)


def sparse_average_precision_at_k(
    labels, predictions, k, weights=None, metrics_collections=None, updates_collections=None, name=None
):
    """`tf.metrics.sparse_average_precision_at_k`: TF's deprecated name of
    `average_precision_at_k`."""
    return average_precision_at_k(
        labels, predictions, k, weights, metrics_collections, updates_collections, name
    )
