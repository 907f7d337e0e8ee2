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
"""

import logging
import threading

import numpy as np

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import get_default_graph
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import math_ops, registry
from nbdist.ops.constant_op import convert_to_tensor

__all__ = ["ConditionalAccumulator", "ConditionalAccumulatorBase"]

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
        self.sum = None
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

    def closed_error(self, node):
        return errors.OutOfRangeError(
            node.name,
            None,
            f"{self.describe()} is closed: synchronous training has ended (the chief closed it)",
        )


ACCUMULATOR = registry.resource_kind("accumulator", AccumulatorResource, attrs=("dtype", "shape"))

registry.declare("ConditionalAccumulator", creates="accumulator", stateful=True)
registry.shape("ConditionalAccumulator")(lambda inputs, attrs: [(_dtypes.string, TensorShape(()))])
registry.no_gradient("ConditionalAccumulator")


@registry.kernel("ConditionalAccumulator")
def _creator_kernel(ctx, node):
    return np.array(ctx.resources.resource(ACCUMULATOR, node).name.encode(), dtype=object)


def _declare(op_type, shape_fn, blocking=False):
    registry.declare(op_type, ref_inputs={0: "accumulator"}, stateful=True, blocking=blocking)
    registry.shape(op_type)(shape_fn)
    registry.no_gradient(op_type)


_scalar = TensorShape(())
_declare("AccumulatorApplyGradient", lambda inputs, attrs: [(_dtypes.bool, _scalar)])
_declare(
    "AccumulatorTakeGradient", lambda inputs, attrs: [(attrs["dtype"], TensorShape(attrs["shape"]))], True
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
    ctx.resources.notify()
    return np.bool_(True)


@registry.ready("AccumulatorTakeGradient")
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
    ctx.resources.notify()
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
    ctx.resources.notify()


@registry.kernel("AccumulatorClose")
def _close_kernel(ctx, node, acc):
    with acc.lock:
        acc.closed = True
    ctx.resources.notify()


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
        ref = registry.make_op("ConditionalAccumulator", [], attrs, name=name).outputs[0]
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
