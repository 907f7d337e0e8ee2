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
port); tasks get its address in ``$NBDIST_EVENTS`` and push (`nbdist.in_task.publisher`, the task
side, re-exported here) with a small send buffer and ``NOBLOCK``: when the notebook falls
behind, events are dropped (and counted), so a slow notebook never blocks training. A task's
events within `COALESCE_S` (200 ms) of each other travel as one ``Events`` message. Events
are signed with the cluster key (`nbdist.runtime.net.wire`)
and the collector drops any it cannot verify.

    import nbdist as tf
    from nbdist.notebook.event_stream import current_stream
    stream = current_stream()                          # or dtf.events
    unsubscribe = stream.subscribe(lambda e: print(e["kind"], e["task"]))
    tf.report(step=1, loss=0.5)
"""

import collections
import threading

import zmq

from nbdist.in_task import publisher
from nbdist.in_task.metric_batch import MetricBatch
from nbdist.in_task.publisher import (  # noqa: F401 - the task side, re-exported for the notebook
    COALESCE_S,
    EVENTS_ENV,
    KINDS,
    MAX_BATCH,
    SEND_HWM,
    TASK_ENV,
    Publisher,
    publish,
    report,
    report_trace,
    rss_bytes,
    start_task_publisher,
    task_publisher,
)
from nbdist.runtime import sched
from nbdist.runtime.net import wire

HISTORY_SIZE = 10_000


def _count(item):
    """How many events an item of the history holds (a `MetricBatch` or one event)."""
    return len(item) if isinstance(item, MetricBatch) else 1


class EventStream:
    """A thread-safe, subscribable stream of event dicts with a bounded history.

    Metric events pushed by tasks arrive in columns (`MetricBatch`, a task's reports of one
    window): `subscribe_metrics` hands them over as they came, which is what a live
    dashboard reads; a dict per event is made only for `subscribe` callbacks that take
    metric events and for `history`.

    Args:
        key: the cluster key that pushed events must be signed with (None: unsigned).
        collect: bind a PULL socket (`address`) and collect events pushed by tasks on a
            background thread. False gives an in-process stream (`publish` only).
        history_size: events kept for `history` (the oldest are forgotten).
    """

    def __init__(self, key=None, collect=False, history_size=HISTORY_SIZE):
        self._lock = threading.Lock()
        self._subscribers = []  # (callback, kind): called per event dict (of that kind; None: all)
        self._batch_subscribers = []  # called per MetricBatch
        self._history = collections.deque()  # event dicts and MetricBatches, oldest first
        self._kept = 0  # the events in _history
        self.history_size = history_size
        self._key = key
        self._replay_guard = wire.ReplayGuard()
        self.rejected = 0  # pushed messages (or events in them) failing the signature, replay or format check
        self.callback_errors = 0
        self.address = None
        self._socket = None
        self._stop = threading.Event()
        self._thread = None
        if collect:
            self._start_collector()

    def _start_collector(self):
        sock = publisher.events_context().socket(zmq.PULL)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.RCVHWM, 10 * SEND_HWM)
        sock.setsockopt(zmq.MAXMSGSIZE, 16 * 2**20)
        port = sock.bind_to_random_port("tcp://127.0.0.1")
        self._socket = sock
        self.address = f"tcp://127.0.0.1:{port}"
        self._thread = threading.Thread(target=self._collect, name="nbdist-events", daemon=True)
        self._thread.start()

    def _collect(self):
        sched.as_batch_thread()  # (woken by every batch of events: it must not preempt training)
        sock = self._socket
        while not self._stop.is_set():
            try:
                if not sock.poll(100):
                    continue
                frames = sock.recv_multipart(copy=False)
            except zmq.ZMQError:
                break
            try:
                msg = wire.decode(frames, self._key, self._replay_guard)
            except wire.WireError:
                self.rejected += 1
                continue
            self._deliver(msg)
        sock.close(linger=0)

    def _deliver(self, msg):
        # A task sends its events in batches (``Events``: metric events in columns, the others
        # as dicts); one ``Event`` is accepted too.
        if msg["type"] == "Events":
            batch, groups = msg.get("events", []), msg.get("metrics", [])
        else:
            batch, groups = [msg.get("event")], []
        if not isinstance(batch, list) or not isinstance(groups, list):
            self.rejected += 1
            return
        valid = [e for e in batch if isinstance(e, dict) and e.get("kind") in KINDS]
        self.rejected += len(batch) - len(valid)
        if valid:
            self.publish_many(valid)
        for group in groups:
            try:
                metrics = MetricBatch.from_wire(group)
            except ValueError:
                self.rejected += 1
                continue
            if len(metrics):
                self.publish_metrics(metrics)

    def publish(self, event):
        """Adds `event` to the history and calls every subscriber with it (in this thread)."""
        self.publish_many((event,))

    def publish_many(self, events):
        """`publish` for each of `events`, in order (one lock for the lot: a task's batch)."""
        with self._lock:
            self._keep(events, len(events))
            subscribers = list(self._subscribers)
            batch_subscribers = list(self._batch_subscribers)
        for event in events:
            is_dict = isinstance(event, dict)
            kind = event.get("kind") if is_dict else None
            for callback, wanted in subscribers:
                if wanted is None or wanted == kind:
                    self._call(callback, event)
            # (for metric subscribers, as for `MetricsHistory`, a dict without a kind is a metric)
            if batch_subscribers and is_dict and event.get("kind", "metric") == "metric":
                try:
                    metrics = MetricBatch.of(event)
                except (TypeError, ValueError):  # not a metric event after all
                    self.callback_errors += 1
                    continue
                for callback in batch_subscribers:
                    self._call(callback, metrics)

    def publish_metrics(self, batch):
        """Adds the metric events of `batch` (a `MetricBatch`) to the history and hands them to
        the subscribers: the batch itself to `subscribe_metrics` callbacks, each event as a
        dict to `subscribe` callbacks that take metric events (in this thread)."""
        with self._lock:
            self._keep((batch,), len(batch))
            subscribers = [callback for callback, kind in self._subscribers if kind in (None, "metric")]
            batch_subscribers = list(self._batch_subscribers)
        if subscribers:
            for event in batch.events():
                for callback in subscribers:
                    self._call(callback, event)
        for callback in batch_subscribers:
            self._call(callback, batch)

    def _keep(self, items, count):  # (under the lock)
        history = self._history
        history.extend(items)
        self._kept += count
        while history and self._kept - _count(history[0]) >= self.history_size:
            self._kept -= _count(history.popleft())

    def _call(self, callback, what):
        try:
            callback(what)
        except Exception:  # noqa: BLE001 - one broken subscriber must not stop the others
            self.callback_errors += 1

    def subscribe(self, callback, kind=None):
        """Calls ``callback(event)`` for every later event (only those of `kind` when given),
        on the collector thread.

        Returns:
            A function that unsubscribes (idempotent).

        Raises:
            TypeError: if `callback` is not callable.
        """
        if not callable(callback):
            raise TypeError(f"subscribe() needs a callable taking one event dict, got {callback!r}")
        return self._add_subscriber(self._subscribers, (callback, kind))

    def subscribe_metrics(self, callback):
        """Calls ``callback(batch)`` with the later metric events in columns, a `MetricBatch`
        at a time (a task's reports as they came; an event published alone is a batch of
        one), on the collector thread: the cheap way to follow many events a second.

        Returns:
            A function that unsubscribes (idempotent).

        Raises:
            TypeError: if `callback` is not callable.
        """
        if not callable(callback):
            raise TypeError(f"subscribe_metrics() needs a callable taking a MetricBatch, got {callback!r}")
        return self._add_subscriber(self._batch_subscribers, callback)

    def _add_subscriber(self, subscribers, entry):
        with self._lock:
            subscribers.append(entry)

        def unsubscribe():
            with self._lock:
                if entry in subscribers:
                    subscribers.remove(entry)

        return unsubscribe

    def history(self, kind=None):
        """A list of the kept events (dicts), oldest first; only those of `kind` when given."""
        with self._lock:
            kept, items = self._kept, list(self._history)
        events = []
        for item in items:
            if isinstance(item, MetricBatch):
                events.extend(item.events())
            else:
                events.append(item)
        events = events[max(0, kept - self.history_size) :]  # (the oldest batch may be kept in part)
        return events if kind is None else [e for e in events if e.get("kind") == kind]

    def clear(self):
        """Forgets the history (subscribers stay)."""
        with self._lock:
            self._history.clear()
            self._kept = 0

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
        return f"<nbdist EventStream {where}, {min(self._kept, self.history_size)} events kept>"


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


# In the notebook (no task publisher), `report` publishes straight into the current stream.
publisher.set_local_sink(lambda event: current_stream().publish(event))
