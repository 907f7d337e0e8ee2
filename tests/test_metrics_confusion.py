"""`tf.metrics`' counting metrics (confusion counts, precision, recall, auc, the regression
errors, mean_tensor, mean_iou): local state named as TF's, (value, update_op), collections, and
parity with real TensorFlow over several batches, weighted, unweighted and all-zero."""

import numpy as np
import pytest

import nbdist as tf

pytestmark = pytest.mark.usefixtures("graph")

_RNG = np.random.default_rng(29)
_N = 12
_BATCHES = [  # labels (0/1), scores in [0, 1], weights, class ids (4 classes), regression targets
    {
        "labels": _RNG.integers(0, 2, _N),
        "scores": _RNG.random(_N).astype(np.float32),
        "weights": _RNG.random(_N).astype(np.float32),
        "classes": _RNG.integers(0, 4, _N),
        "targets": _RNG.normal(size=_N).astype(np.float32),
    }
    for _ in range(3)
]
_BATCHES[1]["weights"][:] = 0.0  # a batch that counts nothing when weighted
_BATCHES[2]["scores"][:4] = [0.0, 1.0, 0.5, 0.005]  # on and near thresholds


def _program(t, weighted):
    ph = {
        "labels": t.placeholder(t.int64, [None]),
        "scores": t.placeholder(t.float32, [None]),
        "weights": t.placeholder(t.float32, [None]),
        "classes": t.placeholder(t.int64, [None]),
        "targets": t.placeholder(t.float32, [None]),
    }
    w = ph["weights"] if weighted else None
    labels, scores = ph["labels"], ph["scores"]
    predicted = t.cast(t.greater(scores, 0.5), t.int64)
    metrics = [
        t.metrics.true_positives(labels, predicted, w),
        t.metrics.false_positives(labels, predicted, w),
        t.metrics.true_negatives(labels, predicted, w),
        t.metrics.false_negatives(labels, predicted, w),
        t.metrics.precision(labels, predicted, w),
        t.metrics.recall(labels, predicted, w),
        t.metrics.mean_absolute_error(ph["targets"], scores, w),
        t.metrics.mean_squared_error(ph["targets"], scores, w),
        t.metrics.root_mean_squared_error(ph["targets"], scores, w),
        t.metrics.mean_tensor(t.reshape(ph["targets"], [3, 4]), None if w is None else t.reshape(w, [3, 4])),
        t.metrics.auc(labels, scores, w),
        t.metrics.auc(labels, scores, w, num_thresholds=7, curve="PR"),
        t.metrics.auc(
            labels, scores, w, num_thresholds=9, curve="PR", summation_method="careful_interpolation"
        ),
        t.metrics.auc(
            labels, scores, w, curve="ROC", summation_method="minoring", thresholds=[0.25, 0.5, 0.75]
        ),
        t.metrics.auc(labels, scores, w, num_thresholds=5, summation_method="majoring"),
        t.metrics.mean_iou(ph["classes"], t.floormod(ph["classes"] + labels, 4), 4, w),
    ]
    variables = [(v.op.name, v.shape.as_list(), v.dtype.base_dtype.name) for v in t.local_variables()]
    names = [(value.name, update.name) for value, update in metrics]
    return ph, variables, names, [u for _, u in metrics], [v for v, _ in metrics]


def _run(t, weighted):
    graph = t.Graph()
    with graph.as_default():
        ph, variables, names, updates, values = _program(t, weighted)
        with t.Session(graph=graph) as sess:
            sess.run(t.local_variables_initializer())
            steps = [sess.run(values)]
            for batch in _BATCHES:
                steps.append(sess.run(updates, {ph[k]: v for k, v in batch.items()}))
                steps.append(sess.run(values))
    return variables, names, steps


def _errors(ours, theirs):
    worst_abs = worst_rel = 0.0
    for our_step, their_step in zip(ours, theirs, strict=True):
        for a, b in zip(our_step, their_step, strict=True):
            a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
            assert a.shape == b.shape
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
            diff = np.abs(a - b)
            worst_abs = max(worst_abs, float(diff.max(initial=0.0)))
            worst_rel = max(worst_rel, float((diff / np.maximum(np.abs(b), 1e-12)).max(initial=0.0)))
    return worst_abs, worst_rel


@pytest.mark.tf
@pytest.mark.parametrize("weighted", [False, True])
def test_counting_metrics_match_tensorflow(tf1_graph_mode, weighted):
    (our_vars, our_names, ours), (tf_vars, tf_names, theirs) = (
        _run(tf, weighted),
        _run(tf1_graph_mode, weighted),
    )
    assert our_vars == tf_vars
    assert our_names == tf_names
    _errors(ours, theirs)


def test_precision_and_recall_over_batches_and_reset():
    labels = tf.placeholder(tf.int64, [None])
    predictions = tf.placeholder(tf.int64, [None])
    precision, p_update = tf.metrics.precision(labels, predictions)
    recall, r_update = tf.metrics.recall(labels, predictions)
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        assert sess.run([precision, recall]) == [0.0, 0.0]  # nothing seen: 0, not NaN
        sess.run([p_update, r_update], {labels: [1, 0, 1, 1], predictions: [1, 1, 0, 1]})
        assert sess.run([p_update, r_update], {labels: [0], predictions: [0]}) == pytest.approx(
            [2 / 3, 2 / 3]
        )
        sess.run(tf.local_variables_initializer())
        assert sess.run([precision, recall]) == [0.0, 0.0]


def test_state_is_local_metric_variables_named_as_tf(graph):
    tf.metrics.precision(tf.constant([1]), tf.constant([1]))
    tf.metrics.auc(tf.constant([1]), tf.constant([0.5]), num_thresholds=3)
    names = [v.op.name for v in tf.local_variables()]
    assert names == [
        "precision/true_positives/count",
        "precision/false_positives/count",
        "auc/true_positives",
        "auc/false_negatives",
        "auc/true_negatives",
        "auc/false_positives",
    ]
    assert [v.op.name for v in graph.get_collection(tf.GraphKeys.METRIC_VARIABLES)] == names
    assert not tf.global_variables() and not tf.trainable_variables()


def test_collections_receive_the_value_and_the_update(graph):
    value, update = tf.metrics.recall(
        tf.constant([1]), tf.constant([1]), metrics_collections=["m"], updates_collections=["u"]
    )
    iou, cm_update = tf.metrics.mean_iou(
        tf.constant([1]), tf.constant([1]), 2, metrics_collections=["m"], updates_collections=["u"]
    )
    assert graph.get_collection("m") == [value, iou] and graph.get_collection("u") == [update, cm_update]
    assert cm_update.dtype == tf.float64 and cm_update.shape.as_list() == [2, 2]  # the matrix, as TF
    with pytest.raises(ValueError, match="updates_collections should be a list or a tuple"):
        tf.metrics.auc(tf.constant([1]), tf.constant([0.5]), updates_collections="u")


def test_auc_refuses_unknown_curves_and_summations():
    with pytest.raises(ValueError, match="curve must be either ROC or PR, XY unknown"):
        tf.metrics.auc(tf.constant([1]), tf.constant([0.5]), curve="XY")
    with pytest.raises(ValueError, match="Invalid summation_method: simpson"):
        tf.metrics.auc(tf.constant([1]), tf.constant([0.5]), summation_method="simpson")
