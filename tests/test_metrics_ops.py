"""`tf.metrics.mean` / `tf.metrics.accuracy`: local state, (value, update_op), resets, names,
and parity with real TensorFlow."""

import numpy as np
import pytest

import nbdist as tf

pytestmark = pytest.mark.usefixtures("graph")


def test_mean_accumulates_over_batches():
    x = tf.placeholder(tf.float32, [None])
    mean, update = tf.metrics.mean(x)
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        assert sess.run(mean) == 0.0  # nothing seen yet: 0, not NaN
        assert sess.run(update, {x: [1.0, 2.0]}) == pytest.approx(1.5)
        assert sess.run(update, {x: [6.0]}) == pytest.approx(3.0)
        assert sess.run(mean) == pytest.approx(3.0)
        sess.run(tf.local_variables_initializer())  # resets the metric
        assert sess.run(mean) == 0.0


def test_mean_with_weights_masks_values():
    _, update = tf.metrics.mean(tf.constant([[1.0, 2.0], [3.0, 10.0]]), weights=[[1.0, 1.0], [1.0, 0.0]])
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        assert sess.run(update) == pytest.approx(2.0)


def test_mean_state_is_local_metric_variables_not_trainable(graph):
    tf.metrics.mean(tf.constant([1.0]))
    names = [v.op.name for v in tf.local_variables()]
    assert names == ["mean/total", "mean/count"]
    assert [v.op.name for v in graph.get_collection(tf.GraphKeys.METRIC_VARIABLES)] == names
    assert not tf.global_variables() and not tf.trainable_variables()


def test_value_and_update_op_are_named_as_tf_names_them():
    mean, update = tf.metrics.mean(tf.constant([1.0]))
    acc, acc_update = tf.metrics.accuracy(tf.constant([1]), tf.constant([1]), name="train_acc")
    assert (mean.name, update.name) == ("mean/value:0", "mean/update_op:0")
    assert (acc.name, acc_update.name) == ("train_acc/value:0", "train_acc/update_op:0")


def test_collections_receive_the_value_and_the_update(graph):
    mean, update = tf.metrics.mean(tf.constant([1.0]), metrics_collections=["m"], updates_collections=["u"])
    assert graph.get_collection("m") == [mean] and graph.get_collection("u") == [update]
    with pytest.raises(ValueError, match="metrics_collections should be a list or a tuple"):
        tf.metrics.mean(tf.constant([1.0]), metrics_collections="m")


def test_accuracy_counts_matches():
    labels = tf.placeholder(tf.int64, [None])
    logits = tf.placeholder(tf.float32, [None, 3])
    acc, update = tf.metrics.accuracy(labels, tf.argmax(logits, 1))
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        sess.run(update, {labels: [0, 1], logits: [[1, 0, 0], [1, 0, 0]]})
        sess.run(update, {labels: [2, 2], logits: [[0, 0, 1], [0, 0, 1]]})
        assert sess.run(acc) == pytest.approx(0.75)


def test_accuracy_squeezes_a_trailing_unit_axis_and_casts_predictions():
    _, update = tf.metrics.accuracy(tf.constant([[1], [0], [1]]), tf.constant([1.0, 1.0, 1.0]))
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        assert sess.run(update) == pytest.approx(2 / 3)


def test_accuracy_refuses_incompatible_shapes():
    with pytest.raises(ValueError, match=r"of shape \(3,\) and labels .* of shape \(2,\) are incompatible"):
        tf.metrics.accuracy(tf.constant([1, 2]), tf.constant([1, 2, 3]))


def test_reading_before_the_local_initializer_names_the_variable():
    mean, _ = tf.metrics.mean(tf.constant([1.0]))
    with (
        tf.Session() as sess,
        pytest.raises(tf.errors.FailedPreconditionError, match=r"uninitialized value mean/(total|count)"),
    ):
        sess.run(mean)


def test_metric_variables_follow_the_device_setter_to_the_ps():
    with tf.device(tf.train.replica_device_setter(ps_tasks=1, worker_device="/job:worker/task:0")):
        _, update = tf.metrics.accuracy(tf.constant([1]), tf.constant([1]))
    assert {v.device for v in tf.local_variables()} == {"/job:ps/task:0"}
    assert update.device == "/job:worker/task:0"


# -- parity with real TensorFlow -----------------------------------------------------------------------
def _program(t):
    labels = t.constant(np.array([0, 1, 2, 1, 0]), t.int64)
    predictions = t.constant(np.array([0, 2, 2, 1, 1]), t.int64)
    acc, acc_update = t.metrics.accuracy(labels, predictions)
    values = t.constant(np.array([[0.5, 1.5], [2.0, -3.0]]))
    mean, mean_update = t.metrics.mean(values, weights=t.constant(np.array([[1.0], [0.5]])))
    names = sorted(v.op.name for v in t.local_variables())
    return names, [acc.name, acc_update.name, mean.name], [acc_update, mean_update], [acc, mean]


def _run(t):
    graph = t.Graph()
    with graph.as_default():
        names, tensor_names, updates, values = _program(t)
        with t.Session(graph=graph) as sess:
            sess.run(t.local_variables_initializer())
            before = sess.run(values)
            first = sess.run(updates)
            second = sess.run(updates)
            return names, tensor_names, [before, first, second, sess.run(values)]


@pytest.mark.tf
def test_metrics_match_tensorflow(tf1_graph_mode):
    ours, theirs = _run(tf), _run(tf1_graph_mode)
    assert ours[:2] == theirs[:2]
    for a, b in zip(ours[2], theirs[2]):
        np.testing.assert_allclose(a, b, rtol=1e-6)
