"""Pattern: synchronous data-parallel training of the "Deep MNIST for experts" CNN.

Reproduces the program learners write when they make TF's `mnist_replica.py --sync_replicas`
train the convolutional model of the "Deep MNIST for experts" tutorial: the tutorial's
``weight_variable`` / ``bias_variable`` / ``conv2d`` / ``max_pool_2x2`` helpers (raw
`tf.nn.conv2d` and `tf.nn.max_pool`, `tf.truncated_normal` weights, `tf.nn.dropout` with a
``keep_prob`` placeholder), built under `tf.train.replica_device_setter`, its optimizer wrapped
in `tf.train.SyncReplicasOptimizer(replicas_to_aggregate=2)` whose
``make_session_run_hook(is_chief)`` goes with a `StopAtStepHook` into
`tf.train.MonitoredTrainingSession` - the session-creation shape of TF's distributed how-to.
Each worker trains on its own half of the data, then evaluates the trained model (still on
the ps) on a held-out set in a plain `tf.Session(server.target)`.

Synchronous steps average both workers' gradients, but which of a worker's batches lands in
which step is not fixed, so the check is the program's stated target - the chief's held-out
accuracy at least TARGET_ACCURACY - and nbdist's and real TF's final accuracies within 20%.
Synthetic MNIST-shaped images (seeded numpy; no download). The last stdout line is JSON.

    python sync_replicas_cnn.py --job_name=ps --task_index=0 \
        --ps_hosts=localhost:2222 --worker_hosts=localhost:2223,localhost:2224 [--tf]
    python sync_replicas_cnn.py --job_name=worker --task_index=0 ...   # and 1
"""

import json
import sys

import numpy as np

if "--tf" in sys.argv:
    sys.argv.remove("--tf")
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
else:
    import nbdist as tf

flags = tf.app.flags
flags.DEFINE_string("ps_hosts", "", "Comma-separated list of hostname:port pairs")
flags.DEFINE_string("worker_hosts", "", "Comma-separated list of hostname:port pairs")
flags.DEFINE_string("job_name", "", "One of 'ps', 'worker'")
flags.DEFINE_integer("task_index", 0, "Index of task within the job")
flags.DEFINE_integer("train_steps", 80, "Global step to stop at")
flags.DEFINE_integer("batch_size", 32, "Images per worker per step")
FLAGS = flags.FLAGS

TARGET_ACCURACY = 0.9


def mnist_shaped(n, rng):
    """n flattened 28x28 "digits": one of ten fixed random patterns each, plus noise; one-hot labels."""
    patterns = (np.random.RandomState(7).rand(10, 784) > 0.75).astype(np.float32)
    labels = rng.randint(0, 10, n)
    images = 0.5 * patterns[labels] + 0.5 * rng.rand(n, 784)
    return images.astype(np.float32), np.eye(10, dtype=np.float32)[labels]


def weight_variable(shape):
    return tf.Variable(tf.truncated_normal(shape, stddev=0.1))


def bias_variable(shape):
    return tf.Variable(tf.constant(0.1, shape=shape))


def conv2d(x, W):  # noqa: N803 - the tutorial's name for the filter
    return tf.nn.conv2d(x, W, strides=[1, 1, 1, 1], padding="SAME")


