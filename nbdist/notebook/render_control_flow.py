"""Control flow drawn in DOT: a `tf.cond`'s branches as boxes, a loop's condition and body.

`nbdist.notebook.render` draws a graph; this module adds what `graph_control_flow` finds: each
open cond's true and false branch as a box (nested as the conds are) and, beside each expanded
loop op, its functions in boxes tied to it. A function's ops are drawn only, never nodes of the
model.
"""

import collections
import itertools

from nbdist.notebook.dot_text import dot_attrs, dot_quote
from nbdist.notebook.graph_control_flow import LOOP_OPS, body_size, branches, cond_scopes, loop_functions
from nbdist.notebook.graph_model import task_color, tint

_STYLES = {  # DOT attributes of what this module draws (the SVG gets the class too)
    "loop_function": {
        "style": "rounded,dashed",
        "color": "#555555",
        "fontsize": 10,
        "class": "nbdist-loop-body",
    },
    "loop_link": {"style": "dotted", "arrowhead": "none", "color": "#555555"},
    "function_op": {"style": "rounded,filled,dashed", "class": "nbdist-loop-body-op"},
    "control": {"style": "dashed", "color": "#b0b0b0"},  # as render's control and data edges
    "data": {},
}


BRANCH_COLORS = {"true": "#1b7f3b", "false": "#9a4a12"}


class ControlFlow:
    """What one drawing shows of control flow: the scopes that are conds, the branches each op of
    an open cond is in (outermost first), the open scopes and loops, how often loops ran."""

    def __init__(self, model, nodes, collapse, expanded):
        self.conds = cond_scopes(nodes)
        self.iterations = model.iterations
        self.expanded = expanded
        self.paths = collections.defaultdict(tuple)  # op name -> ((cond scope, "true"/"false"), ...)
        for cond in sorted(self.conds, key=lambda c: c.count("/")):
            parts = cond.split("/")
            if collapse and any("/".join(parts[:k]) not in expanded for k in range(1, len(parts) + 1)):
                continue  # drawn as one box (or inside one)
            for name, branch in branches(nodes, cond).items():
                self.paths[name] += ((cond, branch),)

    def path(self, group):
        """The branches a drawn node is in: those all its ops are in."""
        paths = [self.paths.get(n.name, ()) for n in group]
        common = paths[0]
        for p in paths[1:]:
            common = tuple(a for a, _ in itertools.takewhile(lambda ab: ab[0] == ab[1], zip(common, p)))
        return common

    def inside(self, group):
        """`` · 2 conds · 1 loop``: what control flow a collapsed scope holds."""
        conds = len({n.name.rpartition("/")[0] for n in group if n.op == "Merge"} & self.conds)
        loops = sum(body_size(n) is not None for n in group)  # a WhileGrad is a loop too
        return "".join(f" · {k} {word}{'s' * (k > 1)}" for k, word in ((conds, "cond"), (loops, "loop")) if k)

    def loop_label(self, node):
        """``tf.while_loop: body 5 ops`` and, traced, how often it ran."""
        what = "tf.while_loop" if node.op in LOOP_OPS else f"gradient of loop {node.attr.get('loop', '?')}"
        label = f"{what}: body {body_size(node)} ops"
        k = self.iterations.get(node.name)
        if k is not None:
            label += f"\n{k} iteration{'s' * (k != 1)} in this step"
        return label


def nested_lines(names, members, boxes, flow, node_line, indent, lines, prefix=()):
    """Appends the nodes `members` (``(branches, display id)``) to `lines`, each cond branch in a
    box of its own (a cluster named ``next(names)``), nested as the conds are; `node_line(task,
    scope, group, flow)` gives a drawn node's attributes."""
    depth = len(prefix)
    for path, did in members:
        if len(path) == depth:
            lines.append(f"{indent}{dot_quote(did)} {node_line(*boxes[did], flow)};")
            if did in flow.expanded and boxes[did][1] is None:
                _function_lines(names, did, boxes[did], flow, indent, lines)
    inner = [m for m in members if len(m[0]) > depth]
    for cond, branch in dict.fromkeys(path[depth] for path, _ in inner):
        color, name = BRANCH_COLORS[branch], next(names)
        label, css = f"{cond}: {branch} branch", f"nbdist-{branch}-branch"
        box = dot_attrs(label=label, color=color, fontcolor=color, style="rounded,dashed", class_=css)
        lines.extend([f"{indent}subgraph {name} {{", f"{indent}  graph {box};"])
        here = [m for m in inner if m[0][depth] == (cond, branch)]
        nested_lines(names, here, boxes, flow, node_line, indent + "  ", lines, (*prefix, (cond, branch)))
        lines.append(f"{indent}}}")


