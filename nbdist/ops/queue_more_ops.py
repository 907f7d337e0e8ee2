"""`tf.PaddingFIFOQueue` and `tf.PriorityQueue`: queues of ops/queue_ops.py's kind (resources
served on the task that holds them, the same enqueue / dequeue / size / close ops), whose
elements batch or order otherwise.

A ``PaddingFIFOQueue`` takes elements whose components vary in size along the dimensions its
shapes leave ``None``; `dequeue_many` / `dequeue_up_to` pad each component with zeros (``b""``
for strings) to the largest of the batch, as TF's ``PaddingFIFOQueue`` does. A
``PriorityQueue``'s elements are ``(priority, ...)`` tuples, the priority an int64 scalar;
dequeues take the smallest priority first (TF's min-heap; among equal priorities the one
enqueued first here, where TF leaves the order open).
"""

import numpy as np

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import get_default_graph
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import queue_ops, registry
from nbdist.ops.constant_op import convert_to_tensor

__all__ = ["PaddingFIFOQueue", "PriorityQueue"]


class PaddingQueueResource(queue_ops.QueueResource):
    """A FIFO queue whose batches pad each component to the batch's largest element."""

    def kind_name(self):
        return "PaddingFIFOQueue"

    def stack(self, elements):
        out = []
        for i, dtype in enumerate(self.dtypes):
            parts = [np.asarray(e[i]) for e in elements]
            size = [
                max((p.shape[d] for p in parts), default=0) if known is None else known
                for d, known in enumerate(self.shapes[i].as_list())
            ]
            batch = np.full((len(parts), *size), b"" if dtype == _dtypes.string else 0, dtype.np)
            for j, part in enumerate(parts):
                batch[(j, *map(slice, part.shape))] = part
            out.append(batch)
        return out


class PriorityQueueResource(queue_ops.QueueResource):
    """A queue of ``(priority, ...)`` elements that serves the smallest priority first."""

    def __init__(self, name, device, attrs):
        super().__init__(name, device, attrs)
        self.dtypes = [_dtypes.int64, *self.dtypes]
        if self.shapes:
            self.shapes = [TensorShape(()), *self.shapes]

    def kind_name(self):
        return "PriorityQueue"

    def put(self, elements, node):
        for element in elements:
            if element and np.ndim(element[0]) != 0:
                raise errors.InvalidArgumentError(
                    node.name,
                    None,
                    f"PriorityQueue {self.name!r}: expected the priority element to be a scalar, "
                    f"but received shape {list(np.shape(element[0]))}",
                )
        super().put(elements, node)
        # sorted() is stable: equal priorities leave in the order they came.
        self.items = type(self.items)(sorted(self.items, key=lambda e: int(e[0])))


queue_ops.QUEUE_CLASSES.update(padding=PaddingQueueResource, priority=PriorityQueueResource)


def _creator_kernel(ctx, node):
    queue = ctx.resources.resource(queue_ops.QUEUE, node)
    return np.array(queue.name.encode(), dtype=object)


for _creator in ("PaddingFIFOQueueV2", "PriorityQueueV2"):
    registry.declare(_creator, creates="queue", stateful=True)
    registry.shape(_creator)(lambda inputs, attrs: [(_dtypes.string, TensorShape(()))])
    registry.kernel(_creator)(_creator_kernel)
    registry.no_gradient(_creator)


def _shapes_of(shapes, partial):
    """TF's ``_as_shape_list``: one shape per component (partial ones only where allowed)."""
    if partial and (
        not isinstance(shapes, (list, tuple))
        or not shapes
        or any(s is None or isinstance(s, int) for s in shapes)
    ):
        raise ValueError("When providing partial shapes, a list of shapes must be provided.")
    if shapes is None:
        return None
    if isinstance(shapes, TensorShape):
        shapes = [shapes]
    if not isinstance(shapes, (list, tuple)):
        raise TypeError(
            f"Shapes must be a TensorShape or a list or tuple of TensorShapes, got {type(shapes)} instead."
        )
    if all(s is None or isinstance(s, int) for s in shapes):
        shapes = [shapes]
    shapes = [TensorShape(s) for s in shapes]
    if not partial and any(not s.is_fully_defined() for s in shapes):
        raise ValueError(f"All shapes must be fully defined: {shapes}")
    if any(s.ndims is None for s in shapes):
        raise ValueError(f"All shapes must have a defined rank: {shapes}")
    return shapes


