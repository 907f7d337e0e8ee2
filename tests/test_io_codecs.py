"""`tf.io`'s codecs against real TensorFlow: the image codecs at their `tf.io` paths
(``t.io.decode_png``), BMP / GIF / WebP decoding, `decode_and_crop_jpeg` and
`extract_jpeg_shape`, web-safe base64 and `decode_compressed`; each run in both libraries
on the same inputs."""

import io

import numpy as np
import pytest
from PIL import Image

import nbdist as tf

_RNG = np.random.default_rng(32)
U8 = _RNG.integers(0, 256, (5, 6, 3), dtype=np.uint8)
SMOOTH = (np.add.outer(np.arange(16), np.arange(24))[..., None] * [8, 4, 2] % 256).astype(np.uint8)


def _encoded(fmt, pixels, **options):
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, fmt, **options)
    return buffer.getvalue()


def _gif(frames):
    buffer = io.BytesIO()
    images = [Image.fromarray(f) for f in frames]
    images[0].save(buffer, "GIF", save_all=True, append_images=images[1:])
    return buffer.getvalue()


BMP = _encoded("BMP", U8)
BMP_RGBA = _encoded("BMP", np.dstack([U8, U8[..., :1]]))
BMP_GRAY = _encoded("BMP", U8[..., 0])
GIF = _gif(_RNG.integers(0, 4, (3, 4, 6, 3), dtype=np.uint8) * 80)  # few colours: an exact palette
WEBP = _encoded("WEBP", U8, lossless=True)
WEBP_RGBA = _encoded("WEBP", np.dstack([U8, U8[..., :1]]), lossless=True)
JPEG = _encoded("JPEG", np.repeat(np.repeat(SMOOTH, 2, 0), 2, 1), quality=95)  # 32 x 48
JPEG_GRAY = _encoded("JPEG", SMOOTH[..., 0])


def _value(lib, build):
    with lib.Graph().as_default(), lib.Session() as sess:
        return sess.run(build(lib))


def _assert_same(ours, theirs, name, atol=0):
    if isinstance(theirs, (tuple, list)):
        assert len(ours) == len(theirs), name
        for a, b in zip(ours, theirs, strict=True):
            _assert_same(a, b, name, atol)
        return
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert (ours.shape, ours.dtype) == (theirs.shape, theirs.dtype), name
    if theirs.dtype.kind in "OSU":
        assert ours.tolist() == theirs.tolist(), name
    else:
        np.testing.assert_allclose(ours.astype(float), theirs.astype(float), atol=atol, err_msg=name)


