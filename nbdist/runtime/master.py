"""The master service: one per server; turns a client's `RunStep` into `RunGraph`s.

Per session it keeps the client's graph (`CreateSession`, then `ExtendSession` with
only the new nodes). Per distinct (graph version, feeds, fetches, targets) it prunes,
places, partitions and registers each partition with its worker once; every step
after that costs one `RunGraph` per involved task, sent concurrently, plus one
message per cross-task tensor (pushed worker to worker). When a partition fails,
the others are aborted at once and the root cause is raised.
"""

import contextlib
import itertools
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import zmq

from nbdist import errors
from nbdist.graph.graph_def import nodes_from_graph_def
from nbdist.ops import registry
from nbdist.runtime import placer, transport, wire
from nbdist.runtime.executor import prune_and_sort
from nbdist.runtime.partition import partition

DEFAULT_STEP_TIMEOUT_S = 600.0
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


class _StepPlan:
    """A placed, partitioned, registered step signature."""

    def __init__(self, placement, parts, handles):
        self.placement = placement
        self.parts = parts  # task -> Partition
        self.handles = handles  # task -> graph handle
        self.runs = 0


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
        self.task_device = f"/job:{job_name}/replica:0/task:{task_index}"
        self.local_worker = local_worker
        self.key = key
        self._sessions = {}
        self._handles = itertools.count(1)
        self._step_ids = itertools.count(int.from_bytes(os.urandom(6), "big") << 16)
        self._local_pool = ThreadPoolExecutor(8, thread_name_prefix="nbdist-local-partition")
        self.steps_run = 0

    def address_of(self, task_device):
        job, task = _job_task(task_device)
        return self.cluster.task_address(job, task)

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
        self._sessions.pop(handle, None)

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

    # -- RunStep ------------------------------------------------------------------------------------
    def run_step(self, handle, feeds, fetches, targets, timeout_s=None, trace=False):
        """Runs one step; returns ``(fetch values, metadata dict)``."""
        session = self._session(handle)
        timeout_s = timeout_s or DEFAULT_STEP_TIMEOUT_S
        start = time.time()
        calls = []
        plan, new = self._plan(session, list(feeds), list(fetches), list(targets), calls)
        step_id = next(self._step_ids)
        results = self._run_partitions(plan, step_id, feeds, timeout_s, trace, calls)
        values = {}
        for task, (vals, _) in results.items():
            values.update(zip(plan.parts[task].fetches, vals))
        plan.runs += 1
        self.steps_run += 1
        meta = {"step_id": step_id, "new_partitioning": new, "master": self.task_device}
        if trace:
            calls.insert(
                0,
                {
                    "service": "master",
                    "method": "RunStep",
                    "task": self.task_device,
                    "start_s": start,
                    "end_s": time.time(),
                    "step_id": step_id,
                },
            )
            meta["service_calls"] = calls
            meta["step_stats"] = [stats for _, stats in results.values() if stats]
            meta["partition_graphs"] = {t: p.graph_def() for t, p in plan.parts.items()}
        if new or trace:
            meta["placement"] = plan.placement
        return [values[f] for f in fetches], meta

    def _plan(self, session, feeds, fetches, targets, calls):
        signature = (len(session.nodes), tuple(feeds), tuple(fetches), tuple(targets))
        with session.lock:
            plan = session.steps.get(signature)
            if plan is not None:
                calls.append(
                    {
                        "service": "master",
                        "method": "PartitionCache",
                        "task": self.task_device,
                        "start_s": time.time(),
                        "end_s": time.time(),
                        "hit": True,
                    }
                )
                return plan, False
            by_name = session.by_name
            for name in [*feeds, *fetches]:
                op = name.rpartition(":")[0]
                if op not in by_name:
                    raise errors.InvalidArgumentError(
                        op, None, f"tensor {name!r} is not in the session's graph"
                    )
            nodes = prune_and_sort(by_name, set(feeds), fetches, targets)
            nodes = _with_ref_sources(nodes, by_name)
            to_place = nodes + [by_name[f.rpartition(":")[0]] for f in feeds]
            filters = session.config.get("device_filters", [])
            placement = placer.place(to_place, by_name, self.cluster, self.job_name, self.task_index, filters)
            parts = partition(nodes, by_name, placement, feeds, fetches, targets)
            handles = {}
            for task, part in parts.items():
                t0 = time.time()
                handles[task] = self._register(task, part)
                calls.append(
                    {
                        "service": "worker",
                        "method": "RegisterGraph",
                        "task": task,
                        "start_s": t0,
                        "end_s": time.time(),
                        "nodes": len(part.nodes),
                    }
                )
            plan = session.steps[signature] = _StepPlan(placement, parts, handles)
            return plan, True

    def _register(self, task, part):
        args = (part.graph_def(), part.feeds, part.fetches, part.targets)
        if task == self.task_device:
            return self.local_worker.register_graph(*args)
        channel = transport.channel_to(self.address_of(task), task, self.key)
        body = dict(zip(("graph_def", "feeds", "fetches", "targets"), args))
        return channel.call("RegisterGraph", body, timeout_s=60.0)["handle"]

    def _run_partitions(self, plan, step_id, feeds, timeout_s, trace, calls):
        """One concurrent `RunGraph` per task; aborts the rest as soon as one fails."""
        # A grace period lets partitions report their own, more precise timeout first
        # (which _Recv keys they still wait for) before the master gives up on them.
        deadline = time.monotonic() + timeout_s + _TIMEOUT_GRACE_S
        pending, results = {}, {}
        for task, part in plan.parts.items():
            if task == self.task_device:
                continue
            channel = transport.channel_to(self.address_of(task), task, self.key)
            body = {
                "handle": plan.handles[task],
                "step_id": step_id,
                "feeds": [feeds[f] for f in part.feeds],
                "timeout_s": timeout_s,
                "trace": bool(trace),
            }
            pending[task] = (channel, channel.send("RunGraph", body), time.time())
        local = None
        if self.task_device in plan.parts:
            part = plan.parts[self.task_device]
            args = (plan.handles[self.task_device], step_id, [feeds[f] for f in part.feeds], timeout_s, trace)
            t0 = time.time()
            if not pending:  # only this task: run inline, no thread hand-off
                results[self.task_device] = self.local_worker.run_graph(*args)
                calls.append(_call(self.task_device, t0, step_id, local=True))
                return results
            local = _LocalRun(self._local_pool, self.local_worker.run_graph, args, t0)
        try:
            _gather(pending, local, results, calls, deadline, step_id, self.task_device)
        except errors.OpError as e:
            self._abort(plan, step_id, e, pending)
            raise _root_cause(e, local) from None
        finally:
            if local is not None:
                local.close()
        return results

    def _abort(self, plan, step_id, error, pending):
        message = f"step {step_id} aborted because another task failed: {type(error).__name__}"
        self.local_worker.abort_step(step_id, message)
        for task in plan.parts:
            if task == self.task_device:
                continue
            try:
                channel = transport.channel_to(self.address_of(task), task, self.key)
                channel.send("AbortStep", {"step_id": step_id, "message": message})
            except Exception:  # noqa: BLE001, S112 - best effort: the task may be the one that is down
                continue
            if task in pending:
                transport.drop_channel(self.address_of(task), self.key)

    def status(self):
        return {"sessions": len(self._sessions), "steps_run": self.steps_run}


