"""``python -m nbdist.server`` (also ``nbdist server``): run one task of a cluster as its own process.

    python -m nbdist.server --cluster '{"ps": ["host0:2222"], "worker": ["host1:2222"]}' \\
        --job ps --task 0 --key-file ~/.nbdist/cluster.key --curve-key-file ~/.nbdist/curve.key_secret

Without ``--cluster``, ``$TF_CONFIG`` is read (``{"cluster": ..., "task": {"type", "index"}}``).
The server binds the host of its own cluster entry (so on several machines each runs on the
host its entry names); ``--bind IP`` binds another interface on the same port (``0.0.0.0``:
every interface; a pod's own IP). The cluster key signs every message: ``--key-file`` (or
``$NBDIST_CLUSTER_KEY_FILE``) names a file of mode 0600 holding it, never the secret itself
on the command line; ``$NBDIST_CLUSTER_KEY`` (hex) also works. ``--curve-key-file`` (or
``$NBDIST_CURVE_KEY_FILE``) encrypts with CURVE: `nbdist keys new DIR` makes both files.
SIGTERM or SIGINT stop the server cleanly; with ``--parent-pid`` it also exits when that
process dies (no orphans). Prints one line ``nbdist-server ready <task> <address> pid=<pid>
BLAS threads <n> (<why>)`` once it serves: the thread policy's choice (`nbdist.runtime.threads`).

``--exec`` also serves ``%%dtf_worker`` cells (`nbdist.in_task.exec_service`; needs a cluster
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

    def parent_gone():
        # Re-parenting happens when the parent dies; kill(pid, 0) alone would see a killed
        # parent as alive until whoever started it reaps it (a zombie answers it).
        if os.getppid() != parent_pid:
            return True
        try:
            os.kill(parent_pid, 0)
        except ProcessLookupError:
            return True
        return False

    def watch():
        while not parent_gone():
            threading.Event().wait(0.5)
        os.kill(os.getpid(), signal.SIGTERM)
        threading.Event().wait(2.0)
        os._exit(1)  # the orderly stop did not finish: no orphan either way

    threading.Thread(target=watch, daemon=True, name="nbdist-parent-watch").start()


def main(argv=None, prog="python -m nbdist.server"):
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    parser.add_argument("--cluster", help="ClusterSpec as JSON (default: $TF_CONFIG)")
    parser.add_argument("--job", help="this task's job name")
    parser.add_argument("--task", type=int, help="this task's index")
    parser.add_argument(
        "--bind",
        metavar="HOST",
        help="bind this interface instead of the host of the task's cluster entry, on the same port "
        "(0.0.0.0 or :: for every interface; a pod's own IP)",
    )
    parser.add_argument(
        "--key-file",
        metavar="PATH",
        help="the cluster key (hex, mode 0600) that signs every message (default: $NBDIST_CLUSTER_KEY_FILE)",
    )
    parser.add_argument(
        "--curve-key-file",
        metavar="PATH",
        help="the cluster's CURVE keypair (mode 0600): encrypt every connection "
        "(default: $NBDIST_CURVE_KEY_FILE)",
    )
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
    from nbdist.runtime.server_lib import Server  # noqa: PLC0415

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
        _use_key_files(args.key_file, args.curve_key_file)
        server = Server(cluster, job_name=job, task_index=task, bind_host=args.bind)
    except (OSError, ValueError) as e:
        print(f"nbdist-server: error: {e}", file=sys.stderr, flush=True)
        return 2
    server.worker.delay_s = max(0.0, args.delay_ms) / 1000.0
    return _serve(server, args.exec)


def _use_key_files(key_file, curve_key_file):
    """Makes this process (its server, exec service and events alike) use the given key files:
    they go where every part of nbdist looks, the environment; each is read once now, so a
    file that cannot be used is reported before the server starts.

    Raises:
        ValueError: a file is missing, malformed or readable by others (`KeyFileError`).
    """
    from nbdist.runtime.net import security  # noqa: PLC0415 - fast --help

    if key_file:
        os.environ.pop(security.KEY_ENV, None)  # the file given on the command line rules
        os.environ[security.KEY_FILE_ENV] = os.path.abspath(os.path.expanduser(key_file))
    if curve_key_file:
        os.environ[security.CURVE_KEY_FILE_ENV] = os.path.abspath(os.path.expanduser(curve_key_file))
    security.signing_key()
    security.curve_keys()


class _Shutdown(BaseException):
    """Raised in the main thread by SIGTERM/SIGINT: leaves whatever it is doing."""


def _serve(server, with_exec):
    """Serves until SIGTERM/SIGINT, then stops the server; returns the exit code (0)."""
    from nbdist.graph.device import Task  # noqa: PLC0415 - fast --help

    shutdown = _Shutdown
    service = None
    if with_exec:
        import nbdist  # noqa: PLC0415 - the facade cells see as `tf`
        from nbdist.in_task import exec_service  # noqa: PLC0415 - only tasks that run cells load it

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
    try:
        task = Task(server.server_def.job_name, server.server_def.task_index).name
        os.environ["NBDIST_TASK"] = task
        if os.environ.get("NBDIST_EVENTS"):
            from nbdist.in_task import publisher  # noqa: PLC0415 - only tasks of a notebook's cluster

            publisher.start_task_publisher(task)
        print(
            f"nbdist-server ready {server.task_device} {server.address} pid={os.getpid()} "
            f"{server.threads.describe()}",
            flush=True,
        )
        if server.bind_address != server.address:
            print(f"nbdist-server: bound to {server.bind_address}", file=sys.stderr, flush=True)
        if service is not None:
            service.serve_forever()
        while True:
            threading.Event().wait(3600)
    except shutdown:
        pass
    server.stop()
    from nbdist.in_task import publisher  # noqa: PLC0415 - (loaded already when it holds any event)

    publisher.flush()  # the events held back for a batch: `run` exits without atexit
    return 0


def run(argv=None, prog="python -m nbdist.server"):
    """`main`, then exits the process with its code (never returns).

    Handler threads may be blocked in a step (waiting for a peer): the process exits without
    joining them, after unlinking its shared-memory segments (``os._exit`` skips atexit).
    """
    try:
        code = main(argv, prog)
    except SystemExit as e:  # argparse's usage errors
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    except BaseException:  # noqa: BLE001 - report, then exit: never hang on the service threads
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    from nbdist.runtime.net import shm  # noqa: PLC0415

    shm.close_pool()
    os._exit(code)


if __name__ == "__main__":
    run()
