"""CTC (nbdist/ops/ctc_ops.py, ctc_beam_decoder.py): `tf.nn.ctc_loss` with each option, its
gradient, `ctc_loss_v2` (dense and sparse labels, blank anywhere), the greedy and beam search
decoders (SparseTensor outputs and log probabilities), `ctc_unique_labels` and
`collapse_repeated`: values equal real TF's on the same inputs, and TF's errors."""

import numpy as np
import pytest

import nbdist as tf
from nbdist import errors

RNG = np.random.RandomState(0)
T, B, C = 7, 3, 5
LOGITS = (RNG.randn(T, B, C) * 2).astype(np.float32)
INDICES = np.array([[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2], [1, 3], [2, 0]], np.int64)
VALUES = np.array([1, 1, 2, 0, 3, 3, 0, 2], np.int32)
LENGTHS = np.array([7, 6, 4], np.int32)
DENSE = {  # labels without the blank, zero-padded, per blank_index (TF's dense loss is slow: two)
    0: np.array([[2, 2, 3, 0], [1, 4, 4, 1], [3, 0, 0, 0]], np.int32),
    2: np.array([[3, 3, 4, 0], [1, 0, 0, 1], [4, 0, 0, 0]], np.int32),
}
DENSE_LENGTHS = np.array([3, 4, 1], np.int32)


def _ctc(t):
    x = t.constant(LOGITS)
    labels = t.SparseTensor(INDICES, VALUES, [B, 4])
    out = []
    for kwargs in (
        {},
        {"preprocess_collapse_repeated": True},
        {"ctc_merge_repeated": False},
        {"preprocess_collapse_repeated": True, "ctc_merge_repeated": False},
    ):
        loss = t.nn.ctc_loss(labels, x, LENGTHS, **kwargs)
        out += [loss, t.gradients(t.reduce_sum(loss * [1.0, 2.0, 3.0]), x)[0]]
    out.append(
        t.nn.ctc_loss(labels, logits=t.transpose(x, [1, 0, 2]), sequence_length=LENGTHS, time_major=False)
    )
    out.append(t.nn.ctc_loss(labels, t.cast(x, t.float16), LENGTHS))
    for blank, dense in DENSE.items():
        loss = t.nn.ctc_loss_v2(dense, x, DENSE_LENGTHS, LENGTHS, blank_index=blank)
        out += [loss, t.gradients(loss, x)[0]] if blank == 2 else [loss]  # (TF's dense gradient: slow)
    out.append(t.nn.ctc_loss_v2(labels, x, None, LENGTHS, blank_index=-1))
    out.append(t.nn.ctc_loss_v2(t.SparseTensor(INDICES, VALUES + 1, [B, 4]), x, None, LENGTHS, blank_index=0))
    return out


def _decoders(t):
    x = t.constant(LOGITS)
    out = []
    for kwargs in ({}, {"merge_repeated": False, "blank_index": 0}, {"blank_index": -3}):
        (decoded,), neg_sum = t.nn.ctc_greedy_decoder(x, LENGTHS, **kwargs)
        out += [decoded.indices, decoded.values, decoded.dense_shape, neg_sum]
    for width, top, merge in ((4, 2, True), (10, 3, False), (1, 1, True)):
        decoded, log_p = t.nn.ctc_beam_search_decoder(x, LENGTHS, width, top, merge)
        out += [v for d in decoded for v in (d.indices, d.values, d.dense_shape)] + [log_p]
    decoded, log_p = t.nn.ctc_beam_search_decoder_v2(x, LENGTHS, beam_width=5, top_paths=2)
    out += [decoded[1].indices, decoded[1].values, decoded[1].dense_shape, log_p]
    out += list(t.nn.ctc_unique_labels([[3, 4, 4, 3], [1, 1, 2, 0]]))
    out += list(t.nn.collapse_repeated([[1, 1, 2, 2, 1], [1, 2, 3, 4, 5], [3, 3, 3, 3, 3]], [5, 4, 2]))
    return out


def _run(t, build):
    with t.Graph().as_default():
        fetches = build(t)
        with t.Session() as sess:
            return sess.run(fetches)