class _LocalRun:
    """The local partition running on a pool thread; its end wakes a zmq poller via a pipe."""

    def __init__(self, pool, fn, args, t0):
        self.t0 = t0
        self._read_fd, self._write_fd = os.pipe()
        self.future = pool.submit(fn, *args)
        self.future.add_done_callback(lambda _: os.write(self._write_fd, b"x"))

    @property
    def fd(self):
        return self._read_fd

    def close(self):
        if not self.future.done():
            with contextlib.suppress(Exception):  # already reported through the root cause
                self.future.result(timeout=5)
        os.close(self._read_fd)
        os.close(self._write_fd)


def _gather(pending, local, results, calls, deadline, step_id, local_task):
    """Collects every RunGraph reply (and the local run); raises the first failure."""
    waiting = dict(pending)
    started = time.monotonic()
    while waiting or (local is not None and local_task not in results):
        poller = zmq.Poller()
        for channel, _, _ in waiting.values():
            channel.check_alive(started, transport.CONNECT_TIMEOUT_S)
            poller.register(channel.socket, zmq.POLLIN)
        if local is not None and local_task not in results:
            poller.register(local.fd, zmq.POLLIN)
        now = time.monotonic()
        if now >= deadline:
            raise errors.DeadlineExceededError(
                None,
                None,
                f"step {step_id} timed out after {now - started:.1f} s waiting for RunGraph of "
                f"{sorted(waiting) + ([local_task] if local and local_task not in results else [])}",
            )
        ready = dict(poller.poll(min(100, max(1, int((deadline - now) * 1000)))))
        if local is not None and local.fd in ready:
            os.read(local.fd, 1)
            results[local_task] = local.future.result()
            calls.append(_call(local_task, local.t0, step_id, local=True))
        for task, (channel, request_id, t0) in list(waiting.items()):
            if channel.socket not in ready:
                continue
            msg = wire.decode(channel.socket.recv_multipart(copy=False), channel.key)
            if msg.get("id") != request_id:
                continue
            if msg["type"] == "Error":
                wire.raise_error(msg)
            results[task] = (msg["fetches"], msg.get("stats"))
            calls.append(_call(task, t0, step_id))
            del waiting[task]


def _root_cause(error, local):
    """Prefers a real failure over the CancelledError it caused elsewhere."""
    if isinstance(error, errors.CancelledError) and local is not None:
        try:
            local.future.result(timeout=5)
        except errors.OpError as e:
            if not isinstance(e, errors.CancelledError):
                return e
        except Exception:  # noqa: BLE001, S110
            pass
    return error


def _call(task, t0, step_id, local=False):
    return {
        "service": "worker",
        "method": "RunGraph",
        "task": task,
        "start_s": t0,
        "end_s": time.time(),
        "step_id": step_id,
        "in_process": local,
    }


def _with_ref_sources(nodes, by_name):
    """Adds the variables that writers reference (ref inputs) without running them."""
    present = {n.name for n in nodes}
    extra = []
    for node in nodes:
        d = registry._REGISTRY.get(node.op)
        for pos in d.ref_inputs if d else ():
            src = node.data_inputs[pos].rpartition(":")[0]
            if src not in present:
                present.add(src)
                extra.append(by_name[src])
    return extra + nodes


def _job_task(task_device):
    parts = dict(p.split(":", 1) for p in task_device.strip("/").split("/"))
    return parts["job"], int(parts["task"])
