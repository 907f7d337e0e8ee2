"""The rest of `tf.compat.v1.metrics`: mean_per_class_accuracy, mean_relative_error,
mean_cosine_distance, percentage_below, sensitivity_at_specificity, specificity_at_sensitivity,
the *_at_top_k and average-precision metrics: local state named as TF's, and parity with real
TensorFlow over three batches, weighted and unweighted."""

import numpy as np
import pytest

import nbdist as tf

pytestmark = pytest.mark.usefixtures("graph")

_RNG = np.random.default_rng(3229)
_N = 12


def _unit_rows(n):
    v = _RNG.normal(size=(n, 3)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


_BATCHES = [
    {
        "labels": _RNG.integers(0, 2, _N),
        "scores": _RNG.random(_N).astype(np.float32),
        "weights": _RNG.random(_N).astype(np.float32),
        "classes": _RNG.integers(0, 4, _N),
        "predicted": _RNG.integers(0, 4, _N),
        "targets": _RNG.normal(size=_N).astype(np.float32),
        "normalizer": _RNG.choice([0.0, 0.5, 2.0], _N).astype(np.float32),
        "u": _unit_rows(_N),
        "v": _unit_rows(_N),
        "logits": _RNG.random((_N, 5)).astype(np.float32),
        "top_idx": _RNG.integers(0, 6, (_N, 3)),  # ids may repeat in a row: a set, as in TF
        "label_ids": _RNG.integers(-1, 7, (_N, 2)),  # -1 and ids past the classes too
        "label_id": _RNG.integers(0, 5, _N),
    }
    for _ in range(3)
]
_BATCHES[1]["weights"][:] = 0.0  # a batch that counts nothing when weighted
for _batch in _BATCHES:  # every row has a label among the classes (else its average precision is NaN)
    _batch["label_ids"][:, 0] = _RNG.integers(0, 5, _N)


def _placeholders(t):
    shapes = {
        "u": [None, 3],
        "v": [None, 3],
        "logits": [None, 5],
        "top_idx": [None, 3],
        "label_ids": [None, 2],
    }
    return {
        key: t.placeholder(t.as_dtype(value.dtype), shapes.get(key, [None]), name=key)
        for key, value in _BATCHES[0].items()
    }


def _metrics(t, ph, w):
    labels, scores = ph["labels"], ph["scores"]
    w2 = None if w is None else t.expand_dims(w, -1)
    return [
        t.metrics.mean_per_class_accuracy(ph["classes"], ph["predicted"], 4, w),
        t.metrics.mean_relative_error(ph["targets"], scores, ph["normalizer"], w),
        t.metrics.mean_cosine_distance(ph["u"], ph["v"], 1, w2),
        t.metrics.percentage_below(ph["targets"], 0.25, w),
        t.metrics.sensitivity_at_specificity(labels, scores, 0.6, w),
        t.metrics.sensitivity_at_specificity(labels, scores, 0.3, w, num_thresholds=7, name="sens"),
        t.metrics.specificity_at_sensitivity(labels, scores, 0.5, w),
        t.metrics.specificity_at_sensitivity(labels, scores, 0.8, w, num_thresholds=9),
        t.metrics.precision_at_top_k(ph["label_ids"], ph["top_idx"], weights=w),
        t.metrics.precision_at_top_k(ph["label_id"], ph["top_idx"], 3, class_id=2, weights=w),
        t.metrics.recall_at_top_k(ph["label_ids"], ph["top_idx"], 3, weights=w),
        t.metrics.recall_at_top_k(ph["label_id"], ph["top_idx"], class_id=4, weights=w),
        t.metrics.sparse_precision_at_k(ph["label_ids"], ph["logits"], 2, weights=w),
        t.metrics.average_precision_at_k(ph["label_ids"], ph["logits"], 3, weights=w),
        t.metrics.average_precision_at_k(ph["label_id"], ph["logits"], 1, w),
        t.metrics.sparse_average_precision_at_k(ph["label_ids"], ph["logits"], 2, weights=w),
    ]


def _program(t, weighted):
    ph = _placeholders(t)
    metrics = _metrics(t, ph, ph["weights"] if weighted else None)
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


@pytest.mark.tf
@pytest.mark.parametrize("weighted", [False, True])
def test_more_metrics_match_tensorflow(tf1_graph_mode, weighted):
    (our_vars, our_names, ours), (tf_vars, tf_names, theirs) = (
        _run(tf, weighted),
        _run(tf1_graph_mode, weighted),
    )
    assert our_vars == tf_vars
    assert our_names == tf_names
    for our_step, their_step in zip(ours, theirs, strict=True):
        for ours_1, theirs_1 in zip(our_step, their_step, strict=True):
            np.testing.assert_allclose(ours_1, theirs_1, rtol=1e-5, atol=1e-6, equal_nan=True)


def test_searches_refuse_a_rate_outside_0_1_and_fill_collections(graph):
    labels, scores = tf.constant([1, 0, 1, 0]), tf.constant([0.9, 0.2, 0.4, 0.6])
    with pytest.raises(ValueError, match=r"`specificity` must be in the range \[0, 1\], got 1.5"):
        tf.metrics.sensitivity_at_specificity(labels, scores, 1.5)
    value, update = tf.metrics.specificity_at_sensitivity(
        labels, scores, 1.0, num_thresholds=11, metrics_collections=["m"], updates_collections=["u"]
    )
    assert graph.get_collection("m") == [value] and graph.get_collection("u") == [update]
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        # every positive found only at thresholds below 0.4, where 1 of the 2 negatives is below
        assert sess.run(update) == pytest.approx(0.5)
