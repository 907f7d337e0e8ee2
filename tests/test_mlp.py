"""End to end: a TF 1.x-style MLP trained with Adam learns a non-linear 3-class problem."""

import time

import numpy as np
import pytest

import nbdist as tf


def _rings(n, seed):
    """Three concentric rings in 2-D (class = ring): not separable by a linear model."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, n)
    radius = labels * 1.5 + rng.uniform(0.0, 0.8, n)
    angle = rng.uniform(0.0, 2 * np.pi, n)
    x = np.stack([radius * np.cos(angle), radius * np.sin(angle)], axis=1).astype(np.float32)
    return x, np.eye(3, dtype=np.float32)[labels]


def _dense(x, n_in, n_out, name, rng, activation=None):
    with tf.name_scope(name):
        w = tf.Variable(rng.normal(0.0, np.sqrt(2.0 / n_in), (n_in, n_out)).astype(np.float32), name="w")
        b = tf.Variable(np.zeros(n_out, np.float32), name="b")
        z = tf.matmul(x, w) + b
        return activation(z) if activation else z


@pytest.fixture
def model():
    """Placeholders, logits, loss, accuracy and Adam's train op in a fresh graph."""
    rng = np.random.default_rng(7)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        y = tf.placeholder(tf.float32, [None, 3], name="y")
        h1 = _dense(x, 2, 32, "hidden1", rng, tf.nn.relu)
        h2 = _dense(h1, 32, 32, "hidden2", rng, tf.nn.relu)
        logits = _dense(h2, 32, 3, "logits", rng)
        loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=logits))
        correct = tf.equal(tf.argmax(logits, 1), tf.argmax(y, 1))
        accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))
        step = tf.train.get_or_create_global_step()
        train = tf.train.AdamOptimizer().minimize(loss, global_step=step)
        yield {"x": x, "y": y, "loss": loss, "accuracy": accuracy, "train": train, "step": step}


def test_mlp_trains_to_95_percent_accuracy_in_seconds(model):
    x_train, y_train = _rings(300, seed=0)
    x_test, y_test = _rings(300, seed=1)
    train_feed = {model["x"]: x_train, model["y"]: y_train}
    start = time.monotonic()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first_loss = sess.run(model["loss"], train_feed)
        for _ in range(400):
            sess.run(model["train"], train_feed)
        last_loss = sess.run(model["loss"], train_feed)
        accuracy = sess.run(model["accuracy"], {model["x"]: x_test, model["y"]: y_test})
        steps = tf.train.global_step(sess, model["step"])
    elapsed_s = time.monotonic() - start
    assert steps == 400
    assert last_loss < first_loss / 5, (first_loss, last_loss)
    assert accuracy >= 0.95, accuracy
    assert elapsed_s < 10.0, f"training took {elapsed_s:.1f}s"
