"""`tf.losses` (TF 1.x's `losses_impl` and `losses.util`): weighted losses built from existing ops.

Every loss follows TF's recipe: inputs are cast to float32, a per-element loss is computed,
and `compute_weighted_loss` multiplies it by `weights` (broadcast), reduces it as the
`Reduction` says, casts back to the loss's input dtype and adds the result to the `LOSSES`
collection. No new op types: gradients and export come from the ops used.

    loss = tf.losses.softmax_cross_entropy(onehot_labels, logits, label_smoothing=0.1)
    total = tf.losses.get_total_loss()  # the LOSSES plus the REGULARIZATION_LOSSES

Differences from TF: `weights` that are not broadcastable to the losses raise `ValueError`
when both static shapes are known (as TF) and otherwise fail in the multiply at run time
(TF inserts an `Assert`); `sparse_softmax_cross_entropy` squeezes a trailing 1 dimension of
the labels only when ranks are known statically (TF adds a `tf.cond` otherwise).
"""

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import GraphKeys, add_to_collection, get_collection, name_scope
from nbdist.ops import math_ops, nn_ops
from nbdist.ops.constant_op import constant, convert_to_tensor
from nbdist.ops.reduction_ops import reduce_sum
from nbdist.ops.reshape_ops import squeeze
from nbdist.ops.shape_ops import rank, shape, size

__all__ = [
    "Reduction",
    "absolute_difference",
    "add_loss",
    "compute_weighted_loss",
    "cosine_distance",
    "get_losses",
    "get_regularization_loss",
    "get_regularization_losses",
    "get_total_loss",
    "hinge_loss",
    "huber_loss",
    "log_loss",
    "mean_pairwise_squared_error",
    "mean_squared_error",
    "sigmoid_cross_entropy",
    "softmax_cross_entropy",
    "sparse_softmax_cross_entropy",
]

_LOSSES = GraphKeys.LOSSES


class Reduction:
    """`tf.losses.Reduction`: how `compute_weighted_loss` reduces the weighted losses.

    ``NONE`` keeps their shape; ``SUM`` sums them; ``MEAN`` divides the sum by the sum of the
    weights; ``SUM_OVER_BATCH_SIZE`` by the number of elements; ``SUM_BY_NONZERO_WEIGHTS``
    (the default) by the number of non-zero weights.
    """

    NONE = "none"
    SUM = "weighted_sum"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    MEAN = "weighted_mean"
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS

    @classmethod
    def all(cls):
        return (
            cls.NONE,
            cls.SUM,
            cls.MEAN,
            cls.SUM_OVER_BATCH_SIZE,
            cls.SUM_OVER_NONZERO_WEIGHTS,
            cls.SUM_BY_NONZERO_WEIGHTS,
        )

    @classmethod
    def validate(cls, key):
        if key not in cls.all():
            raise ValueError(f"Invalid Reduction Key {key!r}. Key should be one of {cls.all()}.")


# -- the LOSSES collection ---------------------------------------------------------------------------
def add_loss(loss, loss_collection=_LOSSES):
    """`tf.losses.add_loss`: adds `loss` to `loss_collection` (nothing for a falsy collection)."""
    if loss_collection:
        add_to_collection(loss_collection, loss)


def get_losses(scope=None, loss_collection=_LOSSES):
    """`tf.losses.get_losses`: the losses in `loss_collection` whose names match `scope`."""
    return get_collection(loss_collection, scope)


def get_regularization_losses(scope=None):
    """`tf.losses.get_regularization_losses`: the `REGULARIZATION_LOSSES` matching `scope`."""
    return get_collection(GraphKeys.REGULARIZATION_LOSSES, scope)


def get_regularization_loss(scope=None, name="total_regularization_loss"):
    """`tf.losses.get_regularization_loss`: their sum, or a float32 0.0 when there are none."""
    losses = get_regularization_losses(scope)
    if losses:
        return math_ops.add_n(losses, name=name)
    return constant(0.0)