def max_pool_2x2(x):
    return tf.nn.max_pool(x, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")


def deepnn(x, keep_prob):
    x_image = tf.reshape(x, [-1, 28, 28, 1])
    W_conv1, b_conv1 = weight_variable([5, 5, 1, 8]), bias_variable([8])
    h_pool1 = max_pool_2x2(tf.nn.relu(conv2d(x_image, W_conv1) + b_conv1))
    W_conv2, b_conv2 = weight_variable([5, 5, 8, 16]), bias_variable([16])
    h_pool2 = max_pool_2x2(tf.nn.relu(conv2d(h_pool1, W_conv2) + b_conv2))
    W_fc1, b_fc1 = weight_variable([7 * 7 * 16, 128]), bias_variable([128])
    h_fc1 = tf.nn.relu(tf.matmul(tf.reshape(h_pool2, [-1, 7 * 7 * 16]), W_fc1) + b_fc1)
    h_fc1_drop = tf.nn.dropout(h_fc1, keep_prob)
    W_fc2, b_fc2 = weight_variable([128, 10]), bias_variable([10])
    return tf.matmul(h_fc1_drop, W_fc2) + b_fc2


def main(_):
    ps_hosts, worker_hosts = FLAGS.ps_hosts.split(","), FLAGS.worker_hosts.split(",")
    cluster = tf.train.ClusterSpec({"ps": ps_hosts, "worker": worker_hosts})
    server = tf.train.Server(cluster, job_name=FLAGS.job_name, task_index=FLAGS.task_index)
    if FLAGS.job_name == "ps":
        server.join()
        return
    is_chief = FLAGS.task_index == 0
    num_workers = len(worker_hosts)
    tf.set_random_seed(1)

    train_x, train_y = mnist_shaped(2000, np.random.RandomState(0))
    train_x, train_y = train_x[FLAGS.task_index :: num_workers], train_y[FLAGS.task_index :: num_workers]
    test_x, test_y = mnist_shaped(500, np.random.RandomState(1))

    with tf.device(
        tf.train.replica_device_setter(worker_device=f"/job:worker/task:{FLAGS.task_index}", cluster=cluster)
    ):
        x = tf.placeholder(tf.float32, [None, 784])
        y_ = tf.placeholder(tf.float32, [None, 10])
        keep_prob = tf.placeholder(tf.float32)
        y_conv = deepnn(x, keep_prob)
        cross_entropy = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y_, logits=y_conv))
        correct_prediction = tf.equal(tf.argmax(y_conv, 1), tf.argmax(y_, 1))
        accuracy = tf.reduce_mean(tf.cast(correct_prediction, tf.float32))

        global_step = tf.train.get_or_create_global_step()
        opt = tf.train.SyncReplicasOptimizer(
            tf.train.AdamOptimizer(2e-3),
            replicas_to_aggregate=num_workers,
            total_num_replicas=num_workers,
            name="mnist_sync_replicas",
        )
        train_step = opt.minimize(cross_entropy, global_step=global_step)

    hooks = [opt.make_session_run_hook(is_chief), tf.train.StopAtStepHook(last_step=FLAGS.train_steps)]
    config = tf.ConfigProto(device_filters=["/job:ps", f"/job:worker/task:{FLAGS.task_index}"])
    rng = np.random.RandomState(10 + FLAGS.task_index)
    losses, step = [], 0
    with tf.train.MonitoredTrainingSession(
        master=server.target,
        is_chief=is_chief,
        hooks=hooks,
        config=config,
        log_step_count_steps=0,
        stop_grace_period_secs=5,
    ) as sess:
        while not sess.should_stop():
            idx = rng.randint(0, len(train_x), FLAGS.batch_size)
            _, loss, step = sess.run(
                [train_step, cross_entropy, global_step], {x: train_x[idx], y_: train_y[idx], keep_prob: 0.5}
            )
            losses.append(float(loss))
    with tf.Session(server.target, config=config) as sess:  # the trained model, still on the ps
        test_accuracy, test_loss = sess.run(
            [accuracy, cross_entropy], {x: test_x, y_: test_y, keep_prob: 1.0}
        )
    print(f"worker {FLAGS.task_index}: {len(losses)} steps, test accuracy {test_accuracy:.3f}", flush=True)
    result = {
        "deterministic": False,
        "task_index": FLAGS.task_index,
        "local_steps": len(losses),
        "global_step": int(step),
        "first_loss": float(np.mean(losses[:3])),
        "last_loss": float(np.mean(losses[-3:])),
        "values": {"test_accuracy": float(test_accuracy), "test_loss": float(test_loss)},
        "target": {"test_accuracy": TARGET_ACCURACY},
    }
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    tf.app.run()
