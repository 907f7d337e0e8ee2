"""Per-task code execution: the service behind ``%%dtf_worker`` and its notebook-side client.

The service runs inside a task's server process (``python -m nbdist.server --exec``).
It adds three requests to the server (its `ExecService.rpc_table`, via `Server.add_service`):

- ``Exec {exec_id, code}``: queue a cell; the process's main thread runs it in the task's
  persistent namespace (``server``, ``cluster``, ``job_name``, ``task_index``, ``tf``);
- ``ExecPoll {exec_id, offset, wait_s}``: the output written since `offset`, and once the
  cell is done its last-expression result or its error with the remote traceback. The
  reply waits up to `wait_s` for something new (long poll: output arrives live);
- ``ExecInterrupt {exec_id}``: raise `KeyboardInterrupt` in the running cell (a signal to the
  main thread, so blocking calls such as ``time.sleep`` are interrupted too).

Running code is what the cluster key is for: the service refuses ``Exec`` unless the
server checks signatures (it has a key), so only the notebook that holds the key runs code.

On the notebook side, `run_cell` sends the cell to several tasks at once, prints their
output as it arrives (``[worker:0] ...``), and raises the first task's error (`RemoteError`,
also an instance of the remote exception's class when it is a builtin or a `tf.errors` one).
"""

import ast
import builtins
import collections
import contextlib
import io
import linecache
import secrets
import signal
import sys
import threading
import time
import traceback

import numpy as np

from nbdist import errors
from nbdist.graph.device import Task
from nbdist.notebook import events
from nbdist.runtime import serving, transport

POLL_WAIT_S = 0.2
MAX_REPLY_CHARS = 1 << 20  # output per poll reply; the rest comes with the next poll
MAX_RESULT_BYTES = 16 << 20  # larger last-expression values come back as their repr only
KEPT_EXECUTIONS = 16
INTERRUPT_GRACE_S = 5.0


# =============================================================================== the task side
class _Execution:
    """One cell on one task: its output chunks, state and outcome (shared with poll threads)."""

    def __init__(self, exec_id, code):
        self.id = exec_id
        self.code = code
        self.cond = threading.Condition()
        self.chunks = []  # [name, text], from index `base` on
        self.base = 0
        self.state = "queued"  # -> running -> done
        self.result = None
        self.error = None

    def write(self, name, text):
        with self.cond:
            self.chunks.append([name, text])
            self.cond.notify_all()

    def finish(self, result=None, error=None):
        with self.cond:
            self.state, self.result, self.error = "done", result, error
            self.cond.notify_all()

    def poll(self, offset, wait_s):
        """The reply body for a poll from `offset` (chunks before it are dropped: delivered)."""
        with self.cond:
            delivered = min(max(offset - self.base, 0), len(self.chunks))
            del self.chunks[:delivered]
            self.base += delivered
            if not self.chunks and self.state != "done":
                self.cond.wait(wait_s)
            output, size, taken = [], 0, 0
            for name, text in self.chunks:
                if size >= MAX_REPLY_CHARS:
                    break
                if output and output[-1][0] == name:
                    output[-1][1] += text
                else:
                    output.append([name, text])
                size += len(text)
                taken += 1
            done = self.state == "done" and taken == len(self.chunks)
            state = "done" if done else ("queued" if self.state == "queued" else "running")
            body = {"output": output, "offset": self.base + taken, "state": state}
            if done:
                body.update(result=self.result, error=self.error)
            return body


class _CellStream(io.TextIOBase):
    """``sys.stdout``/``sys.stderr`` while a cell runs: text goes to the execution (and events)."""

    def __init__(self, execution, name):
        super().__init__()
        self._execution = execution
        self.name = name

    @property
    def encoding(self):
        return "utf-8"

    def writable(self):
        return True

    def isatty(self):
        return False

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if text:
            self._execution.write(self.name, text)
            publisher = events.task_publisher()
            if publisher is not None:
                publisher.publish({"kind": "stream", "time": time.time(), "name": self.name, "text": text})
        return len(text)


class Shutdown(BaseException):
    """Raised in the main thread when the server process is asked to stop."""


