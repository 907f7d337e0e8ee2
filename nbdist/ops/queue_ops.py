"""Queues: `tf.FIFOQueue` and `tf.RandomShuffleQueue`, resources that outlive steps.

A queue is a resource of kind ``"queue"`` in the task that holds it (its creator op,
``FIFOQueueV2`` / ``RandomShuffleQueueV2``, is placed like any op; the queue's other
ops are colocated with it). Many clients share it by name (``shared_name``), which is how
between-graph replicas meet: SyncReplicasOptimizer's token queue lives on the ps and every
worker dequeues from it.

An enqueue into a full queue and a dequeue from an empty one are *blocking* ops: each
declares a ready function, and the executor defers the op (and what depends on it) until
the queue can serve it, waking on every change of the queue. So a waiting dequeue on a ps
holds no thread per op and never stalls the server; it ends when an element arrives, the
queue is closed (``OutOfRangeError``, TF's end-of-input), the step's deadline passes
(``DeadlineExceededError`` naming the queue and its size) or the step is cancelled (its
session closed: ``CancelledError``).

Dequeues are served in the order they arrived, as TF's queues serve their pending
attempts: a dequeue that finds others waiting gets in line behind them, even if elements
are there (so a fast replica cannot take every token of `SyncReplicasOptimizer` while a
slow one waits). The one at the head takes its elements in its ready function (a claim on
the step, `StepContext.claim`), so two steps woken together never both see one element.
"""

import collections
import threading

import numpy as np

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import get_default_graph
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.random_ops import get_seed
from nbdist.ops.resources import Feeders
from nbdist.ops.shape_ops import get_static_value

__all__ = ["FIFOQueue", "QueueBase", "RandomShuffleQueue"]


