"""Streaming metrics built on counts (TF's ``metrics_impl``): the confusion counts
(`true_positives`, `false_positives`, `true_negatives`, `false_negatives`), `precision`,
`recall`, `auc` (TF's trapezoidal ROC / PR curves over ``num_thresholds``), the regression
errors (`mean_absolute_error`, `mean_squared_error`, `root_mean_squared_error`),
`mean_tensor` and `mean_iou`.

Each keeps its state in local variables named as TF names them (``precision/true_positives/count``,
``auc/true_positives`` of shape ``[num_thresholds]``, ``mean_iou/total_confusion_matrix``...) and
returns ``(value, update_op)`` with `metrics_ops.mean`'s semantics: ``value`` reads the state,
``update_op`` adds the batch to it and evaluates to the new value. Boolean conditions are
counted as float32 products (``labels * predictions`` of the 0/1 casts), the same numbers as
TF's ``logical_and``.
"""

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import add_to_collection
from nbdist.ops import math_ops, reduction_ops, state_ops
from nbdist.ops.concat_slice_ops import slice as _slice
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.matmul_ops import matmul
from nbdist.ops.metrics_ops import (
    check_collections,
    mean,
    metric_variable,
    remove_squeezable_dimensions,
    squeeze_weights,
)
from nbdist.ops.reshape_ops import reshape, transpose
from nbdist.ops.variable_scope import variable_scope

__all__ = [
    "auc",
    "false_negatives",
    "false_positives",
    "mean_absolute_error",
    "mean_iou",
    "mean_squared_error",
    "mean_tensor",
    "precision",
    "recall",
    "root_mean_squared_error",
    "true_negatives",
    "true_positives",
]


def _add(collections, tensor):
    for collection in collections or ():
        add_to_collection(collection, tensor)


def _as_bool_floats(labels, predictions, weights):
    """Labels and predictions as 0/1 float32 (TF casts both to bool), squeezed as TF does."""
    labels, predictions = convert_to_tensor(labels), convert_to_tensor(predictions)
    labels, predictions = remove_squeezable_dimensions(labels, predictions)
    as01 = lambda t: math_ops.cast(math_ops.cast(t, _dtypes.bool), _dtypes.float32)  # noqa: E731
    labels, predictions = as01(labels), as01(predictions)
    return labels, predictions, squeeze_weights(weights, predictions)


# -- the four confusion counts -----------------------------------------------------------------------
_CONDITIONS = {  # (label is positive, prediction is positive) for each count
    "true_positives": (True, True),
    "false_positives": (False, True),
    "true_negatives": (False, False),
    "false_negatives": (True, False),
}


def _count(kind, labels, predictions, weights, metrics_collections, updates_collections, name):
    check_collections(metrics_collections, updates_collections)
    with variable_scope(name, kind, [predictions, labels, weights]):
        labels, predictions, weights = _as_bool_floats(labels, predictions, weights)
        want_label, want_prediction = _CONDITIONS[kind]
        lab = labels if want_label else 1.0 - labels
        pred = predictions if want_prediction else 1.0 - predictions
        values = lab * pred
        if weights is not None:
            values = values * weights
        count = metric_variable([], _dtypes.float32, name="count")
        value = math_ops.identity(count)
        update_op = state_ops.assign_add(count, reduction_ops.reduce_sum(values))
    _add(metrics_collections, value)
    _add(updates_collections, update_op)
    return value, update_op


def _count_fn(kind):
    def fn(labels, predictions, weights=None, metrics_collections=None, updates_collections=None, name=None):
        return _count(kind, labels, predictions, weights, metrics_collections, updates_collections, name)

    fn.__name__ = fn.__qualname__ = kind
    fn.__doc__ = f"""`tf.metrics.{kind}`: the (weighted) number of {kind.replace("_", " ")} seen so far.

    Args:
        labels, predictions: Tensors of one shape, cast to bool (nonzero is positive).
        weights: optional Tensor broadcastable to `labels`.
        metrics_collections, updates_collections: lists of collections to add the
            value and the update op to.
        name: the variable scope (default ``{kind}``).

    Returns:
        ``(value, update_op)``: float32 scalars; the state is ``{kind}/count``.
    """
    return fn