class ExecService:
    """Runs cells sent by the notebook on this process's main thread, one at a time.

    Args:
        server: the `nbdist.runtime.server.Server` of this task (exposed to cells as ``server``).
    """

    def __init__(self, server):
        self.server = server
        spec = server.server_def
        self.job_name, self.task_index = spec["job_name"], spec["task_index"]
        self.task = Task(self.job_name, self.task_index)
        self.label = self.task.label
        self._lock = threading.Lock()
        self._executions = collections.OrderedDict()
        self._queue = collections.deque()
        self._wake = threading.Event()
        self._current = None
        self._interrupt_id = None
        self._main_ident = threading.main_thread().ident
        self._namespace = None

    # -- requests (server pool threads) ----------------------------------------------------------
    def rpc_table(self):
        """The requests this service answers (on the server's pool: they may wait)."""
        return {
            "Exec": serving.Rpc(lambda msg, responder: self.handle_exec(self.server, msg)),
            "ExecPoll": serving.Rpc(lambda msg, responder: self.handle_poll(self.server, msg)),
            "ExecInterrupt": serving.Rpc(lambda msg, responder: self.handle_interrupt(self.server, msg)),
        }

    def handle_exec(self, server, msg):
        if not server.signed:
            raise errors.PermissionDeniedError(
                None,
                None,
                f"Exec refused by {server.task_device}: the server has no cluster key, so "
                "requests are not authenticated; start it with $NBDIST_CLUSTER_KEY set (LocalCluster does)",
            )
        exec_id, code = str(msg["exec_id"]), msg["code"]
        if not isinstance(code, str):
            raise errors.InvalidArgumentError(
                None, None, f"Exec code must be a string, got {type(code).__name__}"
            )
        with self._lock:
            busy = self._current or next((e for e in self._queue if e.state == "queued"), None)
            if busy is not None:
                raise errors.FailedPreconditionError(
                    None,
                    None,
                    f"{self.task.name} is still running cell "
                    f"{busy.id}; wait for it to finish or interrupt it",
                )
            execution = _Execution(exec_id, code)
            self._executions[exec_id] = execution
            while len(self._executions) > KEPT_EXECUTIONS:
                self._executions.popitem(last=False)
            self._queue.append(execution)
        self._wake.set()
        return "ExecResponse", {"exec_id": exec_id}

    def _find(self, exec_id):
        with self._lock:
            execution = self._executions.get(str(exec_id))
        if execution is None:
            raise errors.NotFoundError(None, None, f"no cell {exec_id!r} on {self.label} (finished long ago)")
        return execution

    def handle_poll(self, server, msg):
        execution = self._find(msg["exec_id"])
        wait_s = min(float(msg.get("wait_s", POLL_WAIT_S)), 5.0)
        return "ExecPollResponse", execution.poll(int(msg.get("offset", 0)), wait_s)

    def handle_interrupt(self, server, msg):
        execution = self._find(msg["exec_id"])
        with self._lock:
            if execution.state == "queued":
                execution.finish(error=_interrupted_error())
            elif execution.state == "running":
                self._interrupt_id = execution.id
                signal.pthread_kill(self._main_ident, signal.SIGUSR1)
        return "ExecInterruptResponse", {"state": execution.state}

    # -- the main thread -------------------------------------------------------------------------
    def _on_interrupt_signal(self, signum, frame):
        current = self._current
        if current is not None and self._interrupt_id == current.id:
            self._interrupt_id = None
            raise KeyboardInterrupt

    def serve_forever(self):
        """Runs queued cells until `Shutdown` is raised (by the process's SIGTERM handler).

        Must be called on the main thread (cells get signals, as in a kernel).
        """
        signal.signal(signal.SIGUSR1, self._on_interrupt_signal)
        while True:
            try:
                self._wake.wait(1.0)
                with self._lock:
                    self._wake.clear()
                    execution = self._queue.popleft() if self._queue else None
                    if execution is not None and execution.state == "queued":
                        execution.state = "running"
                        self._current = execution
                    else:
                        execution = None
                if execution is not None:
                    self._run(execution)
            except KeyboardInterrupt:
                continue  # an interrupt that arrived just after its cell ended

    def _run(self, execution):
        saved = sys.stdout, sys.stderr
        result = error = None
        filename = f"<{self.label} cell {execution.id}>"
        try:
            sys.stdout, sys.stderr = _CellStream(execution, "stdout"), _CellStream(execution, "stderr")
            result = _result_body(_execute(execution.code, filename, self.namespace()))
        except (Exception, KeyboardInterrupt, SystemExit) as e:  # noqa: BLE001 - the cell's error goes back
            error = _error_body(e, filename)
        except Shutdown:
            execution.finish(
                error={
                    "ename": "UnavailableError",
                    "module": "nbdist.errors",
                    "evalue": f"{self.label} is shutting down",
                    "traceback": "",
                }
            )
            raise
        finally:
            sys.stdout, sys.stderr = saved
            with self._lock:
                self._current = None
                self._interrupt_id = None
        execution.finish(result, error)

    def namespace(self):
        """The task's persistent namespace (made at the first cell)."""
        if self._namespace is None:
            import nbdist  # noqa: PLC0415 - the facade, already imported by the server

            self._namespace = {
                "__name__": "__dtf_worker__",
                "__builtins__": builtins,
                "server": self.server,
                "cluster": self.server.cluster_spec,
                "job_name": self.job_name,
                "task_index": self.task_index,
                "tf": nbdist,
            }
        return self._namespace


