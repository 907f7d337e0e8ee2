"""What every view of a graph is drawn from: tasks, their colours, and the normalised graph.

Three inputs describe a graph (`graph_model` normalises them once into a `GraphModel`):

- a `tf.Graph` (or a Session, Tensor or Operation: their graph): the *requested* devices,
  as recorded by ``tf.device`` scopes, before the master placed anything;
- a traced `tf.RunMetadata` of a distributed step: the *placed & partitioned* graph, one
  partition per task, where each cross-task edge became a ``_Send``/``_Recv`` pair;
- a GraphDef dict (``{"node": [...]}``);
- a ``trace`` event (`report_trace`): a step another client (a ``%%dtf_worker`` task) traced,
  as plain data; drawn like its RunMetadata;
- real TensorFlow's ``RunMetadata`` and ``GraphDef`` protos (a traced step of a TF 1.x /
  ``compat.v1`` cluster), read by `nbdist.export.tf_protos` into the two forms above.

Colours encode tasks: one hue per job (ps orange, worker blue, chief green, ...) and one
shade per task, the same before and after placement. Name scopes (and series of numbered
siblings, ``layer1``..``layer9``) can be collapsed into one node per task. Pure data: the
drawing is in `nbdist.notebook.render` (graphs), `placement_chart`, `dashboard_plot` and `trace`.
"""

import collections
import difflib
import re

from nbdist.export.tf_protos import as_nbdist
from nbdist.graph.device import DeviceSpec
from nbdist.graph.graph import Operation, Tensor, graph_element
from nbdist.graph.graph_def import node_def_of, nodes_from_graph_def
from nbdist.notebook.graph_control_flow import loop_iterations

VARIABLE_OPS = frozenset({"VariableV2", "Variable", "VarHandleOp"})
TRANSFER_OPS = frozenset({"_Send", "_Recv", "_ControlTrigger"})
SERIES_MIN = 4  # sibling scopes numbered alike (layer1, layer2, ...) collapse into one series node
TRANSFER_COLOR = "#d62728"
UNPLACED_COLOR = "#e8e8e8"
_SERIES_RE = re.compile(r"(.+?)_?(\d*)")
_JOB_ORDER = ("chief", "master", "ps", "worker", "evaluator", "localhost", "local")
# One hue per job, one shade per task: eight shades each, chosen greedily in CIELAB (lightness 62-90,
# hue within 12 degrees of the job's) so that each differs most from those before it; black text
# stays readable on all. Tasks 0 and 1 of a job differ by a colour distance (`color_distance`) of
# 24-38, any two of the first eight by at least 12 (more than 2 is a just-noticeable difference).
_PS = ("#f8ba8c", "#e57845", "#e7a343", "#ac9174", "#cf8361", "#fbdebe", "#bf8c4a", "#faa166")
_CHIEF = ("#a0d49a", "#1bab61", "#7cfbaa", "#87c055", "#8b9b7a", "#7da05c", "#d7e8c4", "#b8f396")
_LOCAL = ("#bdbafd", "#a882eb", "#5994fe", "#8b95b8", "#e6d6fb", "#a489cf", "#7994db", "#9c9dfb")
_SHADES = {
    "ps": _PS,
    "worker": ("#69ccfd", "#699db1", "#b0e5fa", "#1a9fe1", "#0ea3c8", "#9cbfdf", "#659bc6", "#6abbd8"),
    "chief": _CHIEF,
    "master": _CHIEF,
    "localhost": _LOCAL,
    "local": _LOCAL,
}
_OTHER_SHADES = [  # other jobs (e.g. evaluator), by a hash of the name: pink, olive, teal, salmon
    ("#fba9cd", "#e16cbf", "#f46394", "#b18ba3", "#fad1eb", "#ca7db1", "#de7e9a", "#fa85bd"),
    ("#d8c683", "#bc8f22", "#e5e971", "#9aa22a", "#a79373", "#fcca67", "#989a50", "#e6e5be"),
    ("#61d9d1", "#6ca094", "#1ffedd", "#1ea892", "#b0edf0", "#24fbfd", "#0facb2", "#20d2b7"),
    ("#ffad97", "#f46a67", "#fc8e56", "#ba8a86", "#f9ceba", "#d97c76", "#d2825a", "#fc8c71"),
]


# -- tasks and colours --------------------------------------------------------------------------
def task_label(device):
    """``/job:J/task:T`` of a (possibly partial) device; ``""`` when no job was requested."""
    try:
        spec = DeviceSpec.from_string(device or "")
    except (TypeError, ValueError):
        return str(device)
    if spec.job is None:
        return ""
    return f"/job:{spec.job}" + ("" if spec.task is None else f"/task:{spec.task}")


