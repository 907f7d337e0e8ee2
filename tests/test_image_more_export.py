"""The tf.image ops of issue 32 (image_resize_more_ops, image_crop_ops, image_nms_ops,
image_boxes_ops, image_quality_ops) export to real TensorFlow (`nbdist.export.to_tensorflow`):
TensorFlow knows each op type and its attrs, and runs the exported graph, gradients included, to
nbdist's values (the random and JPEG ops aside)."""

import numpy as np

import nbdist as tf
import nbdist.export

_RNG = np.random.default_rng(3234)
X = _RNG.uniform(0, 1, (2, 6, 7, 3)).astype(np.float32)
BOXES = np.array([[0.1, 0.2, 0.8, 0.9], [0.9, 0.8, 0.2, 0.1], [-0.2, 0.0, 1.1, 0.7]], np.float32)
SCORES = np.array([0.9, 0.8, 0.3], np.float32)


def _outputs(x):
    crops = tf.image.crop_and_resize(x, BOXES, [0, 1, 1], [3, 4])
    bicubic = tf.image.resize_bicubic(x, [4, 9], half_pixel_centers=True)
    combined = tf.image.combined_non_max_suppression(BOXES[None, :, None], SCORES[None, :, None], 2, 3)
    return {
        "resize_bicubic": bicubic,
        "resize_area": tf.image.resize_area(x, [4, 5], align_corners=True),
        "crop_and_resize": crops,
        "draw_bounding_boxes": tf.image.draw_bounding_boxes(x, np.stack([BOXES[:2]] * 2), colors=X[0, 0, :2]),
        "extract_glimpse": tf.image.extract_glimpse(x, [2, 3], np.zeros((2, 2), np.float32)),
        "nms_with_scores": tf.image.non_max_suppression_with_scores(BOXES, SCORES, 3, soft_nms_sigma=0.5)[1],
        "nms_padded": tf.image.non_max_suppression_padded(BOXES, SCORES, 5, pad_to_max_output_size=True)[0],
        "nms_overlaps": tf.image.non_max_suppression_overlaps(X[0, :3, :3, 0], SCORES, 2),
        "combined_boxes": combined.nmsed_boxes,
        "combined_valid": combined.valid_detections,
        "gradient": tf.gradients(tf.reduce_sum(crops * crops) + tf.reduce_sum(bicubic * bicubic), x)[0],
    }


def test_the_image_ops_run_in_tensorflow_after_export(tf1):
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [2, 6, 7, 3], name="x")
        outputs = _outputs(x)
        with tf.Session() as sess:
            ours = sess.run(outputs, {x: X})
    exported = nbdist.export.to_tensorflow(graph)
    with tf1.Session(graph=exported.graph) as sess:
        theirs = sess.run({k: exported[t.name] for k, t in outputs.items()}, {exported["x:0"]: X})
    for name, value in ours.items():
        np.testing.assert_allclose(value, theirs[name], rtol=1e-5, atol=1e-5, err_msg=name)


def _static_shapes(t):
    x = t.placeholder(t.float32, [None, 6, None, 3])
    scores = t.constant([0.5, 0.4])
    out = {
        "bicubic": t.image.resize_bicubic(x, [4, 5]),
        "area": t.image.resize_area(x, [4, 5]),
        "pad": t.image.resize_image_with_pad(t.zeros([2, 6, 7, 3]), 8, 9),
        "crop": t.image.crop_and_resize(x, BOXES, [0, 0, 1], [3, 4]),
        "crop_unknown": t.image.crop_and_resize(
            x,
            t.placeholder(t.float32, [None, 4]),
            t.placeholder(t.int32, [None]),
            t.placeholder(t.int32, [2]),
        ),
        "draw": t.image.draw_bounding_boxes(x, t.zeros([2, 2, 4])),
        "glimpse": t.image.extract_glimpse(x, [2, 3], t.zeros([2, 2])),
        "with_scores": t.image.non_max_suppression_with_scores(BOXES[:2], scores, 3),
        "overlaps": t.image.non_max_suppression_overlaps(t.zeros([2, 2]), scores, 3),
        "combined": t.image.combined_non_max_suppression(t.zeros([2, 3, 1, 4]), t.zeros([2, 3, 5]), 2, 4),
        "sample": t.image.sample_distorted_bounding_box([4, 5, 3], t.zeros([1, 1, 4])),
        "ms_ssim": t.image.ssim_multiscale(t.zeros([2, 9, 9, 3]), t.zeros([2, 9, 9, 3]), 1.0, (0.5, 0.5), 3),
        "jpeg": t.image.adjust_jpeg_quality(t.placeholder(t.uint8, [5, 6, 3]), 50),
    }
    return {
        k: [(a.dtype.name, a.shape.as_list()) for a in (v if isinstance(v, (tuple, list)) else [v])]
        for k, v in out.items()
    }


def test_static_shapes_and_dtypes_equal_tensorflows(tf1):
    # (non_max_suppression_padded's: tests/test_image_nms_ops.py; TF traces it, ~1 s a call)
    with tf.Graph().as_default():
        ours = _static_shapes(tf)
    with tf1.Graph().as_default():
        theirs = _static_shapes(tf1)
    assert ours == theirs
