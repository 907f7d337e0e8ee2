"""Compiling an `ExecutionPlan`: from the nodes of a graph (or partition) to its steps.

`prune_and_sort` keeps what the fetches and targets need (fed tensors cut the graph) in
topological order; `compile_steps` resolves each node's kernel, numbers every tensor slot and
checks each ref input against the node that creates its resource; `note_last_uses` and
`dataflow_edges` add what a run needs to free intermediates early and to follow a deferred op's
dependents. Built once per plan, so nothing here is on a step's path.
"""

from nbdist import errors
from nbdist.ops import registry


class PlanStep:
    """One node of a plan: its kernel, its input and output slots, and what it waits on."""

    __slots__ = ("node", "kernel", "inputs", "out", "n_out", "ready", "frees", "index", "controls", "watch")

    def __init__(self, node, kernel, inputs, out, n_out, ready, index, controls, watch=()):
        self.node = node
        self.index = index  # position in the plan (marks it done)
        self.controls = controls  # indices of the steps it must run after (control inputs)
        self.kernel = kernel
        self.inputs = inputs  # slot numbers; a negative n is ref input -n-1 (a resource)
        self.out = out  # first output slot
        self.n_out = n_out
        self.ready = ready  # None, or ready(ctx, node, *args) -> None (ready) | what it waits for
        self.frees = ()  # slots whose last consumer is this step (dropped after it runs)
        self.watch = watch  # (argument position, kind name) of each watched resource it touches


def output_spec(by_name, tensor_name):
    """``(DType, TensorShape)`` of output ``op:i`` of the nodes `by_name`."""
    op, index = split_input(tensor_name)
    return by_name[op].output[index]


def split_input(name):
    """``(op name, output index)`` of a tensor name (``"op:1"``; a bare ``"op"`` is output 0)."""
    op, _, index = name.rpartition(":")
    return (op, int(index)) if op else (name, 0)


def prune_and_sort(by_name, fed, fetches, targets):
    """Nodes needed for the fetches/targets (stopping at fed tensors), inputs first.

    The subgraphs of the `_Send` targets come first, then the fetches' and the other targets':
    a tensor another task waits for (a variable's value for a tower) is sent before the ops
    that only this task needs."""
    needed, order, visiting = set(), [], set()
    sends = {t for t in targets if t in by_name and by_name[t].op == "_Send"}
    stack = [(t, False) for t in targets if t in sends]
    stack += [(split_input(f)[0], False) for f in fetches if f not in fed]
    stack += [(t, False) for t in targets if t not in sends]
    stack.reverse()
    while stack:
        name, expanded = stack.pop()
        if expanded:
            visiting.discard(name)
            if name not in needed:
                needed.add(name)
                order.append(by_name[name])
            continue
        if name in needed:
            continue
        if name in visiting:
            raise errors.InvalidArgumentError(name, None, f"graph has a cycle through node {name!r}")
        node = by_name.get(name)
        if node is None:
            raise errors.InvalidArgumentError(name, None, f"input node {name!r} is not in the graph")
        visiting.add(name)
        stack.append((name, True))
        refs = {pos for pos, _, _ in registry.ref_inputs(node)}
        for pos, inp in enumerate(node.data_inputs):
            if _canon(inp) in fed or pos in refs:
                continue  # fed tensors cut the graph; ref inputs need the variable, not its value
            dep = split_input(inp)[0]
            if dep not in needed:
                stack.append((dep, False))
        for c in node.control_inputs:
            if c not in needed and not _fed_placeholder(by_name.get(c), fed):
                stack.append((c, False))
    return order


