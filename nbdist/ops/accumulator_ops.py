"""`tf.ConditionalAccumulator`: averages gradients, dropping the stale ones — and counts them.

The accumulator is a resource of kind ``"accumulator"`` on the task of its creator op (in
SyncReplicasOptimizer: the variable's ps). It has a *time step*. ``apply_grad(g,
local_step)`` adds `g` if ``local_step >= time step`` and otherwise drops it: this is where
TF loses the gradients of slow workers without a word. nbdist's apply op also outputs
whether it was accepted, and the accumulator counts what it dropped, so the dashboard can
show dropped gradients per step and per worker.

``take_grad(n)`` is a blocking op: it waits (deferred by the executor, no thread per op)
until `n` gradients arrived, returns their mean (or sum), resets, and advances the time
step by one (TF's rule). ``close()`` (nbdist's addition) ends every wait with
``OutOfRangeError`` — how the chief of a synchronous job tells everyone training is over.

`SparseConditionalAccumulator` does the same for `IndexedSlices` gradients (what
SyncReplicasOptimizer uses for an embedding): it keeps only the rows some gradient touched,
merges each new gradient into them with TF's ordered merge (rows with the same index add up;
the merge assumes sorted indices, as TF's kernel does), and ``take`` divides each row by the
number of gradients that had it — so a row one worker touched is not diluted by the others.
"""

import collections
import logging
import threading

import numpy as np

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import get_default_graph
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import math_ops, registry
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.indexed_slices import IndexedSlices

__all__ = ["ConditionalAccumulator", "ConditionalAccumulatorBase", "SparseConditionalAccumulator"]

_log = logging.getLogger(__name__)


class AccumulatorResource:
    """Sum and count of the accepted gradients of the current time step, plus what was dropped."""

    def __init__(self, name, device, attrs):
        self.name = name
        self.device = device
        self.dtype = attrs["dtype"]
        self.shape = TensorShape(attrs["shape"])
        self.mean = attrs.get("reduction_type", "MEAN") == "MEAN"
        self.time_step = 0
        self.sum = None  # dense: the sum; sparse: (indices list, values array, per-row counts)
        self.count = 0
        self.dropped = 0  # stale gradients dropped since creation
        self.closed = False
        self.lock = threading.Lock()

    def describe(self):
        state = ", closed" if self.closed else ""
        return (
            f"accumulator {self.name!r} on {self.device} (holds {self.count} gradient(s) of time step "
            f"{self.time_step}, {self.dropped} stale dropped{state})"
        )

    def snapshot(self):
        """The state a timeline shows after each op on the accumulator."""
        state = {"holds": self.count, "time_step": self.time_step, "dropped": self.dropped}
        if self.closed:
            state["closed"] = True
        return state

    def closed_error(self, node):
        return errors.OutOfRangeError(
            node.name,
            None,
            f"{self.describe()} is closed: synchronous training has ended (the chief closed it)",
        )


ACCUMULATOR = registry.resource_kind(
    "accumulator", AccumulatorResource, attrs=("dtype", "shape"), watched=True
)

for _t in ("ConditionalAccumulator", "SparseConditionalAccumulator"):
    registry.declare(_t, creates="accumulator", stateful=True)
    registry.shape(_t)(lambda inputs, attrs: [(_dtypes.string, TensorShape(()))])
    registry.no_gradient(_t)


@registry.kernel("ConditionalAccumulator")
@registry.kernel("SparseConditionalAccumulator")
def _creator_kernel(ctx, node):
    return np.array(ctx.resources.resource(ACCUMULATOR, node).name.encode(), dtype=object)


def _declare(op_type, shape_fn, blocking=False):
    # An accumulator notifies its resource manager on every change: a step waiting on it parks.
    registry.declare(op_type, ref_inputs={0: "accumulator"}, stateful=True, blocking=blocking, parks=blocking)
    registry.shape(op_type)(shape_fn)
    registry.no_gradient(op_type)


_scalar = TensorShape(())
_declare("AccumulatorApplyGradient", lambda inputs, attrs: [(_dtypes.bool, _scalar)])
_declare(
    "AccumulatorTakeGradient", lambda inputs, attrs: [(attrs["dtype"], TensorShape(attrs["shape"]))], True
)
_declare("SparseAccumulatorApplyGradient", lambda inputs, attrs: [(_dtypes.bool, _scalar)])
_declare(
    "SparseAccumulatorTakeGradient",
    lambda inputs, attrs: [
        (_dtypes.int64, TensorShape([None])),
        (attrs["dtype"], TensorShape(None)),
        (_dtypes.int64, TensorShape([None])),
    ],
    True,
)
_declare("AccumulatorNumAccumulated", lambda inputs, attrs: [(_dtypes.int32, _scalar)])
_declare("AccumulatorNumDropped", lambda inputs, attrs: [(_dtypes.int64, _scalar)])
_declare("AccumulatorSetGlobalStep", lambda inputs, attrs: [])
_declare("AccumulatorClose", lambda inputs, attrs: [])


