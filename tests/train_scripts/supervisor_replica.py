"""A tutorial-style trainer with `tf.train.Supervisor` (TF 1.x's distributed MNIST example's shape).

One process per task; the ps tasks only serve (``server.join()``). Each worker builds a
two-layer classifier (`tf.nn.xw_plus_b`, ``log(clip_by_value(softmax))`` cross-entropy) under
`replica_device_setter(cluster=...)` and trains it on its own synthetic batches with Adam,
Adagrad or RMSProp; the global step is a float32 `get_variable`, as two of the tutorials make
it. ``--sync_replicas`` wraps the optimizer in `SyncReplicasOptimizer` and
wires it by hand as the example does: the chief runs `chief_init_op` as its local init op
and the others `local_step_init_op`, then the chief runs `get_init_tokens_op()` and starts
`get_chief_queue_runner()` through the Supervisor. Training stops once the global step
reaches ``--train_steps``; each worker then prints one JSON line (its first and last losses,
the global step, its streaming accuracy from `tf.metrics.accuracy`).

``--tf`` runs the same program on real TensorFlow; nothing else differs::

    python supervisor_replica.py --job_name=ps --task_index=0 --ps_hosts=localhost:2222 \
        --worker_hosts=localhost:2223,localhost:2224 [--sync_replicas] [--tf]
    python supervisor_replica.py --job_name=worker --task_index=0 ...   # and 1
"""

import json
import sys
import tempfile

import numpy as np

if "--tf" in sys.argv:
    sys.argv.remove("--tf")
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
else:
    import nbdist as tf

flags = tf.app.flags
flags.DEFINE_string("ps_hosts", "localhost:2222", "Comma-separated list of hostname:port pairs")
flags.DEFINE_string(
    "worker_hosts", "localhost:2223,localhost:2224", "Comma-separated list of hostname:port pairs"
)
flags.DEFINE_string("job_name", None, "job name: worker or ps")
flags.DEFINE_integer("task_index", None, "Worker task index; task 0 is the chief")
flags.DEFINE_boolean("sync_replicas", False, "Aggregate the workers' gradients before applying them")
flags.DEFINE_integer("replicas_to_aggregate", None, "For --sync_replicas (default: every worker)")
flags.DEFINE_string("optimizer", "adam", "adam, adagrad or rmsprop")
flags.DEFINE_integer("train_steps", 40, "Number of (global) training steps")
flags.DEFINE_integer("batch_size", 32, "Training batch size")
flags.DEFINE_integer("hidden_units", 16, "Units in the hidden layer")
flags.DEFINE_float("learning_rate", 0.05, "Learning rate")
FLAGS = flags.FLAGS

FEATURES, CLASSES = 10, 3
TRUE_W = np.random.RandomState(0).normal(size=(FEATURES, CLASSES)).astype(np.float32)


def batch(rng, n):
    """Synthetic data: the label is the argmax of a fixed linear map (learnable by the model)."""
    xs = rng.normal(size=(n, FEATURES)).astype(np.float32)
    return xs, np.eye(CLASSES, dtype=np.float32)[(xs @ TRUE_W).argmax(axis=1)]


def make_optimizer(name, learning_rate):
    if name == "adam":
        return tf.train.AdamOptimizer(learning_rate)
    if name == "adagrad":
        return tf.train.AdagradOptimizer(learning_rate * 4)
    return tf.train.RMSPropOptimizer(learning_rate / 5, momentum=0.5)


def train(sess, x, y_, train_step, accuracy_update, cross_entropy, global_step, accuracy):
    """Runs steps until the global step reaches --train_steps; returns this worker's report."""
    rng = np.random.RandomState(100 + FLAGS.task_index)
    losses, step = [], 0
    while step < FLAGS.train_steps:
        xs, ys = batch(rng, FLAGS.batch_size)
        _, _, loss, step = sess.run(
            [train_step, accuracy_update, cross_entropy, global_step], {x: xs, y_: ys}
        )
        losses.append(float(loss))
    return {
        "task_index": FLAGS.task_index,
        "local_steps": len(losses),
        "global_step": int(step),
        "first_loss": float(np.mean(losses[:3])),
        "last_loss": float(np.mean(losses[-3:])),
        "accuracy": float(sess.run(accuracy)),
    }


