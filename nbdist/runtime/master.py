"""The master service: one per server; turns a client's `RunStep` into `RunGraph`s.

Its RPC table (`MasterService.rpc_table`): ``CreateSession``, ``ExtendSession``,
``RunStep``, ``CloseSession`` and ``Reset`` (`tf.Session.reset`: close every session of
this master, drop resource containers on every task of the cluster). It reaches every
worker, its own process's included, through one stub interface
(`nbdist.runtime.worker.LocalWorker` / `RemoteWorker`).

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
import itertools
import os
import threading
import time

from nbdist import errors
from nbdist.graph.device import Task
from nbdist.graph.graph_def import nodes_from_graph_def
from nbdist.ops import registry
from nbdist.runtime import (
    loop_kernels,  # noqa: F401 - registers the While kernels (they run plans)
    placer,
)
from nbdist.runtime.executor import check_fed_value
from nbdist.runtime.fetch_delivery import StepFetches
from nbdist.runtime.net.serving import DEFERRED, Rpc
from nbdist.runtime.partition import last_to_end, partition
from nbdist.runtime.plan_compiler import prune_and_sort
from nbdist.runtime.protocol import (
    CloseSessionRequest,
    CloseSessionResponse,
    CreateSessionRequest,
    CreateSessionResponse,
    ExtendSessionRequest,
    ExtendSessionResponse,
    ResetRequest,
    ResetResponse,
    RunGraphRequest,
    RunStepRequest,
)
from nbdist.runtime.worker import LocalWorker, RemoteWorker, graph_handle_incarnation

DEFAULT_STEP_TIMEOUT_S = 600.0
# Partitions get a grace second to report their own, more precise timeout (which _Recv
# keys they still wait for) before the master gives up on them.
_TIMEOUT_GRACE_S = 1.0
# Bound on releasing a closed session's resources on one task.
_CLEANUP_TIMEOUT_S = 5.0


class _MasterSession:
    def __init__(self, handle, config):
        self.handle = handle
        self.config = config
        self.nodes = []
        self.by_name = {}
        self.steps = {}  # signature -> _StepPlan
        self.running = set()  # _Steps in flight (I/O thread only); closing cancels them
        self.tasks = set()  # every task a partition of this session was registered on
        self.lock = threading.Lock()

    def extend(self, graph_def, expected_version):
        """Adds the new nodes; returns the step plans this drops (their signatures, which
        count the session's nodes, can never match again)."""
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
            dropped = list(self.steps.values())
            self.steps.clear()
            return dropped


def _check_feeds(session, feeds):
    """Checks a RunStep's feeds (``{tensor name: array}``) against the session's graph.

    Raises:
        InvalidArgumentError: not a map, an unknown tensor, or a value of another dtype or
            shape, naming the tensor.
    """
    if not isinstance(feeds, dict):
        raise errors.InvalidArgumentError(
            None, None, f"RunStep feeds must be a map, got {type(feeds).__name__}"
        )
    for name, value in feeds.items():
        op, _, index = name.rpartition(":") if isinstance(name, str) else ("", "", "")
        node = session.by_name.get(op)
        if node is None or not index.isdigit() or int(index) >= len(node.output):
            raise errors.InvalidArgumentError(
                op or None, None, f"fed tensor {name!r} is not in the session's graph"
            )
        check_fed_value(name, *node.output[int(index)], value)


def _signature(session, request):
    return (len(session.nodes), tuple(request.feeds), tuple(request.fetches), tuple(request.targets))


class _StepPlan:
    """A placed, partitioned, registered step signature."""

    def __init__(self, placement, parts, handles, fetches):
        self.placement = placement
        self.parts = parts  # task -> Partition
        self.handles = handles  # task -> graph handle
        # The task whose run ends the step and holds every fetch (a lone partition's fetches
        # are all there are): it may answer the client.
        last = last_to_end(parts)
        holds_all = last is not None and (len(parts) == 1 or set(fetches) <= set(parts[last].fetches))
        self.last_to_end = last if holds_all else None


class MasterService:
    """The master of one server.

    Args:
        cluster: the `ClusterSpec`.
        job_name, task_index: the task this master runs on (default placement).
        local_worker: the `WorkerService` of the same process (reached by a `LocalWorker`).
        key: the cluster key for calls to other workers.
    """

    def __init__(self, cluster, job_name, task_index, local_worker, key=None):
        self.cluster = cluster
        self.job_name = job_name
        self.task_index = task_index
        self.task_device = Task(job_name, task_index).device
        self.task_name = Task(job_name, task_index).name
        self.local_worker = local_worker
        self.key = key
        self.loop = None  # the server's ServingLoop, set when it starts
        self._sessions = {}
        self._handles = itertools.count(1)
        self._step_ids = itertools.count(int.from_bytes(os.urandom(6), "big") << 16)
        self._stubs = {}  # task device -> LocalWorker / RemoteWorker
        self.steps_run = 0
        self._reset_sessions = 0  # how many times Session.reset closed this master's sessions

    def address_of(self, task_device):
        return self.cluster.task_address(*Task.parse(task_device))

    def worker(self, task):
        """The stub of `task`'s worker (made on first use; the server's loop must run)."""
        stub = self._stubs.get(task)
        if stub is None:
            if task == self.task_device:
                stub = LocalWorker(self.local_worker, self.loop)
            else:
                stub = RemoteWorker(task, self.address_of(task), self.loop, self.key)
            stub = self._stubs.setdefault(task, stub)
        return stub

    def rpc_table(self):
        """The requests this service answers (composed onto the server's loop)."""
        return {
            "CreateSession": Rpc(self._rpc_create_session),
            "ExtendSession": Rpc(self._rpc_extend_session),
            "CloseSession": Rpc(self._rpc_close_session),
            "Reset": Rpc(self._rpc_reset),
            # RunStep only starts a step (planning goes to the pool): it never blocks.
            "RunStep": Rpc(self.run_step, inline=True),
        }

    def _rpc_create_session(self, msg, responder):
        request = CreateSessionRequest.from_msg(msg)
        handle = self.create_session(request.graph_def, request.config)
        # The cluster lets the client connect to every worker, which then sends fetched
        # tensors to it directly.
        return CreateSessionResponse(handle, self.cluster.as_dict()).as_answer()

    def _rpc_extend_session(self, msg, responder):
        request = ExtendSessionRequest.from_msg(msg)
        self.extend_session(request.handle, request.graph_def, request.version)
        return ExtendSessionResponse().as_answer()

    def _rpc_close_session(self, msg, responder):
        self.close_session(CloseSessionRequest.from_msg(msg).handle)
        return CloseSessionResponse().as_answer()

    def _rpc_reset(self, msg, responder):
        request = ResetRequest.from_msg(msg)
        self.reset(request.containers, request.timeout_s)
        return ResetResponse().as_answer()

    # -- sessions -------------------------------------------------------------------------------
    def create_session(self, graph_def, config):
        handle = f"{self.task_device}/session:{next(self._handles)}"
        session = _MasterSession(handle, config or {})
        session.extend(graph_def, 0)
        self._sessions[handle] = session
        return handle

    def extend_session(self, handle, graph_def, version):
        """Extends the session's graph and deregisters the partitions of the plans that
        drops, so a long session's workers hold only what its current graph uses (pool)."""
        self._deregister(self._session(handle).extend(graph_def, version))

    def close_session(self, handle, reason="the session was closed"):
        """Forgets the session and deregisters its partitions on every worker (pool thread)."""
        session = self._sessions.pop(handle, None)
        if session is None:
            return
        # A step still in flight (a dequeue that nobody feeds, run by another thread of the
        # client) ends with CancelledError on every task, as closing a TF session does.
        self.loop.post(lambda: _cancel_running(session, reason))
        with session.lock:
            plans = list(session.steps.values())
            session.steps.clear()
        self._deregister(plans)
        # The session's own resources (anonymous iterators) go with it, on every task it used.
        for task in sorted(session.tasks):
            with contextlib.suppress(errors.OpError):  # a task that is gone holds nothing
                self.worker(task).cleanup_all(None, _CLEANUP_TIMEOUT_S, session=handle)

    def reset(self, containers=None, timeout_s=None):
        """`tf.Session.reset`: closes every session of this master, then drops `containers`
        (every container when empty) on every task of the cluster, this one included.

        A closed session's next `RunStep` is `AbortedError`, as in TF. Runs on a pool thread.

        Raises:
            UnavailableError / DeadlineExceededError: a task that cannot be reached (named).
        """
        for handle in list(self._sessions):
            self.close_session(
                handle, reason=f"the session was closed by tf.Session.reset on {self.task_device}"
            )
        self._reset_sessions += 1
        for job, index, _ in self.cluster.iter_tasks():
            self.worker(Task(job, index).device).cleanup_all(containers, timeout_s)

    def _deregister(self, plans):
        for plan in plans:
            for task, graph_handle in plan.handles.items():
                self.worker(task).deregister_graph(graph_handle)

    def _session(self, handle):
        try:
            return self._sessions[handle]
        except KeyError:
            why = "it was closed by tf.Session.reset" if self._reset_sessions else "the master restarted?"
            raise errors.AbortedError(
                None,
                None,
                f"session {handle!r} is not known to the master at {self.task_device} ({why}); "
                "create a new tf.Session",
            ) from None

    # -- RunStep (I/O thread) ----------------------------------------------------------------------
    def run_step(self, msg, responder):
        """Starts one step; the reply goes through `responder`. Runs on the I/O thread."""
        arrived_s = time.time()  # the RunStep span starts here, before any planning
        request = RunStepRequest.from_msg(msg)
        session = self._session(request.handle)
        _check_feeds(session, request.feeds)
        plan = session.steps.get(_signature(session, request))
        if plan is None:  # the step's deadline covers planning and registering too
            deadline = time.monotonic() + request.timeout_s if request.timeout_s else None
            self.loop.submit(self._plan_then_start, session, request, responder, arrived_s, deadline)
        else:
            calls = []  # service calls are a trace's: an untraced step takes no timestamps for them
            if request.trace:
                calls.append(_event("master", "PartitionCache", self.task_device, hit=True))
            _Step(self, plan, request, responder, calls, False, arrived_s, session).start()
        return DEFERRED

    def _plan_then_start(self, session, request, responder, arrived_s, deadline):
        calls = []
        try:
            plan = self._plan(session, request, calls, deadline)
        except Exception as e:  # noqa: BLE001 - becomes the step's error reply
            responder.fail(e)
            return

        def start():
            try:
                _Step(self, plan, request, responder, calls, True, arrived_s, session, deadline).start()
            except Exception as e:  # noqa: BLE001 - a malformed request must still be answered
                responder.fail(e)

        self.loop.post(start)

    # -- planning (pool) --------------------------------------------------------------------------------
    def _plan(self, session, request, calls, deadline=None):
        feeds, fetches, targets = list(request.feeds), list(request.fetches), list(request.targets)
        with session.lock:
            signature = _signature(session, request)
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
                handles[task] = self.worker(task).register_graph(part, deadline)
                calls.append(_event("worker", "RegisterGraph", task, t0, nodes=len(part.nodes)))
                _forget_other_incarnations(session, task, handles[task])
            plan = session.steps[signature] = _StepPlan(placement, parts, handles, fetches)
            session.tasks.update(parts)
            return plan

    def abort_step(self, step, message):
        self.worker(self.task_device).abort_step(step.step_id, message)
        for task in step.plan.parts:
            if task != self.task_device:
                self.worker(task).abort_step(step.step_id, message)

    def status(self):
        return {"sessions": len(self._sessions), "steps_run": self.steps_run}


class _Step:
    """One step in flight, driven by the I/O thread from start to reply."""

    def __init__(self, master, plan, request, responder, calls, new, start_s, session, deadline=None):
        self.master = master
        self.session = session
        self.plan = plan
        self.feeds = request.feeds
        self.trace = bool(request.trace)
        self.timeout_s = request.timeout_s or DEFAULT_STEP_TIMEOUT_S
        if deadline is not None:  # (what planning left of it)
            self.timeout_s = max(0.001, deadline - time.monotonic())
        self.fetched = StepFetches(request, plan.last_to_end, master.task_device, new)
        self.responder = responder
        self.calls = calls
        self.new = new
        self.step_id = next(master._step_ids)
        self.start_s = start_s
        self.stats = {}  # task -> its partition's step stats (traced steps)
        self.waiting = set(plan.parts)
        self.cancels = []  # forget the RunGraph replies still owed once the step failed
        self.done = False
        self.timer = None

    def _meta(self):
        return {"step_id": self.step_id, "new_partitioning": self.new, "master": self.master.task_device}

    def start(self):
        m, plan = self.master, self.plan
        self.session.running.add(self)
        # Other tasks first, so they work while this process runs its own partition.
        for task in sorted(plan.parts, key=lambda t: t == m.task_device):
            if self.done:
                return
            part = plan.parts[task]
            request = RunGraphRequest(
                handle=plan.handles[task],
                step_id=self.step_id,
                timeout_s=self.timeout_s,
                feeds=[self.feeds[f] for f in part.feeds],
                trace=self.trace,
                session=self.session.handle,
                master=m.task_name,  # whose step: a task that loses this master aborts it
            )
            self.fetched.address(request, task, part, self._meta)
            if self.timer is None and task == m.task_device:
                self.timer = m.loop.call_later(self.timeout_s + _TIMEOUT_GRACE_S, self._on_timeout)
            t0 = time.time()
            cancel = m.worker(task).run_graph(
                request,
                lambda response, via, task=task, t0=t0: self._task_done(task, response, via, t0),
                self.fail,
                redial=self.new,  # a new plan's first step makes a lost connection again
            )
            if cancel is not None:
                self.cancels.append(cancel)
        if self.timer is None and not self.done:
            self.timer = m.loop.call_later(self.timeout_s + _TIMEOUT_GRACE_S, self._on_timeout)

    def _task_done(self, task, response, via, t0):
        if self.done:
            return
        if response.tensors is not None:  # what its end sent this task, riding on its reply
            try:
                self.master.local_worker.rendezvous.deliver(
                    self.step_id, response.tensors, f"{task}'s RunGraph reply"
                )
            except errors.OpError as e:
                self.fail(e)
                return
        self.fetched.received(task, self.plan.parts[task], response)
        if response.stats:
            self.stats[task] = response.stats
        if self.trace:
            how = {"in_process": via == "in process", "via": via}
            self.calls.append(_event("worker", "RunGraph", task, t0, step_id=self.step_id, **how))
        self.waiting.discard(task)
        if not self.waiting:
            self._finish()

    def _finish(self):
        self.done = True
        self.session.running.discard(self)
        m, plan = self.master, self.plan
        m.loop.cancel(self.timer)
        m.steps_run += 1
        meta = self._meta()
        if self.trace:
            self.calls.insert(
                0,
                _event(
                    "master",
                    "RunStep",
                    m.task_device,
                    self.start_s,
                    step_id=self.step_id,
                    in_process=self.responder.in_process,  # the client is in this process
                    via=self.responder.via,  # "in process", "link" or "zmq": how the request came
                ),
            )
            meta["service_calls"] = self.calls
            meta["step_stats"] = list(self.stats.values())
            meta["partition_graphs"] = {t: p.graph_def() for t, p in plan.parts.items()}
        if self.new or self.trace:
            meta["placement"] = plan.placement
        response = self.fetched.reply(meta)
        if response is not None:  # (None: the task that ran the step answered the client)
            self.responder.reply(response.TYPE, response.body())

    def fail(self, error):
        if self.done:
            return
        self.done = True
        self.session.running.discard(self)
        m = self.master
        if self.timer is not None:
            m.loop.cancel(self.timer)
        for cancel in self.cancels:
            cancel()
        m.abort_step(self, f"step {self.step_id} aborted because another task failed: {type(error).__name__}")
        self.responder.fail(_restarted_task_error(self.session, error))

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


def _forget_other_incarnations(session, task, handle):
    """Drops the session's plans whose partition on `task` was registered with an earlier
    incarnation of it (the task restarted since): their handles are unknown there now, so those
    steps register again instead of failing once with `AbortedError`. (Caller holds the lock.)"""
    incarnation = graph_handle_incarnation(handle)
    for signature, plan in list(session.steps.items()):
        old = plan.handles.get(task)
        if old is not None and graph_handle_incarnation(old) != incarnation:
            del session.steps[signature]


def _restarted_task_error(session, error):
    """A worker that lost our partitions (it restarted) aborts the step, as in TF.

    The session's cached plans are dropped, so the next step registers its partitions
    again; `AbortedError` is what `MonitoredTrainingSession` and `SessionManager` recover
    from (re-create the session, restore the latest checkpoint).
    """
    if not (isinstance(error, errors.FailedPreconditionError) and "is not registered on" in error.message):
        return error
    with session.lock:
        session.steps.clear()
    return errors.AbortedError(
        error.node_def,
        None,
        f"{error.message}\nThe step was aborted and the session's partitions will be registered again "
        "on the next run.",
    )


def _cancel_running(session, reason):
    for step in list(session.running):
        step.fail(errors.CancelledError(None, None, f"step {step.step_id}: {reason} while it ran"))


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
