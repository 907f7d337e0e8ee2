"""A training step across processes: nbdist against real TensorFlow, in the same run.

The model is the performance issue's: in-graph replication of a tiny linear model, a 10x1
variable ``w`` (and a bias) on ``/job:ps/task:0``, each of W worker tasks computing the loss
and gradients of its own 8x10 batch, the gradients averaged and applied with gradient descent
on the ps, the session's client talking to worker 0's master. One step: the master starts one
partition per task; each worker receives ``w``, sends its gradients to the ps; the ps applies.

Every task is its own process on 127.0.0.1 (``python -m nbdist.server`` / a ``tf.distribute.Server``),
messages signed with a cluster key as `LocalCluster` runs. nbdist and TF are measured in
alternating rounds per worker count, so both see the same background load; each figure is
the median step time of a round.

    python benchmarks/bench_step.py                      # W = 1, 2, 4, 8; 3 rounds
    python benchmarks/bench_step.py --workers 2 --rounds 1 --no-tf
    python benchmarks/bench_step.py --profile 2          # cProfile of the client, W = 2
"""

import argparse
import json
import os
import secrets
import statistics
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_runtime import free_ports, stop, wait_line

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(
    os.environ,
    PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""),
    TF_CPP_MIN_LOG_LEVEL="3",
    NBDIST_CLUSTER_KEY=os.environ.get("NBDIST_CLUSTER_KEY") or secrets.token_hex(32),
)
os.environ["NBDIST_CLUSTER_KEY"] = ENV["NBDIST_CLUSTER_KEY"]  # this client signs too

_TF_SERVER = r"""
import json, sys, tensorflow as tf
cluster = tf.train.ClusterSpec(json.loads(sys.argv[1]))
s = tf.distribute.Server(cluster, job_name=sys.argv[2], task_index=int(sys.argv[3]))
print("ready", flush=True)
s.join()
"""


def start_cluster(lib, workers):
    ports = [f"localhost:{port}" for port in free_ports(1 + workers)]
    cluster = {"ps": ports[:1], "worker": ports[1:]}
    spec = json.dumps(cluster)
    commands = []
    for job, addresses in cluster.items():
        for i in range(len(addresses)):
            if lib == "nbdist":
                commands.append(
                    [sys.executable, "-m", "nbdist.server", "--cluster", spec, "--job", job, "--task", str(i)]
                )
            else:
                commands.append([sys.executable, "-c", _TF_SERVER, spec, job, str(i)])
    procs = [
        subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=ENV)
        for c in commands
    ]
    for p in procs:
        wait_line(p, "nbdist-server ready" if lib == "nbdist" else "ready", 120)
    return cluster, procs


def stop_cluster(procs):
    stop(procs)


def build(tf, workers):
    """The in-graph model; returns (graph, init, train, feeds)."""
    rng = np.random.RandomState(0)
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/job:ps/task:0"):
            w = tf.Variable(np.zeros((10, 1), np.float32), name="w")
            b = tf.Variable(np.zeros((1,), np.float32), name="b")
        grads, feeds = [], {}
        for i in range(workers):
            with tf.device(f"/job:worker/task:{i}"):
                x = tf.placeholder(tf.float32, [8, 10], name=f"x{i}")
                y = tf.placeholder(tf.float32, [8, 1], name=f"y{i}")
                loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
                grads.append(tf.gradients(loss, [w, b]))
                xs = rng.normal(size=(8, 10)).astype(np.float32)
                feeds[x], feeds[y] = xs, xs.sum(1, keepdims=True)
        with tf.device("/job:ps/task:0"):
            avg = [tf.add_n([g[k] for g in grads]) / float(workers) for k in range(2)]
            train = tf.train.GradientDescentOptimizer(0.01).apply_gradients(zip(avg, [w, b]))
        init = tf.global_variables_initializer()
    return graph, init, train, feeds


def median_step_s(tf, target, workers, steps):
    graph, init, train, feeds = build(tf, workers)
    with tf.Session(target, graph=graph) as sess:
        sess.run(init)
        for _ in range(20):  # warm: partitions registered, caches filled
            sess.run(train, feeds)
        times = []
        for _ in range(steps):
            t = time.perf_counter()
            sess.run(train, feeds)
            times.append(time.perf_counter() - t)
    return statistics.median(times)


def round_of(lib, workers, steps):
    if lib == "nbdist":
        import nbdist as tf
    else:
        import tensorflow.compat.v1 as tf

        tf.disable_eager_execution()
    cluster, procs = start_cluster(lib, workers)
    scheme = "zmq" if lib == "nbdist" else "grpc"
    try:
        return median_step_s(tf, f"{scheme}://{cluster['worker'][0]}", workers, steps)
    finally:
        stop_cluster(procs)


def profile(workers, steps):
    import cProfile
    import pstats

    import nbdist as tf

    cluster, procs = start_cluster("nbdist", workers)
    try:
        graph, init, train, feeds = build(tf, workers)
        with tf.Session(f"zmq://{cluster['worker'][0]}", graph=graph) as sess:
            sess.run(init)
            for _ in range(20):
                sess.run(train, feeds)
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(steps):
                sess.run(train, feeds)
            prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(25)
    finally:
        stop_cluster(procs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, nargs="*", default=[1, 2, 4, 8])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=300, help="timed steps per round")
    parser.add_argument("--no-tf", action="store_true", help="skip real TensorFlow")
    parser.add_argument("--profile", type=int, metavar="W", help="profile the client with W workers instead")
    args = parser.parse_args()
    if args.profile:
        profile(args.profile, args.steps)
        return
    libs = ["nbdist"] if args.no_tf else ["nbdist", "tf"]
    print(f"in-graph training step, median ms of {args.steps} steps per round; {os.cpu_count()} CPUs")
    print("| workers | nbdist ms (rounds) | TF ms (rounds) | TF / nbdist |")
    print("|---|---|---|---|")
    for workers in args.workers:
        res = {lib: [] for lib in libs}
        for _ in range(args.rounds):
            for lib in libs:
                res[lib].append(round_of(lib, workers, args.steps) * 1000)
        ours = " / ".join(f"{v:.2f}" for v in res["nbdist"])
        if args.no_tf:
            print(f"| {workers} | {ours} | - | - |", flush=True)
            continue
        theirs = " / ".join(f"{v:.2f}" for v in res["tf"])
        ratio = statistics.median(res["tf"]) / statistics.median(res["nbdist"])
        print(f"| {workers} | {ours} | {theirs} | {ratio:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