class QueueResource:
    """A queue's elements (tuples of arrays, one per component), capacity and state."""

    def __init__(self, name, device, attrs):
        self.name = name
        self.device = device
        self.capacity = int(attrs["capacity"])  # < 0: unbounded
        self.dtypes = list(attrs["component_types"])
        self.shapes = [TensorShape(s) for s in attrs.get("shapes") or []]
        self.min_after_dequeue = int(attrs.get("min_after_dequeue", 0))
        self.shuffle = bool(attrs.get("shuffle", False))
        seed = (int(attrs.get("seed", 0)), int(attrs.get("seed2", 0)))
        self._rng = np.random.default_rng(None if seed == (0, 0) else list(seed))
        self.items = collections.deque()
        self.dequeuers = collections.deque()  # waiting dequeues, first come first served: (ctx, node name)
        self.closed = False
        self.lock = threading.Lock()
        self.feeders = Feeders()  # the tasks whose steps enqueued here

    def kind_name(self):
        return "RandomShuffleQueue" if self.shuffle else "FIFOQueue"

    def describe(self):
        cap = "unbounded" if self.capacity < 0 else f"capacity {self.capacity}"
        state = ", closed" if self.closed else ""
        return f"{self.kind_name()} {self.name!r} on {self.device} ({len(self.items)} elements, {cap}{state})"

    def snapshot(self):
        """The state a timeline shows after each op on the queue."""
        state = {"size": len(self.items)}
        if self.closed:
            state["closed"] = True
        return state

    # -- what blocking ops wait for (None: ready) -----------------------------------------------
    def room_for(self, n):
        if self.closed or self.capacity < 0 or len(self.items) + n <= self.capacity:
            return None
        if n > self.capacity and not self.items:  # an enqueue_many larger than the queue
            return None
        return f"room for {n} element(s) in {self.describe()}"

    def serve_dequeue(self, ctx, node, n, up_to=False):
        """A dequeue's ready function (under the lock): None once it may run, else what it waits for.

        The dequeue at the head of the line (or arriving when nobody waits) that finds its
        elements takes them now, as a claim its kernel collects; once the queue is closed
        it runs without a claim if too few are left (its kernel raises `OutOfRangeError`).
        """
        if ctx.has_claim(node):
            return None
        me = (ctx, node.name)
        if any(waiter.finished for waiter, _ in self.dequeuers):  # steps that gave up waiting
            self.dequeuers = collections.deque(w for w in self.dequeuers if not w[0].finished)
        if not self.dequeuers or self.dequeuers[0] == me:
            # A shuffle queue keeps `min_after_dequeue` elements back until it is closed.
            if len(self.items) >= n + (0 if self.closed else self.min_after_dequeue):
                self._claim(ctx, node, self.take(n, node))
                return None
            if self.closed:
                if up_to and self.items:
                    self._claim(ctx, node, self.take(len(self.items), node))
                elif self.dequeuers:
                    self.dequeuers.popleft()
                return None
        if me not in self.dequeuers:
            self.dequeuers.append(me)
        ahead = self.dequeuers.index(me)
        behind = f" behind {ahead} earlier dequeue(s)" if ahead else ""
        # Its feeders gone, a dequeue still waits (TF's does): another task may yet enqueue.
        lost = self.feeders.lost_note(ctx.resources.lost_tasks)
        return f"{n} element(s) from {self.describe()}{behind}{lost}"

    def _claim(self, ctx, node, elements):
        if self.dequeuers and self.dequeuers[0] == (ctx, node.name):
            self.dequeuers.popleft()
        ctx.claim(node, elements, lambda: self._give_back(elements))

    def _give_back(self, elements):
        # The step failed after its dequeue was served: its elements go back to the front.
        with self.lock:
            self.items.extendleft(reversed(elements))

    # -- changes (under the lock) ----------------------------------------------------------------
    def put(self, elements, node):
        if self.closed:
            raise errors.CancelledError(
                node.name, None, f"{self.kind_name()} {self.name!r} is closed: enqueue after close()"
            )
        for element in elements:
            self._check(element, node)
            self.items.append(element)

    def take(self, n, node, up_to=False):
        available = len(self.items)
        if available < n and not (up_to and self.closed and available > 0):
            raise errors.OutOfRangeError(
                node.name,
                None,
                f"{self.kind_name()} {self.name!r} is closed and has insufficient elements "
                f"(requested {n}, current size {available})",
            )
        out = []
        for _ in range(min(n, available)):
            if self.shuffle and len(self.items) > 1:
                i = int(self._rng.integers(len(self.items)))
                self.items.rotate(-i)
                out.append(self.items.popleft())
                self.items.rotate(i)
            else:
                out.append(self.items.popleft())
        return out

    def stack(self, elements):
        """The outputs of a dequeue_many of `elements`: each component stacked along a new axis."""
        return [
            np.stack([e[i] for e in elements])
            if elements
            else np.zeros((0, *(self.shapes[i].as_list() if self.shapes else [])), self.dtypes[i].np)
            for i in range(len(self.dtypes))
        ]

    def _check(self, element, node):
        if len(element) != len(self.dtypes):
            raise errors.InvalidArgumentError(
                node.name, None, f"{self.name!r} takes {len(self.dtypes)} component(s), got {len(element)}"
            )
        for i, (value, shape) in enumerate(zip(element, self.shapes)):
            if shape.ndims is not None and not shape.is_compatible_with(value.shape):
                raise errors.InvalidArgumentError(
                    node.name,
                    None,
                    f"shape mismatch in tuple component {i} of queue {self.name!r}: expected {shape}, "
                    f"got {list(value.shape)}",
                )


# Queues of other orders or batching (ops/queue_more_ops.py): their creators name their
# QueueResource subclass by a ``queue_class`` attr; the queue ops are the same.
QUEUE_CLASSES = {}


def _make_queue(name, device, attrs):
    return QUEUE_CLASSES.get(attrs.get("queue_class", ""), QueueResource)(name, device, attrs)


QUEUE = registry.resource_kind("queue", _make_queue, attrs=("capacity", "component_types"), watched=True)


def _resource_shape(inputs, attrs):
    return [(_dtypes.string, TensorShape(()))]


def _creator_kernel(ctx, node):
    queue = ctx.resources.resource(QUEUE, node)
    return np.array(queue.name.encode(), dtype=object)


for _creator in ("FIFOQueueV2", "RandomShuffleQueueV2"):
    registry.declare(_creator, creates="queue", stateful=True)
    registry.shape(_creator)(_resource_shape)
    registry.kernel(_creator)(_creator_kernel)
    registry.no_gradient(_creator)


def _declare(op_type, shape_fn, *, blocking=False):
    # A queue notifies its resource manager on every change: a step waiting on it parks.
    registry.declare(op_type, ref_inputs={0: "queue"}, stateful=True, blocking=blocking, parks=blocking)
    registry.shape(op_type)(shape_fn)
    registry.no_gradient(op_type)


