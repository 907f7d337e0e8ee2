"""Events from tasks to the notebook: metrics, heartbeats, output and step traces.

Every event is a plain dict with a ``kind``, the ``task`` that sent it and a ``time``
(``time.time()``):

- ``{"kind": "metric", "task": "/job:worker/task:0", "step": 12, "time": t, "metrics": {"loss": 0.3}}``
  from `report` (``task`` is ``"notebook"`` when the notebook itself reports);
- ``{"kind": "heartbeat", "task": ..., "time": t, "rss_bytes": n}`` once a second from each task;
- ``{"kind": "stream", "task": ..., "time": t, "name": "stdout", "text": "..."}``: a task's output;
- ``{"kind": "trace", "task": ..., "time": t, "step": s, "dev_stats": [...], "service_calls": [...]}``
  from `report_trace` (a traced step's `tf.RunMetadata`).

Transport: the notebook's `EventStream` binds a ZeroMQ PULL socket on 127.0.0.1 (random
port); tasks get its address in ``$NBDIST_EVENTS`` and push with a small send buffer and
``NOBLOCK``: when the notebook falls behind, events are dropped (and counted), so a slow
notebook never blocks training. Events are signed with the cluster key (`nbdist.runtime.wire`)
and the collector drops any it cannot verify.

    import nbdist as tf
    from nbdist.notebook.events import current_stream
    stream = current_stream()                          # or dtf.events
    unsubscribe = stream.subscribe(lambda e: print(e["kind"], e["task"]))
    tf.report(step=1, loss=0.5)
"""

import collections
import numbers
import os
import threading
import time

import numpy as np
import zmq

from nbdist.runtime import wire

EVENTS_ENV = "NBDIST_EVENTS"
TASK_ENV = "NBDIST_TASK"
HISTORY_SIZE = 10_000
SEND_HWM = 1000  # events queued per task before new ones are dropped
KINDS = ("metric", "heartbeat", "stream", "trace")


class EventStream:
    """A thread-safe, subscribable stream of event dicts with a bounded history.

    Args:
        key: the cluster key that pushed events must be signed with (None: unsigned).
        collect: bind a PULL socket (`address`) and collect events pushed by tasks on a
            background thread. False gives an in-process stream (`publish` only).
        history_size: events kept for `history` (the oldest are forgotten).
    """

    def __init__(self, key=None, collect=False, history_size=HISTORY_SIZE):
        self._lock = threading.Lock()
        self._subscribers = []
        self._history = collections.deque(maxlen=history_size)
        self._key = key
        self.rejected = 0  # pushed messages that failed the signature or format check
        self.callback_errors = 0
        self.address = None
        self._socket = None
        self._stop = threading.Event()
        self._thread = None
        if collect:
            self._start_collector()

    def _start_collector(self):
        sock = zmq.Context.instance().socket(zmq.PULL)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.RCVHWM, 10 * SEND_HWM)
        sock.setsockopt(zmq.MAXMSGSIZE, 16 * 2**20)
        port = sock.bind_to_random_port("tcp://127.0.0.1")
        self._socket = sock
        self.address = f"tcp://127.0.0.1:{port}"
        self._thread = threading.Thread(target=self._collect, name="nbdist-events", daemon=True)
        self._thread.start()

    def _collect(self):
        sock = self._socket
        while not self._stop.is_set():
            try:
                if not sock.poll(100):
                    continue
                frames = sock.recv_multipart(copy=False)
            except zmq.ZMQError:
                break
            try:
                event = wire.decode(frames, self._key).get("event")
            except wire.WireError:
                event = None
            if isinstance(event, dict) and event.get("kind") in KINDS:
                self.publish(event)
            else:
                self.rejected += 1
        sock.close(linger=0)

    def publish(self, event):
        """Adds `event` to the history and calls every subscriber with it (in this thread)."""
        with self._lock:
            self._history.append(event)
            subscribers = list(self._subscribers)
        for callback in subscribers:
            try:
                callback(event)
            except Exception:  # noqa: BLE001 - one broken subscriber must not stop the others
                self.callback_errors += 1

    def subscribe(self, callback):
        """Calls ``callback(event)`` for every later event, on the collector thread.

        Returns:
            A function that unsubscribes (idempotent).

        Raises:
            TypeError: if `callback` is not callable.
        """
        if not callable(callback):
            raise TypeError(f"subscribe() needs a callable taking one event dict, got {callback!r}")
        with self._lock:
            self._subscribers.append(callback)

        def unsubscribe():
            with self._lock:
                if callback in self._subscribers:
                    self._subscribers.remove(callback)

        return unsubscribe

    def history(self, kind=None):
        """A list of the kept events, oldest first; only those of `kind` when given."""
        with self._lock:
            events = list(self._history)
        return events if kind is None else [e for e in events if e.get("kind") == kind]

    def close(self, wait_s=0.0):
        """Stops collecting (the history stays readable). Idempotent.

        Args:
            wait_s: how long to wait for the collector thread to close its socket (it does
                within 0.1 s on its own).
        """
        self._stop.set()
        if wait_s and self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(wait_s)

    @property
    def collecting(self):
        return self._thread is not None and self._thread.is_alive() and not self._stop.is_set()

    def __repr__(self):
        where = f"collecting at {self.address}" if self.collecting else "in-process"
        return f"<nbdist EventStream {where}, {len(self._history)} events kept>"


# -- the notebook side: which stream is active ---------------------------------------------------
_local_stream = EventStream()
_active = []  # streams of running clusters, latest last
_active_lock = threading.Lock()


def current_stream():
    """The stream of the most recently started running cluster, else the in-process one."""
    with _active_lock:
        return _active[-1] if _active else _local_stream


