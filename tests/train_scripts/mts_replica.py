"""A tutorial-style trainer with `tf.train.MonitoredTrainingSession` (TF's distributed how-to's shape).

One process per task; the ps tasks only serve (``server.join()``). Each worker reads its
batches as CSV lines fed through a string placeholder and parsed in the graph with
`tf.decode_csv`, and fits a linear regression (`tf.nn.xw_plus_b`) under
`replica_device_setter(cluster=...)`: `compute_gradients`, `clip_by_global_norm`, then
`apply_gradients` with Adagrad (or Adam / RMSProp). The global step is an int32 variable;
a local step counter lives on the worker (collection `LOCAL_VARIABLES`), initialized with
the streaming `tf.metrics.mean` of the loss by the scaffold's `local_init_op`.
``--sync_replicas`` wraps the optimizer in `SyncReplicasOptimizer` and adds its
session-run hook. `StopAtStepHook(last_step=--train_steps)` ends training; the chief
checkpoints into ``--checkpoint_dir``. Each worker prints one JSON line at the end.

``--tf`` runs the same program on real TensorFlow; nothing else differs::

    python mts_replica.py --job_name=ps --task_index=0 --ps_hosts=localhost:2222 \
        --worker_hosts=localhost:2223,localhost:2224 --checkpoint_dir=/tmp/ckpt [--sync_replicas] [--tf]
    python mts_replica.py --job_name=worker --task_index=0 ...   # and 1
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
flags.DEFINE_boolean("sync_replicas", False, "Aggregate the workers' gradients before applying them")
flags.DEFINE_string("optimizer", "adagrad", "adagrad, adam or rmsprop")
flags.DEFINE_integer("train_steps", 40, "Global step to stop at")
flags.DEFINE_string("checkpoint_dir", None, "Where the chief saves checkpoints")
flags.DEFINE_integer("batch_size", 32, "Lines per batch")
FLAGS = flags.FLAGS

FEATURES = 4
TRUE_W = np.array([[2.0], [-1.0], [0.5], [3.0]], np.float32)


def csv_batch(rng, n):
    """n CSV lines ``x0,x1,x2,x3,y`` with ``y = x . TRUE_W + 1`` (the data a course would give)."""
    xs = rng.normal(size=(n, FEATURES)).astype(np.float32)
    ys = xs @ TRUE_W + 1.0
    return [",".join(f"{v:.5f}" for v in row) for row in np.hstack([xs, ys])]


def make_optimizer(name):
    if name == "adam":
        return tf.train.AdamOptimizer(0.1)
    if name == "rmsprop":
        return tf.train.RMSPropOptimizer(0.02)
    return tf.train.AdagradOptimizer(0.5)


def main(_):
    ps_hosts, worker_hosts = FLAGS.ps_hosts.split(","), FLAGS.worker_hosts.split(",")
    cluster = tf.train.ClusterSpec({"ps": ps_hosts, "worker": worker_hosts})
    config = tf.ConfigProto(device_filters=["/job:ps", f"/job:worker/task:{FLAGS.task_index}"])
    server = tf.train.Server(cluster, job_name=FLAGS.job_name, task_index=FLAGS.task_index, config=config)
    if FLAGS.job_name == "ps":
        server.join()
        return
    is_chief = FLAGS.task_index == 0

    with tf.device(f"/job:worker/task:{FLAGS.task_index}"):
        local_step = tf.Variable(
            0, trainable=False, name="local_step", collections=[tf.GraphKeys.LOCAL_VARIABLES]
        )
    with tf.device(
        tf.train.replica_device_setter(worker_device=f"/job:worker/task:{FLAGS.task_index}", cluster=cluster)
    ):
        global_step = tf.Variable(0, dtype=tf.int32, trainable=False, name="global_step")
        lines = tf.placeholder(tf.string, [None], name="lines")
        columns = tf.decode_csv(lines, [[0.0]] * FEATURES + [[0.0]])
        x = tf.stack(columns[:FEATURES], axis=1)
        y = tf.expand_dims(columns[-1], 1)
        w = tf.get_variable("w", [FEATURES, 1], initializer=tf.zeros_initializer())
        b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
        loss = tf.reduce_mean(tf.square(tf.nn.xw_plus_b(x, w, b) - y))
        mean_loss, mean_loss_update = tf.metrics.mean(loss)

        opt = make_optimizer(FLAGS.optimizer)
        if FLAGS.sync_replicas:
            opt = tf.train.SyncReplicasOptimizer(
                opt, replicas_to_aggregate=len(worker_hosts), total_num_replicas=len(worker_hosts)
            )
        grads_and_vars = opt.compute_gradients(loss)
        grads, variables = zip(*grads_and_vars)
        clipped, grad_norm = tf.clip_by_global_norm(grads, 20.0)
        grad_l1 = tf.reduce_sum([tf.reduce_sum(tf.abs(g)) for g in clipped])
        train_op = opt.apply_gradients(list(zip(clipped, variables)), global_step=global_step)
        with tf.control_dependencies([train_op, mean_loss_update]):
            count_step = tf.assign_add(local_step, 1)
        fetches = [count_step, loss, global_step, grad_norm, grad_l1, w[0, 0], mean_loss]

    hooks = [tf.train.StopAtStepHook(last_step=FLAGS.train_steps)]
    if FLAGS.sync_replicas:
        hooks.append(opt.make_session_run_hook(is_chief))
    scaffold = tf.train.Scaffold(local_init_op=tf.group(tf.local_variables_initializer(), name="local_init"))
    sess = tf.train.MonitoredTrainingSession(
        master=server.target,
        is_chief=is_chief,
        checkpoint_dir=FLAGS.checkpoint_dir if is_chief else None,
        scaffold=scaffold,
        hooks=hooks,
        config=config,
        save_checkpoint_secs=None,
        save_checkpoint_steps=20,
        log_step_count_steps=0,
        stop_grace_period_secs=5,
        max_wait_secs=60,
    )
    rng = np.random.RandomState(100 + FLAGS.task_index)
    losses, norms, step = [], [], 0
    while not sess.should_stop():
        _, batch_loss, step, norm, _, _, _ = sess.run(fetches, {lines: csv_batch(rng, FLAGS.batch_size)})
        losses.append(float(batch_loss))
        norms.append(float(norm))
    sess.close()
    print(
        json.dumps(
            {
                "task_index": FLAGS.task_index,
                "local_steps": len(losses),
                "global_step": int(step) + 1 if losses else 0,
                "first_loss": float(np.mean(losses[:3])) if losses else None,
                "last_loss": float(np.mean(losses[-3:])) if losses else None,
                "max_grad_norm": max(norms) if norms else None,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    tf.app.run()
