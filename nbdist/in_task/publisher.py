"""Events from a task to the notebook: the publisher behind `report` (the task side).

A task's process pushes its events (``metric`` from `report`, ``heartbeat`` once a second,
``stream`` output, ``trace`` from `report_trace`) to the notebook's collector at
``$NBDIST_EVENTS`` with a small send buffer and ``NOBLOCK``: when the notebook falls
behind, events are dropped (and counted), so a slow notebook never blocks training. Events
are signed with the cluster key. The event format and the collecting side (`EventStream`)
are described in `nbdist.notebook.event_stream`.

Events travel in batches (an ``Events`` message): an event after a quiet spell of
`COALESCE_S` (nothing held, nothing sent for that long) is sent at once; the ones that
follow it are held, and a flusher thread sends them when the window since the last send
ends: a worker that reports after every step sends a few messages a second, not one per
step. Metric events travel in columns (`nbdist.in_task.metric_batch`), and the training
thread only appends to a deque: encoding and sending are the flusher's, a batch thread
(`nbdist.runtime.sched`) that never preempts a step (what it costs: docs/benchmarks.md,
"What watching costs training"). What a process holds back is also sent when it exits
(`flush`; ``python -m nbdist.server`` flushes before it stops).
"""

import atexit
import collections
import numbers
import os
import threading
import time

import numpy as np
import zmq

from nbdist.in_task import metric_batch
from nbdist.runtime import sched
from nbdist.runtime.net import wire

EVENTS_ENV = "NBDIST_EVENTS"
TASK_ENV = "NBDIST_TASK"
SEND_HWM = 100  # messages (batches of events) queued per task before new ones are dropped
KINDS = ("metric", "heartbeat", "stream", "trace")
COALESCE_S = 0.2  # events of one task within this window travel as one message...
MAX_BATCH = 1024  # ...of at most this many events (a publisher holding as many sends them itself)

_context = None
_context_lock = threading.Lock()


def events_context():
    """The ZeroMQ context that events travel by, in a task and in the notebook: its own, so
    that its I/O thread - woken by every batch of events - is a batch thread
    (`nbdist.runtime.sched`) that never preempts a training step."""
    global _context
    with _context_lock:
        if _context is None:
            context = zmq.Context()
            policy = sched.batch_policy()
            if policy is not None:
                context.set(zmq.THREAD_SCHED_POLICY, policy)
            _context = context
        return _context


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
        self._stamp = wire.SenderStamp()
        self._lock = threading.Lock()  # sending: stamped and sent in order, by one thread at a time
        self.sent = 0  # events handed to the socket
        self.messages = 0  # the messages (batches) they went in
        self.dropped = 0  # events dropped: the socket's buffer was full, or the publisher closed
        self._pending = collections.deque()  # events held until the window since the last send ends
        self._last_send = 0.0  # time.monotonic() of the last send
        self._held = False  # the flusher minds held events (it is woken, or awake)
        self._wake = threading.Event()  # wakes the flusher
        self._flusher = None
        self._socket = events_context().socket(zmq.PUSH)
        self._socket.setsockopt(zmq.LINGER, 0)
        self._socket.setsockopt(zmq.SNDHWM, SEND_HWM)
        self._socket.connect(address)

    def publish(self, event):
        """Sends `event` (its ``task`` filled in): at once after a quiet spell of `COALESCE_S`,
        else the flusher sends it with the others of its window when the window ends.

        The training thread calls this after every step, and a step's other work leaves its
        code and data cold in the CPU's caches: a call costs several times what it costs in a
        tight loop, so an event that is held (most are) takes no lock and calls nothing but
        the clock - appending to a deque is atomic.

        Returns:
            True if it was sent or is held to be sent; False if it was dropped (the socket's
            buffer was full, or the publisher is closed).
        """
        if "task" not in event:
            event["task"] = self.task
        pending = self._pending
        pending.append(event)
        if len(pending) >= MAX_BATCH:
            return self._send_pending()
        if not self._held:  # nothing was held: a quiet spell, or the flusher parked
            if time.monotonic() - self._last_send >= COALESCE_S:
                return self._send_pending()
            self._mind_window()
        return self._socket is not None

    def flush(self):
        """Sends the events held back now."""
        if self._pending:
            self._send_pending()

    def _send_pending(self):
        with self._lock:
            if self._socket is None:
                self.dropped += len(self._pending)
                self._pending.clear()
                return False
            pending = self._pending
            batch = [pending.popleft() for _ in range(len(pending))]  # (others may append meanwhile)
            if not batch:  # another thread sent them
                return True
            self._last_send = time.monotonic()
            others, metrics = metric_batch.pack(batch)
            frames = wire.encode("Events", 0, {"events": others, "metrics": metrics}, self._key, self._stamp)
            try:
                self._socket.send_multipart(frames, flags=zmq.NOBLOCK)
            except zmq.Again:
                self.dropped += len(batch)
                return False
            self.sent += len(batch)
            self.messages += 1
            return True

    def _mind_window(self):
        """Has the flusher send what is held when the window ends (starting it the first time)."""
        with self._lock:
            self._held = True
            if self._flusher is None and self._socket is not None:
                flusher = threading.Thread(target=self._flush_when_due, daemon=True, name="nbdist-events")
                self._flusher = flusher
                flusher.start()
            self._wake.set()

    def _flush_when_due(self):  # the flusher thread: a batch thread, woken once per window
        sched.as_batch_thread()
        while True:
            self._wake.wait()
            time.sleep(max(0.0, self._last_send + COALESCE_S - time.monotonic()))
            if self._socket is None:
                return
            if self._pending:
                self._send_pending()
                continue  # (a training loop holds more by the next window's end)
            with self._lock:
                if self._socket is None:
                    return
                if not self._pending:  # nothing held: sleep until an event is held again
                    self._wake.clear()
                    self._held = False
                    if self._pending:  # (held just now, by a thread that saw _held still True)
                        self._held = True
                        self._wake.set()

    def close(self):
        """Sends what is held, then closes the socket (and so ends the flusher)."""
        if self._pending:
            self._send_pending()
        with self._lock:
            if self._socket is not None:
                self._socket.close(linger=0)
                self._socket = None
            self._wake.set()


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


