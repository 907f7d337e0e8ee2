"""`tf.image`'s NMS family and `sample_distorted_bounding_box` against real TensorFlow:
`non_max_suppression_with_scores` (hard and Soft-NMS), `_padded` (one image, batches of 1 and 3),
`_overlaps`, `combined_non_max_suppression`; score ties, flipped and degenerate boxes, thresholds
met exactly, no boxes; the random crop by its constraints and seeds."""

import numpy as np
import pytest

import nbdist as tf

_RNG = np.random.default_rng(532)


def _boxes(n):
    centre, size = _RNG.uniform(0, 1, (n, 2)), _RNG.uniform(0.1, 0.5, (n, 2))
    return np.concatenate([centre - size / 2, centre + size / 2], 1).astype(np.float32)


BOXES = _boxes(12)
BOXES[7] = BOXES[7][[2, 3, 0, 1]]  # corners flipped
BOXES[9] = [0.5, 0.5, 0.5, 0.7]  # no area
SCORES = _RNG.uniform(0, 1, 12).astype(np.float32)
SCORES[3] = SCORES[5]  # a tie: the lower index first
BOXES3 = np.stack([BOXES, _boxes(12), BOXES[::-1]])
SCORES3 = np.stack([SCORES, _RNG.uniform(0, 1, 12).astype(np.float32), SCORES[::-1]])
OVERLAPS = _RNG.uniform(0, 1, (12, 12)).astype(np.float32)
OVERLAPS[4, 2] = 0.5


def _value(lib, build):
    with lib.Graph().as_default(), lib.Session() as sess:
        return sess.run(build(lib))


def _flat(value):
    if isinstance(value, (list, tuple)):
        return [a for v in value for a in _flat(v)]
    return [np.asarray(value)]


def _same(ours, theirs):
    ours, theirs = _flat(ours), _flat(theirs)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape, (a, b)
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("sigma", [0.0, 0.5, 1.0])
def test_non_max_suppression_with_scores_matches_tensorflow(tf1, sigma):
    def build(t):
        out = [
            t.image.non_max_suppression_with_scores(BOXES, SCORES, 10, iou, st, sigma)
            for iou in (0.3, 0.6, 1.0)
            for st in (float("-inf"), 0.2, 0.5)
        ]
        out.append(
            t.image.non_max_suppression_with_scores(np.zeros((0, 4), np.float32), np.zeros(0, np.float32), 3)
        )
        tie = [[0, 0, 1, 1], [0, 0, 1, 1], [0, 0, 0.5, 1]]  # IoUs 1 and exactly 0.5
        out.append(
            t.image.non_max_suppression_with_scores(tie, [0.9, 0.8, 0.7], 3, 0.5, soft_nms_sigma=sigma)
        )
        return out

    _same(_value(tf, build), _value(tf1, build))


def test_non_max_suppression_padded_matches_tensorflow(tf1):
    # (TF builds each call as a traced function, ~0.7 s: three calls, the rest checked against them)
    def build(t):
        boxes, scores = t.constant(BOXES), t.constant(SCORES)
        return [
            t.image.non_max_suppression_padded(boxes, scores, 7, 0.4, 0.3),
            t.image.non_max_suppression_padded(boxes, scores, 20, 0.4, 0.3, pad_to_max_output_size=True),
            t.image.non_max_suppression_padded(
                t.constant(BOXES3), t.constant(SCORES3), 5, 0.4, 0.2, pad_to_max_output_size=True
            ),
        ]

    ours, theirs = _value(tf, build), _value(tf1, build)
    _same(ours, theirs)
    (short, n_short), (padded, n_padded), (batch, n_batch) = theirs
    assert n_short == 7 < n_padded < 20 and not padded[n_padded:].any()  # zero padded

    def more(t):
        boxes, scores = t.constant(BOXES), t.constant(SCORES)
        return [
            t.image.non_max_suppression_padded(boxes, scores, 3, 0.4, 0.3, pad_to_max_output_size=True),
            t.image.non_max_suppression_padded(
                t.constant(BOXES3[:1]), t.constant(SCORES3[:1]), 5, 0.4, 0.2, pad_to_max_output_size=True
            ),
        ]

    _same(_value(tf, more), [(short[:3], np.int32(3)), (batch[:1], n_batch[:1])])
    with tf.Graph().as_default():
        idx, valid = tf.image.non_max_suppression_padded(
            tf.constant(BOXES3), tf.constant(SCORES3), 5, pad_to_max_output_size=True
        )
        assert idx.shape.as_list() == [3, 5] and valid.shape.as_list() == [3]
        with pytest.raises(ValueError, match="must be True for batched input"):
            tf.image.non_max_suppression_padded(tf.constant(BOXES3), tf.constant(SCORES3), 5)


def test_non_max_suppression_overlaps_matches_tensorflow(tf1):
    def build(t):
        out = [t.image.non_max_suppression_overlaps(OVERLAPS, SCORES, 8, th, 0.1) for th in (0.3, 0.5, 0.8)]
        tie = np.full((3, 3), 0.5, np.float32)
        return [*out, t.image.non_max_suppression_overlaps(tie, [0.9, 0.8, 0.7], 3, 0.5)]

    _same(_value(tf, build), _value(tf1, build))


