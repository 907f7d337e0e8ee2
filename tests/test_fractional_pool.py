"""`tf.nn.fractional_max_pool` / `fractional_avg_pool` (nbdist/ops/fractional_pool_ops.py).

The pooling regions are random (TF draws them from its Philox stream, nbdist from numpy's), so
the deterministic parts are compared with real TF's: where the ratio divides the size (regions
fixed) the outputs and gradients equal TF's; otherwise each library's outputs and gradients are
checked against one numpy rule (TF's windows, first maximum on ties) applied to that library's
own sequences, and the sequences against TF's construction rules."""

import numpy as np
import pytest

import nbdist as tf
from nbdist import errors

RNG = np.random.RandomState(11)
X = RNG.randn(2, 7, 9, 3).astype(np.float32)
EVEN = RNG.randn(2, 6, 8, 2).astype(np.float32)
TIES = np.round(RNG.rand(1, 6, 8, 2) * 2).astype(np.float32)
G = RNG.randn(2, 4, 5, 3).astype(np.float32)  # the gradient weights of X's [1, 1.44, 1.73, 1] pools


def _windows(seq, size, overlapping):
    ends = seq[1:] if overlapping else seq[1:] - 1
    return list(zip(seq[:-1], np.minimum(ends, size - 1), strict=True))


def _reference(x, rows, cols, overlapping, g):
    """TF's pooling and gradients given the sequences: ``(max, avg, d max, d avg)``."""
    h, w = x.shape[1:3]
    out = [np.zeros((x.shape[0], len(rows) - 1, len(cols) - 1, x.shape[3]), np.float64) for _ in range(2)]
    grads = [np.zeros(x.shape, np.float64) for _ in range(2)]
    for i, (r0, r1) in enumerate(_windows(rows, h, overlapping)):
        for j, (c0, c1) in enumerate(_windows(cols, w, overlapping)):
            win = x[:, r0 : r1 + 1, c0 : c1 + 1]
            out[0][:, i, j], out[1][:, i, j] = win.max(axis=(1, 2)), win.mean(axis=(1, 2))
            grads[1][:, r0 : r1 + 1, c0 : c1 + 1] += g[:, i, j][:, None, None] / win[0, ..., 0].size
            first = win.reshape(win.shape[0], -1, win.shape[3]).argmax(axis=1)
            for b in range(x.shape[0]):
                for ch in range(x.shape[3]):
                    k = first[b, ch]
                    grads[0][b, r0 + k // (c1 - c0 + 1), c0 + k % (c1 - c0 + 1), ch] += g[b, i, j, ch]
    return (*out, *grads)


def _pools(t, x, ratio, g, **kwargs):
    x = t.constant(x)
    (mx, rows, cols), (av, rows2, cols2) = (
        t.nn.fractional_max_pool(x, ratio, **kwargs),
        t.nn.fractional_avg_pool(x, ratio, **kwargs),
    )
    dmx = t.gradients(t.reduce_sum(mx * g), x)[0]
    dav = t.gradients(t.reduce_sum(av * g), x)[0]
    return [mx, rows, cols, av, rows2, cols2, dmx, dav]


def _run(t, *args, **kwargs):
    with t.Graph().as_default():
        fetches = _pools(t, *args, **kwargs)
        shapes = [f.shape.as_list() for f in fetches[::3]]
        with t.Session() as sess:
            return sess.run(fetches), shapes


@pytest.mark.tf
@pytest.mark.parametrize("overlapping", [False, True])
def test_even_regions_equal_tf(tf1, overlapping):
    g = RNG.randn(2, 3, 4, 2).astype(np.float32)
    for x in (EVEN, TIES[[0, 0]]):
        (ours, our_shapes), (theirs, their_shapes) = (
            _run(t, x, [1.0, 2.0, 2.0, 1.0], g, overlapping=overlapping) for t in (tf, tf1)
        )
        assert our_shapes[0] == their_shapes[0] == [2, 3, 4, 2]
        for a, b in zip(ours, theirs, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


@pytest.mark.tf
@pytest.mark.parametrize("pseudo_random", [False, True])
@pytest.mark.parametrize("overlapping", [False, True])
def test_random_regions_follow_tfs_rule(tf1, pseudo_random, overlapping):
    ratio = [1.0, 1.44, 1.73, 1.0]
    for t in (tf, tf1):
        (mx, rows, cols, av, rows2, cols2, dmx, dav), shapes = _run(
            t, X, ratio, G, pseudo_random=pseudo_random, overlapping=overlapping
        )
        assert shapes[0] == [2, 4, 5, 3] and mx.shape == (2, 4, 5, 3)
        for seq, size, out in ((rows, 7, 4), (cols, 9, 5), (rows2, 7, 4), (cols2, 9, 5)):
            steps = np.diff(seq)
            assert seq.dtype == np.int64 and seq[0] == 0 and seq[-1] == size and len(seq) == out + 1
            assert set(steps) <= ({size // out, size // out + 1} if not pseudo_random else set(range(1, 4)))
        ref_max, _, ref_dmax, _ = _reference(X, rows, cols, overlapping, G)
        _, ref_avg, _, ref_davg = _reference(X, rows2, cols2, overlapping, G)
        for got, want in ((mx, ref_max), (av, ref_avg), (dmx, ref_dmax), (dav, ref_davg)):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_deterministic_regions_repeat(graph):
    _, rows, cols = tf.nn.fractional_max_pool(X, [1.0, 1.5, 1.5, 1.0], deterministic=True, seed=3, seed2=4)
    other = tf.nn.fractional_max_pool(X, [1.0, 1.5, 1.5, 1.0], deterministic=True, seed=3, seed2=4)
    with tf.Session() as sess:
        first, second = sess.run([rows, cols]), sess.run([rows, cols])
        third = sess.run(other[1:])
    for a, b, c in zip(first, second, third, strict=True):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)


def test_fractional_pool_errors_as_tf(graph):
    with pytest.raises(ValueError, match=r"pooling_ratio cannot be smaller than 1, got: 0\.5"):
        tf.nn.fractional_avg_pool(X, [1.0, 0.5, 2.0, 1.0])
    with pytest.raises(ValueError, match="list of length 2 less than minimum 4"):
        tf.nn.fractional_max_pool(X, [1.5, 1.5])
    with pytest.raises(ValueError, match="not yet supported on the batch nor channel dimension"):
        tf.nn.fractional_max_pool(X, [1.0, 2.0, 2.0, 2.0])
    with tf.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError, match="Both seed and seed2 should be 0"):
            sess.run(tf.nn.fractional_avg_pool(X, [1.0, 2.0, 2.0, 1.0], seed=3)[0])
        with pytest.raises(errors.InvalidArgumentError, match="Pooling ratio is higher than input dimension"):
            sess.run(tf.nn.fractional_max_pool(X, [1.0, 8.0, 2.0, 1.0])[0])
