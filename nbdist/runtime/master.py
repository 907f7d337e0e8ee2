"""The master service: one per server; turns a client's `RunStep` into `RunGraph`s.

Per session it keeps the client's graph (`CreateSession`, then `ExtendSession` with
only the new nodes). Per distinct (graph version, feeds, fetches, targets) it prunes,
places, partitions and registers each partition with its worker once (on the
server's pool: it may take a while). Every step after that is driven by the server's
I/O thread without any thread waiting: one `RunGraph` per involved task is sent at
once on the I/O thread's own channels, the local partition runs inline when it is
quick and cannot block (else on the pool), replies complete the step, and a timer
bounds it. When a partition fails, the others are aborted and the error is returned.
Tensors between partitions go worker to worker (one message per cross-task tensor).
"""

import contextlib
import functools
import itertools
import os
import threading
import time

from nbdist import errors
from nbdist.graph.device import Task
from nbdist.graph.graph_def import nodes_from_graph_def
from nbdist.ops import registry
from nbdist.runtime import placer, transport, wire
from nbdist.runtime.executor import prune_and_sort
from nbdist.runtime.partition import partition
from nbdist.runtime.serving import DEFERRED

DEFAULT_STEP_TIMEOUT_S = 600.0
# Partitions get a grace second to report their own, more precise timeout (which _Recv
# keys they still wait for) before the master gives up on them.
_TIMEOUT_GRACE_S = 1.0


class _MasterSession:
    def __init__(self, handle, config):
        self.handle = handle
        self.config = config
        self.nodes = []
        self.by_name = {}
        self.steps = {}  # signature -> _StepPlan
        self.lock = threading.Lock()

    def extend(self, graph_def, expected_version):
        new = nodes_from_graph_def(graph_def)
        with self.lock:
            if expected_version != len(self.nodes):
                raise errors.FailedPreconditionError(
                    None,
                    None,
                    f"ExtendSession: the master holds {len(self.nodes)} nodes but the client "
                    f"extends from {expected_version}; recreate the session",
                )
            for n in new:
                if n.name in self.by_name:
                    raise errors.InvalidArgumentError(n.name, None, f"node {n.name!r} already exists")
                self.by_name[n.name] = n
            self.nodes.extend(new)


def _signature(session, msg):
    return (
        len(session.nodes),
        tuple(msg.get("feeds", {})),
        tuple(msg.get("fetches", ())),
        tuple(msg.get("targets", ())),
    )


class _StepPlan:
    """A placed, partitioned, registered step signature."""

    def __init__(self, placement, parts, handles):
        self.placement = placement
        self.parts = parts  # task -> Partition
        self.handles = handles  # task -> graph handle