def get_total_loss(add_regularization_losses=True, name="total_loss", scope=None):
    """`tf.losses.get_total_loss`: the sum of the `LOSSES` (and the regularization losses).

    Raises:
        ValueError: if there is no loss to add (as TF's `add_n`).
    """
    losses = get_losses(scope=scope)
    if add_regularization_losses:
        losses += get_regularization_losses(scope=scope)
    return math_ops.add_n(losses, name=name)


# -- weighting and reduction ----------------------------------------------------------------------------
def _check_broadcastable(weights, values):
    """TF's static `assert_broadcastable`: a scalar, or the same rank with each dim 1 or equal."""
    w, v = weights.shape, values.shape
    if w.ndims is None or v.ndims is None or w.ndims == 0:
        return
    if w.ndims != v.ndims:
        raise ValueError(
            f"weights can not be broadcast to values. values.rank={v.ndims}. weights.rank={w.ndims}. "
            f"values.shape={v}. weights.shape={w}."
        )
    for i, (wd, vd) in enumerate(zip(w.as_list(), v.as_list(), strict=True)):
        if None not in (wd, vd) and wd not in (1, vd):
            raise ValueError(
                f"weights can not be broadcast to values. Mismatch at dim {i}. values.shape={v}, "
                f"weights.shape={w}."
            )


def _safe_mean(losses, num_present):
    return math_ops.div_no_nan(reduce_sum(losses), num_present, name="value")


def _num_elements(losses):
    with name_scope(None, "num_elements") as scope:
        return math_ops.cast(size(losses, name=scope), losses.dtype)


def _num_present(losses, weights, per_batch=False):
    """The number of elements of `losses` whose (broadcast) weight is not 0 (per batch row)."""
    if isinstance(weights, float) and weights != 0.0:
        return _num_elements(losses)
    with name_scope(None, "num_present") as scope:
        weights = math_ops.cast(weights, _dtypes.float32)
        zero = math_ops.equal(weights, 0.0)
        present = math_ops.where(zero, math_ops.zeros_like(weights), math_ops.ones_like(weights))
        present = present * math_ops.ones_like(losses)
        if per_batch:
            axis = math_ops.range(1, rank(present))
            return reduce_sum(present, axis=axis, keepdims=True, name=scope)
        return reduce_sum(present, name=scope)


def compute_weighted_loss(
    losses, weights=1.0, scope=None, loss_collection=_LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS
):
    """`tf.losses.compute_weighted_loss`: ``losses * weights`` reduced as `reduction` says.

    Args:
        losses: a Tensor ``[batch_size, d1, ... dN]``.
        weights: a scalar, or a Tensor of the same rank broadcastable to `losses`.
        scope: the name scope (default ``weighted_loss``).
        loss_collection: the collection the result joins (None: none).
        reduction: a `Reduction` key.

    Returns:
        The loss, in the dtype of `losses`: `losses`' shape for ``NONE``, else a scalar.

    Raises:
        ValueError: for an unknown `reduction` or `weights` not broadcastable to `losses`.
    """
    Reduction.validate(reduction)
    with name_scope(scope, "weighted_loss"):
        losses = convert_to_tensor(losses)
        input_dtype = losses.dtype
        losses = math_ops.cast(losses, _dtypes.float32)
        weights_t = math_ops.cast(convert_to_tensor(weights), _dtypes.float32)
        _check_broadcastable(weights_t, losses)
        weighted = math_ops.multiply(losses, weights_t)
        if reduction == Reduction.NONE:
            loss = weighted
        else:
            loss = reduce_sum(weighted)
            if reduction == Reduction.MEAN:
                loss = _safe_mean(loss, reduce_sum(math_ops.ones_like(losses) * weights_t))
            elif reduction == Reduction.SUM_BY_NONZERO_WEIGHTS:
                loss = _safe_mean(loss, _num_present(losses, weights))
            elif reduction == Reduction.SUM_OVER_BATCH_SIZE:
                loss = _safe_mean(loss, _num_elements(losses))
        loss = math_ops.cast(loss, input_dtype)
        add_loss(loss, loss_collection)
        return loss


