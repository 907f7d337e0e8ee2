"""`tf.train.Server`: one task of a cluster, serving the master and worker services.

A server binds one ZeroMQ ROUTER socket at its cluster address and answers requests
on background threads. The master service handles clients' sessions (`CreateSession`,
`ExtendSession`, `RunStep`, `CloseSession`); the worker service runs partitions
(`RegisterGraph`, `RunGraph`, `AbortStep`, `SendTensor`). ``Status`` and ``Ping``
report on the task (for `%dtf_cluster` and its widget).
"""

import os
import socket
import threading

from nbdist.graph.device import Task
from nbdist.runtime import wire
from nbdist.runtime.cluster import ClusterSpec
from nbdist.runtime.master import MasterService
from nbdist.runtime.serving import DEFERRED, ServingLoop
from nbdist.runtime.worker import WorkerService

# Fetched tensors at least this large go straight to the client; smaller ones ride on the
# RunGraph reply through the master (one message less per step).
DIRECT_FETCH_MIN_BYTES = 64 * 1024


def _rss_bytes():
    try:
        with open(f"/proc/{os.getpid()}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _normalize_server_def(server_or_cluster_def, job_name, task_index, protocol):
    """(ClusterSpec, job_name, task_index, protocol) from any accepted form."""
    if isinstance(server_or_cluster_def, dict) and "cluster" in server_or_cluster_def:
        d = server_or_cluster_def
        cluster = ClusterSpec(d["cluster"])
        job_name = job_name if job_name is not None else d.get("job_name")
        task_index = task_index if task_index is not None else d.get("task_index")
        protocol = protocol or d.get("protocol")
    else:
        cluster = ClusterSpec(server_or_cluster_def)
    if job_name is None:
        if len(cluster.jobs) != 1:
            raise ValueError(
                f"job_name must be given: the cluster has jobs {cluster.jobs} "
                "(e.g. tf.train.Server(cluster, job_name='worker', task_index=0))"
            )
        job_name = cluster.jobs[0]
    if job_name not in cluster.jobs:
        raise ValueError(f"job_name {job_name!r} is not a job of the cluster; its jobs are {cluster.jobs}")
    if task_index is None:
        indices = cluster.task_indices(job_name)
        if len(indices) != 1:
            raise ValueError(f"task_index must be given: job {job_name!r} has tasks {indices}")
        task_index = indices[0]
    task_index = int(task_index)
    cluster.task_address(job_name, task_index)  # raises for an unknown index
    if protocol not in (None, "grpc", "zmq", "grpc+verbs"):
        raise ValueError(f"protocol {protocol!r} is not supported; nbdist speaks 'zmq' (accepts 'grpc')")
    return cluster, job_name, task_index, protocol or "zmq"


class Server:
    """An in-process server for one task of a cluster (TF's `tf.train.Server`).

    Args:
        server_or_cluster_def: a `ClusterSpec`, a cluster dict, or a ServerDef-like dict
            ``{"cluster": ..., "job_name": ..., "task_index": ...}``.
        job_name: this task's job (may be omitted when the cluster has one job).
        task_index: this task's index (may be omitted when the job has one task).
        protocol: ``"zmq"`` (``"grpc"`` is accepted and means the same).
        config: a `tf.ConfigProto` (defaults for sessions of this master).
        start: start serving now.
        cluster_key: bytes to sign and check every message with (default:
            ``$NBDIST_CLUSTER_KEY``; None means unsigned).

    Raises:
        ValueError: a job/task not in the cluster.
        OSError: the address is already in use (naming it).

    Example::

        server = tf.train.Server.create_local_server()
        with tf.Session(server.target) as sess:
            print(sess.run(tf.constant("Hello, distributed TensorFlow!")))
        server.stop()
    """

    def __init__(
        self,
        server_or_cluster_def,
        job_name=None,
        task_index=None,
        protocol=None,
        config=None,
        start=True,
        cluster_key=None,
    ):
        cluster, job_name, task_index, protocol = _normalize_server_def(
            server_or_cluster_def, job_name, task_index, protocol
        )
        self._cluster = cluster
        self._job_name = job_name
        self._task_index = task_index
        self._protocol = protocol
        self._config = config
        self._key = cluster_key if cluster_key is not None else wire.default_key()
        self.address = cluster.task_address(job_name, task_index)
        self.task_device = Task(job_name, task_index).device
        self.worker = WorkerService(self.task_device, self._address_of, self._key)
        self.master = MasterService(cluster, job_name, task_index, self.worker, self._key)
        self._loop = None
        self._stopped = threading.Event()
        if start:
            self.start()

    def _address_of(self, task_device):
        return self._cluster.task_address(*Task.parse(task_device))

    @staticmethod
    def create_local_server(config=None, start=True):
        """A single-task cluster ``{"local": ["localhost:<free port>"]}`` in this process."""
        port = _free_port()
        return Server({"local": [f"localhost:{port}"]}, "local", 0, config=config, start=start)

    # -- TF's API ------------------------------------------------------------------------------
    @property
    def target(self):
        """The session target of this server's master: ``"zmq://host:port"``."""
        return f"zmq://{self.address}"

    @property
    def signed(self):
        """True when this server signs its messages and refuses unsigned ones."""
        return self._key is not None

    @property
    def server_def(self):
        return {
            "cluster": self._cluster.as_dict(),
            "job_name": self._job_name,
            "task_index": self._task_index,
            "protocol": self._protocol,
        }

    @property
    def cluster_spec(self):
        return self._cluster

    def start(self):
        """Binds the socket and starts serving (no-op when already started)."""
        if self._loop is not None:
            return
        self._loop = ServingLoop(
            self.address, self._handle, self._key, inline=self._runs_inline, task=self.task_device
        )
        self.master.loop = self._loop
        self._loop.at_exit(self.master.close_io_channels)
        self._stopped.clear()

    def _runs_inline(self, msg):
        kind = msg["type"]
        if kind in _INLINE:
            return True
        return kind == "RunGraph" and self.worker.runs_quickly(msg.get("handle"))

    def join(self, timeout_s=None):
        """Blocks until the server is stopped (as TF's `join`, which never returns on its own)."""
        self._stopped.wait(timeout_s)

    def stop(self):
        """Stops serving and frees the port before returning (idempotent)."""
        if self._loop is not None:
            self._loop.stop()
            self._loop = None
        self._stopped.set()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def __repr__(self):
        state = "serving" if self._loop is not None else "stopped"
        return f"<nbdist.Server {self.task_device} at {self.address} ({state})>"

    # -- request dispatch -------------------------------------------------------------------------
    def _handle(self, msg, responder):
        if msg["type"] in _DEFERRED_HANDLERS:
            handler = _DEFERRED_HANDLERS[msg["type"]]
            try:
                return handler(self, msg, responder)
            except KeyError as e:
                raise wire.WireError(f"{msg['type']} request is missing field {e}") from None
        handler = _HANDLERS.get(msg["type"])
        if handler is None:
            raise wire.WireError(
                f"unknown request type {msg['type']!r}; this server handles "
                f"{sorted([*_HANDLERS, *_DEFERRED_HANDLERS])}",
                request_id=msg.get("id", 0),
            )
        try:
            return handler(self, msg)
        except KeyError as e:
            raise wire.WireError(f"{msg['type']} request is missing field {e}") from None

    def status(self):
        return {
            **self.worker.status(),
            **self.master.status(),
            "address": self.address,
            "rss_bytes": _rss_bytes(),
            "requests_served": self._loop.requests_served if self._loop else 0,
            "malformed_requests": self._loop.malformed if self._loop else 0,
        }


def _create_session(server, msg):
    handle = server.master.create_session(msg["graph_def"], msg.get("config"))
    # The cluster lets the client connect to every worker, which then sends fetched
    # tensors to it directly.
    return "CreateSessionResponse", {"handle": handle, "cluster": server.cluster_spec.as_dict()}


def _extend_session(server, msg):
    server.master.extend_session(msg["handle"], msg["graph_def"], msg["version"])
    return "ExtendSessionResponse", {}


def _close_session(server, msg):
    server.master.close_session(msg["handle"])
    return "CloseSessionResponse", {}


def _register_graph(server, msg):
    handle = server.worker.register_graph(msg["graph_def"], msg["feeds"], msg["fetches"], msg["targets"])
    return "RegisterGraphResponse", {"handle": handle}


def _run_graph(server, msg, responder):
    values, stats = server.worker.run_graph(
        msg["handle"], msg["step_id"], msg.get("feeds", []), msg.get("timeout_s"), msg.get("trace", False)
    )
    client = msg.get("deliver_to")
    nbytes = sum(getattr(v, "nbytes", 0) for v in values)
    if not client or nbytes < DIRECT_FETCH_MIN_BYTES:  # small: riding on the reply costs less
        return "RunGraphResponse", {"fetches": values, "stats": stats}
    # Fetched tensors go straight to the client that asked for them (peer to peer, not
    # relayed through the master); the master only learns that they were delivered.
    loop = server._loop
    frames = loop.encode(
        "FetchedTensors", {"run_id": msg["run_id"], "task": server.task_device, "fetches": values}
    )

    def deliver():
        delivered = loop.send_to(client, frames)
        body = {"fetches": None if delivered else values, "stats": stats, "delivered": delivered}
        responder.reply("RunGraphResponse", body)

    if loop.on_io_thread:
        deliver()
    else:
        loop.post(deliver)
    return DEFERRED


def _deregister_graph(server, msg):
    server.worker.deregister_graph(msg["handle"])
    return "DeregisterGraphResponse", {}


def _abort_step(server, msg):
    server.worker.abort_step(msg["step_id"], msg.get("message", "aborted"))
    return None, None


def _send_tensor(server, msg):
    server.worker.rendezvous.put(msg["step_id"], msg["key"], msg["tensor"])
    return None, None  # one-way: one message per cross-task tensor


def _reset(server, msg):
    server.worker.reset(msg.get("containers"))
    return "ResetResponse", {}


# Never block: handled on the I/O thread (RunStep only starts a step; planning goes to the pool).
_INLINE = {"SendTensor", "Ping", "Status", "AbortStep", "RunStep"}
# Handlers that answer later through the request's Responder.
_DEFERRED_HANDLERS = {
    "RunStep": lambda server, msg, responder: server.master.run_step(msg, responder),
    "RunGraph": _run_graph,
}
_HANDLERS = {
    "CreateSession": _create_session,
    "ExtendSession": _extend_session,
    "CloseSession": _close_session,
    "RegisterGraph": _register_graph,
    "DeregisterGraph": _deregister_graph,
    "AbortStep": _abort_step,
    "SendTensor": _send_tensor,
    "Reset": _reset,
    "Ping": lambda server, msg: ("Pong", {"task": server.task_device, "pid": os.getpid()}),
    "Status": lambda server, msg: ("StatusResponse", server.status()),
}


def register_handler(msg_type, handler):
    """Adds a request type to every server of this process.

    `handler(server, msg) -> (reply_type, reply_body)`; ``(None, None)`` sends no reply.
    Handlers run on the server's thread pool, so they may block. Used by services built
    on top of the runtime (e.g. the notebook's per-task code execution).
    """
    if msg_type in _HANDLERS or msg_type in _DEFERRED_HANDLERS:
        raise ValueError(f"a handler for {msg_type!r} is already registered")
    _HANDLERS[msg_type] = handler


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
