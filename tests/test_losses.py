"""`tf.losses`: every loss against real TensorFlow (values and gradients) under every weighting
and reduction, and the LOSSES / REGULARIZATION_LOSSES collections.

Each case builds the same program in nbdist and in ``tensorflow.compat.v1`` (one graph per
loss holding every weights x reduction combination and their gradients) and compares all
fetches; TF casts the losses to float32, so the tolerance is float32's.
"""

import numpy as np
import pytest

import nbdist as tf

_RNG = np.random.default_rng(29)
PRED = _RNG.uniform(0.05, 0.95, (4, 3)).astype(np.float32)
LABELS = _RNG.uniform(0.0, 1.0, (4, 3)).astype(np.float32)
BINARY = (_RNG.uniform(size=(4, 3)) > 0.5).astype(np.float32)
LOGITS = _RNG.standard_normal((4, 3)).astype(np.float32) * 2
ONE_HOT = np.eye(3, dtype=np.float32)[[0, 2, 1, 2]]
SPARSE = np.array([0, 2, 1, 2], np.int32)
UNIT = PRED / np.linalg.norm(PRED, axis=1, keepdims=True)
UNIT_LABELS = LABELS / np.linalg.norm(LABELS, axis=1, keepdims=True)

WEIGHTS = {
    "one": 1.0,
    "zero": 0.0,
    "per_row": np.array([[1.0], [0.0], [2.0], [0.5]], np.float32),
    "full": np.where(_RNG.uniform(size=(4, 3)) > 0.3, _RNG.uniform(0.5, 2, (4, 3)), 0.0).astype(np.float32),
    "all_zero": np.zeros((4, 1), np.float32),
}
REDUCTIONS = ["none", "weighted_sum", "weighted_mean", "weighted_sum_over_batch_size"]
REDUCTIONS += ["weighted_sum_by_nonzero_weights"]


def _per_row(weights):
    return weights[:, 0] if isinstance(weights, np.ndarray) and weights.shape == (4, 1) else weights


# name -> (fn(lib, x, weights, reduction), x's value, weights allowed); x is what gradients are taken for.
LOSSES = {
    "absolute_difference": (
        lambda t, x, w, r: t.losses.absolute_difference(LABELS, x, weights=w, reduction=r),
        PRED,
    ),
    "mean_squared_error": (lambda t, x, w, r: t.losses.mean_squared_error(LABELS, x, w, reduction=r), PRED),
    "huber_loss": (
        lambda t, x, w, r: t.losses.huber_loss(LABELS * 3, x * 2, w, delta=0.7, reduction=r),
        PRED,
    ),
    "log_loss": (lambda t, x, w, r: t.losses.log_loss(BINARY, x, w, reduction=r), PRED),
    "hinge_loss": (lambda t, x, w, r: t.losses.hinge_loss(BINARY, x, w, reduction=r), LOGITS),
    "cosine_distance": (
        lambda t, x, w, r: t.losses.cosine_distance(UNIT_LABELS, x, axis=1, weights=w, reduction=r),
        UNIT,
    ),
    "sigmoid_cross_entropy": (
        lambda t, x, w, r: t.losses.sigmoid_cross_entropy(BINARY, x, w, reduction=r),
        LOGITS,
    ),
    "sigmoid_cross_entropy_smoothed": (
        lambda t, x, w, r: t.losses.sigmoid_cross_entropy(BINARY, x, w, label_smoothing=0.2, reduction=r),
        LOGITS,
    ),
    "softmax_cross_entropy": (
        lambda t, x, w, r: t.losses.softmax_cross_entropy(ONE_HOT, x, _per_row(w), reduction=r),
        LOGITS,
    ),
    "softmax_cross_entropy_smoothed": (
        lambda t, x, w, r: t.losses.softmax_cross_entropy(
            ONE_HOT, x, _per_row(w), label_smoothing=0.1, reduction=r
        ),
        LOGITS,
    ),
    "sparse_softmax_cross_entropy": (
        lambda t, x, w, r: t.losses.sparse_softmax_cross_entropy(SPARSE, x, _per_row(w), reduction=r),
        LOGITS,
    ),
    "sparse_softmax_cross_entropy_column_labels": (
        lambda t, x, w, r: t.losses.sparse_softmax_cross_entropy(SPARSE[:, None], x, w, reduction=r),
        LOGITS,
    ),
    "compute_weighted_loss": (
        lambda t, x, w, r: t.losses.compute_weighted_loss(t.square(x), w, reduction=r),
        LOGITS,
    ),
}


def _skip(name, weights_name):
    # One loss per row: [batch] or [batch, 1] weights only.
    return weights_name == "full" and (name.startswith(("softmax", "sparse")) or name == "cosine_distance")


def _build(lib, name):
    fn, value = LOSSES[name]
    x = lib.constant(value)
    fetches = []
    for weights_name, weights in WEIGHTS.items():
        if _skip(name, weights_name):
            continue
        for reduction in REDUCTIONS:
            loss = fn(lib, x, weights, reduction)
            fetches += [loss, lib.gradients(lib.reduce_sum(loss), x)[0]]
    return fetches


def _run(lib, build):
    with lib.Graph().as_default() as graph:
        fetches = build(lib)
        with lib.Session(graph=graph) as sess:
            return sess.run(fetches), fetches


