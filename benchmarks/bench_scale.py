"""How a distributed step's cost grows with the graph: 100 -> 10,000 ops placed on two tasks.

The graph is a chain of N small ops (16 float32 each) whose ops alternate between
``/job:ps/task:0`` and ``/job:worker/task:0`` every 50 ops, so it is cut into two partitions
with a `_Send`/`_Recv` pair per switch. Two server processes on 127.0.0.1 (signed messages),
the session on the worker. Measured per N: the first run (prune, place, partition, register
both partitions, run) and the median of later runs (cached plan). The slope is fitted on
log-log: 1.0 is linear.

    python benchmarks/bench_scale.py
    python benchmarks/bench_scale.py --ops 100 1000 --repeat 5
"""

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_step

SWITCH_EVERY = 50


def build(tf, n_ops):
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [16], name="x")
        c = tf.constant(np.full(16, 1.0001, np.float32))
        y = x
        for i in range(n_ops):
            task = "/job:ps/task:0" if (i // SWITCH_EVERY) % 2 else "/job:worker/task:0"
            with tf.device(task):
                y = y * c if i % 2 else y + c
    return graph, x, y


def measure(tf, target, n_ops, repeat):
    graph, x, y = build(tf, n_ops)
    feed = {x: np.ones(16, np.float32)}
    with tf.Session(target, graph=graph) as sess:
        t = time.perf_counter()
        sess.run(y, feed)
        first = time.perf_counter() - t
        times = []
        for _ in range(repeat):
            t = time.perf_counter()
            sess.run(y, feed)
            times.append(time.perf_counter() - t)
    return first, statistics.median(times)


def slope(ns, ts):
    xs, ys = [math.log(n) for n in ns], [math.log(t) for t in ts]
    mx, my = statistics.mean(xs), statistics.mean(ys)
    return sum((a - mx) * (b - my) for a, b in zip(xs, ys)) / sum((a - mx) ** 2 for a in xs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", type=int, nargs="*", default=[100, 300, 1000, 3000, 10000])
    parser.add_argument("--repeat", type=int, default=20, help="steady-state runs per size")
    args = parser.parse_args()
    import nbdist as tf

    cluster, procs = bench_step.start_cluster("nbdist", 1)
    try:
        target = f"zmq://{cluster['worker'][0]}"
        rows = []
        for n in args.ops:
            first, steady = measure(tf, target, n, args.repeat)
            rows.append((n, first, steady))
            print(
                f"| {n:,} | {first * 1000:.1f} | {steady * 1000:.2f} | {steady / n * 1e6:.1f} |", flush=True
            )
    finally:
        bench_step.stop_cluster(procs)
    ns = [r[0] for r in rows]
    print(
        f"slope (log-log): first run {slope(ns, [r[1] for r in rows]):.2f}, "
        f"later runs {slope(ns, [r[2] for r in rows]):.2f} (1.0 = linear)"
    )


if __name__ == "__main__":
    main()
