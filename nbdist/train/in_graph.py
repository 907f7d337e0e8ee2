"""In-graph replication: one client builds a tower per worker task and averages their gradients.

TF 1.x has no function for this; programs write the pattern by hand (TF's multi-GPU CIFAR-10
tutorial has ``average_gradients(tower_grads)``). nbdist's two helpers do the same, placed
for a cluster instead of GPUs:

- every tower's ops run on its own worker task (``/job:worker/task:i``); the variables are
  created once, by the first tower, on the ps tasks (`replica_device_setter`'s rule), and the
  other towers reuse them (``tf.get_variable`` in the model function);
- each variable's gradients are averaged **where the variable lives** (colocated with it), so
  only one gradient per tower crosses to the ps and the update runs there.

Usage::

    def model(i):                       # builds tower i; variables by tf.get_variable
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        w = tf.get_variable("w", [3, 1], initializer=tf.zeros_initializer())
        return tf.reduce_mean(tf.square(tf.matmul(x, w) - 1.0))

    replicas = tf.train.in_graph.replicate(model, tf.train.GradientDescentOptimizer(0.1), num_towers=2)
    sess.run(replicas.train_op, {replicas.outputs[0]...})     # one step: every tower, one update

The graph view (`nbdist.show_graph(..., partitioned=True)`) shows the towers on their
tasks, the averaging on the ps, and the tensors that cross between them.
"""

import collections

from nbdist.graph.device import DeviceSpec
from nbdist.graph.graph import Tensor, device, get_default_graph, name_scope
from nbdist.ops import math_ops
from nbdist.ops.variable_scope import get_variable_scope, variable_scope
from nbdist.train.device_setter import replica_device_setter

__all__ = ["InGraphReplicas", "average_gradients", "replicate"]


class InGraphReplicas(collections.namedtuple("InGraphReplicas", ["train_op", "losses", "outputs", "grads"])):
    """What `replicate` built.

    Attributes:
        train_op: one step of training: every tower's gradients, averaged, applied once.
        losses: each tower's loss tensor, in tower order (fetch them to see every replica).
        outputs: what the model function returned for each tower.
        grads: the averaged ``(gradient, variable)`` pairs that `train_op` applies.
    """


def average_gradients(tower_grads, name="average_gradients"):
    """The mean gradient of each variable over the towers, computed where the variable lives.

    Args:
        tower_grads: one list of ``(gradient, variable)`` pairs per tower, each as
            `Optimizer.compute_gradients` returns it (the same variables in the same order).
        name: the name scope of the averaging ops.

    Returns:
        A list of ``(mean gradient, variable)`` pairs; a variable with no gradient in any
        tower keeps ``(None, variable)``.

    Raises:
        ValueError: the towers list different variables (naming the first mismatch).
    """
    if not tower_grads:
        raise ValueError("average_gradients() needs the (gradient, variable) pairs of at least one tower")
    first = [v for _, v in tower_grads[0]]
    for i, grads in enumerate(tower_grads[1:], start=1):
        names = [v.op.name for _, v in grads]
        if names != [v.op.name for v in first]:
            raise ValueError(
                f"tower {i} has gradients for {names}, tower 0 for {[v.op.name for v in first]}: every tower "
                "must use the same variables (create them with tf.get_variable, reused by the later towers)"
            )
    graph = get_default_graph()
    averaged = []
    with name_scope(name):
        for pairs in zip(*tower_grads):
            var = pairs[0][1]
            grads = [g for g, _ in pairs if g is not None]
            if not grads:
                averaged.append((None, var))
                continue
            with graph.colocate_with(var.op):
                total = grads[0] if len(grads) == 1 else math_ops.add_n(grads)
                averaged.append((math_ops.multiply(total, 1.0 / len(grads)), var))
    return averaged


def replicate(
    model_fn,
    optimizer,
    num_towers,
    global_step=None,
    ps_tasks=1,
    ps_device="/job:ps",
    worker_device="/job:worker/task:{}",
    name="tower",
):
    """Builds `num_towers` replicas of a model, one per worker task, and one training step for all.

    Args:
        model_fn: ``model_fn(i)`` builds tower `i` and returns its scalar loss, or a dict
            with a ``"loss"`` entry (the rest is kept in `outputs`). It must create variables
            with ``tf.get_variable``: the first tower creates them, the others reuse them.
        optimizer: a `tf.train.Optimizer`; its update runs on the ps, once per step.
        num_towers: how many towers (worker tasks ``0 .. num_towers - 1``).
        global_step: optional variable to increment once per step.
        ps_tasks: the number of ps tasks the variables are spread over (round robin).
        ps_device: the ps job.
        worker_device: tower `i`'s device, ``worker_device.format(i)``.
        name: tower `i`'s name scope is ``f"{name}_{i}"``.

    Returns:
        `InGraphReplicas` (train_op, losses, outputs, grads).

    Raises:
        ValueError: `num_towers` is not positive, or a tower returned no loss.
    """
    if int(num_towers) < 1:
        raise ValueError(f"replicate() needs num_towers >= 1, got {num_towers!r}")
    DeviceSpec.from_string(worker_device.format(0))  # a bad device string fails here, not in tower 0
    outputs, losses, tower_grads = [], [], []
    scope = get_variable_scope()
    for i in range(int(num_towers)):
        setter = replica_device_setter(
            ps_tasks=ps_tasks, ps_device=ps_device, worker_device=worker_device.format(i)
        )
        with device(setter), variable_scope(scope, reuse=i > 0), name_scope(f"{name}_{i}"):
            out = model_fn(i)
            loss = out.get("loss") if isinstance(out, dict) else out
            if not isinstance(loss, Tensor):
                raise ValueError(
                    f"model_fn({i}) must return its loss tensor (or a dict with 'loss'), got {out!r}"
                )
            tower_grads.append(optimizer.compute_gradients(loss))
        outputs.append(out)
        losses.append(loss)
    grads = average_gradients(tower_grads)
    train_op = optimizer.apply_gradients(grads, global_step=global_step)
    return InGraphReplicas(train_op, losses, outputs, grads)
