"""Per-task code execution, the notebook side: sending ``%%dtf_worker`` cells to tasks.

`run_cell` sends the cell to several tasks at once, prints their output as it arrives
(``[worker:0] ...``), and raises the first task's error (`RemoteError`, also an instance of
the remote exception's class when it is a builtin or a `tf.errors` one). The task side
(the ``Exec`` service in each task's process) is `nbdist.in_task.exec_service`.
"""

import builtins
import contextlib
import secrets
import sys
import time

from nbdist import errors
from nbdist.graph.device import Task
from nbdist.in_task.exec_service import POLL_WAIT_S
from nbdist.runtime.net import transport
from nbdist.runtime.protocol import ExecInterrupt, ExecPoll, ExecRequest

INTERRUPT_GRACE_S = 5.0


class RemoteError(RuntimeError):
    """A cell raised on one or more tasks; IPython shows the tasks' own tracebacks.

    When the remote exception is a builtin or a `tf.errors` class, the raised error is
    also an instance of it (``except ZeroDivisionError`` works in the notebook).

    Attributes:
        failures: one dict per failed task, in task order: ``task`` (``"worker:0"``),
            ``ename``, ``evalue``, ``traceback`` (text).
        task, ename, evalue: those of the first failure.
    """

    def __init__(self, failures):
        self.failures = list(failures)
        first = self.failures[0]
        self.task, self.ename, self.evalue = first["task"], first["ename"], first["evalue"]
        self.remote_traceback = first.get("traceback", "")
        self._message, self._node_def, self._op = str(self), None, None  # as a tf.errors.OpError
        super().__init__(str(self))

    def __str__(self):
        text = f"[{self.task}] {self.ename}: {self.evalue}"
        others = [f"[{f['task']}] {f['ename']}" for f in self.failures[1:]]
        if others:
            text += f" (also failed: {', '.join(others)})"
        return text

    def __reduce__(self):
        return RemoteError, (self.failures,)

    def _render_traceback_(self):
        lines = []
        for f in self.failures:
            lines.append(f"[{f['task']}] Remote traceback:")
            lines.extend(
                f"[{f['task']}] {line}"
                for line in (f.get("traceback") or f"{f['ename']}: {f['evalue']}").rstrip("\n").splitlines()
            )
        return lines


_typed_errors = {}


def remote_error(failures):
    """The `RemoteError` to raise for `failures`, typed after the first one when possible."""
    first = failures[0]
    module = {"builtins": builtins, "nbdist.errors": errors}.get(first.get("module"))
    base = getattr(module, first["ename"], None) if module is not None else None
    cls = RemoteError
    if isinstance(base, type) and issubclass(base, Exception):
        cls = _typed_errors.get(base)
        if cls is None:
            try:
                cls = type(base.__name__, (RemoteError, base), {"__module__": __name__})
            except TypeError:  # incompatible instance layouts (rare builtins): untyped
                cls = RemoteError
            _typed_errors[base] = cls
    return cls(failures)


class RemoteValue:
    """A last-expression result that could not travel; shows the task's ``repr`` of it."""

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


class TaskResults(dict):
    """Last-expression values per task (``{"worker:0": value, ...}``), shown as ``Out[worker:0]``."""

    def _repr_pretty_(self, p, cycle):
        for i, (task, value) in enumerate(self.items()):
            if i:
                p.break_()
            p.text(f"Out[{task}]: ")
            p.pretty(value)


class _Printer:
    """Writes a task's output line by line with a ``[worker:0] `` prefix.

    Whole lines only, so that the lines of tasks printing at once do not mix; a partial
    line is written when it has waited `PARTIAL_LINE_S`, or at the end of the cell.
    """

    PARTIAL_LINE_S = 1.0

    def __init__(self, label, streams):
        self.prefix = f"[{label}] "
        self.streams = streams
        self.pending = {}  # stream name -> (partial line, since)

    def write(self, name, text):
        partial, since = self.pending.pop(name, ("", time.monotonic()))
        *lines, rest = (partial + text).split("\n")
        if lines:
            self._emit(name, "".join(f"{self.prefix}{line}\n" for line in lines))
            since = time.monotonic()
        if rest:
            self.pending[name] = (rest, since)

    def flush(self, older_than_s=0.0):
        """Writes the partial lines that have waited at least `older_than_s`."""
        now = time.monotonic()
        for name, (partial, since) in list(self.pending.items()):
            if now - since >= older_than_s:
                del self.pending[name]
                self._emit(name, f"{self.prefix}{partial}\n")

    def _emit(self, name, text):
        stream = self.streams.get(name) or self.streams["stdout"]
        stream.write(text)
        stream.flush()


class _RemoteRun:
    def __init__(self, label, task_name, address, key, printer):
        self.label = label
        self.channel = transport.channel_to(address, task_name, key)
        self.printer = printer
        self.offset = 0
        self.done = False
        self.result = None
        self.error = None
        self.request_id = None

    def absorb(self, body):
        for name, text in body.get("output", []):
            self.printer.write(name, text)
        self.offset = body.get("offset", self.offset)
        if body.get("state") == "done":
            self.done, self.result, self.error = True, body.get("result"), body.get("error")
            self.printer.flush()
        else:
            self.printer.flush(older_than_s=self.printer.PARTIAL_LINE_S)

    def fail(self, exc):
        self.printer.flush()
        self.done = True
        self.error = {
            "ename": type(exc).__name__,
            "module": type(exc).__module__,
            "evalue": exc.message if isinstance(exc, errors.OpError) else str(exc),
            "traceback": "",
        }