def _function_lines(names, loop, box, flow, indent, lines):
    """Appends the condition and body of the loop op `loop` (its drawn node `box`), each in a box
    (a cluster named ``next(names)``) tied to the loop by a dotted line; each op that gives an
    output of the function says which. Their ops are drawn, not modelled."""
    task, _, (node,) = box
    fill = tint(task_color(task), 0.35)
    for what, function in loop_functions(node):
        if not function.nodes:
            continue
        ids = {n.name: f"{loop}:{what}:{n.name}" for n in function.nodes}
        gives = collections.defaultdict(list)  # op name -> the function's outputs it gives
        for k, out in enumerate(function.outputs):
            gives[out.rpartition(":")[0]].append(str(k))
        name = next(names)
        lines.append(f"{indent}subgraph {name} {{")
        times = flow.iterations.get(loop)
        ran = (
            ""
            if times is None or what == "condition"
            else f" (ran {times} time{'s' * (times != 1)} in this step)"
        )
        lines.append(
            f"{indent}  graph {dot_attrs(label=f'{what} of {loop}{ran}', **_STYLES['loop_function'])};"
        )
        for n in function.nodes:
            line = _function_node(n, loop, what, fill, flow, gives.get(n.name))
            lines.append(f"{indent}  {dot_quote(ids[n.name])} {line};")
        edges = {}
        for n in function.nodes:
            for inp in n.input:
                src = inp[1:] if inp.startswith("^") else inp.rpartition(":")[0]
                if src in ids:
                    edges.setdefault((ids[src], ids[n.name]), inp)
        for (src, dst), inp in edges.items():
            style = _STYLES["control" if inp.startswith("^") else "data"]
            lines.append(f"{indent}  {dot_quote(src)} -> {dot_quote(dst)} {dot_attrs(tooltip=inp, **style)};")
        lines.append(f"{indent}}}")
        # The box hangs below the loop: one dotted line to it, and each op that starts it a rank lower.
        fed = {dst for _, dst in edges}
        starts = [ids[n.name] for n in function.nodes if ids[n.name] not in fed]
        link = dot_attrs(lhead=name, tooltip=f"the {what} of {loop}", **_STYLES["loop_link"])
        lines.append(f"{indent}{dot_quote(loop)} -> {dot_quote(starts[0])} {link};")
        lines.extend(
            f'{indent}{dot_quote(loop)} -> {dot_quote(start)} [style="invis"];' for start in starts[1:]
        )


def _function_node(node, loop, what, fill, flow, gives):
    """The DOT attributes of one op of a loop's condition or body (`gives`: the function's outputs
    it gives, by index)."""
    leaf = node.name.rpartition("/")[2]
    if node.op == "Placeholder":  # what the function takes: a loop variable or a captured tensor
        label = node.name.partition("/")[2] if node.name.startswith(("body/", "cond/")) else node.name
    elif body_size(node) is not None:  # a loop in the body
        label = f"{leaf}\n{flow.loop_label(node)}"
    else:
        label = node.op if leaf == node.op else f"{leaf}\n{node.op}"
    tip = f"{node.name} ({node.op}): in the {what} of {loop}, run once per iteration on the loop's task"
    if gives:
        label += f"\n→ output {', '.join(gives)}"
        return dot_attrs(label=label, fillcolor=fill, tooltip=tip, penwidth=2, **_STYLES["function_op"])
    return dot_attrs(label=label, fillcolor=fill, tooltip=tip, **_STYLES["function_op"])