# -- regression losses ------------------------------------------------------------------------------------
def _require(**args):
    for what, value in args.items():
        if value is None:
            raise ValueError(f"Argument `{what}` must not be None.")


def _assert_compatible(a, b):
    if not a.shape.is_compatible_with(b.shape):
        raise ValueError(f"Shapes {a.shape} and {b.shape} are incompatible ({a.name} and {b.name})")


def _as_float32_pair(predictions, labels):
    """Both cast to float32, their static shapes checked compatible (TF's order)."""
    predictions = math_ops.cast(convert_to_tensor(predictions), _dtypes.float32)
    labels = math_ops.cast(convert_to_tensor(labels), _dtypes.float32)
    _assert_compatible(predictions, labels)
    return predictions, labels


def _elementwise_loss(default_name, fn, labels, predictions, weights, scope, loss_collection, reduction):
    _require(labels=labels, predictions=predictions)
    with name_scope(scope, default_name) as loss_scope:
        predictions, labels = _as_float32_pair(predictions, labels)
        losses = fn(predictions, labels)
        return compute_weighted_loss(losses, weights, loss_scope, loss_collection, reduction=reduction)


def absolute_difference(
    labels,
    predictions,
    weights=1.0,
    scope=None,
    loss_collection=_LOSSES,
    reduction=Reduction.SUM_BY_NONZERO_WEIGHTS,
):
    """`tf.losses.absolute_difference`: weighted ``|predictions - labels|``."""
    return _elementwise_loss(
        "absolute_difference",
        lambda p, y: math_ops.abs(math_ops.subtract(p, y)),
        labels,
        predictions,
        weights,
        scope,
        loss_collection,
        reduction,
    )


def mean_squared_error(
    labels,
    predictions,
    weights=1.0,
    scope=None,
    loss_collection=_LOSSES,
    reduction=Reduction.SUM_BY_NONZERO_WEIGHTS,
):
    """`tf.losses.mean_squared_error`: weighted ``(predictions - labels) ** 2``."""
    return _elementwise_loss(
        "mean_squared_error",
        math_ops.squared_difference,
        labels,
        predictions,
        weights,
        scope,
        loss_collection,
        reduction,
    )


def huber_loss(
    labels,
    predictions,
    weights=1.0,
    delta=1.0,
    scope=None,
    loss_collection=_LOSSES,
    reduction=Reduction.SUM_BY_NONZERO_WEIGHTS,
):
    """`tf.losses.huber_loss`: quadratic in ``x = predictions - labels`` up to `delta`, then linear.

    ``0.5 x**2`` for ``|x| <= delta``, else ``0.5 delta**2 + delta (|x| - delta)``.
    """

    def huber(predictions, labels):
        abs_error = math_ops.abs(math_ops.subtract(predictions, labels))
        quadratic = math_ops.minimum(abs_error, delta)
        linear = math_ops.subtract(abs_error, quadratic)
        half = constant(0.5, dtype=quadratic.dtype)
        return math_ops.add(
            math_ops.multiply(half, math_ops.multiply(quadratic, quadratic)), math_ops.multiply(delta, linear)
        )

    return _elementwise_loss(
        "huber_loss", huber, labels, predictions, weights, scope, loss_collection, reduction
    )


def log_loss(
    labels,
    predictions,
    weights=1.0,
    epsilon=1e-7,
    scope=None,
    loss_collection=_LOSSES,
    reduction=Reduction.SUM_BY_NONZERO_WEIGHTS,
):
    """`tf.losses.log_loss`: ``-y log(p + eps) - (1 - y) log(1 - p + eps)``."""

    def log_loss_(p, y):
        return -math_ops.multiply(y, math_ops.log(p + epsilon)) - math_ops.multiply(
            1 - y, math_ops.log(1 - p + epsilon)
        )

    return _elementwise_loss(
        "log_loss", log_loss_, labels, predictions, weights, scope, loss_collection, reduction
    )


