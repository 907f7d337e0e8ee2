"""Distributed runtime benchmarks, each against a floor measured in the same run.

    python benchmarks/bench_runtime.py [--quick] [--no-tf] [--json PATH] [--pin C,T0,T1]

1. step latency of a trivial op on the master's task (1 hop) and on another task (2 hops), vs
   one and two raw pyzmq REQ/REP round trips between two processes (and, beside them, a raw
   Unix-socket round trip, the floor of nbdist's same-host links, and a second nbdist cluster
   run with ``NBDIST_LINKS=0``: every message over ZeroMQ);
2. fetching a 64 MB float32 variable from another task, and moving it between two tasks
   (Send/Recv), vs raw pyzmq zero-copy throughput and a single-threaded memcpy of 64 MB;
3. time until a 2-task cluster of separate processes answers its first step;
4. peak RSS of an idle server process and of a ps holding a 64 MB variable;
and the same figures for real TensorFlow's tf.compat.v1 runtime when it is installed.

The nbdist cluster signs every message, as LocalCluster runs it: a fresh random cluster key in
``$NBDIST_CLUSTER_KEY`` of its servers and of this (client) process. The nbdist cluster, the TF
cluster and the pyzmq echo process are all up while the step latencies are measured, in
interleaved rounds (the contenders take turns, in an order rotated every round) so that all see
the same load; each figure is the median over all its samples.
All traffic stays on 127.0.0.1; every loop is bounded; every process is killed by PID.
"""

import argparse
import contextlib
import json
import os
import platform
import secrets
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout without installing

REPO = str(Path(__file__).resolve().parent.parent)
ENV = dict(
    os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""), TF_CPP_MIN_LOG_LEVEL="3"
)
ENV.pop("NBDIST_CLUSTER_KEY", None)
MB64 = 64 * 2**20
ROUNDS = 10  # interleaved rounds of the step-latency measurement


def free_ports(n):
    """`n` distinct free ports on 127.0.0.1 (`nbdist.runtime.net.samehost.free_ports`)."""
    from nbdist.runtime.net import samehost

    return samehost.free_ports(n)


def free_port():
    return free_ports(1)[0]


def peak_rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def wait_line(proc, prefix, timeout_s=60):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
        if ready:
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError(f"process exited: {proc.stderr.read()[-2000:] if proc.stderr else ''}")
            if line.startswith(prefix):
                return line
    raise TimeoutError(f"no {prefix!r} line in {timeout_s} s")


def stop(procs):
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def interleaved(contenders, n, rounds=ROUNDS):
    """Median seconds per call of each of `contenders` (name -> fn), over `n` calls each made in
    `rounds` rounds: in each round every contender makes n / rounds calls in turn, the order
    rotated each round so that none always runs first or last; all see the same load."""
    names = list(contenders)
    for fn in contenders.values():
        for _ in range(5):  # warm up
            fn()
    samples = {name: [] for name in names}
    per_round = max(1, n // rounds)
    for r in range(rounds):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            fn, out = contenders[name], samples[name]
            for _ in range(per_round):
                t = time.perf_counter()
                fn()
                out.append(time.perf_counter() - t)
    return {name: float(np.median(s)) for name, s in samples.items()}


def timed(fn, n):
    fn()  # warm up
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t)
    return float(np.median(samples))


def timed_with_memcpy(fn, n):
    """Medians of `fn` and of a single-threaded 64 MB memcpy (into memory already touched),
    timed in alternation so that both see the same load."""
    src = np.ones(MB64 // 4, np.float32)
    dst = np.zeros_like(src)
    fn()
    samples, floor = [], []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t)
        t = time.perf_counter()
        np.copyto(dst, src)
        floor.append(time.perf_counter() - t)
    return float(np.median(samples)), float(np.median(floor))


def spawn(commands, env=ENV):
    """Starts one process per command; returns them and the time they were started."""
    t0 = time.perf_counter()
    procs = [
        subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        for cmd in commands
    ]
    return procs, t0