def compile_steps(order, by_name, feeds):
    """One `PlanStep` per node of `order` (inputs first): its kernel and ready function resolved,
    its tensors numbered as slots (the `feeds` first), its ref inputs checked.

    Returns:
        ``(steps, resources, n_slots, slot_of)``: the steps; ``(ResourceKind, creator NodeDef)``
        per ref input (a step's input ``-n`` is ``resources[n - 1]``); how many slots a run
        holds; the slot of each tensor name.

    Raises:
        NotFoundError: for an op type without a kernel.
        InvalidArgumentError: for a ref input whose creator is missing or makes another kind.
    """
    slot_of = {name: i for i, name in enumerate(feeds)}
    n_slots = len(slot_of)
    resources = []  # (ResourceKind, creator NodeDef) per ref input
    steps = []
    index_of = {}
    for node in order:
        d = registry.lookup(node.op, None)
        if d is None or d.kernel is None:
            raise errors.NotFoundError(
                node.name,
                None,
                f"no kernel for op type {node.op!r} (node {node.name!r} on "
                f"{node.device or 'the local device'}); see docs/api.md for the supported ops",
            )
        if d.runs_here is not None:  # (a py_func refuses another process than its own)
            d.runs_here(node)
        refs = {pos: (src, kind) for pos, src, kind in registry.ref_inputs(node)}
        inputs, watch = [], ()
        for pos, inp in enumerate(node.data_inputs):
            if pos in refs:
                resources.append(_ref_resource(node, pos, *refs[pos], by_name))
                inputs.append(-len(resources))
                if refs[pos][1].watched:
                    watch += ((pos, refs[pos][1].name),)
            else:
                inputs.append(slot_of[_canon(inp)])
        base, n_out = n_slots, len(node.output)
        n_slots += n_out
        for i in range(n_out):
            slot_of.setdefault(f"{node.name}:{i}", base + i)
        controls = tuple(index_of[c] for c in node.control_inputs if c in index_of)
        step = PlanStep(node, d.kernel, tuple(inputs), base, n_out, d.ready, len(steps), controls, watch)
        steps.append(step)
        index_of[node.name] = step.index
    return steps, resources, n_slots, slot_of


def note_last_uses(steps, kept):
    """Sets each step's `frees`: the slots (but `kept`) whose last consumer it is."""
    last_use = {}
    for step in steps:
        for i in step.inputs:
            if i >= 0:
                last_use[i] = step
    for slot, step in last_use.items():
        if slot not in kept:
            step.frees += (slot,)


def dataflow_edges(steps):
    """Each step's producers (of its data inputs, and its control inputs) and consumers, by
    index: what a run that had to defer some steps follows."""
    producer = {}
    for step in steps:
        for i in range(step.n_out):
            producer[step.out + i] = step.index
    producers = [tuple({producer[i] for i in s.inputs if i in producer} | set(s.controls)) for s in steps]
    consumers = [[] for _ in steps]
    for step in steps:
        for p in producers[step.index]:
            consumers[p].append(step.index)
    return producers, consumers


_PLACEHOLDERS = ("Placeholder", "PlaceholderV2")


def _fed_placeholder(node, fed):
    """A placeholder whose value is fed: a control edge from it is satisfied by the feed (TF's
    rewrite moves such edges to the feed), instead of running the placeholder, which would fail."""
    return node is not None and node.op in _PLACEHOLDERS and f"{node.name}:0" in fed


def _ref_resource(node, pos, src, kind, by_name):
    """``(kind, creator node)`` of ref input `pos` of `node`, checked against its creator."""
    creator = by_name.get(src)
    if creator is None:
        raise errors.InvalidArgumentError(
            node.name,
            None,
            f"ref input {pos} of {node.op} node {node.name!r} names {src!r}, not in the graph",
        )
    creates = registry.lookup(creator.op, None)
    creates = creates.creates if creates is not None else None
    if creates is not None and creates is not kind:
        raise errors.InvalidArgumentError(
            node.name,
            None,
            f"ref input {pos} of {node.op} node {node.name!r} takes a {kind.name} resource, but "
            f"its input {creator.name!r} ({creator.op}) creates a {creates.name}",
        )
    return kind, creator


def _canon(name):
    return name if ":" in name else f"{name}:0"
