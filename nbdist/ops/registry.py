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
- gradient ``(op: Operation, *output_grads) -> list`` of one Tensor or None per input.

A missing entry is a clear error naming the op type.
"""

from nbdist.graph.graph import get_default_graph


class OpDef:
    """Everything nbdist knows about one op type."""

    __slots__ = (
        "type",
        "shape_fn",
        "kernel",
        "grad_fn",
        "ref_inputs",
        "stateful",
        "no_gradient",
        "blocking",
    )

    def __init__(self, op_type):
        self.type = op_type
        self.shape_fn = None
        self.kernel = None
        self.grad_fn = None
        self.ref_inputs = ()
        self.stateful = False
        self.no_gradient = False
        self.blocking = False


_REGISTRY = {}


def op_def(op_type):
    """The `OpDef` for `op_type`, created empty on first use (for registration)."""
    d = _REGISTRY.get(op_type)
    if d is None:
        d = _REGISTRY[op_type] = OpDef(op_type)
    return d


def declare(op_type, *, ref_inputs=(), stateful=False, blocking=False):
    """Declares properties of an op type.

    Args:
        ref_inputs: input positions that take the *variable itself* (a resource handle
            from ``ctx.resources``) instead of its value, as TF's ref-typed inputs.
        stateful: the op has side effects or randomness; it is never pruned as
            constant and never deduplicated.
        blocking: the kernel may wait for something outside the step (a queue, an
            accumulator, a tensor from another task); a server never runs such a
            partition on its I/O thread.
    """
    d = op_def(op_type)
    d.ref_inputs = tuple(ref_inputs)
    d.stateful = stateful
    d.blocking = blocking
    return d


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


def gradient(op_type):
    def register(fn):
        op_def(op_type).grad_fn = fn
        return fn

    return register


def no_gradient(op_type):
    """Marks `op_type` as not differentiable: its inputs get no gradient (TF's NotDifferentiable)."""
    op_def(op_type).no_gradient = True


def lookup(op_type):
    """The `OpDef` of a registered op type.

    Raises:
        KeyError: naming the op type and listing what is registered.
    """
    d = _REGISTRY.get(op_type)
    if d is None:
        raise KeyError(
            f"op type {op_type!r} is not registered in nbdist; "
            f"{len(_REGISTRY)} op types are (see docs/api.md)"
        )
    return d


def get_kernel(op_type):
    d = lookup(op_type)
    if d.kernel is None:
        raise KeyError(f"op type {op_type!r} has no kernel registered")
    return d.kernel


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
        graph = inputs[0].graph if inputs else get_default_graph()
    if d.shape_fn is None:
        raise KeyError(f"op type {op_type!r} has no shape function registered")
    specs = d.shape_fn(list(inputs), attrs)
    return graph.create_op(op_type, inputs, specs, name=name, attrs=attrs, control_inputs=control_inputs)
