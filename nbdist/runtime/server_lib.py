"""`tf.train.Server`: one task of a cluster, serving the master and worker services.

A server binds one ZeroMQ ROUTER socket at its cluster address and answers requests
on background threads. It only composes services onto its serving loop: each service
declares its own RPC table (`rpc_table() -> {request type: serving.Rpc}`). The master
service handles clients' sessions (`CreateSession`, `ExtendSession`, `RunStep`,
`CloseSession`); the worker service runs partitions (`RegisterGraph`,
`DeregisterGraph`, `RunGraph`, `AbortStep`, `SendTensor`, `Reset`); the server itself
answers ``Status`` and ``Ping`` (for `%dtf_cluster` and its widget). More services
(the per-task exec service) join with `Server.add_service`.
"""

import contextlib
import logging
import os
import signal
import threading
import weakref

from nbdist import errors
from nbdist.graph.device import Task
from nbdist.runtime import allocator, threads
from nbdist.runtime.cluster import ClusterSpec
from nbdist.runtime.config import ConfigProto
from nbdist.runtime.master import MasterService
from nbdist.runtime.net import samehost, shm, wire
from nbdist.runtime.net.serving import Rpc, ServingLoop
from nbdist.runtime.protocol import Pong
from nbdist.runtime.worker import WorkerService

# tf.logging's logger (`nbdist.platform.tf_logging`), without its functions: their first call
# sets the level to WARN, hiding the INFO lines of a program that configured logging itself.
_log = logging.getLogger("nbdist")


def keyless_warning(task_device, bind_address):
    """What a server without a cluster key says when it starts (as tf.logging's warning; on
    stderr for ``nbdist server``): who can use it, and how to give it a key."""
    try:
        import pwd  # noqa: PLC0415 - POSIX only

        user = f"user {pwd.getpwuid(os.geteuid()).pw_name!r}"
    except (ImportError, KeyError, AttributeError):
        user = "this user"
    return (
        f"{task_device} serves {bind_address} without a cluster key: anyone who can reach that port "
        f"(any local user too) can run ops on it and read and write files as {user}. Sign every "
        "message with a key: `nbdist keys new DIR`, then NBDIST_CLUSTER_KEY_FILE=DIR/cluster.key "
        "(`nbdist server --key-file`) or NBDIST_CLUSTER_KEY=HEX in every process of the cluster "
        "(docs/multihost.md)"
    )


