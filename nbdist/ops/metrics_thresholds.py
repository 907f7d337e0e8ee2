"""`tf.metrics`' per-threshold metrics (TF's ``metrics_impl``): `true_positives_at_thresholds`,
`false_positives_at_thresholds`, `true_negatives_at_thresholds`, `false_negatives_at_thresholds`,
`precision_at_thresholds`, `recall_at_thresholds`; and the searches over evenly spaced
thresholds `sensitivity_at_specificity`, `specificity_at_sensitivity`.

Each keeps ``[len(thresholds)]`` float32 local variables (a prediction is positive at threshold
t when it is ``> t``), named as TF's (``precision_at_thresholds/true_positives``), and returns
``(value, update_op)`` of that shape. The counts' value is the variable itself, as in TF.
"""

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import add_to_collection
from nbdist.ops import math_ops, reduction_ops
from nbdist.ops.metrics_confusion import confusion_at_thresholds
from nbdist.ops.metrics_ops import check_collections
from nbdist.ops.scan_ops import cumsum
from nbdist.ops.variable_scope import variable_scope

__all__ = [
    "false_negatives_at_thresholds",
    "false_positives_at_thresholds",
    "precision_at_thresholds",
    "recall_at_thresholds",
    "sensitivity_at_specificity",
    "specificity_at_sensitivity",
    "true_negatives_at_thresholds",
    "true_positives_at_thresholds",
]

_KEYS = {"true_positives": "tp", "false_negatives": "fn", "true_negatives": "tn", "false_positives": "fp"}


def _collect(metrics_collections, updates_collections, value, update_op):
    for collection in metrics_collections or ():
        add_to_collection(collection, value)
    for collection in updates_collections or ():
        add_to_collection(collection, update_op)
    return value, update_op


def _count_at_thresholds(kind):
    key = _KEYS[kind]

    def fn(
        labels,
        predictions,
        thresholds,
        weights=None,
        metrics_collections=None,
        updates_collections=None,
        name=None,
    ):
        check_collections(metrics_collections, updates_collections)
        with variable_scope(name, kind, [predictions, labels, weights]):
            values, updates = confusion_at_thresholds(
                labels, predictions, thresholds, weights, includes=(key,)
            )
        return _collect(metrics_collections, updates_collections, values[key], updates[key])

    fn.__name__ = fn.__qualname__ = f"{kind}_at_thresholds"
    fn.__doc__ = f"""`tf.metrics.{kind}_at_thresholds`: the (weighted) {kind.replace("_", " ")} per threshold.

    Args:
        labels: Tensor cast to bool; predictions: float Tensor in [0, 1] of the same shape.
        thresholds: a list of Python floats.
        weights: optional Tensor broadcastable to `labels`.
        metrics_collections, updates_collections: lists of collections to add the value and
            the update op to.
        name: the variable scope (default ``{kind}``).

    Returns:
        ``(value, update_op)``: float32 ``[len(thresholds)]``; the value is the local variable
        ``{kind}/{kind}``.
    """
    return fn


true_positives_at_thresholds = _count_at_thresholds("true_positives")
false_positives_at_thresholds = _count_at_thresholds("false_positives")
true_negatives_at_thresholds = _count_at_thresholds("true_negatives")
false_negatives_at_thresholds = _count_at_thresholds("false_negatives")


def _ratio_at_thresholds(kind, other, labels, predictions, thresholds, weights, metrics_c, updates_c, name):
    check_collections(metrics_c, updates_c)
    with variable_scope(name, f"{kind}_at_thresholds", [predictions, labels, weights]):
        values, updates = confusion_at_thresholds(
            labels, predictions, thresholds, weights, includes=("tp", other)
        )
        epsilon = 1e-7

        def compute(tp, o, op_name):
            return math_ops.divide(tp, epsilon + tp + o, name=f"{kind}_{op_name}")

        value = compute(values["tp"], values[other], "value")
        update_op = compute(updates["tp"], updates[other], "update_op")
    return _collect(metrics_c, updates_c, value, update_op)


def precision_at_thresholds(
    labels,
    predictions,
    thresholds,
    weights=None,
    metrics_collections=None,
    updates_collections=None,
    name=None,
):
    """`tf.metrics.precision_at_thresholds`: ``tp / (tp + fp + 1e-7)`` at each threshold.

    Args: as `true_positives_at_thresholds` (name default ``precision_at_thresholds``).

    Returns:
        ``(precision, update_op)``: float32 ``[len(thresholds)]``.
    """
    return _ratio_at_thresholds(
        "precision",
        "fp",
        labels,
        predictions,
        thresholds,
        weights,
        metrics_collections,
        updates_collections,
        name,
    )


