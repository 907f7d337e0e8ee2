"""Graphs to DOT source and SVG: one box and one colour per task, Send/Recv edges, a legend.

Pure (no widgets, no kernel): `nbdist.notebook.widgets.graph_view` sets the result as widget
state. The input is anything `graph_model.graph_model` takes (a Graph, Session, Tensor,
traced RunMetadata or GraphDef). Name scopes start collapsed (one node per scope and task, with
its op count), each pair of tasks gets one edge label that says what crosses between them,
placed where it overlaps nothing, and `draw_graph` never lays out more than it can in about a
second. `fit_to_width` shrinks a drawing to its box, never its text below `MIN_TEXT_PX`.

    drawing = draw_graph(run_metadata)   # .svg, or .html with install hints when `dot` is missing
"""

import collections
import html
import itertools
import re
import shutil
import subprocess

from nbdist.notebook.dot_text import dot_attrs as _attrs
from nbdist.notebook.dot_text import dot_quote as _q
from nbdist.notebook.dot_text import padded_label as _padded
from nbdist.notebook.graph_control_flow import body_size, loop_functions
from nbdist.notebook.graph_model import (
    TRANSFER_COLOR,
    TRANSFER_OPS,
    VARIABLE_OPS,
    display_groups,
    fetch_name,
    format_bytes,
    format_spec,
    graph_model,
    mix_colors,
    open_scopes,
    split_fetch,
    task_color,
    task_label,
    task_sort_key,
    tint,
)
from nbdist.notebook.render_control_flow import ControlFlow, nested_lines

COLLAPSE_ABOVE = 0  # ops; graphs with more start with their name scopes collapsed (so: every one)
LABELLED_TRANSFERS_MAX = 40  # more task pairs than this keep their transfers' details in tooltips only
FAST_LAYOUT_ABOVE = 120  # drawn nodes; above this Graphviz trades some crossings for speed
MAX_LAYOUT_NODES = 400  # drawn nodes laid out at all by `draw_graph` (about 1 s)
FONT = "DejaVu Sans"
MIN_TEXT_PX = 10  # fitted to a width, a drawing never shrinks its nodes' text below this (it scrolls)

INSTALL_HINT = (
    "Graphviz's `dot` program was not found on PATH, so the graph cannot be drawn here. Install it "
    "with `sudo apt-get install graphviz` (Debian/Ubuntu), `conda install -c conda-forge graphviz` or "
    "`brew install graphviz` (macOS), then run the cell again. (`pip install graphviz` installs "
    "only the Python binding, not the `dot` program.) The DOT source follows; paste it into any "
    "Graphviz viewer, e.g. https://dreampuf.github.io/GraphvizOnline."
)


class GraphvizNotFoundError(RuntimeError):
    """Graphviz's `dot` binary is missing; carries the DOT source that could not be drawn."""

    def __init__(self, source):
        super().__init__(INSTALL_HINT)
        self.source = source


# -- DOT ----------------------------------------------------------------------------------------------
_GRAPH = {
    "rankdir": "TB",
    "fontname": FONT,
    "fontsize": 10,
    "labelloc": "t",
    "labeljust": "l",  # the caption at the left, in view when a wide drawing scrolls
    "forcelabels": "false",  # an edge label that has no free place is left out, never drawn over another
    "newrank": "true",
    "nodesep": 0.12,
    "ranksep": 0.4,
    "class": "nbdist-graph-root",
}
_NODE = {
    "fontname": FONT,
    "fontsize": 10,
    "shape": "box",
    "style": "rounded,filled",
    "height": 0.3,
    "margin": "0.08,0.03",
}
_EDGE = {"color": "#7a7a7a", "arrowsize": 0.6, "fontname": FONT, "fontsize": 9}
_TASK_BOX = {"style": "rounded,filled", "penwidth": 1.5, "fontsize": 11, "class": "nbdist-task"}
_FAST_LAYOUT = {"mclimit": 0.2, "nslimit": 2, "nslimit1": 2, "remincross": "false"}


