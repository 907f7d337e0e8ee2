"""`tf.nn.fused_batch_norm` (ops/fused_batch_norm_ops.py), `tf.nn.max_pool_with_argmax`,
`tf.nn.dilation2d`, `tf.nn.erosion2d` (ops/morphology_ops.py): values, static shapes, dtypes and
gradients equal real TF's on the same inputs, ties included."""

import numpy as np
import pytest

import nbdist as tf

RNG = np.random.RandomState(5)
X = (RNG.randn(2, 4, 3, 3) * 2 + 1).astype(np.float32)
X5 = RNG.randn(2, 3, 2, 4, 3).astype(np.float32)
SCALE = (RNG.rand(3) + 0.5).astype(np.float32)
OFFSET = RNG.randn(3).astype(np.float32)
MEAN = RNG.randn(3).astype(np.float32)
VAR = (RNG.rand(3) + 0.2).astype(np.float32)
IMG = RNG.randn(2, 6, 5, 3).astype(np.float32)
KERNEL = RNG.randn(3, 2, 3).astype(np.float32)
TIES = np.round(RNG.rand(2, 4, 5, 2) * 2).astype(np.float32)


def _run(t, build):
    with t.Graph().as_default():
        fetches = build(t)
        shapes = [f.shape.as_list() for f in fetches]
        with t.Session() as sess:
            return sess.run(fetches), shapes


def _assert_same(ours, theirs, rtol=1e-5, atol=1e-5):
    (a_values, a_shapes), (b_values, b_shapes) = ours, theirs
    assert a_shapes == b_shapes
    for i, (a, b) in enumerate(zip(a_values, b_values, strict=True)):
        assert a.dtype == b.dtype and a.shape == b.shape, i
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=f"fetch {i}")


def _fused(t):
    x, scale, offset = t.constant(X), t.constant(SCALE), t.constant(OFFSET)
    out = []
    for kwargs in (
        {},
        {"mean": MEAN, "variance": VAR, "is_training": False},
        {"mean": MEAN, "variance": VAR, "exponential_avg_factor": 0.3},
        {"epsilon": 1e-7},  # below TF's floor of 1.001e-5
        {"mean": MEAN, "variance": VAR, "is_training": False, "epsilon": 0.5, "name": "bn"},
    ):
        y, mean, var = t.nn.fused_batch_norm(x, scale, offset, **kwargs)
        out += [y, mean, var, *t.gradients(t.reduce_sum(y * y * t.sin(x)), [x, scale, offset])]
    out += list(t.nn.fused_batch_norm(t.constant(X5), scale, offset, data_format="NDHWC"))
    y, mean, var = t.nn.fused_batch_norm(t.constant(X.astype(np.float16)), scale, offset)
    return [*out, y, mean, var, *t.gradients(t.reduce_sum(y), [scale])]


@pytest.mark.tf
def test_fused_batch_norm_matches_tf(tf1):
    _assert_same(_run(tf, _fused), _run(tf1, _fused), rtol=1e-4, atol=2e-4)


def test_fused_batch_norm_nchw_equals_nhwc(graph):
    x = tf.constant(X)
    outs = []
    for training in (True, False):
        kw = {} if training else {"mean": MEAN, "variance": VAR, "is_training": False}
        a = tf.nn.fused_batch_norm(x, SCALE, OFFSET, **kw)
        b = tf.nn.fused_batch_norm(tf.transpose(x, [0, 3, 1, 2]), SCALE, OFFSET, data_format="NCHW", **kw)
        b_nhwc = tf.transpose(b[0], [0, 2, 3, 1])
        outs.append((a[0], b_nhwc, a[2], b[2]))
        outs.append(tuple(tf.gradients(tf.reduce_sum(y * y * tf.cos(x)), x)[0] for y in (a[0], b_nhwc)))
    with tf.Session() as sess:
        for values in sess.run(outs):
            for u, v in zip(values[::2], values[1::2], strict=True):
                np.testing.assert_allclose(u, v, rtol=1e-5, atol=1e-5)


