"""Streaming metrics: `tf.metrics.mean`, `tf.metrics.accuracy` and the metrics TF builds on
`mean` (`percentage_below`, `mean_relative_error`, `mean_cosine_distance`), with
`mean_per_class_accuracy` (TF's `metrics_impl`).

A metric keeps its running state in two *local* variables, ``total`` and ``count``
(collections `LOCAL_VARIABLES` and `METRIC_VARIABLES`, not trainable, zeros until
`tf.local_variables_initializer()` runs), and returns ``(value, update_op)`` as TF does:
``value`` reads ``total / count`` without changing anything; ``update_op`` adds the
batch to both and evaluates to the new mean. Re-running the local initializer resets
the metric. Both are ``0`` while ``count`` is 0 (`div_no_nan`).

They are ordinary ref variables, so under `replica_device_setter` they go to a ps task as
every other `VariableV2` does (TF's behaviour too): every worker then updates the same
running total.
"""

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import GraphKeys, add_to_collection
from nbdist.ops import array_ops, math_ops, reduction_ops, state_ops
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.variable_scope import variable_scope

__all__ = [
    "accuracy",
    "mean",
    "mean_cosine_distance",
    "mean_per_class_accuracy",
    "mean_relative_error",
    "percentage_below",
]


def metric_variable(shape, dtype, validate_shape=True, name=None):
    """A non-trainable local variable of zeros (TF's ``metrics_impl.metric_variable``)."""
    return state_ops.Variable(
        lambda: array_ops.zeros(shape, dtype),
        trainable=False,
        collections=[GraphKeys.LOCAL_VARIABLES, GraphKeys.METRIC_VARIABLES],
        validate_shape=validate_shape,
        name=name,
    )


def check_collections(metrics_collections, updates_collections):
    """Raises ValueError unless each collections argument is None, a list or a tuple (as TF)."""
    given = {"metrics_collections": metrics_collections, "updates_collections": updates_collections}
    for what, value in given.items():
        if value is not None and not isinstance(value, (list, tuple)):
            raise ValueError(f"{what} should be a list or a tuple of collection names, got {value!r}")


def mean(values, weights=None, metrics_collections=None, updates_collections=None, name=None):
    """`tf.metrics.mean`: the (weighted) mean of every `values` seen so far.

    Args:
        values: a Tensor of any shape (cast to float32).
        weights: optional Tensor broadcastable to `values`; 0 masks a value.
        metrics_collections, updates_collections: lists of collections to add the
            value and the update op to.
        name: the variable scope (default ``mean``).

    Returns:
        ``(mean, update_op)``: two float32 scalar Tensors.

    Raises:
        ValueError: if a collections argument is not a list or tuple.
    """
    check_collections(metrics_collections, updates_collections)
    with variable_scope(name, "mean", [values, weights]):
        values = math_ops.cast(convert_to_tensor(values), _dtypes.float32)
        total = metric_variable([], _dtypes.float32, name="total")
        count = metric_variable([], _dtypes.float32, name="count")
        if weights is None:
            num_values = math_ops.cast(array_ops.size(values), _dtypes.float32)
        else:
            weights = math_ops.cast(convert_to_tensor(weights), _dtypes.float32)
            weights = weights * math_ops.ones_like(values)  # broadcast to the values' shape
            values = math_ops.multiply(values, weights)
            num_values = reduction_ops.reduce_sum(weights)
        update_total_op = state_ops.assign_add(total, reduction_ops.reduce_sum(values))
        with values.graph.control_dependencies([values]):
            update_count_op = state_ops.assign_add(count, num_values)
        mean_t = math_ops.div_no_nan(total, math_ops.maximum(count, 0.0), name="value")
        update_op = math_ops.div_no_nan(
            update_total_op, math_ops.maximum(update_count_op, 0.0), name="update_op"
        )
    for collection in metrics_collections or ():
        add_to_collection(collection, mean_t)
    for collection in updates_collections or ():
        add_to_collection(collection, update_op)
    return mean_t, update_op


