"""Where one between-graph training step's time goes: a traced step, printed as a timeline.

    python benchmarks/trace_training_step.py            # asynchronous (a tutorial's worker)
    python benchmarks/trace_training_step.py --sync     # SyncReplicasOptimizer, 1 of 1

A ps task runs as its own process (``python -m nbdist.server``); the worker is this process:
its own server and a session on ``server.target``, the shape of every TF 1.x tutorial
(so its requests reach its master in process). The model is the benchmarks' linear
regression (100 features, batch 32) under `replica_device_setter`. After warm-up steps it
prints the median plain step, then one `FULL_TRACE` step: every service call and op, in
microseconds from the start of the step, with its duration. Gaps between a `_Send` on one
task and its `_Recv` ending on the other are the messages' latency. The ps is stopped by
PID at the end; every wait is bounded.
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout without installing
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_runtime import free_ports, spawn, stop, wait_line

import nbdist as tf

QUIET_OPS = ("Const", "Identity", "VariableV2")  # instant, and many: left out of the timeline


def build(cluster, sync):
    setter = tf.train.replica_device_setter(worker_device="/job:worker/task:0", cluster=cluster)
    with tf.device(setter):
        step = tf.train.get_or_create_global_step()
        x = tf.placeholder(tf.float32, [None, 100], name="x")
        y = tf.placeholder(tf.float32, [None, 1], name="y")
        w = tf.get_variable("w", [100, 1], initializer=tf.zeros_initializer())
        b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
        opt = tf.train.GradientDescentOptimizer(0.02)
        if sync:
            opt = tf.train.SyncReplicasOptimizer(opt, replicas_to_aggregate=1, total_num_replicas=1)
        train = opt.minimize(loss, global_step=step)
    hooks = [opt.make_session_run_hook(is_chief=True)] if sync else []
    feed = {x: np.ones((32, 100), np.float32), y: np.ones((32, 1), np.float32)}
    return train, hooks, feed


def timeline(meta, t0):
    """``(start us, duration us, what)`` of every service call and (but the quiet) op."""
    rows = [
        (c["start_s"], c["end_s"], f"{c['service']}.{c['method']} {c.get('task', '')}")
        for c in meta.service_calls
    ]
    for dev in meta.step_stats.dev_stats:
        task = dev.device.split("/")[1]
        rows += [(n["start_s"], n["end_s"], f"  {task} {n['op']} {n['node_name']}") for n in dev.node_stats]
    return [
        ((s - t0) * 1e6, (e - s) * 1e6, what)
        for s, e, what in sorted(rows)
        if not any(f" {op} " in what for op in QUIET_OPS)
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sync", action="store_true", help="SyncReplicasOptimizer (1 of 1) instead of async")
    parser.add_argument("--steps", type=int, default=300, help="plain steps timed before the traced one")
    args = parser.parse_args()
    ports = free_ports(2)
    spec = {"ps": [f"localhost:{ports[0]}"], "worker": [f"localhost:{ports[1]}"]}
    (ps,), _ = spawn(
        [[sys.executable, "-m", "nbdist.server", "--cluster", json.dumps(spec), "--job", "ps", "--task", "0"]]
    )
    try:
        wait_line(ps, "nbdist-server ready")
        server = tf.train.Server(spec, job_name="worker", task_index=0)
        train, hooks, feed = build(tf.train.ClusterSpec(spec), args.sync)
        with tf.train.MonitoredTrainingSession(master=server.target, is_chief=True, hooks=hooks) as sess:
            for _ in range(50):
                sess.run(train, feed)
            times = []
            for _ in range(args.steps):
                t = time.perf_counter()
                sess.run(train, feed)
                times.append(time.perf_counter() - t)
            meta, full = tf.RunMetadata(), tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
            t0 = time.time()
            sess.run(train, feed, options=full, run_metadata=meta)
            traced_s = time.time() - t0
        server.stop()
    finally:
        stop([ps])
    print(f"{'sync' if args.sync else 'async'} step: median {np.median(times) * 1e6:.0f} us plain")
    print(f"one FULL_TRACE step: {traced_s * 1e6:.0f} us")
    print("   start us      took  what")
    for start, took, what in timeline(meta, t0):
        print(f"{start:10.0f} {took:9.0f}  {what}")


if __name__ == "__main__":
    main()
