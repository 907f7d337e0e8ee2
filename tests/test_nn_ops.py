"""`tf.nn` ops: values against numpy formulas, numerical stability, shapes and errors."""

import numpy as np
import pytest

import nbdist as tf
from local_run import run_in_session

pytestmark = pytest.mark.usefixtures("fresh_graph")

_RNG = np.random.default_rng(3)
LOGITS = _RNG.standard_normal((3, 4))
LABELS = _RNG.uniform(0.1, 1.0, (3, 4))
LABELS /= LABELS.sum(axis=1, keepdims=True)


def _np_log_softmax(x, axis=-1):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


# -- softmax -------------------------------------------------------------------------------------------
def test_softmax_matches_numpy():
    np.testing.assert_allclose(
        run_in_session(tf.nn.softmax(tf.constant(LOGITS))), np.exp(_np_log_softmax(LOGITS))
    )


def test_softmax_on_another_axis():
    y = tf.nn.softmax(tf.constant(LOGITS), axis=0)
    assert y.shape.as_list() == [3, 4]
    np.testing.assert_allclose(run_in_session(y), np.exp(_np_log_softmax(LOGITS, axis=0)))


def test_softmax_tf1_dim_alias():
    np.testing.assert_allclose(
        run_in_session(tf.nn.softmax(tf.constant(LOGITS), dim=0)), np.exp(_np_log_softmax(LOGITS, 0))
    )


def test_softmax_is_stable_for_huge_logits():
    out = run_in_session(tf.nn.softmax(tf.constant([[1000.0, 0.0, -1000.0]])))
    np.testing.assert_allclose(out, [[1.0, 0.0, 0.0]])


def test_log_softmax_matches_numpy_and_is_stable():
    x = np.array([[1000.0, 999.0], [0.5, -0.5]])
    np.testing.assert_allclose(run_in_session(tf.nn.log_softmax(tf.constant(x))), _np_log_softmax(x))


def test_softmax_rejects_integer_logits():
    with pytest.raises(TypeError, match=r"expected a floating point tensor, got int32"):
        tf.nn.softmax(tf.constant([1, 2]))


def test_softmax_rejects_axis_out_of_range():
    with pytest.raises(ValueError, match=r"Softmax: axis 2 is out of range .* of rank 2"):
        tf.nn.softmax(tf.constant(LOGITS), axis=2)


# -- bias_add, l2_loss, activations -------------------------------------------------------------------------
def test_bias_add_adds_along_last_axis():
    y = tf.nn.bias_add(tf.constant(LOGITS), tf.constant([1.0, 2.0, 3.0, 4.0], tf.float64))
    assert y.shape.as_list() == [3, 4]
    np.testing.assert_allclose(run_in_session(y), LOGITS + np.array([1.0, 2.0, 3.0, 4.0]))


def test_bias_add_rejects_wrong_bias_length():
    with pytest.raises(ValueError, match=r"bias has 3 values for a last dimension of 4"):
        tf.nn.bias_add(tf.zeros([2, 4]), tf.zeros([3]))


def test_bias_add_rejects_rank_one_value():
    with pytest.raises(ValueError, match=r"value must have rank >= 2, got shape \(4,\)"):
        tf.nn.bias_add(tf.zeros([4]), tf.zeros([4]))


def test_bias_add_checks_the_bias_length_at_run_time():
    bias = tf.placeholder(tf.float32)
    y = tf.nn.bias_add(tf.zeros([2, 4]), bias)
    with pytest.raises(
        tf.errors.InvalidArgumentError, match=r"bias of shape \[3\] must match the last dimension"
    ):
        run_in_session(y, {bias: np.zeros(3, np.float32)})


def test_bias_add_rejects_an_unknown_format():  # (NCHW: tests/test_conv_ops.py)
    with pytest.raises(ValueError, match=r"data_format 'NCW' is not supported; use 'NHWC' or 'NCHW'"):
        tf.nn.bias_add(tf.zeros([2, 4]), tf.zeros([4]), data_format="NCW")