true_positives = _count_fn("true_positives")
false_positives = _count_fn("false_positives")
true_negatives = _count_fn("true_negatives")
false_negatives = _count_fn("false_negatives")


def _ratio(kind, other, labels, predictions, weights, metrics_collections, updates_collections, name):
    """``tp / (tp + other)``, 0 while the sum is 0 (precision: other = fp; recall: fn)."""
    check_collections(metrics_collections, updates_collections)
    with variable_scope(name, kind, [predictions, labels, weights]):
        labels, predictions, weights = _as_bool_floats(labels, predictions, weights)
        tp, tp_update = true_positives(labels, predictions, weights)
        o, o_update = _count(other, labels, predictions, weights, None, None, None)

        def compute(t, f, op_name):
            return _where_or(math_ops.greater(t + f, 0.0), math_ops.divide(t, t + f), 0.0, op_name)

        value = compute(tp, o, "value")
        update_op = compute(tp_update, o_update, "update_op")
    _add(metrics_collections, value)
    _add(updates_collections, update_op)
    return value, update_op


def _where_or(condition, x, y, name):
    """``where(condition, x, y)`` for a Python number `y` (in `x`'s dtype)."""
    return math_ops.where(condition, x, math_ops.zeros_like(x) + y, name=name)


def precision(
    labels, predictions, weights=None, metrics_collections=None, updates_collections=None, name=None
):
    """`tf.metrics.precision`: ``tp / (tp + fp)`` over every batch seen so far.

    0 while nothing was predicted positive.

    Args:
        labels, predictions: Tensors of one shape, cast to bool.
        weights, metrics_collections, updates_collections: as `true_positives`.
        name: the variable scope (default ``precision``).

    Returns:
        ``(precision, update_op)``: float32 scalars.
    """
    return _ratio(
        "precision",
        "false_positives",
        labels,
        predictions,
        weights,
        metrics_collections,
        updates_collections,
        name,
    )


def recall(labels, predictions, weights=None, metrics_collections=None, updates_collections=None, name=None):
    """`tf.metrics.recall`: ``tp / (tp + fn)`` over every batch seen so far.

    0 while no label was positive.

    Args:
        labels, predictions: Tensors of one shape, cast to bool.
        weights, metrics_collections, updates_collections: as `true_positives`.
        name: the variable scope (default ``recall``).

    Returns:
        ``(recall, update_op)``: float32 scalars.
    """
    return _ratio(
        "recall",
        "false_negatives",
        labels,
        predictions,
        weights,
        metrics_collections,
        updates_collections,
        name,
    )


# -- regression errors and mean_tensor --------------------------------------------------------------
def _errors(labels, predictions, weights):
    labels, predictions = convert_to_tensor(labels), convert_to_tensor(predictions)
    labels, predictions = remove_squeezable_dimensions(labels, predictions)
    if labels.dtype != predictions.dtype:
        predictions = math_ops.cast(predictions, labels.dtype)
    return labels, predictions, squeeze_weights(weights, predictions)


def mean_absolute_error(
    labels, predictions, weights=None, metrics_collections=None, updates_collections=None, name=None
):
    """`tf.metrics.mean_absolute_error`: the `mean` of ``abs(predictions - labels)``.

    The scope is ``mean_absolute_error``; arguments and returns as `mean`.
    """
    labels, predictions, weights = _errors(labels, predictions, weights)
    errors = math_ops.abs(predictions - labels)
    return mean(errors, weights, metrics_collections, updates_collections, name or "mean_absolute_error")


def mean_squared_error(
    labels, predictions, weights=None, metrics_collections=None, updates_collections=None, name=None
):
    """`tf.metrics.mean_squared_error`: the `mean` of ``(predictions - labels)**2``.

    The scope is ``mean_squared_error``; arguments and returns as `mean`.
    """
    labels, predictions, weights = _errors(labels, predictions, weights)
    errors = math_ops.squared_difference(labels, predictions)
    return mean(errors, weights, metrics_collections, updates_collections, name or "mean_squared_error")