def main(_):
    ps_hosts, worker_hosts = FLAGS.ps_hosts.split(","), FLAGS.worker_hosts.split(",")
    cluster = tf.train.ClusterSpec({"ps": ps_hosts, "worker": worker_hosts})
    server = tf.train.Server(cluster, job_name=FLAGS.job_name, task_index=FLAGS.task_index)
    if FLAGS.job_name == "ps":
        server.join()
        return
    num_workers = len(worker_hosts)
    is_chief = FLAGS.task_index == 0
    tf.set_random_seed(1)

    worker_device = f"/job:worker/task:{FLAGS.task_index}/cpu:0"
    with tf.device(
        tf.train.replica_device_setter(
            worker_device=worker_device, ps_device="/job:ps/cpu:0", cluster=cluster
        )
    ):
        global_step = tf.get_variable(  # a float32 step, as two of the tutorials make it
            "global_step", [], initializer=tf.constant_initializer(0), trainable=False
        )
        with tf.name_scope("input"):
            x = tf.placeholder(tf.float32, [None, FEATURES], name="x")
            y_ = tf.placeholder(tf.float32, [None, CLASSES], name="labels")
        with tf.variable_scope("hidden"):
            hid_w = tf.Variable(tf.truncated_normal([FEATURES, FLAGS.hidden_units], stddev=0.3), name="w")
            hid_b = tf.Variable(tf.zeros([FLAGS.hidden_units]), name="b")
        with tf.variable_scope("softmax"):
            sm_w = tf.Variable(tf.truncated_normal([FLAGS.hidden_units, CLASSES], stddev=0.3), name="w")
            sm_b = tf.get_variable("b", shape=CLASSES, initializer=tf.zeros_initializer())
        hid = tf.nn.relu(tf.nn.xw_plus_b(x, hid_w, hid_b))
        y = tf.nn.softmax(tf.nn.xw_plus_b(hid, sm_w, sm_b))
        xent = tf.reduce_mean(
            -tf.reduce_sum(y_ * tf.log(tf.clip_by_value(y, 1e-10, 1.0)), reduction_indices=[1])
        )
        cross_entropy = xent + 1e-4 * tf.nn.l2_loss(hid_w)
        accuracy, accuracy_update = tf.metrics.accuracy(tf.argmax(y_, 1), tf.argmax(y, 1))

        opt = make_optimizer(FLAGS.optimizer, FLAGS.learning_rate)
        if FLAGS.sync_replicas:
            opt = tf.train.SyncReplicasOptimizer(
                opt,
                replicas_to_aggregate=FLAGS.replicas_to_aggregate or num_workers,
                total_num_replicas=num_workers,
                use_locking=True,
                name="sync_replicas",
            )
        train_step = opt.minimize(cross_entropy, global_step=global_step)

        local_init_op = tf.local_variables_initializer()
        ready_for_local_init_op = None
        if FLAGS.sync_replicas:
            local_init_op = tf.group(opt.chief_init_op if is_chief else opt.local_step_init_op, local_init_op)
            ready_for_local_init_op = opt.ready_for_local_init_op
            chief_queue_runner = opt.get_chief_queue_runner()
            sync_init_op = opt.get_init_tokens_op()
        init_op = tf.global_variables_initializer()

    sv = tf.train.Supervisor(
        is_chief=is_chief,
        logdir=tempfile.mkdtemp(),
        init_op=init_op,
        local_init_op=local_init_op,
        ready_for_local_init_op=ready_for_local_init_op,
        recovery_wait_secs=1,
        global_step=global_step,
        save_model_secs=0,
    )
    config = tf.ConfigProto(
        allow_soft_placement=True, device_filters=["/job:ps", f"/job:worker/task:{FLAGS.task_index}"]
    )
    target = server.target
    if FLAGS.sync_replicas:
        # As TF's mnist_replica.py: no `with`, no sv.stop(). Closing the session (or sv.stop()) while
        # the chief queue runner waits for gradients would raise its CancelledError, in TF too.
        sess = sv.prepare_or_wait_for_session(target, config=config)
        if is_chief:
            sess.run(sync_init_op)
            sv.start_queue_runners(sess, [chief_queue_runner])
        result = train(sess, x, y_, train_step, accuracy_update, cross_entropy, global_step, accuracy)
    else:  # the other tutorials' way: a `with` block, then sv.stop()
        with sv.prepare_or_wait_for_session(target, config=config) as sess:
            result = train(sess, x, y_, train_step, accuracy_update, cross_entropy, global_step, accuracy)
        sv.stop()
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    tf.app.run()
