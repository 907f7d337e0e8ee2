"""``python -m nbdist.server``: run one task of a cluster as its own process.

    python -m nbdist.server --cluster '{"ps": ["localhost:2222"], "worker": ["localhost:2223"]}' \\
        --job ps --task 0

Without ``--cluster``, ``$TF_CONFIG`` is read (``{"cluster": ..., "task": {"type", "index"}}``).
The cluster key comes from ``$NBDIST_CLUSTER_KEY`` (hex). SIGTERM or SIGINT stop the server
cleanly; with ``--parent-pid`` it also exits when that process dies (no orphans).
Prints one line ``nbdist-server ready <task> <address> pid=<pid>`` once it serves.
"""

import argparse
import ctypes
import json
import os
import signal
import sys
import threading


def _die_with_parent(parent_pid):
    """Exit when `parent_pid` dies: PR_SET_PDEATHSIG on Linux, plus a polling watchdog."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass
    if os.getppid() != parent_pid:  # the parent died before we got here
        os.kill(os.getpid(), signal.SIGTERM)

    def watch():
        while True:
            try:
                os.kill(parent_pid, 0)
            except ProcessLookupError:
                os.kill(os.getpid(), signal.SIGTERM)
                return
            threading.Event().wait(0.5)

    threading.Thread(target=watch, daemon=True, name="nbdist-parent-watch").start()


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m nbdist.server", description=__doc__.split("\n\n")[0])
    parser.add_argument("--cluster", help="ClusterSpec as JSON (default: $TF_CONFIG)")
    parser.add_argument("--job", help="this task's job name")
    parser.add_argument("--task", type=int, help="this task's index")
    parser.add_argument("--parent-pid", type=int, help="exit when this process dies")
    args = parser.parse_args(argv)

    from nbdist.runtime.cluster import ClusterSpec, cluster_from_tf_config  # noqa: PLC0415 - fast --help
    from nbdist.runtime.server import Server  # noqa: PLC0415

    if args.cluster:
        try:
            cluster = ClusterSpec(json.loads(args.cluster))
        except (json.JSONDecodeError, ValueError, TypeError) as e:
            parser.error(f"--cluster: {e}")
        job, task = args.job, args.task
    elif os.environ.get("TF_CONFIG"):
        cluster, job, task = cluster_from_tf_config()
        job = args.job or job
        task = args.task if args.task is not None else task
    else:
        parser.error("give --cluster JSON --job NAME --task I, or set $TF_CONFIG")
    if args.parent_pid:
        _die_with_parent(args.parent_pid)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        server = Server(cluster, job_name=job, task_index=task)
    except (OSError, ValueError) as e:
        print(f"nbdist-server: error: {e}", file=sys.stderr, flush=True)
        return 2
    print(f"nbdist-server ready {server.task_device} {server.address} pid={os.getpid()}", flush=True)
    while not stop.wait(0.5):
        pass
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
