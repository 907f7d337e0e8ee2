"""Connectionist temporal classification (`tf.nn`): ctc_loss, ctc_loss_v2, ctc_greedy_decoder,
ctc_beam_search_decoder(_v2), ctc_unique_labels, collapse_repeated.

TF's ops: `CTCLoss` (``preprocess_collapse_repeated``, ``ctc_merge_repeated``,
``ignore_longer_outputs_than_inputs``; outputs the loss and its gradient wrt the logits, from
Graves' forward-backward recursions in log space over the blank-interleaved labels, as TF's
``CTCLossCalculator``), `CTCGreedyDecoder` and `CTCBeamSearchDecoder` (TF's beam search over a
tree of prefixes, its pruning and ordering included; `ctc_beam_decoder` holds it). The blank is
the last class. `ctc_loss_v2`, `ctc_unique_labels` and `collapse_repeated` are built from other
ops as TF builds them; dense labels go through `CTCLoss` with the blank moved last (TF computes
the same probability with other ops).
"""

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import name_scope
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import math_ops, registry
from nbdist.ops._shapes import invalid_argument
from nbdist.ops.cast_select_ops import cast, ones_like, where
from nbdist.ops.concat_slice_ops import concat, pad, stack
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.ctc_beam_decoder import beam_search
from nbdist.ops.index_ops import unique
from nbdist.ops.reduction_ops import reduce_max, reduce_sum
from nbdist.ops.reshape_ops import expand_dims, reshape, transpose
from nbdist.ops.scatter_nd_ops import scatter_nd
from nbdist.ops.shape_ops import shape
from nbdist.ops.sort_search_ops import boolean_mask, where_v2
from nbdist.ops.sparse_tensor import SparseTensor
from nbdist.ops.tile_ops import sequence_mask
from nbdist.ops.while_ops import map_fn

__all__ = [
    "collapse_repeated",
    "ctc_beam_search_decoder",
    "ctc_beam_search_decoder_v2",
    "ctc_greedy_decoder",
    "ctc_loss",
    "ctc_loss_v2",
    "ctc_unique_labels",
]

_CTC_ATTRS = ("preprocess_collapse_repeated", "ctc_merge_repeated", "ignore_longer_outputs_than_inputs")


def _check_logits(inputs, op_type):
    if inputs.shape.ndims not in (None, 3):
        raise ValueError(f"{op_type}: inputs must be 3-D [max_time, batch, num_classes], got {inputs.shape}")
    if not inputs.dtype.is_floating:
        raise TypeError(f"{op_type}: inputs must be floating point, got {inputs.dtype.name}")
    return inputs.shape.as_list() if inputs.shape.ndims else [None] * 3


def labels_by_batch(node, indices, values, batch):
    """The label sequences of a SparseTensor's ``(indices, values)``, one list per batch entry.

    Raises:
        InvalidArgumentError: indices out of order or outside the batch (TF's message).
    """
    indices = np.asarray(indices).reshape(-1, 2)
    for i in range(1, len(indices)):
        if tuple(indices[i]) <= tuple(indices[i - 1]):
            raise invalid_argument(
                node,
                f"label SparseTensor is not valid: indices[{i}] = {indices[i].tolist()} is out of order. "
                "Many sparse ops require sorted indices. Use `tf.sparse.reorder` to create a correctly "
                "ordered copy.",
            )
    labels = [[] for _ in range(batch)]
    for (b, _), v in zip(indices, np.asarray(values).ravel()):
        if not 0 <= b < batch:
            raise invalid_argument(node, f"labels batch index {b} is outside the batch of {batch}")
        labels[b].append(int(v))
    return labels


# -- CTCLoss ----------------------------------------------------------------------------------------------
def _log_softmax(x):
    x = x.astype(np.float64)
    shifted = x - x.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def _shift(a, by):
    """`a` moved `by` places along its last axis (right for positive), -inf filling."""
    out = np.full_like(a, -np.inf)
    if by > 0:
        out[by:] = a[:-by]
    else:
        out[:by] = a[-by:]
    return out


