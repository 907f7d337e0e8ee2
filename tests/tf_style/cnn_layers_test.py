"""Pattern: a learner's `tf.test.TestCase` for a model's layers, in the style of TF's own
`layers/convolutional_test.py` and `core_test.py`.

Checks a small `tf.layers` CNN (conv -> batch norm -> max-pool -> dropout -> dense) the way
such test files do: each layer's static output shape, the variables' names, shapes and
collections (`kernel` / `bias`, batch norm's `gamma`, `beta` and non-trainable moving averages,
`kernel_regularizer` losses in `REGULARIZATION_LOSSES`), the moving-average updates in
`UPDATE_OPS`, that ``reuse=True`` builds no new variables, and that a few training steps lower
the loss on a fixed batch.

Run as TF's own tests are run: ``python cnn_layers_test.py``. Under nbdist by default;
``NBDIST_AS_TF=tensorflow python cnn_layers_test.py`` (or ``--tf``) runs the very same file
under real TensorFlow (tests/test_tf_style.py runs both).
"""

import os
import sys

import numpy as np

if os.environ.get("NBDIST_AS_TF") == "tensorflow" or "--tf" in sys.argv:
    if "--tf" in sys.argv:
        sys.argv.remove("--tf")
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # tf.compat.v1.layers needs Keras 2 (TF >= 2.16)
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
else:
    import nbdist as tf


def small_cnn(images, training, reuse=None):
    with tf.variable_scope("cnn", reuse=reuse):
        net = tf.layers.conv2d(
            images,
            filters=4,
            kernel_size=3,
            padding="same",
            kernel_regularizer=lambda w: 1e-3 * tf.nn.l2_loss(w),
            name="conv1",
        )
        net = tf.layers.batch_normalization(net, training=training, name="bn1")
        net = tf.nn.relu(net)
        net = tf.layers.max_pooling2d(net, pool_size=2, strides=2, name="pool1")
        net = tf.layers.dropout(net, rate=0.5, training=training)
        net = tf.layers.flatten(net)
        return tf.layers.dense(net, 3, name="logits")


class CnnLayersTest(tf.test.TestCase):
    def testOutputShapes(self):
        images = tf.placeholder(tf.float32, [None, 8, 8, 1])
        conv = tf.layers.conv2d(images, 4, 3, padding="same")
        valid = tf.layers.conv2d(images, 4, 3, strides=2, padding="valid")
        pool = tf.layers.max_pooling2d(conv, 2, 2)
        flat = tf.layers.flatten(pool)
        logits = small_cnn(images, training=False)
        self.assertEqual(conv.get_shape().as_list(), [None, 8, 8, 4])
        self.assertEqual(valid.get_shape().as_list(), [None, 3, 3, 4])
        self.assertEqual(pool.get_shape().as_list(), [None, 4, 4, 4])
        self.assertEqual(flat.get_shape().as_list(), [None, 64])
        self.assertEqual(logits.get_shape().as_list(), [None, 3])

    def testVariableNamesShapesAndCollections(self):
        small_cnn(tf.placeholder(tf.float32, [None, 8, 8, 1]), training=True)
        trainable = {v.op.name: v.get_shape().as_list() for v in tf.trainable_variables()}
        self.assertEqual(
            trainable,
            {
                "cnn/conv1/kernel": [3, 3, 1, 4],
                "cnn/conv1/bias": [4],
                "cnn/bn1/gamma": [4],
                "cnn/bn1/beta": [4],
                "cnn/logits/kernel": [64, 3],
                "cnn/logits/bias": [3],
            },
        )
        non_trainable = sorted(v.op.name for v in tf.global_variables() if v.op.name not in trainable)
        self.assertEqual(non_trainable, ["cnn/bn1/moving_mean", "cnn/bn1/moving_variance"])
        # (assertEqual(len(...)): nbdist's tf.test.TestCase has no absltest assertLen yet)
        self.assertEqual(len(tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)), 1)
        self.assertEqual(len(tf.get_collection(tf.GraphKeys.UPDATE_OPS)), 2)

    def testReuseBuildsNoNewVariables(self):
        images = tf.placeholder(tf.float32, [None, 8, 8, 1])
        small_cnn(images, training=True)
        count = len(tf.global_variables())
        small_cnn(images, training=False, reuse=True)
        self.assertEqual(len(tf.global_variables()), count)

    def testTrainingStepsLowerTheLoss(self):
        rng = np.random.RandomState(0)
        x = rng.rand(16, 8, 8, 1).astype(np.float32)
        y = rng.randint(0, 3, 16)
        tf.set_random_seed(1)
        images = tf.placeholder(tf.float32, [None, 8, 8, 1])
        labels = tf.placeholder(tf.int64, [None])
        logits = small_cnn(images, training=True)
        loss = tf.losses.sparse_softmax_cross_entropy(labels, logits) + tf.losses.get_regularization_loss()
        with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
            train_op = tf.train.AdamOptimizer(0.01).minimize(loss)
        moving_mean = next(v for v in tf.global_variables() if v.op.name == "cnn/bn1/moving_mean")
        with self.cached_session() as sess:
            sess.run(tf.global_variables_initializer())
            feed = {images: x, labels: y}
            before = sess.run(loss, feed)
            for _ in range(20):
                sess.run(train_op, feed)
            after = sess.run(loss, feed)
            self.assertLess(after, 0.7 * before)
            self.assertGreater(np.abs(sess.run(moving_mean)).sum(), 0.0)  # the updates ran


if __name__ == "__main__":
    tf.test.main()
