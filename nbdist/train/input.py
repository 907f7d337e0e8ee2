"""Queue-based input pipelines: `tf.train.string_input_producer`, `batch`, `shuffle_batch`, ...

TF 1.x's `tensorflow/python/training/input.py`, built the same way from nbdist's queues: a
producer is a `FIFOQueue` filled by an `enqueue_many` of (optionally `random_shuffle`d)
rows, its `QueueRunner` in `GraphKeys.QUEUE_RUNNERS` and a "fraction full" summary; with
`num_epochs`, `limit_epochs` guards the rows with a local `epochs` counter (`count_up_to`),
so after `num_epochs` enqueues the queue runner's thread gets `OutOfRangeError`, closes the
queue, and readers and dequeues downstream end with `OutOfRangeError` once it is drained:
the clean end of TF's ``while not coord.should_stop()`` loop. As in TF, `num_epochs` needs
`tf.local_variables_initializer()`.

The batching functions make a queue (`FIFOQueue`, or `RandomShuffleQueue` for the shuffle
ones), one enqueue op per thread (or per tensor list for the ``_join`` forms) run by a
`QueueRunner`, and a `dequeue_many` (or `dequeue_up_to` with `allow_smaller_final_batch`).
Lists and dicts come back as they went in (a list of one tensor as the tensor). Shuffled
orders are nbdist's own (seeded, reproducible), not TF's. A vector `keep_input` (with
`enqueue_many`) keeps the rows it marks. Not built: `dynamic_pad` (TF's `PaddingFIFOQueue`) and
`SparseTensor` inputs.
"""

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import GraphKeys, Tensor, name_scope
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import math_ops, reader_ops, summary_ops
from nbdist.ops.cast_select_ops import cast
from nbdist.ops.cond_ops import cond
from nbdist.ops.constant_op import constant, convert_to_tensor
from nbdist.ops.control_flow_ops import Assert, no_op
from nbdist.ops.index_ops import dynamic_partition
from nbdist.ops.queue_ops import FIFOQueue, RandomShuffleQueue
from nbdist.ops.random_ops import random_shuffle
from nbdist.ops.reduction_ops import gather
from nbdist.ops.shape_ops import get_static_value, shape, size
from nbdist.ops.state_ops import Variable
from nbdist.ops.unary_ops import identity
from nbdist.train.queue_runner import QueueRunner, add_queue_runner

__all__ = [
    "batch",
    "batch_join",
    "input_producer",
    "limit_epochs",
    "match_filenames_once",
    "maybe_batch",
    "maybe_batch_join",
    "maybe_shuffle_batch",
    "maybe_shuffle_batch_join",
    "range_input_producer",
    "shuffle_batch",
    "shuffle_batch_join",
    "slice_input_producer",
    "string_input_producer",
]


# -- producers -------------------------------------------------------------------------------------
def match_filenames_once(pattern, name=None):
    """A local variable holding the (sorted) files matching `pattern` (a glob or 1-D tensor of them).

    Needs `tf.local_variables_initializer()`, as in TF.
    """
    with name_scope(name, "matching_filenames", [pattern]) as scope:
        return Variable(
            reader_ops.matching_files(pattern),
            name=scope,
            trainable=False,
            validate_shape=False,
            collections=[GraphKeys.LOCAL_VARIABLES],
        )


def limit_epochs(tensor, num_epochs=None, name=None):
    """`tensor`, `num_epochs` times; then `OutOfRangeError` (a local ``epochs`` counter).

    Raises:
        ValueError: if `num_epochs` is not positive.
    """
    if num_epochs is None:
        return tensor
    if num_epochs <= 0:
        raise ValueError(f"num_epochs must be > 0 not {num_epochs}.")
    with name_scope(name, "limit_epochs", [tensor]) as scope:
        epochs = Variable(
            constant(0, dtype=_dtypes.int64),
            name="epochs",
            trainable=False,
            collections=[GraphKeys.LOCAL_VARIABLES],
        )
        counter = epochs.count_up_to(num_epochs)
        with counter.graph.control_dependencies([counter]):
            return identity(tensor, name=scope)


