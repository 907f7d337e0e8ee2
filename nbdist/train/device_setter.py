"""`tf.train.replica_device_setter`: variables on the ps tasks, everything else on the worker.

Between-graph replication in TF 1.x starts here: every worker builds the same graph inside
``with tf.device(tf.train.replica_device_setter(cluster=cluster)):`` so each variable lands
on a ps task (round robin, or by a load-balancing strategy) and every other op on the
worker that builds it. The function returned is an ordinary device function (``op ->
device string``), so it nests with ``tf.device`` scopes exactly as TF's does:

- ``merge_devices=True`` (the default): fields an inner ``tf.device`` already set on the op
  win; the setter fills only the fields that are unset.
- An op whose job was set to something other than the ps job keeps it and takes no ps task.
- A variable's ``Assign`` and ``read`` and the optimizers' slots are colocated with it by
  their constructors, so they are never placed by the setter: they follow the variable.
"""

import logging

import numpy as np

from nbdist.graph.device import DeviceSpec
from nbdist.graph.tensor_shape import TensorShape

_log = logging.getLogger(__name__)

# TF's list of op types that hold state and belong on a ps (device_setter.STANDARD_PS_OPS).
STANDARD_PS_OPS = (
    "Variable",
    "VariableV2",
    "AutoReloadVariable",
    "MutableHashTable",
    "MutableHashTableV2",
    "MutableHashTableOfTensors",
    "MutableHashTableOfTensorsV2",
    "MutableDenseHashTable",
    "MutableDenseHashTableV2",
    "VarHandleOp",
    "BoostedTreesEnsembleResourceHandleOp",
    "BoostedTreesQuantileStreamResourceHandleOp",
)


class _RoundRobinStrategy:
    """Task 0, 1, ..., n-1, 0, ... for the ops that go to the ps (TF's default)."""

    def __init__(self, num_tasks):
        self._num_tasks = num_tasks
        self._next_task = 0

    def __call__(self, unused_op):
        task = self._next_task
        self._next_task = (self._next_task + 1) % self._num_tasks
        return task


class GreedyLoadBalancingStrategy:
    """Places each ps op on the ps task with the least load so far (``load_fn(op)`` summed).

    Args:
        num_tasks: the number of ps tasks.
        load_fn: ``op -> number``, e.g. `byte_size_load_fn`.

    Ties go to the lowest task index, as in TF (``np.argmin``).
    """

    def __init__(self, num_tasks, load_fn):
        self._num_tasks = num_tasks
        self._load_fn = load_fn
        self._ps_loads = np.zeros(num_tasks)

    def __call__(self, op):
        task = int(np.argmin(self._ps_loads))
        self._ps_loads[task] += self._load_fn(op)
        return task


def byte_size_load_fn(op):
    """The byte size of a single-output op's output (a variable's storage).

    Raises:
        ValueError: if the op does not have exactly one output or its shape is not fully
            defined (TF raises the same).
    """
    if len(op.outputs) != 1:
        raise ValueError(f"Op {op.name} must have a single output, it has {len(op.outputs)}")
    output = op.outputs[0]
    shape = output.shape
    if not shape.is_fully_defined() and "shape" in op.attrs:
        shape = TensorShape(op.get_attr("shape"))
    if not shape.is_fully_defined():
        raise ValueError(f"Op {op.name}'s output shape {shape} is not fully defined; its size is unknown")
    return shape.num_elements() * output.dtype.size


class _ReplicaDeviceChooser:
    def __init__(self, ps_tasks, ps_device, worker_device, merge_devices, ps_ops, ps_strategy):
        self._ps_tasks = ps_tasks
        self._ps_device = ps_device
        self._worker_device = worker_device
        self._merge_devices = merge_devices
        self._ps_ops = frozenset(ps_ops)
        self._ps_strategy = ps_strategy

    def device_function(self, op):
        if not self._merge_devices and op.device:
            return op.device
        current = DeviceSpec.from_string(op.device or "")
        if self._ps_tasks and self._ps_device and op.type in self._ps_ops:
            ps = DeviceSpec.from_string(self._ps_device)
            # The strategy picks a task only when the op's own job (if any) is the ps job.
            if ps.job and (current.job is None or current.job == ps.job):
                ps.task = self._ps_strategy(op)
            return ps.make_merged_spec(current).to_string()
        worker = DeviceSpec.from_string(self._worker_device or "")
        return worker.make_merged_spec(current).to_string()


def replica_device_setter(
    ps_tasks=0,
    ps_device="/job:ps",
    worker_device="/job:worker",
    merge_devices=True,
    cluster=None,
    ps_ops=None,
    ps_strategy=None,
):
    """A device function for between-graph replication (TF's `replica_device_setter`).

    Args:
        ps_tasks: the number of ps tasks (ignored when `cluster` is given).
        ps_device: where ps ops go; its task is chosen per op by `ps_strategy`.
        worker_device: where every other op goes (``"/job:worker/task:%d" % task_index``).
        merge_devices: fill only the device fields an inner ``tf.device`` left unset.
        cluster: a `ClusterSpec` or its dict form; the number of ps tasks is read from it.
        ps_ops: op types placed on the ps (default `STANDARD_PS_OPS`).
        ps_strategy: ``op -> task index`` (default round robin over the ps tasks).

    Returns:
        A function ``op -> device string`` for ``tf.device(...)``, or None when there are no
        ps tasks (``tf.device(None)``-like: the graph then runs on the worker alone).

    Raises:
        TypeError: if `ps_strategy` is not callable.

    Example::

        cluster = tf.train.ClusterSpec({"ps": ps_hosts, "worker": worker_hosts})
        with tf.device(tf.train.replica_device_setter(
                worker_device="/job:worker/task:%d" % FLAGS.task_index, cluster=cluster)):
            w = tf.Variable(tf.zeros([784, 10]))      # /job:ps/task:0
            y = tf.matmul(x, w)                       # /job:worker/task:<index>
    """
    if cluster is not None:
        from nbdist.runtime.cluster import ClusterSpec  # noqa: PLC0415 - zmq-free, but only if asked

        spec = cluster if isinstance(cluster, ClusterSpec) else ClusterSpec(cluster)
        ps_job = DeviceSpec.from_string(ps_device).job
        if ps_job not in spec.jobs:
            return None
        ps_tasks = spec.num_tasks(ps_job)
    if ps_tasks == 0:
        return None
    if ps_ops is None:
        ps_ops = list(STANDARD_PS_OPS)
    if not merge_devices:
        _log.warning("DEPRECATION: It is recommended to set merge_devices=true in replica_device_setter")
    if ps_strategy is None:
        ps_strategy = _RoundRobinStrategy(ps_tasks)
    if not callable(ps_strategy):
        raise TypeError(f"ps_strategy must be callable (op -> task index), got {ps_strategy!r}")
    chooser = _ReplicaDeviceChooser(ps_tasks, ps_device, worker_device, merge_devices, ps_ops, ps_strategy)
    return chooser.device_function