def root_mean_squared_error(
    labels, predictions, weights=None, metrics_collections=None, updates_collections=None, name=None
):
    """`tf.metrics.root_mean_squared_error`: the square root of `mean_squared_error`.

    The scope is ``root_mean_squared_error``; arguments and returns as `mean`.
    """
    check_collections(metrics_collections, updates_collections)
    labels, predictions, weights = _errors(labels, predictions, weights)
    errors = math_ops.squared_difference(labels, predictions)
    mse, update_mse = mean(errors, weights, None, None, name or "root_mean_squared_error")
    rmse, update_op = math_ops.sqrt(mse), math_ops.sqrt(update_mse)
    _add(metrics_collections, rmse)
    _add(updates_collections, update_op)
    return rmse, update_op


def mean_tensor(values, weights=None, metrics_collections=None, updates_collections=None, name=None):
    """`tf.metrics.mean_tensor`: the elementwise (weighted) mean of every `values` seen so far.

    Args:
        values: a Tensor of a fully known static shape (cast to float32).
        weights: optional Tensor broadcastable to `values`.
        metrics_collections, updates_collections: as `mean`.
        name: the variable scope (default ``mean``).

    Returns:
        ``(mean, update_op)``: float32 Tensors of `values`' shape; the state is
        ``total_tensor`` and ``count_tensor`` of that shape (0 where the count is 0).
    """
    check_collections(metrics_collections, updates_collections)
    with variable_scope(name, "mean", [values, weights]):
        values = math_ops.cast(convert_to_tensor(values), _dtypes.float32)
        total = metric_variable(values.shape, _dtypes.float32, name="total_tensor")
        count = metric_variable(values.shape, _dtypes.float32, name="count_tensor")
        num_values = math_ops.ones_like(values)
        weights = squeeze_weights(weights, values)
        if weights is not None:
            weights = weights * num_values  # broadcast to the values' shape
            values = values * weights
            num_values = num_values * weights
        update_total_op = state_ops.assign_add(total, values)
        with values.graph.control_dependencies([values]):
            update_count_op = state_ops.assign_add(count, num_values)
        value = math_ops.div_no_nan(total, math_ops.maximum(count, 0.0), name="value")
        update_op = math_ops.div_no_nan(
            update_total_op, math_ops.maximum(update_count_op, 0.0), name="update_op"
        )
    _add(metrics_collections, value)
    _add(updates_collections, update_op)
    return value, update_op


# -- auc ----------------------------------------------------------------------------------------------
def confusion_at_thresholds(labels, predictions, thresholds, weights, includes=("tp", "fn", "tn", "fp")):
    """The tp, fn, tn, fp local variables named in `includes` (shape ``[len(thresholds)]``, created
    in TF's order) and their update ops, as dicts by key: a prediction is positive at threshold t
    when it is ``> t`` (TF's ``_confusion_matrix_at_thresholds``)."""
    labels, predictions = convert_to_tensor(labels), convert_to_tensor(predictions)
    labels, predictions = remove_squeezable_dimensions(labels, predictions)
    predictions = math_ops.cast(predictions, _dtypes.float32)
    weights = squeeze_weights(weights, predictions)
    pred_row = reshape(predictions, [1, -1])
    label_pos = reshape(math_ops.cast(math_ops.cast(labels, _dtypes.bool), _dtypes.float32), [1, -1])
    thresh_col = reshape(convert_to_tensor(thresholds, dtype=_dtypes.float32), [-1, 1])
    pred_pos = math_ops.cast(math_ops.greater(pred_row, thresh_col), _dtypes.float32)  # [T, N]
    if weights is not None:
        weights = reshape(weights * math_ops.ones_like(predictions), [1, -1])
    values, updates = {}, {}
    for key, var_name, lab, pred in (
        ("tp", "true_positives", label_pos, pred_pos),
        ("fn", "false_negatives", label_pos, 1.0 - pred_pos),
        ("tn", "true_negatives", 1.0 - label_pos, 1.0 - pred_pos),
        ("fp", "false_positives", 1.0 - label_pos, pred_pos),
    ):
        if key not in includes:
            continue
        variable = metric_variable([len(thresholds)], _dtypes.float32, name=var_name)
        hits = lab * pred
        if weights is not None:
            hits = hits * weights
        values[key] = variable
        updates[key] = state_ops.assign_add(variable, reduction_ops.reduce_sum(hits, 1))
    return values, updates


