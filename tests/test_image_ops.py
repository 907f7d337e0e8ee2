"""`tf.image` against real TensorFlow: each name spelled as a program spells it
(``t.image.flip_left_right``), run in both libraries on the same inputs; the random ones by
their ranges and seeds, the codecs by round trips (PNG exactly, JPEG within a few levels)."""

import numpy as np
import pytest

import nbdist as tf

_RNG = np.random.default_rng(32)
IMG = _RNG.uniform(0, 1, (5, 6, 3)).astype(np.float32)  # one image, [h, w, c]
BATCH = _RNG.uniform(0, 1, (2, 5, 6, 3)).astype(np.float32)
BATCH2 = np.clip(BATCH + _RNG.normal(0, 0.1, BATCH.shape), 0, 1).astype(np.float32)
U8 = _RNG.integers(0, 256, (2, 5, 6, 3), dtype=np.uint8)
GRAY = _RNG.uniform(0, 1, (2, 4, 3, 1)).astype(np.float32)
BIG = _RNG.uniform(0, 1, (1, 13, 12, 2)).astype(np.float32)  # ssim's 11x11 window fits
WIDE = np.linspace(-0.5, 1.5, 20, dtype=np.float32).reshape(1, 4, 5, 1)  # saturation on the way back
BOXES = _RNG.uniform(0, 1, (12, 4)).astype(np.float32)
SCORES = _RNG.uniform(0, 1, 12).astype(np.float32)


def _resize_cases():
    cases = {}
    for method in ("bilinear", "nearest_neighbor"):
        for size in ([8, 9], [3, 4], [5, 13], [1, 1]):
            for flags in ({}, {"align_corners": True}, {"half_pixel_centers": True}):
                key = f"resize_{method}_{size[0]}x{size[1]}_{'_'.join(flags) or 'legacy'}"
                cases[key] = (method, size, flags)
    return cases


def _resize(t, method, size, flags):
    images = t.constant(BATCH if method == "bilinear" else U8)
    if method == "bilinear":
        return t.image.resize_bilinear(images, size, **flags)
    return t.image.resize_nearest_neighbor(images, size, **flags)