def _compare(tf1, build, rtol=2e-5, atol=1e-6):
    ours, our_fetches = _run(tf, build)
    theirs, _ = _run(tf1, build)
    worst = 0.0
    for a, b, t in zip(ours, theirs, our_fetches, strict=True):
        assert np.shape(a) == np.shape(b), f"{t.name}: shape {np.shape(a)} vs TF {np.shape(b)}"
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=t.name)
        worst = max(worst, float(np.max(np.abs(np.asarray(a, np.float64) - b), initial=0.0)))
    return worst


@pytest.mark.tf
@pytest.mark.parametrize("name", LOSSES)
def test_loss_values_and_gradients_match_tensorflow(tf1, name):
    _compare(tf1, lambda lib: _build(lib, name))


@pytest.mark.tf
def test_mean_pairwise_squared_error_matches_tensorflow(tf1):
    x3 = _RNG.standard_normal((3, 2, 2)).astype(np.float32)
    y3 = _RNG.standard_normal((3, 2, 2)).astype(np.float32)

    def build(lib):
        fetches = []
        for weights in (1.0, 0.0, np.array([1.0, 0.0, 3.0, 0.5], np.float32)[:, None], np.array([[2.0]] * 4)):
            x = lib.constant(PRED)
            loss = lib.losses.mean_pairwise_squared_error(LABELS, x, weights=weights)
            fetches += [loss, lib.gradients(loss, x)[0]]
        x = lib.constant(x3)
        w3 = np.array([1.0, 0.5, 0.0], np.float32).reshape(3, 1, 1)
        loss = lib.losses.mean_pairwise_squared_error(y3, x, weights=w3)
        return [*fetches, loss, lib.gradients(loss, x)[0]]

    _compare(tf1, build)


@pytest.mark.tf
def test_float64_inputs_come_back_float64_as_in_tensorflow(tf1):
    def build(lib):
        x = lib.constant(LOGITS.astype(np.float64))
        loss = lib.losses.softmax_cross_entropy(ONE_HOT, x)
        assert loss.dtype == lib.float64
        return [loss, lib.gradients(loss, x)[0]]

    _compare(tf1, build)


@pytest.mark.tf
def test_total_and_regularization_losses_match_tensorflow(tf1):
    def build(lib):
        x = lib.constant(LOGITS)
        with lib.variable_scope("model"):
            w = lib.get_variable(
                "w", initializer=lib.constant(PRED), regularizer=lambda v: 0.01 * lib.nn.l2_loss(v)
            )
        lib.losses.mean_squared_error(LABELS, x * w)
        lib.losses.hinge_loss(BINARY, x, scope="model/hinge")
        extra = lib.multiply(lib.reduce_sum(w), 0.1, name="extra")
        lib.losses.add_loss(extra)
        fetches = [
            lib.losses.get_total_loss(),
            lib.losses.get_total_loss(add_regularization_losses=False, name="data_loss"),
            lib.losses.get_total_loss(scope="model"),
            lib.losses.get_regularization_loss(),
            lib.losses.get_regularization_loss(scope="other"),
        ]
        assert [t.name for t in lib.losses.get_losses()] == [
            "mean_squared_error/value:0",
            "model/hinge/value:0",
            "extra:0",
        ]
        assert len(lib.losses.get_regularization_losses("model")) == 1
        with lib.Session() as sess:
            sess.run(lib.global_variables_initializer())
            return [lib.constant(v) for v in sess.run(fetches)]

    _compare(tf1, build)


def test_loss_collection_none_adds_nothing(graph):
    tf.losses.mean_squared_error(LABELS, PRED, loss_collection=None)
    assert tf.losses.get_losses() == []


def test_losses_join_a_named_collection(graph):
    loss = tf.losses.absolute_difference(LABELS, PRED, loss_collection="mine")
    assert tf.get_collection("mine") == [loss]
    assert tf.losses.get_losses() == []


def test_total_loss_without_losses_is_an_error(graph):
    with pytest.raises(ValueError, match=r"add_n\(\) needs at least one input tensor"):
        tf.losses.get_total_loss()


def test_unknown_reduction_is_refused(graph):
    with pytest.raises(ValueError, match=r"Invalid Reduction Key 'mean'. Key should be one of"):
        tf.losses.mean_squared_error(LABELS, PRED, reduction="mean")


def test_weights_that_do_not_broadcast_are_refused(graph):
    with pytest.raises(ValueError, match=r"weights can not be broadcast to values. Mismatch at dim 1"):
        tf.losses.mean_squared_error(LABELS, PRED, weights=np.ones((4, 2)))
    with pytest.raises(ValueError, match=r"values.rank=2. weights.rank=1"):
        tf.losses.mean_squared_error(LABELS, PRED, weights=np.ones(4))


def test_mismatched_shapes_are_refused(graph):
    with pytest.raises(ValueError, match=r"Shapes \(4, 2\) and \(4, 3\) are incompatible"):
        tf.losses.mean_squared_error(LABELS, PRED[:, :2])


def test_cosine_distance_needs_an_axis(graph):
    with pytest.raises(ValueError, match=r"You must specify argument `axis`"):
        tf.losses.cosine_distance(UNIT_LABELS, UNIT)


def test_missing_labels_are_refused(graph):
    with pytest.raises(ValueError, match=r"Argument `onehot_labels` must not be None"):
        tf.losses.softmax_cross_entropy(None, LOGITS)


def test_reduction_keys_are_tensorflows():
    assert tf.losses.Reduction.SUM_OVER_NONZERO_WEIGHTS == tf.losses.Reduction.SUM_BY_NONZERO_WEIGHTS
    assert set(tf.losses.Reduction.all()) == set(REDUCTIONS) | {"none"}
