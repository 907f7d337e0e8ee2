"""The client side of a session with a remote master (``Session("zmq://host:port")``).

When the master is a server of this very process (a tutorial's worker: its own server,
and a session on ``server.target``), requests skip the wire (`in_process.in_process_channel`,
TF's ``LocalMaster``).

The first `run` sends the whole GraphDef (`CreateSession`); later runs send only the
nodes added since (`ExtendSession`), then one `RunStep` per call.

Fetched tensors come peer to peer: the client also connects to every task of the
cluster (with a routing id of its own), and a worker whose partition produced a fetch
sends it straight here (`FetchedTensors`) instead of through the master; the master's
`RunStep` reply says which fetches to expect from which task. When a worker cannot
reach the client, it hands the tensors to the master, which relays them as before.

A step whose only partition runs on another task is answered by that task: while this
thread waits for the master it also reads its links to the workers (`_Completion`), and the
worker sends the fetches there with the master's reply meta (``RunStep`` ``completes``).
A closed session releases the connections no other open session of its thread uses.
"""

import contextlib
import itertools
import os
import threading
import time

import zmq

from nbdist import errors
from nbdist.graph.device import Task
from nbdist.graph.graph_def import graph_to_graph_def
from nbdist.runtime import threads
from nbdist.runtime.cluster import ClusterSpec
from nbdist.runtime.config import DeviceStepStats
from nbdist.runtime.net import in_process, links, transport, wire

_SCHEMES = ("zmq://", "grpc://", "tcp://")
# The workers send fetched tensors before they answer the master, so they are here by the
# time the master's reply is; this only bounds a pathological wait.
_DELIVERY_TIMEOUT_S = 30.0
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


class _FetchInbox:
    """This thread's connections to the workers, which deliver fetched tensors here: over a
    link to a worker of this host once it has read this inbox's ``Hello``, else to the DEALER."""

    def __init__(self):
        self.identity = b"nbdist-client-" + os.urandom(8).hex().encode()
        self.channels = {}  # address -> Channel
        self.run_ids = itertools.count(1)
        self._arrived = {}  # address -> FetchedTensors of the run being waited for, read early
        self._users = {}  # id of an open session's backend -> the addresses it connected to

    def connect(self, addresses, key, user):
        addresses = list(addresses)
        self._users[id(user)] = addresses
        if any(a not in self.channels for a in addresses):
            transport.evict_gone(self.channels, keep=addresses)
        for address in addresses:
            if address not in self.channels:
                self.channels[address] = transport.Channel(address, address, key, identity=self.identity)

    def release(self, user):
        """`user`'s session closed: closes the connections no other open session of this thread
        uses (a link to a worker holds a socket until closed, even after the worker is gone)."""
        if self._users.pop(id(user), None) is None:
            return
        needed = {a for addresses in self._users.values() for a in addresses}
        for address in [a for a in self.channels if a not in needed]:
            self.channels.pop(address).close()
            self._arrived.pop(address, None)

    def on_links(self, addresses):
        """True when the channel to every one of `addresses` is on its link."""
        channels = self.channels
        return all(a in channels and channels[a].on_link for a in addresses)

    def read(self, address, run_id, dealer=True):
        """Keeps what the worker at `address` delivered for `run_id` on its link (and on the
        DEALER, unless not `dealer`): drops late deliveries of runs that gave up, and whatever
        does not decode (not from this cluster)."""
        channel = self.channels[address]
        messages = []
        while dealer and channel.socket.poll(0):
            messages.append(channel.socket.recv_multipart(copy=False))
        if channel.on_link:
            with contextlib.suppress(links.LinkClosedError, links.LinkError):  # (the worker falls back)
                messages += channel.link.take_all()
        for frames in messages:
            try:
                msg = wire.decode(frames, channel.key, peer=f"the worker at {address}")
            except wire.WireError:
                continue
            if msg.get("type") == "FetchedTensors" and msg.get("run_id") == run_id:
                self._arrived[address] = msg

    def completion(self, run_id, addresses):
        """What `Channel.call` reads beside the master's link while a step runs (``also``):
        the links to `addresses`; a worker's ``FetchedTensors`` that completes the step answers it."""
        self._arrived.clear()
        return _Completion(self, run_id, {self.channels[a].link: a for a in addresses})

    def collect(self, run_id, direct, values, address_of, timeout_s):
        """Fills ``values`` at the positions each task in `direct` delivers for `run_id`."""
        waiting = {address_of[task]: (task, positions) for task, positions in direct.items()}
        deadline = time.monotonic() + timeout_s
        while True:
            for address in [a for a in waiting if a in self._arrived]:
                _, positions = waiting.pop(address)
                for position, value in zip(positions, self._arrived.pop(address)["fetches"], strict=True):
                    values[position] = value
            if not waiting:
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise errors.DeadlineExceededError(
                    None,
                    None,
                    f"the fetched tensors of {sorted(t for t, _ in waiting.values())} did not arrive "
                    f"within {timeout_s:.0f} s after the step finished",
                )
            poller = zmq.Poller()
            for address in waiting:
                channel = self.channels[address]
                poller.register(channel.socket, zmq.POLLIN)
                if channel.on_link:
                    poller.register(channel.link.fileno(), zmq.POLLIN)
            poller.poll(min(100, int(remaining * 1000) + 1))
            for address in waiting:
                self.read(address, run_id)