def _short(name, limit=30):
    if len(name) <= limit:
        return name
    for k in (2, 1):
        tail = "/".join(name.split("/")[-k:])
        if len(tail) <= limit:
            return "…/" + tail
    return "…" + name[-limit:]


_STYLES = {  # DOT attributes per kind of drawn node or edge (the SVG gets the class too)
    "op": {"class": "nbdist-op"},
    "variable": {"shape": "cylinder", "penwidth": 2, "class": "nbdist-variable"},
    "scope": {"shape": "box3d", "style": "filled", "class": "nbdist-scope"},
    "loop": {"peripheries": 2, "penwidth": 1.2, "class": "nbdist-loop"},
    "transfer_op": {
        "shape": "cds",
        "fontsize": 10,
        "height": 0.25,
        "color": TRANSFER_COLOR,
        "class": "nbdist-transfer-op",
    },
    "cross": {"color": TRANSFER_COLOR, "style": "dashed", "penwidth": 1.5, "class": "nbdist-cross"},
    "control": {"style": "dashed", "color": "#b0b0b0"},
    "data": {},
    "transfer_again": {
        "color": TRANSFER_COLOR,
        "style": "dashed",
        "penwidth": 1.2,
        "class": "nbdist-transfer-again",
    },
    "transfer": {
        "color": TRANSFER_COLOR,
        "penwidth": 2.5,
        "fontcolor": TRANSFER_COLOR,
        "class": "nbdist-transfer",
    },
}


def _node_line(task, scope, group, flow):
    """The DOT attributes of one drawn node: an op, a variable, a collapsed scope, a transfer op or
    a loop (`flow`: what the view knows of conds and loops, a `ControlFlow`)."""
    first, color = group[0], task_color(task)
    variables = [n for n in group if n.op in VARIABLE_OPS]
    if scope is not None:
        types = collections.Counter(n.op for n in group).most_common(6)
        tip = f"{scope} on {task or 'no device'}: " + ", ".join(f"{c} x {t}" for t, c in types)
        if len(variables) == 1 and variables[0].name == scope:  # a variable with its read/assign ops
            label = f"{scope}\nVariable {format_spec(*variables[0].output[0])}"
            return _attrs(label=label, fillcolor=color, tooltip=tip, **_STYLES["variable"])
        extra = f" · {len(variables)} variables" if variables else ""
        what = f"{len(group)} ops"
        if scope in flow.conds:
            what = f"tf.cond: {what} (true/false branches)"
        else:
            extra += flow.inside(group)
        label = f"{scope}{'' if scope.endswith(']') else '/'}\n{what}{extra}"
        return _attrs(label=label, fillcolor=color, tooltip=tip + "\n(expand it above)", **_STYLES["scope"])
    tip = f"{first.name} ({first.op})\n{first.device or 'no device requested'}"
    if first.output:
        tip += "\nout: " + ", ".join(format_spec(*o) for o in first.output)
    if first.op in VARIABLE_OPS:
        label = f"{_short(first.name)}\nVariable {format_spec(*first.output[0])}"
        return _attrs(label=label, fillcolor=color, tooltip=tip, **_STYLES["variable"])
    if first.op in TRANSFER_OPS:
        word = {"_Send": "Send", "_Recv": "Recv", "_ControlTrigger": "trigger"}[first.op]
        tip += f"\nkey: {first.attr.get('key', '')}"
        return _attrs(label=word, fillcolor=color, tooltip=tip, **_STYLES["transfer_op"])
    if body_size(first) is not None:
        label = f"{_short(first.name)}\n{flow.loop_label(first)}"
        return _attrs(label=label, fillcolor=color, tooltip=tip + "\n(expand it above)", **_STYLES["loop"])
    name = _short(first.name)
    label = first.op if name == first.op else f"{name}\n{first.op}"  # "Softmax" named after its type
    return _attrs(label=label, fillcolor=color, tooltip=tip, **_STYLES["op"])


