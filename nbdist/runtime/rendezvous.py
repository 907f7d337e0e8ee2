"""The rendezvous: where a `_Send` leaves a tensor and the matching `_Recv` takes it.

Each worker has one table keyed by ``(step_id, key)``. A `_Send` to a `_Recv` on the
same task puts the tensor in the table; one to another task is queued on the step and
pushed when the partition's run pauses or ends (`flush`): one ``SendTensor`` message per
destination task with every tensor queued for it, straight to that worker (tensors go
peer to peer, never through the master).
Waits are bounded by the step's deadline and end at once when the step is aborted;
a timeout names every key still awaited and the task it should come from.
"""

import collections
import threading
import time

from nbdist import errors
from nbdist.graph.device import task_prefix
from nbdist.ops.deadness import DEAD
from nbdist.runtime.net import transport

_STALE_S = 300.0
# Steps that ended here, remembered so a tensor that arrives for one later (a peer's push that
# crossed the step's abort, or a partition that finished early) is dropped at once instead of
# being held until it is stale.
_FINISHED_REMEMBERED = 4096


class Rendezvous:
    """One worker's table of tensors in flight.

    Args:
        task_device: this task's device prefix (``/job:ps/replica:0/task:0``).
        address_of: ``task device prefix -> "host:port"`` for peers.
        key: the cluster key used to sign pushed tensors.
    """

    def __init__(self, task_device, address_of, key=None, cond=None):
        self.task_device = task_device
        self._address_of = address_of
        self._key = key
        # Shared with the task's ResourceManager, so a step waiting for a tensor *or* a queue
        # wakes on either (the executor's wait).
        self._cond = cond if cond is not None else threading.Condition()
        self._table = {}  # (step_id, key) -> (value, arrival time)
        self._aborted = {}  # step_id -> (error, time)
        self._finished = collections.OrderedDict()  # step_id -> None, oldest first (bounded)
        self.transfers = {}  # step_id -> list of transfer records (only when tracing)
        self._parked = {}  # step_id -> wake(): a parked run of that step, to look again

    # -- producing ------------------------------------------------------------------------------
    def put(self, step_id, key, value):
        self.put_all(step_id, [[key, value]])

    def held(self):
        """How many tensors wait here for a `_Recv` (a task's Status shows it)."""
        with self._cond:
            return len(self._table)

    def park(self, step_id, wake):
        """Calls ``wake()`` whenever a tensor for `step_id` arrives or the step is aborted,
        until `unpark`: a run parked on the server's I/O thread instead of blocking a thread."""
        with self._cond:
            self._parked[step_id] = wake

    def unpark(self, step_id):
        with self._cond:
            self._parked.pop(step_id, None)

    def send(self, ctx, node, value):
        """`_Send` kernel: deliver `value` to the task of ``node.attr["recv_device"]`` (another
        task's at the next `flush`)."""
        recv_task = task_prefix(node.attr["recv_device"])
        key = node.attr["key"]
        if recv_task == self.task_device:
            self.put(ctx.step_id, key, value)
            return
        if ctx.outbox is None:
            ctx.outbox = {}
        # A dead tensor (the untaken side of a tf.cond) crosses as nil: a flag, no value.
        ctx.outbox.setdefault(recv_task, []).append([key, None if value is DEAD else value])
        if ctx.trace is not None:
            self._note(ctx, node, value, recv_task)

    def flush(self, ctx, last=False):
        """Pushes the tensors `send` queued for other tasks: one ``SendTensor`` per task.

        Called whenever the step's run pauses (it is about to wait, or is parked) or ends, so
        a tensor never waits for anything but the ops that could run before it was sent. At
        the run's end (`last`), tensors only for the master's task (``ctx.reply_to``: a
        `SyncReplicasOptimizer` token, say) are kept in ``ctx.carried`` instead: the RunGraph
        reply, which goes there at once, carries them (one message less on the step's path).
        """
        outbox, ctx.outbox = ctx.outbox, None
        if last and len(outbox or ()) == 1 and ctx.reply_to in outbox:  # (a task's name: never None)
            ctx.carried = outbox[ctx.reply_to]
            return
        for recv_task, tensors in (outbox or {}).items():
            channel = transport.channel_to(self._address_of(recv_task), recv_task, self._key)
            channel.send("SendTensor", {"step_id": ctx.step_id, "tensors": tensors})

    def flush_early(self, ctx):
        """`flush`, before the run's end, of what `send` queued so far when it is for another
        task than the master's (tensors only for the master's task wait: the run's end may carry
        them on its reply). A plan's first pass calls it once past its last `_Send`."""
        if any(task != ctx.reply_to for task in ctx.outbox):
            self.flush(ctx)

    def deliver(self, step_id, tensors, via):
        """Stores the tensors of a ``SendTensor`` (or those a RunGraph reply carried), checked:
        ``[[key, tensor], ...]``; `via` says which message brought them (named in the error).

        Raises:
            InvalidArgumentError: `tensors` is not such a list.
        """
        if not isinstance(tensors, list) or not all(
            isinstance(t, list) and len(t) == 2 and isinstance(t[0], str) for t in tensors
        ):
            raise errors.InvalidArgumentError(
                None,
                None,
                f"tensors for {self.task_device} in {via} must be [[key, tensor], ...], got {tensors!r:.200}",
            )
        self.put_all(step_id, tensors)

    def put_all(self, step_id, tensors):
        """Stores ``[[key, value], ...]`` (one ``SendTensor``), then wakes the step's waits once."""
        with self._cond:
            if step_id in self._aborted or step_id in self._finished:
                return  # nobody will take it
            now = time.monotonic()
            for key, value in tensors:
                self._table[(step_id, key)] = (value, now)
            self._cond.notify_all()
            wake = self._parked.get(step_id)
        if wake is not None:
            wake()

    def _note(self, ctx, node, value, peer):
        self.transfers.setdefault(ctx.step_id, []).append(
            {
                "node_name": node.name,
                "op": node.op,
                "key": node.attr["key"],
                "peer": peer,
                "bytes": int(getattr(value, "nbytes", 0)),
                "time_s": time.time(),
            }
        )

    # -- consuming ------------------------------------------------------------------------------
    def ready(self, ctx, node):
        """None once the tensor of `node` (a `_Recv`) arrived, else what it waits for."""
        if (ctx.step_id, node.attr["key"]) in self._table:
            return None
        return f"{node.name} <- {task_prefix(node.attr['send_device'])} (tensor {node.attr['tensor_name']})"

    def aborted(self, step_id):
        """The error `step_id` was aborted with, or None."""
        entry = self._aborted.get(step_id)
        return None if entry is None else entry[0]

    def take(self, ctx, node):
        """`_Recv` kernel: the tensor for this node's key (waiting if needed)."""
        self.wait_any(ctx, [node])
        with self._cond:
            value, _ = self._table.pop((ctx.step_id, node.attr["key"]))
        if value is None or value is DEAD:
            if not node.attr.get("may_be_dead"):
                raise errors.InvalidArgumentError(
                    node.name,
                    None,
                    f"{task_prefix(node.attr['send_device'])} sent no value for tensor "
                    f"{node.attr['tensor_name']!r} (a dead tensor), but no tf.cond can make it dead",
                )
            value = DEAD
        if ctx.trace is not None:
            self._note(ctx, node, value, task_prefix(node.attr["send_device"]))
        return value

    def wait_any(self, ctx, nodes):
        """Blocks until one of `nodes`' tensors arrived.

        Raises:
            DeadlineExceededError: at the step's deadline, naming the awaited keys and senders.
            CancelledError / the abort reason: when the step was aborted.
        """
        keys = [(ctx.step_id, n.attr["key"]) for n in nodes]
        with self._cond:
            while True:
                if ctx.step_id in self._aborted:
                    raise self._aborted[ctx.step_id][0]
                if any(k in self._table for k in keys):
                    return
                remaining = None if ctx.deadline is None else ctx.deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise self._timeout(nodes)
                self._cond.wait(0.1 if remaining is None else min(0.1, remaining))

    def _timeout(self, nodes):
        waiting = "; ".join(
            f"{n.name} <- {task_prefix(n.attr['send_device'])} (tensor {n.attr['tensor_name']})"
            for n in nodes
        )
        return errors.DeadlineExceededError(
            nodes[0].name if nodes else None,
            None,
            f"step timed out on {self.task_device} still waiting for {len(nodes)} tensor(s): {waiting}. "
            "The sending task may be slow, blocked or down; raise the timeout with "
            "tf.RunOptions(timeout_in_ms=...) or ConfigProto(operation_timeout_in_ms=...)",
        )

    # -- step lifecycle --------------------------------------------------------------------------
    def abort(self, step_id, error):
        """Ends every wait of `step_id` with `error`; later tensors of that step are dropped."""
        with self._cond:
            self._aborted[step_id] = (error, time.monotonic())
            for k in [k for k in self._table if k[0] == step_id]:
                del self._table[k]
            self._cond.notify_all()
            wake = self._parked.get(step_id)
        if wake is not None:
            wake()

    def cleanup(self, step_id):
        """Forgets `step_id` (after its RunGraph finished) and anything stale."""
        now = time.monotonic()
        with self._cond:
            self._finished[step_id] = None
            while len(self._finished) > _FINISHED_REMEMBERED:
                self._finished.popitem(last=False)
            for k in [k for k, (_, t) in self._table.items() if k[0] == step_id or now - t > _STALE_S]:
                del self._table[k]
            for s in [s for s, (_, t) in self._aborted.items() if now - t > _STALE_S]:
                del self._aborted[s]
        return self.transfers.pop(step_id, [])