def hinge_loss(
    labels,
    logits,
    weights=1.0,
    scope=None,
    loss_collection=_LOSSES,
    reduction=Reduction.SUM_BY_NONZERO_WEIGHTS,
):
    """`tf.losses.hinge_loss`: ``relu(1 - (2 labels - 1) * logits)`` for labels in {0, 1}."""
    _require(labels=labels, logits=logits)
    with name_scope(scope, "hinge_loss") as loss_scope:
        logits, labels = _as_float32_pair(logits, labels)
        all_ones = math_ops.ones_like(labels)
        labels = math_ops.subtract(2 * labels, all_ones)
        losses = math_ops.relu(math_ops.subtract(all_ones, math_ops.multiply(labels, logits)))
        return compute_weighted_loss(losses, weights, loss_scope, loss_collection, reduction=reduction)


def cosine_distance(
    labels,
    predictions,
    axis=None,
    weights=1.0,
    scope=None,
    loss_collection=_LOSSES,
    reduction=Reduction.SUM_BY_NONZERO_WEIGHTS,
    dim=None,
):
    """`tf.losses.cosine_distance`: ``1 - sum(predictions * labels, axis, keepdims=True)``.

    The inputs are assumed unit-normalized.

    Raises:
        ValueError: without `axis` (or its TF1 alias `dim`).
    """
    if dim is not None:
        if axis is not None:
            raise ValueError("pass either axis or dim (its TF1 alias), not both")
        axis = dim
    if axis is None:
        raise ValueError("You must specify argument `axis`.")
    _require(labels=labels, predictions=predictions)
    with name_scope(scope, "cosine_distance_loss") as loss_scope:
        predictions, labels = _as_float32_pair(predictions, labels)
        radial_diffs = math_ops.multiply(predictions, labels)
        losses = 1 - reduce_sum(radial_diffs, axis=(axis,), keepdims=True)
        return compute_weighted_loss(losses, weights, loss_scope, loss_collection, reduction=reduction)


def mean_pairwise_squared_error(labels, predictions, weights=1.0, scope=None, loss_collection=_LOSSES):
    """`tf.losses.mean_pairwise_squared_error`: squared differences of pairs within each row.

    The mean over pairs (i, j) of each batch row of ``((p_i - p_j) - (y_i - y_j)) ** 2``,
    weighted per row, summed over the batch.
    """
    _require(labels=labels, predictions=predictions)
    with name_scope(scope, "mean_pairwise_squared_error"):
        weights = math_ops.cast(convert_to_tensor(weights), _dtypes.float32)
        labels = math_ops.cast(convert_to_tensor(labels), _dtypes.float32)
        _check_broadcastable(weights, labels)
        predictions, labels = _as_float32_pair(predictions, labels)
        diffs = math_ops.subtract(predictions, labels)
        axis = math_ops.range(1, rank(diffs))
        sum_squares_diff_per_batch = reduce_sum(math_ops.square(diffs), axis=axis, keepdims=True)
        num_present_per_batch = _num_present(diffs, weights, per_batch=True)
        term1 = 2.0 * math_ops.div_no_nan(
            sum_squares_diff_per_batch, math_ops.maximum(num_present_per_batch - 1, 0.0), name="value"
        )
        sum_diff = reduce_sum(diffs, axis=axis, keepdims=True)
        term2 = 2.0 * math_ops.div_no_nan(
            math_ops.square(sum_diff),
            math_ops.maximum(math_ops.multiply(num_present_per_batch, num_present_per_batch - 1), 0.0),
            name="value",
        )
        loss = reduce_sum(math_ops.multiply(term1 - term2, weights))
        any_present = math_ops.greater(reduce_sum(num_present_per_batch), 0.0)
        mean_loss = math_ops.where(any_present, loss, math_ops.zeros_like(loss), name="value")
        add_loss(mean_loss, loss_collection)
        return mean_loss