def test_l2_loss_is_half_sum_of_squares():
    y = tf.nn.l2_loss(tf.constant(LOGITS))
    assert y.shape.as_list() == []
    assert run_in_session(y) == pytest.approx((LOGITS**2).sum() / 2)


def test_leaky_relu():
    np.testing.assert_allclose(
        run_in_session(tf.nn.leaky_relu(tf.constant([-2.0, 3.0]), alpha=0.1)), [-0.2, 3.0]
    )


# -- cross entropies ------------------------------------------------------------------------------------------
def test_softmax_cross_entropy_v2_matches_numpy():
    y = tf.nn.softmax_cross_entropy_with_logits_v2(labels=tf.constant(LABELS), logits=tf.constant(LOGITS))
    assert y.shape.as_list() == [3]
    np.testing.assert_allclose(run_in_session(y), -(LABELS * _np_log_softmax(LOGITS)).sum(axis=1))


def test_softmax_cross_entropy_on_axis_zero():
    y = tf.nn.softmax_cross_entropy_with_logits_v2(
        labels=tf.constant(LABELS.T), logits=tf.constant(LOGITS.T), axis=0
    )
    np.testing.assert_allclose(run_in_session(y), -(LABELS * _np_log_softmax(LOGITS)).sum(axis=1))


def test_softmax_cross_entropy_is_stable_for_huge_logits():
    y = tf.nn.softmax_cross_entropy_with_logits_v2(labels=[[0.0, 1.0]], logits=[[1000.0, -1000.0]])
    np.testing.assert_allclose(run_in_session(y), [2000.0])


def test_softmax_cross_entropy_v1_gives_labels_no_gradient_but_v2_does():
    labels, logits = tf.constant(LABELS), tf.constant(LOGITS)
    v1 = tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    v2 = tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
    assert tf.gradients(v1, labels) == [None]
    (g,) = tf.gradients(v2, labels)
    np.testing.assert_allclose(run_in_session(g), -_np_log_softmax(LOGITS))
    g1, g2 = tf.gradients(v1, logits)[0], tf.gradients(v2, logits)[0]
    np.testing.assert_allclose(run_in_session(g1), np.exp(_np_log_softmax(LOGITS)) - LABELS)
    np.testing.assert_allclose(run_in_session(g2), run_in_session(g1))


def test_softmax_cross_entropy_v1_needs_named_arguments():
    with pytest.raises(
        ValueError, match=r"Only call `softmax_cross_entropy_with_logits` with named arguments"
    ):
        tf.nn.softmax_cross_entropy_with_logits(tf.constant(LABELS), tf.constant(LOGITS))


def test_softmax_cross_entropy_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match=r"labels shape \(3, 3\) must equal logits shape \(3, 4\)"):
        tf.nn.softmax_cross_entropy_with_logits_v2(labels=tf.zeros([3, 3]), logits=tf.zeros([3, 4]))


def test_softmax_cross_entropy_mismatch_at_run_time():
    labels = tf.placeholder(tf.float32, None)
    y = tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=tf.zeros([3, 4]))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"logits and labels must be the same size"):
        run_in_session(y, {labels: np.zeros((3, 3))})


def test_sparse_softmax_cross_entropy_matches_numpy():
    y = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[3, 0, 1], logits=tf.constant(LOGITS))
    assert y.shape.as_list() == [3]
    np.testing.assert_allclose(run_in_session(y), -_np_log_softmax(LOGITS)[np.arange(3), [3, 0, 1]])


def test_sparse_softmax_cross_entropy_on_rank_three_logits():
    logits = _RNG.standard_normal((2, 3, 4)).astype(np.float32)
    labels = np.array([[0, 3, 1], [2, 2, 0]], np.int32)
    loss, backprop = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits).op.outputs
    got_loss, got_backprop = run_in_session([loss, backprop])
    log_p = _np_log_softmax(logits.astype(np.float64))
    one_hot = np.eye(4)[labels]
    assert got_loss.dtype == got_backprop.dtype == np.float32
    np.testing.assert_allclose(got_loss, -np.sum(log_p * one_hot, axis=-1), rtol=1e-6)
    np.testing.assert_allclose(got_backprop, np.exp(log_p) - one_hot, atol=1e-7)


