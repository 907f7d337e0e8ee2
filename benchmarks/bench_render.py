"""How long the graph view takes to draw a 1,000-op graph (issue: < 1 s).

Builds an MLP with enough layers for ~1,000 ops (forward, gradients, optimizer), with
variables on ``/job:ps/task:0`` and compute on ``/job:worker/task:0``, then times
``render.graph_to_dot`` + ``render.dot_to_svg`` (Graphviz layout included) for:

- the requested graph (tf.Graph), collapsed (the default above 40 ops);
- the placed & partitioned graph of a traced step on two in-process servers, collapsed.

Fully expanded, 1,000 ops are ~1,000 drawn nodes, which Graphviz needs seconds to minutes
for; ``--expanded`` times that too (the widget refuses more than 400 drawn nodes).

Run: ``python benchmarks/bench_render.py [--ops 1000] [--repeat 5] [--expanded]``
"""

import argparse
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import nbdist as tf
from nbdist.notebook import render
from nbdist.runtime.server_lib import Server


def build(target_ops, seed=0):
    """``(graph, train_op, x, y)``: the smallest such MLP with at least `target_ops` ops."""
    layers = 1
    while True:
        graph, train, x, y = _mlp(layers, seed)
        if len(graph.get_operations()) >= target_ops:
            return graph, train, x, y
        layers += 1


def _mlp(layers, seed):
    rng = np.random.default_rng(seed)
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/job:worker/task:0"):
            x = tf.placeholder(tf.float32, [None, 8], name="x")
            y = tf.placeholder(tf.float32, [None, 1], name="y")
        h = x
        for i in range(1, layers + 1):
            with tf.name_scope(f"layer{i}"):
                with tf.device("/job:ps/task:0"):
                    w = tf.Variable(rng.normal(0, 0.3, (8, 8)).astype(np.float32), name="w")
                    b = tf.Variable(np.zeros(8, np.float32), name="b")
                with tf.device("/job:worker/task:0"):
                    h = tf.nn.relu(tf.matmul(h, w) + b)
        with tf.device("/job:worker/task:0"):
            with tf.name_scope("loss"):
                loss = tf.reduce_mean(tf.square(tf.reduce_sum(h, axis=1, keepdims=True) - y))
            train = tf.train.GradientDescentOptimizer(0.01).minimize(loss)
    return graph, train, x, y


def time_render(source, repeat, **kwargs):
    """Median and best seconds of DOT generation + Graphviz layout, and the SVG's size."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        svg = render.dot_to_svg(render.graph_to_dot(source, **kwargs))
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times), len(svg)


def traced_step(graph, train, x, y):
    ports = []
    for _ in range(2):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            ports.append(s.getsockname()[1])
    cluster = {"ps": [f"localhost:{ports[0]}"], "worker": [f"localhost:{ports[1]}"]}
    servers = [Server(cluster, job_name="ps", task_index=0), Server(cluster, job_name="worker", task_index=0)]
    with graph.as_default():
        init = tf.global_variables_initializer()
    with tf.Session(servers[1].target, graph=graph) as sess:
        sess.run(init)
        md = tf.RunMetadata()
        feed = {x: np.ones((4, 8), np.float32), y: np.ones((4, 1), np.float32)}
        sess.run(train, feed, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=md)
    for server in servers:
        server.stop()
    return md


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--expanded", action="store_true", help="also time the fully expanded layout (slow)")
    args = parser.parse_args()
    graph, train, x, y = build(args.ops)
    n_ops = len(graph.get_operations())
    print(f"graph: {n_ops} ops; median (best) of {args.repeat} renders, DOT + Graphviz layout to SVG")
    md = traced_step(graph, train, x, y)
    nodes = sum(len(p["node"]) for p in md.partition_graphs)
    print(f"traced step: {nodes} nodes in {len(md.partition_graphs)} partitions (with _Send/_Recv)")
    for label, source in [("requested (tf.Graph)", graph), ("placed & partitioned (RunMetadata)", md)]:
        med, best, size = time_render(source, args.repeat)
        print(f"  {label:36s} collapsed (default): {med:6.3f} s ({best:.3f} s), SVG {size / 1024:.0f} KiB")
    if args.expanded:
        for label, source in [("requested (tf.Graph)", graph), ("placed & partitioned (RunMetadata)", md)]:
            try:
                med, _, size = time_render(source, 1, collapse=False)
                result = f"{med:6.3f} s (1 run), SVG {size / 1024:.0f} KiB"
            except subprocess.TimeoutExpired:
                result = "did not finish in 60 s"
            print(f"  {label:36s} fully expanded:      {result}")


if __name__ == "__main__":
    main()
