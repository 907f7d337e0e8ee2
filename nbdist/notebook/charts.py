"""Charts: which task holds what (placement) and how training goes (metrics), as matplotlib Figures.

Pure like `nbdist.notebook.render` (whose graph model and task colours it uses): data in,
HTML tables and `matplotlib.figure.Figure` out; the widgets set them as state.

    rows = placement_summary(run_metadata)      # per task: ops, variables, bytes on the wire
    png = figure_png(placement_figure(rows))

    history = MetricsHistory()                  # fed metric events from any thread
    png = figure_png(dashboard_figure(history))
"""

import collections
import html
import io
import threading
import time

from nbdist.notebook.graph_model import (
    TRANSFER_OPS,
    VARIABLE_OPS,
    format_bytes,
    format_spec,
    graph_model,
    nbytes_of,
    task_color,
    task_sort_key,
)


# -- placement ------------------------------------------------------------------------------------------
def placement_summary(obj):
    """Per task: its ops by type, its variables with their bytes, and bytes sent/received per step.

    Args:
        obj: anything `graph_model` takes. From a traced RunMetadata the bytes are measured
            (or read from each ``_Recv``'s dtype/shape); from a Graph they are the estimate of
            what would cross tasks given the requested devices.

    Returns:
        A list of dicts, one per task in display order: ``task``, ``color``, ``ops`` (count),
        ``op_types`` (Counter), ``variables`` (list of ``(name, "float32[3,2]", nbytes)``),
        ``param_bytes``, ``sent_bytes``, ``recv_bytes``, ``sends``, ``recvs``, ``measured``.
    """
    model = graph_model(obj)
    rows = {
        t: {
            "task": t,
            "color": task_color(t),
            "ops": 0,
            "op_types": collections.Counter(),
            "variables": [],
            "param_bytes": 0,
            "sent_bytes": 0,
            "recv_bytes": 0,
            "sends": 0,
            "recvs": 0,
            "measured": model.mode == "placed",
        }
        for t in model.tasks()
    }
    for node in model.nodes:
        row = rows[model.task[node.name]]
        if node.op in TRANSFER_OPS:
            continue
        row["ops"] += 1
        row["op_types"][node.op] += 1
        if node.op in VARIABLE_OPS and node.output:
            nbytes = nbytes_of(*node.output[0])
            row["variables"].append((node.name, format_spec(*node.output[0]), nbytes))
            row["param_bytes"] += nbytes or 0
    for src_task, dst_task, nbytes in _crossings(model):
        rows[src_task]["sent_bytes"] += nbytes or 0
        rows[src_task]["sends"] += 1
        rows[dst_task]["recv_bytes"] += nbytes or 0
        rows[dst_task]["recvs"] += 1
    return list(rows.values())


def _crossings(model):
    """``(from task, to task, bytes)`` per tensor crossing tasks in one step."""
    if model.mode == "placed":
        return [(model.task[s], model.task[r], model.pair_bytes(model.by_name[r])) for s, r in model.pairs()]
    seen, out = set(), []
    for node in model.nodes:
        dst = model.task[node.name]
        for inp in node.input:
            src_name = inp[1:] if inp.startswith("^") else inp.rpartition(":")[0]
            src = model.task.get(src_name, "")
            if not src or not dst or src == dst or (inp, dst) in seen:
                continue
            seen.add((inp, dst))
            producer = model.by_name[src_name]
            nbytes = 0 if inp.startswith("^") else nbytes_of(*producer.output[int(inp.rpartition(":")[2])])
            out.append((src, dst, nbytes))
    return out


_SWATCH = "display:inline-block;width:12px;height:12px;border:1px solid #888;"


def placement_html(rows):
    """A compact HTML table of `placement_summary` rows."""
    head = (
        "<tr><th>task</th><th>ops</th><th>most common op types</th><th>variables (what it holds)</th>"
        "<th>params</th><th>sent / step</th><th>received / step</th></tr>"
    )
    body = []
    for r in rows:
        swatch = f'<span style="{_SWATCH}background:{r["color"]}"></span>'
        types = ", ".join(f"{t} x{c}" for t, c in r["op_types"].most_common(4))
        variables = (
            "<br>".join(
                f"<code>{html.escape(n)}</code> {s} · {format_bytes(b)}" for n, s, b in r["variables"]
            )
            or "—"
        )
        est = "" if r["measured"] else " (est.)"
        body.append(
            f"<tr><td>{swatch} <b>{html.escape(r['task'] or 'no device')}</b></td><td>{r['ops']}</td>"
            f"<td>{html.escape(types)}</td><td>{variables}</td><td>{format_bytes(r['param_bytes'])}</td>"
            f"<td>{format_bytes(r['sent_bytes'])} in {r['sends']}{est}</td>"
            f"<td>{format_bytes(r['recv_bytes'])} in {r['recvs']}{est}</td></tr>"
        )
    style = "border-collapse:collapse;font-size:12px"
    return (
        f'<table class="nbdist-placement-table" style="{style}" border="1" cellpadding="4">'
        f"{head}{''.join(body)}</table>"
    )


