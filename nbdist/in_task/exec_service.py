"""Per-task code execution, the task side: the service behind ``%%dtf_worker``.

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
The notebook side (sending cells, printing output) is `nbdist.notebook.task_exec`.
"""

import ast
import builtins
import collections
import io
import linecache
import signal
import sys
import threading
import time
import traceback

import numpy as np

from nbdist import errors
from nbdist.graph.device import Task
from nbdist.in_task import publisher as publisher_lib
from nbdist.runtime.net import serving
from nbdist.runtime.protocol import (
    ExecInterrupt,
    ExecInterruptResponse,
    ExecPoll,
    ExecPollResponse,
    ExecRequest,
    ExecResponse,
)

POLL_WAIT_S = 0.2
MAX_REPLY_CHARS = 1 << 20  # output per poll reply; the rest comes with the next poll
MAX_RESULT_BYTES = 16 << 20  # larger last-expression values come back as their repr only
KEPT_EXECUTIONS = 16


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
            publisher = publisher_lib.task_publisher()
            if publisher is not None:
                publisher.publish({"kind": "stream", "time": time.time(), "name": self.name, "text": text})
        return len(text)


class Shutdown(BaseException):
    """Raised in the main thread when the server process is asked to stop."""


class ExecService:
    """Runs cells sent by the notebook on this process's main thread, one at a time.

    Args:
        server: the `nbdist.runtime.server_lib.Server` of this task (exposed to cells as ``server``).
        tf: the module cells see as ``tf`` (the ``nbdist`` facade; given by the entry point,
            so this layer never imports the layers above it).
    """

    def __init__(self, server, tf=None):
        self.server = server
        self.tf = tf
        spec = server.server_def
        self.job_name, self.task_index = spec.job_name, spec.task_index
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
        request = ExecRequest.from_msg(msg)
        exec_id, code = str(request.exec_id), request.code
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
        return ExecResponse(exec_id).as_answer()

    def _find(self, exec_id):
        with self._lock:
            execution = self._executions.get(str(exec_id))
        if execution is None:
            raise errors.NotFoundError(None, None, f"no cell {exec_id!r} on {self.label} (finished long ago)")
        return execution

    def handle_poll(self, server, msg):
        request = ExecPoll.from_msg(msg)
        execution = self._find(request.exec_id)
        wait_s = min(float(POLL_WAIT_S if request.wait_s is None else request.wait_s), 5.0)
        return ExecPollResponse(**execution.poll(int(request.offset), wait_s)).as_answer()

    def handle_interrupt(self, server, msg):
        execution = self._find(ExecInterrupt.from_msg(msg).exec_id)
        with self._lock:
            if execution.state == "queued":
                execution.finish(error=_interrupted_error())
            elif execution.state == "running":
                self._interrupt_id = execution.id
                signal.pthread_kill(self._main_ident, signal.SIGUSR1)
        return ExecInterruptResponse(execution.state).as_answer()

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
            self._namespace = {
                "__name__": "__dtf_worker__",
                "__builtins__": builtins,
                "server": self.server,
                "cluster": self.server.cluster_spec,
                "job_name": self.job_name,
                "task_index": self.task_index,
                "tf": self.tf,
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


def install(server, tf=None):
    """Adds the Exec requests to `server` (`Server.add_service`); returns the `ExecService`.

    The caller must then run `ExecService.serve_forever` on the main thread.
    """
    global _service
    if _service is not None:
        raise RuntimeError(f"the exec service is already installed for {_service.label}")
    _service = ExecService(server, tf)
    server.add_service(_service)
    return _service