def _changed(ctx, queue):
    ctx.resources.notify(queue)  # (the runs parked on this queue look again)


# -- enqueue ---------------------------------------------------------------------------------------
_declare("QueueEnqueueV2", lambda inputs, attrs: [], blocking=True)
_declare("QueueEnqueueManyV2", lambda inputs, attrs: [], blocking=True)


@registry.ready("QueueEnqueueV2")
def _enqueue_ready(ctx, node, queue, *components):
    with queue.lock:
        return queue.room_for(1)


@registry.kernel("QueueEnqueueV2")
def _enqueue_kernel(ctx, node, queue, *components):
    with queue.lock:
        queue.put([tuple(np.asarray(c) for c in components)], node)
        queue.feeders.add(ctx.master)
    _changed(ctx, queue)


def _many(components, node):
    n = {np.shape(c)[0] if np.ndim(c) else -1 for c in components}
    if len(n) != 1 or -1 in n:
        raise errors.InvalidArgumentError(
            node.name, None, f"enqueue_many: every component needs the same first dimension, got {sorted(n)}"
        )
    return n.pop()


@registry.ready("QueueEnqueueManyV2")
def _enqueue_many_ready(ctx, node, queue, *components):
    with queue.lock:
        return queue.room_for(_many(components, node))


@registry.kernel("QueueEnqueueManyV2")
def _enqueue_many_kernel(ctx, node, queue, *components):
    n = _many(components, node)
    with queue.lock:
        queue.put([tuple(np.asarray(c[i]) for c in components) for i in range(n)], node)
        queue.feeders.add(ctx.master)
    _changed(ctx, queue)


# -- dequeue ---------------------------------------------------------------------------------------
def _dequeue_shape(inputs, attrs):
    shapes = attrs.get("shapes") or [None] * len(attrs["component_types"])
    return [(d, TensorShape(s)) for d, s in zip(attrs["component_types"], shapes)]


def _dequeue_many_shape(inputs, attrs, n=None):
    shapes = attrs.get("shapes") or [None] * len(attrs["component_types"])
    return [
        (d, TensorShape(None) if s is None else TensorShape([n, *TensorShape(s).as_list()]))
        for d, s in zip(attrs["component_types"], shapes)
    ]


_declare("QueueDequeueV2", _dequeue_shape, blocking=True)


def _dequeue_n_shape(inputs, attrs):
    n = get_static_value(inputs[1])  # TF's dequeue_many: a known n is the batch dimension
    return _dequeue_many_shape(inputs, attrs, None if n is None else int(n))


_declare("QueueDequeueManyV2", _dequeue_n_shape, blocking=True)
_declare("QueueDequeueUpToV2", _dequeue_many_shape, blocking=True)


def _outputs(values):
    return values[0] if len(values) == 1 else tuple(values)


@registry.ready("QueueDequeueV2")
def _dequeue_ready(ctx, node, queue):
    with queue.lock:
        return queue.serve_dequeue(ctx, node, 1)


def _claimed(ctx, node, queue, n, up_to=False):
    """The elements the ready function claimed; without a claim the queue closed too short."""
    elements = ctx.pop_claim(node)
    if elements is None:
        with queue.lock:
            elements = queue.take(n, node, up_to)  # raises OutOfRangeError (closed, too few left)
    _changed(ctx, queue)  # the next dequeue in line may go now
    return elements


@registry.kernel("QueueDequeueV2")
def _dequeue_kernel(ctx, node, queue):
    (element,) = _claimed(ctx, node, queue, 1)
    return _outputs(list(element))


@registry.ready("QueueDequeueManyV2")
def _dequeue_many_ready(ctx, node, queue, n):
    with queue.lock:
        return queue.serve_dequeue(ctx, node, int(n))


@registry.ready("QueueDequeueUpToV2")
def _dequeue_up_to_ready(ctx, node, queue, n):
    with queue.lock:
        return queue.serve_dequeue(ctx, node, int(n), up_to=True)


@registry.kernel("QueueDequeueManyV2")
def _dequeue_many_kernel(ctx, node, queue, n):
    return _outputs(queue.stack(_claimed(ctx, node, queue, int(n))))


@registry.kernel("QueueDequeueUpToV2")
def _dequeue_up_to_kernel(ctx, node, queue, n):
    return _outputs(queue.stack(_claimed(ctx, node, queue, int(n), up_to=True)))  # fewer once closed