def _forward_backward(logy, label, merge):
    """``(log p(label | x), log alpha + log beta  (T, U))`` over the interleaved ``l'``."""
    blank = logy.shape[1] - 1
    lp = np.full(2 * len(label) + 1, blank)
    lp[1::2] = label
    steps, width = logy.shape[0], len(lp)
    stay = merge | (lp == blank)
    skip = np.zeros(width, bool)
    skip[2:] = (lp[2:] != blank) & ~(merge & (lp[2:] == lp[:-2]))
    skip_back = np.zeros(width, bool)  # u -> u + 2, as seen from u (TF's beta recursion)
    skip_back[:-2] = (lp[:-2] != blank) & ~(merge & (lp[:-2] == lp[2:]))
    alpha = np.full((steps, width), -np.inf)
    alpha[0, : min(2, width)] = logy[0, lp[: min(2, width)]]
    for t in range(1, steps):
        a = alpha[t - 1]
        s = np.logaddexp(np.where(stay, a, -np.inf), _shift(a, 1))
        s = np.logaddexp(s, np.where(skip, _shift(a, 2), -np.inf))
        alpha[t] = logy[t, lp] + s
    beta = np.full((steps, width), -np.inf)
    beta[-1, max(width - 2, 0) :] = 0.0
    for t in range(steps - 2, -1, -1):
        nxt = beta[t + 1] + logy[t + 1, lp]
        s = np.logaddexp(np.where(stay, nxt, -np.inf), _shift(nxt, -1))
        beta[t] = np.logaddexp(s, np.where(skip_back, _shift(nxt, -2), -np.inf))
    both = alpha + beta
    return np.logaddexp.reduce(both[0]), both, lp


def _collapse(label):
    return [v for i, v in enumerate(label) if i == 0 or v != label[i - 1]]


@registry.shape("CTCLoss")
def _ctc_loss_shape(inputs, attrs):
    logits, _, _, lengths = inputs
    _, batch, _ = _check_logits(logits, "CTCLoss")
    if lengths.shape.ndims not in (None, 1):
        raise ValueError(f"CTCLoss: sequence_length must be a vector, got shape {lengths.shape}")
    return [(logits.dtype, TensorShape([batch])), (logits.dtype, logits.shape)]


@registry.kernel("CTCLoss")
def _ctc_loss_kernel(ctx, node, logits, indices, values, lengths):
    steps, batch, classes = logits.shape
    if lengths.shape != (batch,):
        raise invalid_argument(node, f"len(sequence_length) != batch_size: {lengths.shape} vs {batch}")
    labels = labels_by_batch(node, indices, values, batch)
    loss = np.zeros(batch)
    grad = np.zeros(logits.shape)
    for b in range(batch):
        length, label = int(lengths[b]), labels[b]
        if length > steps:
            raise invalid_argument(node, f"sequence_length({b}) <= {steps}")
        if not label:
            raise invalid_argument(node, f"Labels length is zero in batch {b}")
        if min(label) < 0 or max(label) >= classes:
            raise invalid_argument(
                node,
                f"All labels must be nonnegative integers below num_classes {classes}, batch: {b} "
                f"labels: {label}",
            )
        if node.attr["preprocess_collapse_repeated"]:
            label = _collapse(label)
        if len(label) > length:
            if node.attr["ignore_longer_outputs_than_inputs"]:
                continue
            raise invalid_argument(
                node,
                "Not enough time for target transition sequence "
                f"(required: {len(label)}, available: {length}){b}"
                "You can turn this error into a warning by using the flag ignore_longer_outputs_than_inputs",
            )
        logy = _log_softmax(logits[:length, b])
        log_p, both, lp = _forward_backward(logy, label, bool(node.attr["ctc_merge_repeated"]))
        loss[b] = -log_p
        occupancy = np.full((length, classes), -np.inf)
        np.logaddexp.at(occupancy, (np.arange(length)[:, None], lp[None, :]), both)
        grad[:length, b] = np.exp(logy) - np.exp(occupancy - log_p)
    return loss.astype(logits.dtype), grad.astype(logits.dtype)