def _names_of(names, dtypes):
    if names is None:
        return None
    names = list(names) if isinstance(names, (list, tuple)) else [names]
    if len(names) != len(dtypes):
        raise ValueError(f"List of names {names} has a different length than dtypes: {len(dtypes)}")
    return names


def _dtypes_of(dtypes):
    return [_dtypes.as_dtype(d) for d in (dtypes if isinstance(dtypes, (list, tuple)) else [dtypes])]


def _create(op_type, queue_class, capacity, dtypes, shapes, shared_name, name):
    attrs = {
        "capacity": int(capacity),
        "component_types": dtypes,
        "shapes": shapes or [],
        "queue_class": queue_class,
        "container": get_default_graph().current_container(),
        "shared_name": shared_name or "",
    }
    return registry.make_op(op_type, [], attrs, name=name).outputs[0]


class PaddingFIFOQueue(queue_ops.QueueBase):
    """`tf.PaddingFIFOQueue(capacity, dtypes, shapes, names=None, shared_name=None,
    name="padding_fifo_queue")`: a FIFO queue whose `dequeue_many` pads.

    `shapes` (required, one per component, of known rank) may leave dimensions ``None``:
    elements vary in size there, and a batch pads each to its largest with zeros.

    Raises:
        ValueError: `shapes` is not a list of shapes, or its length, or that of `names`,
            differs from that of `dtypes`.
    """

    def __init__(self, capacity, dtypes, shapes, names=None, shared_name=None, name="padding_fifo_queue"):
        dtypes = _dtypes_of(dtypes)
        shapes = _shapes_of(shapes, partial=True)
        names = _names_of(names, dtypes)
        if len(dtypes) != len(shapes):
            raise ValueError(
                f"Shapes must be provided for all components, but received {len(dtypes)} dtypes and "
                f"{len(shapes)} shapes."
            )
        ref = _create("PaddingFIFOQueueV2", "padding", capacity, dtypes, shapes, shared_name, name)
        super().__init__(dtypes, shapes, names, ref)

    def dequeue_many(self, n, name=None):
        """Dequeues `n` elements, each component padded to the batch's largest and stacked."""
        n = convert_to_tensor(n, dtype=_dtypes.int32)
        op = self._op("QueueDequeueManyV2", (n,), name or f"{self._name}_DequeueMany", self._attrs())
        return self._result(op)


class PriorityQueue(queue_ops.QueueBase):
    """`tf.PriorityQueue(capacity, types, shapes=None, names=None, shared_name=None,
    name="priority_queue")`: elements are ``(priority, *components)``, the priority an int64
    scalar; dequeues serve the smallest priority first.

    `types` and `shapes` (fully defined) describe the components after the priority;
    `names`, when given, names the priority too.

    Raises:
        TypeError: `shapes` is None (TF's op needs them).
        ValueError: a shape is not fully defined.
    """

    def __init__(self, capacity, types, shapes=None, names=None, shared_name=None, name="priority_queue"):
        types = _dtypes_of(types)
        shapes = _shapes_of(shapes, partial=False)
        if shapes is None:
            raise TypeError("Expected list for 'shapes' argument to 'priority_queue_v2' Op, not None.")
        ref = _create("PriorityQueueV2", "priority", capacity, types, shapes, shared_name, name)
        dtypes = [_dtypes.int64, *types]
        super().__init__(dtypes, [TensorShape(()), *shapes], _names_of(names, dtypes), ref)