def placement_figure(rows):
    """A matplotlib Figure: parameter bytes per task, and bytes sent/received per step."""
    from matplotlib.figure import Figure  # noqa: PLC0415 - matplotlib is imported only when drawing
    from matplotlib.ticker import MaxNLocator  # noqa: PLC0415

    fig = Figure(figsize=(9, 1.2 + 0.45 * len(rows)), dpi=90, layout="constrained")
    ax_params, ax_wire = fig.subplots(1, 2, sharey=True)
    labels = [r["task"] or "no device" for r in rows]
    y = range(len(rows))
    colors = [r["color"] for r in rows]
    ax_params.barh(y, [r["param_bytes"] for r in rows], color=colors, edgecolor="#555")
    ax_params.set(yticks=list(y), yticklabels=labels, title="parameters held (bytes)")
    ax_params.invert_yaxis()
    height = 0.38
    ax_wire.barh(
        [i - height / 2 for i in y],
        [r["sent_bytes"] for r in rows],
        height,
        color=colors,
        edgecolor="#555",
        label="sent",
    )
    ax_wire.barh(
        [i + height / 2 for i in y],
        [r["recv_bytes"] for r in rows],
        height,
        color=colors,
        edgecolor="#555",
        hatch="///",
        label="received",
    )
    ax_wire.set(title="bytes per step over the wire")
    ax_wire.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
    for ax in (ax_params, ax_wire):
        for bars in ax.containers:
            ax.bar_label(bars, labels=[format_bytes(b.get_width()) for b in bars], fontsize=8, padding=2)
        ax.margins(x=0.18)
        ax.grid(axis="x", alpha=0.3)
        ax.xaxis.set_major_locator(MaxNLocator(nbins=4))
        ax.xaxis.set_major_formatter(lambda v, _: format_bytes(v))
    return fig


def figure_png(fig):
    """PNG bytes of a matplotlib Figure."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


# -- training metrics -------------------------------------------------------------------------------------
class MetricsHistory:
    """``metric`` events accumulated per task, for the dashboard (thread-safe).

    An event is ``{"kind": "metric", "task": ..., "step": global step, "time": t,
    "metrics": {"loss": ..., "staleness": ..., "dropped": ..., "global_step": ...}}``.
    Steps/s per task counts that task's reports per second (one report per local step),
    or uses ``metrics["local_step"]`` when given.

    Args:
        max_points: events kept per task (the oldest are forgotten).
        rate_window_s: the window steps/s are averaged over.
    """

    def __init__(self, max_points=5000, rate_window_s=3.0):
        self._lock = threading.Lock()
        self._max_points = max_points
        self.rate_window_s = rate_window_s
        self.t0 = None
        self.count = 0
        self._events = {}  # task -> deque of (time, step, metrics)

    def add(self, event):
        """Records `event`; returns False (ignoring it) unless it is a metric event."""
        if not isinstance(event, dict) or event.get("kind", "metric") != "metric":
            return False
        metrics = event.get("metrics") or {}
        t = float(event.get("time") or time.time())
        with self._lock:
            self.t0 = t if self.t0 is None else min(self.t0, t)
            series = self._events.setdefault(
                event.get("task") or "notebook", collections.deque(maxlen=self._max_points)
            )
            series.append((t, event.get("step"), dict(metrics)))
            self.count += 1
        return True

    def snapshot(self):
        """``{task: [(seconds since start, step, metrics), ...]}``: a consistent copy."""
        with self._lock:
            return {task: [(t - self.t0, s, m) for t, s, m in ev] for task, ev in self._events.items()}

    @staticmethod
    def rates(events, window_s):
        """``[(t, steps/s)]`` of one task's events, averaged over `window_s`."""
        out, j = [], 0
        for i, (t, _, m) in enumerate(events):
            while t - events[j][0] > window_s:
                j += 1
            if i > j and t > events[j][0]:
                done = m.get("local_step", i) - events[j][2].get("local_step", j)
                out.append((t, done / (t - events[j][0])))
        return out

    @staticmethod
    def global_steps(data):
        """``[(t, global step)]`` over all tasks: ``metrics["global_step"]`` or the event's step."""
        points = sorted((t, m.get("global_step", s)) for ev in data.values() for t, s, m in ev)
        out, best = [], None
        for t, g in points:
            if g is not None and (best is None or g > best):
                best = g
                out.append((t, g))
        return out

    def summary(self):
        """``{"global_step", "tasks": {task: {"loss", "steps_per_s", "reports"}}}`` of the latest values."""
        data = self.snapshot()
        tasks = {}
        for task, ev in sorted(data.items(), key=lambda kv: task_sort_key(kv[0])):
            rates = self.rates(ev, self.rate_window_s)
            losses = [m["loss"] for _, _, m in ev if "loss" in m]
            tasks[task] = {
                "loss": losses[-1] if losses else None,
                "reports": len(ev),
                "steps_per_s": rates[-1][1] if rates else None,
            }
        steps = self.global_steps(data)
        return {"global_step": steps[-1][1] if steps else None, "tasks": tasks, "events": self.count}