def _legend(title, tasks, mode, n_pairs, collapsed, loops=False):
    """The graph's caption: `title` over two columns, the tasks' colours beside what each line and
    shape means (an HTML-like label above the drawing, where it takes no room from the layout)."""
    swatches = []
    for task in tasks:
        name = html.escape(task or ("no device requested" if mode == "requested" else "unplaced"))
        swatches.append((f'<TD BGCOLOR="{task_color(task)}" WIDTH="22"> </TD>', name))
    keys = [("cylinder", "variable (state that lives on its task)")]
    if collapsed:
        keys.append(("3-D box", "collapsed name scope: N ops (expand above)"))
    if loops:
        keys.append(("double border", "loop: one op, its body runs per iteration (expand it above)"))
    red = f'<FONT COLOR="{TRANSFER_COLOR}">'
    if mode == "placed":
        keys.append((f"{red}<B>━━▶</B></FONT>", f"_Send → _Recv: a tensor crossing tasks ({n_pairs})"))
        if collapsed:
            keys.append((f"{red}╍╍▶</FONT>", "the same tensor, used here too"))
    else:
        keys.append((f"{red}╍╍▶</FONT>", "crosses tasks: becomes _Send/_Recv"))
    keys.append(("┅┅▶", "control dependency"))
    rows = []
    for i in range(max(len(swatches), len(keys))):
        cells = ""
        for pair, fmt in ((swatches, "{}"), (keys, "<TD>{}</TD>")):
            left, right = pair[i] if i < len(pair) else ("", "")
            cells += (fmt.format(left) if left else '<TD BORDER="0"></TD>') + (
                f'<TD ALIGN="LEFT">{right}</TD>' if right else '<TD BORDER="0"></TD>'
            )
        rows.append(f"<TR>{cells}</TR>")
    head = f'<TR><TD COLSPAN="4" BORDER="0"><FONT POINT-SIZE="13">{html.escape(title)}</FONT></TD></TR>'
    table = '<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0" CELLPADDING="3">'
    return table + head + "".join(rows) + "</TABLE>"


def graph_to_dot(
    obj, fetch=None, collapse=None, expanded=(), collapse_above=COLLAPSE_ABOVE, title=None, trace=None
):
    """DOT source of a graph: one box per task, coloured by task, with a legend.

    A `tf.cond`'s scope, collapsed, says so; expanded, its true and false branches are boxes of
    their own. A loop (`tf.while_loop`, ``map_fn``, ``scan``: one op) has a double border and
    says how big its body is and, traced, how often it ran; expanded, its condition and body are
    drawn in boxes beside it.

    Args:
        obj: anything `graph_model` takes (Graph, Session, RunMetadata, GraphDef) or a `GraphModel`.
        fetch: a Tensor, Operation or name (or a list): draw only the nodes it needs.
        collapse: draw each name scope as one node per task; None: when there are more
            than `collapse_above` ops.
        expanded: scopes to open while collapsing (their sub-scopes stay collapsed), and loop ops
            whose functions to draw (the scopes they are in open too).
        title: the graph's caption (default: says which view this is).
        trace: a traced step of this graph (a `tf.RunMetadata`, also of a local session): each
            loop says how many iterations it ran. A traced `obj` is its own.

    Returns:
        The DOT source (a str). In the placed view each ``_Send``/``_Recv`` pair is one red
        edge with class ``nbdist-transfer``, labelled with the tensor, dtype/shape and bytes.
    """
    obj, fetch = split_fetch(obj, fetch)
    return _dot(graph_model(obj, trace), fetch, collapse, expanded, collapse_above, title)[0]