def test_sparse_softmax_cross_entropy_gradient_is_softmax_minus_one_hot():
    logits = tf.constant(LOGITS)
    y = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.constant([3, 0, 1], tf.int64), logits=logits)
    (g,) = tf.gradients(y, logits)
    np.testing.assert_allclose(run_in_session(g), np.exp(_np_log_softmax(LOGITS)) - np.eye(4)[[3, 0, 1]])


def test_sparse_softmax_cross_entropy_rejects_label_out_of_range():
    labels = tf.placeholder(tf.int32, [None])
    y = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=tf.constant(LOGITS))
    with pytest.raises(
        tf.errors.InvalidArgumentError, match=r"label value of 4 which is outside the valid range of \[0, 4\)"
    ):
        run_in_session(y, {labels: [0, 4, 1]})


def test_sparse_softmax_cross_entropy_rejects_label_rank():
    with pytest.raises(
        ValueError, match=r"labels shape \(3, 1\) must equal logits.shape\[:-1\] shape \(3,\)"
    ):
        tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=tf.zeros([3, 1], tf.int32), logits=tf.constant(LOGITS)
        )


def test_sparse_softmax_cross_entropy_rejects_float_labels():
    with pytest.raises(TypeError, match=r"sparse labels must be int32 or int64, got float64"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=tf.constant(LABELS[:, 0]), logits=tf.constant(LOGITS)
        )


def test_sigmoid_cross_entropy_matches_formula_and_is_stable():
    x = np.array([-1000.0, -2.0, 0.0, 3.0, 1000.0])
    z = np.array([0.0, 1.0, 0.5, 0.0, 1.0])
    y = tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.constant(z), logits=tf.constant(x))
    expected = np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x)))
    np.testing.assert_allclose(run_in_session(y), expected)


def test_sigmoid_cross_entropy_rejects_mismatched_shapes():
    with pytest.raises(
        ValueError, match=r"logits and labels must have the same shape \(\(2, 3\) vs \(2,\)\)"
    ):
        tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.zeros([2]), logits=tf.zeros([2, 3]))


# -- dropout ---------------------------------------------------------------------------------------------------
def test_dropout_scales_kept_values_and_zeroes_the_rest():
    x = tf.ones([100, 100], tf.float64)
    y = tf.nn.dropout(x, keep_prob=0.25, seed=1)
    out = run_in_session(y)
    assert set(np.unique(out)) <= {0.0, 4.0}
    assert 0.2 < (out > 0).mean() < 0.3


def test_dropout_rate_form_and_noise_shape():
    out = run_in_session(tf.nn.dropout(tf.ones([50, 4]), rate=0.5, noise_shape=[50, 1], seed=2))
    assert np.all(out == out[:, :1])  # one decision per row


def test_dropout_gradient_is_the_mask_over_keep_prob():
    x = tf.ones([20], tf.float64)
    y = tf.nn.dropout(x, keep_prob=0.5, seed=3)
    (g,) = tf.gradients(y, x)
    with tf.Session() as sess:
        out, grad = sess.run([y, g])
    np.testing.assert_array_equal(grad, out)


def test_dropout_rejects_keep_prob_out_of_range():
    with pytest.raises(ValueError, match=r"keep_prob must be in \(0, 1\], got 0"):
        tf.nn.dropout(tf.ones([2]), keep_prob=0)


def test_dropout_needs_exactly_one_of_keep_prob_and_rate():
    with pytest.raises(ValueError, match=r"pass exactly one of keep_prob and rate"):
        tf.nn.dropout(tf.ones([2]))


def test_unsupported_nn_name_says_so():
    with pytest.raises(AttributeError, match=r"tf.nn.quantized_conv2d is not supported by nbdist yet"):
        _ = tf.nn.quantized_conv2d
