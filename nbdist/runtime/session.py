"""`tf.Session`: the client. Local (``target=""``) or connected to a master.

The session turns fetches and feeds into names, then asks its backend to run one
step. The local backend executes the whole graph in this process with the same
`ExecutionPlan` the workers use (devices are recorded but not enforced locally);
a remote target (``"zmq://host:port"``, ``"grpc://host:port"`` or ``"host:port"``)
is served by the master of that task (see `nbdist.runtime.remote`).
"""

import threading
import time

import numpy as np

from nbdist import errors
from nbdist.graph.default_session import default_session
from nbdist.graph.graph import get_default_graph
from nbdist.graph.graph_def import node_def_of
from nbdist.ops.resources import ResourceManager
from nbdist.ops.session_ops import delete_dead_handles
from nbdist.runtime import (
    loop_kernels,  # noqa: F401 - registers the While kernels (they run plans)
    threads,
)
from nbdist.runtime.config import ConfigProto, DeviceStepStats, RunOptions
from nbdist.runtime.device_attributes import cpu_of, new_incarnation
from nbdist.runtime.executor import ExecutionPlan, StepContext
from nbdist.runtime.fetches import FeedCache, FetchMapper, fetch_key, normalize_feeds

LOCAL_DEVICE = "/job:localhost/replica:0/task:0/device:CPU:0"
_MAX_MAPPERS = 256  # fetch structures a session remembers (a program making new ones starts over)


class _LocalBackend:
    """Runs steps in-process; variables live in this session's resource manager."""

    def __init__(self, graph, config):
        self._graph = graph
        self._config = config
        self._nodes = []
        self._plans = {}
        self._lock = threading.Lock()
        self._step_id = 0
        self._running = set()  # StepContexts of steps in flight (close() cancels their waits)
        self.resources = ResourceManager(LOCAL_DEVICE)
        self.incarnation = new_incarnation()  # of this session's CPU device (list_devices)
        # This process runs the session's kernels: BLAS gets the cores' share (`runtime.threads`).
        threads.claim_for_local_session(config)
        self._claimed = True

    def _sync_nodes(self):
        new = self._graph.operations_since(len(self._nodes))
        if new:
            self._nodes.extend(node_def_of(op) for op in new)
            self._plans.clear()

    def run_step(self, feeds, fetch_names, target_names, options, run_metadata):
        with self._lock:
            self._sync_nodes()
            key = (tuple(feeds), tuple(fetch_names), tuple(target_names))
            plan = self._plans.get(key)
            if plan is None:
                plan = self._plans[key] = ExecutionPlan(self._nodes, feeds, fetch_names, target_names)
            self._step_id += 1
            step_id = self._step_id
        timeout_ms = (
            options.timeout_in_ms
            if options and options.timeout_in_ms
            else self._config.operation_timeout_in_ms
        )
        deadline = time.monotonic() + timeout_ms / 1000 if timeout_ms else None
        tracing = run_metadata is not None and options is not None and options.trace_level
        trace = [] if tracing else None
        ctx = StepContext(self.resources, None, step_id, deadline, trace, LOCAL_DEVICE)
        with self._lock:
            self._running.add(ctx)
        began = time.perf_counter()
        try:
            values = [_owned(v) for v in plan.run(ctx, list(feeds.values()))]
        finally:
            with self._lock:
                self._running.discard(ctx)
        if tracing:
            stats = DeviceStepStats(LOCAL_DEVICE)
            stats.node_stats = [{"node_name": n, "op": op, "start_s": s, "end_s": e} for n, op, s, e in trace]
            stats.resource_events = self.resources.activity_between(began, time.perf_counter(), step_id)
            run_metadata.step_stats.dev_stats.append(stats)
        return values

    def list_devices(self):
        return [cpu_of(LOCAL_DEVICE.rpartition("/device:")[0], self.incarnation)]

    def close(self):
        # A step still waiting (a dequeue from a queue nobody feeds, in another thread) ends
        # with CancelledError, as in TF; then the session's resources go.
        with self._lock:
            running = list(self._running)
        for ctx in running:
            ctx.cancel(
                errors.CancelledError(None, None, "Session has been closed while the step was waiting")
            )
        self.resources.clear()
        if self._claimed:
            self._claimed = False
            threads.release_local_session()


def _owned(value):
    """A fetched value the caller may change: a copy of variable storage or a constant."""
    if isinstance(value, np.ndarray) and not value.flags.writeable:
        return value.copy()
    return value


