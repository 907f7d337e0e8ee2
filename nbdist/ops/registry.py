"""One registry: op type -> shape function, numpy kernel, gradient function.

Each op module declares an op's pieces side by side::

    @shape("Square")
    def _square_shape(inputs, attrs):
        return [(inputs[0].dtype, inputs[0].shape)]

    @kernel("Square")
    def _square_kernel(ctx, node, x):
        return np.square(x)

    @gradient("Square")
    def _square_grad(op, grad):
        return [grad * 2.0 * op.inputs[0]]

Signatures:
- shape ``(inputs: list[Tensor], attrs: dict) -> list[(dtype, shape)]``, one per output;
- kernel ``(ctx, node: NodeDef, *input_values) -> value`` (a tuple when the op has
  several outputs, ignored when it has none). ``ctx`` is the executor's step context
  (``ctx.resources``, ``ctx.rendezvous``, ``ctx.step_id``); kernels never import the runtime;
- gradient ``(op: Operation, *output_grads) -> list`` of one Tensor, `IndexedSlices` or None
  per input (``gradient(type, indexed_slices=True)``: it also accepts sparse output grads).

A missing entry is a clear error naming the op type.

Resources (state that outlives a step) are declared here too: `resource_kind` names a
kind and how to make one; the creator op declares ``creates=KIND``; each ref input of a
user op names the kind it takes (``ref_inputs=(0,)`` means a variable)::

    registry.resource_kind("fifo_queue", lambda name, device, attrs: FIFOQueue(...),
                           attrs=("capacity", "component_types"))
    registry.declare("FIFOQueueV2", creates="fifo_queue", stateful=True)
    registry.declare("QueueDequeueV2", ref_inputs={0: "fifo_queue"}, stateful=True, blocking=True)

The executor then passes ``QueueDequeueV2``'s kernel the queue itself (made on first use
by ``ctx.resources.resource(kind, creator_node)``); the placer puts it with its creator.
"""

from nbdist.graph.graph import get_default_graph
from nbdist.ops.resources import VARIABLE, ResourceKind


class OpDef:
    """Everything nbdist knows about one op type."""

    __slots__ = (
        "type",
        "shape_fn",
        "kernel",
        "grad_fn",
        "grad_takes_indexed_slices",
        "ref_inputs",
        "stateful",
        "no_gradient",
        "blocking",
        "parks",
        "creates",
        "ready",
        "takes_dead",
        "runs_here",
    )

    def __init__(self, op_type):
        self.type = op_type
        self.shape_fn = None
        self.kernel = None
        self.grad_fn = None
        self.grad_takes_indexed_slices = False  # else gradients() densifies IndexedSlices for grad_fn
        self.ref_inputs = {}  # input position -> ResourceKind
        self.creates = None  # the ResourceKind this op creates, or None
        self.stateful = False
        self.no_gradient = False
        self.blocking = False
        self.parks = False
        self.ready = None  # ready(ctx, node, *args) -> None when the kernel can run, else what it awaits
        self.takes_dead = False  # the kernel sees dead inputs (`nbdist.ops.deadness`): Merge, _Send
        self.runs_here = None  # runs_here(node) raises when this process cannot run the node


_REGISTRY = {}
_KINDS = {VARIABLE.name: VARIABLE}


def op_def(op_type):
    """The `OpDef` for `op_type`, created empty on first use (for registration)."""
    d = _REGISTRY.get(op_type)
    if d is None:
        d = _REGISTRY[op_type] = OpDef(op_type)
    return d


def declare(
    op_type, *, ref_inputs=(), stateful=False, blocking=False, creates=None, parks=False, takes_dead=False
):
    """Declares properties of an op type.

    Args:
        ref_inputs: input positions that take a *resource itself* instead of a value, as
            TF's ref-typed inputs: a tuple of positions (each a variable), or a mapping
            ``{position: kind name}`` for other kinds (``{0: "fifo_queue"}``). The input
            must come from the resource's creator op; the op is placed with it.
        stateful: the op has side effects or randomness; it is never pruned as
            constant and never deduplicated.
        blocking: the kernel may wait for something outside the step (a queue, an
            accumulator, a tensor from another task); a server never runs such a
            partition on its I/O thread, unless every such op of it `parks`.
        parks: (blocking ops) whatever the op waits for says when it changes - a tensor
            pushed from another task (the rendezvous), a queue or an accumulator
            (`ResourceManager.notify`) - so a step held up by it can be parked and resumed
            then, on the server's I/O thread, instead of blocking a thread.
        creates: the kind name of the resource this op creates (``"variable"`` for
            ``VariableV2``); its kernel gets it with ``ctx.resources.resource(...)``.
        takes_dead: the kernel is called with dead inputs (`nbdist.ops.deadness.DEAD`) too,
            instead of the executor making its outputs dead (``Merge``, ``_Send``).

    Raises:
        KeyError: a kind that is not declared (naming the declared ones).
    """
    d = op_def(op_type)
    if not isinstance(ref_inputs, dict):
        ref_inputs = dict.fromkeys(ref_inputs, VARIABLE.name)
    d.ref_inputs = {int(pos): resource_kind_of(k) for pos, k in ref_inputs.items()}
    d.creates = None if creates is None else resource_kind_of(creates)
    d.stateful = stateful
    d.blocking = blocking
    d.parks = blocking and parks
    d.takes_dead = takes_dead
    return d


