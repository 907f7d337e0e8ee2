"""`LocalCluster`: a cluster of server processes on this machine, owned by the notebook.

One object owns the processes (as ipyparallel's `Cluster` does): it starts one
``python -m nbdist.server --exec`` per task, all at once, waits (bounded) until each prints
its ready line, and stops them politely then firmly (SIGTERM, then SIGKILL). Children are
told the notebook's PID (``--parent-pid``) and exit when it dies, even by SIGKILL; they run
in their own process group, so the kernel's interrupt button (SIGINT to the kernel's group)
does not stop them. Clusters still running when the notebook exits are stopped (atexit).

    import nbdist as tf

    with tf.LocalCluster(ps=1, worker=2) as cluster:
        with tf.device("/job:ps/task:0"):
            w = tf.Variable(1.0)
        with tf.Session(cluster.target("worker", 0)) as sess:
            sess.run(w.initializer)

A cluster key signs every message: the process's own (``$NBDIST_CLUSTER_KEY``, or the file
``$NBDIST_CLUSTER_KEY_FILE`` names) when it has one, else a random one, put in
``$NBDIST_CLUSTER_KEY`` of this process so that its Sessions sign too. With ``attach=True``
it starts nothing: it connects to the tasks of `spec` that already run elsewhere (servers
started with ``nbdist server`` on other hosts), checks that each answers, and shows them. Each task
it starts pushes events (heartbeats, `nbdist.report` metrics, output) to `LocalCluster.events`.
"""

import atexit
import collections
import contextlib
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
import weakref
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from nbdist import errors
from nbdist.graph.device import Task
from nbdist.graph.graph import Graph
from nbdist.notebook import event_stream, render
from nbdist.ops.constant_op import constant
from nbdist.runtime.cluster import ClusterSpec, is_local_host, parse_address
from nbdist.runtime.config import ConfigProto
from nbdist.runtime.net import liveness, samehost, shm, transport, wire
from nbdist.runtime.session import Session

READY_TIMEOUT_S = 30.0
STOP_GRACE_S = 0.5  # SIGTERM, then SIGKILL after this long
STATUS_TIMEOUT_S = 1.0
STDERR_LINES = 40
_PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent.parent)
# PR_SET_PDEATHSIG fires when the *thread* that started a child exits: start every child
# from one long-lived thread, so a cluster made on a short-lived thread keeps its tasks.
_spawner = ThreadPoolExecutor(1, thread_name_prefix="nbdist-spawn")
_clusters = weakref.WeakSet()
_current = []  # weakrefs to running clusters, latest last


class TaskStartError(RuntimeError):
    """A task's server process did not become ready; the message holds its stderr."""


def current():
    """The most recently started `LocalCluster` that is still running, or None."""
    for ref in reversed(_current):
        cluster = ref()
        if cluster is not None and cluster.running:
            return cluster
    return None


class _TaskProcess:
    """One server process and a thread that reads its stdout/stderr line by line."""

    def __init__(self, cluster, job, index, address):
        self.job, self.index, self.address = job, index, address
        self.name = Task(job, index).name
        self.wake = threading.Event()  # set by the ready line, or when the process closes its output
        self.is_ready = False
        self.stderr_tail = collections.deque(maxlen=STDERR_LINES)
        self.proc = _spawner.submit(
            subprocess.Popen,
            cluster._command(job, index),
            env=cluster._env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        ).result()
        self.pid = self.proc.pid
        liveness.note_process(address, self.proc)  # its exit names it dead at once (issue 36 §8)
        self._events = cluster.events
        threading.Thread(target=self._read, daemon=True, name=f"nbdist-out-{Task(job, index).label}").start()

    def _read(self):
        selector = selectors.DefaultSelector()
        for f, name in ((self.proc.stdout, "stdout"), (self.proc.stderr, "stderr")):
            selector.register(f, selectors.EVENT_READ, [name, b""])
        while selector.get_map():
            for key, _ in selector.select():
                data = os.read(key.fd, 65536)
                if not data:
                    selector.unregister(key.fileobj)
                    key.fileobj.close()
                    continue
                name, pending = key.data
                *lines, key.data[1] = (pending + data).split(b"\n")
                for line in lines:
                    self._line(name, line.decode("utf-8", "replace"))
        selector.close()
        self.wake.set()

    def _line(self, name, text):
        if name == "stdout" and not self.is_ready and text.startswith("nbdist-server ready"):
            self.is_ready = True
            self.wake.set()
            return
        if name == "stderr":
            self.stderr_tail.append(text)
        self._events.publish(
            {"kind": "stream", "task": self.name, "time": time.time(), "name": name, "text": text + "\n"}
        )

    @property
    def alive(self):
        return self.proc.poll() is None

    def stderr_text(self):
        return "\n".join(self.stderr_tail) or "(nothing on stderr)"

    def signal(self, sig):
        if self.alive:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)