def input_producer(
    input_tensor,
    element_shape=None,
    num_epochs=None,
    shuffle=True,
    seed=None,
    capacity=32,
    shared_name=None,
    summary_name=None,
    name=None,
    cancel_op=None,
):
    """A `FIFOQueue` fed with the rows of `input_tensor` (shuffled per epoch if `shuffle`).

    Raises:
        ValueError: if the rows' shape is neither known nor given as `element_shape`.
    """
    with name_scope(name, "input_producer", [input_tensor]):
        input_tensor = convert_to_tensor(input_tensor, name="input_tensor")
        rows = input_tensor.shape
        if rows.ndims == 0:
            raise ValueError(
                f"Shape {rows} must have rank at least 1 (input_producer takes rows: {input_tensor.name})"
            )
        row_shape = TensorShape(None) if rows.ndims is None else TensorShape(rows.as_list()[1:])
        element_shape = row_shape.merge_with(TensorShape(element_shape))
        if not element_shape.is_fully_defined():
            raise ValueError(
                "Either `input_tensor` must have a fully defined shape or `element_shape` must be specified"
            )
        if shuffle:
            input_tensor = random_shuffle(input_tensor, seed=seed)
        input_tensor = limit_epochs(input_tensor, num_epochs)
        queue = FIFOQueue(
            capacity=capacity,
            dtypes=[input_tensor.dtype],
            shapes=[element_shape],
            shared_name=shared_name,
            name=name,
        )
        enqueue = queue.enqueue_many([input_tensor])
        add_queue_runner(QueueRunner(queue, [enqueue], cancel_op=cancel_op))
        if summary_name is not None:
            summary_ops.scalar(summary_name, cast(queue.size(), _dtypes.float32) * (1.0 / capacity))
        return queue


def string_input_producer(
    string_tensor,
    num_epochs=None,
    shuffle=True,
    seed=None,
    capacity=32,
    shared_name=None,
    name=None,
    cancel_op=None,
):
    """A queue of the strings of `string_tensor` (filenames), `num_epochs` times (None: for ever).

    Raises:
        ValueError: if `string_tensor` is an empty list.
    """
    not_null_err = "string_input_producer requires a non-null input tensor"
    if not isinstance(string_tensor, Tensor) and not len(string_tensor):
        raise ValueError(not_null_err)
    with name_scope(name, "input_producer", [string_tensor]) as scope:
        string_tensor = convert_to_tensor(string_tensor, dtype=_dtypes.string)
        check = Assert(math_ops.greater(size(string_tensor), 0), [not_null_err])
        with string_tensor.graph.control_dependencies([check]):
            string_tensor = identity(string_tensor)
        return input_producer(
            string_tensor,
            element_shape=[],
            num_epochs=num_epochs,
            shuffle=shuffle,
            seed=seed,
            capacity=capacity,
            shared_name=shared_name,
            name=scope,
            summary_name=f"fraction_of_{capacity}_full",
            cancel_op=cancel_op,
        )


def range_input_producer(
    limit, num_epochs=None, shuffle=True, seed=None, capacity=32, shared_name=None, name=None
):
    """A queue of the integers ``0 .. limit - 1``, `num_epochs` times."""
    with name_scope(name, "input_producer", [limit]) as scope:
        return input_producer(
            math_ops.range(limit),
            [],
            num_epochs,
            shuffle,
            seed,
            capacity,
            shared_name,
            f"fraction_of_{capacity}_full",
            scope,
        )


def slice_input_producer(
    tensor_list, num_epochs=None, shuffle=True, seed=None, capacity=32, shared_name=None, name=None
):
    """One slice (row) of each tensor of `tensor_list` per step: a list of tensors.

    Raises:
        ValueError: if `tensor_list` is empty.
    """
    with name_scope(name, "input_producer", tensor_list):
        tensor_list = [convert_to_tensor(t) for t in tensor_list]
        if not tensor_list:
            raise ValueError("Expected at least one tensor in slice_input_producer().")
        queue = range_input_producer(
            shape(tensor_list[0])[0],
            num_epochs=num_epochs,
            shuffle=shuffle,
            seed=seed,
            capacity=capacity,
            shared_name=shared_name,
        )
        index = queue.dequeue()
        return [gather(t, index) for t in tensor_list]


# -- batching --------------------------------------------------------------------------------------
def _as_tensor_list(tensors):
    if isinstance(tensors, dict):
        return [tensors[k] for k in sorted(tensors, key=str)]
    return list(tensors) if isinstance(tensors, (list, tuple)) else [tensors]


def _as_original_type(original, dequeued):
    if isinstance(original, dict):
        if len(original) == 1:
            dequeued = [dequeued]
        return {k: dequeued[i] for i, k in enumerate(sorted(original, key=str))}
    return dequeued


def _validate(tensor_lists):
    if not tensor_lists or not all(tensor_lists):
        raise ValueError("Expected at least one tensor in batch().")
    if isinstance(tensor_lists[0], dict):
        keys = set(tensor_lists[0])
        if any(set(t) != keys for t in tensor_lists[1:]):
            raise ValueError("All dictionaries in tensors_list must have the same keys")
    lists = [[convert_to_tensor(t) for t in _as_tensor_list(tl)] for tl in tensor_lists]
    types = [t.dtype for t in lists[0]]
    for other in lists[1:]:
        if [t.dtype for t in other] != types:
            raise TypeError(
                f"Expected types to be consistent: {', '.join(t.name for t in types)} vs. "
                f"{', '.join(t.dtype.name for t in other)}."
            )
    return lists, types