def auc(
    labels,
    predictions,
    weights=None,
    num_thresholds=200,
    metrics_collections=None,
    updates_collections=None,
    curve="ROC",
    name=None,
    summation_method="trapezoidal",
    thresholds=None,
):
    """`tf.metrics.auc`: the area under the ROC or precision-recall curve.

    TF's Riemann sum over `num_thresholds` evenly spaced thresholds in [0, 1] (or the given
    `thresholds`); a prediction is positive at threshold t when it is ``> t``. Predictions are
    not checked to lie in [0, 1] (TF asserts it).

    Args:
        labels: Tensor cast to bool; predictions: float Tensor in [0, 1] of the same shape.
        weights: optional Tensor broadcastable to `labels`.
        num_thresholds: the number of thresholds (ignored when `thresholds` is given).
        metrics_collections, updates_collections: as `mean`.
        curve: ``"ROC"`` or ``"PR"``.
        name: the variable scope (default ``auc``).
        summation_method: ``"trapezoidal"``, ``"careful_interpolation"`` (PR only; as
            trapezoidal for ROC), ``"minoring"`` or ``"majoring"``.
        thresholds: optional list of thresholds in [0, 1].

    Returns:
        ``(auc, update_op)``: float32 scalars. The state is ``auc/true_positives``,
        ``false_negatives``, ``true_negatives``, ``false_positives``, each ``[num_thresholds]``.

    Raises:
        ValueError: for an unknown `curve` or `summation_method`.
    """
    check_collections(metrics_collections, updates_collections)
    if curve not in ("ROC", "PR"):
        raise ValueError(f"curve must be either ROC or PR, {curve} unknown")
    if summation_method not in ("trapezoidal", "careful_interpolation", "minoring", "majoring"):
        raise ValueError(f"Invalid summation_method: {summation_method}")
    with variable_scope(name, "auc", [labels, predictions, weights]):
        kepsilon = 1e-7
        if thresholds is not None:
            thresholds = sorted(thresholds)
            num_thresholds = len(thresholds) + 2
        else:
            thresholds = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
        thresholds = [0.0 - kepsilon, *thresholds, 1.0 + kepsilon]
        values, updates = confusion_at_thresholds(labels, predictions, thresholds, weights)
        n = num_thresholds - 1

        def head(t):
            return _slice(t, [0], [n])

        def tail(t):
            return _slice(t, [1], [n])

        def interpolate_pr_auc(tp, fp, fn):
            dtp = head(tp) - tail(tp)
            p = tp + fp
            prec_slope = math_ops.div_no_nan(dtp, math_ops.maximum(head(p) - tail(p), 0.0))
            intercept = tail(tp) - prec_slope * tail(p)
            both = math_ops.cast(math_ops.greater(head(p), 0.0), _dtypes.float32) * math_ops.cast(
                math_ops.greater(tail(p), 0.0), _dtypes.float32
            )
            safe_p_ratio = math_ops.where(
                math_ops.greater(both, 0.0),
                math_ops.div_no_nan(head(p), math_ops.maximum(tail(p), 0.0)),
                math_ops.ones_like(tail(p)),
            )
            increments = math_ops.div_no_nan(
                prec_slope * (dtp + intercept * math_ops.log(safe_p_ratio)),
                math_ops.maximum(tail(tp) + tail(fn), 0.0),
            )
            return reduction_ops.reduce_sum(increments, name="interpolate_pr_auc")  # (TF's name)

        def compute_auc(tp, fn, tn, fp, op_name):
            epsilon = 1.0e-6
            if curve == "PR" and summation_method == "careful_interpolation":
                return interpolate_pr_auc(tp, fp, fn)
            rec = math_ops.divide(tp + epsilon, tp + fn + epsilon)
            if curve == "ROC":
                x, y = math_ops.divide(fp, fp + tn + epsilon), rec
            else:
                x, y = rec, math_ops.divide(tp + epsilon, tp + fp + epsilon)
            if summation_method == "minoring":
                heights = math_ops.minimum(head(y), tail(y))
            elif summation_method == "majoring":
                heights = math_ops.maximum(head(y), tail(y))
            else:
                heights = (head(y) + tail(y)) / 2.0
            return reduction_ops.reduce_sum((head(x) - tail(x)) * heights, name=op_name)

        value = compute_auc(values["tp"], values["fn"], values["tn"], values["fp"], "value")
        update_op = compute_auc(updates["tp"], updates["fn"], updates["tn"], updates["fp"], "update_op")
    _add(metrics_collections, value)
    _add(updates_collections, update_op)
    return value, update_op


