"""One worker's training loop, as its own client process, for the fault tests and benchmark.

    python fault_worker.py CLUSTER_JSON TASK_INDEX MODE [--replicas R] [--stop_file F]
                           [--local_steps N] [--step_sleep_s S]

Connects to the worker's server, already running (a `LocalCluster` or `python -m
nbdist.server`), at ``grpc://`` its address; the cluster key comes from
``$NBDIST_CLUSTER_KEY``. MODE ``async``: a plain `tf.Session`, the chief (task 0)
initializes, the others wait until the model is ready. MODE ``sync``:
`SyncReplicasOptimizer` (``--replicas`` gradients per step over every worker) in a
`MonitoredTrainingSession`. Prints ``ready`` once training starts, then ``step G`` (the
global step read by that run) after every run, until ``--stop_file`` exists or
``--local_steps`` runs are done; then ``done LOCAL_STEPS``. An `OpError` is printed as
``error CLASS: MESSAGE`` and the process exits with status 3.
"""

import argparse
import json
import logging
import os
import sys
import time

import numpy as np

import nbdist as tf

logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("cluster")
    p.add_argument("task_index", type=int)
    p.add_argument("mode", choices=["async", "sync"])
    p.add_argument("--replicas", type=int, default=None)
    p.add_argument("--stop_file", default=None)
    p.add_argument("--local_steps", type=int, default=None)
    p.add_argument("--step_sleep_s", type=float, default=0.0)
    p.add_argument("--max_wait_secs", type=float, default=60.0)
    return p.parse_args()


def build(args, cluster):
    workers = cluster.num_tasks("worker")
    with tf.device(
        tf.train.replica_device_setter(worker_device=f"/job:worker/task:{args.task_index}", cluster=cluster)
    ):
        global_step = tf.train.get_or_create_global_step()
        x = tf.placeholder(tf.float64, [None, 10], name="x")
        y = tf.placeholder(tf.float64, [None], name="y")
        w = tf.get_variable("w", [10], tf.float64, initializer=tf.zeros_initializer())
        loss = tf.reduce_mean(tf.square(tf.reduce_sum(x * w, axis=1) - y))
        opt = tf.train.GradientDescentOptimizer(0.05)
        if args.mode == "sync":
            opt = tf.train.SyncReplicasOptimizer(
                opt, replicas_to_aggregate=args.replicas or workers, total_num_replicas=workers
            )
        train_op = opt.minimize(loss, global_step=global_step)
    return opt, x, y, train_op, global_step


def should_stop(args, local_steps):
    if args.local_steps is not None and local_steps >= args.local_steps:
        return True
    return args.stop_file is not None and os.path.exists(args.stop_file)


def train(sess, args, x, y, train_op, global_step, done):
    """Trains until told to stop; counts runs in ``done[0]`` (a monitored session may end the
    `with` block from inside a run: a clean stop when the chief closes the token queue)."""
    rng = np.random.default_rng(args.task_index)
    true_w = np.arange(1.0, 11.0)
    print("ready", flush=True)
    while not should_stop(args, done[0]) and not getattr(sess, "should_stop", lambda: False)():
        xs = rng.normal(size=(16, 10))
        try:
            _, step = sess.run([train_op, global_step], {x: xs, y: xs @ true_w})
        except tf.errors.OpError as e:
            if hasattr(sess, "should_stop"):  # a monitored session: its `with` decides (a clean stop?)
                raise
            # A plain session's error is said at once: closing a session whose master died takes a while.
            print(f"error {type(e).__name__}: {e.message}", flush=True)
            raise SystemExit(3) from None
        done[0] += 1
        print(f"step {step}", flush=True)
        if args.step_sleep_s:
            time.sleep(args.step_sleep_s)


def main():
    args = parse_args()
    cluster = tf.train.ClusterSpec(json.loads(args.cluster))
    target = "grpc://" + cluster.task_address("worker", args.task_index)
    opt, x, y, train_op, global_step = build(args, cluster)
    is_chief = args.task_index == 0
    done = [0]
    try:
        if args.mode == "async":
            with tf.Session(target) as sess:
                if is_chief:
                    sess.run(tf.global_variables_initializer())
                else:
                    deadline = time.monotonic() + args.max_wait_secs
                    while len(sess.run(tf.report_uninitialized_variables())):
                        if time.monotonic() > deadline:
                            raise SystemExit("the model was not initialized in time")
                        time.sleep(0.05)
                train(sess, args, x, y, train_op, global_step, done)
        else:
            hooks = [opt.make_session_run_hook(is_chief)]
            with tf.train.MonitoredTrainingSession(
                master=target, is_chief=is_chief, hooks=hooks, max_wait_secs=args.max_wait_secs
            ) as sess:
                train(sess, args, x, y, train_op, global_step, done)
    except tf.errors.OpError as e:
        print(f"error {type(e).__name__}: {e.message}", flush=True)
        sys.exit(3)
    print(f"done {done[0]}", flush=True)


if __name__ == "__main__":
    main()
