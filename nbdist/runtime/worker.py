"""The worker service: registers partitions and runs them, step after step.

It owns the task's `ResourceManager` (variables outlive steps, sessions and clients:
a second client sees what the first one trained) and its `Rendezvous`. Its RPC table
(`WorkerService.rpc_table`): ``RegisterGraph`` (a partition -> a handle with a
precompiled `ExecutionPlan`), ``DeregisterGraph``, ``RunGraph`` (feeds -> fetches for
one step id), ``AbortStep``, ``SendTensor`` (a peer pushes tensors for our
`_Recv`s) and ``CleanupAll`` (drops resource containers: `Session.reset`).

A master reaches workers through one stub interface, whether the worker is its own
process's (`LocalWorker`: direct calls) or another task's (`RemoteWorker`: requests on
the I/O thread's `peers.PeerChannels`)::

    handle = stub.register_graph(partition, deadline)    # a pool thread; may block until deadline
    stub.deregister_graph(handle)                        # best effort
    cancel = stub.run_graph(request, on_done, on_error, redial)  # the I/O thread; never blocks
    stub.abort_step(step_id, message)                    # the I/O thread; one-way
    stub.cleanup_all(containers, timeout_s, session)     # a pool thread; may block

`run_graph` takes a `protocol.RunGraphRequest` and calls ``on_done(RunGraphResponse, via)``
(`via`: ``"in process"``, ``"link"`` or ``"zmq"``) or ``on_error(exc)`` later, on the I/O
thread. Where its fetched tensors go is `nbdist.runtime.fetch_delivery`'s.
"""

import collections
import contextlib
import functools
import itertools
import os
import threading
import time

from nbdist import errors
from nbdist.graph.device import Task
from nbdist.graph.graph_def import nodes_from_graph_def
from nbdist.ops.resources import ResourceManager
from nbdist.runtime import loop_kernels  # noqa: F401 - registers the While kernels (they run plans)
from nbdist.runtime.executor import HANG_REPORT_EVERY_S, HANG_REPORT_S, ExecutionPlan, StepContext
from nbdist.runtime.fetch_delivery import reply_run_graph
from nbdist.runtime.net import transport
from nbdist.runtime.net.serving import DEFERRED, Rpc
from nbdist.runtime.protocol import (
    AbortStep,
    CleanupAllRequest,
    CleanupAllResponse,
    DeregisterGraphRequest,
    DeregisterGraphResponse,
    RegisterGraphRequest,
    RegisterGraphResponse,
    RunGraphRequest,
    RunGraphResponse,
    SendTensor,
)
from nbdist.runtime.rendezvous import Rendezvous

# A partition that computed for less than this last time runs on the I/O thread (`runs_quickly`):
# with the GIL a pool thread frees the loop only between switch intervals (5 ms) anyway.
INLINE_RUN_S = 0.005
# A parked run looks again this often even without a wake-up, as a blocking wait re-checks
# its condition: a ready function whose resource changed without notifying still runs.
PARKED_RECHECK_S = 0.1


