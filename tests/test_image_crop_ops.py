"""`tf.image.crop_and_resize`, `draw_bounding_boxes` and `extract_glimpse` against real
TensorFlow: boxes flipped, out of the image, degenerate and none at all, one-pixel crops, batches
of 1 and 3, both sampling methods, gradients wrt image and boxes, and TF's errors."""

import numpy as np
import pytest

import nbdist as tf

_RNG = np.random.default_rng(3232)
X3 = _RNG.uniform(0, 10, (3, 6, 7, 2)).astype(np.float32)
BOXES = np.array(
    [
        [0.1, 0.2, 0.8, 0.9],
        [0.9, 0.8, 0.2, 0.1],  # flipped
        [-0.3, -0.2, 1.4, 1.1],  # partly outside: extrapolated
        [0.5, 0.5, 0.5, 0.5],  # a point
        [0.0, 0.0, 1.0, 1.0],
        [1.2, 1.1, 1.5, 1.3],  # wholly outside
    ],
    np.float32,
)
BOX_IND = np.array([0, 2, 1, 1, 0, 2], np.int32)
CROPS = ([4, 5], [1, 1], [1, 3], [7, 2])


def _value(lib, build):
    with lib.Graph().as_default(), lib.Session() as sess:
        return sess.run(build(lib))


def _close(ours, theirs, rtol=1e-6, atol=1e-5):
    for a, b in zip(ours, theirs, strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


@pytest.mark.parametrize("method", ["bilinear", "nearest"])
def test_crop_and_resize_matches_tensorflow(tf1, method):
    def build(t):
        out = [
            t.image.crop_and_resize(X3, BOXES, BOX_IND, c, method=method, extrapolation_value=-1.5)
            for c in CROPS
        ]
        out.append(
            t.image.crop_and_resize(X3[:1], BOXES[:2], box_indices=[0, 0], crop_size=[3, 3], method=method)
        )
        out.append(t.image.crop_and_resize((X3 * 20).astype(np.uint8), BOXES, BOX_IND, [3, 2], method=method))
        out.append(t.image.crop_and_resize(X3, np.zeros((0, 4), np.float32), np.zeros(0, np.int32), [2, 2]))
        return out

    _close(_value(tf, build), _value(tf1, build))


@pytest.mark.parametrize("method", ["bilinear", "nearest"])
def test_crop_and_resize_gradients_match_tensorflow(tf1, method):
    def build(t):
        image, boxes = t.constant(X3.astype(np.float64)), t.constant(BOXES)
        out = []
        for crop in CROPS:
            y = t.image.crop_and_resize(image, boxes, BOX_IND, crop, method=method)
            weights = np.arange(np.prod(y.shape.as_list())).reshape(y.shape.as_list()) % 7
            out += t.gradients(t.reduce_sum(y * weights.astype(np.float32)), [image, boxes])
        return out

    _close(_value(tf, build), _value(tf1, build), rtol=1e-5, atol=1e-3)


def test_crop_and_resize_errors_and_shapes(tf1):
    with tf.Graph().as_default(), tf.Session() as sess:
        out = tf.image.crop_and_resize(tf.placeholder(tf.uint8, [None, 6, 7, 3]), BOXES, BOX_IND, [4, 5])
        assert out.shape.as_list() == [6, 4, 5, 3] and out.dtype == tf.float32
        with pytest.raises(
            tf.errors.OutOfRangeError, match=r"box_index has values outside \[0, batch_size\)"
        ):
            sess.run(tf.image.crop_and_resize(X3, BOXES, BOX_IND + 1, [3, 3]))
        with pytest.raises(tf.errors.InvalidArgumentError, match="crop dimensions must be positive"):
            sess.run(tf.image.crop_and_resize(X3, BOXES, BOX_IND, tf.constant([0, 3])))
        with pytest.raises(ValueError, match="method"):
            tf.image.crop_and_resize(X3, BOXES, BOX_IND, [3, 3], method="bicubic")


def test_draw_bounding_boxes_matches_tensorflow(tf1):
    boxes = np.tile(np.concatenate([BOXES, [[0.2, 0.1, 0.6, 0.5]] * 6])[None], [3, 1, 1])
    boxes[1] = _RNG.uniform(-0.2, 1.2, boxes[1].shape)
    colors = np.array([[0.3, 0.4, 0.5, 0.6, 0.7], [0.9, 0.8, 0.7, 0.6, 0.5]], np.float32)

    def build(t):
        out = []
        for depth in (1, 3, 4):
            images = _RNG.uniform(0, 0.3, (3, 7, 8, depth)).astype(np.float32)
            out += [
                t.image.draw_bounding_boxes(images, boxes),
                t.image.draw_bounding_boxes(images, boxes, colors=colors),
            ]
        out.append(t.image.draw_bounding_boxes(X3[:1, :, :, :1] / 10, np.zeros((1, 0, 4), np.float32)))
        return out

    state = _RNG.bit_generator.state
    ours = _value(tf, build)
    _RNG.bit_generator.state = state
    _close(ours, _value(tf1, build), atol=0)


def test_draw_bounding_boxes_errors(tf1):
    with tf.Graph().as_default(), tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="batch sizes should be the same"):
            sess.run(tf.image.draw_bounding_boxes(X3[:, :, :, :1], np.ones((2, 1, 4), np.float32)))
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"Channel depth should be either 1 \(GRY\)"):
            unknown = tf.placeholder_with_default(X3, None)  # (a static depth fails at once, as TF)
            sess.run(tf.image.draw_bounding_boxes(unknown, np.ones((3, 1, 4), np.float32)))
        with pytest.raises(ValueError, match=r"Channel depth should be either 1 \(GRY\)"):
            tf.image.draw_bounding_boxes(X3, np.ones((3, 1, 4), np.float32))
        with pytest.raises(TypeError, match="images"):
            tf.image.draw_bounding_boxes(X3.astype(np.uint8), np.ones((3, 1, 4), np.float32))