@registry.kernel("AccumulatorApplyGradient")
def _apply_kernel(ctx, node, acc, local_step, gradient):
    gradient = np.asarray(gradient)
    with acc.lock:
        if acc.closed:
            raise acc.closed_error(node)
        if acc.shape.ndims is not None and not acc.shape.is_compatible_with(gradient.shape):
            raise errors.InvalidArgumentError(
                node.name,
                None,
                f"gradient of shape {list(gradient.shape)} for {acc.describe()}: expected {acc.shape}",
            )
        if int(local_step) < acc.time_step:
            acc.dropped += 1
            return np.bool_(False)
        value = gradient.astype(acc.dtype.np, copy=False)
        acc.sum = value.copy() if acc.sum is None else acc.sum + value
        acc.count += 1
    ctx.resources.notify(acc)
    return np.bool_(True)


@registry.kernel("SparseAccumulatorApplyGradient")
def _sparse_apply_kernel(ctx, node, acc, local_step, indices, values, dense_shape):
    indices, values = np.asarray(indices, np.int64), np.asarray(values)
    with acc.lock:
        if acc.closed:
            raise acc.closed_error(node)
        _check_sparse(node, acc, indices, values, dense_shape if node.attr.get("has_known_shape") else None)
        if int(local_step) < acc.time_step:
            acc.dropped += 1
            return np.bool_(False)
        values = values.astype(acc.dtype.np, copy=False)
        acc.sum = _merge_rows(acc.sum, indices, values)
        acc.count += 1
    ctx.resources.notify(acc)
    return np.bool_(True)


def _check_sparse(node, acc, indices, values, dense_shape):
    """TF's checks of a sparse gradient against the accumulator's shape and what it holds."""

    def invalid(message):
        return errors.InvalidArgumentError(node.name, None, f"{message} ({acc.describe()})")

    if indices.ndim != 1:
        raise invalid(f"Input indices should be vector but received shape: {list(indices.shape)}")
    if values.ndim == 0:
        raise invalid("Values cannot be 0-dimensional.")
    if len(values) != len(indices):
        raise invalid(f"Expected {len(indices)} non-empty input values, got {len(values)}")
    dims = acc.shape.as_list() if acc.shape.ndims is not None else []
    if dense_shape is not None:
        dense_shape = np.asarray(dense_shape).reshape(-1)
        if len(dims) > len(dense_shape):
            raise invalid(f"Shape mismatch: expected shape rank at least {len(dims)}, got {len(dense_shape)}")
        for i, d in enumerate(dims):
            if d is not None and d != dense_shape[i]:
                raise invalid(f"Shape mismatch: expected shape dim {i} to be {d}, got {int(dense_shape[i])}")
    if dims and dims[0] is not None and np.any(indices >= dims[0]):
        i = int(np.argmax(indices >= dims[0]))
        raise invalid(f"Shape mismatch: index of slice {i} is {int(indices[i])}, exceeded {dims[0]}")
    held = acc.sum[1] if acc.sum is not None else None
    if held is not None and held.shape[1:] != values.shape[1:]:
        raise invalid(
            f"Shape mismatch: expected values of rows {list(held.shape[1:])}, got {list(values.shape[1:])}"
        )
    if held is None and any(d is not None and d != values.shape[i] for i, d in enumerate(dims) if i > 0):
        raise invalid(
            f"Shape mismatch: values of shape {list(values.shape)} for an accumulator of {acc.shape}"
        )


def _merge_rows(held, indices, values):
    """TF's ordered merge of a gradient into the held rows: ``(indices, values, counts)``.

    The first gradient is kept as it came; later ones are merged in one pass that assumes
    both index lists ascend (equal indices add up and count twice), exactly as TF's kernel.
    """
    if held is None:
        return list(indices), values.copy(), [1] * len(indices)
    held_idx, held_val, held_cnt = held
    merged = []  # (index, row, count)
    i = j = 0
    while i < len(held_idx) or j < len(indices):
        if j == len(indices) or (i < len(held_idx) and held_idx[i] < indices[j]):
            merged.append((held_idx[i], held_val[i], held_cnt[i]))
            i += 1
        elif i == len(held_idx) or held_idx[i] > indices[j]:
            merged.append((int(indices[j]), values[j], 1))
            j += 1
        else:
            merged.append((held_idx[i], held_val[i] + values[j], held_cnt[i] + 1))
            i += 1
            j += 1
    out_idx, rows, counts = (list(column) for column in zip(*merged))
    return out_idx, np.stack(rows).astype(held_val.dtype, copy=False), counts


