"""Pattern: the MNIST MLP tutorials' epoch loop with `tf.losses` and streaming `tf.metrics`.

Reproduces how learners write a classifier once they move past hand-written cross-entropy: two
`tf.layers.dense` hidden layers with an L2 `kernel_regularizer`, the loss from
`tf.losses.sparse_softmax_cross_entropy` plus `tf.losses.get_regularization_loss()` (read back
with `tf.losses.get_total_loss()`), Adam, shuffled mini-batches for each epoch, and after each
epoch an evaluation pass over the held-out set with `tf.metrics.accuracy` and `tf.metrics.mean`
whose counters are reset first with `sess.run(tf.local_variables_initializer())` - the
"reset the metrics every epoch" recipe of the Q&A threads. One process, one `tf.Session`.

The data are synthetic and MNIST-shaped (784 pixels, ten classes; seeded numpy, no download);
the kernels start from seeded numpy arrays, so the run is deterministic and its numbers are
compared with real TensorFlow's to rtol 1e-4. The last stdout line is JSON.

    python mlp_losses_metrics.py [--tf]
"""

import json
import os
import sys

import numpy as np

if "--tf" in sys.argv:
    sys.argv.remove("--tf")
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # tf.compat.v1.layers needs Keras 2 (TF >= 2.16)
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
else:
    import nbdist as tf

EPOCHS = 4
BATCH_SIZE = 100
HIDDEN = 64
L2 = 1e-4


def mnist_shaped(n, rng):
    """n flattened 28x28 "digits": one of ten fixed random patterns each, plus noise."""
    patterns = (np.random.RandomState(7).rand(10, 784) > 0.75).astype(np.float32)
    labels = rng.randint(0, 10, n)
    images = 0.2 * patterns[labels] + rng.rand(n, 784)
    return images.astype(np.float32), labels.astype(np.int64)


def init(shape, seed):
    """A kernel's starting value from a seeded numpy generator (the same in both runs)."""
    fan_in = shape[0]
    return tf.constant_initializer(np.random.RandomState(seed).normal(0, 1 / np.sqrt(fan_in), shape))


train_x, train_y = mnist_shaped(2000, np.random.RandomState(0))
test_x, test_y = mnist_shaped(500, np.random.RandomState(1))

x = tf.placeholder(tf.float32, [None, 784], name="x")
y = tf.placeholder(tf.int64, [None], name="y")
regularizer = lambda w: L2 * tf.nn.l2_loss(w)  # noqa: E731 - as the tutorials pass it
h1 = tf.layers.dense(
    x,
    HIDDEN,
    tf.nn.relu,
    kernel_initializer=init([784, HIDDEN], 1),
    kernel_regularizer=regularizer,
    name="h1",
)
h2 = tf.layers.dense(
    h1,
    HIDDEN,
    tf.nn.relu,
    kernel_initializer=init([HIDDEN, HIDDEN], 2),
    kernel_regularizer=regularizer,
    name="h2",
)
logits = tf.layers.dense(h2, 10, kernel_initializer=init([HIDDEN, 10], 3), name="logits")

xent = tf.losses.sparse_softmax_cross_entropy(labels=y, logits=logits)
reg = tf.losses.get_regularization_loss()
tf.losses.add_loss(reg)
total_loss = tf.losses.get_total_loss(add_regularization_losses=False)
train_op = tf.train.AdamOptimizer(1e-3).minimize(total_loss)

with tf.name_scope("eval"):
    predictions = tf.argmax(logits, 1)
    accuracy, accuracy_update = tf.metrics.accuracy(labels=y, predictions=predictions)
    mean_xent, mean_xent_update = tf.metrics.mean(xent)

history = {"train_loss": [], "eval_accuracy": [], "eval_loss": []}
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    order = np.random.RandomState(2)
    for epoch in range(EPOCHS):
        perm = order.permutation(len(train_x))
        losses = []
        for start in range(0, len(perm), BATCH_SIZE):
            idx = perm[start : start + BATCH_SIZE]
            _, batch_loss = sess.run([train_op, total_loss], {x: train_x[idx], y: train_y[idx]})
            losses.append(batch_loss)
        sess.run(tf.local_variables_initializer())  # reset the streaming metrics
        for start in range(0, len(test_x), BATCH_SIZE):
            feed = {x: test_x[start : start + BATCH_SIZE], y: test_y[start : start + BATCH_SIZE]}
            sess.run([accuracy_update, mean_xent_update], feed)
        acc, eval_loss = sess.run([accuracy, mean_xent])
        print(
            f"epoch {epoch}: train loss {np.mean(losses):.4f}  eval accuracy {acc:.3f}  eval loss {eval_loss:.4f}"
        )
        history["train_loss"].append(float(np.mean(losses)))
        history["eval_accuracy"].append(float(acc))
        history["eval_loss"].append(float(eval_loss))
    names = sorted(v.op.name for v in tf.local_variables())

print(json.dumps({"deterministic": True, "values": history, "local_variables": names}))