class LocalCluster:
    """A cluster whose tasks are server processes on this machine (one per task).

    Args:
        **jobs: job name -> number of tasks, e.g. ``ps=1, worker=2``; each task gets a free
            port on 127.0.0.1 (``localhost:PORT``).
        spec: an explicit cluster (anything `tf.train.ClusterSpec` accepts) instead of `jobs`:
            tasks whose host is this machine's loopback are started, others only connected to.
        attach: start no task: every task of `spec` runs already (on other hosts, or started
            by hand); `start` waits until each answers, `stop` leaves them running.
        key: the cluster key (bytes or hex string; default: this process's key,
            ``$NBDIST_CLUSTER_KEY`` or ``$NBDIST_CLUSTER_KEY_FILE``'s, else 32 random bytes;
            attached without any key, messages are unsigned).
        ready_timeout_s: how long every task may take to start.
        delays_ms: ``{(job, index): milliseconds}``: make those tasks stragglers (each waits
            that long before every piece of a step it runs), to watch staleness and backup
            workers at work.

    Raises:
        ValueError: no jobs, both `jobs` and `spec`, a count that is not a positive int, or
            `attach` without `spec`.
        TaskStartError: a task did not start in time or exited (with its stderr).
        UnavailableError: (attached) a task did not answer within `ready_timeout_s`.

    Example::

        cluster = tf.LocalCluster(local=2)
        with tf.Session(cluster.target("local", 0)) as sess: ...
        cluster.stop()
    """

    def __init__(
        self, spec=None, key=None, ready_timeout_s=READY_TIMEOUT_S, delays_ms=None, attach=False, **jobs
    ):
        if attach and spec is None:
            raise ValueError("attach=True connects to running tasks: give their spec=... (their addresses)")
        self.attached = bool(attach)
        self.cluster_spec = _make_spec(spec, jobs)
        # Stragglers on purpose: {(job, index): ms} each task waits before every partition.
        self.delays_ms = {(str(j), int(i)): float(ms) for (j, i), ms in (delays_ms or {}).items()}
        self.key = _make_key(key, may_be_none=self.attached)
        self.ready_timeout_s = float(ready_timeout_s)
        self.ready_s = None  # how long the last start took
        self.events = None
        python_path = os.pathsep.join(p for p in (_PACKAGE_ROOT, os.environ.get("PYTHONPATH")) if p)
        self._env = {**os.environ, "PYTHONPATH": python_path}
        if self.key is not None:
            self._env[wire.KEY_ENV] = self.key.hex()
        self._tasks = {}
        self._heartbeats = {}
        self._lock = threading.RLock()
        self._view = None
        self.running = False
        self._was_started = False  # "stopped" rather than "not started" in the status
        self._saved_key_env = os.environ.get(wire.KEY_ENV)
        _clusters.add(self)
        self.start()

    # -- starting and stopping --------------------------------------------------------------------
    def _command(self, job, index):
        return [
            sys.executable,
            "-m",
            "nbdist.server",
            "--cluster",
            self.cluster_spec.to_json(),
            "--job",
            job,
            "--task",
            str(index),
            "--parent-pid",
            str(os.getpid()),
            "--exec",
            f"--delay-ms={self.delays_ms.get((job, index), 0)}",
        ]

    def local_tasks(self):
        """``[(job, index, address)]`` of the tasks this cluster starts (on this machine)."""
        if self.attached:
            return []
        return [(j, i, a) for j, i, a in self.cluster_spec.iter_tasks() if is_local_host(parse_address(a)[0])]

    def start(self):
        """Starts every local task (in parallel) and waits until all serve. No-op when running."""
        with self._lock:
            if self.running:
                return self
            if self.events is None or not self.events.collecting:
                self.events = event_stream.EventStream(self.key, collect=True)
                self.events.subscribe(self._on_event, kind="heartbeat")
                self._env[event_stream.EVENTS_ENV] = self.events.address
            if self.key is not None:
                os.environ[wire.KEY_ENV] = self.key.hex()
            started = time.monotonic()
            try:
                for job, index, address in self.local_tasks():
                    self._tasks[(job, index)] = _TaskProcess(self, job, index, address)
                for task in self._tasks.values():
                    self._wait_ready(task, started)
                if self.attached:
                    self._wait_answering(started)
            except BaseException:
                self._terminate(list(self._tasks.values()))
                self._tasks.clear()
                self._restore_key_env()
                raise
            self.running = self._was_started = True
            _current.append(weakref.ref(self))
            event_stream.activate(self.events)
            self.ready_s = time.monotonic() - started
            return self

    def _wait_ready(self, task, started):
        remaining = self.ready_timeout_s - (time.monotonic() - started)
        task.wake.wait(max(0.0, remaining))
        if task.is_ready and task.alive:
            return
        if not task.is_ready and task.wake.is_set():
            # Its pipes closed first: the process is exiting; let it finish to read its code.
            with contextlib.suppress(subprocess.TimeoutExpired):
                task.proc.wait(2.0)
        if task.alive:
            task.signal(signal.SIGKILL)
            task.proc.wait(5)
            what = f"did not become ready within {self.ready_timeout_s:.0f} s (killed it)"
        else:
            task.proc.wait(5)
            what = f"exited with code {task.proc.returncode}"
        time.sleep(0.05)  # let the reader drain the last stderr lines
        raise TaskStartError(f"task {task.name} at {task.address} {what}; its stderr:\n{task.stderr_text()}")

    def _wait_answering(self, started):
        """Returns once every task of the spec answers a ``Ping`` (bounded by `ready_timeout_s`).

        Raises:
            UnavailableError: a task that never answered (its job, index, address, time waited).
            UnauthenticatedError: a task refused this process (another key, or no CURVE key).
        """
        for job, index, address in self.cluster_spec.iter_tasks():
            name = Task(job, index).name
            remaining = max(0.1, self.ready_timeout_s - (time.monotonic() - started))
            channel = transport.channel_to(address, name, self.key)
            try:
                channel.call("Ping", {}, timeout_s=remaining, connect_timeout_s=remaining)
            except errors.DeadlineExceededError as e:
                transport.drop_channel(address, self.key)
                raise errors.UnavailableError(
                    None, None, f"cannot attach to {name} at {address}: {e.message}; is its server running?"
                ) from None
            except errors.OpError:
                transport.drop_channel(address, self.key)
                raise

    def stop(self):
        """Stops every task: SIGTERM, SIGKILL after `STOP_GRACE_S`; returns when none is left.

        Idempotent. The event stream stops collecting; its history stays readable.
        """
        was_running = self._stop_tasks()
        if was_running and self.key is not None:
            self._restore_key_env()
        if self.events is not None:
            self.events.close()

    def _stop_tasks(self):
        """What `stop` and `restart` share: ends the processes, drops this thread's channels
        to them, leaves the event stream open but inactive, shows the final status.
        Returns whether the cluster was running."""
        with self._lock:
            tasks = list(self._tasks.values())
            self._tasks.clear()
            was_running, self.running = self.running, False
        self._terminate(tasks)
        for task in tasks:
            liveness.forget_process(task.address, task.proc)
        for _, _, address in self.cluster_spec.iter_tasks():
            transport.drop_channel(address, self.key)
        view, self._view = self._view, None
        if view is not None:
            view.finish(self)
        if was_running:
            event_stream.deactivate(self.events)
        return was_running

    def _restore_key_env(self):
        if self.key is None:
            return
        if os.environ.get(wire.KEY_ENV) != self.key.hex():
            return  # another cluster has set its own key since
        if self._saved_key_env is None:
            os.environ.pop(wire.KEY_ENV, None)
        else:
            os.environ[wire.KEY_ENV] = self._saved_key_env

    @staticmethod
    def _terminate(tasks):
        for task in tasks:
            task.signal(signal.SIGCONT)  # a stopped (SIGSTOP) process cannot act on SIGTERM
            task.signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        for task in tasks:
            try:
                task.proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                task.signal(signal.SIGKILL)
        for task in tasks:
            task.proc.wait()
        shm.sweep_leftovers()  # what tasks that were SIGKILLed leave: shared-memory segments,
        samehost.sweep_stale()  # ipc socket files

    def restart(self):
        """Stops every task and starts them again at the same addresses, with the same key."""
        self._stop_tasks()
        return self.start()

    def _task(self, job, index):
        if self.attached:
            raise ValueError(
                f"{Task(job, index).label} was not started by this cluster (attached to running "
                "tasks): stop or restart it on its own host"
            )
        if (job, index) not in self._tasks:
            known = ", ".join(Task(*t).label for t in self._tasks) or "none (the cluster is stopped)"
            raise ValueError(
                f"no running local task {Task(job, index).label} in this cluster; its tasks: {known}"
            )
        return self._tasks[(job, index)]

    def kill(self, job, task_index):
        """Kills one task's process with SIGKILL (for fault-tolerance demos); waits for it to exit."""
        task = self._task(job, task_index)
        task.signal(signal.SIGKILL)
        task.proc.wait(5)

    def restart_task(self, job, task_index):
        """Starts one task again (killing it first if it runs), at the same address; returns its
        pid once a session through every other task of this cluster reaches it.

        Raises:
            TaskStartError: it did not start in time (with its stderr).
            OpError: a session through another task did not reach it (naming both).
        """
        with self._lock:
            old = self._task(job, task_index)
            self._terminate([old])
            transport.drop_channel(old.address, self.key)
            task = self._tasks[(job, task_index)] = _TaskProcess(self, job, task_index, old.address)
            started = time.monotonic()
            self._wait_ready(task, started)
            self._wait_reached(task, started)
        return task.pid

    def _wait_reached(self, task, started):
        """Runs an op on `task` in a session through every other task (within `ready_timeout_s`),
        so that their masters' connections to its old process are made again."""
        graph = Graph()
        with graph.as_default(), graph.device(Task(task.job, task.index).device):
            probe = constant(0, name="restart_probe")
        for other in [t for t in self._tasks.values() if t is not task]:
            left_ms = max(1, int((self.ready_timeout_s - (time.monotonic() - started)) * 1000))
            config = ConfigProto(operation_timeout_in_ms=left_ms)
            with Session(self.target(other.job, other.index), graph=graph, config=config) as sess:
                sess.run(probe)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    # -- what is running -------------------------------------------------------------------------
    def target(self, job, task_index=0):
        """The session target of a task's master, ``"zmq://host:port"``.

        Raises:
            ValueError: no such job or task (the valid ones are named).
        """
        return f"zmq://{self.cluster_spec.task_address(job, task_index)}"

    @property
    def pids(self):
        """``{(job, index): pid}`` of the task processes this cluster started."""
        with self._lock:
            return {k: t.pid for k, t in self._tasks.items()}

    def _on_event(self, event):  # (a heartbeat)
        self._heartbeats[event.get("task")] = (time.monotonic(), event.get("rss_bytes", 0))

    def status(self):
        """One dict per task (``job``, ``index``, ``address``, ``pid``, ``alive``, ``heartbeat_age_s``)
        plus its server's Status (``rss_bytes``, ``steps_run``, ``ops_placed``, ``variables``)
        when it answers within `STATUS_TIMEOUT_S`; ``error`` says why when it does not."""
        rows = []
        with self._lock:
            tasks = dict(self._tasks)
        for job, index, address in self.cluster_spec.iter_tasks():
            task = tasks.get((job, index))
            name = Task(job, index).name
            seen = self._heartbeats.get(name)
            row = {
                "job": job,
                "index": index,
                "address": address,
                "pid": task.pid if task else None,
                "alive": False,
                "heartbeat_age_s": time.monotonic() - seen[0] if seen else None,
            }
            if task is not None and not task.alive:
                row["error"] = _exit_text(task.proc.returncode)
            elif task is None and not self.attached and is_local_host(parse_address(address)[0]):
                row["error"] = "stopped" if self._was_started else "not started"
            rows.append(row)
        self._ask_status([r for r in rows if "error" not in r])
        return rows

    def _ask_status(self, rows):
        channels = [
            (r, transport.channel_to(r["address"], Task(r["job"], r["index"]).name, self.key)) for r in rows
        ]
        sent = [(r, ch, ch.send("Status", {})) for r, ch in channels]
        deadline = time.monotonic() + STATUS_TIMEOUT_S
        for row, ch, request_id in sent:
            try:
                reply = ch.recv_reply(request_id, deadline, STATUS_TIMEOUT_S, "the reply to Status")
            except errors.OpError as e:
                row["error"] = e.message
                transport.drop_channel(row["address"], self.key)
                continue
            reply = {k: v for k, v in reply.items() if k not in ("v", "type", "id")}
            row.update(reply, alive=True, pid=row["pid"] or reply.get("pid"))

    def __repr__(self):
        jobs = " ".join(f"{j}={self.cluster_spec.num_tasks(j)}" for j in self.cluster_spec.jobs)
        state = "running" if self.running else "stopped"
        if self.attached:
            state = f"attached, {state}"
        addresses = ", ".join(a for _, _, a in self.cluster_spec.iter_tasks())
        return f"<LocalCluster {jobs} ({state}) at {addresses}>"

    # -- the status view ----------------------------------------------------------------------------
    def status_view(self, refresh_s=1.0):
        """The live status widget (an ipywidgets HTML table, CSS class ``nbdist-cluster-status``),
        refreshed every `refresh_s` by a background thread while the cluster runs; None
        when ipywidgets cannot be imported."""
        if self._view is None:
            from nbdist.notebook.widgets.cluster_status import ClusterStatusView  # noqa: PLC0415 - widgets on use

            try:
                self._view = ClusterStatusView(self, refresh_s)
            except ImportError:
                return None
        return self._view.widget

    def status_snapshot(self):
        """The status now, as a table that stays as it is (`render.StatusSnapshot`: HTML and
        text, no widget): what a notebook shows to keep one moment, e.g. just after a task was
        killed, where the live view goes on changing."""
        return render.StatusSnapshot(self.status(), self)

    def display_status(self):
        """Shows the cluster once (IPython ``display``): see `_repr_mimebundle_`."""
        from IPython.display import display  # noqa: PLC0415 - notebook-only dependency

        display(self)

    def _repr_mimebundle_(self, include=None, exclude=None):
        """The cluster's one rich display: the live status widget in a Jupyter kernel, with the
        status as an HTML table and as a text table for frontends without widgets."""
        rows = self.status()
        bundle = {"text/plain": render.status_text(rows, self), "text/html": render.status_html(rows, self)}
        widget = self.status_view() if _in_kernel() else None
        if widget is not None:
            bundle.update((k, v) for k, v in (widget._repr_mimebundle_() or {}).items() if k != "text/plain")
        return bundle


