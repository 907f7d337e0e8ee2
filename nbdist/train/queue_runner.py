"""`tf.train.QueueRunner` and `tf.train.start_queue_runners`: threads that keep queues fed.

A queue runner holds a queue and one or more enqueue ops; `create_threads` starts one
thread per op, each running it until the queue is closed (``OutOfRangeError`` — the
last thread then closes the queue) or the coordinator asks to stop (then the pending
enqueues are cancelled). Any other error stops the coordinator with that error, which
`Coordinator.join` re-raises in the main thread. SyncReplicasOptimizer's chief runs its
sync op this way.
"""

import logging
import threading
import weakref

from nbdist import errors
from nbdist.graph.default_session import get_default_session
from nbdist.graph.graph import GraphKeys, get_default_graph

_log = logging.getLogger(__name__)


class QueueRunner:
    """Runs `enqueue_ops` in threads to fill `queue`.

    Args:
        queue: the `QueueBase` the ops enqueue into.
        enqueue_ops: ops to run repeatedly, one thread each.
        close_op: run when every thread ended (default ``queue.close()``).
        cancel_op: run when the coordinator stops (default
            ``queue.close(cancel_pending_enqueues=True)``).
        queue_closed_exception_types: errors that mean "the queue was closed": the thread
            ends quietly (default ``(tf.errors.OutOfRangeError,)``).
    """

    def __init__(
        self,
        queue=None,
        enqueue_ops=None,
        close_op=None,
        cancel_op=None,
        queue_closed_exception_types=None,
        queue_runner_def=None,
        import_scope=None,
    ):
        if queue_runner_def is not None:
            if queue is not None or enqueue_ops:
                raise ValueError("queue_runner_def and queue are mutually exclusive.")
            queue, enqueue_ops, close_op, cancel_op, queue_closed_exception_types = _from_def(
                queue_runner_def, import_scope
            )
        if queue is None or not enqueue_ops:
            raise ValueError("QueueRunner needs a queue and at least one enqueue op")
        self._queue = queue
        self._enqueue_ops = list(enqueue_ops)
        self._close_op = close_op if close_op is not None else queue.close()
        self._cancel_op = cancel_op if cancel_op is not None else queue.close(cancel_pending_enqueues=True)
        self._closed_types = tuple(queue_closed_exception_types or (errors.OutOfRangeError,))
        self._lock = threading.Lock()
        self._runs_per_session = weakref.WeakKeyDictionary()
        self._exceptions_raised = []

    queue = property(lambda self: self._queue)
    enqueue_ops = property(lambda self: list(self._enqueue_ops))
    close_op = property(lambda self: self._close_op)
    cancel_op = property(lambda self: self._cancel_op)
    queue_closed_exception_types = property(lambda self: self._closed_types)

    @property
    def exceptions_raised(self):
        """Errors the threads raised without a coordinator to report them to."""
        return list(self._exceptions_raised)

    @property
    def name(self):
        return self._queue.name

    def to_proto(self, export_scope=None):
        """TF's ``QueueRunnerDef`` as a dict: the queue's and ops' names (`export_scope`
        removed; None when the queue is outside it) and the closed-queue errors' codes."""
        scope = f"{export_scope.rstrip('/')}/" if export_scope else ""
        if scope and not self._queue.name.startswith(scope):
            return None
        strip = lambda name: name[len(scope) :]  # noqa: E731
        return {
            "queue_name": strip(self._queue.name),
            "enqueue_op_name": [strip(op.name) for op in self._enqueue_ops],
            "close_op_name": strip(self._close_op.name),
            "cancel_op_name": strip(self._cancel_op.name),
            "queue_closed_exception_types": [t.error_code for t in self._closed_types],
        }

    @staticmethod
    def from_proto(queue_runner_def, import_scope=None):
        """The `QueueRunner` over the existing ops a ``QueueRunnerDef`` dict names."""
        return QueueRunner(queue_runner_def=queue_runner_def, import_scope=import_scope)

    def _run(self, sess, enqueue_op, coord):
        decremented = False
        try:
            while not (coord is not None and coord.should_stop()):
                try:
                    sess.run(enqueue_op)
                except self._closed_types:
                    with self._lock:
                        self._runs_per_session[sess] -= 1
                        decremented = True
                        last = self._runs_per_session[sess] == 0
                    if last:
                        try:
                            sess.run(self._close_op)
                        except errors.OpError as e:
                            _log.debug("QueueRunner %s: ignored error closing the queue: %s", self.name, e)
                    return
        except Exception as e:
            if coord is not None:
                coord.request_stop(e)
            else:
                _log.error("Exception in QueueRunner %s: %s", self.name, e)
                with self._lock:
                    self._exceptions_raised.append(e)
                raise
        finally:
            if not decremented:
                with self._lock:
                    self._runs_per_session[sess] -= 1

    def _close_on_stop(self, sess, coord):
        coord.wait_for_stop()
        try:
            sess.run(self._cancel_op)
        except (errors.OpError, RuntimeError) as e:  # RuntimeError: the session was closed first (as TF)
            _log.debug("QueueRunner %s: ignored error cancelling the queue: %s", self.name, e)

    def create_threads(self, sess, coord=None, daemon=False, start=False):
        """Creates (and with ``start=True`` starts) the threads; none if already running for `sess`.

        With a `coord`, the threads are registered with it and one more thread cancels the
        queue's pending enqueues when it stops.
        """
        with self._lock:
            if self._runs_per_session.get(sess, 0) > 0:
                return []
            self._runs_per_session[sess] = len(self._enqueue_ops)
            self._exceptions_raised = []
        threads = [
            threading.Thread(target=self._run, args=(sess, op, coord), name=f"QueueRunner-{self.name}-{i}")
            for i, op in enumerate(self._enqueue_ops)
        ]
        if coord is not None:
            threads.append(
                threading.Thread(
                    target=self._close_on_stop, args=(sess, coord), name=f"QueueRunnerStop-{self.name}"
                )
            )
        for t in threads:
            if coord is not None:
                coord.register_thread(t)
            t.daemon = daemon
            if start:
                t.start()
        return threads


