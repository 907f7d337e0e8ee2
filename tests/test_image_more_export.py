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
