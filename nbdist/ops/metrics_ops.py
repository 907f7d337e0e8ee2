"""Streaming metrics: `tf.metrics.mean`, `tf.metrics.accuracy` (TF's `metrics_impl`).

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

__all__ = ["accuracy", "mean"]


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
