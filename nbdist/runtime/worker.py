"""The worker service: registers partitions and runs them, step after step.

It owns the task's `ResourceManager` (variables outlive steps, sessions and clients:
a second client sees what the first one trained) and its `Rendezvous`. RPCs:
``RegisterGraph`` (a partition -> a handle with a precompiled `ExecutionPlan`),
``RunGraph`` (feeds -> fetches for one step id), ``AbortStep``, ``SendTensor``
(a peer pushes a tensor for one of our `_Recv`s), ``Status`` and ``Reset``.
"""

import collections
import itertools
import os
import threading
import time

from nbdist import errors
from nbdist.graph.graph_def import nodes_from_graph_def
from nbdist.ops.resources import ResourceManager
from nbdist.runtime.executor import ExecutionPlan, StepContext
from nbdist.runtime.rendezvous import Rendezvous

INLINE_RUN_S = 0.001


class WorkerService:
    """One task's worker service.

    Args:
        task_device: ``/job:J/replica:0/task:T`` of this task.
        address_of: ``task device -> host:port`` for the cluster's tasks.
        key: the cluster key (for tensors pushed to peers).
    """

    def __init__(self, task_device, address_of, key=None):
        self.task_device = task_device
        self.resources = ResourceManager(task_device + "/device:CPU:0")
        self.rendezvous = Rendezvous(task_device, address_of, key)
        self._plans = {}  # handle -> (ExecutionPlan, partition GraphDef)
        self._handles = itertools.count(1)
        self._lock = threading.Lock()
        self.steps_run = 0

    # -- RegisterGraph -------------------------------------------------------------------------
    def register_graph(self, graph_def, feeds, fetches, targets):
        nodes = nodes_from_graph_def(graph_def)
        plan = ExecutionPlan(nodes, feeds, fetches, targets)
        with self._lock:
            handle = f"{self.task_device}/graph:{next(self._handles)}"
            self._plans[handle] = plan
        return handle

    def ops_placed(self):
        """``{op type: count}`` of the distinct ops in the partitions registered here."""
        with self._lock:
            plans = list(self._plans.values())
        nodes = {n.name: n.op for plan in plans for n in plan.nodes if not n.op.startswith("_")}
        return dict(collections.Counter(nodes.values()))

    def runs_quickly(self, handle):
        """True when a partition cannot block and its last run took under `INLINE_RUN_S`.

        The server runs such a `RunGraph` on its I/O thread, saving two thread hand-offs
        per step; anything that may wait (a `_Recv`, a queue) or computes for long goes
        to the pool, so it never stalls the server.
        """
        plan = self._plans.get(handle)
        return (
            plan is not None
            and not plan.may_block
            and plan.last_run_s is not None
            and plan.last_run_s < INLINE_RUN_S
        )

    def deregister_graph(self, handle):
        with self._lock:
            self._plans.pop(handle, None)

    # -- RunGraph ----------------------------------------------------------------------------------
    def run_graph(self, handle, step_id, feed_values, timeout_s=None, trace=False):
        """Runs a registered partition for `step_id`; returns ``(fetch values, trace dict)``.

        Raises:
            FailedPreconditionError: unknown handle (e.g. this task restarted).
            Any OpError of the partition's kernels, naming node and device.
        """
        plan = self._plans.get(handle)
        if plan is None:
            raise errors.FailedPreconditionError(
                None,
                None,
                f"graph handle {handle!r} is not registered on {self.task_device} "
                "(the task restarted?); create a new tf.Session so its partitions are registered again",
            )
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        ops = [] if trace else None
        ctx = StepContext(
            self.resources,
            self.rendezvous,
            step_id,
            deadline,
            ops,
            self.task_device + "/device:CPU:0",
        )
        try:
            values = plan.run(ctx, feed_values)
        finally:
            transfers = self.rendezvous.cleanup(step_id)
        self.steps_run += 1
        stats = None
        if trace:
            offset = time.time() - time.perf_counter()  # perf_counter -> wall clock, across tasks
            stats = {
                "device": self.task_device + "/device:CPU:0",
                "pid": os.getpid(),
                "ops": [[n, op, s + offset, e + offset] for n, op, s, e in ops],
                "transfers": transfers,
            }
        return values, stats

    def abort_step(self, step_id, message):
        self.rendezvous.abort(step_id, errors.CancelledError(None, None, message))

    # -- status --------------------------------------------------------------------------------------
    def status(self):
        variables = self.resources.variables()
        return {
            "task": self.task_device,
            "pid": os.getpid(),
            "steps_run": self.steps_run,
            "ops_placed": self.ops_placed(),
            "variables": {
                name: {
                    "initialized": v.initialized,
                    "nbytes": int(v.value.nbytes) if v.initialized else 0,
                    "shape": list(v.value.shape) if v.initialized else None,
                }
                for name, v in variables.items()
            },
        }

    def reset(self, containers=None):
        if not containers:
            self.resources.clear()
        else:
            for c in containers:
                self.resources.clear(c)
