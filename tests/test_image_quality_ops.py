"""`tf.image.ssim_multiscale` against real TensorFlow (odd sizes padded at each scale, batches of
1 and 3, extra batch dimensions, uint8 images), and `adjust_jpeg_quality` /
`random_jpeg_quality` within JPEG's tolerance of TensorFlow's re-encoding."""

import numpy as np
import pytest

import nbdist as tf

_RNG = np.random.default_rng(3233)
A = _RNG.uniform(0, 1, (3, 37, 42, 3)).astype(np.float32)
B = np.clip(A + _RNG.normal(0, 0.1, A.shape), 0, 1).astype(np.float32)
IMG = np.clip(
    np.linspace(0, 1, 37 * 42 * 3).reshape(37, 42, 3) + _RNG.normal(0, 0.05, (37, 42, 3)), 0, 1
).astype(np.float32)


def _value(lib, build):
    with lib.Graph().as_default(), lib.Session() as sess:
        return sess.run(build(lib))


def test_ssim_multiscale_matches_tensorflow(tf1):
    u1, u2 = (A * 255).astype(np.uint8), (B * 255).astype(np.uint8)

    def build(t):
        out = [
            t.image.ssim_multiscale(A, B, 1.0, power_factors=pf, filter_size=fs)
            for pf, fs in (((0.3, 0.5, 0.2), 5), ((1.0,), 7))
        ]
        out.append(
            t.image.ssim_multiscale(
                u1[:1], u2[:1], 255, power_factors=(0.3, 0.7), filter_size=4, filter_sigma=1.0
            )
        )
        out.append(
            t.image.ssim_multiscale(A[:, None], B[:, None], 1.0, power_factors=(0.3, 0.7), filter_size=5)
        )
        return out

    for ours, theirs in zip(_value(tf, build), _value(tf1, build), strict=True):
        assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
        np.testing.assert_allclose(ours, theirs, rtol=2e-6)


def test_ssim_multiscale_rejects_images_too_small_for_its_scales():
    with tf.Graph().as_default(), pytest.raises(ValueError, match="smaller than filter_size 11"):
        tf.image.ssim_multiscale(A, B, 1.0)  # 37 x 42 halves below 11 by the 5th scale


@pytest.mark.parametrize("quality", [10, 50, 95])
def test_adjust_jpeg_quality_is_within_jpeg_tolerance_of_tensorflow(tf1, quality):
    images = (IMG, (IMG * 255).astype(np.uint8), IMG[..., :1])

    def build(t):
        return [t.image.adjust_jpeg_quality(im, t.constant(quality)) for im in images]

    for image, ours, theirs in zip(images, _value(tf, build), _value(tf1, build), strict=True):
        assert ours.dtype == theirs.dtype == image.dtype and ours.shape == theirs.shape == image.shape
        scale = 255 if image.dtype == np.float32 else 1
        assert np.abs(ours.astype(np.float64) - theirs).max() * scale <= 6  # a few levels: two libjpegs
        loss, their_loss = (np.abs(x.astype(np.float64) - image).mean() for x in (ours, theirs))
        assert abs(loss - their_loss) <= 0.25 * their_loss + 1e-3


def test_random_jpeg_quality_is_seeded_and_checks_its_range():
    def run():
        with tf.Graph().as_default(), tf.Session() as sess:
            out = tf.image.random_jpeg_quality(tf.constant(IMG), 20, 90, seed=4)
            assert out.dtype == tf.float32 and out.shape.as_list() == [None, None, 3]  # (as TF's decode)
            return [sess.run(out) for _ in range(2)]

    first, again = run(), run()
    np.testing.assert_array_equal(first[0], again[0])
    assert 0 < np.abs(first[0] - IMG).mean() < 0.05
    with pytest.raises(ValueError, match="between 0 and 100"):
        tf.image.random_jpeg_quality(IMG, 20, 101)
    with pytest.raises(ValueError, match="must be less than"):
        tf.image.random_jpeg_quality(IMG, 50, 50)
