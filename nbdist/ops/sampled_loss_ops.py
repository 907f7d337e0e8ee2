"""`tf.nn.nce_loss` and `tf.nn.sampled_softmax_loss`: losses over a sampled subset of the classes
(word2vec's), built as TF builds them (`_compute_sampled_logits`): the true and the sampled
classes' rows gathered from the (possibly partitioned) weights with one `embedding_lookup`, so
their gradients are `IndexedSlices` that reach only the rows used, on the ps that holds them.
`tf.nn.compute_accidental_hits` finds a sampled class that is also a true one."""

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops.candidate_sampling_ops import log_uniform_candidate_sampler
from nbdist.ops.cast_select_ops import cast, ones_like, zeros_like
from nbdist.ops.concat_slice_ops import concat
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.embedding_ops import embedding_lookup
from nbdist.ops.math_ops import log, matmul, multiply
from nbdist.ops.nn_ops import sigmoid_cross_entropy_with_logits, softmax_cross_entropy_with_logits_v2
from nbdist.ops.reduction_ops import reduce_sum
from nbdist.ops.reshape_ops import expand_dims, reshape
from nbdist.ops.unary_ops import stop_gradient

_NEGATIVE = -np.finfo(np.float32).max  # TF's accidental hits' logit: -FLT_MAX


# -- compute_accidental_hits ----------------------------------------------------------------------------
@registry.shape("ComputeAccidentalHits")
def _hits_shape(inputs, attrs):
    return [
        (_dtypes.int32, TensorShape([None])),
        (_dtypes.int64, TensorShape([None])),
        (_dtypes.float32, TensorShape([None])),
    ]


@registry.kernel("ComputeAccidentalHits")
def _hits_kernel(ctx, node, true_classes, sampled):
    rows, columns = [], []
    for i, labels in enumerate(np.asarray(true_classes).reshape(len(true_classes), -1)):
        wanted = set(labels.tolist())
        for j, candidate in enumerate(np.asarray(sampled).ravel().tolist()):
            if candidate in wanted:
                rows.append(i)
                columns.append(j)
    weights = np.full(len(rows), _NEGATIVE, np.float32)
    return np.asarray(rows, np.int32), np.asarray(columns, np.int64), weights


registry.no_gradient("ComputeAccidentalHits")


def compute_accidental_hits(true_classes, sampled_candidates, num_true, seed=None, name=None):
    """`tf.nn.compute_accidental_hits`: ``(indices, ids, weights)`` of each sampled candidate that
    equals one of its row's true classes (weights -FLT_MAX, to add to its logit)."""
    inputs = [
        convert_to_tensor(true_classes, dtype=_dtypes.int64),
        convert_to_tensor(sampled_candidates, dtype=_dtypes.int64),
    ]
    op = registry.make_op(
        "ComputeAccidentalHits", inputs, {"num_true": int(num_true)}, name=name or "ComputeAccidentalHits"
    )
    return tuple(op.outputs)


# The dense form of the hits, added to the sampled logits (TF adds a sparse_to_dense of them).
registry.shape("AccidentalHitsMask")(
    lambda inputs, attrs: [(_dtypes.float32, TensorShape([inputs[0].shape[0], inputs[1].shape[0]]))]
)
registry.no_gradient("AccidentalHitsMask")


@registry.kernel("AccidentalHitsMask")
def _hits_mask_kernel(ctx, node, true_classes, sampled):
    true_classes = np.asarray(true_classes).reshape(len(true_classes), -1)
    sampled = np.asarray(sampled).ravel()
    hit = (true_classes[:, :, None] == sampled[None, None, :]).any(axis=1)
    return np.where(hit, _NEGATIVE, 0.0).astype(np.float32)


def _sum_rows(x):
    return reduce_sum(x, axis=1)


