"""`tf.nn`'s names that TF builds from other ops - 1-D convolution and pooling, `atrous_conv2d`,
`convolution`, `pool`, `space_to_depth` / `depth_to_space`, `relu_layer`, the weighted and
Poisson losses, the moments helpers, `embedding_lookup_sparse`, ... - against real TF: values
and gradients on the same inputs."""

import numpy as np
import pytest

import nbdist as tf

_RNG = np.random.default_rng(32)
SEQ = _RNG.standard_normal((2, 9, 3))
IMG = _RNG.standard_normal((2, 6, 6, 4))
K1 = _RNG.standard_normal((3, 3, 5))
K2 = _RNG.standard_normal((3, 3, 4, 2))
LABELS = (_RNG.uniform(size=(4, 3)) > 0.5).astype(np.float64)
LOGITS = _RNG.standard_normal((4, 3))
W = _RNG.standard_normal((3, 2))
B = _RNG.standard_normal(2)
EMB = _RNG.standard_normal((7, 3))

CASES = {
    "conv1d_same": (lambda t, x: t.nn.conv1d(x, t.constant(K1), stride=2, padding="SAME"), SEQ),
    "conv1d_valid": (lambda t, x: t.nn.conv1d(x, t.constant(K1), 1, "VALID"), SEQ),
    "max_pool1d": (lambda t, x: t.nn.max_pool1d(x, 2, 2, "VALID"), SEQ),
    "avg_pool1d": (lambda t, x: t.nn.avg_pool1d(x, 3, 2, "SAME"), SEQ),
    "max_pool2d": (lambda t, x: t.nn.max_pool2d(x, 2, 2, "SAME"), IMG),
    "avg_pool2d": (lambda t, x: t.nn.avg_pool2d(x, 2, 2, "VALID"), IMG),
    "max_pool_v2": (lambda t, x: t.nn.max_pool_v2(x, [1, 2, 2, 1], [1, 1, 1, 1], "SAME"), IMG),
    "avg_pool_v2": (lambda t, x: t.nn.avg_pool_v2(x, 3, 1, "SAME"), IMG),
    "atrous_conv2d": (lambda t, x: t.nn.atrous_conv2d(x, t.constant(K2), 2, "SAME"), IMG),
    "convolution_2d": (lambda t, x: t.nn.convolution(x, t.constant(K2), "VALID", strides=[1, 2]), IMG),
    "convolution_1d": (lambda t, x: t.nn.convolution(x, t.constant(K1), "SAME"), SEQ),
    "pool_max": (lambda t, x: t.nn.pool(x, [2, 2], "MAX", "SAME", strides=[2, 2]), IMG),
    "pool_avg": (lambda t, x: t.nn.pool(x, [3, 3], "AVG", "VALID"), IMG),
    "space_to_depth": (lambda t, x: t.nn.space_to_depth(x, 2), IMG),
    "depth_to_space": (lambda t, x: t.nn.depth_to_space(x, 2), IMG),
    "relu_layer": (lambda t, x: t.nn.relu_layer(x, t.constant(W), t.constant(B)), LOGITS),
    "weighted_cross_entropy": (
        lambda t, x: t.nn.weighted_cross_entropy_with_logits(
            labels=t.constant(LABELS), logits=x, pos_weight=2.5
        ),
        LOGITS,
    ),
    "log_poisson_loss": (lambda t, x: t.nn.log_poisson_loss(t.constant(LABELS * 3), x), LOGITS),
    "log_poisson_loss_full": (
        lambda t, x: t.nn.log_poisson_loss(t.constant(LABELS * 3 + 0.5), x, compute_full_loss=True),
        LOGITS,
    ),
    "weighted_moments": (
        lambda t, x: t.nn.weighted_moments(x, [0], t.constant(np.array([[1.0], [2.0], [0.5], [1.0]])))[1],
        LOGITS,
    ),
    "sufficient_statistics": (
        lambda t, x: t.nn.sufficient_statistics(x, [0], shift=t.constant(0.5, t.float64))[2],
        LOGITS,
    ),
    "normalize_moments": (
        lambda t, x: t.nn.normalize_moments(*t.nn.sufficient_statistics(x, [0, 1]))[1],
        LOGITS,
    ),
    "batch_norm_with_global_normalization": (
        lambda t, x: t.nn.batch_norm_with_global_normalization(
            x,
            t.constant(np.zeros(3)),
            t.constant(np.full(3, 2.0)),
            t.constant(np.ones(3)),
            t.constant(np.full(3, 3.0)),
            0.01,
            True,
        ),
        LOGITS,
    ),
    "compute_average_loss": (
        lambda t, x: t.nn.compute_average_loss(t.reduce_sum(x, 1), global_batch_size=8),
        LOGITS,
    ),
    "scale_regularization_loss": (lambda t, x: t.nn.scale_regularization_loss(t.reduce_sum(x)), LOGITS),
    "zero_fraction": (lambda t, x: t.nn.zero_fraction(t.nn.relu(x)), LOGITS),
}


def _run(lib, build, value):
    with lib.Graph().as_default():
        x = lib.placeholder(lib.float64, value.shape)
        y = build(lib, x)
        (g,) = lib.gradients(lib.reduce_sum(y * y), [x])
        with lib.Session() as sess:
            return sess.run([y, g] if g is not None else [y], {x: value})


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients_match_tensorflow(tf1, name):
    build, value = CASES[name]
    ours, theirs = _run(tf, build, value), _run(tf1, build, value)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        rtol = 1e-6 if np.asarray(b).dtype == np.float32 else 1e-9  # (zero_fraction is float32, as TF's)
        np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-10, err_msg=name)


@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
@pytest.mark.parametrize("weighted", [False, True])
def test_embedding_lookup_sparse_matches_tensorflow(tf1, combiner, weighted):
    got = []
    for t in (tf, tf1):
        with t.Graph().as_default():
            params = t.Variable(EMB)
            ids = t.SparseTensor(
                [[0, 0], [0, 1], [1, 0], [2, 0], [2, 1], [2, 2]],
                np.array([1, 3, 6, 0, 1, 1], np.int64),
                [3, 3],
            )
            weights = (
                t.SparseTensor(ids.indices, np.array([1.0, 0.5, 2.0, 1.0, 3.0, 0.25]), [3, 3])
                if weighted
                else None
            )
            out = t.nn.embedding_lookup_sparse(params, ids, weights, combiner=combiner)
            grad = t.convert_to_tensor(t.gradients(t.reduce_sum(out * out), params)[0])
            with t.Session() as sess:
                sess.run(t.global_variables_initializer())
                got.append(sess.run([out, grad]))
    for a, b in zip(*got, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_depthwise_backprop_names_are_tf_nns(tf1):
    assert (
        tf.nn.depthwise_conv2d_backprop_filter is not None
        and tf.nn.depthwise_conv2d_backprop_input is not None
    )
    x = _RNG.standard_normal((1, 4, 4, 2))
    w = _RNG.standard_normal((2, 2, 2, 1))
    got = []
    for t in (tf, tf1):
        with t.Graph().as_default(), t.Session() as sess:
            dy = t.constant(np.ones((1, 4, 4, 2)))
            got.append(
                sess.run(
                    [
                        t.nn.depthwise_conv2d_backprop_filter(
                            t.constant(x), [2, 2, 2, 1], dy, [1, 1, 1, 1], "SAME"
                        ),
                        t.nn.depthwise_conv2d_backprop_input(
                            [1, 4, 4, 2], t.constant(w), dy, [1, 1, 1, 1], "SAME"
                        ),
                    ]
                )
            )
    for a, b in zip(*got, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9)