@pytest.mark.tf
@pytest.mark.parametrize("build", [_ctc, _decoders], ids=["loss", "decoders"])
def test_ctc_matches_tf(tf1, build):
    ours, theirs = _run(tf, build), _run(tf1, build)
    assert len(ours) == len(theirs)
    for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        assert a.dtype == b.dtype and a.shape == b.shape, (i, a, b)
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5, err_msg=f"fetch {i}")


def test_ctc_static_shapes(graph):
    x = tf.placeholder(tf.float32, [None, 3, 5])
    loss = tf.nn.ctc_loss(tf.SparseTensor(INDICES, VALUES, [B, 4]), x, LENGTHS)
    assert loss.shape.as_list() == [3]
    (decoded,), neg_sum = tf.nn.ctc_greedy_decoder(x, LENGTHS)
    assert decoded.indices.shape.as_list() == [None, 2] and neg_sum.shape.as_list() == [3, 1]
    decoded, log_p = tf.nn.ctc_beam_search_decoder(x, LENGTHS, 4, 2)
    assert len(decoded) == 2 and log_p.shape.as_list() == [3, 2]
    labels, idx = tf.nn.ctc_unique_labels(tf.zeros([2, 4], tf.int32))
    assert labels.dtype == tf.int64 and idx.dtype == tf.int32 and idx.shape.as_list() == [2, 4]


def _loss_of(indices, values, lengths, **kwargs):
    labels = tf.SparseTensor(np.array(indices, np.int64), np.array(values, np.int32), [2, 5])
    with tf.Session() as sess:
        return sess.run(tf.nn.ctc_loss(labels, LOGITS[:4, :2], lengths, **kwargs))


def test_ctc_loss_errors_as_tf(graph):
    with pytest.raises(TypeError, match="Expected argument `labels` to be a SparseTensor"):
        tf.nn.ctc_loss(DENSE[0], LOGITS, LENGTHS)
    with pytest.raises(errors.InvalidArgumentError, match=r"sequence_length\(0\) <= 4"):
        _loss_of([[0, 0], [1, 0]], [1, 1], [5, 4])
    with pytest.raises(errors.InvalidArgumentError, match="Labels length is zero in batch 1"):
        _loss_of([[0, 0]], [1], [4, 4])
    with pytest.raises(errors.InvalidArgumentError, match=r"indices\[1\] = \[0, 0\] is out of order"):
        _loss_of([[1, 0], [0, 0]], [1, 2], [4, 4])
    with pytest.raises(errors.InvalidArgumentError, match=r"Not enough time .*required: 1, available: 0"):
        _loss_of([[0, 0], [1, 0]], [1, 2], [0, 4])
    with pytest.raises(errors.InvalidArgumentError, match="All labels must be nonnegative"):
        _loss_of([[0, 0], [0, 1], [1, 0]], [-1, 2, 0], [4, 4])
    many = [[0, 0], [0, 1], [0, 2], [1, 0]]
    np.testing.assert_array_equal(
        _loss_of(many, [1, 2, 3, 1], [2, 4], ignore_longer_outputs_than_inputs=True)[0], 0.0
    )
    assert np.isinf(_loss_of(many, [1, 1, 1, 1], [4, 4])[0])  # repeats need blanks between: p = 0, as TF


def test_ctc_loss_has_no_second_derivative(graph):
    x = tf.constant(LOGITS)
    loss = tf.nn.ctc_loss(tf.SparseTensor(INDICES, VALUES, [B, 4]), x, LENGTHS)
    grad = tf.gradients(tf.reduce_sum(loss), x)[0]
    with pytest.raises(LookupError, match="no way to take the second derivative of ctc_loss"):
        tf.gradients(tf.reduce_sum(grad * grad), x)


def test_decoder_arguments(graph):
    with pytest.raises(ValueError, match="top_paths must be > 0 and <= beam_width"):
        tf.nn.ctc_beam_search_decoder(LOGITS, LENGTHS, beam_width=2, top_paths=3)
    with pytest.raises(ValueError, match="`blank_index` must be provided"):
        tf.nn.ctc_loss_v2(tf.SparseTensor(INDICES, VALUES, [B, 4]), LOGITS, None, LENGTHS)