def squeeze_weights(weights, values):
    """TF's weights handling in ``remove_squeezable_dimensions``: one extra trailing axis is
    squeezed, one missing trailing axis is added (static ranks); float32."""
    if weights is None:
        return None
    weights = math_ops.cast(convert_to_tensor(weights), _dtypes.float32)
    wr, vr = weights.shape.ndims, values.shape.ndims
    if wr is not None and vr is not None and wr > 0:
        if wr == vr + 1 and weights.shape.dims[-1] in (1, None):
            weights = array_ops.squeeze(weights, [-1])
        elif wr == vr - 1:
            weights = array_ops.expand_dims(weights, -1)
    return weights


def remove_squeezable_dimensions(labels, predictions):
    """Drops a trailing size-1 axis of whichever has one more dimension (static ranks; TF's
    ``remove_squeezable_dimensions``)."""
    lr, pr = labels.shape.ndims, predictions.shape.ndims
    if lr is not None and pr is not None:
        if pr == lr + 1 and predictions.shape.dims[-1] in (1, None):
            predictions = array_ops.squeeze(predictions, [-1])
        elif lr == pr + 1 and labels.shape.dims[-1] in (1, None):
            labels = array_ops.squeeze(labels, [-1])
    return labels, predictions


def accuracy(
    labels, predictions, weights=None, metrics_collections=None, updates_collections=None, name=None
):
    """`tf.metrics.accuracy`: how often `predictions` equals `labels`, over every batch seen so far.

    Args:
        labels: the true values; predictions: of a compatible shape (cast to the labels'
            dtype when they differ).
        weights, metrics_collections, updates_collections: as `mean`.
        name: the variable scope (default ``accuracy``).

    Returns:
        ``(accuracy, update_op)``, as `mean` of ``cast(equal(predictions, labels), float32)``.

    Raises:
        ValueError: if the shapes of `labels` and `predictions` are incompatible.
    """
    labels, predictions = convert_to_tensor(labels), convert_to_tensor(predictions)
    labels, predictions = remove_squeezable_dimensions(labels, predictions)
    if not predictions.shape.is_compatible_with(labels.shape):
        raise ValueError(
            f"tf.metrics.accuracy: predictions {predictions.name} of shape {predictions.shape} and labels "
            f"{labels.name} of shape {labels.shape} are incompatible"
        )
    if labels.dtype != predictions.dtype:
        predictions = math_ops.cast(predictions, labels.dtype)
    is_correct = math_ops.cast(math_ops.equal(predictions, labels), _dtypes.float32)
    return mean(is_correct, weights, metrics_collections, updates_collections, name or "accuracy")


def _collect(metrics_collections, updates_collections, value, update_op):
    for collection in metrics_collections or ():
        add_to_collection(collection, value)
    for collection in updates_collections or ():
        add_to_collection(collection, update_op)
    return value, update_op


def percentage_below(
    values, threshold, weights=None, metrics_collections=None, updates_collections=None, name=None
):
    """`tf.metrics.percentage_below`: the (weighted) fraction of `values` below `threshold`.

    The `mean` of ``cast(values < threshold, float32)``, scope ``percentage_below_threshold``;
    arguments and returns as `mean`.
    """
    is_below = math_ops.cast(math_ops.less(convert_to_tensor(values), threshold), _dtypes.float32)
    return mean(
        is_below, weights, metrics_collections, updates_collections, name or "percentage_below_threshold"
    )


def mean_relative_error(
    labels,
    predictions,
    normalizer,
    weights=None,
    metrics_collections=None,
    updates_collections=None,
    name=None,
):
    """`tf.metrics.mean_relative_error`: the `mean` of ``abs(labels - predictions) / normalizer``.

    An element whose `normalizer` is 0 counts as an error of 0 (it still counts). Labels,
    predictions and normalizer have one shape (a trailing size-1 axis is squeezed, as TF);
    the scope is ``mean_relative_error``; the rest as `mean`.
    """
    labels, predictions = convert_to_tensor(labels), convert_to_tensor(predictions)
    labels, predictions = remove_squeezable_dimensions(labels, predictions)
    weights = squeeze_weights(weights, predictions)
    predictions, normalizer = remove_squeezable_dimensions(predictions, convert_to_tensor(normalizer))
    relative_errors = math_ops.where(
        math_ops.equal(normalizer, 0.0),
        math_ops.zeros_like(labels),
        math_ops.divide(math_ops.abs(labels - predictions), normalizer),
    )
    return mean(
        relative_errors, weights, metrics_collections, updates_collections, name or "mean_relative_error"
    )