CASES = {
    "flip_left_right": lambda t: t.image.flip_left_right(t.constant(IMG)),
    "flip_left_right_4d": lambda t: t.image.flip_left_right(t.constant(BATCH)),
    "flip_up_down": lambda t: t.image.flip_up_down(t.constant(BATCH)),
    "transpose_image": lambda t: t.image.transpose_image(t.constant(IMG)),
    "transpose": lambda t: t.image.transpose(t.constant(BATCH)),
    "rot90": lambda t: (
        [t.image.rot90(t.constant(BATCH), k) for k in range(4)] + [t.image.rot90(t.constant(IMG))]
    ),
    "central_crop": lambda t: [
        t.image.central_crop(t.constant(BATCH), 0.5),
        t.image.central_crop(t.constant(IMG), 0.7),
    ],
    "crop_to_bounding_box": lambda t: t.image.crop_to_bounding_box(t.constant(BATCH), 1, 2, 3, 4),
    "pad_to_bounding_box": lambda t: t.image.pad_to_bounding_box(t.constant(IMG), 1, 2, 8, 9),
    "resize_image_with_crop_or_pad": lambda t: [
        t.image.resize_image_with_crop_or_pad(t.constant(BATCH), h, w) for h, w in ((3, 9), (8, 2), (5, 6))
    ],
    "resize_with_crop_or_pad": lambda t: t.image.resize_with_crop_or_pad(t.constant(IMG), 4, 7),
    "per_image_standardization": lambda t: [
        t.image.per_image_standardization(t.constant(BATCH)),
        t.image.per_image_standardization(t.constant(U8[0])),
        t.image.per_image_standardization(t.constant(np.ones((2, 2, 1), np.float32))),
    ],
    "convert_image_dtype": lambda t: [
        t.image.convert_image_dtype(t.constant(U8), t.float32),
        t.image.convert_image_dtype(t.constant(BATCH), t.uint8),
        t.image.convert_image_dtype(t.constant(WIDE), t.uint8, saturate=True),
        t.image.convert_image_dtype(t.constant(U8), t.int32),
        t.image.convert_image_dtype(t.constant(U8), t.int16),
        t.image.convert_image_dtype(t.constant(np.array([70000, -5, 2**31 - 1], np.int32)), t.uint8),
        t.image.convert_image_dtype(t.constant(BATCH), t.float64),
    ],
    "adjust_brightness": lambda t: [
        t.image.adjust_brightness(t.constant(BATCH), 0.3),
        t.image.adjust_brightness(t.constant(U8), -0.2),
    ],
    "adjust_contrast": lambda t: [
        t.image.adjust_contrast(t.constant(BATCH), 1.7),
        t.image.adjust_contrast(t.constant(U8), 0.4),
    ],
    "adjust_gamma": lambda t: [
        t.image.adjust_gamma(t.constant(BATCH), 2.2, 0.9),
        t.image.adjust_gamma(t.constant(U8), 0.5),
    ],
    "adjust_saturation": lambda t: [
        t.image.adjust_saturation(t.constant(BATCH), 1.8),
        t.image.adjust_saturation(t.constant(U8), 0.3),
    ],
    "adjust_hue": lambda t: [
        t.image.adjust_hue(t.constant(BATCH), 0.3),
        t.image.adjust_hue(t.constant(U8), -0.45),
    ],
    "rgb_to_grayscale": lambda t: [
        t.image.rgb_to_grayscale(t.constant(BATCH)),
        t.image.rgb_to_grayscale(t.constant(U8)),
    ],
    "grayscale_to_rgb": lambda t: t.image.grayscale_to_rgb(t.constant(GRAY)),
    "rgb_to_hsv": lambda t: t.image.rgb_to_hsv(
        t.constant(np.concatenate([BATCH, np.full((2, 5, 1, 3), 0.5, np.float32)], 2))
    ),
    "hsv_to_rgb": lambda t: t.image.hsv_to_rgb(t.constant(BATCH)),
    "rgb_to_yiq": lambda t: t.image.rgb_to_yiq(t.constant(BATCH)),
    "yiq_to_rgb": lambda t: t.image.yiq_to_rgb(t.constant(BATCH)),
    "rgb_to_yuv": lambda t: t.image.rgb_to_yuv(t.constant(IMG)),
    "yuv_to_rgb": lambda t: t.image.yuv_to_rgb(t.constant(BATCH)),
    "resize_images": lambda t: [
        t.image.resize_images(t.constant(BATCH), [7, 9]),
        t.image.resize_images(
            t.constant(IMG), [3, 2], t.image.ResizeMethod.NEAREST_NEIGHBOR, align_corners=True
        ),
        t.image.resize_images(t.constant(U8), [4, 4], t.image.ResizeMethod.NEAREST_NEIGHBOR),
        t.image.resize_images(t.constant(U8), [9, 9], preserve_aspect_ratio=True),
        t.image.resize_images(t.constant(BATCH), [5, 6]),
    ],
    "resize": lambda t: t.image.resize(t.constant(BATCH), [10, 3], align_corners=True),
    "total_variation": lambda t: [
        t.image.total_variation(t.constant(BATCH)),
        t.image.total_variation(t.constant(IMG)),
    ],
    "image_gradients": lambda t: t.image.image_gradients(t.constant(BATCH)),
    "sobel_edges": lambda t: t.image.sobel_edges(t.constant(BATCH)),
    "psnr": lambda t: [
        t.image.psnr(t.constant(BATCH), t.constant(BATCH2), 1.0),
        t.image.psnr(t.constant(U8), t.constant(U8[::-1]), 255),
    ],
    "ssim": lambda t: t.image.ssim(t.constant(BIG), t.constant(BIG[..., ::-1].copy()), 1.0),
    "extract_image_patches": lambda t: [
        t.image.extract_image_patches(t.constant(BATCH), [1, 2, 3, 1], [1, 2, 2, 1], [1, 1, 1, 1], "SAME"),
        t.image.extract_image_patches(t.constant(BATCH), [1, 2, 2, 1], [1, 1, 3, 1], [1, 2, 1, 1], "VALID"),
        t.image.extract_image_patches(t.constant(BATCH), [1, 3, 2, 1], [1, 3, 1, 1], [1, 1, 2, 1], "SAME"),
    ],
    "non_max_suppression": lambda t: [
        t.image.non_max_suppression(t.constant(BOXES), t.constant(SCORES), 5, 0.3),
        t.image.non_max_suppression(t.constant(BOXES), t.constant(SCORES), 10, 0.5, score_threshold=0.4),
    ],
    "png_round_trip": lambda t: [
        t.image.decode_png(t.image.encode_png(t.constant(U8[0]))),
        t.image.decode_png(t.image.encode_png(t.constant(U8[0, :, :, :1])), channels=3),
        t.image.decode_image(t.image.encode_png(t.constant(U8[1]))),
        t.image.is_jpeg(t.image.encode_png(t.constant(U8[0]))),
    ],
}


def _value(lib, build):
    with lib.Graph().as_default(), lib.Session() as sess:
        return sess.run(build(lib))


def _assert_same(ours, theirs, name, atol=2e-6):
    if isinstance(theirs, (tuple, list)):
        assert len(ours) == len(theirs), name
        for a, b in zip(ours, theirs, strict=True):
            _assert_same(a, b, name, atol)
        return
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert (ours.shape, ours.dtype) == (theirs.shape, theirs.dtype), name
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=atol, err_msg=name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_image_op_matches_tensorflow(tf1, name):
    _assert_same(_value(tf, CASES[name]), _value(tf1, CASES[name]), name)