class MasterService:
    """The master of one server.

    Args:
        cluster: the `ClusterSpec`.
        job_name, task_index: the task this master runs on (default placement).
        local_worker: the `WorkerService` of the same process (called directly).
        key: the cluster key for calls to other workers.
    """

    def __init__(self, cluster, job_name, task_index, local_worker, key=None):
        self.cluster = cluster
        self.job_name = job_name
        self.task_index = task_index
        self.task_device = Task(job_name, task_index).device
        self.local_worker = local_worker
        self.key = key
        self.loop = None  # the server's ServingLoop, set when it starts
        self._sessions = {}
        self._handles = itertools.count(1)
        self._step_ids = itertools.count(int.from_bytes(os.urandom(6), "big") << 16)
        self._io_channels = {}  # task -> Channel owned by the I/O thread
        self._inflight = {}  # (task, request id) -> _Step
        self.steps_run = 0

    def address_of(self, task_device):
        return self.cluster.task_address(*Task.parse(task_device))

    # -- sessions -------------------------------------------------------------------------------
    def create_session(self, graph_def, config):
        handle = f"{self.task_device}/session:{next(self._handles)}"
        session = _MasterSession(handle, config or {})
        session.extend(graph_def, 0)
        self._sessions[handle] = session
        return handle

    def extend_session(self, handle, graph_def, version):
        self._session(handle).extend(graph_def, version)

    def close_session(self, handle):
        """Forgets the session and deregisters its partitions on every worker (pool thread)."""
        session = self._sessions.pop(handle, None)
        if session is None:
            return
        with session.lock:
            plans = list(session.steps.values())
            session.steps.clear()
        for plan in plans:
            for task, graph_handle in plan.handles.items():
                if task == self.task_device:
                    self.local_worker.deregister_graph(graph_handle)
                    continue
                channel = transport.channel_to(self.address_of(task), task, self.key)
                with contextlib.suppress(errors.OpError):  # a task that is gone holds nothing
                    channel.call("DeregisterGraph", {"handle": graph_handle}, timeout_s=5.0)

    def _session(self, handle):
        try:
            return self._sessions[handle]
        except KeyError:
            raise errors.AbortedError(
                None,
                None,
                f"session {handle!r} is not known to the master at {self.task_device} (it restarted?); "
                "create a new tf.Session",
            ) from None

    # -- RunStep (I/O thread) ----------------------------------------------------------------------
    def run_step(self, msg, responder):
        """Starts one step; the reply goes through `responder`. Runs on the I/O thread."""
        arrived_s = time.time()  # the RunStep span starts here, before any planning
        session = self._session(msg["handle"])
        plan = session.steps.get(_signature(session, msg))
        if plan is None:
            self.loop.submit(self._plan_then_start, session, msg, responder, arrived_s)
        else:
            calls = [_event("master", "PartitionCache", self.task_device, hit=True)]
            _Step(self, plan, msg, responder, calls, False, arrived_s).start()
        return DEFERRED

    def _plan_then_start(self, session, msg, responder, arrived_s):
        calls = []
        try:
            plan = self._plan(session, msg, calls)
        except Exception as e:  # noqa: BLE001 - becomes the step's error reply
            responder.fail(e)
            return
        self.loop.post(lambda: _Step(self, plan, msg, responder, calls, True, arrived_s).start())

    # -- planning (pool) --------------------------------------------------------------------------------
    def _plan(self, session, msg, calls):
        feeds, fetches, targets = list(msg.get("feeds", {})), list(msg["fetches"]), list(msg["targets"])
        with session.lock:
            signature = _signature(session, msg)
            if signature in session.steps:
                return session.steps[signature]
            by_name = session.by_name
            for name in [*feeds, *fetches]:
                op = name.rpartition(":")[0]
                if op not in by_name:
                    raise errors.InvalidArgumentError(
                        op, None, f"tensor {name!r} is not in the session's graph"
                    )
            nodes = _with_ref_sources(prune_and_sort(by_name, set(feeds), fetches, targets), by_name)
            to_place = nodes + [by_name[f.rpartition(":")[0]] for f in feeds]
            filters = session.config.get("device_filters", [])
            placement = placer.place(to_place, by_name, self.cluster, self.job_name, self.task_index, filters)
            parts = partition(nodes, by_name, placement, feeds, fetches, targets)
            handles = {}
            for task, part in parts.items():
                t0 = time.time()
                handles[task] = self._register(task, part)
                calls.append(_event("worker", "RegisterGraph", task, t0, nodes=len(part.nodes)))
            plan = session.steps[signature] = _StepPlan(placement, parts, handles)
            return plan

    def _register(self, task, part):
        args = (part.graph_def(), part.feeds, part.fetches, part.targets)
        if task == self.task_device:
            return self.local_worker.register_graph(*args)
        channel = transport.channel_to(self.address_of(task), task, self.key)
        body = dict(zip(("graph_def", "feeds", "fetches", "targets"), args, strict=True))
        return channel.call("RegisterGraph", body, timeout_s=60.0)["handle"]

    # -- the I/O thread's channels to other workers --------------------------------------------------------
    def close_io_channels(self):
        """Closes the I/O thread's channels (runs on the I/O thread as the server stops)."""
        for channel in self._io_channels.values():
            channel.close()
        self._io_channels.clear()

    def io_channel(self, task):
        channel = self._io_channels.get(task)
        if channel is None:
            channel = transport.Channel(self.address_of(task), task, self.key)
            self._io_channels[task] = channel
            self.loop.watch(channel.socket, lambda: self._on_reply(task, channel))
            self.loop.watch(channel.monitor, lambda: self._on_connection_event(task, channel))
        return channel

    def _on_reply(self, task, channel):
        while channel.socket.poll(0):
            frames = channel.socket.recv_multipart(copy=False)
            try:
                msg = wire.decode(frames, self.key)
            except wire.WireError:
                continue  # not from a worker of this cluster: nothing is waiting for it
            step = self._inflight.pop((task, msg.get("id")), None)
            if step is not None:
                step.on_reply(task, msg)

    def _on_connection_event(self, task, channel):
        channel.poll_events()
        if not channel.connected and channel.disconnected_at is not None:
            self._fail_task(task, channel.unavailable(0.0, "the connection was lost"))

    def check_connected(self, task, since):
        channel = self._io_channels[task]
        channel.poll_events()
        if not channel.connected:
            self._fail_task(task, channel.unavailable(time.monotonic() - since, "no connection"))

    def _fail_task(self, task, error):
        for key in [k for k in self._inflight if k[0] == task]:
            step = self._inflight.pop(key, None)
            if step is not None:
                step.fail(error)

    def abort_step(self, step, message):
        self.local_worker.abort_step(step.step_id, message)
        for task in step.plan.parts:
            if task != self.task_device:
                self.io_channel(task).send("AbortStep", {"step_id": step.step_id, "message": message})

    def status(self):
        return {"sessions": len(self._sessions), "steps_run": self.steps_run}


