"""`tf.nn.moments`, `tf.nn.batch_normalization`, `tf.nn.l2_normalize`: values and gradients
against real TensorFlow (NHWC-shaped batches, keepdims, None offset / scale, zero vectors)."""

import numpy as np
import pytest

import nbdist as tf

_RNG = np.random.default_rng(11)
X = _RNG.standard_normal((4, 3, 2, 5)).astype(np.float32) * 3 + 1
OFFSET = _RNG.standard_normal(5).astype(np.float32)
SCALE = _RNG.uniform(0.5, 2, 5).astype(np.float32)
ROWS = np.array([[3.0, 4.0], [0.0, 0.0], [1e-8, 0.0]], np.float32)


def _moments_and_bn(t, x):
    mean, var = t.nn.moments(x, [0, 1, 2])
    mean_kept, var_kept = t.nn.moments(x, [0], keep_dims=True)
    assert mean.shape.as_list() == [5] and mean_kept.shape.as_list() == [1, 3, 2, 5]
    return [
        mean,
        var,
        mean_kept,
        var_kept,
        t.nn.batch_normalization(x, mean, var, OFFSET, SCALE, 1e-3),
        t.nn.batch_normalization(x, mean, var, None, None, 1e-5),
        t.nn.batch_normalization(x, mean_kept, var_kept, None, SCALE, 0.0),
    ]


CASES = {
    "moments_batch_normalization": (_moments_and_bn, X),
    "l2_normalize_rows": (lambda t, x: [t.nn.l2_normalize(x, axis=1)], ROWS),
    "l2_normalize_all": (lambda t, x: [t.nn.l2_normalize(x, epsilon=1e-4)], ROWS),
    "l2_normalize_dim": (lambda t, x: [t.nn.l2_normalize(x, dim=0)], X[0]),
    "moments_float64": (
        lambda t, x: list(t.nn.moments(x, [1], keepdims=True)),
        X[:, :, 0].astype(np.float64),
    ),
}


def _run(lib, fn, value):
    with lib.Graph().as_default() as graph:
        x = lib.constant(value)
        outs = fn(lib, x)
        rng = np.random.default_rng(2)
        weighted = lib.add_n(
            [lib.reduce_sum(y * rng.standard_normal(y.shape.as_list()).astype(value.dtype)) for y in outs]
        )
        (g,) = lib.gradients(weighted, x)
        with lib.Session(graph=graph) as sess:
            return sess.run([*outs, g])


@pytest.mark.tf
@pytest.mark.parametrize("name", CASES)
def test_values_and_gradients_match_tensorflow(tf1, name):
    fn, value = CASES[name]
    for i, (a, b) in enumerate(zip(_run(tf, fn, value), _run(tf1, fn, value), strict=True)):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6, err_msg=f"{name} fetch {i}")


def test_moments_of_float16_are_float16(graph):
    mean, variance = tf.nn.moments(tf.constant(X.astype(np.float16)), [0])
    assert mean.dtype == variance.dtype == tf.float16


def test_l2_normalize_takes_axis_or_dim_not_both(graph):
    with pytest.raises(ValueError, match=r"pass either axis or dim"):
        tf.nn.l2_normalize(ROWS, axis=0, dim=0)
