"""Runs one graph (or one partition of it) from a precompiled plan.

`ExecutionPlan` is built once per (nodes, feeds, fetches, targets): it prunes to what
the fetches and targets need, orders the nodes topologically, resolves every kernel
and numbers every tensor slot. `ExecutionPlan.run` then is a tight loop over that
list. The same executor serves the local Session (the whole graph on one device)
and each worker's partitions. An op that may have to wait — a `_Recv` whose tensor has
not arrived, a dequeue from an empty queue, a `take_grad` short of gradients — declares a
*ready* function (`registry.ready`); while it says "not yet", the op is deferred with
everything that depends on it, so one partition never blocks another (a dataflow order,
as TF's executor, in a single thread per step). When nothing else can run, the step waits
on its resource manager's condition (notified by arriving tensors and by every queue or
accumulator change), bounded by the step's deadline and ended at once when the step is
aborted or its session closes; a timeout names everything still awaited.
"""

import heapq
import logging
import time

import numpy as np

from nbdist import errors
from nbdist.ops import registry
from nbdist.ops.deadness import DEAD, DEADNESS_SOURCES
from nbdist.runtime.kernel_errors import raise_from_kernel
from nbdist.runtime.plan_compiler import (
    compile_steps,
    dataflow_edges,
    note_last_uses,
    output_spec,
    prune_and_sort,
    split_input,
)

_MISSING = object()
_log = logging.getLogger(__name__)
HANG_REPORT_S = 10.0  # an unbounded wait logs what it waits for after this long...
HANG_REPORT_EVERY_S = 30.0  # ...then this often


class StepContext:
    """What kernels see of the step: resources, rendezvous, step id, trace, deadline.

    A ready function may *claim* what its kernel will return (`claim`): a dequeue takes its
    elements the moment it finds them, so two steps woken by the same enqueue can never
    both be told "ready" for one element. A claim the kernel did not collect (the step
    failed in between) is handed back when the step ends (`finish`).

    Args:
        resources: the task's `ResourceManager` (variables, ...).
        rendezvous: where `_Send` puts and `_Recv` takes tensors (None when unused).
        step_id: this step's id (part of every rendezvous key).
        deadline: `time.monotonic()` value after which waits give up (None: no bound).
        trace: a list to append ``(name, op, start_s, end_s)`` per op, or None.
        session: the id of the step's session (keys per-session resources: iterators).
        master: the task whose master issued the step (``/job:worker/task:0``; "" in a local
            session): resources note who feeds them (`nbdist.ops.resources.Feeders`).
        reply_to: the master's task device when the run's reply crosses the network to it
            (``/job:worker/replica:0/task:0``; None in the master's own process): tensors the
            run's end sends only there ride on that reply (`carried`), one message less.
    """

    __slots__ = (
        "resources",
        "rendezvous",
        "step_id",
        "deadline",
        "trace",
        "device",
        "cancelled",
        "session",
        "master",
        "finished",
        "wake",
        "outbox",
        "reply_to",
        "carried",
        "waits_on",
        "_claims",
    )

    def __init__(
        self,
        resources,
        rendezvous=None,
        step_id=0,
        deadline=None,
        trace=None,
        device="",
        session="",
        master="",
        reply_to=None,
    ):
        self.resources = resources
        self.rendezvous = rendezvous
        self.step_id = step_id
        self.deadline = deadline
        self.trace = trace
        self.device = device
        self.cancelled = None  # the error that ended this step from outside (session closed)
        self.session = session
        self.master = master
        self.finished = False  # set when the plan's run returned or raised (waits it left are void)
        self.wake = None  # set while the step is parked: called (any thread) when it must look again
        self.outbox = None  # tensors `_Send` queued for other tasks: {task: [[key, value], ...]}
        # The id of every resource one of the step's ops asked to be ready for (a set, filled
        # before the ask, so no change is missed, by a plan that waits on resources; else
        # None): its resource manager wakes the parked run only for a change of one of them,
        # and the step's end wakes only the runs behind it on one of them (`finish`).
        self.waits_on = None
        self.reply_to = reply_to
        self.carried = None  # [[key, value], ...] for `reply_to`, sent with the run's reply
        self._claims = None  # node name -> (value, give_back)

    def cancel(self, error):
        """Ends the step's waits with `error` (e.g. `CancelledError` when its session closes)."""
        self.cancelled = error
        self.resources.notify()
        wake = self.wake
        if wake is not None:
            wake()

    def claim(self, node, value, give_back):
        """Keeps `value` for `node`'s kernel; ``give_back()`` returns it if the kernel never runs."""
        if self._claims is None:
            self._claims = {}
        self._claims[node.name] = (value, give_back)

    def has_claim(self, node):
        return self._claims is not None and node.name in self._claims

    def pop_claim(self, node, default=None):
        """The value claimed for `node` (and forgets it), or `default`."""
        if self._claims is None or node.name not in self._claims:
            return default
        return self._claims.pop(node.name)[0]

    def finish(self):
        """Marks the step over: unclaimed values go back, and whoever waits behind it (on a
        resource it asked to be ready for: a claim or a place in a queue's line) re-checks."""
        self.finished = True
        claims, self._claims = self._claims, None
        for _, give_back in (claims or {}).values():
            give_back()
        if self.waits_on is None:
            self.resources.notify()
        elif self.waits_on:
            self.resources.notify_any(tuple(self.waits_on))

    def abort_error(self):
        """The error that ended this step from outside, or None while it may go on."""
        if self.cancelled is not None:
            return self.cancelled
        return self.rendezvous.aborted(self.step_id) if self.rendezvous is not None else None

    def function_runner(self):
        """``run(subgraph, values) -> outputs``: runs a function (a `SubgraphDef`: a `tf.data`
        pipeline's `map` function) on this task's resources, outside any step - an iterator
        calls it from the steps that ask for its elements, long after the one that made it."""
        resources, device, session = self.resources, self.device, self.session

        def run(subgraph, values):
            return plan_of(subgraph).run(StepContext(resources, device=device, session=session), values)

        return run