_LINE_COLORS = (
    "#1f77b4",
    "#2ca02c",
    "#9467bd",
    "#d62728",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#bcbd22",
    "#7f7f7f",
)


def line_colors(tasks):
    """Distinct line colours for tasks (replicas must be told apart on one plot): ``{task: colour}``."""
    ordered = sorted(tasks, key=task_sort_key)
    return {t: _LINE_COLORS[i % len(_LINE_COLORS)] for i, t in enumerate(ordered)}


def dashboard_figure(history, title=None):
    """A matplotlib Figure of a `MetricsHistory`: loss per replica with the global step,
    steps/s per worker, and (when reported) staleness or dropped stale gradients."""
    from matplotlib.figure import Figure  # noqa: PLC0415 - matplotlib is imported only when drawing

    data = history.snapshot()
    seen = {k for ev in data.values() for _, _, m in ev for k in m}
    panels = ["loss", "rate"] + [p for p in ("staleness", "dropped") if p in seen]
    fig = Figure(figsize=(3.6 * len(panels), 3.1), dpi=110, layout="constrained")
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    ordered = sorted(data.items(), key=lambda kv: task_sort_key(kv[0]))
    colors = line_colors(data)
    markers = "os^vD<>p"
    for ax, panel in zip(axes, panels):
        for i, (task, ev) in enumerate(ordered):
            style = {
                "color": colors[task],
                "marker": markers[i % len(markers)],
                "markersize": 3,
                "linewidth": 0 if panel == "staleness" else 1.4,
                "label": task,
            }
            if panel == "rate":
                pts = history.rates(ev, history.rate_window_s)
            elif panel == "dropped":
                pts, total = [], 0.0
                for t, _, m in ev:
                    total += m.get("dropped", 0.0)
                    pts.append((t, total))
            else:
                pts = [(t, m[panel]) for t, _, m in ev if panel in m]
            if pts:
                ax.plot(*zip(*pts), **style)
        ax.grid(alpha=0.3)
        ax.set_xlabel("time (s)")
        ax.ticklabel_format(axis="y", useOffset=False)
    _decorate_dashboard(axes, panels, history, data)
    if title:
        fig.suptitle(title, fontsize=11)
    return fig


def _decorate_dashboard(axes, panels, history, data):
    titles = {
        "loss": "loss per replica",
        "rate": "steps/s per worker",
        "staleness": "staleness of applied gradients (async)",
        "dropped": "dropped stale gradients (sync, cumulative)",
    }
    for ax, panel in zip(axes, panels):
        ax.set_title(titles[panel], fontsize=10)
        if panel in ("rate", "dropped"):
            ax.set_ylim(0, max(ax.get_ylim()[1] * 1.1, 1.0))
    loss_ax = axes[0]
    losses = [m["loss"] for ev in data.values() for _, _, m in ev if "loss" in m]
    if losses and min(losses) > 0 and max(losses) / min(losses) > 100:
        loss_ax.set_yscale("log")  # spans decades: a log axis keeps late progress visible
    steps = history.global_steps(data)
    if steps:
        twin = loss_ax.twinx()
        twin.plot(*zip(*steps), color="#222222", linestyle="--", linewidth=1, label="global step")
        twin.set_ylabel("global step", fontsize=9)
        twin.legend(loc="upper right", fontsize=7, frameon=False)
    if data:
        loss_ax.legend(loc="upper left", bbox_to_anchor=(0.0, -0.22), fontsize=7, frameon=False, ncol=2)
    else:
        loss_ax.text(
            0.5,
            0.5,
            "waiting for metrics…\ntf.report(step=..., loss=...)",
            ha="center",
            va="center",
            transform=loss_ax.transAxes,
            color="#777",
        )
