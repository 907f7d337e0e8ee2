"""Staleness of asynchronous updates: how many other updates landed while a gradient was computed.

In asynchronous (between-graph) training every worker reads the parameters from the ps,
computes its gradient and sends it back; meanwhile other workers' updates are applied. TF
never says how many. nbdist's `Optimizer.apply_gradients(..., global_step=...)` reads the
global step where it lives, at the start of the step (the moment the parameters are read
on the same ps partition, before any gradient exists), and the increment runs after that
read (a control edge). So::

    staleness = (global step after this update) - 1 - (global step when the step began)

is the number of other updates applied between reading the parameters and applying this
gradient: 0 when training alone. It is an ordinary scalar tensor on the global step's ps:
fetching it costs one small tensor; not fetching it costs nothing (it is pruned).

Usage::

    train_op = opt.minimize(loss, global_step=gs)
    stale = tf.train.staleness.of(train_op)
    _, s = sess.run([train_op, stale])
    tf.report(step=..., loss=..., staleness=s)     # the dashboard's staleness histogram
"""

from nbdist.graph.graph import Operation, Tensor
from nbdist.ops import math_ops

_COLLECTION = "nbdist_staleness"  # (train op, staleness tensor) pairs
_DROPPED = "nbdist_dropped_gradients"  # (train op, dropped tensor) pairs (synchronous training)


def record(train_op, new_step, step_at_start):
    """Adds the staleness tensor of `train_op` (called by `Optimizer.apply_gradients`)."""
    graph = new_step.graph
    with graph.colocate_with(new_step.op):
        stale = math_ops.subtract(math_ops.subtract(new_step, 1), step_at_start, name="staleness")
    graph.add_to_collection(_COLLECTION, (train_op, stale))
    return stale


def record_dropped(train_op, dropped):
    """Adds the dropped-gradient count of a sync `train_op` (called by `SyncReplicasOptimizer`)."""
    dropped.graph.add_to_collection(_DROPPED, (train_op, dropped))
    return dropped


def _find(train_op, collection, what):
    op = train_op.op if isinstance(train_op, Tensor) else train_op
    if not isinstance(op, Operation):
        raise TypeError(f"{what}() takes the train op returned by minimize/apply_gradients, got {train_op!r}")
    for candidate, tensor in op.graph.get_collection(collection):
        if candidate is op:
            return tensor
    return None


def dropped_of(train_op):
    """1 when this worker's gradient of the step arrived too late and was dropped (sync training), else 0.

    Raises:
        ValueError: if `train_op` is not a `SyncReplicasOptimizer`'s.
    """
    dropped = _find(train_op, _DROPPED, "dropped_of")
    if dropped is None:
        raise ValueError(f"{train_op.name!r} is not a train op of tf.train.SyncReplicasOptimizer")
    return dropped


def of(train_op):
    """The staleness tensor of a train op built with a ``global_step``.

    Raises:
        ValueError: if `train_op` was not built by an optimizer with a ``global_step``.
    """
    stale = _find(train_op, _COLLECTION, "staleness.of")
    if stale is not None:
        return stale
    raise ValueError(
        f"{train_op.name!r} has no staleness: only a train op from opt.minimize(loss, global_step=...) "
        "or opt.apply_gradients(..., global_step=...) records it"
    )