def _spec(task):
    """The `DeviceSpec` of a task label; names that are not devices (``"notebook"``) give an empty one."""
    try:
        return DeviceSpec.from_string(task or "")
    except (TypeError, ValueError):
        return DeviceSpec()


def task_sort_key(task):
    """Display order: chief/master, ps, worker, other jobs; tasks by index; unnamed last."""
    spec = _spec(task)
    job = spec.job or ""
    rank = _JOB_ORDER.index(job) if job in _JOB_ORDER else len(_JOB_ORDER)
    return (not task, rank, job, -1 if spec.task is None else spec.task, task or "")


def mix_colors(a, b, t):
    """``#rrggbb`` a fraction `t` of the way from colour `a` to colour `b`."""
    ca, cb = (tuple(int(c[i : i + 2], 16) for i in (1, 3, 5)) for c in (a, b))
    return "#" + "".join(f"{round(x + (y - x) * t):02x}" for x, y in zip(ca, cb))


def task_color(task):
    """The fill colour of a task label (``/job:ps/task:1``); grey when no task is known.

    Tasks past the eighth of a job reuse the shades, each round a little lighter."""
    spec = _spec(task)
    if spec.job is None:
        return UNPLACED_COLOR
    shades = _SHADES.get(spec.job) or _OTHER_SHADES[sum(map(ord, spec.job)) % len(_OTHER_SHADES)]
    index = spec.task or 0
    return mix_colors(shades[index % len(shades)], "#ffffff", 0.12 * (index // len(shades)))


def _lab(color):
    """CIELAB (D65) of ``#rrggbb``."""
    linear = []
    for i in (1, 3, 5):
        c = int(color[i : i + 2], 16) / 255
        linear.append(((c + 0.055) / 1.055) ** 2.4 if c > 0.04045 else c / 12.92)
    r, g, b = linear
    xyz = (
        (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047,
        0.2126 * r + 0.7152 * g + 0.0722 * b,
        (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883,
    )
    fx, fy, fz = (t ** (1 / 3) if t > 216 / 24389 else (24389 / 27 * t + 16) / 116 for t in xyz)
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


def color_distance(a, b):
    """How different two ``#rrggbb`` colours look: CIE76 delta E, the distance in CIELAB (about 2.3
    is just noticeable; shades of one job's tasks differ by 12 or more)."""
    return sum((x - y) ** 2 for x, y in zip(_lab(a), _lab(b))) ** 0.5


def tint(color, amount=0.6):
    """`color` mixed towards white (box backgrounds)."""
    return mix_colors(color, "#ffffff", amount)


def format_bytes(n):
    if n is None:
        return "?"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def format_spec(dtype, shape):
    """``float32[3,2]`` (``?`` for unknown dims, ``[...]`` for unknown rank)."""
    name = getattr(dtype, "name", dtype)
    dims = getattr(shape, "dims", shape)
    if dims is None:
        return f"{name}[...]"
    return f"{name}[{','.join('?' if d is None else str(d) for d in dims)}]"


def nbytes_of(dtype, shape):
    """Bytes of a tensor of `dtype`/`shape`, or None if the shape is not fully known."""
    dims = getattr(shape, "dims", shape)
    if dims is None or any(d is None for d in dims):
        return None
    count = 1
    for d in dims:
        count *= d
    return count * getattr(dtype, "size", 0)


# -- the graph, normalised ------------------------------------------------------------------------
class GraphModel:
    """The nodes of one view of a graph, each with its task.

    Attributes:
        nodes: `NodeDef`s; ``mode`` is ``"requested"`` or ``"placed"``.
        task: node name -> task label (``""`` when no device was requested).
        transfer_bytes: rendezvous key -> bytes measured in a traced step.
        iterations: loop op name -> iterations it ran in a traced step (`loop_iterations`).
    """

    def __init__(self, nodes, mode, transfer_bytes=None, iterations=None):
        self.nodes = list(nodes)
        self.mode = mode
        self.by_name = {n.name: n for n in self.nodes}
        self.task = {n.name: task_label(n.device) for n in self.nodes}
        self.transfer_bytes = dict(transfer_bytes or {})
        self.iterations = dict(iterations or {})
        self._sends = {n.attr.get("key"): n.name for n in self.nodes if n.op == "_Send"}

    def tasks(self):
        return sorted(set(self.task.values()), key=task_sort_key)

    def pairs(self):
        """``(send name, recv name)`` of each ``_Send``/``_Recv`` pair, by rendezvous key."""
        return [
            (self._sends[n.attr.get("key")], n.name)
            for n in self.nodes
            if n.op == "_Recv" and n.attr.get("key") in self._sends
        ]

    def pair_bytes(self, recv):
        """Bytes one ``_Recv`` gets per step: measured when traced, else from its dtype/shape."""
        measured = self.transfer_bytes.get(recv.attr.get("key"))
        if measured is not None:
            return measured
        return nbytes_of(recv.attr.get("tensor_type"), recv.attr.get("tensor_shape"))

    def needed(self, fetches):
        """Names of the nodes `fetches` depend on (a ``_Recv`` depends on its ``_Send``).

        Raises:
            ValueError: a fetch that is not a node of this graph (naming close matches).
        """
        names = [fetch_name(f) for f in (fetches if isinstance(fetches, (list, tuple, set)) else [fetches])]
        for name in names:
            if name not in self.by_name:
                close = difflib.get_close_matches(name, list(self.by_name), n=3)
                hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
                raise ValueError(f"fetch {name!r} is not a node of this graph{hint}")
        seen, todo = set(), list(names)
        while todo:
            name = todo.pop()
            if name in seen or name not in self.by_name:
                continue
            seen.add(name)
            node = self.by_name[name]
            todo.extend(i[1:] if i.startswith("^") else i.rpartition(":")[0] for i in node.input)
            if node.op == "_Recv" and node.attr.get("key") in self._sends:
                todo.append(self._sends[node.attr["key"]])
        return seen


def fetch_name(fetch):
    """The node name of a Tensor, Operation, variable or name (``"x:0"`` -> ``"x"``)."""
    fetch = graph_element(fetch)
    if hasattr(fetch, "op") and hasattr(fetch, "value_index"):  # a Tensor
        fetch = fetch.op
    name = getattr(fetch, "name", fetch)
    if not isinstance(name, str):
        raise TypeError(f"fetch must be a Tensor, Operation, variable or node name, got {fetch!r}")
    return name.rpartition(":")[0] if ":" in name else name


def split_fetch(obj, fetch):
    """``(graph source, fetch)``: drawing a Tensor, Operation or variable means its graph,
    only what it needs."""
    if fetch is None and isinstance(graph_element(obj), (Tensor, Operation)):
        return fetch_graph(obj), obj
    return obj, fetch


def fetch_graph(fetch):
    return graph_element(fetch).graph


def graph_model(obj, trace=None):
    """A `GraphModel` of a Graph, Session, Tensor/Operation, RunMetadata, GraphDef dict or ``trace``
    event; or of real TensorFlow's ``RunMetadata`` / ``GraphDef`` proto.

    Args:
        obj: what to draw.
        trace: a traced step of that graph (a `tf.RunMetadata`, also of a local session, or a
            ``trace`` event) whose loop iterations the view shows; a traced `obj` is its own.

    Raises:
        ValueError: a RunMetadata without partition graphs (not a traced distributed step).
        TypeError: anything else.
    """
    if isinstance(obj, GraphModel):
        if trace is None:
            return obj
        iterations = {**obj.iterations, **loop_iterations(trace)}
        return GraphModel(obj.nodes, obj.mode, obj.transfer_bytes, iterations)
    obj = as_nbdist(obj)
    if hasattr(obj, "partition_graphs") and hasattr(obj, "step_stats"):
        transfers = [getattr(d, "transfers", None) for d in obj.step_stats.dev_stats]
        return _placed_model(obj.partition_graphs, transfers, loop_iterations(trace or obj))
    if isinstance(obj, dict) and obj.get("kind") == "trace":  # a task's traced step (`report_trace`)
        transfers = [d.get("transfers") for d in obj.get("dev_stats", [])]
        return _placed_model(obj.get("partition_graphs"), transfers, loop_iterations(trace or obj))
    iterations = loop_iterations(trace)
    graph = obj if hasattr(obj, "get_operations") else getattr(obj, "graph", None)
    if graph is not None and hasattr(graph, "get_operations"):
        return GraphModel([node_def_of(op) for op in graph.get_operations()], "requested", None, iterations)
    if isinstance(obj, dict) and "node" in obj:
        nodes = nodes_from_graph_def(obj)
        mode = "placed" if any(n.op in TRANSFER_OPS for n in nodes) else "requested"
        return GraphModel(nodes, mode, None, iterations)
    raise TypeError(
        f"cannot draw {type(obj).__name__}: pass a tf.Graph, a tf.Session, a traced tf.RunMetadata, "
        "a GraphDef dict or a 'trace' event (or real TensorFlow's RunMetadata / GraphDef proto)"
    )


def _placed_model(partition_graphs, transfers_per_task, iterations):
    parts = list(partition_graphs or [])
    if not parts:
        raise ValueError(
            "this RunMetadata has no partition graphs: it is not a traced step of a distributed "
            "session. Run a step of tf.Session(server.target) with options=tf.RunOptions("
            "trace_level=tf.RunOptions.FULL_TRACE), run_metadata=md (a local Session has no partitions)"
        )
    nodes = [n for part in parts for n in nodes_from_graph_def(part)]
    measured = {}
    for transfers in transfers_per_task:
        for t in transfers or []:
            if t.get("op") == "_Recv" or t.get("key") not in measured:
                measured[t.get("key")] = t.get("bytes")
    return GraphModel(nodes, "placed", measured, iterations)


# -- collapsing name scopes -------------------------------------------------------------------------
def scope_sizes(model, names=None):
    """``{scope: number of ops under it}`` for every name scope (transfer ops excluded)."""
    sizes = collections.Counter()
    for node in model.nodes:
        if node.op in TRANSFER_OPS or (names is not None and node.name not in names):
            continue
        parts = node.name.split("/")
        for k in range(1, len(parts)):
            sizes["/".join(parts[:k])] += 1
    return sizes


def _group_of(name, scopes, expanded):
    """The collapsed scope `name` is drawn in, or `name` itself."""
    parts = name.split("/")
    for k in range(1, len(parts) + 1):
        prefix = "/".join(parts[:k])
        if prefix in scopes and prefix not in expanded:
            return prefix
    return name


def _series(keys, expanded):
    """``{name: series}`` for siblings numbered alike (``layer1``..``layer9`` -> ``layer[1-9]``, also
    ``Add``, ``Add_1``, ...), as TensorBoard groups them; runs of at least `SERIES_MIN`, unless expanded."""
    by_base = collections.defaultdict(list)
    for key in keys:
        parent, _, leaf = key.rpartition("/")
        m = _SERIES_RE.fullmatch(leaf)
        by_base[(parent, m.group(1))].append((int(m.group(2) or 0), key))
    out = {}
    for (parent, base), members in by_base.items():
        numbers = [n for n, _ in members]
        name = f"{parent + '/' if parent else ''}{base}[{min(numbers)}-{max(numbers)}]"
        if len(members) >= SERIES_MIN and name not in expanded:
            out.update((key, name) for _, key in members)
    return out


def collapsible_scopes(model):
    """``{scope or series name: number of ops}`` that a collapsed view can draw as one node."""
    sizes = scope_sizes(model)
    out = {s: n for s, n in sizes.items() if n > 1}
    for key, name in _series(set(sizes), ()).items():
        out[name] = out.get(name, 0) + sizes[key]
    return out


def _series_per_task(model, keys, expanded):
    """``{(task, key): series}`` for the keys of a series (`_series`, over all tasks) of which a
    task draws two or more: ``replica_3``, one per worker, stays itself on its worker."""
    series = _series(set(keys.values()), expanded)
    members = collections.defaultdict(set)  # (task, series) -> its keys drawn on that task
    for name, key in keys.items():
        if key in series:
            members[(model.task[name], series[key])].add(key)
    return {(task, k): s for (task, s), ks in members.items() if len(ks) > 1 for k in ks}


def open_scopes(model, expanded):
    """`expanded` as a set, with the scopes each op it names is in (expanding a loop op, to
    show its body, opens the scopes around it)."""
    expanded = set(expanded)
    for name in [e for e in expanded if e in model.by_name]:
        parts = name.split("/")
        expanded.update("/".join(parts[:k]) for k in range(1, len(parts)))
    return expanded


def display_groups(model, nodes, collapse, expanded):
    """How `nodes` are drawn: each alone, or (collapsing) in one group per scope/series and task.

    `expanded` names scopes (or series) to open; naming an op (a loop, to show its body)
    opens the scopes it is in.

    Returns:
        ``(node name -> display id, display id -> (task, scope or None, member NodeDefs))``.
        Collapsing drops the transfer ops: the renderer draws each flow as an edge instead.
    """
    expanded = open_scopes(model, expanded)
    scopes = scope_sizes(model, {n.name for n in nodes}) if collapse else {}
    keys = {n.name: _group_of(n.name, scopes, expanded) for n in nodes if n.op not in TRANSFER_OPS}
    series = _series_per_task(model, keys, expanded) if collapse else {}
    series_names = set(series.values())
    members = collections.defaultdict(list)
    for node in nodes:
        if collapse and node.op in TRANSFER_OPS:
            continue  # collapsed views draw each task-to-task flow as one edge instead
        task = model.task[node.name]
        key = keys.get(node.name, node.name)
        key = series.get((task, key), key)
        grouped = key in scopes or key in series_names
        members[(f"{key}@{task}", key) if grouped else (node.name, None)].append(node)
    id_of, boxes = {}, {}
    for (did, scope), group in members.items():
        if scope is not None and len(group) == 1:
            did, scope = group[0].name, None
        boxes[did] = (model.task[group[0].name], scope, group)
        for node in group:
            id_of[node.name] = did
    return id_of, boxes