def _dot(model, fetch, collapse, expanded, collapse_above, title):
    """``(DOT source, number of drawn nodes)``."""
    keep = model.needed(fetch) if fetch is not None else None
    nodes = [n for n in model.nodes if keep is None or n.name in keep]
    if collapse is None:
        collapse = sum(n.op not in TRANSFER_OPS for n in nodes) > collapse_above
    id_of, boxes = display_groups(model, nodes, collapse, expanded)
    flow = ControlFlow(model, nodes, collapse, open_scopes(model, expanded))
    kept = {n.name for n in nodes}
    pairs = [(s, r) for s, r in model.pairs() if s in kept and r in kept]
    tasks = sorted({t for t, _, _ in boxes.values()}, key=task_sort_key)
    if title is None:
        title = (
            f"Placed & partitioned: {len(tasks)} tasks, {len(pairs)} _Send/_Recv pairs"
            if model.mode == "placed"
            else "Requested devices (as recorded, before the master places the graph)"
        )
        if fetch is not None and not isinstance(fetch, (list, tuple, set)):
            title += f" — only what {fetch_name(fetch)} needs"
    scoped = any(scope for _, scope, _ in boxes.values())  # the legend explains 3-D boxes if any
    loops = [
        did for did, (_, scope, group) in boxes.items() if scope is None and body_size(group[0]) is not None
    ]
    functions = [f for did in loops if did in flow.expanded for _, f in loop_functions(boxes[did][2][0])]
    # Big graphs: cheaper crossing minimisation and ranking (seconds instead of minutes).
    fast = _FAST_LAYOUT if len(boxes) > FAST_LAYOUT_ABOVE else {}
    lines = [
        "digraph nbdist {",
        f"  graph {_attrs(**_GRAPH, **fast)};",
        f"  graph [label=<{_legend(title, tasks, model.mode, len(pairs), scoped, bool(loops))}>];",
        f"  node {_attrs(**_NODE)};",
        f"  edge {_attrs(**_EDGE)};",
    ]
    if functions:
        lines.append("  graph [compound=true];")  # an edge may end at a box (a loop's body)
    for i, task in enumerate(tasks):
        color = task_color(task)
        name = task or ("no device requested" if model.mode == "requested" else "unplaced")
        box = _attrs(label=name, fillcolor=tint(color), color=mix_colors(color, "#000000", 0.25), **_TASK_BOX)
        lines.append(f"  subgraph cluster_{i} {{")
        lines.append(f"    graph {box};")
        members = [(flow.path(group), did) for did, (t, _, group) in boxes.items() if t == task]
        names = map(f"cluster_{i}_{{}}".format, itertools.count())  # its inner boxes
        nested_lines(names, members, boxes, flow, _node_line, "    ", lines)
        lines.append("  }")
    lines.extend(_edge_lines(model, nodes, id_of, pairs))
    lines.append("}")
    return "\n".join(lines), len(boxes) + sum(len(f.nodes) for f in functions)


class Drawing:
    """What `draw_graph` made: ``source`` (DOT), ``svg`` (None if not drawn), ``html`` to show, ``nodes``."""

    def __init__(self, source, svg, html_text, nodes):
        self.source, self.svg, self.html, self.nodes = source, svg, html_text, nodes


def draw_graph(
    obj, fetch=None, collapse=None, expanded=(), title=None, max_nodes=MAX_LAYOUT_NODES, trace=None
):
    """Lays out `graph_to_dot`'s drawing, never raising for a missing or failing Graphviz.

    More than `max_nodes` drawn nodes are not laid out (Graphviz would need tens of seconds
    to minutes); the HTML then says how to shrink the view. Arguments as `graph_to_dot`.

    Returns:
        A `Drawing`; its ``html`` is the SVG, or install hints / the reason plus the DOT source.
    """
    obj, fetch = split_fetch(obj, fetch)
    source, n = _dot(graph_model(obj, trace), fetch, collapse, expanded, COLLAPSE_ABOVE, title)
    if n > max_nodes:
        why = (
            f"<b>{n} nodes are too many to lay out in about a second</b> (limit {max_nodes}): collapse name "
            "scopes, expand fewer of them, or show only what one fetch needs. "
            "(<code>render.dot_to_svg(source)</code> lays out any size, slowly.)"
        )
        return Drawing(source, None, _message_html(why, source), n)
    try:
        svg = dot_to_svg(source)
    except GraphvizNotFoundError:
        return Drawing(source, None, missing_dot_html(source), n)
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:  # dot crashed or timed out
        return Drawing(
            source, None, _message_html(f"<b>Graphviz failed:</b> {html.escape(str(e))}", source), n
        )
    return Drawing(source, svg, svg, n)


