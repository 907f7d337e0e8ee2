"""A/B of two checkouts (or of one checkout under two environments): a step, blocks in turns.

    git worktree add --detach /tmp/nbdist-base 8613dd1
    python benchmarks/ab_runtime.py /tmp/nbdist-base [--hops 2] [--blocks 40] [--steps 200] [--aa]
    python benchmarks/ab_runtime.py . --base-env NBDIST_FETCH_PATHS=relay --fetch-bytes 0,1M,64M --aa

Each contender is a 2-task cluster (signed, as LocalCluster runs it) started from its own
checkout (``python -m nbdist.server``) and a client process of that same checkout, so a change
of the messages between client and master is measured too. The client runs `--steps` steps
per block of one fetch: a trivial op (`--fetch-bytes 0`), or a float32 variable of that many
bytes, on task ``hops - 1`` (2 hops: on the task that is not the master's). The contenders take
turns block by block (the order rotated every block) so that all see the same load. Per block:
the wall time per step, and the CPU time per step summed over the client and that cluster's
servers (``/proc/<pid>/task/*/schedstat``). Printed: medians, and the median (quartiles) of the
per-block ratio now / base. With ``--aa`` a third contender runs this checkout again: the
quartiles of now / now-again are the noise of the same run, against which now / base is read.
All traffic on 127.0.0.1; every process is stopped by PID.
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
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_runtime import free_ports, stop, wait_line  # noqa: E402

# The client: this checkout's `import nbdist as tf` only (public API), so any checkout runs it.
# Reads "run N" lines, answers "ns <wall ns>" after N steps.
_CLIENT = r"""
import sys, time
import numpy as np
import nbdist as tf
address, hops, nbytes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with tf.device(f"/job:local/task:{hops - 1}"):
    if nbytes:
        fetch = tf.Variable(np.ones(nbytes // 4, np.float32), name="v")
    else:
        fetch = tf.constant(1.0) + 1.0
sess = tf.Session(f"zmq://{address}")
sess.run(tf.global_variables_initializer())
for _ in range(50):  # warm: partitions registered, links made
    sess.run(fetch)
print("ready", flush=True)
for line in sys.stdin:
    n = int(line.split()[1])
    t0 = time.perf_counter_ns()
    for _ in range(n):
        sess.run(fetch)
    print("ns", time.perf_counter_ns() - t0, flush=True)
"""


def parse_bytes(text):
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().removesuffix("B")
    unit = text[-1] if text and text[-1] in units else ""
    return int(float(text[: len(text) - len(unit)]) * units[unit])


class Contender:
    """A cluster and a client, both of the checkout at `tree`, under `env`."""

    def __init__(self, name, tree, env, key, hops, nbytes, procs):
        self.name = name
        env = dict(os.environ, **env, PYTHONPATH=str(tree), NBDIST_CLUSTER_KEY=key)
        cluster = {"local": [f"localhost:{p}" for p in free_ports(2)]}
        server = [sys.executable, "-m", "nbdist.server", "--cluster", json.dumps(cluster), "--job", "local"]
        # Started in `tree`: ``python -m`` puts its working directory first on the path.
        servers = [
            subprocess.Popen([*server, "--task", t], stdout=subprocess.PIPE, text=True, env=env, cwd=tree)
            for t in "01"
        ]
        procs += servers
        for p in servers:
            wait_line(p, "nbdist-server ready")
        command = [sys.executable, "-c", _CLIENT, cluster["local"][0], str(hops), str(nbytes)]
        self.client = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=str(tree)
        )
        procs.append(self.client)
        wait_line(self.client, "ready", timeout_s=120)
        self.pids = [p.pid for p in servers] + [self.client.pid]
        self.wall_us, self.cpu_us = [], []

    def block(self, steps):
        c0 = cpu_ns(self.pids)
        self.client.stdin.write(f"run {steps}\n")
        self.client.stdin.flush()
        wall_ns = int(wait_line(self.client, "ns ", timeout_s=600).split()[1])
        self.wall_us.append(wall_ns / steps / 1e3)
        self.cpu_us.append((cpu_ns(self.pids) - c0) / steps / 1e3)


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


def ratio_line(label, a, b):
    ratios = [x / y for x, y in zip(a, b, strict=True)]
    q1, q2, q3 = statistics.quantiles(ratios, n=4)
    return f"  {label}: median {q2:.3f} (quartiles {q1:.3f}-{q3:.3f})"


def measure(args, nbytes, key):
    env_base = dict(kv.split("=", 1) for kv in args.base_env)
    sides = [("now", REPO, {}), ("base", Path(args.base).resolve(), env_base)]
    if args.aa:
        sides.append(("now-again", REPO, {}))
    procs = []
    try:
        contenders = [Contender(n, t, e, key, args.hops, nbytes, procs) for n, t, e in sides]
        for block in range(args.blocks):
            shift = block % len(contenders)
            for c in (contenders[shift:] + contenders[:shift])[:: 1 if block % 2 == 0 else -1]:
                c.block(args.steps)
    finally:
        stop(procs)
    by = {c.name: c for c in contenders}
    what = f"a {nbytes:,}-byte variable" if nbytes else "a trivial op"
    print(f"{args.hops}-hop step fetching {what}, {args.blocks} blocks of {args.steps} steps")
    print(f"  base: {sides[1][1]} {' '.join(args.base_env)}")
    for c in contenders:
        print(
            f"  {c.name:9s}: {statistics.median(c.wall_us):9.1f} us per step (median), "
            f"CPU {statistics.median(c.cpu_us):9.1f} us (client + servers)"
        )
    print(ratio_line("now / base per block, wall", by["now"].wall_us, by["base"].wall_us))
    print(ratio_line("now / base per block, CPU ", by["now"].cpu_us, by["base"].cpu_us))
    if args.aa:
        print(ratio_line("now / now-again (A/A), wall", by["now"].wall_us, by["now-again"].wall_us))
        print(ratio_line("now / now-again (A/A), CPU ", by["now"].cpu_us, by["now-again"].cpu_us))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", help="another checkout of nbdist (a `git worktree` of an older commit), or .")
    parser.add_argument("--base-env", action="append", default=[], metavar="VAR=VALUE", help="base only")
    parser.add_argument("--hops", type=int, choices=(1, 2), default=2)
    parser.add_argument("--fetch-bytes", default="0", help="comma-separated sizes: 0 (a trivial op), 1M, 64M")
    parser.add_argument("--blocks", type=int, default=40)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--aa", action="store_true", help="also run this checkout again: the A/A noise")
    args = parser.parse_args()
    key = secrets.token_hex(32)
    for size in args.fetch_bytes.split(","):
        started = time.monotonic()
        measure(args, parse_bytes(size), key)
        print(f"  ({time.monotonic() - started:.0f} s)")


if __name__ == "__main__":
    main()
