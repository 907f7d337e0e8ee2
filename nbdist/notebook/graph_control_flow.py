"""What the graph view shows of control flow: a `tf.cond`'s two branches, a loop's body.

A `tf.cond` is a name scope of ``Switch`` and ``Merge`` ops (`nbdist.ops.cond_ops`): the ops
behind a Switch's ``output_true`` (``:1``) are the true branch, those behind ``output_false``
(``:0``) the false one, and each Merge joins them. Collapsed, the scope is one box that says it
is a cond; expanded, each branch is a box of its own.

A `tf.while_loop` (``map_fn``, ``scan``, ...) is one op, ``While`` or ``StatelessWhile``, whose
condition and body are `SubgraphDef` attrs (its gradient: ``WhileGrad``, attr ``body_grad``).
Its functions are drawn inside a box when the loop is expanded, never made nodes of the model:
placement and partitions see the loop as the one op it is. A traced step counts its iterations
(``<loop>/iteration:<k>`` spans, `nbdist.runtime.loop_kernels`).

Pure data, read by `nbdist.notebook.graph_model` and drawn by `nbdist.notebook.render`.
"""

import collections
import re

from nbdist.export.tf_protos import as_nbdist

LOOP_OPS = frozenset({"While", "StatelessWhile"})
# The functions a loop op keeps in its attrs, in the order they are drawn: (attr, what it is).
LOOP_FUNCTIONS = {
    "While": (("cond", "condition"), ("body", "body")),
    "StatelessWhile": (("cond", "condition"), ("body", "body")),
    "WhileGrad": (("body_grad", "gradient body"),),
}
_COND_MERGE = re.compile(r"Merge(_\d+)?")  # tf.cond names its outputs' Merges so (not a gradient's)
_ITERATION = re.compile(r"(.+)/iteration:(\d+)")
TRUE, FALSE = "true", "false"


def cond_scopes(nodes):
    """The name scopes that are a `tf.cond`: they hold a ``Merge`` of the cond's outputs
    (``cond/Merge``, ``cond/Merge_1``, ...) directly."""
    out = set()
    for node in nodes:
        scope, _, leaf = node.name.rpartition("/")
        if node.op == "Merge" and scope and _COND_MERGE.fullmatch(leaf):
            out.add(scope)
    return out


def branches(nodes, scope):
    """``{node name: "true" or "false"}``: the ops of the cond `scope` behind its Switches'
    ``output_true`` / ``output_false`` (a Switch itself on the side it feeds). The cond's own
    Merges, its predicate and anything reached from both sides belong to neither."""
    prefix = scope + "/"
    inside = {n.name: n for n in nodes if n.name.startswith(prefix)}
    joins = {name for name, n in inside.items() if n.op == "Merge" and name.rpartition("/")[0] == scope}
    by_output = collections.defaultdict(list)  # (producer, output index) -> its consumers in the scope
    by_producer = collections.defaultdict(list)  # producer -> consumers in the scope (data or control)
    for name, node in inside.items():
        for inp in node.input:
            src, _, index = ("", "", "") if inp.startswith("^") else inp.rpartition(":")
            by_output[(src, index)].append(name)
            by_producer[src or inp[1:]].append(name)
    side = collections.defaultdict(set)
    for switch, node in inside.items():
        if node.op != "Switch" or switch.rpartition("/")[0] != scope:
            continue
        used = {b for i, b in (("1", TRUE), ("0", FALSE)) if by_output[(switch, i)]}
        if len(used) == 1:  # a Switch serves the branch it feeds
            side[switch] |= used
        for index, branch in (("1", TRUE), ("0", FALSE)):
            todo = list(by_output[(switch, index)])
            while todo:
                name = todo.pop()
                if name not in joins and branch not in side[name]:
                    side[name].add(branch)
                    todo.extend(by_producer[name])
    return {name: next(iter(s)) for name, s in side.items() if len(s) == 1}


def loop_functions(node):
    """``[(what, SubgraphDef)]``: the condition and body of a loop op (the gradient body of a
    ``WhileGrad``); none for other ops, or attrs that are not `SubgraphDef`s (real TF's)."""
    out = []
    for attr, what in LOOP_FUNCTIONS.get(node.op, ()):
        function = node.attr.get(attr)
        if hasattr(function, "nodes"):
            out.append((what, function))
    return out


def body_size(node):
    """Ops in a loop's body (its gradient body for ``WhileGrad``), the placeholders it takes
    not counted; None when the op keeps no body."""
    bodies = [f for what, f in loop_functions(node) if what != "condition"]
    if not bodies:
        return None
    return sum(n.op != "Placeholder" for n in bodies[0].nodes)


def loop_iterations(trace):
    """``{loop op name: iterations it ran}`` in a traced step (a `tf.RunMetadata` of a local or
    distributed session, a ``trace`` event, or real TF's RunMetadata proto); ``{}`` for None.

    A loop records one span per iteration (``<loop>/iteration:<k>``, up to
    `nbdist.runtime.loop_kernels.TRACED_SPANS`); the count is the largest k + 1 seen, the
    most any one run of the loop made in that step (a loop inside another runs many times)."""
    if trace is None:
        return {}
    trace = as_nbdist(trace)
    if isinstance(trace, dict):
        per_device = [d.get("node_stats", []) for d in trace.get("dev_stats", [])]
    elif hasattr(trace, "step_stats"):
        per_device = [d.node_stats for d in trace.step_stats.dev_stats]
    else:
        raise TypeError(
            f"trace must be a traced tf.RunMetadata or a 'trace' event, got {type(trace).__name__}"
        )
    counts = {}
    for node_stats in per_device:
        for s in node_stats:
            m = _ITERATION.fullmatch(s.get("node_name", "")) if s.get("op") == "WhileIteration" else None
            if m is not None:
                counts[m.group(1)] = max(counts.get(m.group(1), 0), int(m.group(2)) + 1)
    return counts
