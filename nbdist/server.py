"""``python -m nbdist.server``: run one task of a cluster as its own process.

    python -m nbdist.server --cluster '{"ps": ["localhost:2222"], "worker": ["localhost:2223"]}' \\
        --job ps --task 0

Without ``--cluster``, ``$TF_CONFIG`` is read (``{"cluster": ..., "task": {"type", "index"}}``).
The cluster key comes from ``$NBDIST_CLUSTER_KEY`` (hex). SIGTERM or SIGINT stop the server
cleanly; with ``--parent-pid`` it also exits when that process dies (no orphans).
Prints one line ``nbdist-server ready <task> <address> pid=<pid>`` once it serves.

``--exec`` also serves ``%%dtf_worker`` cells (`nbdist.task.exec_service`; needs a cluster
key), run on this process's main thread. With ``$NBDIST_EVENTS`` set (``tcp://127.0.0.1:port``
of a notebook's collector) the task pushes heartbeats and `nbdist.report` metrics there.
"""

import argparse
import ctypes
import json
import os
import signal
import sys
import threading
import traceback


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
                threading.Event().wait(2.0)
                os._exit(1)  # the orderly stop did not finish: no orphan either way
            threading.Event().wait(0.5)

    threading.Thread(target=watch, daemon=True, name="nbdist-parent-watch").start()


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m nbdist.server", description=__doc__.split("\n\n")[0])
    parser.add_argument("--cluster", help="ClusterSpec as JSON (default: $TF_CONFIG)")
    parser.add_argument("--job", help="this task's job name")
    parser.add_argument("--task", type=int, help="this task's index")
    parser.add_argument("--parent-pid", type=int, help="exit when this process dies")
    parser.add_argument(
        "--exec",
        action="store_true",
        help="also run %%%%dtf_worker cells sent by the notebook (signed requests only)",
    )
    parser.add_argument(
        "--delay-ms",
        type=float,
        default=0.0,
        help="make this task a straggler: it waits this long before each partition it runs",
    )
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
    try:
        server = Server(cluster, job_name=job, task_index=task)
    except (OSError, ValueError) as e:
        print(f"nbdist-server: error: {e}", file=sys.stderr, flush=True)
        return 2
    server.worker.delay_s = max(0.0, args.delay_ms) / 1000.0
    return _serve(server, args.exec)


class _Shutdown(BaseException):
    """Raised in the main thread by SIGTERM/SIGINT: leaves whatever it is doing."""


# Environment variables that set BLAS's thread count: when the user sets one, it rules.
_BLAS_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _one_blas_thread():
    """Limits numpy's BLAS to one thread in this task process, unless the user chose a count.

    Several task processes share the machine's cores, and each runs its kernels on its own
    threads already: BLAS's default (one thread per core, in every process) oversubscribes
    them. Measured on 2 cores while other processes ran: a 512x512 float32 matmul took 5.5 ms
    with BLAS's 2 threads against 2.1 ms with one.
    """
    if any(os.environ.get(v) for v in _BLAS_THREAD_VARS):
        return
    from threadpoolctl import threadpool_limits  # noqa: PLC0415 - only task processes need it

    threadpool_limits(1, user_api="blas")


def _serve(server, with_exec):
    """Serves until SIGTERM/SIGINT, then stops the server; returns the exit code (0)."""
    from nbdist.graph.device import Task  # noqa: PLC0415 - fast --help

    shutdown = _Shutdown
    service = None
    if with_exec:
        import nbdist  # noqa: PLC0415 - the facade cells see as `tf`
        from nbdist.task import exec_service  # noqa: PLC0415 - only tasks that run cells load it

        service = exec_service.install(server, tf=nbdist)
        shutdown = exec_service.Shutdown
    stopping = []

    def on_signal(signum, frame):
        if stopping:
            os._exit(1)  # a second signal: stop waiting for anything
        stopping.append(signum)
        raise shutdown

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)
    _one_blas_thread()
    try:
        task = Task(server.server_def.job_name, server.server_def.task_index).name
        os.environ["NBDIST_TASK"] = task
        if os.environ.get("NBDIST_EVENTS"):
            from nbdist.task import events  # noqa: PLC0415 - only tasks of a notebook's cluster

            events.start_task_publisher(task)
        print(f"nbdist-server ready {server.task_device} {server.address} pid={os.getpid()}", flush=True)
        if service is not None:
            service.serve_forever()
        while True:
            threading.Event().wait(3600)
    except shutdown:
        pass
    server.stop()
    return 0


if __name__ == "__main__":
    try:
        code = main()
    except SystemExit as e:  # argparse's usage errors
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    except BaseException:  # noqa: BLE001 - report, then exit: never hang on the service threads
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    from nbdist.runtime import shm  # os._exit skips atexit: unlink this process's segments now

    shm.close_pool()
    # Handler threads may be blocked in a step (waiting for a peer): exit without joining them.
    os._exit(code)