class _Step:
    """One step in flight, driven by the I/O thread from start to reply."""

    def __init__(self, master, plan, msg, responder, calls, new, start_s):
        self.master = master
        self.plan = plan
        self.feeds = msg.get("feeds", {})
        self.fetches = msg["fetches"]
        self.trace = bool(msg.get("trace"))
        self.timeout_s = msg.get("timeout_s") or DEFAULT_STEP_TIMEOUT_S
        self.deliver_to = msg.get("deliver_to")  # the client's routing id on every worker
        self.run_id = msg.get("run_id")
        self.responder = responder
        self.calls = calls
        self.new = new
        self.step_id = next(master._step_ids)
        self.start_s = start_s
        self.results = {}
        self.waiting = set(plan.parts)
        self.requests = {}
        self.done = False
        self.timer = None

    def start(self):
        m, plan = self.master, self.plan
        for task, part in plan.parts.items():
            if task == m.task_device:
                continue
            channel = m.io_channel(task)
            channel.poll_events()
            if channel.disconnected_at is not None and not channel.connected:
                self.fail(
                    channel.unavailable(time.monotonic() - channel.disconnected_at, "the connection was lost")
                )
                return
            body = {
                "handle": plan.handles[task],
                "step_id": self.step_id,
                "timeout_s": self.timeout_s,
                "feeds": [self.feeds[f] for f in part.feeds],
                "trace": self.trace,
            }
            if self.deliver_to and part.fetches:
                body.update(deliver_to=self.deliver_to, run_id=self.run_id)
            request_id = channel.send("RunGraph", body)
            m._inflight[(task, request_id)] = self
            self.requests[task] = (request_id, time.time())
            if not channel.connected:
                check = functools.partial(m.check_connected, task, time.monotonic())
                m.loop.call_later(transport.CONNECT_TIMEOUT_S, check)
        self.timer = m.loop.call_later(self.timeout_s + _TIMEOUT_GRACE_S, self._on_timeout)
        if m.task_device in plan.parts:
            self._run_local()

    def _run_local(self):
        m, task = self.master, self.master.task_device
        part = self.plan.parts[task]
        args = (
            self.plan.handles[task],
            self.step_id,
            [self.feeds[f] for f in part.feeds],
            self.timeout_s,
            self.trace,
        )
        t0 = time.time()
        if m.local_worker.runs_quickly(args[0]):
            try:
                result = m.local_worker.run_graph(*args)
            except Exception as e:  # noqa: BLE001 - the step's error
                self.fail(e)
                return
            self._task_done(task, result, t0, in_process=True)
            return
        future = m.loop.submit(m.local_worker.run_graph, *args)
        future.add_done_callback(lambda f: m.loop.post(lambda: self._local_finished(f, t0)))

    def _local_finished(self, future, t0):
        error = future.exception()
        if error is not None:
            self.fail(error)
        else:
            self._task_done(self.master.task_device, future.result(), t0, in_process=True)

    def on_reply(self, task, msg):
        if msg["type"] == "Error":
            try:
                wire.raise_error(msg)
            except errors.OpError as e:
                self.fail(e)
            return
        fetches = msg["fetches"]
        if msg.get("delivered"):  # sent straight to the client; it fills these positions itself
            fetches = _Delivered(len(self.plan.parts[task].fetches))
        self._task_done(task, (fetches, msg.get("stats")), self.requests[task][1])

    def _task_done(self, task, result, t0, in_process=False):
        if self.done:
            return
        self.results[task] = result
        self.calls.append(_event("worker", "RunGraph", task, t0, step_id=self.step_id, in_process=in_process))
        self.waiting.discard(task)
        if not self.waiting:
            self._finish()

    def _finish(self):
        self.done = True
        self.master.loop.cancel(self.timer)
        m, plan = self.master, self.plan
        values, direct = {}, {}
        for task, (vals, _) in self.results.items():
            names = plan.parts[task].fetches
            if isinstance(vals, _Delivered):
                direct[task] = [self.fetches.index(n) for n in names]
                vals = [None] * len(names)
            values.update(zip(names, vals, strict=True))
        m.steps_run += 1
        meta = {"step_id": self.step_id, "new_partitioning": self.new, "master": m.task_device}
        if direct:
            meta["direct"] = direct
        if self.trace:
            self.calls.insert(
                0, _event("master", "RunStep", m.task_device, self.start_s, step_id=self.step_id)
            )
            meta["service_calls"] = self.calls
            meta["step_stats"] = [stats for _, stats in self.results.values() if stats]
            meta["partition_graphs"] = {t: p.graph_def() for t, p in plan.parts.items()}
        if self.new or self.trace:
            meta["placement"] = plan.placement
        self.responder.reply("RunStepResponse", {"fetches": [values[f] for f in self.fetches], "meta": meta})

    def fail(self, error):
        if self.done:
            return
        self.done = True
        m = self.master
        if self.timer is not None:
            m.loop.cancel(self.timer)
        for task, (request_id, _) in self.requests.items():
            m._inflight.pop((task, request_id), None)
        m.abort_step(self, f"step {self.step_id} aborted because another task failed: {type(error).__name__}")
        self.responder.fail(error)

    def _on_timeout(self):
        waiting = sorted(self.waiting)
        self.fail(
            errors.DeadlineExceededError(
                None,
                None,
                f"step {self.step_id} timed out after {self.timeout_s:.1f} s waiting for RunGraph "
                f"of {waiting}",
            )
        )


class _Delivered:
    """A task's fetches that went straight to the client (`n` of them)."""

    __slots__ = ("n",)

    def __init__(self, n):
        self.n = n


def _event(service, method, task, start_s=None, **extra):
    now = time.time()
    return {
        "service": service,
        "method": method,
        "task": task,
        "start_s": start_s or now,
        "end_s": now,
        **extra,
    }


def _with_ref_sources(nodes, by_name):
    """Adds the resource creators (variables, ...) that ref inputs name, without running them."""
    present = {n.name for n in nodes}
    extra = []
    for node in nodes:
        for _, src, _ in registry.ref_inputs(node):
            if src not in present:
                present.add(src)
                extra.append(by_name[src])
    return extra + nodes