def plan_of(subgraph):
    """The `ExecutionPlan` of a `SubgraphDef` (from its inputs to its outputs), compiled once
    per process and kept with it."""
    plan = subgraph.cache.get("plan")
    if plan is None:
        plan = subgraph.cache["plan"] = ExecutionPlan(subgraph.nodes, subgraph.inputs, subgraph.outputs)
    return plan


def check_fed_value(name, dtype, shape, value):
    """Checks a fed value that arrived over the wire (a client converts, so it must match exactly).

    Raises:
        InvalidArgumentError: `value` is not an array of `dtype` whose shape fits `shape`,
            naming the tensor `name`.
    """
    if not isinstance(value, np.ndarray):
        got = type(value).__name__
    elif dtype.name == "string":
        got = None if value.dtype == object else value.dtype.name
    else:
        got = None if value.dtype == dtype.np else value.dtype.name
    if got is not None:
        raise errors.InvalidArgumentError(
            name.rpartition(":")[0], None, f"fed value for tensor {name!r} of dtype {dtype.name} is {got}"
        )
    if not shape.is_compatible_with(value.shape):
        raise errors.InvalidArgumentError(
            name.rpartition(":")[0],
            None,
            f"Cannot feed value of shape {value.shape} for tensor {name!r}, which has shape {shape}",
        )


