"""`ConfigProto`, `RunOptions`, `RunMetadata`: plain-data options as TF names them."""


class GPUOptions:
    def __init__(self, allow_growth=False, per_process_gpu_memory_fraction=1.0, **kwargs):
        self.allow_growth = allow_growth
        self.per_process_gpu_memory_fraction = per_process_gpu_memory_fraction


def _fields(message, given, defaults):
    """TF's protobuf constructor's check: every keyword is one of the message's fields."""
    for name in given:
        if name not in defaults:
            raise ValueError(f'Protocol message {message} has no "{name}" field.')
    return {**defaults, **given}


class OptimizerOptions:
    """TF's `tf.OptimizerOptions` (part of `GraphOptions`): the graph optimizations TF's runtime
    applies. Accepted with TF's fields and defaults; nbdist rewrites no graph, so none of them
    changes what a step computes (TF's rewrites do not either)."""

    L1, L0 = 0, -1  # Level
    DEFAULT, OFF, ON_1, ON_2 = 0, -1, 1, 2  # GlobalJitLevel
    _DEFAULTS = {
        "do_common_subexpression_elimination": False,
        "do_constant_folding": False,
        "max_folded_constant_in_bytes": 0,
        "do_function_inlining": False,
        "opt_level": 0,
        "global_jit_level": 0,
        "cpu_global_jit": False,
    }

    def __init__(self, **fields):
        for name, value in _fields("OptimizerOptions", fields, self._DEFAULTS).items():
            setattr(self, name, value)

    def __eq__(self, other):
        return isinstance(other, OptimizerOptions) and vars(self) == vars(other)

    __hash__ = None

    def __repr__(self):
        return f"OptimizerOptions({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"


class GraphOptions:
    """TF's `tf.GraphOptions` (``ConfigProto(graph_options=...)``), with TF's fields and defaults;
    accepted as TF's, none of them changes what a step computes in nbdist."""

    _DEFAULTS = {
        "enable_recv_scheduling": False,
        "optimizer_options": None,
        "build_cost_model": 0,
        "build_cost_model_after": 0,
        "infer_shapes": False,
        "place_pruned_graph": False,
        "enable_bfloat16_sendrecv": False,
        "timeline_step": 0,
        "rewrite_options": None,
    }

    def __init__(self, **fields):
        for name, value in _fields("GraphOptions", fields, self._DEFAULTS).items():
            setattr(self, name, value)
        if self.optimizer_options is None:
            self.optimizer_options = OptimizerOptions()

    def __eq__(self, other):
        return isinstance(other, GraphOptions) and vars(self) == vars(other)

    __hash__ = None

    def __repr__(self):
        return f"GraphOptions({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"


class ConfigProto:
    """Session configuration (TF's `tf.ConfigProto`), the fields nbdist honours.

    Args:
        operation_timeout_in_ms: bound on every step and every wait inside it
            (0: the default bound, `DEFAULT_STEP_TIMEOUT_S`).
        device_filters: only these devices (``"/job:ps"``, ``"/job:worker/task:0"``) are
            contacted by the session; placement on others is an error.
        log_device_placement: print each node's device once per new partitioning.
        intra_op_parallelism_threads: BLAS threads of the task that runs the kernels (0: the
            thread policy chooses its share of the cores; `nbdist.runtime.threads`). Given to
            `tf.train.Server(config=)` it sets that task's; given to a `tf.Session` it applies
            only when this process runs the session's kernels (a local session, or a server of
            this process at the target), and is ignored otherwise, as TF's remote master does.
        inter_op_parallelism_threads: accepted and reported in the server's Status: a step's
            ops run on one thread, and the serving pool is not sized from it.
        allow_soft_placement, gpu_options: accepted for compatibility (nbdist has CPUs only).
        graph_options: a `GraphOptions` (TF's graph optimizations): accepted, as TF's.
    """

    def __init__(
        self,
        operation_timeout_in_ms=0,
        device_filters=(),
        log_device_placement=False,
        allow_soft_placement=False,
        gpu_options=None,
        intra_op_parallelism_threads=0,
        inter_op_parallelism_threads=0,
        device_count=None,
        graph_options=None,
        **unknown,
    ):
        if unknown:
            raise TypeError(
                f"ConfigProto got unsupported fields {sorted(unknown)}; nbdist supports "
                "operation_timeout_in_ms, device_filters, log_device_placement, allow_soft_placement"
            )
        self.operation_timeout_in_ms = int(operation_timeout_in_ms)
        self.device_filters = list(device_filters)
        self.log_device_placement = bool(log_device_placement)
        self.allow_soft_placement = bool(allow_soft_placement)
        self.gpu_options = gpu_options or GPUOptions()
        self.intra_op_parallelism_threads = intra_op_parallelism_threads
        self.inter_op_parallelism_threads = inter_op_parallelism_threads
        self.device_count = dict(device_count or {})
        self.graph_options = graph_options if graph_options is not None else GraphOptions()

    def __repr__(self):
        return (
            f"ConfigProto(operation_timeout_in_ms={self.operation_timeout_in_ms}, "
            f"device_filters={self.device_filters}, log_device_placement={self.log_device_placement})"
        )


class RunOptions:
    """Per-call options of `Session.run` (TF's `tf.RunOptions`)."""

    NO_TRACE = 0
    SOFTWARE_TRACE = 1
    HARDWARE_TRACE = 2
    FULL_TRACE = 3

    def __init__(self, trace_level=NO_TRACE, timeout_in_ms=0, **kwargs):
        self.trace_level = trace_level
        self.timeout_in_ms = int(timeout_in_ms)


class StepStats:
    """Per-device op timings of one step: ``dev_stats`` is a list of `DeviceStepStats`."""

    def __init__(self):
        self.dev_stats = []


class DeviceStepStats:
    def __init__(self, device):
        self.device = device
        self.node_stats = []  # dicts: node_name, op, start_s, end_s, [bytes, peer, key]
        # Ops on this task's queues and accumulators during the step, from every step that ran
        # here meanwhile (`ResourceManager.activity_between`): the timeline's resource lanes.
        self.resource_events = []


class RunMetadata:
    """Filled by `Session.run(..., run_metadata=md)` when tracing is requested.

    Attributes:
        step_stats: `StepStats` with one `DeviceStepStats` per task (op spans).
        partition_graphs: the placed, partitioned GraphDefs of the step, one per task.
        service_calls: the RPCs of the step (RunStep at the master, RegisterGraph /
            RunGraph at workers), each a dict with service, method, task, start_s, end_s.
        cost_graph: unused, for compatibility.
    """

    def __init__(self):
        self.step_stats = StepStats()
        self.partition_graphs = []
        self.service_calls = []
        self.cost_graph = None

    def Clear(self):  # noqa: N802 - protobuf's method name
        self.__init__()