class _Completion:
    """The `Channel.call` ``also`` of one step: a worker that ran the step's only partition
    sends its fetches here with the master's reply meta (``complete``), instead of the master."""

    def __init__(self, inbox, run_id, address_of_link):
        self._inbox = inbox
        self._run_id = run_id
        self._address_of_link = address_of_link

    @property
    def links(self):
        return list(self._address_of_link)

    def answer(self, link):
        address = self._address_of_link[link]
        self._inbox.read(address, self._run_id, dealer=False)  # (a completing run comes on the link)
        msg = self._inbox._arrived.get(address)
        if msg is None or not isinstance(msg.get("complete"), dict):
            return None  # (a large fetch delivered early: `collect` takes it)
        del self._inbox._arrived[address]
        return msg


_inboxes = threading.local()


def _inbox():
    inbox = getattr(_inboxes, "inbox", None)
    if inbox is None:
        inbox = _inboxes.inbox = _FetchInbox()
    return inbox


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
            reply = self._channel().call(
                "CreateSession",
                {"graph_def": graph_to_graph_def(self._graph), "config": config},
                timeout_s=60,
            )
            self._handle, self._version = reply["handle"], version
            cluster = ClusterSpec(reply.get("cluster") or {})
            self._workers = {
                Task(job, i).device: address
                for job, i, address in cluster.iter_tasks()
                if address != self.address
            }
            own = [Task(job, i).name for job, i, address in cluster.iter_tasks() if address == self.address]
            if own:
                self._master_name = f"the master {own[0]}"
        elif version > self._version:
            self._channel().call(
                "ExtendSession",
                {
                    "handle": self._handle,
                    "graph_def": graph_to_graph_def(self._graph, self._version),
                    "version": self._version,
                },
                timeout_s=60,
            )
            self._version = version

    def run_step(self, feeds, fetch_names, target_names, options, run_metadata):
        with self._lock:
            self._sync_graph()
            handle = self._handle
        tracing = bool(run_metadata is not None and options is not None and options.trace_level)
        timeout_s = self._timeout_s(options)
        inbox = _inbox()
        workers = self._workers.values()
        inbox.connect(workers, self._key, self)
        run_id = next(inbox.run_ids)
        body = {
            "handle": handle,
            "feeds": feeds,
            "fetches": fetch_names,
            "targets": target_names,
            "timeout_s": timeout_s,
            "trace": tracing,
            "deliver_to": inbox.identity,
            "run_id": run_id,
        }
        channel = self._channel()
        also = None
        if not tracing and getattr(channel, "on_link", False) and inbox.on_links(workers):
            # This thread reads the workers' links while it waits for the master, so a step
            # run by one other task alone may be completed by that task (one message less).
            body["completes"] = True
            also = inbox.completion(run_id, workers)
        wait_s = None if timeout_s is None else timeout_s + 5.0  # the master reports the timeout itself
        try:
            reply = channel.call("RunStep", body, timeout_s=wait_s, also=also)
        except errors.UnavailableError:
            transport.drop_channel(self.address, self._key)
            raise
        if reply["type"] == "FetchedTensors":  # completed by the worker: the master's meta with it
            complete = reply["complete"]
            fetched = reply["fetches"]
            reply = {"fetches": [fetched[i] for i in complete["order"]], "meta": complete["meta"]}
        meta = reply.get("meta", {})
        if self._config.log_device_placement and meta.get("new_partitioning"):
            for name, device in sorted(meta.get("placement", {}).items()):
                print(f"{name}: ({device})")
        if tracing:
            _fill_metadata(run_metadata, meta)
        values = reply["fetches"]
        if meta.get("direct"):
            inbox.collect(run_id, meta["direct"], values, self._workers, _DELIVERY_TIMEOUT_S)
        return values

    def close(self):
        _inbox().release(self)
        if self._handle is None:
            return
        handle, self._handle = self._handle, None
        with contextlib.suppress(errors.OpError):  # the master may be gone: nothing to release
            self._channel().call("CloseSession", {"handle": handle}, timeout_s=2.0, connect_timeout_s=1.0)


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
    body = {"containers": list(containers or []), "timeout_s": timeout_s}
    try:
        channel.call("Reset", body, timeout_s=timeout_s, connect_timeout_s=timeout_s)
    except errors.UnavailableError as e:
        transport.drop_channel(address, wire.default_key())
        if timeout_ms:  # TF reports the session's operation timeout as a deadline
            raise errors.DeadlineExceededError(
                None, None, f"tf.Session.reset({target!r}): {e.message}"
            ) from None
        raise
