"""How fast does a local 2-task cluster become usable, and how fast is it gone after stop?

    python benchmarks/bench_cluster_start.py [--repeat 5]

Ready time is measured from the call to the moment both tasks have answered:

- nbdist: ``%dtf_cluster local=2`` on a real IPython shell, then one step of a graph that runs
  on both tasks (task 1 computes, task 0 sums what it receives);
- the floor: two fresh Python processes that import zmq and numpy, bind a REP socket and each
  answer one message (what any process-per-task design must pay);
- Dask: ``LocalCluster(n_workers=2, processes=True)`` + ``Client``, then ``client.run`` on both
  workers (skipped when dask.distributed is not installed);
- ipyparallel: ``Cluster(n=2).start_and_connect_sync()``, then ``apply_sync`` on both engines
  (skipped when ipyparallel is not installed).

Stop time is from the stop call until no process of the cluster is left (polled by PID).
All contenders run in the same process, interleaved, so they share the machine's state.
The results are printed as a Markdown table (docs/benchmarks.md keeps them).
"""

import argparse
import contextlib
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psutil

FLOOR_CHILD = """
import sys, zmq, numpy
sock = zmq.Context().socket(zmq.REP)
sock.bind("tcp://127.0.0.1:" + sys.argv[1])
sock.send(sock.recv())
"""


def wait_gone(pids, timeout_s=30.0):
    """Seconds until none of `pids` is alive (zombies count as gone)."""
    started = time.perf_counter()
    while time.perf_counter() - started < timeout_s:
        if not any(_alive(p) for p in pids):
            return time.perf_counter() - started
        time.sleep(0.002)
    return float("inf")


def _check(ok, what):
    if not ok:
        raise RuntimeError(what)


def _alive(pid):
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _descendants():
    """PIDs of this process's descendants, except multiprocessing's helpers (they live until exit)."""
    pids = set()
    for p in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if not any(h in " ".join(p.cmdline()) for h in ("resource_tracker", "forkserver")):
                pids.add(p.pid)
    return pids


# -- contenders: each returns (ready_s, stop_s) -----------------------------------------------------
def run_floor():
    import zmq

    from nbdist.runtime.net.samehost import free_ports

    ctx = zmq.Context.instance()
    started = time.perf_counter()
    ports = free_ports(2)
    procs = [subprocess.Popen([sys.executable, "-c", FLOOR_CHILD, str(p)]) for p in ports]
    socks = []
    for port in ports:
        s = ctx.socket(zmq.REQ)
        s.setsockopt(zmq.LINGER, 0)
        s.setsockopt(zmq.RECONNECT_IVL, 2)  # retry every 2 ms until the child binds: a tight floor
        s.connect(f"tcp://127.0.0.1:{port}")
        s.send(b"ping")
        socks.append(s)
    for s in socks:
        _check(s.recv() == b"ping", "the floor process did not echo")
    ready = time.perf_counter() - started
    for s in socks:
        s.close()
    for p in procs:
        p.wait()
    return ready, None


def run_nbdist(shell):
    import numpy as np

    import nbdist as tf

    started = time.perf_counter()
    cluster = shell.run_line_magic("dtf_cluster", "local=2")
    with tf.Graph().as_default():
        with tf.device("/job:local/task:1"):
            b = tf.constant(np.ones((2, 2))) * 2.0
        with tf.device("/job:local/task:0"):
            total = tf.reduce_sum(b)
        with tf.Session(cluster.target("local", 0)) as sess:
            _check(sess.run(total) == 8.0, "wrong step result")
    ready = time.perf_counter() - started
    pids = list(cluster.pids.values())
    stopping = time.perf_counter()
    shell.run_line_magic("dtf_cluster", "stop")
    return ready, time.perf_counter() - stopping + wait_gone(pids)


def run_dask():
    from distributed import Client, LocalCluster

    before = _descendants()
    started = time.perf_counter()
    cluster = LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None)
    client = Client(cluster)
    _check(len(client.run(os.getpid)) == 2, "Dask did not answer on 2 workers")
    ready = time.perf_counter() - started
    pids = _descendants() - before
    stopping = time.perf_counter()
    client.close()
    cluster.close()
    return ready, time.perf_counter() - stopping + wait_gone(pids)


def run_ipyparallel():
    import ipyparallel as ipp

    before = _descendants()
    started = time.perf_counter()
    cluster = ipp.Cluster(n=2, log_level=40)
    rc = cluster.start_and_connect_sync()
    _check(len(rc[:].apply_sync(os.getpid)) == 2, "ipyparallel did not answer on 2 engines")
    ready = time.perf_counter() - started
    pids = _descendants() - before
    stopping = time.perf_counter()
    rc.close()
    cluster.stop_cluster_sync()
    return ready, time.perf_counter() - stopping + wait_gone(pids)


def _installed(module):
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per contender (ipyparallel: at most 3)")
    args = parser.parse_args()

    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "nbdist")
    contenders = {
        "floor (2 procs: zmq+numpy, 1 msg)": run_floor,
        "nbdist `%dtf_cluster local=2` + 1 step": lambda: run_nbdist(shell),
    }
    if _installed("distributed"):
        contenders["Dask LocalCluster(2 procs) + Client"] = run_dask
    if _installed("ipyparallel"):
        contenders["ipyparallel Cluster(n=2).start_and_connect_sync()"] = run_ipyparallel
    results = {name: [] for name in contenders}
    for i in range(args.repeat):
        for name, run in contenders.items():
            if "ipyparallel" in name and i >= 3:
                continue
            with contextlib.redirect_stdout(open(os.devnull, "w")):  # the status table
                results[name].append(run())
    _report(results, args.repeat)


def _report(results, repeat):
    floor = statistics.median(r for r, _ in results[next(iter(results))])
    print(
        f"python {platform.python_version()}, {os.cpu_count()} CPUs, {platform.platform()}; "
        f"medians of {repeat} runs (ipyparallel: up to 3)\n"
    )
    print("| contender | ready s (median) | ready s (min) | x floor | stop → no process, s (median) |")
    print("|---|---|---|---|---|")
    for name, runs in results.items():
        ready = [r for r, _ in runs]
        stops = [s for _, s in runs if s is not None]
        stop_text = f"{statistics.median(stops):.3f}" if stops else "-"
        print(
            f"| {name} | {statistics.median(ready):.3f} | {min(ready):.3f} | "
            f"{statistics.median(ready) / floor:.1f} | {stop_text} |"
        )


if __name__ == "__main__":
    main()