def run_cell(tasks, code, key, timeout_s=None, streams=None, poll_wait_s=POLL_WAIT_S, cancel=None):
    """Runs `code` on every task at once and waits for all of them.

    Args:
        tasks: ``[(job_name, task_index, address), ...]`` of servers started with ``--exec``.
        code: the cell's source.
        key: the cluster key (bytes) to sign requests with.
        timeout_s: interrupt the tasks and raise `TimeoutError` after this long (None: no bound).
        streams: ``{"stdout": file, "stderr": file}`` for the prefixed output (default: sys's).
        poll_wait_s: how long one poll may wait for new output (the output's latency bound).
        cancel: a `threading.Event` another thread may set to interrupt the tasks (within
            about `poll_wait_s`); `run_cell` then raises `tf.errors.CancelledError`.

    Returns:
        A `TaskResults` of the tasks whose last line is an expression, or None if none is.

    Raises:
        RemoteError: (typed after the remote error) if the cell raised on any task.
        KeyboardInterrupt: after interrupting every task, when the notebook was interrupted.
        TimeoutError: when `timeout_s` passed (the tasks were interrupted).
        tf.errors.CancelledError: when `cancel` was set (the tasks were interrupted).
        tf.errors.UnavailableError: a task could not be reached.
        tf.errors.FailedPreconditionError: a task's server runs no cells (started without
            ``--exec``, e.g. one an attached cluster found running).
    """
    streams = streams or {"stdout": sys.stdout, "stderr": sys.stderr}
    exec_id = secrets.token_hex(8)
    runs = []
    try:
        for job, index, address in tasks:
            task = Task(job, index)
            run = _RemoteRun(task.label, task.name, address, key, _Printer(task.label, streams))
            try:
                request = ExecRequest(exec_id, code)
                run.channel.call(request.TYPE, request.body(), timeout_s=30.0)
            except errors.InvalidArgumentError as e:
                if _NO_EXEC_SERVICE not in e.message:
                    raise
                raise _started_without_exec(task, address) from None
            runs.append(run)
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        timed_out = not _poll_until_done(runs, exec_id, deadline, poll_wait_s, cancel)
    except BaseException:  # interrupted, or a task refused the cell: stop the ones already running
        _interrupt(runs, exec_id, poll_wait_s)
        raise
    if cancel is not None and cancel.is_set() and not all(r.done for r in runs):
        _interrupt(runs, exec_id, poll_wait_s)
        running = ", ".join(r.label for r in runs)
        raise errors.CancelledError(None, None, f"cancelled while running on {running}; interrupted them")
    if timed_out:
        _interrupt(runs, exec_id, poll_wait_s)
        still = [r.label for r in runs if not r.done or (r.error or {}).get("ename") == "KeyboardInterrupt"]
        raise TimeoutError(f"%%dtf_worker: {', '.join(still)} still running after {timeout_s} s; interrupted")
    return _outcome(runs)


_NO_EXEC_SERVICE = "unknown request type 'Exec'"  # a server's answer when it has no exec service


def _started_without_exec(task, address):
    """The error for a task whose server runs no cells (started elsewhere, without ``--exec``)."""
    return errors.FailedPreconditionError(
        None,
        None,
        f"{task.name} at {address} runs no %%dtf_worker cells: its server was started without --exec "
        "(an attached cluster's servers are started elsewhere). Restart that server with --exec and "
        f"the cluster key, e.g. `python -m nbdist.server --cluster JSON --job {task.job} "
        f"--task {task.index} --exec --key-file PATH` (`nbdist keys new DIR` writes a key file; "
        "this notebook needs the same key: $NBDIST_CLUSTER_KEY_FILE=PATH)",
    )


def _poll_until_done(runs, exec_id, deadline, poll_wait_s, cancel=None):
    """Polls the unfinished runs until all are done (True) or `deadline` passes or `cancel`
    is set (False)."""
    while True:
        pending = [r for r in runs if not r.done]
        if not pending:
            return True
        if deadline is not None and time.monotonic() >= deadline:
            return False
        if cancel is not None and cancel.is_set():
            return False
        for r in pending:
            poll = ExecPoll(exec_id, r.offset, poll_wait_s)
            r.request_id = r.channel.send(poll.TYPE, poll.body())
        for r in pending:
            try:
                msg = r.channel.recv_reply(
                    r.request_id,
                    time.monotonic() + poll_wait_s + 30.0,
                    transport.CONNECT_TIMEOUT_S,
                    "the reply to ExecPoll",
                )
            except errors.OpError as e:
                r.fail(e)
                continue
            r.absorb(msg)


def _interrupt(runs, exec_id, poll_wait_s):
    """Interrupts every unfinished run and waits (bounded) until they report done."""
    for r in runs:
        if not r.done:
            try:
                interrupt = ExecInterrupt(exec_id)
                r.channel.call(interrupt.TYPE, interrupt.body(), timeout_s=5.0)
            except errors.OpError as e:
                r.fail(e)
    with contextlib.suppress(KeyboardInterrupt):  # interrupted twice: stop waiting
        _poll_until_done(runs, exec_id, time.monotonic() + INTERRUPT_GRACE_S, poll_wait_s)


def _outcome(runs):
    failures = [{"task": r.label, **r.error} for r in runs if r.error]
    if failures:
        raise remote_error(failures)
    results = TaskResults()
    for r in runs:
        if r.result is not None:
            results[r.label] = r.result["value"] if "value" in r.result else RemoteValue(r.result["repr"])
    return results or None