def flush():
    """Sends what this process's publisher holds back (a process about to exit calls it; so
    does ``atexit``)."""
    if _publisher is not None:
        _publisher.flush()


atexit.register(flush)


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


_local_sink = None  # where events go in a process that is not a task (the notebook's stream)


def set_local_sink(sink):
    """Where `publish` delivers in a process with no publisher: ``sink(event)``.

    The notebook layer sets its current `EventStream` here when it is imported, so this
    layer never imports the notebook.
    """
    global _local_sink
    _local_sink = sink


def publish(event):
    """Sends `event` to the notebook: pushed from a task, published directly in the notebook.

    Returns:
        True if it was sent (False: dropped, the buffer was full or nothing receives events).
    """
    publisher = _publisher if _publisher is not None else task_publisher()
    if publisher is not None:
        return publisher.publish(event)
    event.setdefault("task", "notebook")
    if _local_sink is None:
        return False
    _local_sink(event)
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
    # (Called after every training step: Python ints and floats take the short way.)
    if step is not None and type(step) is not int:
        if isinstance(step, bool) or not isinstance(step, numbers.Integral):
            raise TypeError(f"report(step=...) must be an integer or None, got {step!r}")
        step = int(step)
    values = {}
    for name, value in metrics.items():
        kind = type(value)
        values[name] = value if kind is float else float(value) if kind is int else _as_float(name, value)
    if not values:
        raise ValueError("report() needs at least one metric, e.g. tf.report(step=10, loss=0.25)")
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


def trace_event(run_metadata, step=None):
    """A traced step (a `tf.RunMetadata` filled with ``FULL_TRACE``) as a ``trace`` event dict.

    Plain data (op spans and transfers per task, the service calls, the partition graphs) that
    travels anywhere: `report_trace` publishes it, a ``%%dtf_worker`` cell may return it, and
    ``tf.show_graph`` / ``show_placement`` / ``show_timeline`` (and the demo's report) draw it
    as they draw a `tf.RunMetadata`.

    Args:
        run_metadata: the `tf.RunMetadata` passed to ``sess.run(..., run_metadata=md)``.
        step: the step number to label it with, or None.
    """
    dev_stats = [
        {
            "device": d.device,
            "node_stats": list(d.node_stats),
            "resource_events": list(getattr(d, "resource_events", [])),
            "transfers": list(getattr(d, "transfers", None) or []),
            "pid": getattr(d, "pid", None),
        }
        for d in run_metadata.step_stats.dev_stats
    ]
    return {
        "kind": "trace",
        "step": step,
        "time": time.time(),
        "dev_stats": dev_stats,
        "service_calls": list(getattr(run_metadata, "service_calls", [])),
        "partition_graphs": list(getattr(run_metadata, "partition_graphs", None) or []),
    }


def report_trace(run_metadata, step=None):
    """Publishes a traced step (a `tf.RunMetadata` filled with ``FULL_TRACE``) as a ``trace`` event.

    The event is `trace_event`: the step's RunMetadata as plain data, so the notebook draws a
    step a task traced as it draws its own: ``tf.show_graph(event)``,
    ``tf.show_placement(event)``, ``tf.show_timeline(event)``.

    Args:
        run_metadata: the `tf.RunMetadata` passed to ``sess.run(..., run_metadata=md)``.
        step: the step number to label it with, or None.

    Returns:
        True if the event was sent (False: dropped, see `publish`).

    Example (in a ``%%dtf_worker`` cell; the notebook reads ``dtf.events.history("trace")``)::

        md = tf.RunMetadata()
        sess.run(train_op, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=md)
        tf.report_trace(md, step=1)
    """
    return publish(trace_event(run_metadata, step))


def rss_bytes():
    """Resident memory of this process in bytes (0 where /proc is not available)."""
    try:
        with open(f"/proc/{os.getpid()}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0