class ExecutionPlan:
    """A pruned, ordered, kernel-resolved program for one set of feeds/fetches/targets.

    Args:
        nodes: the `NodeDef`s available (a whole graph or a partition).
        feeds: tensor names (``"x:0"``) whose values are supplied per run.
        fetches: tensor names to return, in order.
        targets: node names to run for their effects.

    Raises:
        InvalidArgumentError: for an unknown fetch/feed/target or a cycle.
        NotFoundError: for an op type without a kernel.
    """

    def __init__(self, nodes, feeds=(), fetches=(), targets=()):
        by_name = {n.name: n for n in nodes}
        self.feeds = list(feeds)
        self.fetches = list(fetches)
        self.targets = list(targets)
        fed = set(self.feeds)
        for name in [*self.feeds, *self.fetches]:
            op, index = split_input(name)
            if op not in by_name or index >= len(by_name[op].output):
                raise errors.InvalidArgumentError(
                    op, None, f"tensor {name!r} is not an element of this graph (no such op or output)"
                )
        for t in self.targets:
            if t not in by_name:
                raise errors.InvalidArgumentError(t, None, f"target op {t!r} is not in the graph")

        order = prune_and_sort(by_name, fed, self.fetches, self.targets)
        self.nodes = order
        self._steps, self._refs, self._n_slots, slot_of = compile_steps(order, by_name, self.feeds)
        self._feed_specs = [(f, *output_spec(by_name, f)) for f in self.feeds]
        self._feed_slots = [slot_of[f] for f in self.feeds]
        self._fetch_slots = [slot_of[f] for f in self.fetches]
        note_last_uses(self._steps, set(self._fetch_slots))
        self._producers, self._consumers = dataflow_edges(self._steps)
        # Deadness (a tf.cond's untaken branch): only plans that can meet a dead tensor check
        # for one, so every other plan runs exactly as before.
        self.deadness = any(n.op in DEADNESS_SOURCES or n.attr.get("may_be_dead") for n in order)
        self._takes_dead = [registry.lookup(n.op).takes_dead for n in order]
        blocking = [registry.lookup(n.op) for n in order if registry.lookup(n.op).blocking]
        self.may_block = bool(blocking)
        # Every wait is one a run can be parked for (a tensor, a queue, an accumulator).
        self.parks = all(d.parks for d in blocking)
        # Some op waits on a resource (a blocking op with a ref input: a queue, an accumulator),
        # not only on tensors: its runs re-check when resources change, and their end may hand
        # a claimed element back or free a place in a queue's line.
        self.waits_on_resources = any(d.ref_inputs for d in blocking)
        # The first step after the last `_Send`: a first pass that gets there pushes what it
        # queued for other tasks at once (`Rendezvous.flush_early`), not after the ops behind.
        sends = [i for i, n in enumerate(order) if n.op == "_Send"]
        self._after_sends = sends[-1] + 1 if sends and sends[-1] + 1 < len(order) else None
        self.last_run_s = None  # duration of the latest run (for the server's scheduling)

    def check_feeds(self, feed_values):
        """Checks values received for this plan's feeds (one per feed, in order) against
        each fed tensor's dtype and static shape.

        Raises:
            InvalidArgumentError: a missing or extra value, or one of another dtype or shape,
                naming the tensor.
        """
        if not isinstance(feed_values, (list, tuple)) or len(feed_values) != len(self._feed_specs):
            count = len(feed_values) if isinstance(feed_values, (list, tuple)) else repr(feed_values)
            raise errors.InvalidArgumentError(
                None, None, f"expected {len(self._feed_specs)} fed values ({self.feeds}), got {count}"
            )
        for (name, dtype, shape), value in zip(self._feed_specs, feed_values, strict=True):
            check_fed_value(name, dtype, shape, value)

    def run(self, ctx, feed_values=()):
        """Executes the plan; returns the fetched values in order.

        Args:
            ctx: the `StepContext`.
            feed_values: one value per feed name, in `feeds` order.
        """
        run = self.start(ctx, feed_values)
        try:
            still = run.advance()
            while still:
                self._wait(ctx, still, run.vals)  # each has its inputs and waits on its ready()
                still = run.advance()
        finally:
            self.end(run)
        return run.fetched()

    def start(self, ctx, feed_values=()):
        """A `PlanRun` of this plan: advance it (`PlanRun.advance`) until nothing is left,
        waiting in between, then `end` it. `run` is that loop, blocking; a server parks a
        run whose waits all `park` until a tensor arrives, and advances it then."""
        if self.waits_on_resources and ctx.waits_on is None:
            ctx.waits_on = set()
        return PlanRun(self, ctx, feed_values)

    def end(self, run):
        """Ends `run` (finished or failed): releases what its step claimed; notes its compute
        time (`last_run_s`: without its waits, what it would hold a thread for)."""
        if self.waits_on_resources:  # a queue may hold this step's place in line, or a claim
            run.ctx.finish()
        self.last_run_s = run.compute_s

    def deadline_error(self, ctx, still, vals, waited_s):
        """`DeadlineExceededError` naming every wait of the steps `still` to run."""
        reasons = self.waits_of(ctx, still, vals)
        return errors.DeadlineExceededError(
            still[0].node.name if still else None,
            None,
            f"step timed out on {ctx.device or 'the local device'} after {waited_s:.1f} s "
            f"still waiting for {len(reasons)} tensor(s) or resource(s): {'; '.join(reasons)}. "
            "Whoever should provide them may be slow, "
            "blocked or down; raise the timeout with tf.RunOptions(timeout_in_ms=...) or "
            "ConfigProto(operation_timeout_in_ms=...)",
        )

    def _args(self, step, ctx, vals):
        return [vals[i] if i >= 0 else self._resource(ctx, i) for i in step.inputs]

    def _waits_for(self, step, ctx, vals):
        """None when `step` can run now, else a description of what it waits for."""
        args = self._args(step, ctx, vals)
        if ctx.waits_on is not None:  # (before asking: a change from now on wakes the run)
            ctx.waits_on.update(id(arg) for arg, i in zip(args, step.inputs) if i < 0)
        return step.ready(ctx, step.node, *args)

    @staticmethod
    def _note_wait(step, waits):
        # A traced (or watched) op's span starts when the op first had to wait.
        waits.setdefault(step.index, time.perf_counter())

    def _wait(self, ctx, waiting, vals):
        """Blocks until one of `waiting` is ready, the deadline passes or the step is aborted.

        Raises:
            DeadlineExceededError: at the deadline, naming every wait (tensor and sender,
                queue and its size, accumulator and the gradients it holds).
            The abort error (`CancelledError` when the session closed, ...).
        """
        cond = ctx.resources.changed
        started = time.monotonic()
        next_report = started + HANG_REPORT_S
        with cond:
            while True:
                error = ctx.abort_error()
                if error is not None:
                    raise error
                reasons = [self._waits_for(s, ctx, vals) for s in waiting]
                if any(r is None for r in reasons):
                    return
                now = time.monotonic()
                remaining = None if ctx.deadline is None else ctx.deadline - now
                if remaining is not None and remaining <= 0:
                    raise self.deadline_error(ctx, waiting, vals, now - started)
                if now >= next_report:  # a long wait says what it waits for, bounded or not
                    self.report_long_wait(ctx, reasons, now - started)
                    next_report = now + HANG_REPORT_EVERY_S
                cond.wait(0.1 if remaining is None else min(0.1, remaining))

    def waits_of(self, ctx, still, vals):
        """What each of the steps `still` to run waits for (a tensor and its sender, a queue
        and its size, ...), for a log line or an error."""
        return [r for r in (self._waits_for(s, ctx, vals) for s in still if s.ready is not None) if r]

    @staticmethod
    def report_long_wait(ctx, reasons, waited_s):
        """Logs that a step has waited `waited_s` for `reasons` (after `HANG_REPORT_S`, then
        every `HANG_REPORT_EVERY_S`: nothing waits silently, bounded or not)."""
        _log.warning(
            "step %s on %s has waited %.0f s for: %s",
            ctx.step_id,
            ctx.device or "the local device",
            waited_s,
            "; ".join(reasons),
        )

    def _execute(self, step, ctx, vals, trace, waits=None):
        node = step.node
        args = self._args(step, ctx, vals)
        start = waits.pop(step.index, None) if waits else None
        if start is None and (trace is not None or step.watch):
            start = time.perf_counter()
        try:
            out = step.kernel(ctx, node, *args)
        except Exception as e:  # noqa: BLE001 - re-raised against the node
            raise_from_kernel(e, node, ctx)
        end = time.perf_counter() if trace is not None or step.watch else 0.0
        if trace is not None:
            trace.append((node.name, node.op, start, end))
        for pos, kind in step.watch:
            ctx.resources.record(kind, args[pos], node, start, end, ctx.step_id, _said(out, step.n_out))
        _store(step, vals, out)

    def _execute_plain(self, step, ctx, vals):
        """`_execute` for an op that is neither traced, watched nor waited for (the common
        case, so it is the short path)."""
        try:
            out = step.kernel(
                ctx,
                step.node,
                *[vals[i] if i >= 0 else self._resource(ctx, i) for i in step.inputs],
            )
        except Exception as e:  # noqa: BLE001 - re-raised against the node
            raise_from_kernel(e, step.node, ctx)
        _store(step, vals, out)

    def _resource(self, ctx, i):
        return ctx.resources.resource(*self._refs[-i - 1], session=ctx.session)


