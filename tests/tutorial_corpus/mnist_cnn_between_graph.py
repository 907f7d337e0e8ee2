"""Pattern: the distributed MNIST CNN - TF's `mnist_replica.py` shape with the layers tutorial's model.

Reproduces the program learners write when they take the `tf.layers` CNN of the "layers"
tutorial (conv 5x5 -> max-pool -> conv 5x5 -> max-pool -> dense -> dropout -> logits) across a
cluster the way TF's `mnist_replica.py` and the distributed how-to do it: `tf.app.flags` for
``--ps_hosts``, ``--worker_hosts``, ``--job_name``, ``--task_index``; a `tf.train.Server` per
process, the ps only joining; the model built under `tf.train.replica_device_setter`; a
staircase `tf.train.exponential_decay` learning rate driving `MomentumOptimizer`; a
`tf.train.Supervisor` (chief initializes, the other worker waits) and
``sv.managed_session(server.target)``; a `placeholder_with_default` switching dropout off for
the evaluation each worker runs on a held-out set at the end.

Between-graph asynchronous training is not deterministic (the workers' updates interleave),
so the check is the program's stated target - the chief's held-out accuracy at least
TARGET_ACCURACY - and nbdist's and real TF's final accuracies within 20% of each other.
Synthetic MNIST-shaped images (seeded numpy; no download). The last stdout line is JSON.

    python mnist_cnn_between_graph.py --job_name=ps --task_index=0 \
        --ps_hosts=localhost:2222 --worker_hosts=localhost:2223,localhost:2224 [--tf]
    python mnist_cnn_between_graph.py --job_name=worker --task_index=0 ...   # and 1
"""

import json
import os
import sys
import tempfile

import numpy as np

if "--tf" in sys.argv:
    sys.argv.remove("--tf")
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # tf.compat.v1.layers needs Keras 2 (TF >= 2.16)
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
else:
    import nbdist as tf

flags = tf.app.flags
flags.DEFINE_string("ps_hosts", "", "Comma-separated list of hostname:port pairs")
flags.DEFINE_string("worker_hosts", "", "Comma-separated list of hostname:port pairs")
flags.DEFINE_string("job_name", "", "One of 'ps', 'worker'")
flags.DEFINE_integer("task_index", 0, "Index of task within the job")
flags.DEFINE_integer("train_steps", 200, "Global step to stop at")
flags.DEFINE_integer("batch_size", 32, "Images per step")
flags.DEFINE_float("learning_rate", 0.02, "Initial learning rate")
FLAGS = flags.FLAGS

TARGET_ACCURACY = 0.9


def mnist_shaped(n, rng):
    """n 28x28x1 "digits": one of ten fixed random patterns each, plus noise; int labels."""
    patterns = (np.random.RandomState(7).rand(10, 28, 28, 1) > 0.75).astype(np.float32)
    labels = rng.randint(0, 10, n)
    images = 0.5 * patterns[labels] + 0.5 * rng.rand(n, 28, 28, 1)
    return images.astype(np.float32), labels.astype(np.int64)


def cnn(images, is_training):
    net = tf.layers.conv2d(images, 8, [5, 5], padding="same", activation=tf.nn.relu, name="conv1")
    net = tf.layers.max_pooling2d(net, pool_size=[2, 2], strides=2, name="pool1")
    net = tf.layers.conv2d(net, 16, [5, 5], padding="same", activation=tf.nn.relu, name="conv2")
    net = tf.layers.max_pooling2d(net, pool_size=[2, 2], strides=2, name="pool2")
    net = tf.reshape(net, [-1, 7 * 7 * 16])
    net = tf.layers.dense(net, 64, activation=tf.nn.relu, name="dense")
    net = tf.layers.dropout(net, rate=0.3, training=is_training)
    return tf.layers.dense(net, 10, name="logits")


def main(_):
    ps_hosts, worker_hosts = FLAGS.ps_hosts.split(","), FLAGS.worker_hosts.split(",")
    cluster = tf.train.ClusterSpec({"ps": ps_hosts, "worker": worker_hosts})
    server = tf.train.Server(cluster, job_name=FLAGS.job_name, task_index=FLAGS.task_index)
    if FLAGS.job_name == "ps":
        server.join()
        return
    is_chief = FLAGS.task_index == 0
    tf.set_random_seed(FLAGS.task_index)

    train_x, train_y = mnist_shaped(2000, np.random.RandomState(0))
    train_x, train_y = train_x[FLAGS.task_index :: 2], train_y[FLAGS.task_index :: 2]  # this worker's half
    test_x, test_y = mnist_shaped(500, np.random.RandomState(1))

    with tf.device(
        tf.train.replica_device_setter(worker_device=f"/job:worker/task:{FLAGS.task_index}", cluster=cluster)
    ):
        images = tf.placeholder(tf.float32, [None, 28, 28, 1], name="images")
        labels = tf.placeholder(tf.int64, [None], name="labels")
        is_training = tf.placeholder_with_default(False, [], name="is_training")
        logits = cnn(images, is_training)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        correct = tf.equal(tf.argmax(logits, 1), labels)
        accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))

        global_step = tf.train.get_or_create_global_step()
        learning_rate = tf.train.exponential_decay(
            FLAGS.learning_rate, global_step, decay_steps=50, decay_rate=0.8, staircase=True
        )
        train_op = tf.train.MomentumOptimizer(learning_rate, 0.9).minimize(loss, global_step=global_step)

    sv = tf.train.Supervisor(
        is_chief=is_chief,
        logdir=tempfile.mkdtemp(),
        init_op=tf.global_variables_initializer(),
        recovery_wait_secs=1,
        global_step=global_step,
        save_model_secs=0,
        save_summaries_secs=0,
    )
    config = tf.ConfigProto(device_filters=["/job:ps", f"/job:worker/task:{FLAGS.task_index}"])
    rng = np.random.RandomState(10 + FLAGS.task_index)
    losses, rates, step = [], [], 0
    with sv.managed_session(server.target, config=config) as sess:
        while not sv.should_stop() and step < FLAGS.train_steps:
            idx = rng.randint(0, len(train_x), FLAGS.batch_size)
            feed = {images: train_x[idx], labels: train_y[idx], is_training: True}
            _, batch_loss, step, rate = sess.run([train_op, loss, global_step, learning_rate], feed)
            losses.append(float(batch_loss))
            rates.append(float(rate))
        test_accuracy, test_loss = sess.run([accuracy, loss], {images: test_x, labels: test_y})
    sv.stop()
    print(f"worker {FLAGS.task_index}: {len(losses)} steps, test accuracy {test_accuracy:.3f}", flush=True)
    result = {
        "deterministic": False,
        "task_index": FLAGS.task_index,
        "local_steps": len(losses),
        "global_step": int(step),
        "first_loss": float(np.mean(losses[:3])),
        "last_loss": float(np.mean(losses[-3:])),
        "learning_rates": sorted(set(rates)),
        "values": {"test_accuracy": float(test_accuracy), "test_loss": float(test_loss)},
        "target": {"test_accuracy": TARGET_ACCURACY},
    }
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    tf.app.run()