def _edge_lines(model, nodes, id_of, pairs):
    edges = {}
    for node in nodes:
        dst = id_of.get(node.name)
        for inp in node.input if dst is not None else ():
            control = inp.startswith("^")
            src_name = inp[1:] if control else inp.rpartition(":")[0]
            src = id_of.get(src_name)
            if src is None or src == dst:
                continue
            prev = edges.get((src, dst))
            if prev is None or (prev[0] and not control):
                edges[(src, dst)] = (control, inp, model.task[src_name], model.task[node.name])
    lines = []
    for (src, dst), (control, inp, src_task, dst_task) in edges.items():
        if src_task and dst_task and src_task != dst_task:  # requested view: the master will cut here
            attrs = _attrs(tooltip=f"{inp}: {src_task} → {dst_task}", **_STYLES["cross"])
        else:
            tip = f"control: {inp[1:]} before {dst}" if control else inp
            attrs = _attrs(tooltip=tip, **_STYLES["control" if control else "data"])
        lines.append(f"  {_q(src)} -> {_q(dst)} {attrs};")
    transfers = _transfer_edges(model, nodes, id_of, pairs)
    labels = _task_pair_labels(model, transfers)
    for i, (src, dst, recvs, again) in enumerate(transfers):
        if not recvs:  # only tensors already drawn arriving at another node: no bytes counted twice
            tip = "the same tensor(s), received once, also feed this node:\n" + "\n".join(again)
            lines.append(f"  {_q(src)} -> {_q(dst)} {_attrs(tooltip=tip, **_STYLES['transfer_again'])};")
            continue
        label, tip = labels.get(i) or ("", _transfer_label(model, recvs)[1])
        # An xlabel is placed after the layout, where it overlaps no node and no other label.
        text = {"xlabel": _padded(label)} if label else {}
        lines.append(f"  {_q(src)} -> {_q(dst)} {_attrs(**text, tooltip=tip, **_STYLES['transfer'])};")
    return lines


def _nbytes(model, recvs):
    return sum(model.pair_bytes(model.by_name[r]) or 0 for r in recvs)


def _short_task(task):
    """``/job:ps/task:0`` -> ``ps:0``."""
    return task.replace("/job:", "").replace("/task:", ":") or "no device"


def _task_pair_labels(model, transfers):
    """``{index in transfers: (label, tooltip)}``: one label per pair of tasks (sender, receiver),
    on its edge with the most bytes, saying what crosses between them in all; none above
    `LABELLED_TRANSFERS_MAX` pairs (hover an edge instead)."""
    by_pair = collections.defaultdict(list)
    for i, (_, _, recvs, _) in enumerate(transfers):
        if recvs:
            first = model.by_name[recvs[0]]
            by_pair[(task_label(first.attr.get("send_device")), model.task[first.name])].append(i)
    if len(by_pair) > LABELLED_TRANSFERS_MAX:
        return {}
    out = {}
    for (sender, receiver), edges in by_pair.items():
        recvs = [r for i in edges for r in transfers[i][2]]
        label, tip = _transfer_label(model, recvs)
        if label.count("\n") > 1 or " tensors · " in label:  # a total: say between which tasks
            label = f"{_short_task(sender)} → {_short_task(receiver)}:\n{label}"
        heaviest = max(edges, key=lambda i: _nbytes(model, transfers[i][2]))
        out[heaviest] = (label, tip)
    return out


def _transfer_edges(model, nodes, id_of, pairs):
    """``(src id, dst id, [recv names], [recvs drawn before])``: one per pair, or (collapsed) one per
    pair of drawn nodes; a tensor feeding several drawn nodes is counted on its first edge only."""
    if all(s in id_of for s, _ in pairs):
        return [(id_of[s], id_of[r], [r], []) for s, r in pairs]
    consumers = collections.defaultdict(dict)  # recv name -> drawn consumers (ordered set)
    for node in nodes:
        for inp in node.input if node.name in id_of else ():
            src = inp[1:] if inp.startswith("^") else inp.rpartition(":")[0]
            consumers[src][id_of[node.name]] = None
    merged = {}
    for send, recv in pairs:
        producer = model.by_name[send].input[0].rpartition(":")[0]
        if model.by_name[producer].op == "_ControlTrigger":
            producer = model.by_name[producer].input[0].lstrip("^")
        for i, dst in enumerate(consumers.get(recv, ()) if producer in id_of else ()):
            merged.setdefault((id_of[producer], dst), ([], []))[min(i, 1)].append(recv)
    return [(src, dst, recvs, again) for (src, dst), (recvs, again) in merged.items()]