def _from_def(queue_runner_def, import_scope):
    """The queue, ops and error classes a ``QueueRunnerDef`` dict names, in the default graph."""
    from nbdist.ops.queue_ops import QueueBase  # noqa: PLC0415 - the queue ops load with tf

    graph = get_default_graph()
    scope = f"{import_scope.rstrip('/')}/" if import_scope else ""
    op = graph.get_operation_by_name(scope + queue_runner_def["queue_name"])
    shapes = op.get_attr("shapes") if "shapes" in op.attrs else None
    queue = QueueBase(list(op.get_attr("component_types")), shapes or None, None, op.outputs[0])
    codes = queue_runner_def.get("queue_closed_exception_types") or []
    return (
        queue,
        [graph.get_operation_by_name(scope + n) for n in queue_runner_def["enqueue_op_name"]],
        graph.get_operation_by_name(scope + queue_runner_def["close_op_name"]),
        graph.get_operation_by_name(scope + queue_runner_def["cancel_op_name"]),
        [errors.exception_type_from_error_code(c) for c in codes] or None,
    )


def add_queue_runner(qr, collection=GraphKeys.QUEUE_RUNNERS):
    """Adds `qr` to the graph's queue runners (what `start_queue_runners` starts)."""
    get_default_graph().add_to_collection(collection, qr)


def start_queue_runners(sess=None, coord=None, daemon=True, start=True, collection=GraphKeys.QUEUE_RUNNERS):
    """Starts the threads of every queue runner in the graph's collection; returns them.

    Raises:
        ValueError: without a session (none given and no default session).
    """
    sess = sess or get_default_session()
    if sess is None:
        raise ValueError(
            "Cannot start queue runners: no default session is registered. Use `with sess.as_default()` "
            "or pass an explicit session to tf.train.start_queue_runners(sess=sess)"
        )
    graph = getattr(sess, "graph", None) or get_default_graph()
    threads = []
    for qr in graph.get_collection(collection):
        threads.extend(qr.create_threads(sess, coord=coord, daemon=daemon, start=start))
    return threads
