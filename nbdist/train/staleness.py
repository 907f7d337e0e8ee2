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


def record(train_op, new_step, step_at_start):
    """Adds the staleness tensor of `train_op` (called by `Optimizer.apply_gradients`)."""
    graph = new_step.graph
    with graph.colocate_with(new_step.op):
        stale = math_ops.subtract(math_ops.subtract(new_step, 1), step_at_start, name="staleness")
    graph.add_to_collection(_COLLECTION, (train_op, stale))
    return stale


def of(train_op):
    """The staleness tensor of a train op built with a ``global_step``.

    Raises:
        ValueError: if `train_op` was not built by an optimizer with a ``global_step``.
    """
    op = train_op.op if isinstance(train_op, Tensor) else train_op
    if not isinstance(op, Operation):
        raise TypeError(
            f"staleness.of() takes the train op returned by minimize/apply_gradients, got {train_op!r}"
        )
    for candidate, stale in op.graph.get_collection(_COLLECTION):
        if candidate is op:
            return stale
    raise ValueError(
        f"{op.name!r} has no staleness: only a train op from opt.minimize(loss, global_step=...) "
        "or opt.apply_gradients(..., global_step=...) records it"
    )
