"""The client side of a session with a remote master (``Session("zmq://host:port")``).

When the master is a server of this very process (a tutorial's worker: its own server,
and a session on ``server.target``), requests skip the wire (`in_process.in_process_channel`,
TF's ``LocalMaster``).

The first `run` sends the whole GraphDef (`CreateSession`); later runs send only the
nodes added since (`ExtendSession`), then one `RunStep` per call.

The client also connects to every task of the cluster, so that large fetches can come
straight from the task that produced them and a step run by one other task alone can be
answered by that task: `nbdist.runtime.fetch_delivery` has every path fetched tensors take.
A closed session releases the connections no other open session of its thread uses.
"""

import contextlib
import threading

from nbdist import errors
from nbdist.graph.device import DeviceSpec, Task
from nbdist.graph.graph_def import graph_to_graph_def
from nbdist.runtime import fetch_delivery, threads
from nbdist.runtime.cluster import ClusterSpec
from nbdist.runtime.config import DeviceStepStats
from nbdist.runtime.device_attributes import cpu_of, incarnation_of
from nbdist.runtime.net import in_process, transport, wire
from nbdist.runtime.protocol import (
    CloseSessionRequest,
    CreateSessionRequest,
    CreateSessionResponse,
    ExtendSessionRequest,
    Ping,
    Pong,
    ResetRequest,
    RunStepRequest,
)

_SCHEMES = ("zmq://", "grpc://", "tcp://")
# Session.reset reaches every task of the cluster; without a configured operation timeout
# each call is bounded by this.
_RESET_TIMEOUT_S = 30.0


def parse_target(target):
    """``host:port`` of a session target (``zmq://``, ``grpc://`` or bare ``host:port``).

    Raises:
        ValueError: for a target that names no port.
    """
    address = target
    for scheme in _SCHEMES:
        if target.startswith(scheme):
            address = target[len(scheme) :]
            break
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(
            f"session target {target!r} is not 'zmq://host:port' (also accepted: 'grpc://host:port', "
            "'host:port'); use server.target"
        )
    return address


class RemoteBackend:
    """Runs steps through the master at `target`; see `Session`."""

    def __init__(self, target, graph, config):
        self.address = parse_target(target)
        self._graph = graph
        self._config = config
        self._key = wire.default_key()
        self._handle = None
        self._version = 0
        self._lock = threading.Lock()
        self._workers = {}  # task device -> address, of every task but the master's
        self._cluster = ClusterSpec({})  # the master's cluster, as CreateSession told it
        self._master_name = "the master"  # named by its task once the master told the cluster
        # A server of this process at the target runs this session's kernels: its
        # intra_op_parallelism_threads applies to that task (another process's: ignored, as in TF).
        threads.session_on_target(config, self.address)

    def _channel(self):
        local = in_process.in_process_channel(self.address, self._key, self._master_name)
        if local is not None:  # the master is this process's own server (TF's LocalMaster)
            return local
        channel = transport.channel_to(self.address, self._master_name, self._key)
        channel.name = self._master_name  # a lost master is reported by its task, not only its address
        return channel

    def _timeout_s(self, options):
        ms = (
            options.timeout_in_ms if options is not None and options.timeout_in_ms else 0
        ) or self._config.operation_timeout_in_ms
        return ms / 1000 if ms else None

    def _sync_graph(self):
        version = self._graph.version
        if self._handle is None:
            config = {"device_filters": self._config.device_filters}
            request = CreateSessionRequest(graph_to_graph_def(self._graph), config)
            # A master never reached is waited for until the session's own deadline, if it has one
            # (tasks start in any order), else `transport.CONNECT_TIMEOUT_S`.
            bound_s = self._config.operation_timeout_in_ms / 1000 or None
            reply = self._call(request, timeout_s=max(60, bound_s or 0), connect_timeout_s=bound_s)
            reply = CreateSessionResponse.from_msg(reply)
            self._handle, self._version = reply.handle, version
            cluster = self._cluster = ClusterSpec(reply.cluster or {})
            self._workers = {
                Task(job, i).device: address
                for job, i, address in cluster.iter_tasks()
                if address != self.address
            }
            own = [Task(job, i).name for job, i, address in cluster.iter_tasks() if address == self.address]
            if own:
                self._master_name = f"the master {own[0]}"
        elif version > self._version:
            graph_def = graph_to_graph_def(self._graph, self._version)
            self._call(ExtendSessionRequest(self._handle, graph_def, self._version), timeout_s=60)
            self._version = version

    def _call(self, request, **kwargs):
        return self._channel().call(request.TYPE, request.body(), **kwargs)

    def run_step(self, feeds, fetch_names, target_names, options, run_metadata):
        with self._lock:
            self._sync_graph()
            handle = self._handle
        tracing = bool(run_metadata is not None and options is not None and options.trace_level)
        timeout_s = self._timeout_s(options)
        request = RunStepRequest(handle, fetch_names, target_names, feeds, timeout_s, tracing)
        inbox = fetch_delivery.client_inbox()
        workers = self._workers.values()
        inbox.connect(workers, self._key, self)
        channel = self._channel()
        also = inbox.address_step(request, channel, workers)
        wait_s = None if timeout_s is None else timeout_s + 5.0  # the master reports the timeout itself
        try:
            reply = channel.call(request.TYPE, request.body(), timeout_s=wait_s, also=also)
        except errors.UnavailableError:
            transport.drop_channel(self.address, self._key)
            raise
        values, meta = inbox.step_reply(reply, request, self._workers)
        if self._config.log_device_placement and meta.get("new_partitioning"):
            for name, device in sorted(meta.get("placement", {}).items()):
                print(f"{name}: ({device})")
        if tracing:
            _fill_metadata(run_metadata, meta)
        return values

    def list_devices(self):
        """The CPU of every task of the master's cluster that the session's device_filters
        keep (the master's always, listed first), as TF's; each task's incarnation is the one
        its ``Ping`` reports."""
        with self._lock:
            self._sync_graph()
        filters = [DeviceSpec.from_string(f) for f in self._config.device_filters]

        def kept(job, index, address):
            return (
                address == self.address
                or not filters
                or any(
                    (f.job is None or f.job == job) and (f.task is None or f.task == index) for f in filters
                )
            )

        tasks = sorted(
            (t for t in self._cluster.iter_tasks() if kept(*t)),
            key=lambda t: (t[2] != self.address, t[0], t[1]),
        )
        devices = []
        for job, index, address in tasks:
            task = Task(job, index)
            channel = (
                self._channel()
                if address == self.address
                else transport.channel_to(address, task.name, self._key)
            )
            pong = Pong.from_msg(
                channel.call(Ping.TYPE, Ping().body(), timeout_s=self._timeout_s(None) or 60)
            )
            devices.append(cpu_of(task.device, incarnation_of(pong.incarnation)))
        return devices

    def close(self):
        fetch_delivery.client_inbox().release(self)
        if self._handle is None:
            return
        handle, self._handle = self._handle, None
        with contextlib.suppress(errors.OpError):  # the master may be gone: nothing to release
            self._call(CloseSessionRequest(handle), timeout_s=2.0, connect_timeout_s=1.0)


