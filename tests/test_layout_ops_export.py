"""The array layout ops of issue 32 (tile_ops, array_extra_ops, space_batch_ops, patches_ops)
export to real TensorFlow (`nbdist.export.to_tensorflow`): TensorFlow knows every op type and
its attrs, and runs the exported graph, gradients included, to nbdist's values."""

import numpy as np

import nbdist as tf
import nbdist.export

X = np.arange(24.0).reshape(2, 3, 4)
VOLUME = np.arange(64.0).reshape(2, 4, 4, 2, 1)


def _outputs(x):
    image = x[..., None]
    loss = (
        tf.reduce_sum(tf.tile(x, [2, 1, 1]) ** 2)
        + tf.reduce_sum(tf.space_to_batch_nd(x, [2], [[1, 0]]) ** 2)
        + tf.reduce_sum(
            tf.extract_image_patches(image, [1, 2, 2, 1], [1, 1, 1, 1], [1, 1, 1, 1], "SAME") ** 2
        )
        + tf.reduce_sum(tf.roll(x, 1, 0) * tf.reverse_sequence(x, [2, 3], 1))
        + tf.reduce_sum(tf.broadcast_to(x[:, :1], [2, 3, 4]) * tf.identity_n([x])[0])
    )
    return {
        "tile": tf.tile(x, [1, 2, 1]),
        "broadcast_to": tf.broadcast_to(x[:, :1], [2, 3, 4]),
        "broadcast_dynamic_shape": tf.broadcast_dynamic_shape(tf.shape(x), [5, 1, 1, 1]),
        "roll": tf.roll(x, [1], [2]),
        "reverse_sequence": tf.reverse_sequence(x, [2, 3], 1),
        "space_to_batch_nd": tf.space_to_batch_nd(x, [2], [[1, 0]]),
        "batch_to_space_nd": tf.batch_to_space_nd(x, [2], [[0, 1]]),
        "ensure_shape": tf.ensure_shape(x, [2, None, 4]),
        "bitcast": tf.bitcast(x, tf.int32),
        "unravel_index": tf.unravel_index([3, 5], [2, 4]),
        "parallel_stack": tf.parallel_stack([x[0], x[1]]),
        "identity_n": tf.identity_n([x, x])[1],
        "shape_n": tf.shape_n([x, x])[0],
        "guarantee_const": tf.guarantee_const(x),
        "sequence_mask": tf.sequence_mask([1, 3]),
        "linspace": tf.linspace(0.0, 1.0, 4),
        "repeat": tf.repeat(x, [1, 2], axis=0),
        "meshgrid": tf.meshgrid([1, 2], [3])[0],
        "saturate_cast": tf.saturate_cast(x * 20, tf.uint8),
        "extract_volume_patches": tf.extract_volume_patches(
            tf.constant(VOLUME), [1, 2, 2, 1, 1], [1, 1, 1, 1, 1], "VALID"
        ),
        "space_to_depth": tf.space_to_depth(tf.reshape(x, [2, 2, 2, 3]), 2),
        "depth_to_space": tf.depth_to_space(tf.reshape(x, [2, 1, 3, 4]), 2),
        "gradient": tf.gradients(loss, x)[0],
    }


def test_the_layout_ops_run_in_tensorflow_after_export(tf1):
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float64, [2, 3, 4], name="x")
        outputs = _outputs(x)
        with tf.Session() as sess:
            ours = sess.run(outputs, {x: X})
    exported = nbdist.export.to_tensorflow(graph)
    with tf1.Session(graph=exported.graph) as sess:
        theirs = sess.run({k: exported[t.name] for k, t in outputs.items()}, {exported["x:0"]: X})
    for name, value in ours.items():
        np.testing.assert_array_equal(value, theirs[name], err_msg=name)
