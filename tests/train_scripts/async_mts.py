"""Between-graph async training as TF 1.x tutorials write it (one process per task).

    python async_mts.py CLUSTER_JSON ps 0
    python async_mts.py CLUSTER_JSON worker I CHECKPOINT_DIR LAST_STEP [STEP_SLEEP_S]

The ps serves until SIGTERM (``server.join()``). Each worker trains a linear regression
with `MonitoredTrainingSession` (the chief, task 0, checkpoints every 10 steps) until
`StopAtStepHook(last_step)`, printing ``step <global step>`` after each run. Variables are
placed explicitly on /job:ps/task:0. The import line is the only nbdist-specific line.
"""

import json
import logging
import sys
import time

import numpy as np

import nbdist as tf

logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")

cluster = tf.train.ClusterSpec(json.loads(sys.argv[1]))
job, task = sys.argv[2], int(sys.argv[3])
server = tf.train.Server(cluster, job_name=job, task_index=task)
if job == "ps":
    print("ps ready", flush=True)
    server.join()
    print("ps joined", flush=True)
    sys.exit(0)

checkpoint_dir, last_step = sys.argv[4], int(sys.argv[5])
step_sleep_s = float(sys.argv[6]) if len(sys.argv) > 6 else 0.0
rng = np.random.default_rng(task)
true_w = np.arange(1.0, 11.0)
with tf.device("/job:ps/task:0"):
    w = tf.Variable(np.zeros(10), name="w")
    global_step = tf.train.get_or_create_global_step()
with tf.device(f"/job:worker/task:{task}"):
    x = tf.placeholder(tf.float64, [None, 10], name="x")
    y = tf.placeholder(tf.float64, [None], name="y")
    loss = tf.reduce_mean(tf.square(tf.reduce_sum(x * w, axis=1) - y))
    train_op = tf.train.GradientDescentOptimizer(0.05).minimize(loss, global_step=global_step)

hooks = [tf.train.StopAtStepHook(last_step=last_step)]
with tf.train.MonitoredTrainingSession(
    master=server.target,
    is_chief=(task == 0),
    checkpoint_dir=checkpoint_dir if task == 0 else None,
    hooks=hooks,
    save_checkpoint_steps=10,
    log_step_count_steps=0,
    max_wait_secs=60,
) as sess:
    while not sess.should_stop():
        xs = rng.normal(size=(32, 10))
        _, step = sess.run([train_op, global_step], {x: xs, y: xs @ true_w})
        print(f"step {step}", flush=True)
        if step_sleep_s:
            time.sleep(step_sleep_s)
print(f"done task={task}", flush=True)