def activate(stream):
    """Makes `stream` the current one (LocalCluster calls this when it starts)."""
    with _active_lock:
        _active.append(stream)


def deactivate(stream):
    with _active_lock:
        if stream in _active:
            _active.remove(stream)


# -- the task side: pushing to the notebook ------------------------------------------------------
class Publisher:
    """A task's PUSH socket to the notebook's collector; never blocks, drops when full.

    Args:
        address: the collector's ``tcp://127.0.0.1:port``.
        task: this task's name, e.g. ``/job:worker/task:0``.
        key: the cluster key to sign with.
    """

    def __init__(self, address, task, key=None):
        self.address = address
        self.task = task
        self._key = key
        self._lock = threading.Lock()
        self.sent = 0
        self.dropped = 0
        self._socket = zmq.Context.instance().socket(zmq.PUSH)
        self._socket.setsockopt(zmq.LINGER, 0)
        self._socket.setsockopt(zmq.SNDHWM, SEND_HWM)
        self._socket.connect(address)

    def publish(self, event):
        """Sends `event` (its ``task`` filled in) unless the buffer is full. Returns True if sent."""
        event.setdefault("task", self.task)
        frames = wire.encode("Event", 0, {"event": event}, self._key)
        with self._lock:
            if self._socket is None:
                return False
            try:
                self._socket.send_multipart(frames, flags=zmq.NOBLOCK)
            except zmq.Again:
                self.dropped += 1
                return False
            self.sent += 1
        return True

    def close(self):
        with self._lock:
            if self._socket is not None:
                self._socket.close(linger=0)
                self._socket = None


_publisher = None
_publisher_lock = threading.Lock()


def start_task_publisher(task, address=None, key=None, heartbeat_s=1.0):
    """Makes this process a task that pushes its events to the notebook at `address`.

    Called by ``python -m nbdist.server`` when ``$NBDIST_EVENTS`` is set. Starts a
    heartbeat thread (one ``heartbeat`` event every `heartbeat_s`).

    Returns:
        The `Publisher`, or None when no address is given or set.
    """
    global _publisher
    address = address or os.environ.get(EVENTS_ENV)
    if not address:
        return None
    with _publisher_lock:
        if _publisher is None:
            _publisher = Publisher(address, task, key if key is not None else wire.default_key())
    if heartbeat_s:
        threading.Thread(
            target=_heartbeat, args=(_publisher, heartbeat_s), daemon=True, name="nbdist-heartbeat"
        ).start()
    return _publisher


def _heartbeat(publisher, interval_s):
    while publisher._socket is not None:
        publisher.publish(
            {"kind": "heartbeat", "task": publisher.task, "time": time.time(), "rss_bytes": rss_bytes()}
        )
        time.sleep(interval_s)


def task_publisher():
    """This process's `Publisher`: the started one, or one made from ``$NBDIST_EVENTS``
    (a process started by a task inherits it), or None in the notebook."""
    global _publisher
    if _publisher is None and os.environ.get(EVENTS_ENV):
        with _publisher_lock:
            if _publisher is None:
                task = os.environ.get(TASK_ENV) or f"pid:{os.getpid()}"
                _publisher = Publisher(os.environ[EVENTS_ENV], task, wire.default_key())
    return _publisher


def publish(event):
    """Sends `event` to the notebook: pushed from a task, published directly in the notebook."""
    publisher = task_publisher()
    if publisher is not None:
        return publisher.publish(event)
    event.setdefault("task", "notebook")
    current_stream().publish(event)
    return True


def report(step=None, **metrics):
    """Publishes metrics (e.g. the loss) to the notebook's event stream.

    Works the same in a task's process (``%%dtf_worker`` cells) and in the notebook.
    Never blocks: when the notebook falls behind, events are dropped.

    Args:
        step: the global step these values belong to (an int), or None.
        **metrics: name -> a number (Python, numpy scalar or one-element array).

    Returns:
        True if the event was sent (False: dropped because the buffer was full).

    Raises:
        TypeError: if `step` is not an integer, or a metric is not a number (quoting it).
        ValueError: if no metric is given.

    Example::

        tf.report(step=step, loss=loss_value, accuracy=acc)
    """
    if not metrics:
        raise ValueError("report() needs at least one metric, e.g. tf.report(step=10, loss=0.25)")
    if step is not None:
        if isinstance(step, bool) or not isinstance(step, numbers.Integral):
            raise TypeError(f"report(step=...) must be an integer or None, got {step!r}")
        step = int(step)
    values = {name: _as_float(name, value) for name, value in metrics.items()}
    return publish({"kind": "metric", "step": step, "time": time.time(), "metrics": values})


def _as_float(name, value):
    if isinstance(value, np.ndarray) and value.size == 1:
        value = value.item()
    if not isinstance(value, (str, bytes, bool)):
        try:
            return float(value)
        except (TypeError, ValueError):
            pass
    raise TypeError(f"report() metric {name!r} must be a number (float, int, numpy scalar), got {value!r}")


def report_trace(run_metadata, step=None):
    """Publishes a traced step (a `tf.RunMetadata` filled with ``FULL_TRACE``) as a ``trace`` event.

    Args:
        run_metadata: the `tf.RunMetadata` passed to ``sess.run(..., run_metadata=md)``.
        step: the step number to label it with, or None.
    """
    dev_stats = [
        {"device": d.device, "node_stats": list(d.node_stats)} for d in run_metadata.step_stats.dev_stats
    ]
    return publish(
        {
            "kind": "trace",
            "step": step,
            "time": time.time(),
            "dev_stats": dev_stats,
            "service_calls": list(getattr(run_metadata, "service_calls", [])),
        }
    )


def rss_bytes():
    """Resident memory of this process in bytes (0 where /proc is not available)."""
    try:
        with open(f"/proc/{os.getpid()}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0