class BaseSession:
    """What `Session` and `InteractiveSession` share: run, close, default-session handling."""

    def __init__(self, target="", graph=None, config=None):
        if graph is None:
            graph = get_default_graph()
        if config is not None and not isinstance(config, ConfigProto):
            raise TypeError(f"config must be a tf.ConfigProto, got {config!r}")
        self._graph = graph
        self._config = config or ConfigProto()
        self._target = target or ""
        self._closed = False
        self._backend = self._make_backend(self._target)
        self._default_contexts = []
        self._mappers = {}  # fetch_key(fetches) -> FetchMapper: a training loop's fetches, mapped once
        self._feed_cache = FeedCache()

    def _make_backend(self, target):
        if not target:
            return _LocalBackend(self._graph, self._config)
        from nbdist.runtime.remote import RemoteBackend  # noqa: PLC0415 - loads zmq only when needed

        return RemoteBackend(target, self._graph, self._config)

    @property
    def graph(self):
        return self._graph

    @property
    def sess_str(self):
        return self._target

    @property
    def target(self):
        return self._target

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Runs one step and returns `fetches`' values in the same structure.

        Args:
            fetches: a Tensor, Operation, Variable, name, or a nested list/tuple/dict of them.
            feed_dict: ``{tensor_or_name: value}`` replacing those tensors' values.
            options: a `tf.RunOptions` (``timeout_in_ms``, ``trace_level``).
            run_metadata: a `tf.RunMetadata` filled when tracing.

        Raises:
            RuntimeError: if the session is closed.
            tf.errors.OpError subclasses: from the ops, naming node and device.
        """
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        if options is not None and not isinstance(options, RunOptions):
            raise TypeError(f"options must be a tf.RunOptions, got {options!r}")
        delete_dead_handles(self)  # TensorHandles dropped since: their tensors go (TF's)
        mapper = self._mapper(fetches)
        feeds = {t.name: v for t, v in normalize_feeds(self._graph, feed_dict, self._feed_cache).items()}
        values = self._backend.run_step(
            feeds,
            [t.name for t in mapper.tensors],
            [op.name for op in mapper.targets],
            options,
            run_metadata,
        )
        return mapper.build(values, self)

    def list_devices(self):
        """The devices this session can run ops on (TF's ``_DeviceAttributes``: ``name``,
        ``device_type``, ``memory_limit_bytes``, ``incarnation``): the local CPU, or the CPU of
        every task of the target's cluster, the master's first.

        Raises:
            tf.errors.CancelledError: the session is closed (TF's).
            tf.errors.UnavailableError: a task of the cluster cannot be reached.
        """
        if self._closed:
            raise errors.CancelledError(None, None, "Session has been closed.")
        return self._backend.list_devices()

    def _mapper(self, fetches):
        key = fetch_key(fetches)
        mapper = self._mappers.get(key) if key is not None else None
        if mapper is None:
            mapper = FetchMapper(self._graph, fetches)
            if key is not None:
                if len(self._mappers) >= _MAX_MAPPERS:
                    self._mappers.clear()
                self._mappers[key] = mapper
        return mapper

    def close(self):
        if not self._closed:
            self._closed = True
            self._backend.close()

    def as_default(self):
        return default_session(self)

    def __enter__(self):
        ctx = self.as_default()
        ctx.__enter__()
        graph_ctx = self._graph.as_default()
        graph_ctx.__enter__()
        self._default_contexts.append((ctx, graph_ctx))
        return self

    def __exit__(self, exc_type, exc, tb):
        ctx, graph_ctx = self._default_contexts.pop()
        graph_ctx.__exit__(exc_type, exc, tb)
        ctx.__exit__(exc_type, exc, tb)
        self.close()

    def __del__(self):
        try:  # noqa: SIM105 - at interpreter exit module globals (contextlib) may be None
            self.close()
        except Exception:  # noqa: BLE001, S110 - never raise from a finalizer
            pass

    def __repr__(self):
        where = self._target or "local"
        return f"<nbdist.Session target={where!r}{' closed' if self._closed else ''}>"


class Session(BaseSession):
    """`tf.Session(target="", graph=None, config=None)`.

    ``with tf.Session() as sess:`` makes it the default session and its graph the
    default graph inside the block, and closes it at the end.
    """

    @staticmethod
    def reset(target, containers=None, config=None):
        """Closes every session of the master at `target` (their next `run` raises
        `AbortedError`) and clears the resource `containers` (all when None) on every task
        of its cluster, as TF's. `config.operation_timeout_in_ms` bounds the wait."""
        from nbdist.runtime.remote import reset  # noqa: PLC0415

        reset(target, containers, config)


class InteractiveSession(BaseSession):
    """A session that installs itself as the default one (for shells and notebooks)."""

    def __init__(self, target="", graph=None, config=None):
        super().__init__(target, graph, config)
        self._default = self.as_default()
        self._default.__enter__()
        self._graph_default = self._graph.as_default()
        self._graph_default.__enter__()

    def close(self):
        if not self._closed:
            self._graph_default.__exit__(None, None, None)
            self._default.__exit__(None, None, None)
        super().close()