def _transfer_label(model, recvs):
    """Edge label and tooltip for the tensors `recvs` receive (tensor, dtype/shape, bytes): one
    tensor by name, more as a count and their bytes; control signals as what they wait for."""
    tips = []
    for name in recvs:
        node = model.by_name[name]
        tensor = node.attr.get("tensor_name", "")
        spec = format_spec(node.attr.get("tensor_type"), node.attr.get("tensor_shape"))
        tips.append(f"{tensor} {spec} {format_bytes(model.pair_bytes(node))}  ({node.attr.get('key', '')})")
    data = [
        model.by_name[r] for r in recvs if not model.by_name[r].attr.get("tensor_name", "").startswith("^")
    ]
    controls = [model.by_name[r] for r in recvs if model.by_name[r] not in data]
    parts = []
    if len(data) == 1:
        spec = format_spec(data[0].attr.get("tensor_type"), data[0].attr.get("tensor_shape"))
        parts.append(
            f"{_short(data[0].attr['tensor_name'], 32)}\n{spec} · {format_bytes(model.pair_bytes(data[0]))}"
        )
    elif data:
        parts.append(f"{len(data)} tensors · {format_bytes(sum(model.pair_bytes(n) or 0 for n in data))}")
    if len(controls) == 1 and not data:  # one signal may stand for several ops of the sending task
        waited = controls[0].attr.get("control_inputs") or [controls[0].attr["tensor_name"][1:]]
        more = f" +{len(waited) - 1}" if len(waited) > 1 else ""
        parts.append(f"after {_short(waited[0], 32)}{more}\n(control, 0 B)")
    elif controls:
        parts.append(f"{len(controls)} control signal{'s' * (len(controls) > 1)} (0 B)")
    first = model.by_name[recvs[0]]
    head = f"_Send → _Recv, {task_label(first.attr.get('send_device'))} → {model.task[first.name]}:\n"
    return "\n".join(parts), head + "\n".join(tips)


def dot_to_svg(source, timeout_s=60.0):
    """Lays out DOT `source` with Graphviz's `dot`; returns the ``<svg>`` element as a str.

    Raises:
        GraphvizNotFoundError: `dot` is not on PATH (the error carries `source`).
        RuntimeError: `dot` failed (its message quoted).
    """
    dot = shutil.which("dot")
    if dot is None:
        raise GraphvizNotFoundError(source)
    proc = subprocess.run(
        [dot, "-Tsvg"], input=source.encode(), capture_output=True, timeout=timeout_s, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"graphviz `dot` failed (exit {proc.returncode}): {proc.stderr.decode(errors='replace')[:800]}"
        )
    svg = proc.stdout.decode()
    return svg[svg.find("<svg") :]


def fit_to_width(svg, min_text_px=MIN_TEXT_PX):
    """`svg` (from `dot_to_svg`) styled to shrink to its container's width, but never below the
    scale at which its nodes' text is `min_text_px` CSS pixels tall: a wider drawing keeps that
    size and its container scrolls (give the container ``overflow:auto``)."""
    view_box = re.search(r'viewBox="[-\d.]+ [-\d.]+ ([\d.]+) ', svg)
    if view_box is None:
        return svg
    min_px = float(view_box.group(1)) * min_text_px / _NODE["fontsize"]  # user units are points
    return svg.replace("<svg ", f'<svg style="max-width:100%;height:auto;min-width:{min_px:.0f}px" ', 1)


def missing_dot_html(source):
    """HTML saying how to install Graphviz, followed by the DOT `source`."""
    return _message_html(f"<b>Graph not drawn:</b> {html.escape(INSTALL_HINT)}", source)