# -- classification losses ------------------------------------------------------------------------------
def sigmoid_cross_entropy(
    multi_class_labels,
    logits,
    weights=1.0,
    label_smoothing=0,
    scope=None,
    loss_collection=_LOSSES,
    reduction=Reduction.SUM_BY_NONZERO_WEIGHTS,
):
    """`tf.losses.sigmoid_cross_entropy`: `tf.nn.sigmoid_cross_entropy_with_logits`, weighted.

    ``label_smoothing > 0`` moves the labels towards 1/2: ``y (1 - s) + s / 2``.
    """
    _require(multi_class_labels=multi_class_labels, logits=logits)
    with name_scope(scope, "sigmoid_cross_entropy_loss") as loss_scope:
        logits = convert_to_tensor(logits)
        labels = math_ops.cast(convert_to_tensor(multi_class_labels), logits.dtype)
        _assert_compatible(logits, labels)
        if label_smoothing > 0:
            labels = labels * (1 - label_smoothing) + 0.5 * label_smoothing
        losses = nn_ops.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits, name="xentropy")
        return compute_weighted_loss(losses, weights, loss_scope, loss_collection, reduction=reduction)


def softmax_cross_entropy(
    onehot_labels,
    logits,
    weights=1.0,
    label_smoothing=0,
    scope=None,
    loss_collection=_LOSSES,
    reduction=Reduction.SUM_BY_NONZERO_WEIGHTS,
):
    """`tf.losses.softmax_cross_entropy`: softmax cross-entropy per row, weighted.

    No gradient reaches the labels. ``label_smoothing > 0`` gives ``y (1 - s) + s / num_classes``.
    """
    _require(onehot_labels=onehot_labels, logits=logits)
    with name_scope(scope, "softmax_cross_entropy_loss") as loss_scope:
        logits = convert_to_tensor(logits)
        labels = math_ops.cast(convert_to_tensor(onehot_labels), logits.dtype)
        _assert_compatible(logits, labels)
        if label_smoothing > 0:
            num_classes = math_ops.cast(shape(labels)[-1], logits.dtype)
            labels = labels * (1.0 - label_smoothing) + label_smoothing / num_classes
        labels = math_ops.stop_gradient(labels, name="labels_stop_gradient")
        losses = nn_ops.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits, name="xentropy")
        return compute_weighted_loss(losses, weights, loss_scope, loss_collection, reduction=reduction)


def _squeeze_trailing_one(t, rank_diff, expected):
    """`t` without its last dimension when ranks differ by `expected` and that dimension may be 1."""
    last = t.shape[-1] if t.shape.ndims else None
    if rank_diff == expected and t.shape.ndims and last in (None, 1):
        return squeeze(t, [-1])
    return t


def sparse_softmax_cross_entropy(
    labels,
    logits,
    weights=1.0,
    scope=None,
    loss_collection=_LOSSES,
    reduction=Reduction.SUM_BY_NONZERO_WEIGHTS,
):
    """`tf.losses.sparse_softmax_cross_entropy`: sparse softmax cross-entropy, weighted.

    Labels (and weights) of shape ``[batch, 1]`` are squeezed to ``[batch]`` as in TF.
    """
    _require(labels=labels, logits=logits)
    with name_scope(scope, "sparse_softmax_cross_entropy_loss") as loss_scope:
        logits = convert_to_tensor(logits)
        labels = convert_to_tensor(labels, preferred_dtype=_dtypes.int32)
        if labels.shape.ndims is not None and logits.shape.ndims is not None:
            labels = _squeeze_trailing_one(labels, labels.shape.ndims - logits.shape.ndims, 0)
        weights = convert_to_tensor(weights)
        if labels.shape.ndims is not None and weights.shape.ndims is not None:
            weights = _squeeze_trailing_one(weights, weights.shape.ndims - labels.shape.ndims, 1)
        losses = nn_ops.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=logits, name="xentropy"
        )
        return compute_weighted_loss(losses, weights, loss_scope, loss_collection, reduction=reduction)