def recall_at_thresholds(
    labels,
    predictions,
    thresholds,
    weights=None,
    metrics_collections=None,
    updates_collections=None,
    name=None,
):
    """`tf.metrics.recall_at_thresholds`: ``tp / (tp + fn + 1e-7)`` at each threshold.

    Args: as `true_positives_at_thresholds` (name default ``recall_at_thresholds``).

    Returns:
        ``(recall, update_op)``: float32 ``[len(thresholds)]``.
    """
    return _ratio_at_thresholds(
        "recall",
        "fn",
        labels,
        predictions,
        thresholds,
        weights,
        metrics_collections,
        updates_collections,
        name,
    )


_KEPSILON = 1e-7


def _search_thresholds(num_thresholds, last):
    """TF's evenly spaced thresholds: ``-1e-7``, the ``num_thresholds - 2`` inner ones, `last`."""
    inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
    return [0.0 - _KEPSILON, *inner, last]


def _rate(num, other, index, name):
    return math_ops.divide(num[index], num[index] + other[index] + _KEPSILON, name)


def _sensitivity_at(updates, specificity, name):
    specificities = math_ops.divide(updates["tn"], updates["tn"] + updates["fp"] + _KEPSILON)
    index = math_ops.cast(reduction_ops.argmin(math_ops.abs(specificities - specificity), 0), _dtypes.int32)
    return _rate(updates["tp"], updates["fn"], index, name)


def _specificity_at(updates, sensitivity, name):
    """The specificity at the *last* threshold whose sensitivity is nearest `sensitivity` (TF's
    cumsum-argmax trick)."""
    distance = math_ops.abs(
        math_ops.divide(updates["tp"], updates["tp"] + updates["fn"] + _KEPSILON) - sensitivity
    )
    at_min = math_ops.cast(math_ops.equal(distance, reduction_ops.reduce_min(distance)), _dtypes.int64)
    index = math_ops.cast(reduction_ops.argmax(cumsum(at_min), 0), _dtypes.int32)
    return _rate(updates["tn"], updates["fp"], index, name)


def _at_rate(kind, given, target, compute, last, args):
    labels, predictions, weights, num_thresholds, metrics_c, updates_c, name = args
    if target < 0 or target > 1:
        raise ValueError(f"`{given}` must be in the range [0, 1], got {target!r}")
    check_collections(metrics_c, updates_c)
    with variable_scope(name, kind, [predictions, labels, weights]):
        thresholds = _search_thresholds(num_thresholds, last)
        values, updates = confusion_at_thresholds(labels, predictions, thresholds, weights)
        value = compute(values, target, "value")
        update_op = compute(updates, target, "update_op")
    return _collect(metrics_c, updates_c, value, update_op)


def sensitivity_at_specificity(
    labels,
    predictions,
    specificity,
    weights=None,
    num_thresholds=200,
    metrics_collections=None,
    updates_collections=None,
    name=None,
):
    """`tf.metrics.sensitivity_at_specificity`: the recall at the threshold whose specificity
    is nearest `specificity` (the first such of `num_thresholds` evenly spaced in [0, 1]).

    Args:
        labels: Tensor cast to bool; predictions: float Tensor in [0, 1] of the same shape.
        specificity: a Python float in [0, 1].
        weights: optional Tensor broadcastable to `labels`.
        num_thresholds: the number of thresholds searched.
        metrics_collections, updates_collections: lists of collections to add the value and
            the update op to.
        name: the variable scope (default ``sensitivity_at_specificity``).

    Returns:
        ``(sensitivity, update_op)``: float32 scalars. The state is the four
        ``[num_thresholds]`` counts (``sensitivity_at_specificity/true_positives``...).

    Raises:
        ValueError: if `specificity` is outside [0, 1].
    """
    args = (labels, predictions, weights, num_thresholds, metrics_collections, updates_collections, name)
    return _at_rate(
        "sensitivity_at_specificity", "specificity", specificity, _sensitivity_at, 1.0 + _KEPSILON, args
    )


def specificity_at_sensitivity(
    labels,
    predictions,
    sensitivity,
    weights=None,
    num_thresholds=200,
    metrics_collections=None,
    updates_collections=None,
    name=None,
):
    """`tf.metrics.specificity_at_sensitivity`: the specificity at the threshold whose
    sensitivity is nearest `sensitivity` (the last such; the top threshold is ``1 - 1e-7``, as
    in TF).

    Args: as `sensitivity_at_specificity`, with `sensitivity` (name default
    ``specificity_at_sensitivity``).

    Returns:
        ``(specificity, update_op)``: float32 scalars.

    Raises:
        ValueError: if `sensitivity` is outside [0, 1].
    """
    args = (labels, predictions, weights, num_thresholds, metrics_collections, updates_collections, name)
    return _at_rate(
        "specificity_at_sensitivity", "sensitivity", sensitivity, _specificity_at, 1.0 - _KEPSILON, args
    )