def test_fused_batch_norm_errors(graph):
    with pytest.raises(ValueError, match="Both `mean` and `variance` must be a 1D tensor"):
        tf.nn.fused_batch_norm(X, SCALE, OFFSET, is_training=False)
    with pytest.raises(ValueError, match=r"scale .* has 2 elements, the input .* has 3 channels"):
        tf.nn.fused_batch_norm(X, SCALE[:2], OFFSET)
    with pytest.raises(ValueError, match="must be 4-D"):
        tf.nn.fused_batch_norm(X[0], SCALE, OFFSET)
    with pytest.raises(ValueError, match="data_format 'NWC'"):
        tf.nn.fused_batch_norm(X, SCALE, OFFSET, data_format="NWC")


def _morphology(t):
    x, k, ties = t.constant(IMG), t.constant(KERNEL), t.constant(TIES)
    out = []
    for strides, rates, padding in (
        ([1, 1, 1, 1], [1, 1, 1, 1], "SAME"),
        ([1, 2, 1, 1], [1, 1, 2, 1], "VALID"),
        ([1, 2, 2, 1], [1, 2, 1, 1], "SAME"),
    ):
        for y in (
            t.nn.dilation2d(x, k, strides, rates, padding),
            t.nn.erosion2d(x, k, strides, rates, padding),
        ):
            out += [y, *t.gradients(t.reduce_sum(y * y), [x, k])]
    flat = t.zeros([2, 2, 2])  # every window ties
    y = t.nn.dilation2d(ties, flat, [1, 1, 1, 1], [1, 1, 1, 1], "SAME")
    out += [y, *t.gradients(t.reduce_sum(y * t.sin(y)), [ties, flat])]
    for inp in (x, ties):
        for ksize, strides, padding in (
            ([1, 2, 2, 1], [1, 2, 2, 1], "SAME"),
            ([1, 3, 2, 1], [1, 1, 2, 1], "VALID"),
            ([1, 3, 3, 1], [1, 2, 2, 1], "SAME"),
        ):
            for include_batch in (False, True):
                y, argmax = t.nn.max_pool_with_argmax(
                    inp, ksize, strides, padding, include_batch_in_index=include_batch
                )
                out += [y, argmax, t.gradients(t.reduce_sum(y * y), inp)[0]]
    out.append(t.nn.max_pool_with_argmax(x, [1, 2, 2, 1], [1, 2, 2, 1], "SAME", Targmax=t.int32)[1])
    return out


@pytest.mark.tf
def test_dilation_erosion_and_max_pool_with_argmax_match_tf(tf1):
    _assert_same(_run(tf, _morphology), _run(tf1, _morphology))


def test_morphology_errors(graph):
    x = tf.constant(IMG)
    with pytest.raises(ValueError, match=r"input depth 3 .* must equal filter depth 2"):
        tf.nn.dilation2d(x, tf.zeros([2, 2, 2]), [1, 1, 1, 1], [1, 1, 1, 1], "SAME")
    with pytest.raises(ValueError, match="strides should be a list of 4 ints"):
        tf.nn.dilation2d(x, KERNEL, [1, 1, 1], [1, 1, 1, 1], "SAME")
    with pytest.raises(ValueError, match="VALID output would be empty"):
        tf.nn.erosion2d(x, tf.zeros([7, 1, 3]), [1, 1, 1, 1], [1, 1, 1, 1], "VALID")
    with pytest.raises(ValueError, match="other than 'NHWC' are not yet supported"):
        tf.nn.max_pool_with_argmax(x, 2, 2, "SAME", data_format="NCHW")
    with pytest.raises(TypeError, match="Targmax must be int32 or int64"):
        tf.nn.max_pool_with_argmax(x, 2, 2, "SAME", Targmax=tf.float32)
    y, _ = tf.nn.max_pool_with_argmax(x, 2, 2, "SAME")
    with pytest.raises(LookupError, match="MaxPoolGradWithArgmax"):
        tf.gradients(tf.gradients(tf.reduce_sum(y * y), x)[0], x)