@registry.gradient("CTCLoss")
def _ctc_loss_grad(op, grad_loss, grad_of_gradient):
    if grad_of_gradient.op.type != "ZerosLike":  # only TF's prevent_gradient's LookupError
        raise LookupError(
            "Gradient explicitly disabled. Reason: Currently there is no way to take the second "
            "derivative of ctc_loss due to the fused implementation's interaction with tf.gradients()"
        )
    return [expand_dims(expand_dims(grad_loss, 0), -1) * op.outputs[1], None, None, None]


def ctc_loss(
    labels,
    inputs=None,
    sequence_length=None,
    preprocess_collapse_repeated=False,
    ctc_merge_repeated=True,
    ignore_longer_outputs_than_inputs=False,
    time_major=True,
    logits=None,
):
    """`tf.nn.ctc_loss` (TF 1.x): the negative log probability of each label sequence.

    Args:
        labels: an int32 `SparseTensor`; ``labels.indices[i] = [batch, position]``, its values in
            ``[0, num_classes - 1)`` (the last class is the blank).
        inputs: logits ``[max_time, batch, num_classes]`` (``[batch, max_time, num_classes]`` if
            not `time_major`); `logits` is its other name.
        sequence_length: int32 ``[batch]``, each at most `max_time`.
        preprocess_collapse_repeated: merge repeated labels before the loss.
        ctc_merge_repeated: repeated outputs not separated by a blank are one label.
        ignore_longer_outputs_than_inputs: give loss 0 (and gradient 0) to a label sequence
            longer than its input, instead of failing.

    Returns:
        ``[batch]`` losses; its gradient wrt the logits is TF's (no second derivative, as TF).

    Raises:
        TypeError: `labels` is not a SparseTensor.
    """
    if not isinstance(labels, SparseTensor):
        raise TypeError(
            f"Expected argument `labels` to be a SparseTensor. Received labels={labels} of type: "
            f"{type(labels).__name__}"
        )
    if inputs is not None and logits is not None:
        raise ValueError("tf.nn.ctc_loss: pass inputs or logits (its other name), not both")
    inputs = convert_to_tensor(inputs if inputs is not None else logits, name="logits")
    if not time_major:
        inputs = transpose(inputs, [1, 0, 2])
    orig_dtype = inputs.dtype
    if orig_dtype == _dtypes.float16:
        inputs = cast(inputs, _dtypes.float32)
    attrs = {
        "preprocess_collapse_repeated": bool(preprocess_collapse_repeated),
        "ctc_merge_repeated": bool(ctc_merge_repeated),
        "ignore_longer_outputs_than_inputs": bool(ignore_longer_outputs_than_inputs),
    }
    op_inputs = [
        inputs,
        cast(labels.indices, _dtypes.int64),
        cast(labels.values, _dtypes.int32),
        convert_to_tensor(sequence_length, dtype=_dtypes.int32),
    ]
    loss = registry.make_op("CTCLoss", op_inputs, attrs).outputs[0]
    return cast(loss, orig_dtype) if orig_dtype == _dtypes.float16 else loss


def _num_classes(logits):
    classes = logits.shape[2] if logits.shape.ndims == 3 else None
    if classes is None:
        raise ValueError(f"ctc_loss_v2: the number of classes of logits {logits.shape} must be known")
    return classes