# -- the floor: raw pyzmq between two processes ------------------------------------------------
_ECHO = r"""
import sys, zmq
ctx = zmq.Context(); s = ctx.socket(zmq.REP); s.bind("tcp://127.0.0.1:%d")
import numpy as np  # noqa: I001

big = np.ones(%d // 4, np.float32)
print("ready", flush=True)
while True:
    m = s.recv()
    if m == b"big": s.send(big, copy=False)
    elif m == b"quit": s.send(b""); break
    else: s.send(m)
"""


_UNIX_ECHO = r"""
import os, socket, sys
path = sys.argv[1]
server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.bind(path)
server.listen(1)
print("ready", flush=True)
conn, _ = server.accept()
os.unlink(path)
while True:
    m = conn.recv(64)
    if not m or m == b"q":
        break
    conn.sendall(m)
"""


class UnixEchoFloor:
    """A process echoing one-byte messages on a raw Unix stream socket: the floor of a link."""

    def __init__(self, stack):
        import tempfile

        path = os.path.join(tempfile.mkdtemp(prefix="nbdist-bench-"), "echo")
        (self.proc,), _ = spawn([[sys.executable, "-c", _UNIX_ECHO, path]])
        stack.callback(stop, [self.proc])
        wait_line(self.proc, "ready")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(60.0)  # a dead echo process raises, never hangs
        self.sock.connect(path)
        stack.callback(self.sock.close)
        stack.callback(os.rmdir, os.path.dirname(path))

    def round_trip(self):
        self.sock.sendall(b"x")
        self.sock.recv(64)


class EchoFloor:
    """A pyzmq REP process echoing one-byte messages (or replying 64 MB, zero-copy) to our REQ;
    pinned to the CPUs `cpus` (None: wherever the scheduler puts it)."""

    def __init__(self, stack, cpus=None):
        import zmq

        port = free_port()
        pin = [] if cpus is None else ["taskset", "-c", ",".join(map(str, cpus))]
        (self.proc,), _ = spawn([[*pin, sys.executable, "-c", _ECHO % (port, MB64)]])
        stack.callback(stop, [self.proc])
        wait_line(self.proc, "ready")
        self.sock = zmq.Context.instance().socket(zmq.REQ)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.setsockopt(zmq.RCVTIMEO, 60_000)  # a dead echo process raises, never hangs
        self.sock.connect(f"tcp://127.0.0.1:{port}")
        stack.callback(self.sock.close)

    def round_trip(self):
        self.sock.send(b"x")
        self.sock.recv()

    def fetch64(self):
        self.sock.send(b"big")
        frame = self.sock.recv(copy=False)
        np.frombuffer(frame.buffer, np.float32)


def pinned_floors(stack, n, cpus):
    """One round trip with both ends on one CPU and with the ends on two CPUs (of `cpus`):
    ``{"same_cpu_s", "two_cpus_s"}``, or None on a one-CPU machine (or without `taskset`).

    On this project's 2-vCPU VM the two differ about 4x (23 vs 107 us): a message that wakes
    a thread on another, idle vCPU waits for that vCPU to come out of halt. Where the
    scheduler puts a benchmark's processes decides which one the unpinned floor measures.
    """
    if len(cpus) < 2 or shutil.which("taskset") is None:
        return None
    same, other = EchoFloor(stack, [cpus[0]]), EchoFloor(stack, [cpus[1]])
    mine = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpus[0]})  # this thread, for the two floors only
    try:
        return {
            f"{k}_s": v
            for k, v in interleaved({"same_cpu": same.round_trip, "two_cpus": other.round_trip}, n).items()
        }
    finally:
        os.sched_setaffinity(0, mine)