def _store(step, vals, out):
    n = step.n_out
    if n == 1:
        vals[step.out] = out if isinstance(out, (np.ndarray, np.generic)) or out is DEAD else np.asarray(out)
    elif n > 1:
        for i in range(n):
            vals[step.out + i] = out[i]


class PlanRun:
    """One run of an `ExecutionPlan`, advanced as far as it goes without waiting.

    The first `advance` runs the plan in its static order, deferring each op that must wait
    (and everything behind it); later ones run what became ready since, as a dataflow: each
    deferred op counts its producers still to run, and an op whose count reaches zero is
    tried (so a wake-up costs what it unblocks, not the length of what is still deferred).
    Whoever advances it decides how to wait in between: `ExecutionPlan.run` on the step's
    condition, a server's I/O thread by parking the run until a tensor for its step arrives.
    """

    __slots__ = ("plan", "ctx", "vals", "waits", "done", "dead", "pending", "waiting", "left", "compute_s")

    def __init__(self, plan, ctx, feed_values):
        self.plan, self.ctx = plan, ctx
        self.vals = [_MISSING] * plan._n_slots
        for slot, value in zip(plan._feed_slots, feed_values):
            self.vals[slot] = value
        self.waits = {}  # step index -> when it first had to wait (a traced or watched op's span starts)
        self.done = [False] * len(plan._steps)  # read only once a step was deferred (control edges)
        self.dead = [False] * len(plan._steps) if plan.deadness else None  # steps skipped as dead
        self.pending = None  # None until the first advance; then step index -> producers still to run
        self.waiting = []  # indices of deferred steps whose inputs are all there: each waits on its ready()
        self.left = 0  # deferred steps not run yet
        self.compute_s = 0.0  # time spent in advance (running kernels), waits excluded

    def blocked(self, step):
        """Waiting for a data input, or a control input (a `_Recv` of a control edge from
        another task, or anything deferred behind one), that has not run yet."""
        vals, done = self.vals, self.done
        for i in step.inputs:  # (loops, not any(): asked for every op behind a deferred one)
            if i >= 0 and vals[i] is _MISSING:
                return True
        return bool(step.controls) and not all(done[c] for c in step.controls)

    def advance(self):
        """Runs every op that can run now; returns the ops it waits on (empty: finished): each
        has all its inputs and waits for its ready function (a tensor, a queue...).

        Raises:
            The step's abort error (`CancelledError`, ...), or the error of a kernel.
        """
        began = time.perf_counter()
        try:
            error = self.ctx.abort_error()
            if error is not None:
                raise error
            with np.errstate(all="ignore"):  # IEEE results (log(0) = -inf), as TF's kernels give
                if self.pending is None:
                    self._first_pass()
                if self.waiting:
                    self._pass()
            if self.ctx.outbox:  # before waiting (or ending): the tensors for other tasks go now
                self.ctx.rendezvous.flush(self.ctx, last=not self.left)
            if self.left and not self.waiting:  # a plan is acyclic: something must be waiting
                raise errors.InternalError(None, None, f"{self.left} ops can never run (a cycle?)")
            steps = self.plan._steps
            return [steps[i] for i in self.waiting]
        finally:
            self.compute_s += time.perf_counter() - began

    def fetched(self):
        values = [self.vals[s] for s in self.plan._fetch_slots]
        if self.dead is not None:
            for name, value in zip(self.plan.fetches, values):
                if value is DEAD:
                    raise errors.InvalidArgumentError(
                        name.rpartition(":")[0],
                        None,
                        f"fetched tensor {name!r} has no value on {self.ctx.device or 'the local device'}: "
                        "it is on the branch of a tf.cond that was not taken (it is dead). Fetch the "
                        "cond's output (its Merge) instead",
                    )
        return values

    def skip_if_dead(self, step):
        """Gives `step` dead outputs, and says True, when one of its inputs or control inputs
        is dead (a `takes_dead` op - Merge, _Send - runs instead and decides itself)."""
        if self.plan._takes_dead[step.index]:
            return False
        vals, dead = self.vals, self.dead
        if any(i >= 0 and vals[i] is DEAD for i in step.inputs) or any(dead[c] for c in step.controls):
            for i in range(step.n_out):
                vals[step.out + i] = DEAD
            dead[step.index] = True
            return True
        return False

    def note_if_dead(self, step):
        """After a `takes_dead` op ran: dead when its outputs are (a Merge of dead inputs only)."""
        if step.n_out and self.vals[step.out] is DEAD:
            self.dead[step.index] = True

    def waiting_steps(self):
        """The deferred steps whose inputs are all there and that wait on their ready()."""
        steps = self.plan._steps
        return [steps[i] for i in self.waiting]

    def _first_pass(self):
        plan, ctx, vals, trace, waits = self.plan, self.ctx, self.vals, self.ctx.trace, self.waits
        execute_plain, done, deferred, dead = plan._execute_plain, self.done, [], self.dead
        after_sends = plan._after_sends
        for step in plan._steps:
            if step.index == after_sends and ctx.outbox:
                ctx.rendezvous.flush_early(ctx)
            if deferred and self.blocked(step):
                deferred.append(step)
                continue
            if dead is not None and self.skip_if_dead(step):
                pass
            elif step.ready is not None and plan._waits_for(step, ctx, vals) is not None:
                deferred.append(step)
                plan._note_wait(step, waits)
                continue
            elif trace is None and not step.watch:
                execute_plain(step, ctx, vals)
            else:
                plan._execute(step, ctx, vals, trace, waits)
            if dead is not None and not dead[step.index]:
                self.note_if_dead(step)
            done[step.index] = True
            if not deferred:
                # Drop intermediates after their last consumer, so a step's memory is its live
                # set. Only before any deferral: then every consumer has run in static order.
                for slot in step.frees:
                    vals[slot] = None
        done, producers = self.done, plan._producers
        self.pending = {s.index: sum(not done[p] for p in producers[s.index]) for s in deferred}
        self.waiting = [i for i, n in self.pending.items() if n == 0]  # in plan order
        self.left = len(deferred)

    def _pass(self):
        """Runs the waiting ops that became ready, and everything they unblock, in plan order."""
        plan, ctx, vals, trace, waits = self.plan, self.ctx, self.vals, self.ctx.trace, self.waits
        steps, consumers, pending, done = plan._steps, plan._consumers, self.pending, self.done
        execute_plain, dead = plan._execute_plain, self.dead
        work, still = list(self.waiting), []
        heapq.heapify(work)
        while work:
            index = heapq.heappop(work)
            step = steps[index]
            if dead is not None and self.skip_if_dead(step):
                pass
            elif step.ready is not None and plan._waits_for(step, ctx, vals) is not None:
                still.append(index)
                plan._note_wait(step, waits)
                continue
            elif trace is None and not step.watch:  # (a wait's start only times a traced op)
                execute_plain(step, ctx, vals)
            else:
                plan._execute(step, ctx, vals, trace, waits)
            if dead is not None and not dead[index]:
                self.note_if_dead(step)
            done[index] = True
            self.left -= 1
            for c in consumers[index]:
                if c in pending:
                    pending[c] -= 1
                    if pending[c] == 0:
                        heapq.heappush(work, c)
        still.sort()
        self.waiting = still


def _said(out, n_out):
    """A watched op's scalar result worth showing (an accepted flag, a size), else None."""
    if n_out == 1 and getattr(out, "ndim", None) == 0 and out.dtype.kind in "biu":
        return out.item()
    return None