def _rss_bytes():
    try:
        with open(f"/proc/{os.getpid()}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class ServerDef:
    """TF's `tf.train.ServerDef`: what one server is, as plain fields.

    Args:
        cluster: the cluster (a `ClusterDef` as `ClusterSpec.as_cluster_def` gives, its dict, a
            cluster dict or a `ClusterSpec`).
        job_name, task_index: this server's task (``""`` / 0 when unset, as in the proto).
        protocol: ``"grpc"`` or ``"zmq"``.
        default_session_config: a `tf.ConfigProto` for the sessions of this server's master.
    """

    def __init__(self, cluster=None, job_name="", task_index=0, protocol="", default_session_config=None):
        self.cluster = cluster
        self.job_name = job_name
        self.task_index = task_index
        self.protocol = protocol
        self.default_session_config = default_session_config or ConfigProto()

    def __eq__(self, other):
        return isinstance(other, ServerDef) and (
            ClusterSpec(self.cluster or {}),
            self.job_name,
            self.task_index,
            self.protocol,
        ) == (ClusterSpec(other.cluster or {}), other.job_name, other.task_index, other.protocol)

    __hash__ = None

    def __repr__(self):
        return (
            f"ServerDef(cluster={self.cluster!r}, job_name={self.job_name!r}, "
            f"task_index={self.task_index}, protocol={self.protocol!r})"
        )


class ServerDefError(errors.InvalidArgumentError, ValueError):
    """A server's cluster or task is invalid (e.g. its address has no port): TF's
    `InvalidArgumentError`, also a `ValueError`."""

    def __init__(self, message):
        super().__init__(None, None, message)


def _normalize_server_def(server_or_cluster_def, job_name, task_index, protocol):
    """(ClusterSpec, job_name, task_index, protocol) from any accepted form.

    Raises:
        ServerDefError: an invalid cluster (a malformed address), job or task.
    """
    try:
        return _server_fields(server_or_cluster_def, job_name, task_index, protocol)
    except ValueError as e:
        raise ServerDefError(f"cannot create a server: {e}") from None


def _server_fields(server_or_cluster_def, job_name, task_index, protocol):
    d = server_or_cluster_def
    if isinstance(d, ServerDef):
        d = {
            "cluster": d.cluster,
            "job_name": d.job_name or None,
            "task_index": d.task_index,
            "protocol": d.protocol,
        }
    if isinstance(d, dict) and "cluster" in d:
        cluster = ClusterSpec(d["cluster"])
        job_name = job_name if job_name is not None else d.get("job_name")
        task_index = task_index if task_index is not None else d.get("task_index")
        protocol = protocol or d.get("protocol") or None
    else:
        cluster = ClusterSpec(d)
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
            ``$NBDIST_CLUSTER_KEY``, else the file ``$NBDIST_CLUSTER_KEY_FILE`` names; None
            means unsigned).
        bind_host: an nbdist extension: the interface to bind instead of the host of this
            task's cluster entry, on the same port (``0.0.0.0`` for every interface, or a
            pod's own IP). By default a server binds exactly its cluster address's host.

    With ``$NBDIST_CURVE_KEY_FILE`` set the server encrypts with CURVE and admits only
    clients holding the cluster's keypair (`nbdist.runtime.net.security`).

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
        bind_host=None,
    ):
        cluster, job_name, task_index, protocol = _normalize_server_def(
            server_or_cluster_def, job_name, task_index, protocol
        )
        self._cluster = cluster
        self._addresses = {}  # task device -> its address in the cluster (`_address_of`)
        self._job_name = job_name
        self._task_index = task_index
        self._protocol = protocol
        self._config = config
        self._key = cluster_key if cluster_key is not None else wire.default_key()
        self._bind_host = bind_host
        self.address = cluster.task_address(job_name, task_index)
        self.task_device = Task(job_name, task_index).device
        self.worker = WorkerService(self.task_device, self._address_of, self._key)
        self.master = MasterService(cluster, job_name, task_index, self.worker, self._key)
        self._rpcs = {}
        for service in (self.master, self.worker, self):
            self.add_service(service)
        self._loop = None
        self._stopped = threading.Event()
        if start:
            self.start()

    def _address_of(self, task_device):
        address = self._addresses.get(task_device)
        if address is None:  # (parsed once: every tensor sent to another task asks)
            address = self._addresses[task_device] = self._cluster.task_address(*Task.parse(task_device))
        return address

    @staticmethod
    def create_local_server(config=None, start=True):
        """A one-task cluster ``{"localhost": ["localhost:<free port>"]}`` in this process (TF's job)."""
        (port,) = samehost.free_ports(1)
        return Server({"localhost": [f"localhost:{port}"]}, "localhost", 0, config=config, start=start)

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
    def encrypted(self):
        """True when this server speaks CURVE (``$NBDIST_CURVE_KEY_FILE``)."""
        return self._loop is not None and self._loop.encrypted

    @property
    def bind_address(self):
        """The ``host:port`` the socket is bound to (`address` unless `bind_host` was given)."""
        return self._loop.bind_address if self._loop is not None else self.address

    @property
    def server_def(self):
        """This server's `ServerDef` (``cluster`` a `tf.train.ClusterDef`)."""
        return ServerDef(
            self._cluster.as_cluster_def(),
            self._job_name,
            self._task_index,
            self._protocol,
            self._config,
        )

    @property
    def cluster_spec(self):
        return self._cluster

    @property
    def threads(self):
        """An nbdist extension: the `ThreadChoice` this task's kernels run with while it serves
        (BLAS threads, this task's share, what decided it), else None."""
        return threads.choice_of(self.address) if self._loop is not None else None

    def start(self):
        """Binds the socket and starts serving (no-op when already started)."""
        if self._loop is not None:
            return
        self._loop = ServingLoop(
            self.address,
            self._handle,
            self._key,
            inline=self._runs_inline,
            task=self.task_device,
            bind_host=self._bind_host,
            names=(Task.parse(self.task_device).name,),  # "/job:ps/task:0" addresses it too
        )
        self.master.loop = self.worker.loop = self._loop
        self._stopped.clear()
        _LIVE_SERVERS.add(self)
        # This process now runs this task's kernels: its share of the cores (`runtime.threads`).
        threads.claim_for_server(self.address, self.task_device, self._cluster, self._config)
        if self._key is None:
            _log.warning("%s", keyless_warning(self.task_device, self._loop.bind_address))

    def add_service(self, service):
        """Serves `service`'s requests (its ``rpc_table()``) on this server.

        Raises:
            ValueError: a request type another service already handles.
        """
        table = service.rpc_table()
        taken = sorted(set(table) & set(self._rpcs))
        if taken:
            raise ValueError(f"{taken} already handled by this server; a request type has one service")
        self._rpcs.update(table)

    def request_types(self):
        """The request types this server answers."""
        return sorted(self._rpcs)

    def rpc_table(self):
        """The server's own requests: they report on the task."""
        return {
            "Ping": Rpc(lambda msg, responder: self._pong().as_answer(), True),
            "Status": Rpc(lambda msg, responder: ("StatusResponse", self.status()), True),
        }

    def _pong(self):
        """Who answers here: the task, its process and its serving loop's incarnation (what a
        client that knows only this address puts in a signed request's ``"to"``)."""
        return Pong(self.task_device, os.getpid(), self._loop.incarnation)

    def _runs_inline(self, msg):
        rpc = self._rpcs.get(msg["type"])
        if rpc is None:
            return True  # answered at once with an error
        return rpc.inline(msg) if callable(rpc.inline) else rpc.inline

    def join(self, timeout_s=None):
        """Blocks until the server is stopped, or this process gets SIGTERM or SIGINT.

        As TF's `join` it never returns on its own. Called on the main thread, it also
        handles SIGTERM and SIGINT for its duration: either stops the server (freeing its
        port) and returns at once, so a ``server.join()`` script exits cleanly with status 0.
        The previous handlers are restored afterwards. `timeout_s` bounds the wait (None:
        no bound). Returns True if the server is stopped.
        """
        with _stop_on_signals(self._stopped):
            self._stopped.wait(timeout_s)
        if self._stopped.is_set():
            self.stop()
        return self._stopped.is_set()

    def stop(self):
        """Stops serving and frees the port before returning (idempotent).

        Steps still running here (a dequeue nobody feeds) end with `CancelledError`.
        """
        if self._loop is not None:
            self.worker.cancel_running(f"the server of {self.task_device} stopped")
            self._loop.stop()
            self._loop = None
            threads.release(self.address)
        _LIVE_SERVERS.discard(self)
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
        rpc = self._rpcs.get(msg["type"])
        if rpc is None:
            raise wire.WireError(
                f"unknown request type {msg['type']!r}; this server handles {self.request_types()}",
                request_id=msg.get("id", 0),
            )
        try:
            return rpc.handler(msg, responder)
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
            # clients of this host whose messages come over a link, not ZeroMQ (`runtime.links`)
            "link_clients": self._loop.link_clients if self._loop else 0,
            # the I/O thread's Linux scheduling policy: "batch" (`sched.as_batch_thread`) or "default"
            "io_policy": self._loop.io_policy if self._loop else None,
            "shm": dict(shm.stats),  # tensors sent and received through shared memory
            # BLAS threads of this process, this task's share and what decided them (`runtime.threads`)
            "threads": self.threads.as_status() if self.threads else None,
            # whether this process keeps freed memory for its next arrays (`runtime.allocator`)
            "allocator": allocator.state(),
        }


# Servers started in this process. When the main thread ends, they stop before Python
# joins its worker threads (the thread pools' exit hook), so a script whose server still
# runs - even with a step blocked on a queue - exits at once, as TF's does.
_LIVE_SERVERS = weakref.WeakSet()


def _stop_live_servers():
    for server in list(_LIVE_SERVERS):
        with contextlib.suppress(Exception):  # exiting: a server that fails to stop must not block
            server.stop()


# Registered after concurrent.futures' own hook (imported above by serving), so it runs
# first: `threading` calls these hooks in reverse order, before joining non-daemon threads.
threading._register_atexit(_stop_live_servers)


@contextlib.contextmanager
def _stop_on_signals(event):
    """Within the block, SIGTERM/SIGINT set `event` (main thread only; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {}

    def on_signal(signum, frame):
        event.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        previous[sig] = signal.signal(sig, on_signal)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