def ctc_loss_v2(
    labels,
    logits,
    label_length,
    logit_length,
    logits_time_major=True,
    unique=None,
    blank_index=None,
    name=None,
):
    """`tf.nn.ctc_loss_v2`: TF 1.x's "classic" CTC loss with labels as a SparseTensor (then
    `blank_index` is required) or dense ``[batch, max_label_length]`` with `label_length` (blank
    0 by default). A negative `blank_index` counts from `num_classes`; `unique` only speeds TF's
    TPU path and is ignored.

    Returns:
        ``[batch]`` negative log probabilities.
    """
    del unique  # TF uses it only for its TPU-friendly formulation
    with name_scope(name, "ctc_loss_dense" if not isinstance(labels, SparseTensor) else "ctc_loss"):
        logits = convert_to_tensor(logits, name="logits")
        if isinstance(labels, SparseTensor):
            if blank_index is None:
                raise ValueError("Argument `blank_index` must be provided when labels is a SparseTensor.")
        else:
            blank_index = 0 if blank_index is None else blank_index
            labels = _dense_to_sparse(labels, label_length)
        classes = _num_classes(logits)
        if blank_index < 0:
            blank_index += classes
        if blank_index != classes - 1:
            logits = concat(
                [
                    logits[:, :, :blank_index],
                    logits[:, :, blank_index + 1 :],
                    logits[:, :, blank_index : blank_index + 1],
                ],
                axis=2,
            )
            shifted = where(labels.values < blank_index, labels.values, labels.values - 1)
            labels = SparseTensor(labels.indices, shifted, labels.dense_shape)
        return ctc_loss(labels, logits, logit_length, time_major=logits_time_major)


def _dense_to_sparse(dense, length):
    """TF's `dense_labels_to_sparse`: the first `length[b]` labels of row `b`, as a SparseTensor
    ``[batch, max(length)]``."""
    dense = convert_to_tensor(dense, name="labels")
    length = convert_to_tensor(length, name="label_length")
    mask = sequence_mask(length, maxlen=shape(dense)[1])
    dense_shape = stack([cast(shape(dense)[0], _dtypes.int64), cast(reduce_max(length), _dtypes.int64)])
    return SparseTensor(where_v2(mask), cast(boolean_mask(dense, mask), _dtypes.int32), dense_shape)


def collapse_repeated(labels, seq_length, name=None):
    """`tf.nn.collapse_repeated`: each row's runs of equal labels (within its `seq_length`) as
    one label, rows padded with 0 to the longest result, built from other ops as TF builds it.

    Returns:
        ``(collapsed_labels, new_seq_length)``:
        ``[[A, A, B, B, A], [A, B, C, D, E]] => [[A, B, A, 0, 0], [A, B, C, D, E]]``.
    """
    with name_scope(name, "collapse_repeated_labels"):
        labels = convert_to_tensor(labels, name="labels")
        seq_length = convert_to_tensor(seq_length, name="seq_length")
        label_mask = concat(
            [ones_like(labels[:, :1], _dtypes.bool), math_ops.not_equal(labels[:, 1:], labels[:, :-1])],
            axis=1,
        )
        seq_mask = sequence_mask(seq_length, maxlen=_dim(labels, 1))
        label_mask = math_ops.logical_and(label_mask, seq_mask)
        new_seq_len = reduce_sum(cast(label_mask, _dtypes.int32), axis=1)
        idx_mask = sequence_mask(new_seq_len, maxlen=reduce_max(new_seq_len))
        flat_labels = reshape(labels, [-1])
        flat_label_mask = reshape(label_mask, [-1])
        flat_idx_mask = reshape(idx_mask, [-1])
        idx = math_ops.range(_dim(flat_idx_mask, 0))
        flat = scatter_nd(
            expand_dims(boolean_mask(idx, flat_idx_mask), axis=1),
            boolean_mask(flat_labels, flat_label_mask),
            shape(flat_idx_mask),
        )
        collapsed = reshape(flat, stack([_dim(labels, 0), reduce_max(new_seq_len)]))
        collapsed.set_shape([labels.shape[0] if labels.shape.ndims == 2 else None, None])
        return collapsed, cast(new_seq_len, seq_length.dtype)