def _exit_text(returncode):
    """``process exited with code -9 (killed by SIGKILL)``: what the status says of a dead task."""
    text = f"process exited with code {returncode}"
    if returncode < 0:
        with contextlib.suppress(ValueError):
            text += f" (killed by {signal.Signals(-returncode).name})"
    return text


def _in_kernel():
    try:
        from IPython import get_ipython  # noqa: PLC0415
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


# -- input forms ---------------------------------------------------------------------------------
def _make_spec(spec, jobs):
    if spec is not None and jobs:
        raise ValueError(f"give either job counts ({jobs}) or spec=..., not both")
    if spec is not None:
        return ClusterSpec(spec)
    if not jobs:
        raise ValueError(
            "LocalCluster needs job sizes, e.g. LocalCluster(local=2) or LocalCluster(ps=1, worker=2)"
        )
    for job, count in jobs.items():
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ValueError(f"job {job!r} needs a positive number of tasks, got {count!r}")
    ports = samehost.free_ports(sum(jobs.values()))
    return ClusterSpec({job: [f"localhost:{ports.pop()}" for _ in range(n)] for job, n in jobs.items()})


def _make_key(key, may_be_none=False):
    if key is None:
        key = wire.default_key()
        return key if key is not None or may_be_none else wire.new_key()
    if isinstance(key, str):
        try:
            key = bytes.fromhex(key)
        except ValueError:
            raise ValueError(f"key must be bytes or a hex string, got {key!r}") from None
    if not isinstance(key, bytes) or not key:
        raise TypeError(f"key must be non-empty bytes or a hex string, got {key!r}")
    return key


@atexit.register
def _stop_all_clusters():
    for cluster in list(_clusters):
        cluster.stop()
