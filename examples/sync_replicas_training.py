"""Synchronous between-graph training with SyncReplicasOptimizer, written as TF 1.x tutorials do.

Every task is its own process. The ps tasks serve (``server.join()``); each worker builds
the same graph under ``tf.train.replica_device_setter``, wraps its optimizer in
``tf.train.SyncReplicasOptimizer`` and trains in a ``tf.train.MonitoredTrainingSession``
with the optimizer's hook and a ``StopAtStepHook``. The chief (worker 0) initializes the
model, seeds the token queue and runs the queue runner that applies the averaged
gradients. With ``--replicas_to_aggregate`` below the number of workers the slowest ones
are backup workers: their late gradients are dropped.

In TF the other workers hang on the token queue once the chief reaches its last step;
with nbdist the chief closes the queue and they stop cleanly. ``--tf`` runs the same
program on real TensorFlow (its hanging workers are then ended by whoever started them)::

    python examples/sync_replicas_training.py --job_name=ps --task_index=0 \
        --ps_hosts=localhost:2222 --worker_hosts=localhost:2223,localhost:2224,localhost:2225
    python examples/sync_replicas_training.py --job_name=worker --task_index=0 ...   # and 1, 2
"""

import argparse
import json
import sys
import time

import numpy as np

if "--tf" in sys.argv:
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
    p.add_argument("--replicas_to_aggregate", type=int, default=None, help="default: every worker")
    p.add_argument("--train_steps", type=int, default=200, help="global steps (each one synchronous)")
    p.add_argument("--features", type=int, default=100)
    p.add_argument("--batch_size", type=int, default=32)
    p.add_argument("--learning_rate", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=0, help="the true weights' seed (the same on every worker)")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    ps_hosts, worker_hosts = args.ps_hosts.split(","), args.worker_hosts.split(",")
    cluster = tf.train.ClusterSpec({"ps": ps_hosts, "worker": worker_hosts})
    if args.existing_servers:
        target = "grpc://" + worker_hosts[args.task_index]
    else:
        server = tf.train.Server(cluster, job_name=args.job_name, task_index=args.task_index)
        if args.job_name == "ps":
            server.join()
            return
        target = server.target
    num_workers = len(worker_hosts)
    is_chief = args.task_index == 0
    true_w = np.random.default_rng(args.seed).normal(size=(args.features, 1)).astype(np.float32)
    data = np.random.default_rng(1000 + args.task_index)

    worker_device = f"/job:worker/task:{args.task_index}"
    with tf.device(tf.train.replica_device_setter(worker_device=worker_device, cluster=cluster)):
        global_step = tf.train.get_or_create_global_step()
        x = tf.placeholder(tf.float32, [None, args.features], name="x")
        y = tf.placeholder(tf.float32, [None, 1], name="y")
        w = tf.get_variable("w", [args.features, 1], initializer=tf.zeros_initializer())
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y), name="loss")
        opt = tf.train.SyncReplicasOptimizer(
            tf.train.GradientDescentOptimizer(args.learning_rate),
            replicas_to_aggregate=args.replicas_to_aggregate or num_workers,
            total_num_replicas=num_workers,
        )
        train_op = opt.minimize(loss, global_step=global_step)
    fetches = {"train": train_op, "loss": loss, "step": global_step, "w": w}
    if hasattr(tf.train, "staleness"):  # nbdist only: TF drops late gradients without a word
        fetches["dropped"] = tf.train.staleness.dropped_of(train_op)

    hooks = [opt.make_session_run_hook(is_chief), tf.train.StopAtStepHook(last_step=args.train_steps)]
    local_steps, dropped, losses, w_err, first_step = 0, 0, [], None, None
    started = None
    with tf.train.MonitoredTrainingSession(master=target, is_chief=is_chief, hooks=hooks) as sess:
        while not sess.should_stop():
            xs = data.normal(size=(args.batch_size, args.features)).astype(np.float32)
            ys = xs @ true_w + 0.01 * data.normal(size=(args.batch_size, 1)).astype(np.float32)
            out = sess.run(fetches, {x: xs, y: ys})
            local_steps += 1
            if started is None:  # timed from the end of the first step, which waits for every replica
                started, first_step = time.monotonic(), int(out["step"])
            losses.append(float(out["loss"]))
            dropped += int(out.get("dropped", 0))
            w_err = float(np.abs(out["w"] - true_w).max())  # (a monitored session cannot run once stopped)
    print(
        json.dumps(
            {
                "task_index": args.task_index,
                "local_steps": local_steps,
                "dropped": dropped,
                "final_loss": float(np.mean(losses[-10:])) if losses else None,
                "w_max_error": w_err,
                "elapsed_s": time.monotonic() - started if started else 0.0,
                "global_step": int(out["step"]) + 1 if local_steps else 0,
                "first_global_step": first_step,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
