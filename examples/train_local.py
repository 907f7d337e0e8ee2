"""Train a small MLP with nbdist's local Session, printing progress per epoch.

A TF 1.x program, unchanged but for the import: build a graph (placeholders, variables,
a softmax classifier and an optimizer), then run training steps in a `tf.Session`.
The data are two interleaved spirals, generated here (seeded), so it runs offline.

    python examples/train_local.py --epochs 20
"""

import argparse
import sys
import time

import numpy as np

import nbdist as tf


def spirals(n_per_class, rng, noise=0.15):
    """Two interleaved 2-D spirals: features (2n, 2) float32, one-hot labels (2n, 2)."""
    t = np.sqrt(rng.uniform(0.05, 1.0, size=n_per_class)) * 3.0 * np.pi
    arm = np.stack([t * np.cos(t), t * np.sin(t)], axis=1) / (3.0 * np.pi)
    x = np.concatenate([arm, -arm]) + rng.normal(scale=noise / 3.0, size=(2 * n_per_class, 2))
    y = np.repeat(np.eye(2), n_per_class, axis=0)
    return x.astype(np.float32), y.astype(np.float32)


def build_model(hidden, learning_rate, seed):
    """The graph: returns the placeholders and the tensors/ops a training loop runs."""
    tf.set_random_seed(seed)
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    y = tf.placeholder(tf.float32, [None, 2], name="y")
    with tf.name_scope("hidden"):
        w1 = tf.Variable(tf.truncated_normal([2, hidden], stddev=1.0), name="weights")
        b1 = tf.Variable(tf.zeros([hidden]), name="biases")
        h = tf.nn.relu(tf.matmul(x, w1) + b1)
    with tf.name_scope("hidden2"):
        w2 = tf.Variable(tf.truncated_normal([hidden, hidden], stddev=hidden**-0.5), name="weights")
        b2 = tf.Variable(tf.zeros([hidden]), name="biases")
        h2 = tf.nn.relu(tf.matmul(h, w2) + b2)
    with tf.name_scope("softmax"):
        w3 = tf.Variable(tf.truncated_normal([hidden, 2], stddev=hidden**-0.5), name="weights")
        b3 = tf.Variable(tf.zeros([2]), name="biases")
        logits = tf.matmul(h2, w3) + b3
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=logits))
    correct = tf.equal(tf.argmax(logits, 1), tf.argmax(y, 1))
    accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))
    train_op = tf.train.AdamOptimizer(learning_rate).minimize(loss)
    return x, y, loss, accuracy, train_op


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument("--samples", type=int, default=500, help="points per spiral arm")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    rng = np.random.default_rng(args.seed)
    data_x, data_y = spirals(args.samples, rng)
    x, y, loss, accuracy, train_op = build_model(args.hidden, args.learning_rate, args.seed)
    n = len(data_x)
    print(f"nbdist {tf.__version__}: MLP 2-{args.hidden}-{args.hidden}-2 on {n} spiral points, local Session")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for epoch in range(1, args.epochs + 1):
            start = time.perf_counter()
            order = rng.permutation(n)
            for i in range(0, n, args.batch_size):
                batch = order[i : i + args.batch_size]
                sess.run(train_op, {x: data_x[batch], y: data_y[batch]})
            epoch_loss, epoch_acc = sess.run([loss, accuracy], {x: data_x, y: data_y})
            steps = -(-n // args.batch_size)
            print(
                f"epoch {epoch:3d}/{args.epochs}  loss {float(epoch_loss):.4f}  "
                f"accuracy {100 * float(epoch_acc):5.1f}%  "
                f"({steps} steps, {time.perf_counter() - start:.2f} s)",
                flush=True,
            )
    return float(epoch_acc)


if __name__ == "__main__":
    main(sys.argv[1:])