def _message_html(message, source):
    return (
        '<div class="nbdist-graph-missing" style="border:1px solid #e0b000;background:#fffbe6;padding:8px">'
        f'{message}<details open><summary>DOT source</summary><pre style="max-height:300px;overflow:auto;'
        f'font-size:11px">{html.escape(source)}</pre></details></div>'
    )


# -- the cluster's status table (LocalCluster.status rows) -------------------------------------------
def _rss_text(row):
    return f"{row['rss_bytes'] / 2**20:.0f} MB" if row.get("rss_bytes") else "-"


def _threads_text(row):
    """The task's BLAS threads and what decided them (`runtime.threads`), e.g. ``1 (2 cores / 3 tasks
    on this host)``; ``-`` for a task that did not say."""
    threads = row.get("threads") if row.get("alive") else None
    if not threads or threads.get("blas") is None:
        return "-"
    return f"{threads['blas']} ({threads.get('reason', '')})"


def _summary(row):
    """(alive text, ops count, variables text) of one status row."""
    age = row.get("heartbeat_age_s")
    alive = (
        ("yes" + (f" ({age:.1f} s ago)" if age is not None else ""))
        if row["alive"]
        else f"no: {row.get('error', 'no answer')}"
    )
    ops = sum(row.get("ops_placed", {}).values()) if row["alive"] else "-"
    variables = row.get("variables", {})
    nbytes = sum(v.get("nbytes", 0) for v in variables.values())
    var_text = f"{len(variables)} ({nbytes} B)" if row["alive"] else "-"
    return alive, ops, var_text


_COLUMNS = ("job", "index", "address", "pid", "alive", "RSS", "BLAS threads", "ops", "variables")


def _cells(row, alive, ops, var_text):
    """One row of the table, in `_COLUMNS`' order."""
    job, index, address, pid = row["job"], row["index"], row["address"], row["pid"] or "-"
    return [job, index, address, pid, alive, _rss_text(row), _threads_text(row), ops, var_text]


def status_text(rows, cluster=None):
    """The status rows as a plain-text table (for terminals and saved outputs)."""
    table = [list(_COLUMNS)]
    for r in rows:
        alive, ops, var_text = _summary(r)
        table.append(_cells(r, alive, ops, var_text))
    widths = [max(len(str(row[i])) for row in table) for i in range(len(_COLUMNS))]
    lines = ["  ".join(str(v).ljust(w) for v, w in zip(row, widths)).rstrip() for row in table]
    title = repr(cluster) if cluster is not None else "cluster"
    return "\n".join([title, *lines])


# A row's colour: answering, stopped on purpose (`LocalCluster.stop`), or down for any other reason.
STATUS_COLORS = {"alive": "#2a7", "stopped": "#888", "failed": "#c33"}


def status_state(row):
    """``"alive"``, ``"stopped"`` (its error is ``"stopped"``: stopped on purpose) or ``"failed"``."""
    if row["alive"]:
        return "alive"
    return "stopped" if row.get("error") == "stopped" else "failed"


def status_html(rows, cluster=None):
    """The status rows as an HTML table (the widget's value): green rows answer, grey ones were
    stopped on purpose, red ones died or do not answer."""
    head = "".join(f"<th>{c}</th>" for c in _COLUMNS)
    body = []
    for r in rows:
        alive, ops, var_text = _summary(r)
        color = STATUS_COLORS[status_state(r)]
        cells = _cells(r, alive, ops, var_text)
        tds = "".join(f"<td>{html.escape(str(v))}</td>" for v in cells)
        body.append(f'<tr style="color:{color}">{tds}</tr>')
    title = html.escape(repr(cluster)) if cluster is not None else "cluster"
    return (
        f"<div><b>{title}</b><table><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


class StatusSnapshot:
    """The status of one moment as a table that stays as it is (HTML, and text where HTML is not
    shown): a record, where the live view (``LocalCluster.status_view``) changes on.

    Args:
        rows: ``LocalCluster.status()`` rows.
        cluster: what the title names (its repr now).
    """

    def __init__(self, rows, cluster=None):
        self.rows = rows
        self.html = status_html(rows, cluster)
        self.text = status_text(rows, cluster)

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/plain": self.text, "text/html": self.html}

    def __repr__(self):
        return self.text
