"""Resources that outlive a step: variables, and any other declared `ResourceKind`.

A `ResourceManager` belongs to a worker (or a local Session); kernels reach it as
``ctx.resources`` and never import the runtime. Resources are keyed by container, kind
and name, so a variable ``w1`` on a ps survives across steps, sessions and clients,
and a checkpoint can reach every variable a task holds (`variables()`).

A *kind* says how to make one resource from the node that creates it (its creator op,
e.g. ``VariableV2``, ``FIFOQueueV2``, ``ConditionalAccumulator``). Kinds are declared
with `nbdist.ops.registry.resource_kind`; the executor hands a user op's ref input the
resource of the kind that input names (`ResourceManager.resource`).
"""

import collections
import threading

from nbdist import errors

ACTIVITY_KEPT = 4096  # records of watched resource ops a task keeps (the newest)


class Feeders:
    """The tasks that put elements into a resource (a queue): whose steps' masters fed it.

    A consumer waiting on the resource keeps waiting when every feeder is among the manager's
    lost tasks (`ResourceManager.lost_tasks`), as TF's does: another task may still feed it
    (the second worker of a shared "done" queue), or the lost one come back (a restarted sync
    chief's queue runner). A wait ends only when the resource is closed, the step's session
    closes, its deadline passes or the task holding the resource is lost. What the wait says
    (a long-wait report, a `DeadlineExceededError`) names the lost feeders (`lost_note`).
    """

    __slots__ = ("tasks",)

    def __init__(self):
        self.tasks = set()

    def add(self, task):
        if task:  # a local session's steps have no master task
            self.tasks.add(task)

    def lost_note(self, lost):
        """``"; <feeders> (the only task(s) that put elements into it) is/are unavailable: why"``
        when every feeder is in `lost` (task -> why), else ``""``."""
        if not self.tasks or not all(t in lost for t in self.tasks):
            return ""
        tasks = sorted(self.tasks)
        if len(tasks) == 1:
            return f"; {tasks[0]} (the only task that put elements into it) is unavailable: {lost[tasks[0]]}"
        why = "; ".join(f"{t}: {lost[t]}" for t in tasks)
        return f"; {', '.join(tasks)} (the only tasks that put elements into it) are unavailable: {why}"


class VariableResource:
    """One variable's storage: its current value (None until initialized) and a lock."""

    __slots__ = ("name", "device", "_value", "lock")

    def __init__(self, name, device):
        self.name = name
        self.device = device
        self._value = None
        self.lock = threading.Lock()

    @property
    def value(self):
        return self._value

    @value.setter
    def value(self, array):
        # Stored values are read-only: writers swap in a new array, so a value that was
        # read (fetched, queued on the wire) never changes under its holder.
        if array is not None:
            array.setflags(write=False)
        self._value = array

    def read(self):
        """The current value.

        Raises:
            FailedPreconditionError: naming the variable and its device if uninitialized.
        """
        value = self.value
        if value is None:
            where = f" on {self.device}" if self.device else ""
            raise errors.FailedPreconditionError(
                self.name,
                None,
                f"Attempting to use uninitialized value {self.name}{where}: "
                "run tf.global_variables_initializer() (or the variable's initializer) first",
            )
        return value

    @property
    def initialized(self):
        return self.value is not None

    def __repr__(self):
        state = "uninitialized" if self.value is None else f"{self.value.dtype}{list(self.value.shape)}"
        return f"<VariableResource {self.name} {state}>"


class ResourceKind:
    """One kind of resource: its name, how to make one, and the creator attrs it reads.

    Args:
        name: the kind's name, part of every resource key (``"variable"``, ``"fifo_queue"``).
        factory: ``factory(name, device, attrs) -> resource``: `name` is the resource's
            name (the creator's ``shared_name`` or node name), `device` where it lives,
            `attrs` the creator node's attrs (e.g. ``capacity``, ``component_types``).
        attrs: attr names every creator node of this kind must carry; a creator without
            one is an error naming the node and the missing attr.
        watched: the executor records every op on a resource of this kind in the task's
            activity log (`ResourceManager.record`); such resources have ``snapshot()``.
        per_session: a creator without ``shared_name`` makes one resource per session
            (TF's anonymous resources, e.g. dataset iterators); otherwise its node name is
            the resource's name, shared by every session on the task (variables, queues).
    """

    __slots__ = ("name", "factory", "attrs", "watched", "per_session")

    def __init__(self, name, factory, attrs=(), watched=False, per_session=False):
        if not isinstance(name, str) or not name:
            raise ValueError(f"a resource kind needs a non-empty name, got {name!r}")
        if not callable(factory):
            raise TypeError(f"resource kind {name!r}: factory must be callable, got {factory!r}")
        self.name = name
        self.factory = factory
        self.attrs = tuple(attrs)
        self.watched = bool(watched)
        self.per_session = bool(per_session)

    def __repr__(self):
        return f"<ResourceKind {self.name!r}>"


