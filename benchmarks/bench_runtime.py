"""Distributed runtime benchmarks, each against a floor measured in the same run.

    python benchmarks/bench_runtime.py [--quick] [--no-tf]

1. step latency of a trivial op on a remote task vs a raw pyzmq REQ/REP round trip;
2. fetching a 64 MB float32 variable from another task, and moving it between two tasks
   (Send/Recv), vs raw pyzmq zero-copy throughput and a single-threaded memcpy of 64 MB;
3. time until a 2-task cluster of separate processes answers its first step;
4. peak RSS of an idle server process and of a ps holding a 64 MB variable;
and the same figures for real TensorFlow's tf.compat.v1 runtime when it is installed.
All traffic stays on 127.0.0.1; every loop is bounded; every process is killed by PID.
"""

import argparse
import json
import os
import select
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


def free_ports(n):
    """`n` distinct free ports on 127.0.0.1 (all probed at once: one port is never given twice)."""
    probes = [socket.socket() for _ in range(n)]
    try:
        for s in probes:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in probes]
    finally:
        for s in probes:
            s.close()


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


def timed(fn, n):
    fn()  # warm up
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t)
    return float(np.median(samples))


# -- floors: raw pyzmq between two processes ---------------------------------------------------
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


def floors(n):
    import zmq

    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-c", _ECHO % (port, MB64)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    try:
        wait_line(proc, "ready")
        sock = zmq.Context.instance().socket(zmq.REQ)
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(f"tcp://127.0.0.1:{port}")

        def rtt():
            sock.send(b"x")
            sock.recv()

        def big():
            sock.send(b"big")
            frame = sock.recv(copy=False)
            np.frombuffer(frame.buffer, np.float32)

        out = {"rtt_s": timed(rtt, n), "fetch64_s": timed(big, max(5, n // 50))}
        sock.send(b"quit")
        sock.recv()
        sock.close()
        return out
    finally:
        stop([proc])


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


# -- the same program on nbdist and on real TensorFlow (the API is the point) -------------------------
def spawn(commands):
    """Starts one process per command; returns them and the time they were started."""
    t0 = time.perf_counter()
    procs = [
        subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
        for cmd in commands
    ]
    return procs, t0


def measure(tf, target, procs, t0, n):
    """Ready time, step latencies, a 64 MB fetch and RSS of task 1, with `tf` = nbdist or tf.compat.v1."""
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/job:local/task:0"):
            local_c = tf.constant(1.0) + 1.0
        with tf.device("/job:local/task:1"):
            remote_c = tf.constant(1.0) + 1.0
            big = tf.Variable(tf.zeros([MB64 // 4]), name="big")
        with tf.device("/job:local/task:0"):
            moved = tf.slice(tf.identity(big), [0], [1])  # 64 MB Send/Recv from task 1, 4 bytes fetched
        sess = tf.Session(target, graph=graph)
        sess.run(local_c)
        out = {
            "ready_s": time.perf_counter() - t0,
            "idle_rss_mib": peak_rss_mib(procs[1].pid),
            "step_1hop_s": timed(lambda: sess.run(local_c), n),
            "step_2hop_s": timed(lambda: sess.run(remote_c), n),
        }
        sess.run(big.initializer)
        out["fetch64_s"], out["memcpy_fetch64_s"] = timed_with_memcpy(lambda: sess.run(big), max(5, n // 50))
        out["sendrecv64_s"], out["memcpy_sendrecv64_s"] = timed_with_memcpy(
            lambda: sess.run(moved), max(5, n // 50)
        )
        out["ps64_rss_mib"] = peak_rss_mib(procs[1].pid)
        sess.close()
    return out


def bench_nbdist(n):
    import nbdist as tf

    cluster = {"local": [f"localhost:{free_port()}" for _ in range(2)]}
    spec = json.dumps(cluster)
    procs, t0 = spawn(
        [sys.executable, "-m", "nbdist.server", "--cluster", spec, "--job", "local", "--task", str(i)]
        for i in range(2)
    )
    try:
        for p in procs:
            wait_line(p, "nbdist-server ready")
        return measure(tf, f"zmq://{cluster['local'][0]}", procs, t0, n)
    finally:
        stop(procs)


_TF_SERVER = r"""
import json, sys, tensorflow as tf
cluster = tf.train.ClusterSpec(json.loads(sys.argv[1]))
s = tf.distribute.Server(cluster, job_name="local", task_index=int(sys.argv[2]))
print("ready", flush=True)
s.join()
"""


def bench_tf(n):
    try:
        import tensorflow as real_tf
    except ImportError:
        return None
    cluster = {"local": [f"localhost:{free_port()}" for _ in range(2)]}
    procs, t0 = spawn([sys.executable, "-c", _TF_SERVER, json.dumps(cluster), str(i)] for i in range(2))
    try:
        for p in procs:
            wait_line(p, "ready", 120)
        return measure(real_tf.compat.v1, f"grpc://{cluster['local'][0]}", procs, t0, n)
    finally:
        stop(procs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--no-tf", action="store_true", help="skip real TensorFlow")
    args = parser.parse_args()
    n = 200 if args.quick else 1000
    floor = floors(n)
    nb = bench_nbdist(n)
    real = None if args.no_tf else bench_tf(n)
    gbps = lambda s: MB64 / s / 1e9  # noqa: E731
    rows = [
        (
            "step, trivial op on the master's task (1 hop)",
            f"{nb['step_1hop_s'] * 1e6:.0f} us",
            f"{nb['step_1hop_s'] / floor['rtt_s']:.2f}x floor",
            real and f"{real['step_1hop_s'] * 1e6:.0f} us",
        ),
        (
            "step, trivial op on another task (2 hops)",
            f"{nb['step_2hop_s'] * 1e6:.0f} us",
            f"{nb['step_2hop_s'] / floor['rtt_s']:.2f}x floor",
            real and f"{real['step_2hop_s'] * 1e6:.0f} us",
        ),
        ("floor: raw pyzmq REQ/REP round trip", f"{floor['rtt_s'] * 1e6:.0f} us", "", ""),
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
    print(f"| measure | nbdist | vs floor | real TF {'' if real else '(not installed)'} |")
    print("|---|---|---|---|")
    for name, value, ratio, tfv in rows:
        print(f"| {name} | {value} | {ratio} | {tfv or ''} |")
    if real:
        print()
        print(
            f"nbdist vs TF: step (2 hops) {real['step_2hop_s'] / nb['step_2hop_s']:.1f}x faster, "
            f"fetch {real['fetch64_s'] / nb['fetch64_s']:.1f}x the throughput, "
            f"Send/Recv {real['sendrecv64_s'] / nb['sendrecv64_s']:.1f}x, "
            f"ready {real['ready_s'] / nb['ready_s']:.1f}x faster, "
            f"idle memory {nb['idle_rss_mib'] / real['idle_rss_mib']:.2f} of TF's"
        )


if __name__ == "__main__":
    main()