# -- the same program on nbdist and on real TensorFlow (the API is the point) -------------------------
class Contender:
    """A 2-task cluster of `tf` (nbdist or tf.compat.v1) answering its first step, and its Session.

    `ready_s` is the time from spawning the server processes to that first step's answer."""

    def __init__(self, tf, target, procs, t0):
        self.procs = procs
        graph = tf.Graph()
        with graph.as_default():
            with tf.device("/job:local/task:0"):
                self.local_c = tf.constant(1.0) + 1.0
            with tf.device("/job:local/task:1"):
                self.remote_c = tf.constant(1.0) + 1.0
                self.big = tf.Variable(tf.zeros([MB64 // 4]), name="big")
            with tf.device("/job:local/task:0"):
                # a 64 MB Send/Recv from task 1; 4 bytes fetched
                self.moved = tf.slice(tf.identity(self.big), [0], [1])
        self.sess = tf.Session(target, graph=graph)
        self.sess.run(self.local_c)
        self.ready_s = time.perf_counter() - t0
        self.idle_rss_mib = peak_rss_mib(procs[1].pid)

    def step_1hop(self):
        self.sess.run(self.local_c)

    def step_2hop(self):
        self.sess.run(self.remote_c)

    def measure_64mb(self, n):
        """The 64 MB fetch and Send/Recv (each alternating with a memcpy), then the ps's peak RSS."""
        out = {}
        self.sess.run(self.big.initializer)
        out["fetch64_s"], out["memcpy_fetch64_s"] = timed_with_memcpy(lambda: self.sess.run(self.big), n)
        out["sendrecv64_s"], out["memcpy_sendrecv64_s"] = timed_with_memcpy(
            lambda: self.sess.run(self.moved), n
        )
        out["ps64_rss_mib"] = peak_rss_mib(self.procs[1].pid)
        return out


def _on_cpu(cmd, cpus, i):
    """`cmd` run on CPU ``cpus[i]`` (`--pin`), or as it is."""
    return cmd if cpus is None else ["taskset", "-c", str(cpus[i]), *cmd]


def start_nbdist(stack, key_hex, task_cpus=None, links=True):
    """A signed 2-task nbdist cluster: its servers and this process share the cluster key `key_hex`.
    Without `links` its servers neither listen on nor use links (so this process's channels to
    them keep to ZeroMQ too)."""
    import nbdist as tf

    cluster = {"local": [f"localhost:{port}" for port in free_ports(2)]}
    spec = json.dumps(cluster)
    procs, t0 = spawn(
        (
            _on_cpu(
                [sys.executable, "-m", "nbdist.server", "--cluster", spec, "--job", "local", "--task", t],
                task_cpus,
                i,
            )
            for i, t in enumerate("01")
        ),
        env=dict(ENV, NBDIST_CLUSTER_KEY=key_hex, **({} if links else {"NBDIST_LINKS": "0"})),
    )
    stack.callback(stop, procs)
    for p in procs:
        wait_line(p, "nbdist-server ready")
    contender = Contender(tf, f"zmq://{cluster['local'][0]}", procs, t0)
    stack.callback(contender.sess.close)
    return contender


_TF_SERVER = r"""
import json, sys, tensorflow as tf
cluster = tf.train.ClusterSpec(json.loads(sys.argv[1]))
s = tf.distribute.Server(cluster, job_name="local", task_index=int(sys.argv[2]))
print("ready", flush=True)
s.join()
"""


def start_tf(stack, task_cpus=None):
    """A 2-task cluster of real TensorFlow servers, or None when TensorFlow is not installed."""
    try:
        import tensorflow as real_tf
    except ImportError:
        return None
    cluster = {"local": [f"localhost:{port}" for port in free_ports(2)]}
    spec = json.dumps(cluster)
    procs, t0 = spawn(
        _on_cpu([sys.executable, "-c", _TF_SERVER, spec, str(i)], task_cpus, i) for i in range(2)
    )
    stack.callback(stop, procs)
    for p in procs:
        wait_line(p, "ready", 120)
    contender = Contender(real_tf.compat.v1, f"grpc://{cluster['local'][0]}", procs, t0)
    stack.callback(contender.sess.close)
    return contender


def run(n, with_tf, pin=None):
    """All the figures: {"floor": ..., "nbdist": ..., "tf": ... or None} (seconds, MiB).

    `pin`: ``[client CPU, task 0 CPU, task 1 CPU]`` for both clusters (None: unpinned)."""
    task_cpus = None if pin is None else pin[1:]
    cpus = sorted(os.sched_getaffinity(0))
    if pin is not None:
        os.sched_setaffinity(0, {pin[0]})  # this process: the client of both clusters
    # Signed as LocalCluster runs: a fresh key for the servers and for this process's Sessions.
    key_hex = secrets.token_hex(32)
    os.environ["NBDIST_CLUSTER_KEY"] = key_hex
    with contextlib.ExitStack() as stack:
        # TF starts first, so its ready time is measured with nothing else running, and
        # nbdist's with TF's idle servers up: any difference is at nbdist's expense.
        real = start_tf(stack, task_cpus) if with_tf else None
        nb = start_nbdist(stack, key_hex, task_cpus)
        zmq_only = start_nbdist(stack, key_hex, task_cpus, links=False)
        echo, unix_echo = EchoFloor(stack), UnixEchoFloor(stack)
        steps = {
            "floor_rtt_s": echo.round_trip,
            "floor_unix_rtt_s": unix_echo.round_trip,
            "nbdist_step_1hop_s": nb.step_1hop,
            "nbdist_step_2hop_s": nb.step_2hop,
            "zmq_only_step_1hop_s": zmq_only.step_1hop,
            "zmq_only_step_2hop_s": zmq_only.step_2hop,
        }
        if real:
            steps.update(tf_step_1hop_s=real.step_1hop, tf_step_2hop_s=real.step_2hop)
        latency = interleaved(steps, n)
        heavy_n = max(5, n // 50)
        floor = {
            "rtt_s": latency["floor_rtt_s"],
            "unix_rtt_s": latency["floor_unix_rtt_s"],
            "fetch64_s": timed(echo.fetch64, heavy_n),
            "pinned": pinned_floors(stack, n, cpus),
        }
        figures = {
            "floor": floor,
            "nbdist_no_links": {k: latency[f"zmq_only_{k}"] for k in ("step_1hop_s", "step_2hop_s")},
        }
        for name, contender in (("nbdist", nb), ("tf", real)):
            if contender is None:
                figures[name] = None
                continue
            figures[name] = {
                "ready_s": contender.ready_s,
                "idle_rss_mib": contender.idle_rss_mib,
                "step_1hop_s": latency[f"{name}_step_1hop_s"],
                "step_2hop_s": latency[f"{name}_step_2hop_s"],
                **contender.measure_64mb(heavy_n),
            }
    return figures


def report(figures):
    floor, nb, real = figures["floor"], figures["nbdist"], figures["tf"]
    nolinks = figures.get("nbdist_no_links")
    rtt, pinned = floor["rtt_s"], floor.get("pinned")
    gbps = lambda s: MB64 / s / 1e9  # noqa: E731
    rows = [
        (
            "step, trivial op on the master's task (1 hop)",
            f"{nb['step_1hop_s'] * 1e6:.0f} us",
            f"{nb['step_1hop_s'] / rtt:.2f}x one round trip",
            real and f"{real['step_1hop_s'] * 1e6:.0f} us",
        ),
        (
            "step, trivial op on another task (2 hops)",
            f"{nb['step_2hop_s'] * 1e6:.0f} us",
            f"{nb['step_2hop_s'] / (2 * rtt):.2f}x two round trips",
            real and f"{real['step_2hop_s'] * 1e6:.0f} us",
        ),
        ("floor: raw pyzmq REQ/REP round trip (two: twice this)", f"{rtt * 1e6:.0f} us", "", ""),
        *(
            [
                (
                    "same steps without links (NBDIST_LINKS=0: every message over ZeroMQ), 1 / 2 hops",
                    f"{nolinks['step_1hop_s'] * 1e6:.0f} / {nolinks['step_2hop_s'] * 1e6:.0f} us",
                    f"{nolinks['step_1hop_s'] / rtt:.2f}x / {nolinks['step_2hop_s'] / (2 * rtt):.2f}x",
                    "",
                ),
                ("floor of a link: Unix-socket round trip", f"{floor['unix_rtt_s'] * 1e6:.0f} us", "", ""),
            ]
            if nolinks
            else []
        ),
        *(
            [
                (
                    "floor, pinned: both ends on one CPU / on two CPUs",
                    f"{pinned['same_cpu_s'] * 1e6:.0f} / {pinned['two_cpus_s'] * 1e6:.0f} us",
                    "",
                    "",
                )
            ]
            if pinned
            else []
        ),
        (
            "fetch 64 MB float32 variable from another task",
            f"{gbps(nb['fetch64_s']):.2f} GB/s",
            f"{floor['fetch64_s'] / nb['fetch64_s']:.0%} of zmq, "
            f"{nb['memcpy_fetch64_s'] / nb['fetch64_s']:.0%} of memcpy",
            real and f"{gbps(real['fetch64_s']):.2f} GB/s",
        ),
        (
            "Send/Recv of that variable to another task (step time)",
            f"{gbps(nb['sendrecv64_s']):.2f} GB/s",
            f"{nb['memcpy_sendrecv64_s'] / nb['sendrecv64_s']:.0%} of memcpy",
            real and f"{gbps(real['sendrecv64_s']):.2f} GB/s",
        ),
        ("floor: raw pyzmq zero-copy 64 MB reply", f"{gbps(floor['fetch64_s']):.2f} GB/s", "", ""),
        (
            "floor: single-threaded memcpy of 64 MB (alternating with the fetch / Send/Recv)",
            f"{gbps(nb['memcpy_fetch64_s']):.2f} / {gbps(nb['memcpy_sendrecv64_s']):.2f} GB/s",
            "",
            "",
        ),
        (
            "2-task cluster ready (spawn -> first step answered)",
            f"{nb['ready_s']:.2f} s",
            "",
            real and f"{real['ready_s']:.2f} s",
        ),
        (
            "peak RSS, idle server process",
            f"{nb['idle_rss_mib']:.0f} MiB",
            "",
            real and f"{real['idle_rss_mib']:.0f} MiB",
        ),
        (
            "peak RSS, ps holding a 64 MB variable",
            f"{nb['ps64_rss_mib']:.0f} MiB",
            "",
            real and f"{real['ps64_rss_mib']:.0f} MiB",
        ),
    ]
    print(f"| measure | nbdist (signed) | vs floor | real TF {'' if real else '(not run)'} |")
    print("|---|---|---|---|")
    for name, value, ratio, tfv in rows:
        print(f"| {name} | {value} | {ratio} | {tfv or ''} |")
    print()
    print(
        f"nbdist vs floor: 1 hop {nb['step_1hop_s'] / rtt:.2f}x one round trip (target <= 3x), "
        f"2 hops {nb['step_2hop_s'] / (2 * rtt):.2f}x two round trips (target <= 3x)"
    )
    if pinned:
        one, two = pinned["same_cpu_s"], pinned["two_cpus_s"]
        print(
            f"  against the pinned floors (one CPU / two CPUs): 1 hop {nb['step_1hop_s'] / one:.1f}x / "
            f"{nb['step_1hop_s'] / two:.1f}x, 2 hops {nb['step_2hop_s'] / (2 * one):.1f}x / "
            f"{nb['step_2hop_s'] / (2 * two):.1f}x"
        )
    if real:
        print(
            f"nbdist vs TF: step 1 hop {real['step_1hop_s'] / nb['step_1hop_s']:.1f}x faster, "
            f"2 hops {real['step_2hop_s'] / nb['step_2hop_s']:.1f}x faster (target >= 4x), "
            f"fetch {real['fetch64_s'] / nb['fetch64_s']:.1f}x the throughput, "
            f"Send/Recv {real['sendrecv64_s'] / nb['sendrecv64_s']:.1f}x, "
            f"ready {real['ready_s'] / nb['ready_s']:.1f}x faster, "
            f"idle memory {nb['idle_rss_mib'] / real['idle_rss_mib']:.2f} of TF's"
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--no-tf", action="store_true", help="skip real TensorFlow")
    parser.add_argument("--json", metavar="PATH", help="also write the raw figures (seconds, MiB) to PATH")
    parser.add_argument(
        "--pin",
        metavar="C,T0,T1",
        type=lambda text: [int(c) for c in text.split(",")],
        help="run the client on CPU C and task i of both clusters on CPU Ti (e.g. 0,0,1)",
    )
    args = parser.parse_args()
    if args.pin is not None and len(args.pin) != 3:
        parser.error("--pin takes three CPU numbers: client, task 0, task 1")
    n = 200 if args.quick else 1000
    figures = run(n, with_tf=not args.no_tf, pin=args.pin)
    report(figures)
    if args.json:
        figures["run"] = {
            "steps_per_latency": n,
            "rounds": ROUNDS,
            "signed": True,
            "pin": args.pin,
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "machine": platform.machine(),
        }
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