def _dim(tensor, i):
    """TF's `_get_dim`: a static dimension if known, else the dynamic one."""
    static = tensor.shape[i] if tensor.shape.ndims is not None else None
    return static if static is not None else shape(tensor)[i]


def ctc_unique_labels(labels, name=None):
    """`tf.nn.ctc_unique_labels`: per row, its distinct labels in order (int64, padded with 0)
    and each label's index among them (int32), by `tf.map_fn` over `tf.unique` as TF.

    ``ctc_unique_labels([[3, 4, 4, 3]]) -> ([[3, 4, 0, 0]], [[0, 1, 1, 0]])``.
    """
    with name_scope(name, "ctc_unique_labels"):
        labels = convert_to_tensor(labels, name="labels")

        def _unique(x):
            y, idx = unique(x)
            y = pad(y, [[0, _dim(idx, 0) - _dim(y, 0)]])
            return [cast(y, _dtypes.int64), idx]

        y, idx = map_fn(_unique, labels, dtype=[_dtypes.int64, _dtypes.int32])
        batch = labels.shape[0] if labels.shape.ndims == 2 else None
        y.set_shape([batch, None])
        idx.set_shape(labels.shape)
        return y, idx


# -- decoders -----------------------------------------------------------------------------------------------
def _sparse_outputs(paths, batch):
    """``(indices, values, dense_shape)`` of decoded label lists, as TF's decoders give them."""
    indices = [[b, t] for b, path in enumerate(paths) for t in range(len(path))]
    values = [v for path in paths for v in path]
    longest = max((len(p) for p in paths), default=0)
    return (
        np.asarray(indices, np.int64).reshape(-1, 2),
        np.asarray(values, np.int64),
        np.asarray([batch, longest], np.int64),
    )


def _decoder_lengths(node, logits, lengths):
    steps, batch, _ = logits.shape
    if lengths.shape != (batch,):
        raise invalid_argument(node, f"len(sequence_length) != batch_size: {lengths.shape} vs {batch}")
    for b, length in enumerate(lengths):
        if length > steps:
            raise invalid_argument(node, f"sequence_length({b}) <= {steps}")
    return batch


@registry.shape("CTCGreedyDecoder")
def _greedy_shape(inputs, attrs):
    _, batch, _ = _check_logits(inputs[0], "CTCGreedyDecoder")
    return [
        (_dtypes.int64, TensorShape([None, 2])),
        (_dtypes.int64, TensorShape([None])),
        (_dtypes.int64, TensorShape([2])),
        (inputs[0].dtype, TensorShape([batch, 1])),
    ]


@registry.kernel("CTCGreedyDecoder")
def _greedy_kernel(ctx, node, logits, lengths):
    batch = _decoder_lengths(node, logits, lengths)
    classes = logits.shape[2]
    blank = node.attr["blank_index"] % classes if classes else 0
    paths, scores = [], np.zeros((batch, 1), logits.dtype)
    for b in range(batch):
        best = logits[: int(lengths[b]), b].argmax(axis=1)
        scores[b, 0] = -logits[np.arange(len(best)), b, best].sum(dtype=logits.dtype)
        path, previous = [], -1
        for k in best:
            if k != blank and not (node.attr["merge_repeated"] and k == previous):
                path.append(int(k))
            previous = k
        paths.append(path)
    return (*_sparse_outputs(paths, batch), scores)


registry.no_gradient("CTCGreedyDecoder")


def _beam_shape(inputs, attrs):
    _, batch, _ = _check_logits(inputs[0], "CTCBeamSearchDecoder")
    n = attrs["top_paths"]
    return (
        [(_dtypes.int64, TensorShape([None, 2]))] * n
        + [(_dtypes.int64, TensorShape([None]))] * n
        + [(_dtypes.int64, TensorShape([2]))] * n
        + [(inputs[0].dtype, TensorShape([batch, n]))]
    )


