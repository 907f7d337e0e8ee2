"""Random ops: distributions, TF's seeding rules, per-run state and errors."""

import numpy as np
import pytest

import nbdist as tf
from nbdist.ops import registry


def _build(seed=None, graph_seed=None):
    """A fresh graph with two random ops (for comparing whole programs)."""
    graph = tf.Graph()
    with graph.as_default():
        if graph_seed is not None:
            tf.set_random_seed(graph_seed)
        a = tf.random_normal([3], seed=seed)
        b = tf.random_uniform([3], seed=seed)
    return graph, [a, b]


def _runs(graph, fetches, n=2):
    with tf.Session(graph=graph) as sess:
        return [sess.run(fetches) for _ in range(n)]


def _same(xs, ys):
    return all(np.array_equal(x, y) for x, y in zip(np.concatenate(xs), np.concatenate(ys)))


def test_random_normal_statistics_and_dtype(graph):
    x = tf.random_normal([20000], mean=2.0, stddev=3.0, dtype=tf.float64, seed=1)
    assert x.dtype == tf.float64 and x.shape.as_list() == [20000]
    (out,) = _runs(graph, x, n=1)
    assert out.mean() == pytest.approx(2.0, abs=0.1)
    assert out.std() == pytest.approx(3.0, abs=0.1)


def test_truncated_normal_stays_within_two_stddevs(graph):
    x = tf.truncated_normal([20000], mean=1.0, stddev=0.5, seed=1)
    (out,) = _runs(graph, x, n=1)
    assert out.dtype == np.float32
    assert np.all(np.abs(out - 1.0) <= 1.0 + 1e-6)
    assert out.std() == pytest.approx(0.5 * 0.88, abs=0.02)  # the std of N(0,1) truncated at +-2 is 0.88


def test_random_uniform_float_range(graph):
    x = tf.random_uniform([1000], minval=-2.0, maxval=3.0, seed=1)
    (out,) = _runs(graph, x, n=1)
    assert out.min() >= -2.0 and out.max() < 3.0
    assert out.mean() == pytest.approx(0.5, abs=0.2)


def test_random_uniform_int_range(graph):
    x = tf.random_uniform([2, 500], minval=3, maxval=7, dtype=tf.int64, seed=1)
    assert x.dtype == tf.int64 and x.shape.as_list() == [2, 500]
    (out,) = _runs(graph, x, n=1)
    assert set(np.unique(out)) == {3, 4, 5, 6}


def test_random_shape_may_be_a_runtime_tensor(graph):
    n = tf.placeholder(tf.int32, [])
    x = tf.random_normal(tf.stack([n, 2]))
    assert x.shape.as_list() == [None, None]
    with tf.Session() as sess:
        assert sess.run(x, {n: 4}).shape == (4, 2)


def test_random_ops_are_stateful_and_not_differentiable():
    for op_type in ("RandomStandardNormal", "TruncatedNormal", "RandomUniform", "RandomUniformInt"):
        d = registry.lookup(op_type)
        assert d.stateful and d.no_gradient


def test_successive_runs_draw_new_numbers():
    graph, fetches = _build(seed=5)
    first, second = _runs(graph, fetches)
    assert not _same(first, second)


def test_op_seed_repeats_the_sequence_in_a_new_session():
    graph, fetches = _build(seed=5)
    assert all(_same(a, b) for a, b in zip(_runs(graph, fetches), _runs(graph, fetches)))


def test_same_program_with_the_same_graph_seed_gives_the_same_numbers():
    g1, f1 = _build(graph_seed=42)
    g2, f2 = _build(graph_seed=42)
    assert all(_same(a, b) for a, b in zip(_runs(g1, f1, 3), _runs(g2, f2, 3)))


def test_graph_seed_gives_each_op_a_different_seed():
    graph, _ = _build(graph_seed=42)
    ops = [op for op in graph.get_operations() if op.type in ("RandomStandardNormal", "RandomUniform")]
    assert [op.get_attr("seed") for op in ops] == [42, 42]
    assert ops[0].get_attr("seed2") != ops[1].get_attr("seed2")


def test_a_different_graph_seed_gives_different_numbers():
    g1, f1 = _build(graph_seed=1)
    g2, f2 = _build(graph_seed=2)
    assert not _same(_runs(g1, f1, 1)[0], _runs(g2, f2, 1)[0])


def test_no_seed_gives_fresh_numbers_in_each_session():
    graph, fetches = _build()
    assert not _same(_runs(graph, fetches, 1)[0], _runs(graph, fetches, 1)[0])


def test_get_seed_follows_tf_rules(graph):
    assert tf.get_seed(None) == (None, None)
    assert tf.get_seed(7) == (87654321, 7)
    tf.set_random_seed(3)
    tf.constant(1.0)
    assert tf.get_seed(None) == (3, len(graph.get_operations()))
    assert tf.get_seed(7) == (3, 7)
    tf.set_random_seed(0)
    assert tf.get_seed(0) == (0, 2**31 - 1)  # TF avoids the (0, 0) pair, which means "unseeded"


def test_random_uniform_int_needs_maxval(graph):
    with pytest.raises(ValueError, match=r"must specify maxval for integer dtype int32"):
        tf.random_uniform([2], dtype=tf.int32)


def test_random_uniform_int_rejects_empty_range(graph):
    x = tf.random_uniform([2], minval=5, maxval=5, dtype=tf.int32)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Need minval < maxval: 5 >= 5"):
        _runs(graph, x, n=1)


def test_random_normal_rejects_integer_dtype(graph):
    with pytest.raises(ValueError, match=r"dtype must be a floating point type, got int32"):
        tf.random_normal([2], dtype=tf.int32)


def test_negative_runtime_shape_is_an_error(graph):
    shape = tf.placeholder(tf.int32, [2])
    with (
        tf.Session() as sess,
        pytest.raises(tf.errors.InvalidArgumentError, match=r"sizes >= 0, got \[2, -1\]"),
    ):
        sess.run(tf.random_normal(shape), {shape: [2, -1]})