# -- size, close -----------------------------------------------------------------------------------
_declare("QueueSizeV2", lambda inputs, attrs: [(_dtypes.int32, TensorShape(()))])
_declare("QueueIsClosedV2", lambda inputs, attrs: [(_dtypes.bool, TensorShape(()))])
_declare("QueueCloseV2", lambda inputs, attrs: [])


@registry.kernel("QueueSizeV2")
def _size_kernel(ctx, node, queue):
    with queue.lock:
        return np.int32(len(queue.items))


registry.kernel("QueueIsClosedV2")(lambda ctx, node, queue: np.bool_(queue.closed))


@registry.kernel("QueueCloseV2")
def _close_kernel(ctx, node, queue):
    # Pending enqueues see a closed queue when they wake (CancelledError); pending dequeues
    # get what is left, then OutOfRangeError, as in TF.
    with queue.lock:
        queue.closed = True
    _changed(ctx, queue)


# -- the Python classes ----------------------------------------------------------------------------
def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


class QueueBase:
    """`tf.QueueBase`: the ops of a queue, all colocated with it.

    Args:
        dtypes: one `DType` per component of an element.
        shapes: one shape per component (None: unknown; `dequeue_many` needs them).
        names: optional component names (elements are then dicts).
        queue_ref: the creator op's output.
    """

    def __init__(self, dtypes, shapes, names, queue_ref):
        self._dtypes = dtypes
        self._shapes = shapes
        self._names = names
        self._queue_ref = queue_ref
        self._name = queue_ref.op.name

    queue_ref = property(lambda self: self._queue_ref)
    name = property(lambda self: self._name)
    dtypes = property(lambda self: self._dtypes)
    shapes = property(lambda self: self._shapes)
    names = property(lambda self: self._names)

    def _op(self, op_type, inputs=(), name=None, attrs=None):
        graph = self._queue_ref.graph
        with graph.colocate_with(self._queue_ref.op):
            return registry.make_op(op_type, [self._queue_ref, *inputs], attrs, name=name)

    def _components(self, vals, many):
        if isinstance(vals, dict):
            if self._names is None:
                raise ValueError("Queue must have names to enqueue a dictionary")
            vals = [vals[n] for n in self._names]
        vals = _as_list(vals)
        if len(vals) != len(self._dtypes):
            raise ValueError(f"queue {self._name!r} takes {len(self._dtypes)} component(s), got {len(vals)}")
        tensors = [convert_to_tensor(v, dtype=d) for v, d in zip(vals, self._dtypes)]
        for t, s in zip(tensors, self._shapes or []):
            shape = t.shape
            if many and shape.ndims:
                shape = TensorShape(shape.as_list()[1:])
            if s is not None and shape.ndims is not None and not TensorShape(s).is_compatible_with(shape):
                raise ValueError(
                    f"Shape {shape} of an element is not compatible with queue shape {TensorShape(s)}"
                )
        return tensors

    def _attrs(self):
        attrs = {"component_types": list(self._dtypes)}
        if self._shapes is not None:
            attrs["shapes"] = [TensorShape(s) for s in self._shapes]
        return attrs

    def enqueue(self, vals, name=None):
        """Enqueues one element (waits while the queue is full)."""
        return self._op("QueueEnqueueV2", self._components(vals, False), name or f"{self._name}_enqueue")

    def enqueue_many(self, vals, name=None):
        """Enqueues the slices of `vals` along their first dimension, as elements."""
        return self._op(
            "QueueEnqueueManyV2", self._components(vals, True), name or f"{self._name}_EnqueueMany"
        )

    def _result(self, op):
        outs = list(op.outputs)
        if self._names is not None:
            return dict(zip(self._names, outs))
        return outs[0] if len(outs) == 1 else outs

    def dequeue(self, name=None):
        """Dequeues one element (waits while the queue is empty; `OutOfRangeError` once closed)."""
        return self._result(self._op("QueueDequeueV2", (), name or f"{self._name}_Dequeue", self._attrs()))

    def dequeue_many(self, n, name=None):
        """Dequeues `n` elements, stacked along a new first dimension."""
        if self._shapes is None or any(
            s is None or not TensorShape(s).is_fully_defined() for s in self._shapes
        ):
            raise ValueError(
                f"dequeue_many on queue {self._name!r} requires the components to have specified shapes"
            )
        n = convert_to_tensor(n, dtype=_dtypes.int32)
        return self._result(
            self._op("QueueDequeueManyV2", (n,), name or f"{self._name}_DequeueMany", self._attrs())
        )

    def dequeue_up_to(self, n, name=None):
        """Like `dequeue_many`, but once the queue is closed returns fewer than `n` if that is all."""
        n = convert_to_tensor(n, dtype=_dtypes.int32)
        return self._result(
            self._op("QueueDequeueUpToV2", (n,), name or f"{self._name}_DequeueUpTo", self._attrs())
        )

    def size(self, name=None):
        return self._op("QueueSizeV2", (), name or f"{self._name}_Size").outputs[0]

    def is_closed(self, name=None):
        return self._op("QueueIsClosedV2", (), name or f"{self._name}_IsClosed").outputs[0]

    def close(self, cancel_pending_enqueues=False, name=None):
        """Closes the queue: enqueues fail; dequeues drain it, then raise `OutOfRangeError`."""
        attrs = {"cancel_pending_enqueues": bool(cancel_pending_enqueues)}
        return self._op("QueueCloseV2", (), name or f"{self._name}_Close", attrs)