@pytest.mark.parametrize("q", [1, 4], ids=["shared_boxes", "boxes_per_class"])
def test_combined_non_max_suppression_matches_tensorflow(tf1, q):
    boxes = _RNG.uniform(-0.2, 1.2, (3, 10, q, 4)).astype(np.float32)
    scores = _RNG.uniform(0, 1, (3, 10, 4)).astype(np.float32)

    def build(t):
        out = []
        for pad in (False, True):
            for clip in (True, False):
                out.append(t.image.combined_non_max_suppression(boxes, scores, 3, 7, 0.4, 0.3, pad, clip))
                out.append(
                    t.image.combined_non_max_suppression(boxes[:1], scores[:1], 4, 50, 0.5, 0.1, pad, clip)
                )
        return out

    _same(_value(tf, build), _value(tf1, build))
    with tf.Graph().as_default():
        result = tf.image.combined_non_max_suppression(boxes, scores, 3, 7, pad_per_class=True)
        assert result.nmsed_boxes.shape.as_list() == [3, 7, 4] and result.valid_detections.dtype == tf.int32


def test_nms_errors(tf1):
    with tf.Graph().as_default(), tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"iou_threshold must be in \[0, 1\]"):
            sess.run(tf.image.non_max_suppression_with_scores(BOXES, SCORES, 3, 1.5))
        with pytest.raises(tf.errors.InvalidArgumentError, match="soft_nms_sigma must be non-negative"):
            sess.run(tf.image.non_max_suppression_with_scores(BOXES, SCORES, 3, soft_nms_sigma=-1.0))
        with pytest.raises(tf.errors.InvalidArgumentError, match="scores has incompatible shape"):
            sess.run(tf.image.non_max_suppression_overlaps(OVERLAPS, SCORES[:3], 3))


def test_sample_distorted_bounding_box_deterministic_cases_match_tensorflow(tf1):
    def build(t):
        whole = t.image.sample_distorted_bounding_box(
            [40, 50, 3], [[[0.0, 0.0, 1.0, 1.0]]], min_object_covered=1.0, area_range=(1.0, 1.0)
        )
        impossible = t.image.sample_distorted_bounding_box(  # no crop can cover it: the image
            np.array([30, 20, 1], np.int64),
            [[[0.0, 0.0, 1.0, 1.0]]],
            seed=1,
            min_object_covered=0.9,
            area_range=(0.1, 0.2),
            max_attempts=5,
        )
        return [whole, impossible]

    _same(_value(tf, build), _value(tf1, build))


def _crops(seed, seed2, runs=4):
    with tf.Graph().as_default(), tf.Session() as sess:
        boxes = [[[0.1, 0.2, 0.5, 0.7], [0.3, 0.3, 0.9, 0.8]]]
        out = tf.image.sample_distorted_bounding_box(
            [40, 50, 3], boxes, seed=seed, seed2=seed2, min_object_covered=0.3, aspect_ratio_range=[0.5, 2.0]
        )
        assert [o.shape.as_list() for o in out] == [[3], [3], [1, 1, 4]]
        assert [o.dtype for o in out] == [tf.int32, tf.int32, tf.float32]
        return [sess.run(out) for _ in range(runs)]


def test_sample_distorted_bounding_box_is_seeded_and_meets_its_constraints():
    crops = _crops(7, 2)
    assert all(
        np.array_equal(a, b)
        for x, y in zip(crops, _crops(7, 2), strict=True)
        for a, b in zip(x, y, strict=True)
    )
    assert len({tuple(c[0]) + tuple(c[1]) for c in crops}) > 1  # each run draws a new crop
    for begin, size, bbox in crops:
        (y, x, z), (h, w, d) = begin, size
        assert z == 0 and d == -1 and y >= 0 and y + h <= 40 and x >= 0 and x + w <= 50
        assert 0.05 * 2000 - 1 <= h * w <= 2000 and 0.5 <= w / h <= 2.0 + 1 / h
        np.testing.assert_allclose(bbox[0, 0], [y / 40, x / 50, (y + h) / 40, (x + w) / 50], rtol=1e-6)
        covered = [
            max(0, min(y + h, y1) - max(y, y0))
            * max(0, min(x + w, x1) - max(x, x0))
            / ((y1 - y0) * (x1 - x0))
            for y0, x0, y1, x1 in ((4, 10, 20, 35), (12, 15, 36, 40))
        ]
        assert max(covered) >= 0.3


def test_sample_distorted_bounding_box_errors(tf1):
    with tf.Graph().as_default(), tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"must be in \[0.0, 1.0\]: 1.5"):
            sess.run(tf.image.sample_distorted_bounding_box([40, 50, 3], [[[0.1, 0.2, 1.5, 0.7]]]))
        with pytest.raises(tf.errors.InvalidArgumentError, match="use_image_if_no_bounding_boxes"):
            sess.run(tf.image.sample_distorted_bounding_box([40, 50, 3], np.zeros((1, 0, 4), np.float32)))
