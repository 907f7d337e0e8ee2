"""Between-graph synchronous training as TF 1.x tutorials write it (one process per task).

    python sync_mts.py CLUSTER_JSON ps 0 [--tf]
    python sync_mts.py CLUSTER_JSON worker I CHECKPOINT_DIR LAST_STEP [STEP_SLEEP_S [MAX_WAIT_SECS]] [--tf]

The ps serves until SIGTERM (``server.join()``). Each worker trains a linear regression with
`SyncReplicasOptimizer` (every worker's gradient in every step) and its session-run hook in a
`MonitoredTrainingSession` (the chief, task 0, checkpoints every 10 steps into
CHECKPOINT_DIR) until `StopAtStepHook(last_step)`, printing ``step <global step>`` after each
run and ``done task=I`` at the end; an `OpError` out of the session is printed as ``error
CLASS: MESSAGE`` (exit status 3). ``--tf`` runs the same program on real TensorFlow.
"""

import json
import logging
import sys
import time
import traceback

import numpy as np

if "--tf" in sys.argv:
    sys.argv.remove("--tf")
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
    tf.logging.set_verbosity(tf.logging.INFO)
else:
    import nbdist as tf

logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")

cluster = tf.train.ClusterSpec(json.loads(sys.argv[1]))
job, task = sys.argv[2], int(sys.argv[3])
config = tf.ConfigProto(device_filters=["/job:ps", f"/job:worker/task:{task}"])
server = tf.train.Server(cluster, job_name=job, task_index=task, config=config)
if job == "ps":
    print("ps ready", flush=True)
    server.join()
    sys.exit(0)

checkpoint_dir, last_step = sys.argv[4], int(sys.argv[5])
step_sleep_s = float(sys.argv[6]) if len(sys.argv) > 6 else 0.0
max_wait_secs = float(sys.argv[7]) if len(sys.argv) > 7 else 60.0
workers = cluster.num_tasks("worker")
rng = np.random.default_rng(task)
true_w = np.arange(1.0, 11.0)
with tf.device(tf.train.replica_device_setter(worker_device=f"/job:worker/task:{task}", cluster=cluster)):
    global_step = tf.train.get_or_create_global_step()
    x = tf.placeholder(tf.float64, [None, 10], name="x")
    y = tf.placeholder(tf.float64, [None], name="y")
    w = tf.get_variable("w", [10], tf.float64, initializer=tf.zeros_initializer())
    loss = tf.reduce_mean(tf.square(tf.reduce_sum(x * w, axis=1) - y))
    opt = tf.train.SyncReplicasOptimizer(
        tf.train.GradientDescentOptimizer(0.05), replicas_to_aggregate=workers, total_num_replicas=workers
    )
    train_op = opt.minimize(loss, global_step=global_step)

hooks = [tf.train.StopAtStepHook(last_step=last_step), opt.make_session_run_hook(task == 0)]
try:
    with tf.train.MonitoredTrainingSession(
        master=server.target,
        is_chief=(task == 0),
        checkpoint_dir=checkpoint_dir if task == 0 else None,
        hooks=hooks,
        config=config,
        save_checkpoint_steps=10,
        save_checkpoint_secs=None,
        log_step_count_steps=0,
        stop_grace_period_secs=5,
        max_wait_secs=max_wait_secs,
    ) as sess:
        while not sess.should_stop():
            xs = rng.normal(size=(16, 10))
            _, step = sess.run([train_op, global_step], {x: xs, y: xs @ true_w})
            print(f"step {step}", flush=True)
            if step_sleep_s:
                time.sleep(step_sleep_s)
except tf.errors.OpError as e:
    traceback.print_exc()
    print(f"error {type(e).__name__}: {e.message}", flush=True)
    sys.exit(3)
print(f"done task={task}", flush=True)