def _shape_list(shapes):
    # TF's rule: a TensorShape or a list of ints (or Nones), e.g. ``()``, is one component's shape.
    if shapes is None:
        return None
    if isinstance(shapes, TensorShape):
        shapes = [shapes]
    if not isinstance(shapes, (list, tuple)):
        raise TypeError(f"shapes must be a list of shapes, got {shapes!r}")
    if all(s is None or isinstance(s, int) for s in shapes):
        shapes = [shapes]
    return [TensorShape(s) for s in shapes]


def _normalize(dtypes, shapes, names):
    dtypes = [_dtypes.as_dtype(d) for d in _as_list(dtypes)]
    shapes = _shape_list(shapes)
    if shapes is not None and len(shapes) != len(dtypes):
        raise ValueError(f"Queue shapes must have the same length as dtypes: {len(shapes)} vs {len(dtypes)}")
    if names is not None:
        names = _as_list(names)
        if len(names) != len(dtypes):
            raise ValueError(
                f"Queue names must have the same length as dtypes: {len(names)} vs {len(dtypes)}"
            )
    return dtypes, shapes, names


class FIFOQueue(QueueBase):
    """`tf.FIFOQueue(capacity, dtypes, shapes=None, names=None, shared_name=None, name="fifo_queue")`.

    ``capacity < 0`` is unbounded. Elements come out in the order they went in.
    """

    def __init__(self, capacity, dtypes, shapes=None, names=None, shared_name=None, name="fifo_queue"):
        dtypes, shapes, names = _normalize(dtypes, shapes, names)
        attrs = {
            "capacity": int(capacity),
            "component_types": dtypes,
            "shapes": shapes or [],
            "container": get_default_graph().current_container(),
            "shared_name": shared_name or "",
        }
        ref = registry.make_op("FIFOQueueV2", [], attrs, name=name).outputs[0]
        super().__init__(dtypes, shapes, names, ref)


class RandomShuffleQueue(QueueBase):
    """`tf.RandomShuffleQueue`: dequeues a random element once more than `min_after_dequeue` wait.

    Raises:
        ValueError: if ``min_after_dequeue >= capacity``.
    """

    def __init__(
        self,
        capacity,
        min_after_dequeue,
        dtypes,
        shapes=None,
        names=None,
        seed=None,
        shared_name=None,
        name="random_shuffle_queue",
    ):
        if capacity >= 0 and min_after_dequeue >= capacity:
            raise ValueError(
                f"RandomShuffleQueue: min_after_dequeue ({min_after_dequeue}) must be less than "
                f"capacity ({capacity})"
            )
        dtypes, shapes, names = _normalize(dtypes, shapes, names)
        seed1, seed2 = get_seed(seed)
        attrs = {
            "capacity": int(capacity),
            "min_after_dequeue": int(min_after_dequeue),
            "component_types": dtypes,
            "shapes": shapes or [],
            "shuffle": True,
            "seed": seed1 or 0,
            "seed2": seed2 or 0,
            "container": get_default_graph().current_container(),
            "shared_name": shared_name or "",
        }
        ref = registry.make_op("RandomShuffleQueueV2", [], attrs, name=name).outputs[0]
        super().__init__(dtypes, shapes, names, ref)