@registry.kernel("SparseAccumulatorTakeGradient")
def _sparse_take_kernel(ctx, node, acc, num_required):
    with acc.lock:
        if acc.closed:
            raise acc.closed_error(node)
        indices, values, counts = acc.sum
        acc.sum, acc.count = None, 0
        acc.time_step += 1
    ctx.resources.notify(acc)
    if acc.mean:  # each row by the number of gradients that had it (TF's element-wise average)
        per_row = np.asarray(counts, values.dtype).reshape((-1,) + (1,) * (values.ndim - 1))
        values = (values / per_row).astype(values.dtype, copy=False)
    first = acc.shape.as_list()[0] if acc.shape.ndims else None
    shape = [-1 if first is None else first, *values.shape[1:]]
    return np.asarray(indices, np.int64), values, np.asarray(shape, np.int64)


@registry.ready("AccumulatorTakeGradient")
@registry.ready("SparseAccumulatorTakeGradient")
def _take_ready(ctx, node, acc, num_required):
    with acc.lock:
        if acc.closed or acc.count >= max(1, int(num_required)):
            return None
        return f"{int(num_required)} gradient(s) in {acc.describe()}"


@registry.kernel("AccumulatorTakeGradient")
def _take_kernel(ctx, node, acc, num_required):
    with acc.lock:
        if acc.closed:
            raise acc.closed_error(node)
        total, count = acc.sum, acc.count
        acc.sum, acc.count = None, 0
        acc.time_step += 1  # implicitly, as TF's accumulator does
    ctx.resources.notify(acc)
    return (total / count).astype(acc.dtype.np, copy=False) if acc.mean else total


@registry.kernel("AccumulatorNumAccumulated")
def _num_kernel(ctx, node, acc):
    with acc.lock:
        return np.int32(acc.count)


@registry.kernel("AccumulatorNumDropped")
def _dropped_kernel(ctx, node, acc):
    with acc.lock:
        return np.int64(acc.dropped)


@registry.kernel("AccumulatorSetGlobalStep")
def _set_step_kernel(ctx, node, acc, new_global_step):
    with acc.lock:
        if int(new_global_step) < acc.time_step:
            _log.warning(
                "%s: set_global_step(%d) is lower than its time step %d",
                acc.describe(),
                int(new_global_step),
                acc.time_step,
            )
        acc.time_step = int(new_global_step)
    ctx.resources.notify(acc)


@registry.kernel("AccumulatorClose")
def _close_kernel(ctx, node, acc):
    with acc.lock:
        acc.closed = True
    ctx.resources.notify(acc)


def _create_accumulator(op_type, dtype, shape, shared_name, name, reduction_type):
    """The creator op of a (sparse) conditional accumulator: ``(dtype, its handle tensor)``."""
    if reduction_type not in ("MEAN", "SUM"):
        raise ValueError(f"reduction_type must be 'MEAN' or 'SUM', got {reduction_type!r}")
    dtype = _dtypes.as_dtype(dtype)
    attrs = {
        "dtype": dtype,
        "shape": TensorShape(shape),
        "reduction_type": reduction_type,
        "container": get_default_graph().current_container(),
        "shared_name": shared_name or "",
    }
    return dtype, registry.make_op(op_type, [], attrs, name=name).outputs[0]


class ConditionalAccumulatorBase:
    """`tf.ConditionalAccumulatorBase`: the accumulator's ops, colocated with it."""

    def __init__(self, dtype, shape, accumulator_ref):
        self._dtype = dtype
        self._shape = TensorShape(shape)
        self._accumulator_ref = accumulator_ref
        self._name = accumulator_ref.op.name

    accumulator_ref = property(lambda self: self._accumulator_ref)
    name = property(lambda self: self._name)
    dtype = property(lambda self: self._dtype)

    def _op(self, op_type, inputs=(), name=None, attrs=None):
        with self._accumulator_ref.graph.colocate_with(self._accumulator_ref.op):
            return registry.make_op(op_type, [self._accumulator_ref, *inputs], attrs, name=name)

    def num_accumulated(self, name=None):
        """The number of gradients accumulated for the current time step."""
        return self._op("AccumulatorNumAccumulated", (), name or "num_accumulated").outputs[0]

    def num_dropped(self, name=None):
        """nbdist: the number of stale gradients this accumulator dropped so far (TF has no such count)."""
        return self._op("AccumulatorNumDropped", (), name or "num_dropped").outputs[0]

    def set_global_step(self, new_global_step, name=None):
        """Sets the time step (gradients computed at an earlier step are dropped from then on)."""
        step = _int64_step(new_global_step)
        return self._op("AccumulatorSetGlobalStep", (step,), name or "AccumulatorSetGlobalStep")

    def close(self, name=None):
        """nbdist: ends every `take_grad` wait with `OutOfRangeError` (training is over)."""
        return self._op("AccumulatorClose", (), name or "AccumulatorClose")