@pytest.mark.parametrize("key", sorted(_resize_cases()))
def test_resize_kernels_sample_as_tensorflow(tf1, key):
    method, size, flags = _resize_cases()[key]
    build = lambda t: _resize(t, method, size, flags)  # noqa: E731
    _assert_same(_value(tf, build), _value(tf1, build), key, atol=1e-5)


def test_jpeg_round_trip_is_within_a_few_levels_of_tensorflow(tf1):
    smooth = (np.add.outer(np.arange(16), np.arange(16))[..., None] * [8, 4, 2]).astype(np.uint8)

    def build(t):
        data = t.image.encode_jpeg(t.constant(smooth), quality=90)
        return t.image.decode_jpeg(data), t.image.is_jpeg(data), t.image.decode_image(data, dtype=t.float32)

    ours, theirs = _value(tf, build), _value(tf1, build)
    assert ours[1] and theirs[1]
    assert ours[0].shape == theirs[0].shape == smooth.shape
    assert np.abs(ours[0].astype(int) - theirs[0].astype(int)).max() <= 4
    assert np.abs(ours[2] - theirs[2]).max() <= 4 / 255
    assert np.abs(ours[0].astype(int) - smooth).mean() < 3


def test_decoding_tensorflows_png_gives_its_pixels(tf1):
    png = _value(tf1, lambda t: t.image.encode_png(t.constant(U8[0])))
    gray16 = _value(tf1, lambda t: t.image.encode_png(t.constant(U8[0, :, :, :1].astype(np.uint16) * 250)))
    with tf.Session() as sess:
        pixels, wide = sess.run([tf.image.decode_png(png), tf.image.decode_png(gray16, dtype=tf.uint16)])
    np.testing.assert_array_equal(pixels, U8[0])
    np.testing.assert_array_equal(wide, U8[0, :, :, :1].astype(np.uint16) * 250)


def test_random_ops_are_seeded_and_in_range():
    def build():
        x = tf.constant(BATCH)
        return [
            tf.image.random_flip_left_right(x, seed=3),
            tf.image.random_flip_up_down(tf.constant(IMG), seed=4),
            tf.image.random_crop(x, [2, 3, 4, 3], seed=5),
            tf.image.random_brightness(x, 0.2, seed=6),
            tf.image.random_contrast(x, 0.5, 1.5, seed=7),
            tf.image.random_hue(x, 0.2, seed=8),
            tf.image.random_saturation(x, 0.5, 1.5, seed=9),
        ]

    runs = []
    for _ in range(2):
        with tf.Graph().as_default(), tf.Session() as sess:
            tf.set_random_seed(1)
            runs.append(sess.run(build()))
    for a, b in zip(*runs, strict=True):
        np.testing.assert_array_equal(a, b)
    flipped, flipped_3d, crop, bright, contrast, _, _ = runs[0]
    for image, out in zip(BATCH, flipped, strict=True):
        assert np.array_equal(out, image) or np.array_equal(out, image[:, ::-1])
    assert np.array_equal(flipped_3d, IMG) or np.array_equal(flipped_3d, IMG[::-1])
    assert crop.shape == (2, 3, 4, 3) and any(
        np.array_equal(crop, BATCH[:, i : i + 3, j : j + 4]) for i in range(3) for j in range(3)
    )
    assert np.ptp(bright - BATCH) < 1e-6 and abs((bright - BATCH).mean()) <= 0.2
    spread = np.std(contrast, axis=(1, 2)) / np.std(BATCH, axis=(1, 2))
    assert np.allclose(spread, spread.flat[0], rtol=1e-4) and 0.5 <= spread.flat[0] <= 1.5


def test_random_flips_each_image_of_a_batch_on_its_own():
    images = np.stack([IMG] * 64)
    with tf.Session() as sess:
        out = sess.run(tf.image.random_flip_left_right(tf.constant(images), seed=11))
    flipped = [not np.array_equal(o, IMG) for o in out]
    assert 10 < sum(flipped) < 54


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda x: tf.image.crop_to_bounding_box(x, 3, 0, 3, 2), "height must be >= target \\+ offset"),
        (lambda x: tf.image.pad_to_bounding_box(x, 0, 0, 4, 9), "height must be <= target - offset"),
        (lambda x: tf.image.central_crop(x, 1.5), "central_fraction must be within"),
        (lambda x: tf.image.flip_left_right(x[0, 0]), "must have 3 or 4 dimensions"),
        (lambda x: tf.image.resize_images(x, [3, 3], method="lanczos3"), "not implemented"),
        (lambda x: tf.image.random_contrast(x, 1.0, 0.5), "upper must be > lower"),
    ],
)
def test_bad_arguments_raise_value_error(build, match):
    with tf.Graph().as_default(), pytest.raises(ValueError, match=match):
        build(tf.constant(BATCH))


def test_unsupported_image_names_say_so():
    with pytest.raises(AttributeError, match=r"tf\.image\.decode_jxl is not supported by nbdist"):
        tf.image.decode_jxl  # noqa: B018