def mean_cosine_distance(
    labels, predictions, dim, weights=None, metrics_collections=None, updates_collections=None, name=None
):
    """`tf.metrics.mean_cosine_distance`: ``1 - mean(sum(labels * predictions, dim))``.

    Labels and predictions are taken as unit vectors along `dim` (not normalised, as in TF);
    `weights` has size 1 along `dim`. The state is ``mean_cosine_distance/total`` and
    ``.../count``; the rest as `mean`.
    """
    labels, predictions = convert_to_tensor(labels), convert_to_tensor(predictions)
    labels, predictions = remove_squeezable_dimensions(labels, predictions)
    weights = squeeze_weights(weights, predictions)
    radial_diffs = reduction_ops.reduce_sum(math_ops.multiply(predictions, labels), axis=[dim], keepdims=True)
    mean_distance, update_op = mean(radial_diffs, weights, None, None, name or "mean_cosine_distance")
    mean_distance = math_ops.subtract(1.0, mean_distance)
    update_op = math_ops.subtract(1.0, update_op)
    return _collect(metrics_collections, updates_collections, mean_distance, update_op)


def mean_per_class_accuracy(
    labels,
    predictions,
    num_classes,
    weights=None,
    metrics_collections=None,
    updates_collections=None,
    name=None,
):
    """`tf.metrics.mean_per_class_accuracy`: the mean over the classes of each class' accuracy.

    Args:
        labels, predictions: integer class ids in ``[0, num_classes)``, flattened.
        num_classes: a Python int: the state is ``mean_accuracy/total`` and ``.../count``, each
            ``[num_classes]`` float32 (the weighted number of each label, and of it predicted).
        weights: optional Tensor of `labels`' shape (flattened).
        metrics_collections, updates_collections: as `mean`.
        name: the variable scope (default ``mean_accuracy``).

    Returns:
        ``(mean_accuracy, update_op)``: a float32 scalar (a class never seen as a label counts
        0 but is still averaged over, as in TF), and, as TF's, the update of the
        ``[num_classes]`` per-class accuracies.
    """
    check_collections(metrics_collections, updates_collections)
    with variable_scope(name, "mean_accuracy", [predictions, labels, weights]):
        labels = math_ops.cast(convert_to_tensor(labels), _dtypes.int64)
        predictions = convert_to_tensor(predictions)
        if (labels.shape.ndims or 0) > 1:
            labels = array_ops.reshape(labels, [-1])
        if (predictions.shape.ndims or 0) > 1:
            predictions = array_ops.reshape(predictions, [-1])
        if not predictions.shape.is_compatible_with(labels.shape):
            raise ValueError(
                f"tf.metrics.mean_per_class_accuracy: predictions of shape {predictions.shape} and "
                f"labels of shape {labels.shape} are incompatible"
            )
        total = metric_variable([num_classes], _dtypes.float32, name="total")
        count = metric_variable([num_classes], _dtypes.float32, name="count")
        ones = math_ops.ones_like(math_ops.cast(labels, _dtypes.float32))
        if labels.dtype != predictions.dtype:
            predictions = math_ops.cast(predictions, labels.dtype)
        is_correct = math_ops.cast(math_ops.equal(predictions, labels), _dtypes.float32)
        if weights is not None:
            weights = convert_to_tensor(weights)
            if (weights.shape.ndims or 0) > 1:
                weights = array_ops.reshape(weights, [-1])
            weights = math_ops.cast(weights, _dtypes.float32)
            is_correct = is_correct * weights
            ones = ones * weights
        update_total_op = state_ops.scatter_add(total, labels, ones)
        update_count_op = state_ops.scatter_add(count, labels, is_correct)
        per_class = math_ops.div_no_nan(count, math_ops.maximum(total, 0.0))
        value = reduction_ops.reduce_mean(per_class, name="mean_accuracy")
        update_op = math_ops.div_no_nan(
            update_count_op, math_ops.maximum(update_total_op, 0.0), name="update_op"
        )
    return _collect(metrics_collections, updates_collections, value, update_op)