def _int64_step(step):
    """A step as an int64 tensor; an int32 global step is cast, as TF casts it."""
    step = convert_to_tensor(step)
    if step.dtype != _dtypes.int64:
        step = math_ops.cast(step, _dtypes.int64)
    return step


class ConditionalAccumulator(ConditionalAccumulatorBase):
    """`tf.ConditionalAccumulator(dtype, shape=None, shared_name=None, name="conditional_accumulator",
    reduction_type="MEAN")`.

    Raises:
        ValueError: for a `reduction_type` other than ``"MEAN"`` or ``"SUM"``.
    """

    def __init__(
        self, dtype, shape=None, shared_name=None, name="conditional_accumulator", reduction_type="MEAN"
    ):
        dtype, ref = _create_accumulator(
            "ConditionalAccumulator", dtype, shape, shared_name, name, reduction_type
        )
        super().__init__(dtype, shape, ref)

    def apply_grad(self, grad, local_step=0, name=None):
        """Adds `grad` unless it is stale (``local_step`` below the accumulator's time step).

        Returns:
            The op; its output (nbdist's addition) is True when the gradient was accepted.

        Raises:
            ValueError: if `grad`'s static shape does not match the accumulator's.
        """
        grad = convert_to_tensor(grad, dtype=self._dtype)
        if not self._shape.is_compatible_with(grad.shape):
            raise ValueError(f"Shapes {self._shape} and {grad.shape} are incompatible")
        step = _int64_step(local_step)
        return self._op("AccumulatorApplyGradient", (step, grad), name or "AccumulatorApplyGradient")

    def take_grad(self, num_required, name=None):
        """Waits for `num_required` fresh gradients; returns their mean and advances the time step."""
        n = convert_to_tensor(num_required, dtype=_dtypes.int32)
        attrs = {"dtype": self._dtype, "shape": self._shape}
        return self._op("AccumulatorTakeGradient", (n,), name or "AccumulatorTakeGradient", attrs).outputs[0]


SparseAccumulatorTakeGradient = collections.namedtuple(
    "SparseAccumulatorTakeGradient", ["indices", "values", "shape"]
)


class SparseConditionalAccumulator(ConditionalAccumulatorBase):
    """`tf.SparseConditionalAccumulator(dtype, shape=None, shared_name=None,
    name="sparse_conditional_accumulator", reduction_type="MEAN")`: a `ConditionalAccumulator`
    for `IndexedSlices` gradients (each row averaged over the gradients that touched it).

    Raises:
        ValueError: for a `reduction_type` other than ``"MEAN"`` or ``"SUM"``.
    """

    def __init__(
        self,
        dtype,
        shape=None,
        shared_name=None,
        name="sparse_conditional_accumulator",
        reduction_type="MEAN",
    ):
        dtype, ref = _create_accumulator(
            "SparseConditionalAccumulator", dtype, shape, shared_name, name, reduction_type
        )
        super().__init__(dtype, shape, ref)

    def apply_indexed_slices_grad(self, grad, local_step=0, name=None):
        """`apply_grad` of an `IndexedSlices`."""
        return self.apply_grad(grad.indices, grad.values, grad.dense_shape, local_step, name)

    def apply_grad(self, grad_indices, grad_values, grad_shape=None, local_step=0, name=None):
        """Adds the sparse gradient unless it is stale (``local_step`` below the time step).

        Returns:
            The op; its output (nbdist's addition) is True when the gradient was accepted.
        """
        step = math_ops.cast(convert_to_tensor(local_step), _dtypes.int64)
        indices = math_ops.cast(convert_to_tensor(grad_indices), _dtypes.int64)
        values = convert_to_tensor(grad_values, dtype=self._dtype)
        shape = math_ops.cast(convert_to_tensor([] if grad_shape is None else grad_shape), _dtypes.int64)
        attrs = {"has_known_shape": grad_shape is not None, "dtype": self._dtype}
        op_name = name or "SparseAccumulatorApplyGradient"
        return self._op("SparseAccumulatorApplyGradient", (step, indices, values, shape), op_name, attrs)

    def take_grad(self, num_required, name=None):
        """Waits for `num_required` fresh gradients; returns ``(indices, values, shape)`` of their mean."""
        n = convert_to_tensor(num_required, dtype=_dtypes.int32)
        op = self._op(
            "SparseAccumulatorTakeGradient",
            (n,),
            name or "SparseAccumulatorTakeGradient",
            {"dtype": self._dtype},
        )
        return SparseAccumulatorTakeGradient(*op.outputs)

    def take_indexed_slices_grad(self, num_required, name=None):
        """`take_grad` as an `IndexedSlices`."""
        indices, values, shape = self.take_grad(num_required, name)
        return IndexedSlices(indices=indices, values=values, dense_shape=shape)