registry.shape("CTCBeamSearchDecoder")(_beam_shape)


@registry.kernel("CTCBeamSearchDecoder")
def _beam_kernel(ctx, node, logits, lengths):
    batch = _decoder_lengths(node, logits, lengths)
    width, top = node.attr["beam_width"], node.attr["top_paths"]
    per_path = [[] for _ in range(top)]
    scores = np.zeros((batch, top), logits.dtype)
    for b in range(batch):
        try:
            best = beam_search(logits[: int(lengths[b]), b], width, top, node.attr["merge_repeated"])
        except ValueError as e:
            raise invalid_argument(node, str(e)) from None
        for i, (path, log_p) in enumerate(best):
            per_path[i].append(path)
            scores[b, i] = log_p
    outs = [_sparse_outputs(paths, batch) for paths in per_path]
    return (*(o[0] for o in outs), *(o[1] for o in outs), *(o[2] for o in outs), scores)


registry.no_gradient("CTCBeamSearchDecoder")


def _decoded(outputs, n):
    return [SparseTensor(outputs[i], outputs[n + i], outputs[2 * n + i]) for i in range(n)]


def ctc_greedy_decoder(inputs, sequence_length, merge_repeated=True, blank_index=None):
    """`tf.nn.ctc_greedy_decoder`: the most likely class at each step, blanks dropped (and
    repeats merged if `merge_repeated`).

    Args:
        inputs: logits ``[max_time, batch, num_classes]``.
        sequence_length: int32 ``[batch]``.
        blank_index: default ``num_classes - 1``; negative counts from `num_classes`.

    Returns:
        ``([decoded], neg_sum_logits)``: `decoded` an int64 SparseTensor ``[batch, longest]``;
        ``neg_sum_logits`` ``[batch, 1]``, minus the sum of each step's largest logit.
    """
    inputs = convert_to_tensor(inputs)
    attrs = {
        "merge_repeated": bool(merge_repeated),
        "blank_index": -1 if blank_index is None else int(blank_index),
    }
    lengths = convert_to_tensor(sequence_length, dtype=_dtypes.int32)
    op = registry.make_op("CTCGreedyDecoder", [inputs, lengths], attrs)
    return _decoded(op.outputs, 1), op.outputs[3]


def ctc_beam_search_decoder(inputs, sequence_length, beam_width=100, top_paths=1, merge_repeated=True):
    """`tf.nn.ctc_beam_search_decoder` (TF 1.x): TF's prefix beam search.

    Returns:
        ``(decoded, log_probabilities)``: `top_paths` int64 SparseTensors, and ``[batch,
        top_paths]`` log probabilities, best first.

    Raises:
        ValueError: `top_paths` not in ``[1, beam_width]``.
    """
    if not 0 < top_paths <= beam_width:
        raise ValueError(
            f"tf.nn.ctc_beam_search_decoder: top_paths must be > 0 and <= beam_width, got top_paths "
            f"{top_paths} and beam_width {beam_width}"
        )
    inputs = convert_to_tensor(inputs)
    attrs = {
        "beam_width": int(beam_width),
        "top_paths": int(top_paths),
        "merge_repeated": bool(merge_repeated),
    }
    lengths = convert_to_tensor(sequence_length, dtype=_dtypes.int32)
    op = registry.make_op("CTCBeamSearchDecoder", [inputs, lengths], attrs)
    return _decoded(op.outputs, top_paths), op.outputs[-1]


def ctc_beam_search_decoder_v2(inputs, sequence_length, beam_width=100, top_paths=1):
    """`tf.nn.ctc_beam_search_decoder_v2`: `ctc_beam_search_decoder` with ``merge_repeated=False``."""
    return ctc_beam_search_decoder(inputs, sequence_length, beam_width, top_paths, merge_repeated=False)