OFFSETS = {
    (True, True): [[0.0, 0.0], [0.2, -0.3], [0.5, 0.4]],
    (True, False): [[-1.2, -1.2], [0.8, 1.8], [0.4, 1.3]],
    (False, True): [[0.0, 0.0], [0.2, 0.3], [0.5, 0.4]],
    (False, False): [[0.0, 0.0], [2.0, 3.0], [1.6, 2.5]],
}


def _inside(offset, size, flags):
    """Which glimpse pixels lie in X3's 6 x 7 image (TF 1.x's rule, computed independently)."""
    masks = []
    for off, n, g in zip(offset, (6, 7), size, strict=True):
        v = np.float32(off) * (n if flags[1] else 1)
        v = v / 2 + n / 2 if flags[0] else v
        start = int(np.float32(v - g / 2))
        masks.append((start + np.arange(g) >= 0) & (start + np.arange(g) < n))
    return masks[0][:, None] & masks[1][None, :]


@pytest.mark.parametrize("flags", sorted(OFFSETS), ids=lambda f: f"centered={f[0]}-normalized={f[1]}")
def test_extract_glimpse_matches_tensorflow_inside_the_image(tf1, flags):
    sizes = ([2, 3], [6, 7], [1, 1], [4, 2], [9, 10])
    offsets = np.asarray(OFFSETS[flags], np.float32)

    def build(t):
        return [
            t.image.extract_glimpse(
                X3, s, offsets, centered=flags[0], normalized=flags[1], uniform_noise=False
            )
            for s in sizes
        ]

    low, high = X3.min(axis=(1, 2, 3)), X3.max(axis=(1, 2, 3))
    for size, ours, theirs in zip(sizes, _value(tf, build), _value(tf1, build), strict=True):
        assert ours.shape == theirs.shape == (3, *size, 2)
        for b in range(3):
            inside = _inside(offsets[b], size, flags)
            np.testing.assert_array_equal(ours[b][inside], theirs[b][inside])
            assert low[b] <= ours[b].min() and ours[b].max() <= high[b]  # TF's uniform noise range


def test_extract_glimpse_errors_and_shape(tf1):
    with tf.Graph().as_default(), tf.Session() as sess:
        out = tf.image.extract_glimpse(tf.placeholder(tf.float32, [None, 6, 7, 2]), [3, 4], tf.zeros([5, 2]))
        assert out.shape.as_list() == [5, 3, 4, 2]  # (the batch of offsets, as TF)
        with pytest.raises(tf.errors.InvalidArgumentError, match="vector of size 2"):
            sess.run(tf.image.extract_glimpse(X3, tf.constant([2, 2, 1]), np.zeros((3, 2), np.float32)))
        x = tf.constant(X3)
        assert tf.gradients(tf.image.extract_glimpse(x, [2, 2], np.zeros((3, 2), np.float32)), x) == [None]


RANK_ERRORS = {
    "crop_and_resize": lambda t: t.image.crop_and_resize(X3[0], BOXES, BOX_IND, [2, 2]),
    "crop_and_resize_boxes": lambda t: t.image.crop_and_resize(X3, BOXES[None], BOX_IND, [2, 2]),
    "draw_bounding_boxes": lambda t: t.image.draw_bounding_boxes(X3[..., :1], BOXES),
    "extract_glimpse": lambda t: t.image.extract_glimpse(X3, [2, 2], np.zeros(2, np.float32)),
    "resize_bicubic": lambda t: t.image.resize_bicubic(X3[0], [2, 2]),
    "resize_area": lambda t: t.image.resize_area(X3[0], [2, 2]),
    "nms_with_scores": lambda t: t.image.non_max_suppression_with_scores(BOXES[None], BOXES[:, 0], 3),
    "nms_overlaps": lambda t: t.image.non_max_suppression_overlaps(BOXES[:, 0], BOXES[:, 0], 3),
    "combined_nms": lambda t: t.image.combined_non_max_suppression(X3[0], X3[:, :, 0], 2, 3),
    "sample_distorted_bounding_box": lambda t: t.image.sample_distorted_bounding_box([4, 5, 3], BOXES),
}


@pytest.mark.parametrize("name", sorted(RANK_ERRORS))
def test_static_ranks_are_checked_when_the_graph_is_built_as_tensorflow(tf1, name):
    for lib in (tf, tf1):
        with lib.Graph().as_default(), pytest.raises(ValueError, match="Shape must be rank"):
            RANK_ERRORS[name](lib)
