"""A/B of two checkouts' servers: the same client, a trivial op, blocks taken in turns.

    git worktree add --detach /tmp/nbdist-base 8613dd1
    python benchmarks/ab_runtime.py /tmp/nbdist-base [--hops 2] [--blocks 40] [--steps 200]

Starts a 2-task cluster (signed, as LocalCluster runs it) from each checkout - this one's
and `BASE`'s ``python -m nbdist.server`` - and runs one client (this checkout's) against
both, `--steps` steps per block, the two clusters taking turns block by block (order flipped
every block) so that both see the same load. Per block it takes the wall time per step and
the CPU time per step summed over the client and that cluster's servers
(``/proc/<pid>/task/*/schedstat``, nanoseconds). Prints medians and the median (and
quartiles) of the per-block ratio now / base: on a VM whose speed drifts by half within an
hour, the per-block ratio is the figure to read. Only the servers differ; the client is this
checkout's in both. All traffic on 127.0.0.1; every process is stopped by PID.
"""

import argparse
import json
import os
import secrets
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # run from a checkout without installing

from bench_runtime import free_ports, stop, wait_line  # noqa: E402

import nbdist as tf  # noqa: E402 - after the path is set


def start_cluster(tree, key, procs):
    """Two server processes of the checkout at `tree` (added to `procs`); the master's address.

    Started in `tree` (not `bench_runtime.spawn`): ``python -m`` puts its working directory
    first on the path, so elsewhere the servers would import this checkout's nbdist."""
    cluster = {"local": [f"localhost:{p}" for p in free_ports(2)]}
    env = dict(os.environ, PYTHONPATH=str(tree), NBDIST_CLUSTER_KEY=key)
    command = [sys.executable, "-m", "nbdist.server", "--cluster", json.dumps(cluster), "--job", "local"]
    started = [
        subprocess.Popen([*command, "--task", t], stdout=subprocess.PIPE, text=True, env=env, cwd=str(tree))
        for t in "01"
    ]
    procs += started
    for p in started:
        wait_line(p, "nbdist-server ready")
    return started, cluster["local"][0]


def cpu_ns(pids):
    total = 0
    for pid in pids:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    total += int(f.read().split()[0])
            except OSError:  # a thread that ended meanwhile
                pass
    return total


def session_for(address, hops):
    graph = tf.Graph()
    with graph.as_default(), tf.device(f"/job:local/task:{hops - 1}"):
        target = tf.constant(1.0) + 1.0
    return tf.Session(f"zmq://{address}", graph=graph), target


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", help="another checkout of nbdist (e.g. a `git worktree` of an older commit)")
    parser.add_argument("--hops", type=int, choices=(1, 2), default=2)
    parser.add_argument("--blocks", type=int, default=40)
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    key = secrets.token_hex(32)
    os.environ["NBDIST_CLUSTER_KEY"] = key  # the client signs as its servers do
    trees = {"base": Path(args.base).resolve(), "now": REPO}
    procs, runs = [], {}
    try:
        for name, tree in trees.items():
            started, address = start_cluster(tree, key, procs)
            sess, target = session_for(address, args.hops)
            for _ in range(300):  # warm: partitions registered, links made
                sess.run(target)
            runs[name] = (sess, target, [p.pid for p in started] + [os.getpid()])
        wall = {name: [] for name in runs}
        cpu = {name: [] for name in runs}
        for block in range(args.blocks):
            for name in list(runs)[:: 1 if block % 2 == 0 else -1]:
                sess, target, pids = runs[name]
                c0, t0 = cpu_ns(pids), time.perf_counter()
                for _ in range(args.steps):
                    sess.run(target)
                wall[name].append((time.perf_counter() - t0) / args.steps * 1e6)
                cpu[name].append((cpu_ns(pids) - c0) / args.steps / 1e3)
        print(f"{args.hops}-hop trivial op, {args.blocks} blocks of {args.steps} steps; base {trees['base']}")
        for name in runs:
            print(
                f"  {name:4s}: {statistics.median(wall[name]):7.1f} us per step (median), "
                f"CPU {statistics.median(cpu[name]):7.1f} us (client + servers)"
            )
        for what, series in (("wall", wall), ("CPU", cpu)):
            ratios = [n / b for n, b in zip(series["now"], series["base"], strict=True)]
            q1, q2, q3 = statistics.quantiles(ratios, n=4)
            print(f"  now / base per block, {what}: median {q2:.3f} (quartiles {q1:.3f}-{q3:.3f})")
    finally:
        for sess, _, _ in runs.values():
            sess.close()
        stop(procs)


if __name__ == "__main__":
    main()
