"""`tf.metrics.precision_at_k` / `recall_at_k`: float64 state named as TF's, class_id, weights,
one or several labels a row, and parity with real TensorFlow over several batches."""

import numpy as np
import pytest

import nbdist as tf

pytestmark = pytest.mark.usefixtures("graph")

_RNG = np.random.default_rng(293)
_BATCHES = [
    {
        "scores": _RNG.random((6, 5)).astype(np.float32),
        "label": _RNG.integers(0, 5, 6),
        "labels": _RNG.integers(0, 5, (6, 3)),  # repeated ids in a row count once (a set)
        "weights": _RNG.random(6).astype(np.float32),
    }
    for _ in range(3)
]
_BATCHES[1]["weights"][:] = 0.0  # a batch that counts nothing when weighted


def _program(t, weighted):
    ph = {
        "scores": t.placeholder(t.float32, [None, 5]),
        "label": t.placeholder(t.int64, [None]),
        "labels": t.placeholder(t.int64, [None, 3]),
        "weights": t.placeholder(t.float32, [None]),
    }
    w = ph["weights"] if weighted else None
    scores = ph["scores"]
    metrics = [
        t.metrics.precision_at_k(ph["label"], scores, 1, weights=w),
        t.metrics.precision_at_k(ph["labels"], scores, 2, weights=w),
        t.metrics.precision_at_k(ph["labels"], scores, 3, class_id=4, weights=w),
        t.metrics.recall_at_k(ph["label"], scores, 2, weights=w),
        t.metrics.recall_at_k(ph["labels"], scores, 3, weights=w),
        t.metrics.recall_at_k(ph["labels"], scores, 2, class_id=1, weights=w),
    ]
    variables = [(v.op.name, v.dtype.base_dtype.name) for v in t.local_variables()]
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


@pytest.mark.tf
@pytest.mark.parametrize("weighted", [False, True])
def test_at_k_metrics_match_tensorflow(tf1_graph_mode, weighted):
    (our_vars, our_names, ours), (tf_vars, tf_names, theirs) = (
        _run(tf, weighted),
        _run(tf1_graph_mode, weighted),
    )
    assert our_vars == tf_vars
    assert our_names == tf_names
    for our_step, their_step in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(np.array(our_step), np.array(their_step), rtol=1e-5, equal_nan=True)


def test_precision_and_recall_at_k_count_the_top_classes(graph):
    scores = tf.constant([[0.1, 0.7, 0.2], [0.5, 0.3, 0.2]])
    labels = tf.constant([[1, 2], [2, 2]], tf.int64)
    precision, p_update = tf.metrics.precision_at_k(labels, scores, 2, updates_collections=["u"])
    recall, r_update = tf.metrics.recall_at_k(labels, scores, 2, metrics_collections=["m"])
    assert graph.get_collection("u") == [p_update] and graph.get_collection("m") == [recall]
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        assert np.isnan(sess.run(precision))  # nothing counted yet: NaN, as in TF
        # row 0: top-2 {1, 2} both labels; row 1: top-2 {0, 1}, label set {2}
        assert sess.run([p_update, r_update]) == pytest.approx([2 / 4, 2 / 3])
    assert precision.dtype == tf.float64
    with pytest.raises(ValueError, match="updates_collections should be a list or a tuple"):
        tf.metrics.recall_at_k(labels, scores, 1, updates_collections="u")