def _execute(code, filename, namespace):
    """Runs `code` in `namespace`; returns the value of a final expression (IPython's rule)."""
    tree = ast.parse(code, filename, "exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr) and not code.rstrip().endswith(";"):
        last = ast.Expression(tree.body.pop().value)
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    # Running the notebook's code is this service's purpose; only signed requests reach here.
    exec(compile(tree, filename, "exec"), namespace)  # noqa: S102
    if last is None:
        return None
    return eval(compile(last, filename, "eval"), namespace)  # noqa: S307


def _interrupted_error():
    return {"ename": "KeyboardInterrupt", "module": "builtins", "evalue": "", "traceback": ""}


def _error_body(exc, filename):
    """``{ename, module, evalue, traceback}`` with the traceback from the cell's own frames on."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != filename:
        tb = tb.tb_next
    if isinstance(exc, SyntaxError) or tb is None:
        text = "".join(traceback.format_exception_only(type(exc), exc))
    else:
        text = "".join(traceback.format_exception(type(exc), exc, tb))
    evalue = exc.message if isinstance(exc, errors.OpError) else str(exc)
    return {"ename": type(exc).__name__, "module": type(exc).__module__, "evalue": evalue, "traceback": text}


def _result_body(value):
    """A last-expression value as ``{"repr": text[, "value": v]}`` (the value when it can travel)."""
    if value is None:
        return None
    text = repr(value)
    body = {"repr": text if len(text) <= MAX_REPLY_CHARS else text[:MAX_REPLY_CHARS] + "..."}
    if _transferable(value, [0]):
        body["value"] = value
    return body


def _transferable(value, budget):
    if value is None or isinstance(value, (bool, float, str, bytes)):
        budget[0] += len(value) if isinstance(value, (str, bytes)) else 8
    elif isinstance(value, int):
        if not -(2**63) <= value < 2**64:
            return False
        budget[0] += 8
    elif isinstance(value, (np.ndarray, np.generic)):
        if value.dtype.kind not in "biuf" or value.dtype.hasobject:
            return False
        budget[0] += value.nbytes
    elif isinstance(value, (list, tuple)):
        return all(_transferable(v, budget) for v in value) and budget[0] <= MAX_RESULT_BYTES
    elif isinstance(value, dict):
        return all(isinstance(k, str) and _transferable(v, budget) for k, v in value.items())
    else:
        return False
    return budget[0] <= MAX_RESULT_BYTES


_service = None


def install(server):
    """Adds the Exec requests to the servers of this process; returns the `ExecService`.

    The caller must then run `ExecService.serve_forever` on the main thread.
    """
    global _service
    if _service is not None:
        raise RuntimeError(f"the exec service is already installed for {_service.label}")
    _service = ExecService(server)
    server.add_service(_service)
    return _service


# =============================================================================== the notebook side
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


def run_cell(tasks, code, key, timeout_s=None, streams=None, poll_wait_s=POLL_WAIT_S):
    """Runs `code` on every task at once and waits for all of them.

    Args:
        tasks: ``[(job_name, task_index, address), ...]`` of servers started with ``--exec``.
        code: the cell's source.
        key: the cluster key (bytes) to sign requests with.
        timeout_s: interrupt the tasks and raise `TimeoutError` after this long (None: no bound).
        streams: ``{"stdout": file, "stderr": file}`` for the prefixed output (default: sys's).
        poll_wait_s: how long one poll may wait for new output (the output's latency bound).

    Returns:
        A `TaskResults` of the tasks whose last line is an expression, or None if none is.

    Raises:
        RemoteError: (typed after the remote error) if the cell raised on any task.
        KeyboardInterrupt: after interrupting every task, when the notebook was interrupted.
        TimeoutError: when `timeout_s` passed (the tasks were interrupted).
        tf.errors.UnavailableError: a task could not be reached.
    """
    streams = streams or {"stdout": sys.stdout, "stderr": sys.stderr}
    exec_id = secrets.token_hex(8)
    runs = []
    try:
        for job, index, address in tasks:
            task = Task(job, index)
            run = _RemoteRun(task.label, task.name, address, key, _Printer(task.label, streams))
            run.channel.call("Exec", {"exec_id": exec_id, "code": code}, timeout_s=30.0)
            runs.append(run)
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        timed_out = not _poll_until_done(runs, exec_id, deadline, poll_wait_s)
    except BaseException:  # interrupted, or a task refused the cell: stop the ones already running
        _interrupt(runs, exec_id, poll_wait_s)
        raise
    if timed_out:
        _interrupt(runs, exec_id, poll_wait_s)
        still = [r.label for r in runs if not r.done or (r.error or {}).get("ename") == "KeyboardInterrupt"]
        raise TimeoutError(f"%%dtf_worker: {', '.join(still)} still running after {timeout_s} s; interrupted")
    return _outcome(runs)


def _poll_until_done(runs, exec_id, deadline, poll_wait_s):
    """Polls the unfinished runs until all are done (True) or `deadline` passes (False)."""
    while True:
        pending = [r for r in runs if not r.done]
        if not pending:
            return True
        if deadline is not None and time.monotonic() >= deadline:
            return False
        for r in pending:
            r.request_id = r.channel.send(
                "ExecPoll", {"exec_id": exec_id, "offset": r.offset, "wait_s": poll_wait_s}
            )
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
                r.channel.call("ExecInterrupt", {"exec_id": exec_id}, timeout_s=5.0)
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
