"""`tf.image.resize_bicubic`, `resize_area` and `resize_image_with_pad` against real
TensorFlow: the same inputs through both libraries, every sampling mode, sizes up and down and to
1x1, batches of 1 and 3, float and uint8 images, and the bicubic gradient."""

import numpy as np
import pytest

import nbdist as tf

_RNG = np.random.default_rng(321)
X3 = _RNG.uniform(0, 255, (3, 5, 7, 2)).astype(np.float32)
U1 = _RNG.integers(0, 256, (1, 4, 6, 3)).astype(np.uint8)
SIZES = ([8, 9], [3, 4], [5, 13], [1, 1], [10, 3])
BICUBIC_FLAGS = ({}, {"align_corners": True}, {"half_pixel_centers": True})


def _value(lib, build):
    with lib.Graph().as_default(), lib.Session() as sess:
        return sess.run(build(lib))


def _close(ours, theirs, atol=1e-4):
    for a, b in zip(ours, theirs, strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
        np.testing.assert_allclose(a.astype(np.float64), b, rtol=1e-6, atol=atol)


@pytest.mark.parametrize("images", [X3, U1], ids=["float32_batch3", "uint8_batch1"])
def test_resize_bicubic_matches_tensorflow(tf1, images):
    def build(t):
        return [t.image.resize_bicubic(images, s, **f) for s in SIZES for f in BICUBIC_FLAGS]

    _close(_value(tf, build), _value(tf1, build))


@pytest.mark.parametrize("images", [X3, U1], ids=["float32_batch3", "uint8_batch1"])
def test_resize_area_matches_tensorflow(tf1, images):
    def build(t):
        return [t.image.resize_area(images, s, align_corners=a) for s in SIZES for a in (False, True)]

    _close(_value(tf, build), _value(tf1, build))


def test_resize_bicubic_gradient_matches_tensorflow(tf1):
    weights = np.arange(56, dtype=np.float32).reshape(1, 7, 4, 2)

    def build(t):
        x = t.constant(X3[:1])
        out = []
        for flags in BICUBIC_FLAGS:
            y = t.image.resize_bicubic(x, [7, 4], **flags)
            out.append(t.gradients(t.reduce_sum(y * weights), x)[0])
        return out

    _close(_value(tf, build), _value(tf1, build), atol=1e-4)


def test_resize_area_has_no_gradient():
    with tf.Graph().as_default():
        x = tf.constant(X3)
        assert tf.gradients(tf.image.resize_area(x, [2, 3]), x) == [None]


def test_resize_static_shapes_and_errors(tf1):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.uint8, [None, 4, 6, 3])
        assert tf.image.resize_bicubic(x, [2, 9]).shape.as_list() == [None, 2, 9, 3]
        assert tf.image.resize_area(x, [5, 1]).dtype == tf.float32
        with pytest.raises(ValueError, match="align_corners must be False"):
            tf.image.resize_bicubic(x, [2, 2], align_corners=True, half_pixel_centers=True)
        with (
            tf.Session() as sess,
            pytest.raises(tf.errors.InvalidArgumentError, match=r"ResizeArea.*positive"),
        ):
            sess.run(tf.image.resize_area(tf.constant(U1), tf.constant([0, 3])))


@pytest.mark.parametrize("method", [0, 1, 2, 3])
def test_resize_image_with_pad_matches_tensorflow(tf1, method):
    def build(t):
        cases = ((X3, 8, 9), (X3[0], 3, 12), (U1[0], 10, 4), (U1, 4, 6), (X3, 5, 7))
        return [t.image.resize_image_with_pad(x, h, w, method) for x, h, w in cases]

    _close(_value(tf, build), _value(tf1, build))


@pytest.mark.parametrize("method", [2, 3, "bicubic", "area"])
def test_resize_images_by_bicubic_and_area_matches_tensorflow(tf1, method):
    def build(t):
        return [
            t.image.resize_images(X3, [8, 3], method),
            t.image.resize_images(U1[0], [3, 9], method, align_corners=True),
            t.image.resize_images(X3, [10, 10], method, preserve_aspect_ratio=True),
            t.image.resize(U1, [2, 2], method),
        ]

    _close(_value(tf, build), _value(tf1, build))
