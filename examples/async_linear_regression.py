"""Asynchronous between-graph training, written the way TF 1.x tutorials write it.

One process per task. The ps tasks only serve (``server.join()``); each worker builds the
same graph under ``tf.train.replica_device_setter`` (variables on the ps tasks, the model
on the worker), opens its own session to its own server and trains on its own data. The
ps applies every worker's update as it arrives, with no coordination: asynchronous
training. Worker 0 (the chief) initializes the variables; the others wait until the model
is ready.

Run it as separate processes (three shells), with nbdist or with real TF::

    python examples/async_linear_regression.py --job_name=ps --task_index=0 \
        --ps_hosts=localhost:2222 --worker_hosts=localhost:2223,localhost:2224
    python examples/async_linear_regression.py --job_name=worker --task_index=0 ...
    python examples/async_linear_regression.py --job_name=worker --task_index=1 ...

``--existing_servers`` makes a worker connect to a server already running at its address
(``python -m nbdist.server``, a `LocalCluster`) instead of starting one in-process. Each
worker prints one JSON line at the end: its local steps, mean loss and staleness (nbdist
only: how many other updates landed while its gradient was computed), and the error of
the learned weights.
"""

import argparse
import json
import sys
import time

import numpy as np

if "--tf" in sys.argv:  # the same program on real TensorFlow, for comparison
    sys.argv.remove("--tf")
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
else:
    import nbdist as tf


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ps_hosts", required=True, help="comma-separated host:port of the ps tasks")
    p.add_argument("--worker_hosts", required=True, help="comma-separated host:port of the worker tasks")
    p.add_argument("--job_name", required=True, choices=["ps", "worker"])
    p.add_argument("--task_index", type=int, required=True)
    p.add_argument("--existing_servers", action="store_true", help="connect to servers already running")
    p.add_argument("--train_steps", type=int, default=600, help="global steps to train for (all workers)")
    p.add_argument("--features", type=int, default=100)
    p.add_argument("--batch_size", type=int, default=32)
    p.add_argument("--learning_rate", type=float, default=0.02)
    p.add_argument("--seed", type=int, default=0, help="the true weights' seed (the same on every worker)")
    p.add_argument("--ready_timeout_s", type=float, default=60.0)
    return p.parse_args(argv)


def wait_until_ready(sess, report_op, task_index, timeout_s):
    """Polls until every variable is initialized (by the chief); bounded, and says what it waits for."""
    deadline = time.monotonic() + timeout_s
    while True:
        missing = sess.run(report_op)
        if len(missing) == 0:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"worker {task_index}: variables {list(missing)} still uninitialized after {timeout_s} s; "
                "is the chief (worker 0) running?"
            )
        time.sleep(0.05)


def build_model(args):
    """Linear regression: ``y = x w + b`` with a squared loss, trained by gradient descent."""
    global_step = tf.train.get_or_create_global_step()
    x = tf.placeholder(tf.float32, [None, args.features], name="x")
    y = tf.placeholder(tf.float32, [None, 1], name="y")
    w = tf.get_variable("w", [args.features, 1], initializer=tf.zeros_initializer())
    b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y), name="loss")
    opt = tf.train.GradientDescentOptimizer(args.learning_rate)
    return {
        "x": x,
        "y": y,
        "w": w,
        "loss": loss,
        "global_step": global_step,
        "train_op": opt.minimize(loss, global_step=global_step),
        "init_op": tf.global_variables_initializer(),
        "report_op": tf.report_uninitialized_variables(),
    }


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    ps_hosts = args.ps_hosts.split(",")
    worker_hosts = args.worker_hosts.split(",")
    cluster = tf.train.ClusterSpec({"ps": ps_hosts, "worker": worker_hosts})
    if args.existing_servers:
        if args.job_name == "ps":
            raise SystemExit("--existing_servers: the ps is already running; start only the workers")
        target = "grpc://" + worker_hosts[args.task_index]
    else:
        server = tf.train.Server(cluster, job_name=args.job_name, task_index=args.task_index)
        if args.job_name == "ps":
            server.join()
            return
        target = server.target

    is_chief = args.task_index == 0
    true_w = np.random.default_rng(args.seed).normal(size=(args.features, 1)).astype(np.float32)
    data = np.random.default_rng(1000 + args.task_index)  # each worker its own data

    worker_device = f"/job:worker/task:{args.task_index}"
    with tf.device(tf.train.replica_device_setter(worker_device=worker_device, cluster=cluster)):
        model = build_model(args)
    fetches = {"train": model["train_op"], "loss": model["loss"], "step": model["global_step"]}
    staleness = getattr(tf.train, "staleness", None)  # nbdist only: TF does not measure it
    if staleness is not None:
        fetches["staleness"] = staleness.of(model["train_op"])
    x, y, w = model["x"], model["y"], model["w"]

    local_steps, losses, stale = 0, [], []
    with tf.Session(target) as sess:
        if is_chief:
            sess.run(model["init_op"])
        else:
            wait_until_ready(sess, model["report_op"], args.task_index, args.ready_timeout_s)
        started = time.monotonic()  # training only: not the session set-up or the wait for the chief
        step = 0
        while step < args.train_steps:
            xs = data.normal(size=(args.batch_size, args.features)).astype(np.float32)
            ys = xs @ true_w + 0.01 * data.normal(size=(args.batch_size, 1)).astype(np.float32)
            out = sess.run(fetches, {x: xs, y: ys})
            step = out["step"] + 1  # the value read before this step's increment
            local_steps += 1
            losses.append(float(out["loss"]))
            if "staleness" in out:
                stale.append(int(out["staleness"]))
        w_err = float(np.abs(sess.run(w) - true_w).max())
    elapsed = time.monotonic() - started
    print(
        json.dumps(
            {
                "task_index": args.task_index,
                "local_steps": local_steps,
                "final_loss": float(np.mean(losses[-10:])),
                "mean_staleness": float(np.mean(stale)) if stale else None,
                "max_staleness": max(stale) if stale else None,
                "w_max_error": w_err,
                "steps_per_s": local_steps / elapsed,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