def _fill_metadata(run_metadata, meta):
    for stats in meta.get("step_stats", []):
        dev = DeviceStepStats(stats["device"])
        dev.node_stats = [
            {"node_name": n, "op": op, "start_s": s, "end_s": e} for n, op, s, e in stats["ops"]
        ]
        dev.transfers = stats.get("transfers", [])
        dev.resource_events = stats.get("resources", [])
        dev.pid = stats.get("pid")
        run_metadata.step_stats.dev_stats.append(dev)
    run_metadata.partition_graphs = [
        {"device": task, **graph_def} for task, graph_def in sorted(meta.get("partition_graphs", {}).items())
    ]
    run_metadata.service_calls = meta.get("service_calls", [])
    run_metadata.placement = meta.get("placement", {})
    run_metadata.master = meta.get("master")


def reset(target, containers=None, config=None):
    """`Session.reset`: the master at `target` closes its sessions and clears `containers`
    (every container when empty) on every task of its cluster.

    Raises:
        NotFoundError: `target` is not a session target (TF: no session factory for it).
        DeadlineExceededError: no reply within ``config.operation_timeout_in_ms``.
        UnavailableError: the master (or a task of its cluster) cannot be reached.
    """
    try:
        address = parse_target(target)
    except ValueError as e:
        raise errors.NotFoundError(
            None, None, f"No session factory registered for the given session options: {e}"
        ) from None
    timeout_ms = config.operation_timeout_in_ms if config is not None else 0
    timeout_s = timeout_ms / 1000 if timeout_ms else _RESET_TIMEOUT_S
    channel = transport.channel_to(address, f"master at {address}", wire.default_key())
    request = ResetRequest(list(containers or []), timeout_s)
    try:
        channel.call(request.TYPE, request.body(), timeout_s=timeout_s, connect_timeout_s=timeout_s)
    except errors.UnavailableError as e:
        transport.drop_channel(address, wire.default_key())
        if timeout_ms:  # TF reports the session's operation timeout as a deadline
            raise errors.DeadlineExceededError(
                None, None, f"tf.Session.reset({target!r}): {e.message}"
            ) from None
        raise