def graph_handle_incarnation(handle):
    """The incarnation of the task that issued `handle` (a new one each time the task starts)."""
    return handle.rpartition(":")[2].partition("-")[0]


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
        self.rendezvous = Rendezvous(task_device, address_of, key, cond=self.resources.changed)
        self._address_of = address_of
        self._watched_masters = set()  # tasks whose connection the I/O thread watches (I/O thread)
        self._plans = {}  # handle -> (ExecutionPlan, partition GraphDef)
        self._handles = itertools.count(1)
        # Handles carry this incarnation: a master still holding a handle from before this task
        # restarted gets "not registered" (and re-registers) instead of running whichever new
        # partition happens to have the same number.
        self._incarnation = os.urandom(4).hex()
        self._lock = threading.Lock()
        self.steps_run = 0
        self.steps_completed = 0  # client steps this task answered itself (a RunGraph's ``complete``)
        self.steps_parked = 0  # runs on the I/O thread that waited for a tensor without a thread
        self._running = set()  # StepContexts in flight (`cancel_running` ends their waits)
        # A straggler, on purpose: every partition this task runs waits this long first
        # (`python -m nbdist.server --delay-ms`), to see staleness and backup workers at work.
        self.delay_s = 0.0
        self.loop = None  # the server's ServingLoop, set when it starts

    # -- RegisterGraph -------------------------------------------------------------------------
    def register_graph(self, graph_def, feeds, fetches, targets):
        nodes = nodes_from_graph_def(graph_def)
        plan = ExecutionPlan(nodes, feeds, fetches, targets)
        with self._lock:
            handle = f"{self.task_device}/graph:{self._incarnation}-{next(self._handles)}"
            self._plans[handle] = plan
        return handle

    def ops_placed(self):
        """``{op type: count}`` of the distinct ops in the partitions registered here."""
        with self._lock:
            plans = list(self._plans.values())
        nodes = {n.name: n.op for plan in plans for n in plan.nodes if not n.op.startswith("_")}
        return dict(collections.Counter(nodes.values()))

    def runs_quickly(self, handle):
        """True when a partition never blocks a thread and its last run computed for under
        `INLINE_RUN_S`.

        The server runs such a `RunGraph` on its I/O thread (`start_graph`), saving two thread
        hand-offs per step: a partition whose waits all `park` (tensors from other tasks,
        queues, accumulators) is parked while it waits, never blocking. One that may wait on
        anything else, or computes for long, goes to the pool, so it never stalls the server.
        """
        plan = self._plans.get(handle)
        return (
            plan is not None
            and not self.delay_s
            and plan.parks
            and plan.last_run_s is not None
            and plan.last_run_s < INLINE_RUN_S
        )

    def deregister_graph(self, handle):
        with self._lock:
            self._plans.pop(handle, None)

    # -- RunGraph ----------------------------------------------------------------------------------
    def run_graph(self, request, remote=False):
        """Runs a registered partition for one step (a `RunGraphRequest`); returns ``(fetch
        values, trace dict, carried tensors)``: the carried are ``[[key, tensor], ...]`` its
        end sent the master's task, for the reply to carry when `remote` (the master is
        another task's: `StepContext.reply_to`), else None.

        The request's `master` is the task whose master issued the step (``/job:worker/task:0``):
        a step of a master this task then loses is aborted (`master_lost`), and resources note
        whose steps feed them.

        Raises:
            FailedPreconditionError: unknown handle (e.g. this task restarted).
            Any OpError of the partition's kernels, naming node and device.
        """
        plan, ctx, began = self._begin(request, remote)
        if self.delay_s:
            time.sleep(
                self.delay_s
                if ctx.deadline is None
                else max(0.0, min(self.delay_s, ctx.deadline - time.monotonic()))
            )
        try:
            values = plan.run(ctx, request.feeds)
        finally:
            transfers = self._end(ctx)
        self.steps_run += 1
        return values, self._stats(ctx, began, transfers), ctx.carried

    def start_graph(self, request, on_done, on_error, remote=False):
        """`run_graph` on the I/O thread, which it never blocks (only for `runs_quickly` plans).

        The partition runs as far as it can; if it then waits it is *parked* (`_ParkedRun`)
        until what it waits for changes. Calls ``on_done(values, stats, carried)`` or
        ``on_error(exc)`` on the I/O thread when it is over.
        """
        try:
            plan, ctx, began = self._begin(request, remote)
            run = plan.start(ctx, request.feeds)
        except Exception as e:  # noqa: BLE001 - the step's error, answered like any other
            on_error(e)
            return
        _ParkedRun(self, plan, run, began, on_done, on_error).start()

    def _begin(self, request, remote):
        handle, timeout_s, master = request.handle, request.timeout_s, request.master
        plan = self._plans.get(handle)
        if plan is None:
            raise errors.FailedPreconditionError(
                None,
                None,
                f"graph handle {handle!r} is not registered on {self.task_device} "
                "(the task restarted?); create a new tf.Session so its partitions are registered again",
            )
        plan.check_feeds(request.feeds)
        ctx = StepContext(
            self.resources,
            self.rendezvous,
            request.step_id,
            None if timeout_s is None else time.monotonic() + timeout_s,
            [] if request.trace else None,
            self.task_device + "/device:CPU:0",
            request.session,
            master if isinstance(master, str) else "",
            _task_device(master) if remote else None,
        )
        with self._lock:
            self._running.add(ctx)
        return plan, ctx, time.perf_counter()

    def _end(self, ctx):
        """The step is over here: forgets it; returns its transfers (traced steps)."""
        with self._lock:
            self._running.discard(ctx)
        return self.rendezvous.cleanup(ctx.step_id)

    def _stats(self, ctx, began, transfers):
        if ctx.trace is None:
            return None
        offset = time.time() - time.perf_counter()  # perf_counter -> wall clock, across tasks
        return {
            "device": self.task_device + "/device:CPU:0",
            "pid": os.getpid(),
            "ops": [[n, op, s + offset, e + offset] for n, op, s, e in ctx.trace],
            "transfers": transfers,
            "resources": self.resources.activity_between(began, time.perf_counter(), ctx.step_id, offset),
        }

    def abort_step(self, step_id, message):
        self.rendezvous.abort(step_id, errors.CancelledError(None, None, message))

    def cancel_running(self, message):
        """Ends every step in flight here (a blocked dequeue too) with `CancelledError`."""
        with self._lock:
            running = list(self._running)
        for ctx in running:
            ctx.cancel(errors.CancelledError(None, None, message))

    # -- lost masters ------------------------------------------------------------------------------
    def watch_master(self, master):
        """Watches the connection to the task of `master` (I/O thread), so that losing it is
        known here: its steps in flight are aborted and its resources' consumers stop waiting."""
        if master in self._watched_masters:
            return
        self._watched_masters.add(master)
        try:
            task = Task.parse(master)
            address = self._address_of(task.device)
        except (ValueError, KeyError):
            return  # not a task of this cluster: nothing to watch
        if task.device == self.task_device:
            return
        self.loop.peers.watch(
            address,
            master,
            lambda why: self.master_lost(master, why),
            lambda: self.resources.task_back(master),
        )

    def master_lost(self, master, why):
        """`master`'s task is gone: abort the steps it issued here; wake the waits it fed."""
        self.resources.task_lost(master, why)
        with self._lock:
            running = [ctx for ctx in self._running if ctx.master == master]
        for ctx in running:
            ctx.cancel(errors.AbortedError(None, None, f"the step's master {master} is unavailable: {why}"))

    # -- status --------------------------------------------------------------------------------------
    def status(self):
        variables = self.resources.variables()
        return {
            "task": self.task_device,
            "pid": os.getpid(),
            "steps_run": self.steps_run,
            "steps_completed": self.steps_completed,
            "steps_parked": self.steps_parked,
            "tensors_held": self.rendezvous.held(),
            "graphs_registered": len(self._plans),
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

    def cleanup_all(self, containers=None, session=None):
        """Drops the resources of `containers` (all of them when empty): TF's CleanupAll.

        With `session`, drops only that session's own resources (its anonymous iterators),
        which its master asks for when the session closes.
        """
        if session is not None:
            self.resources.clear_session(session)
        elif not containers:
            self.resources.clear()
        else:
            for c in containers:
                self.resources.clear(c)

    # -- RPCs ------------------------------------------------------------------------------------------
    def rpc_table(self):
        """The requests this service answers (composed onto the server's loop)."""
        return {
            "RegisterGraph": Rpc(self._rpc_register_graph),
            "DeregisterGraph": Rpc(self._rpc_deregister_graph),
            "RunGraph": Rpc(self._rpc_run_graph, inline=lambda msg: self.runs_quickly(msg.get("handle"))),
            "AbortStep": Rpc(self._rpc_abort_step, inline=True),
            "SendTensor": Rpc(self._rpc_send_tensor, inline=True),
            "CleanupAll": Rpc(self._rpc_cleanup_all),
        }

    def _rpc_register_graph(self, msg, responder):
        request = RegisterGraphRequest.from_msg(msg)
        handle = self.register_graph(request.graph_def, request.feeds, request.fetches, request.targets)
        return RegisterGraphResponse(handle).as_answer()

    def _rpc_deregister_graph(self, msg, responder):
        self.deregister_graph(DeregisterGraphRequest.from_msg(msg).handle)
        return DeregisterGraphResponse().as_answer()

    def _rpc_run_graph(self, msg, responder):
        request = RunGraphRequest.from_msg(msg)
        master = request.master
        if master and isinstance(master, str) and master not in self._watched_masters:
            self.loop.post(lambda: self.watch_master(master))
        if self.loop.on_io_thread:  # the loop found it quick (`runs_quickly`): never block here
            self.start_graph(
                request,
                lambda *result: self._answer_run_graph(request, responder, *result),
                responder.fail,
                remote=True,
            )
        else:
            self._answer_run_graph(request, responder, *self.run_graph(request, remote=True))
        return DEFERRED

    def _answer_run_graph(self, request, responder, values, stats, carried):
        reply_run_graph(
            self.loop, responder, request, self.task_device, values, stats, self._completed_one, carried
        )

    def _completed_one(self):
        self.steps_completed += 1

    def _rpc_abort_step(self, msg, responder):
        request = AbortStep.from_msg(msg)
        self.abort_step(request.step_id, request.message)
        return None, None

    def _rpc_send_tensor(self, msg, responder):
        request = SendTensor.from_msg(msg)
        self.rendezvous.deliver(request.step_id, request.tensors, "a SendTensor")
        return None, None  # one-way: one message per destination task and pause of a partition

    def _rpc_cleanup_all(self, msg, responder):
        request = CleanupAllRequest.from_msg(msg)
        self.cleanup_all(request.containers, request.session)
        return CleanupAllResponse().as_answer()


@functools.lru_cache(maxsize=64)
def _task_device(master):
    """The task device of a request's `master` (``/job:worker/task:0``); None for none or for
    one that names no task (then nothing rides on the reply)."""
    if not master or not isinstance(master, str):
        return None
    try:
        return Task.parse(master).device
    except ValueError:
        return None


def _part_args(part):
    return part.graph_def(), part.feeds, part.fetches, part.targets


class LocalWorker:
    """The stub of the worker in the master's own process: direct calls, no messages.

    A partition that `runs_quickly` runs on the I/O thread (parked while it waits for
    tensors); any other on the pool, its result posted back to the I/O thread.
    """

    def __init__(self, service, loop):
        self.service = service
        self.task = service.task_device
        self._loop = loop

    def register_graph(self, part, deadline=None):
        return self.service.register_graph(*_part_args(part))

    def deregister_graph(self, handle):
        self.service.deregister_graph(handle)

    def run_graph(self, request, on_done, on_error, redial=False):
        service, loop = self.service, self._loop

        def done(values, stats, carried):  # (carried: None, the master is in this process)
            on_done(RunGraphResponse(values, stats), "in process")

        if service.runs_quickly(request.handle):
            service.start_graph(request, done, on_error)
            return None

        def finished(future):
            error = future.exception()
            if error is not None:
                on_error(error)
            else:
                done(*future.result())

        future = loop.submit(service.run_graph, request)
        future.add_done_callback(lambda f: loop.post(lambda: finished(f)))
        return None

    def abort_step(self, step_id, message):
        self.service.abort_step(step_id, message)

    def cleanup_all(self, containers, timeout_s=None, session=None):
        self.service.cleanup_all(containers, session)


class RemoteWorker:
    """The stub of another task's worker: requests over the network.

    `register_graph` and `deregister_graph` (pool threads) use the calling thread's
    channel; `run_graph` and `abort_step` (I/O thread) the loop's `peers.PeerChannels`.
    """

    def __init__(self, task, address, loop, key=None):
        self.task = task
        self.address = address
        self._loop = loop
        self._key = key

    def _call(self, request, timeout_s, connect_timeout_s=None):
        channel = transport.channel_to(self.address, self.task, self._key)
        return channel.call(request.TYPE, request.body(), timeout_s, connect_timeout_s)

    def register_graph(self, part, deadline=None):
        """Registers `part` there; bounded by the step's `deadline` when it has one, which is
        also how long a task never reached is waited for (tasks start in any order)."""
        request = RegisterGraphRequest(*_part_args(part))
        if deadline is None:
            return RegisterGraphResponse.from_msg(self._call(request, timeout_s=60.0)).handle
        reply = self._call(request, max(0.001, deadline - time.monotonic()), float("inf"))
        return RegisterGraphResponse.from_msg(reply).handle

    def deregister_graph(self, handle):
        with contextlib.suppress(errors.OpError):  # a task that is gone holds nothing
            self._call(DeregisterGraphRequest(handle), timeout_s=5.0)

    def run_graph(self, request, on_done, on_error, redial=False):
        peers = self._loop.peers

        def reply(msg):
            on_done(RunGraphResponse.from_msg(msg), peers.via(self.address))

        body = request.body()
        request_id = peers.request(self.address, self.task, request.TYPE, body, reply, on_error, redial)
        return None if request_id is None else (lambda: peers.forget(self.address, request_id))

    def abort_step(self, step_id, message):
        abort = AbortStep(step_id, message)
        self._loop.peers.send(self.address, self.task, abort.TYPE, abort.body())

    def cleanup_all(self, containers, timeout_s=None, session=None):
        self._call(CleanupAllRequest(list(containers or []), session), timeout_s=timeout_s)


class _ParkedRun:
    """A partition's run driven by the I/O thread, parked whenever it waits.

    The rendezvous wakes it when one of its step's tensors arrives (or the step is aborted
    or cancelled); the task's resource manager when a queue or an accumulator changes, or a
    task is lost (a wait may now be starved); a timer at its deadline; and a re-check every
    `PARKED_RECHECK_S`, as a blocking wait re-checks its condition, which also reports a
    long wait (`HANG_REPORT_S`, then every `HANG_REPORT_EVERY_S`).
    """

    def __init__(self, service, plan, run, began, on_done, on_error):
        self.service, self.plan, self.run, self.ctx = service, plan, run, run.ctx
        self.loop = service.loop
        self.began, self.on_done, self.on_error = began, on_done, on_error
        self.began_s = time.monotonic()
        self.report_at_s = HANG_REPORT_S
        self.timers = []
        self.over = False
        self.wake_posted = False  # an advance is posted that has not begun: the next wake_later joins it

    def start(self):
        service, ctx, loop = self.service, self.ctx, self.loop
        if self.plan.waits_on_resources:
            # Before the first pass: a queue that another thread changes meanwhile wakes it later.
            # (A run that waits only for tensors is woken by the rendezvous alone: the end of
            # every other step here would wake it for nothing. And one that waits on a queue is
            # woken by that queue's changes, not by every accumulator's: `ctx.waits_on`.)
            service.resources.park(self.wake_later, ctx.waits_on)
        self.advance()
        if self.over:
            return
        service.rendezvous.park(ctx.step_id, self.wake)  # (tensors arrive on this thread: none came since)
        service.steps_parked += 1
        ctx.wake = self.wake
        self.timers.append(loop.call_later(PARKED_RECHECK_S, self.recheck))
        if ctx.deadline is not None:
            deadline_s = max(0.0, ctx.deadline - time.monotonic())
            self.timers.append(loop.call_later(deadline_s, lambda: self.advance(at_deadline=True)))
        if ctx.abort_error() is not None:  # cancelled before it was parked
            self.advance()

    def advance(self, at_deadline=False):  # I/O thread
        if self.over:  # a late wake-up
            return
        plan, run, ctx = self.plan, self.run, self.ctx
        try:
            still = run.advance()
            if still and (at_deadline or (ctx.deadline is not None and time.monotonic() >= ctx.deadline)):
                raise plan.deadline_error(ctx, still, run.vals, time.monotonic() - self.began_s)
        except Exception as e:  # noqa: BLE001 - ends the step with its error
            self.finish(e)
            return
        if not still:
            self.finish(None)

    def finish(self, error):
        self.over = True
        if error is not None:
            self._release()
            self.on_error(error)
            return
        self.service.steps_run += 1
        if self.ctx.trace is None:  # the answer first: what is left is bookkeeping, off the step's path
            try:
                self.on_done(self.run.fetched(), None, self.ctx.carried)
            finally:
                self._release()
            return
        stats = self.service._stats(self.ctx, self.began, self._release())
        self.on_done(self.run.fetched(), stats, self.ctx.carried)

    def _release(self):
        """Forgets the finished run everywhere it was parked or counted; returns its transfers."""
        service, ctx = self.service, self.ctx
        service.rendezvous.unpark(ctx.step_id)
        service.resources.unpark(self.wake_later)
        ctx.wake = None
        for timer in self.timers:
            self.loop.cancel(timer)
        self.plan.end(self.run)
        return service._end(ctx)

    def wake(self):  # any thread: a tensor of this step arrived, or the step was aborted
        if self.loop.on_io_thread:
            self.loop.guard(self.advance)
        else:
            self.loop.post(self.advance)

    def wake_later(self):  # any thread, maybe inside a kernel holding a queue's lock: never nested
        # Every queue or accumulator change of the task wakes every run parked on resources (a
        # sync step's four gradients, four takes and its tokens: a dozen changes, each once per
        # parked run). Wakes before a posted advance begins are one advance: it sees them all.
        if self.wake_posted:
            return
        self.wake_posted = True
        self.loop.post(self._posted_advance)

    def _posted_advance(self):  # I/O thread
        self.wake_posted = False  # (first: a change from now on posts again)
        self.advance()

    def recheck(self):  # I/O thread, every PARKED_RECHECK_S while parked
        self.timers[0] = self.loop.call_later(PARKED_RECHECK_S, self.recheck)
        self.advance()
        waited_s = time.monotonic() - self.began_s
        if not self.over and waited_s >= self.report_at_s:
            plan, run = self.plan, self.run
            plan.report_long_wait(self.ctx, plan.waits_of(self.ctx, run.waiting_steps(), run.vals), waited_s)
            self.report_at_s = waited_s + HANG_REPORT_EVERY_S