def _shapes(tensor_lists, shapes, enqueue_many):
    if shapes is not None:
        return shapes
    merged = []
    for i in range(len(tensor_lists[0])):
        shape_i = TensorShape(None)
        for tl in tensor_lists:
            s = tl[i].shape
            if s.ndims is None:
                raise ValueError(f"Cannot infer Tensor's rank: {tl[i]}")
            shape_i = shape_i.merge_with(TensorShape(s.as_list()[1:]) if enqueue_many else s)
        merged.append(shape_i)
    return merged


def _keep_input(keep_input, enqueue_many):
    keep_input = convert_to_tensor(keep_input, dtype=_dtypes.bool)
    if keep_input.shape.ndims is None:
        raise ValueError("`keep_input` dimensions must be known at graph construction.")
    if not enqueue_many and keep_input.shape.ndims == 1:
        raise ValueError("`keep_input` cannot be a vector when `enqueue_many=False`.")
    if keep_input.shape.ndims > 1:
        raise ValueError("`keep_input` must be 0 or 1 dimensions.")
    return keep_input


def _enqueue_ops(queue, tensor_lists, enqueue_many, keep_input):
    enqueue_fn = queue.enqueue_many if enqueue_many else queue.enqueue
    if keep_input.shape.ndims == 1:  # per example, as TF's _select_which_to_enqueue
        keep = cast(keep_input, _dtypes.int32)
        return [enqueue_fn([dynamic_partition(t, keep, 2)[1] for t in tl]) for tl in tensor_lists]
    static = get_static_value(keep_input)
    ops = []
    for tl in tensor_lists:
        if static is not None:  # TF's smart_cond: a constant decides at graph construction
            ops.append(enqueue_fn(tl) if bool(static) else no_op())
        else:
            ops.append(cond(keep_input, lambda tl=tl: enqueue_fn(tl), no_op))
    return ops


def _make_batch(
    kind,
    tensors_list,
    batch_size,
    keep_input,
    threads,
    capacity,
    enqueue_many,
    shapes,
    dynamic_pad,
    allow_smaller_final_batch,
    shared_name,
    name,
    shuffle=None,
):
    """The one builder behind every batching function; `shuffle` is ``(min_after_dequeue, seed)``."""
    if dynamic_pad:
        raise NotImplementedError("dynamic_pad=True (TF's PaddingFIFOQueue) is not supported by nbdist yet")
    flat = [t for tl in tensors_list for t in _as_tensor_list(tl)]
    with name_scope(name, kind, [*flat, keep_input]) as scope:
        if shuffle is not None and capacity <= shuffle[0]:
            raise ValueError(f"capacity {capacity} must be bigger than min_after_dequeue {shuffle[0]}.")
        tensor_lists, types = _validate(tensors_list)
        keep_input = _keep_input(keep_input, enqueue_many)
        shapes = _shapes(tensor_lists, shapes, enqueue_many)
        if shuffle is None:
            queue = FIFOQueue(capacity=capacity, dtypes=types, shapes=shapes, shared_name=shared_name)
            full = cast(queue.size(), _dtypes.float32) * (1.0 / capacity)
            summary_name = f"fraction_of_{capacity}_full"
        else:
            min_after, seed = shuffle
            queue = RandomShuffleQueue(
                capacity=capacity,
                min_after_dequeue=min_after,
                seed=seed,
                dtypes=types,
                shapes=shapes,
                shared_name=shared_name,
            )
            over = math_ops.maximum(0, queue.size() - min_after)
            full = cast(over, _dtypes.float32) * (1.0 / (capacity - min_after))
            summary_name = f"fraction_over_{min_after}_of_{capacity - min_after}_full"
        enqueue_ops = (
            _enqueue_ops(queue, tensor_lists, enqueue_many, keep_input) * threads
        )  # (TF's: one op, N threads)
        add_queue_runner(QueueRunner(queue, enqueue_ops))
        summary_ops.scalar(summary_name, full)
        if allow_smaller_final_batch:
            dequeued = queue.dequeue_up_to(batch_size, name=scope)
        else:
            dequeued = queue.dequeue_many(batch_size, name=scope)
            for t in dequeued if isinstance(dequeued, list) else [dequeued]:
                t.set_shape(TensorShape([batch_size]).concatenate(t.shape[1:]))
        return _as_original_type(tensors_list[0], dequeued)


