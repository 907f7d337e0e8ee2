"""`tf.metrics.*_at_thresholds`: per-threshold counts, precision and recall, their local
variables named as TF's, and parity with real TensorFlow over several batches."""

import numpy as np
import pytest

import nbdist as tf

pytestmark = pytest.mark.usefixtures("graph")

_RNG = np.random.default_rng(2903)
_BATCHES = [
    {
        "labels": _RNG.integers(0, 2, 10),
        "scores": _RNG.random(10).astype(np.float32),
        "weights": _RNG.random(10).astype(np.float32),
    }
    for _ in range(3)
]
_BATCHES[1]["weights"][:] = 0.0  # a batch that counts nothing when weighted
_THRESHOLDS = [0.0, 0.3, 0.5, 0.9, 1.0]


def _program(t, weighted):
    ph = {
        "labels": t.placeholder(t.int64, [None]),
        "scores": t.placeholder(t.float32, [None]),
        "weights": t.placeholder(t.float32, [None]),
    }
    w = ph["weights"] if weighted else None
    args = (ph["labels"], ph["scores"], _THRESHOLDS, w)
    metrics = [
        t.metrics.true_positives_at_thresholds(*args),
        t.metrics.false_positives_at_thresholds(*args),
        t.metrics.true_negatives_at_thresholds(*args),
        t.metrics.false_negatives_at_thresholds(*args),
        t.metrics.precision_at_thresholds(*args),
        t.metrics.recall_at_thresholds(*args, name="rec"),
    ]
    variables = [(v.op.name, v.shape.as_list()) for v in t.local_variables()]
    names = [update.name for _, update in metrics] + [value.name for value, _ in metrics[4:]]
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
def test_threshold_metrics_match_tensorflow(tf1_graph_mode, weighted):
    (our_vars, our_names, ours), (tf_vars, tf_names, theirs) = (
        _run(tf, weighted),
        _run(tf1_graph_mode, weighted),
    )
    assert our_vars == tf_vars
    assert our_names == tf_names
    for our_step, their_step in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(np.array(our_step), np.array(their_step), rtol=1e-5, atol=1e-6)


def test_counts_per_threshold_and_collections(graph):
    labels, scores = tf.constant([1, 0, 1]), tf.constant([0.2, 0.6, 0.8])
    tp, tp_update = tf.metrics.true_positives_at_thresholds(
        labels, scores, [0.1, 0.5], metrics_collections=["m"], updates_collections=["u"]
    )
    assert graph.get_collection("m") == [tp] and graph.get_collection("u") == [tp_update]
    assert [v.op.name for v in tf.local_variables()] == ["true_positives/true_positives"]
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        assert sess.run(tp_update).tolist() == [2.0, 1.0]