# -- mean_iou -----------------------------------------------------------------------------------------
def mean_iou(
    labels,
    predictions,
    num_classes,
    weights=None,
    metrics_collections=None,
    updates_collections=None,
    name=None,
):
    """`tf.metrics.mean_iou`: the mean intersection-over-union of the classes seen so far.

    Per class ``tp / (tp + fp + fn)`` from a streaming confusion matrix; classes never seen as
    label or prediction are left out (0 before any).

    Args:
        labels, predictions: integer Tensors of one shape, class ids in ``[0, num_classes)``
            (out-of-range ids are not counted; TF raises).
        num_classes: a Python int.
        weights: optional Tensor of `labels`' shape.
        metrics_collections, updates_collections: as `mean`.
        name: the variable scope (default ``mean_iou``).

    Returns:
        ``(mean_iou, update_op)``: a float32 scalar, and the update of the float64
        ``[num_classes, num_classes]`` state ``mean_iou/total_confusion_matrix`` (rows are labels).
    """
    check_collections(metrics_collections, updates_collections)
    with variable_scope(name, "mean_iou", [predictions, labels, weights]):
        labels, predictions = convert_to_tensor(labels), convert_to_tensor(predictions)
        if not predictions.shape.is_compatible_with(labels.shape):
            raise ValueError(
                f"tf.metrics.mean_iou: predictions of shape {predictions.shape} and labels of shape "
                f"{labels.shape} are incompatible"
            )
        total_cm = metric_variable([num_classes, num_classes], _dtypes.float64, name="total_confusion_matrix")
        label_hot = reduction_ops.one_hot(reshape(labels, [-1]), num_classes, dtype=_dtypes.float64)
        pred_hot = reduction_ops.one_hot(reshape(predictions, [-1]), num_classes, dtype=_dtypes.float64)
        if weights is not None:
            weights = math_ops.cast(convert_to_tensor(weights), _dtypes.float64)
            weights = reshape(weights * math_ops.ones_like(math_ops.cast(labels, _dtypes.float64)), [-1, 1])
            label_hot = label_hot * weights
        update_op = state_ops.assign_add(total_cm, matmul(transpose(label_hot), pred_hot))

        sum_over_row = math_ops.cast(reduction_ops.reduce_sum(total_cm, 0), _dtypes.float32)
        sum_over_col = math_ops.cast(reduction_ops.reduce_sum(total_cm, 1), _dtypes.float32)
        eye = reduction_ops.one_hot(math_ops.range(num_classes), num_classes, dtype=_dtypes.float64)
        cm_diag = math_ops.cast(reduction_ops.reduce_sum(total_cm * eye, 1), _dtypes.float32)
        denominator = sum_over_row + sum_over_col - cm_diag
        num_valid = reduction_ops.reduce_sum(
            math_ops.cast(math_ops.not_equal(denominator, 0.0), _dtypes.float32)
        )
        denominator = math_ops.where(
            math_ops.greater(denominator, 0.0), denominator, math_ops.ones_like(denominator)
        )
        iou = math_ops.divide(cm_diag, denominator)
        value = math_ops.where(
            math_ops.greater(num_valid, 0.0),
            reduction_ops.reduce_sum(iou, name="mean_iou") / num_valid,
            math_ops.zeros_like(num_valid),
        )
    _add(metrics_collections, value)
    _add(updates_collections, update_op)
    return value, update_op