def batch(
    tensors,
    batch_size,
    num_threads=1,
    capacity=32,
    enqueue_many=False,
    shapes=None,
    dynamic_pad=False,
    allow_smaller_final_batch=False,
    shared_name=None,
    name=None,
):
    """Batches of `batch_size` of `tensors` (a list or dict), filled by `num_threads` threads."""
    return maybe_batch(
        tensors, True, batch_size, num_threads, capacity, enqueue_many, shapes, dynamic_pad,
        allow_smaller_final_batch, shared_name, name,
    )  # fmt: skip


def maybe_batch(
    tensors,
    keep_input,
    batch_size,
    num_threads=1,
    capacity=32,
    enqueue_many=False,
    shapes=None,
    dynamic_pad=False,
    allow_smaller_final_batch=False,
    shared_name=None,
    name=None,
):
    """`batch`, enqueuing only when the scalar bool `keep_input` is true."""
    return _make_batch(
        "batch", [tensors], batch_size, keep_input, num_threads, capacity, enqueue_many, shapes,
        dynamic_pad, allow_smaller_final_batch, shared_name, name,
    )  # fmt: skip


def batch_join(
    tensors_list,
    batch_size,
    capacity=32,
    enqueue_many=False,
    shapes=None,
    dynamic_pad=False,
    allow_smaller_final_batch=False,
    shared_name=None,
    name=None,
):
    """Batches from several tensor lists, one enqueuing thread each."""
    return maybe_batch_join(
        tensors_list, True, batch_size, capacity, enqueue_many, shapes, dynamic_pad,
        allow_smaller_final_batch, shared_name, name,
    )  # fmt: skip


def maybe_batch_join(
    tensors_list,
    keep_input,
    batch_size,
    capacity=32,
    enqueue_many=False,
    shapes=None,
    dynamic_pad=False,
    allow_smaller_final_batch=False,
    shared_name=None,
    name=None,
):
    """`batch_join`, enqueuing only when `keep_input` is true."""
    if not tensors_list:
        raise ValueError("Expected at least one set of tensors")
    return _make_batch(
        "batch_join", list(tensors_list), batch_size, keep_input, 1, capacity, enqueue_many, shapes,
        dynamic_pad, allow_smaller_final_batch, shared_name, name,
    )  # fmt: skip


def shuffle_batch(
    tensors,
    batch_size,
    capacity,
    min_after_dequeue,
    num_threads=1,
    seed=None,
    enqueue_many=False,
    shapes=None,
    allow_smaller_final_batch=False,
    shared_name=None,
    name=None,
):
    """Batches drawn at random from a `RandomShuffleQueue` holding at least `min_after_dequeue`."""
    return maybe_shuffle_batch(
        tensors, batch_size, capacity, min_after_dequeue, True, num_threads, seed, enqueue_many,
        shapes, allow_smaller_final_batch, shared_name, name,
    )  # fmt: skip


def maybe_shuffle_batch(
    tensors,
    batch_size,
    capacity,
    min_after_dequeue,
    keep_input,
    num_threads=1,
    seed=None,
    enqueue_many=False,
    shapes=None,
    allow_smaller_final_batch=False,
    shared_name=None,
    name=None,
):
    """`shuffle_batch`, enqueuing only when `keep_input` is true."""
    return _make_batch(
        "shuffle_batch", [tensors], batch_size, keep_input, num_threads, capacity, enqueue_many,
        shapes, False, allow_smaller_final_batch, shared_name, name, (min_after_dequeue, seed),
    )  # fmt: skip


def shuffle_batch_join(
    tensors_list,
    batch_size,
    capacity,
    min_after_dequeue,
    seed=None,
    enqueue_many=False,
    shapes=None,
    allow_smaller_final_batch=False,
    shared_name=None,
    name=None,
):
    """`shuffle_batch` from several tensor lists, one enqueuing thread each."""
    return maybe_shuffle_batch_join(
        tensors_list, batch_size, capacity, min_after_dequeue, True, seed, enqueue_many, shapes,
        allow_smaller_final_batch, shared_name, name,
    )  # fmt: skip


def maybe_shuffle_batch_join(
    tensors_list,
    batch_size,
    capacity,
    min_after_dequeue,
    keep_input,
    seed=None,
    enqueue_many=False,
    shapes=None,
    allow_smaller_final_batch=False,
    shared_name=None,
    name=None,
):
    """`shuffle_batch_join`, enqueuing only when `keep_input` is true."""
    if not tensors_list:
        raise ValueError("Expected at least one set of tensors")
    return _make_batch(
        "shuffle_batch_join", list(tensors_list), batch_size, keep_input, 1, capacity, enqueue_many,
        shapes, False, allow_smaller_final_batch, shared_name, name, (min_after_dequeue, seed),
    )  # fmt: skip