CASES = {
    "png_at_tf_io": lambda t: [
        t.io.decode_png(t.io.encode_png(t.constant(U8))),
        t.io.decode_png(t.io.encode_png(t.constant(U8[..., :1]), compression=9), channels=3),
        t.io.decode_png(t.io.encode_png(t.constant(U8[..., :1].astype(np.uint16) * 257)), dtype=t.uint16),
        t.io.decode_image(t.io.encode_png(t.constant(U8)), dtype=t.float32),
        t.io.is_jpeg(t.io.encode_png(t.constant(U8))),
    ],
    "bmp": lambda t: [
        t.io.decode_bmp(BMP),
        t.image.decode_bmp(BMP_RGBA),
        t.io.decode_bmp(BMP_RGBA, channels=3),
        t.io.decode_bmp(BMP, channels=4),
        t.io.decode_bmp(BMP_GRAY),
        t.io.decode_image(BMP),
        t.io.decode_image(BMP_RGBA),
        t.image.decode_image(BMP_GRAY, channels=3),
    ],
    "gif": lambda t: [
        t.io.decode_gif(GIF),
        t.image.decode_gif(GIF),
        t.io.decode_image(GIF),
        t.io.decode_image(GIF, expand_animations=False),
        t.image.decode_image(GIF, dtype=t.float32),
    ],
    "webp": lambda t: [
        t.io.decode_webp(WEBP),
        t.image.decode_webp(WEBP_RGBA),
        t.io.decode_webp(WEBP_RGBA, channels=4),
        t.io.decode_image(WEBP),
    ],
    "extract_jpeg_shape": lambda t: [
        t.io.extract_jpeg_shape(JPEG),
        t.image.extract_jpeg_shape(JPEG_GRAY, output_type=t.int64),
    ],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_codec_matches_tensorflow(tf1, name):
    _assert_same(_value(tf, CASES[name]), _value(tf1, CASES[name]), name, atol=1e-7)


def test_jpeg_at_tf_io_is_within_a_few_levels_of_tensorflow(tf1):
    def build(t):
        data = t.io.encode_jpeg(t.constant(SMOOTH), quality=90)
        return t.io.decode_jpeg(data), t.io.is_jpeg(data), t.io.decode_image(data, channels=1)

    ours, theirs = _value(tf, build), _value(tf1, build)
    assert ours[1] and theirs[1]
    assert ours[0].shape == theirs[0].shape == SMOOTH.shape and ours[2].shape == theirs[2].shape
    assert np.abs(ours[0].astype(int) - theirs[0].astype(int)).max() <= 4
    assert np.abs(ours[2].astype(int) - theirs[2].astype(int)).max() <= 4


def test_decode_and_crop_jpeg_is_the_window_of_tensorflows_pixels(tf1):
    def build(t):
        return [
            t.io.decode_and_crop_jpeg(JPEG, [2, 3, 10, 12]),
            t.image.decode_and_crop_jpeg(JPEG, t.constant([0, 0, 32, 48]), channels=1),
            t.io.decode_and_crop_jpeg(JPEG_GRAY, [5, 1, 4, 7]),
            t.io.decode_jpeg(JPEG),
        ]

    ours, theirs = _value(tf, build), _value(tf1, build)
    for a, b in zip(ours, theirs, strict=True):
        assert (a.shape, a.dtype) == (b.shape, b.dtype)
        diff = np.abs(a.astype(int) - b.astype(int))
        assert diff.max() <= 8 and diff.mean() < 2  # another libjpeg build's rounding
    np.testing.assert_array_equal(ours[0], ours[3][2:12, 3:15])


def test_static_shapes_are_tensorflows(tf1):
    def shapes(t):
        with t.Graph().as_default():
            data = t.placeholder(t.string, [])
            return [
                t.io.decode_bmp(data).shape.as_list(),
                t.io.decode_bmp(data, channels=4).shape.as_list(),
                t.io.decode_gif(data).shape.as_list(),
                t.io.decode_webp(data, channels=3).shape.as_list(),
                t.io.extract_jpeg_shape(data).shape.as_list(),
                t.io.decode_and_crop_jpeg(data, [0, 0, 1, 1], channels=3).shape.as_list(),
            ]

    assert shapes(tf) == shapes(tf1)


@pytest.mark.parametrize("lib_name", ["nbdist", "tensorflow"])
def test_bad_images_raise_invalid_argument_as_in_tensorflow(tf1, lib_name):
    t = tf if lib_name == "nbdist" else tf1
    with t.Graph().as_default(), t.Session() as sess:
        for fetch, message in [
            (t.io.decode_bmp(BMP, channels=1), "`channels` must be 0, 3 or 4 for BMP"),
            (t.io.decode_webp(WEBP, channels=4), "Number of channels requested does not match input"),
            (t.io.extract_jpeg_shape(BMP), "Invalid JPEG data, size"),
            (t.io.decode_and_crop_jpeg(JPEG, [25, 3, 10, 12]), "Invalid JPEG data or crop window"),
            (t.io.decode_gif(b"GIF89a-broken"), None),
        ]:
            with pytest.raises(t.errors.InvalidArgumentError, match=message):
                sess.run(fetch)


def test_write_graph_at_tf_io_writes_a_graph_def_tensorflow_reads(tf1, tmp_path):
    with tf.Graph().as_default() as graph:
        tf.nn.relu(tf.placeholder(tf.float32, [None, 3], name="x"), name="y")
    path = tf.io.write_graph(graph, str(tmp_path), "g.pb", as_text=False)
    graph_def = tf1.GraphDef()
    with open(path, "rb") as f:
        graph_def.ParseFromString(f.read())
    assert [(n.name, n.op) for n in graph_def.node] == [("x", "Placeholder"), ("y", "Relu")]