def resource_kind(name, factory, attrs=(), watched=False, per_session=False):
    """Declares a kind of resource; returns its `ResourceKind`.

    Args:
        name: the kind's name (``"fifo_queue"``), used by `declare`'s ``creates`` and
            ``ref_inputs``.
        factory: ``factory(name, device, attrs) -> resource`` (see `ResourceKind`).
        attrs: attr names every creator node of this kind must carry.
        watched: record every op on a resource of this kind in its task's activity log
            (`ResourceManager.activity`), so a traced step's timeline shows the resource as a
            lane; its resources then need a ``snapshot()`` method (a small dict of numbers).
        per_session: one resource per session when the creator has no ``shared_name``.

    Raises:
        ValueError: the name is declared already.
    """
    if name in _KINDS:
        raise ValueError(f"resource kind {name!r} is already declared")
    kind = _KINDS[name] = ResourceKind(name, factory, attrs, watched, per_session)
    return kind


def resource_kinds():
    """The names of the declared resource kinds, sorted (``["accumulator", "queue", ...]``)."""
    return sorted(_KINDS)


def resource_kind_of(name):
    """The declared `ResourceKind` called `name` (a `ResourceKind` is returned as is).

    Raises:
        KeyError: naming the kind and listing the declared ones.
    """
    if isinstance(name, ResourceKind):
        return name
    kind = _KINDS.get(name)
    if kind is None:
        raise KeyError(
            f"resource kind {name!r} is not declared; declared kinds: {sorted(_KINDS)} "
            "(declare it with nbdist.ops.registry.resource_kind first)"
        )
    return kind


def ref_inputs(node):
    """``[(position, source op name, ResourceKind)]`` of a node's ref inputs.

    The one place that finds where a ref input comes from: `node` is a `NodeDef` (or
    anything with ``op`` and ``data_inputs``); an unregistered op type has none.
    """
    d = _REGISTRY.get(node.op)
    if d is None or not d.ref_inputs:
        return []
    inputs = node.data_inputs
    return [(pos, inputs[pos].rpartition(":")[0] or inputs[pos], kind) for pos, kind in d.ref_inputs.items()]


def shape(op_type):
    def register(fn):
        op_def(op_type).shape_fn = fn
        return fn

    return register


def kernel(op_type):
    def register(fn):
        op_def(op_type).kernel = fn
        return fn

    return register


def gradient(op_type, indexed_slices=False):
    """Registers `op_type`'s gradient function.

    Args:
        indexed_slices: the function accepts `IndexedSlices` output gradients (and may pass
            them on, as ``Identity``'s does). Otherwise `gradients()` densifies them first.
    """

    def register(fn):
        d = op_def(op_type)
        d.grad_fn = fn
        d.grad_takes_indexed_slices = bool(indexed_slices)
        return fn

    return register


def ready(op_type):
    """Registers when a blocking op can run: ``fn(ctx, node, *args) -> None | str``.

    `args` are the kernel's arguments (resources for ref inputs). ``None`` means the
    kernel can run now without waiting; a string says what it waits for (``"queue q:
    0 of 1 elements"``), shown when the step times out or hangs. The executor defers the
    op (and what depends on it) until it is ready, so a waiting op never holds a thread
    per op. Only ops declared ``blocking=True`` should register one.
    """

    def register(fn):
        d = op_def(op_type)
        if not d.blocking:
            raise ValueError(f"op type {op_type!r} has a ready function but is not declared blocking=True")
        d.ready = fn
        return fn

    return register


def runs_here(op_type):
    """Registers ``fn(node)``, which raises when this process cannot run `node` (a py_func,
    whose Python function lives only in the process that built the graph). Every plan
    compiles with it: a session's first run, a worker's ``RegisterGraph``."""

    def register(fn):
        op_def(op_type).runs_here = fn
        return fn

    return register


def no_gradient(op_type):
    """Marks `op_type` as not differentiable: its inputs get no gradient (TF's NotDifferentiable)."""
    op_def(op_type).no_gradient = True


_RAISE = object()


def lookup(op_type, default=_RAISE):
    """The `OpDef` of a registered op type (`default` if given and it is not registered).

    Raises:
        KeyError: naming the op type, when it is not registered and no default is given.
    """
    d = _REGISTRY.get(op_type)
    if d is None:
        if default is not _RAISE:
            return default
        raise KeyError(
            f"op type {op_type!r} is not registered in nbdist; "
            f"{len(_REGISTRY)} op types are (see docs/api.md)"
        )
    return d


def get_gradient(op_type):
    """The gradient function of `op_type`, or None if declared not differentiable.

    Raises:
        LookupError: if the op type has no gradient registered (naming it).
    """
    d = lookup(op_type)
    if d.no_gradient:
        return None
    if d.grad_fn is None:
        raise LookupError(
            f"no gradient defined for op type {op_type!r}; "
            "wrap it in tf.stop_gradient() if no gradient should flow through it"
        )
    return d.grad_fn


def registered_op_types():
    return sorted(_REGISTRY)


def make_op(op_type, inputs, attrs=None, name=None, graph=None, control_inputs=()):
    """Creates an op of a registered type in the graph of its inputs (or the default graph).

    `inputs` must already be Tensors; output dtypes and shapes come from the op's
    shape function. Returns the `Operation`.
    """
    d = lookup(op_type)
    attrs = dict(attrs or {})
    if graph is None:
        graph = get_default_graph()
        if inputs and getattr(graph, "outer", None) is None:  # (a function's graph captures outer inputs)
            graph = inputs[0].graph
    if d.shape_fn is None:
        raise KeyError(f"op type {op_type!r} has no shape function registered")
    specs = d.shape_fn(list(inputs), attrs)
    return graph.create_op(op_type, inputs, specs, name=name, attrs=attrs, control_inputs=control_inputs)