VARIABLE = ResourceKind("variable", lambda name, device, attrs: VariableResource(name, device))


_MAX_RESOLVED = 10_000  # creator lookups kept by a ResourceManager (then they start over)


class ResourceManager:
    """Thread-safe map ``(container, name) -> resource`` that outlives steps.

    Args:
        device: where the resources live (the task's device, or the local session's);
            errors about a variable name it.
    """

    def __init__(self, device=""):
        self.device = device
        self._lock = threading.Lock()
        self._resources = {}
        # (creator node, kind, container, session) -> its resource, as `resource` found it: a
        # training step looks up ~20 (each variable read and update), and the key's strings cost
        # more than the op. Emptied whenever a resource is dropped (`_forget`).
        self._resolved = {}
        self._generation = 0  # dropped resources so far (a lookup that raced with one is not kept)
        # Notified whenever something a waiting step may wait for changed: a tensor arrived
        # (the rendezvous shares it), a queue or an accumulator changed, a step was aborted.
        self.changed = threading.Condition()
        self._parked = {}  # wake() of each run parked on a server's I/O thread -> what it waits on
        # What happened to watched resources (queues, accumulators), newest last, from every
        # step that ran here: a traced step's timeline shows who else touched them meanwhile.
        self.activity = collections.deque(maxlen=ACTIVITY_KEPT)
        # Tasks this task's server has seen go away (task name -> why), until they come back:
        # set by the worker service from its peer connections; read by waits (`Feeders`).
        self.lost_tasks = {}

    def task_lost(self, task, why):
        """Notes that `task` is gone and wakes the waiting steps (they may now be starved)."""
        with self.changed:
            self.lost_tasks[task] = why
            self.changed.notify_all()
            parked = list(self._parked)
        for wake in parked:
            wake()

    def park(self, wake, waits_on=None):
        """Calls ``wake()`` (from any thread, never inside this manager's lock) whenever
        `notify` is for one of the resources whose ids are in the set `waits_on` (the run adds
        to it as it goes; None: for any), or for no resource in particular, and whenever
        `task_lost` is, until `unpark`: a run parked on a server's I/O thread while it waits
        for a queue or an accumulator, instead of blocking a thread."""
        with self.changed:
            self._parked[wake] = waits_on

    def unpark(self, wake):
        with self.changed:
            self._parked.pop(wake, None)

    def task_back(self, task):
        with self.changed:
            self.lost_tasks.pop(task, None)

    def record(self, kind, resource, node, start_s, end_s, step_id, result=None):
        """Logs one op on a watched resource (`time.perf_counter` times; cheap, never blocks).

        Args:
            kind: the resource's kind name (``"queue"``).
            resource: the resource; its ``snapshot()`` (state after the op) is kept.
            node: the op's `NodeDef`.
            start_s, end_s: when the op started (first had to wait) and ended.
            step_id: the step that ran it.
            result: the op's scalar output when it says something (an accepted gradient).
        """
        self.activity.append(
            (start_s, end_s, kind, resource.name, node.op, node.name, step_id, resource.snapshot(), result)
        )

    def activity_between(self, start_s, end_s, step_id=None, offset_s=0.0):
        """The logged ops that overlap ``[start_s, end_s]``, oldest first, as a trace shows them.

        Args:
            start_s, end_s: the window (`time.perf_counter` seconds), e.g. a traced step's.
            step_id: the traced step: its own ops get ``this_step: True``.
            offset_s: added to every time (a worker's perf_counter -> wall clock offset).

        Returns:
            Dicts: kind, resource, op, node_name, start_s, end_s, step_id, this_step, state
            (the resource after the op: a queue's size, an accumulator's count), result.
        """
        out = []
        for start, end, kind, name, op, node_name, sid, state, result in list(self.activity):
            if end >= start_s and start <= end_s:
                out.append(
                    {
                        "kind": kind,
                        "resource": name,
                        "op": op,
                        "node_name": node_name,
                        "start_s": start + offset_s,
                        "end_s": end + offset_s,
                        "step_id": sid,
                        "this_step": sid == step_id,
                        "state": state,
                        "result": result,
                    }
                )
        return out

    def notify(self, resource=None):
        """Wakes every step waiting on a resource of this manager (see the executor's wait),
        and the parked runs (`park`) that wait on `resource` (a queue, an accumulator that
        changed; None: every parked run)."""
        self.notify_any(None if resource is None else (id(resource),))

    def notify_any(self, ids):
        """`notify` for the resources whose ids are `ids` (None: every parked run)."""
        with self.changed:
            self.changed.notify_all()
            if not self._parked:
                return
            parked = [
                wake
                for wake, waits_on in self._parked.items()
                if ids is None or waits_on is None or not waits_on.isdisjoint(ids)
            ]
        for wake in parked:
            wake()

    def resource(self, kind, node, container="", session=""):
        """The resource of `kind` that creator node `node` names, made on first use.

        The key is ``(container, kind.name, shared_name or node name)``: two creator nodes
        with one ``shared_name`` share the resource, as in TF. For a `per_session` kind
        without ``shared_name`` the key also names `session` (the step's session).

        Raises:
            InvalidArgumentError: the creator lacks an attr the kind needs (naming both).
        """
        memo_key = (id(node), id(kind), container, session if kind.per_session else "")
        hit = self._resolved.get(memo_key)
        if hit is not None and hit[0] is node and hit[1] is kind:
            return hit[2]
        generation = self._generation
        res = self._resolve(kind, node, container, session)
        with self._lock:
            if generation == self._generation:
                if len(self._resolved) >= _MAX_RESOLVED:
                    self._resolved.clear()
                self._resolved[memo_key] = (node, kind, res)  # (the node kept: its id stays its own)
        return res

    def _resolve(self, kind, node, container, session):
        name = node.attr.get("shared_name") or node.name
        key_name = name
        if kind.per_session and not node.attr.get("shared_name"):
            key_name = f"{name}@session:{session}"
        container = node.attr.get("container") or container
        device = self.device or node.device
        missing = [a for a in kind.attrs if a not in node.attr]
        if missing:
            raise errors.InvalidArgumentError(
                node.name,
                None,
                f"{node.op} node {node.name!r} creates a {kind.name} resource but has no attr "
                f"{', '.join(map(repr, missing))}; the {kind.name} kind needs {list(kind.attrs)}",
            )
        return self.get_or_create(
            (container, kind.name, key_name), lambda: kind.factory(name, device, node.attr)
        )

    def variable(self, node, container=""):
        """The `VariableResource` of a variable node, created empty on first use."""
        return self.resource(VARIABLE, node, container)

    def get_or_create(self, key, factory):
        with self._lock:
            res = self._resources.get(key)
            if res is None:
                res = self._resources[key] = factory()
            return res

    def lookup(self, key):
        with self._lock:
            return self._resources.get(key)

    def variables(self):
        """All variables held here, by name (for checkpoints and inspection)."""
        with self._lock:
            return {k[2]: r for k, r in self._resources.items() if k[1] == "variable"}

    def clear_session(self, session):
        """Drops the per-session resources of `session` (see `ResourceKind.per_session`)."""
        suffix = f"@session:{session}"
        with self._lock:
            for k in [k for k in self._resources if k[2].endswith(suffix)]:
                del self._resources[k]
            self._forget()

    def clear(self, container=None):
        """Drops every resource (of one container when given), as `Session.reset` does."""
        with self._lock:
            if container is None:
                self._resources.clear()
            else:
                for k in [k for k in self._resources if k[0] == container]:
                    del self._resources[k]
            self._forget()

    def _forget(self):
        """(Under the lock.) Resources were dropped: what `resource` found is found again."""
        self._resolved.clear()
        self._generation += 1
