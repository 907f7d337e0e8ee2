"""`tf.metrics`' per-threshold metrics (TF's ``metrics_impl``): `true_positives_at_thresholds`,
`false_positives_at_thresholds`, `true_negatives_at_thresholds`, `false_negatives_at_thresholds`,
`precision_at_thresholds`, `recall_at_thresholds`.

Each keeps ``[len(thresholds)]`` float32 local variables (a prediction is positive at threshold
t when it is ``> t``), named as TF's (``precision_at_thresholds/true_positives``), and returns
``(value, update_op)`` of that shape. The counts' value is the variable itself, as in TF.
"""

from nbdist.graph.graph import add_to_collection
from nbdist.ops import math_ops
from nbdist.ops.metrics_confusion import confusion_at_thresholds
from nbdist.ops.metrics_ops import check_collections
from nbdist.ops.variable_scope import variable_scope

__all__ = [
    "false_negatives_at_thresholds",
    "false_positives_at_thresholds",
    "precision_at_thresholds",
    "recall_at_thresholds",
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