def _compute_sampled_logits(
    weights,
    biases,
    labels,
    inputs,
    num_sampled,
    num_classes,
    num_true,
    sampled_values,
    subtract_log_q,
    remove_accidental_hits,
    partition_strategy,
    seed,
):
    """TF's `_compute_sampled_logits`: ``(logits, labels)`` of the true and sampled classes."""
    if not isinstance(weights, (list, tuple)) and hasattr(weights, "_as_graph_element"):
        weights = [weights]
    labels = cast(convert_to_tensor(labels), _dtypes.int64)
    labels_flat = reshape(labels, [-1])
    if sampled_values is None:
        sampled_values = log_uniform_candidate_sampler(
            true_classes=labels,
            num_true=num_true,
            num_sampled=num_sampled,
            unique=True,
            range_max=num_classes,
            seed=seed,
        )
    sampled, true_expected, sampled_expected = (stop_gradient(convert_to_tensor(s)) for s in sampled_values)
    sampled = cast(sampled, _dtypes.int64)
    all_ids = concat([labels_flat, sampled], 0)
    all_w = embedding_lookup(weights, all_ids, partition_strategy=partition_strategy)
    n_true = labels_flat.shape[0] if labels_flat.shape[0] is not None else None
    from nbdist.ops.concat_slice_ops import slice as tf_slice  # noqa: PLC0415
    from nbdist.ops.shape_ops import shape  # noqa: PLC0415

    count = shape(labels_flat)[0] if n_true is None else n_true
    true_w = tf_slice(all_w, [0, 0], convert_to_tensor([count, -1]) if n_true is None else [n_true, -1])
    sampled_w = tf_slice(all_w, convert_to_tensor([count, 0]) if n_true is None else [n_true, 0], [-1, -1])
    sampled_logits = matmul(inputs, sampled_w, transpose_b=True)
    all_b = embedding_lookup(biases, all_ids, partition_strategy=partition_strategy)
    true_b = tf_slice(all_b, [0], convert_to_tensor([count]) if n_true is None else [n_true])
    sampled_b = tf_slice(all_b, convert_to_tensor([count]) if n_true is None else [n_true], [-1])
    dim = all_w.shape[1]
    row_wise_dots = multiply(expand_dims(inputs, 1), reshape(true_w, [-1, num_true, dim]))
    true_logits = reshape(_sum_rows(reshape(row_wise_dots, [-1, dim])), [-1, num_true])
    true_logits += reshape(true_b, [-1, num_true])
    sampled_logits += sampled_b
    if remove_accidental_hits:
        mask = registry.make_op(
            "AccidentalHitsMask", [reshape(labels, [-1, num_true]), sampled], name="accidental_hits"
        ).outputs[0]
        sampled_logits += cast(mask, sampled_logits.dtype)
    if subtract_log_q:
        true_logits -= log(cast(true_expected, true_logits.dtype))
        sampled_logits -= log(cast(sampled_expected, sampled_logits.dtype))
    out_logits = concat([true_logits, sampled_logits], 1)
    out_labels = concat([ones_like(true_logits) / num_true, zeros_like(sampled_logits)], 1)
    return out_logits, out_labels


def nce_loss(
    weights,
    biases,
    labels,
    inputs,
    num_sampled,
    num_classes,
    num_true=1,
    sampled_values=None,
    remove_accidental_hits=False,
    partition_strategy="mod",
    name="nce_loss",
):
    """`tf.nn.nce_loss`: noise-contrastive estimation's loss per example, ``[batch]``.

    `weights` is a ``[num_classes, dim]`` variable or a list of its shards (a partitioned
    variable), `biases` ``[num_classes]``, `labels` ``[batch, num_true]`` int64 and `inputs`
    ``[batch, dim]``; `sampled_values` (a sampler's three outputs) defaults to
    `log_uniform_candidate_sampler`."""
    from nbdist.graph.graph import get_default_graph  # noqa: PLC0415

    with get_default_graph().name_scope(name):
        logits, labels = _compute_sampled_logits(
            weights,
            biases,
            labels,
            convert_to_tensor(inputs),
            num_sampled,
            num_classes,
            num_true,
            sampled_values,
            True,
            remove_accidental_hits,
            partition_strategy,
            None,
        )
        return _sum_rows(sigmoid_cross_entropy_with_logits(labels=labels, logits=logits))


def sampled_softmax_loss(
    weights,
    biases,
    labels,
    inputs,
    num_sampled,
    num_classes,
    num_true=1,
    sampled_values=None,
    remove_accidental_hits=True,
    partition_strategy="mod",
    name="sampled_softmax_loss",
    seed=None,
):
    """`tf.nn.sampled_softmax_loss`: softmax cross-entropy over the true and sampled classes, per
    example ``[batch]`` (arguments as `nce_loss`)."""
    from nbdist.graph.graph import get_default_graph  # noqa: PLC0415

    with get_default_graph().name_scope(name):
        logits, labels = _compute_sampled_logits(
            weights,
            biases,
            labels,
            convert_to_tensor(inputs),
            num_sampled,
            num_classes,
            num_true,
            sampled_values,
            True,
            remove_accidental_hits,
            partition_strategy,
            seed,
        )
        return softmax_cross_entropy_with_logits_v2(labels=stop_gradient(labels), logits=logits)


__all__ = ["compute_accidental_hits", "nce_loss", "sampled_softmax_loss"]
