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
import math
import struct
import threading
import zlib

import numpy as np

from nbdist.in_task.metric_batch import MetricBatch
from nbdist.notebook import i18n
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


def placement_figure(rows, lang="en"):
    """A matplotlib Figure: parameter bytes per task, and bytes sent/received per step; titles
    and labels in `lang` (`i18n.LANGS`; draw it under ``rc_context(i18n.font_rc(lang))``)."""
    from matplotlib.figure import Figure  # noqa: PLC0415 - matplotlib is imported only when drawing
    from matplotlib.ticker import MaxNLocator  # noqa: PLC0415

    fig = Figure(figsize=(9, 1.2 + 0.45 * len(rows)), dpi=90, layout="constrained")
    ax_params, ax_wire = fig.subplots(1, 2, sharey=True)
    labels = [r["task"] or i18n.text(lang, "c_no_device") for r in rows]
    y = range(len(rows))
    colors = [r["color"] for r in rows]
    ax_params.barh(y, [r["param_bytes"] for r in rows], color=colors, edgecolor="#555")
    ax_params.set(yticks=list(y), yticklabels=labels, title=i18n.text(lang, "c_params"))
    ax_params.invert_yaxis()
    height = 0.38
    ax_wire.barh(
        [i - height / 2 for i in y],
        [r["sent_bytes"] for r in rows],
        height,
        color=colors,
        edgecolor="#555",
        label=i18n.text(lang, "c_sent"),
    )
    ax_wire.barh(
        [i + height / 2 for i in y],
        [r["recv_bytes"] for r in rows],
        height,
        color=colors,
        edgecolor="#555",
        hatch="///",
        label=i18n.text(lang, "c_received"),
    )
    ax_wire.set(title=i18n.text(lang, "c_wire"))
    ax_wire.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
    for ax in (ax_params, ax_wire):
        for bars in ax.containers:
            ax.bar_label(bars, labels=[format_bytes(b.get_width()) for b in bars], fontsize=8, padding=2)
        ax.margins(x=0.18)
        ax.grid(axis="x", alpha=0.3)
        ax.xaxis.set_major_locator(MaxNLocator(nbins=4))
        ax.xaxis.set_major_formatter(lambda v, _: format_bytes(v))
    return fig


def rgb_png(rgba):
    """PNG bytes of an RGBA image (``(height, width, 4)`` uint8, e.g. a canvas's
    ``buffer_rgba()``), opaque, fast rather than small: no PNG row filter, zlib level 1.

    A live picture is soon replaced, and the training pays for it: Pillow's encoder (which
    tries its filters on every row) took 8.5 ms of a 23 ms dashboard picture, this takes 4
    (docs/benchmarks.md) for a file as large (50 KiB).
    """
    pixels = np.asarray(rgba)[:, :, :3]
    height, width, _ = pixels.shape
    rows = np.zeros((height, 1 + 3 * width), np.uint8)  # each row: filter type 0, then its bytes
    rows[:, 1:] = pixels.reshape(height, 3 * width)

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB, no interlace
    image = chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows, 1)) + chunk(b"IEND", b"")
    return b"\x89PNG\r\n\x1a\n" + image


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
    Steps/s per task counts that task's reports per second (one report per local step):
    an event without ``metrics["local_step"]`` gets the number of its task's reports so far.

    A task's events are kept from the first: past `max_points`, only every other one of them
    is kept, then every fourth, ... (evenly over the whole run, so a long or fast run is
    still shown whole), and always the latest; a forgotten event's ``dropped`` count goes to
    the next one kept, so that counts stay exact.

    Args:
        max_points: events kept per task.
        rate_window_s: the window steps/s are averaged over.
    """

    def __init__(self, max_points=5000, rate_window_s=3.0):
        self._lock = threading.Lock()
        self._max_points = max(max_points, 4)
        self.rate_window_s = rate_window_s
        self.t0 = None
        self.count = 0
        self.names = set()  # every metric name reported so far
        self._events = {}  # task -> list of (time, step, metrics, its number among the task's events)
        self._reports = collections.Counter()  # task -> its events so far (kept or not)
        self._stride = {}  # task -> keep its events number 1, 1 + stride, 1 + 2 * stride, ...
        self._global_step = None  # the largest global step reported so far

    def add(self, event):
        """Records `event`; returns False (ignoring it) unless it is a metric event."""
        if not isinstance(event, dict) or event.get("kind", "metric") != "metric":
            return False
        return self.add_batch(MetricBatch.of(event))

    def add_batch(self, batch):
        """Records the events of `batch` (a `MetricBatch`, one task's, in order); returns
        whether there were any.

        A row that would be forgotten at once (not one of the kept numbers, not the last of
        the batch) only adds to the counts: no dict is made for it.
        """
        n = len(batch)
        if not n:
            return False
        task, names = batch.task, batch.names
        times = batch.times
        dropped = names.index("dropped") if "dropped" in names else None
        global_steps = batch.columns[names.index("global_step")] if "global_step" in names else batch.steps
        reached = max((v for v in global_steps if v is not None), default=None)
        with self._lock:
            first = min(times)
            self.t0 = first if self.t0 is None else min(self.t0, first)
            number = self._reports[task]
            self._reports[task] = number + n
            series = self._events.setdefault(task, [])
            stride = self._stride.setdefault(task, 1)
            carried = 0.0  # the dropped counts of rows forgotten at once, for the next one kept
            for i, (t, step, *values) in enumerate(zip(times, batch.steps, *batch.columns)):
                number += 1
                if (number - 1) % stride and i != n - 1:
                    if dropped is not None:
                        carried += values[dropped]
                    continue
                metrics = dict(zip(names, values))
                metrics.setdefault("local_step", number)
                if carried:
                    metrics["dropped"] = metrics.get("dropped", 0.0) + carried
                    carried = 0.0
                if series and (series[-1][3] - 1) % stride:  # the last was kept only as the latest
                    _carry_dropped(series.pop()[2], metrics)
                series.append((float(t), step, metrics, number))
                if len(series) >= self._max_points:
                    stride *= 2
                    self._stride[task] = stride
                    series = self._events[task] = _keep_every(series, stride)
            if reached is not None and (self._global_step is None or reached > self._global_step):
                self._global_step = reached
            self.names.update(names)
            self.names.add("local_step")
            self.count += n
        return True

    def reports(self, task):
        """How many metric events `task` sent (kept or not)."""
        with self._lock:
            return self._reports[task]

    def snapshot(self):
        """``{task: [(seconds since start, step, metrics), ...]}``: a consistent copy."""
        with self._lock:
            return {task: [(t - self.t0, s, m) for t, s, m, _ in ev] for task, ev in self._events.items()}

    @staticmethod
    def rates(events, window_s, last_only=False):
        """``[(t, steps/s)]`` of one task's events, averaged over `window_s` (only the latest
        with `last_only`)."""
        out, j = [], 0
        first = len(events) - 1 if last_only else 0
        if last_only and events:  # the window's first event, by bisection on the times
            lo, hi, t_last = 0, first, events[first][0]
            while lo < hi:
                mid = (lo + hi) // 2
                lo, hi = (mid + 1, hi) if t_last - events[mid][0] > window_s else (lo, mid)
            j = lo
        for i in range(first, len(events)):
            t, m = events[i][0], events[i][2]  # (a snapshot's triples, or the kept quadruples)
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
        """``{"global_step", "tasks": {task: {"loss", "steps_per_s", "reports"}}, "events"}`` of
        the latest values, read in place (cheap: nothing is copied, for a status line
        refreshed often)."""
        with self._lock:
            tasks = {}
            for task, ev in sorted(self._events.items(), key=lambda kv: task_sort_key(kv[0])):
                rates = self.rates(ev, self.rate_window_s, last_only=True)
                loss = next((e[2]["loss"] for e in reversed(ev) if "loss" in e[2]), None)
                tasks[task] = {
                    "loss": loss,
                    "reports": self._reports[task],
                    "steps_per_s": rates[-1][1] if rates else None,
                }
            return {"global_step": self._global_step, "tasks": tasks, "events": self.count}


def _keep_every(series, stride):
    """The events of `series` numbered 1, 1 + stride, ... and the latest; a forgotten event's
    ``dropped`` count goes to the next one kept (so cumulative sums stay exact)."""
    out, forgotten = [], {}
    for i, (t, step, metrics, number) in enumerate(series):
        if (number - 1) % stride and i != len(series) - 1:
            _carry_dropped(metrics, forgotten)
            continue
        if forgotten:
            metrics = dict(metrics)
            _carry_dropped(forgotten, metrics)
            forgotten = {}
        out.append((t, step, metrics, number))
    return out


def _carry_dropped(source, target):
    """Adds the ``dropped`` count of `source` (metrics of a forgotten event) to `target`'s."""
    if "dropped" in source:
        target["dropped"] = target.get("dropped", 0.0) + source["dropped"]


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


def dashboard_figure(history, title=None, lang="en"):
    """A matplotlib Figure of a `MetricsHistory`: loss per replica with the global step,
    steps/s per worker, and (when reported) staleness or dropped stale gradients; titles and
    labels in `lang` (draw it under ``rc_context(i18n.font_rc(lang))``)."""
    return DashboardPlot(lang=lang).figure(history, title)


_PANEL_TITLES = {"loss": "c_loss", "rate": "c_rate", "staleness": "c_staleness", "dropped": "c_dropped"}
_MARKERS = "os^vD<>p"


class DashboardPlot:
    """The dashboard's Figure, drawn again and again as metrics arrive.

    A live picture is paid for by training (the notebook shares the machine's cores), so a
    picture redoes as little as it can:

    - the Figure, its axes and lines are made once per set of panels and replicas; a
      picture sets the lines' data (at most `max_points` per line: more than a panel has
      pixels across);
    - a live picture keeps its axes' limits while the data fit them (they grow with room to
      spare, and tighten when the data take much less), so most live pictures only redraw
      the lines and the headline over the rest of the last picture (blitting: ticks, labels,
      legends and the constrained layout that measures them are most of a picture's cost);
    - when the limits do move, the picture is drawn whole, but laid out afresh only when
      its tick labels got longer or shorter (the layout is half of a whole picture).

    A kept picture (`figure`, or `png` with ``final``) is drawn whole, with the limits
    matplotlib would choose.

    Args:
        max_points: points drawn per line (evenly thinned, the first and latest kept).
        lang: the language of titles and labels (`i18n.LANGS`).
    """

    def __init__(self, max_points=400, lang="en"):
        self.max_points = max_points
        self.lang = lang
        self.fig = None
        self.pictures = 0
        self.full_draws = 0  # pictures drawn whole (the others redrew the lines over the last)
        self.layouts = 0  # whole pictures laid out afresh (the others kept the last layout)
        self._laid_out_for = None  # the tick labels' lengths the layout was made for
        self._shape = None
        self._background = None  # the last whole picture without its lines and headline

    def figure(self, history, title=None):
        """The Figure showing `history` now, laid out, with matplotlib's limits (the same
        object while the panels and replicas stay)."""
        self._update(history, title, live=False)
        for artist in self._animated:  # drawn with the rest (by savefig)
            artist.set_animated(False)
        return self.fig

    def png(self, history, title=None, final=True, data=None, relayout=True):
        """PNG bytes of the picture of `history` now (fast zlib: a live picture is soon replaced).

        Args:
            final: a picture to keep (drawn whole, as `figure`); False: a live picture.
            data: its `snapshot`, when the caller took one already.
            relayout: False: a live picture drawn whole keeps the last layout unless a tick
                label got longer (half the CPU; shorter labels leave some room unused until
                the next picture laid out afresh).
        """
        moved = self._update(history, title, live=not final, data=data)
        for artist in self._animated:
            artist.set_animated(True)
        canvas = self._canvas
        if final or moved or self._background is None:
            labels = _tick_label_lengths(self.fig)
            changed = labels != self._laid_out_for if relayout else _longer(labels, self._laid_out_for)
            layout = final or self._background is None or changed
            self.fig.set_layout_engine("constrained" if layout else "none")
            canvas.draw()  # the animated artists (lines, headline) are left out...
            self._background = canvas.copy_from_bbox(self.fig.bbox)
            self._laid_out_for = labels if layout else self._laid_out_for
            self.full_draws += 1
            self.layouts += layout
        else:
            canvas.restore_region(self._background)
        renderer = canvas.get_renderer()
        for artist in self._animated:  # (...and drawn over it here)
            artist.draw(renderer)
        self.pictures += 1
        return rgb_png(canvas.buffer_rgba())

    def _update(self, history, title, live, data=None):
        """Sets the lines' data, scales and limits; True when a limit or scale changed."""
        data = history.snapshot() if data is None else data
        ordered = sorted(data, key=task_sort_key)
        panels = ["loss", "rate"] + [p for p in ("staleness", "dropped") if p in history.names]
        steps = history.global_steps(data)
        shape = (tuple(panels), tuple(ordered), bool(steps))
        moved = shape != self._shape
        if moved:
            self._make(shape)
        for ax, panel in zip(self._axes, panels):
            for task in ordered:
                self._lines[panel, task].set_data(*self._thin(_points(history, data[task], panel)))
            if panel == "loss":
                moved |= _choose_loss_scale(ax, data)
            moved |= _rescale(ax, live, from_zero=panel in ("rate", "dropped"), growing=panel == "dropped")
        if self._steps_line is not None:
            self._steps_line.set_data(*self._thin(steps))
            moved |= _rescale(self._steps_line.axes, live, from_zero=False, growing=True)
        self._title.set_text(title or "")
        return moved

    def _thin(self, points):
        """``(xs, ys)`` of `points` (``[(x, y)]``), at most `max_points` of them."""
        if not points:
            return [], []
        if len(points) > self.max_points:
            step = (len(points) - 1) / (self.max_points - 1)
            points = [points[round(i * step)] for i in range(self.max_points)]
        return tuple(zip(*points))

    def _make(self, shape):
        from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: PLC0415 - only when drawing
        from matplotlib.figure import Figure  # noqa: PLC0415

        panels, tasks, has_steps = shape
        self._shape = shape
        self._background = None
        fig = self.fig = Figure(figsize=(3.6 * len(panels), 3.1), dpi=110, layout="constrained")
        self._canvas = FigureCanvasAgg(fig)
        self._axes = fig.subplots(1, len(panels), squeeze=False)[0]
        colors = line_colors(tasks)
        self._lines = {}
        for ax, panel in zip(self._axes, panels):
            for i, task in enumerate(tasks):
                (self._lines[panel, task],) = ax.plot(
                    [],
                    [],
                    color=colors[task],
                    marker=_MARKERS[i % len(_MARKERS)],
                    markersize=3,
                    linewidth=0 if panel == "staleness" else 1.4,
                    label=task,
                    animated=True,
                )
            ax.grid(alpha=0.3)
            ax.set_xlabel(i18n.text(self.lang, "c_time"))
            ax.ticklabel_format(axis="y", useOffset=False)
            ax.set_title(i18n.text(self.lang, _PANEL_TITLES[panel]), fontsize=10)
        loss_ax = self._axes[0]
        self._steps_line = None
        if has_steps:
            twin = loss_ax.twinx()
            (self._steps_line,) = twin.plot(
                [],
                [],
                color="#222222",
                linestyle="--",
                linewidth=1,
                label=i18n.text(self.lang, "c_global_step"),
                animated=True,
            )
            twin.set_ylabel(i18n.text(self.lang, "c_global_step"), fontsize=9)
            twin.legend(loc="upper right", fontsize=7, frameon=False)
        if tasks:
            loss_ax.legend(loc="upper left", bbox_to_anchor=(0.0, -0.22), fontsize=7, frameon=False, ncol=2)
        else:
            loss_ax.text(
                0.5,
                0.5,
                i18n.text(self.lang, "c_waiting"),
                ha="center",
                va="center",
                transform=loss_ax.transAxes,
                color="#777",
            )
        self._title = fig.suptitle(" ", fontsize=11, animated=True)
        self._animated = [*self._lines.values(), *([self._steps_line] if has_steps else []), self._title]


def _tick_label_lengths(fig):
    """The longest tick label of each axis of `fig` (what its constrained layout depends on),
    in characters: formatted, not measured (0.3 ms, where measuring is the layout)."""
    return tuple(
        max(
            (len(label) for label in axis.get_major_formatter().format_ticks(axis.get_majorticklocs())),
            default=0,
        )
        for ax in fig.axes
        for axis in (ax.xaxis, ax.yaxis)
    )


def _longer(labels, laid_out_for):
    """Whether any axis's longest tick label (`_tick_label_lengths`) is longer than in the layout."""
    return laid_out_for is None or any(n > was for n, was in zip(labels, laid_out_for))


_SLACK = 2.5  # a live picture's limits may be this many times as wide as the data's


def _rescale(ax, live, from_zero, growing=False):
    """Sets `ax`'s limits to hold its lines; True when they changed.

    A kept picture gets matplotlib's limits. A live one keeps its limits while they hold the
    data and are at most `_SLACK` times as wide as matplotlib's; else it takes matplotlib's with
    room to grow (as much time again, a quarter more value on each side; a `growing` value -
    the global step - as much again), so that the next pictures can keep them: time and the
    global step outgrow their limits at 2, 4, 8, ... times the first, and a picture whose
    limits move is drawn whole, 10 times the CPU of one that only redraws its lines.
    """
    before = (ax.get_xlim(), ax.get_ylim())
    ax.relim()
    ax.autoscale_view()
    x, y = ax.get_xlim(), ax.get_ylim()
    if from_zero:
        y = (0.0, max(y[1] * 1.1, 1.0))
    if live and ax.dataLim.width >= 0 and ax.dataLim.height >= 0:  # (no data: a null box)
        log = ax.get_yscale() == "log"
        x = _steady(before[0], ax.dataLim.intervalx, x, below=0.0, above=1.0)
        below, above = (0.0, 1.0) if growing else (0.0 if from_zero else 0.25, 0.25)
        y = _steady(before[1], ax.dataLim.intervaly, y, below=below, above=above, log=log)
    ax.set_xlim(x, auto=True)
    ax.set_ylim(y, auto=True)
    return (ax.get_xlim(), ax.get_ylim()) != before


def _steady(current, data, wanted, below, above, log=False):
    """`current` limits while they hold the `data` interval and are at most `_SLACK` times as
    wide as `wanted`; else `wanted` widened by `below` and `above` of its span (decades on a
    log axis)."""
    to, back = (math.log10, lambda v: 10.0**v) if log else (float, float)
    if log and min(*current, *data, *wanted) <= 0:
        return wanted
    lo, hi = to(wanted[0]), to(wanted[1])
    clo, chi = to(current[0]), to(current[1])
    span = hi - lo
    if clo <= to(data[0]) and to(data[1]) <= chi and chi - clo <= _SLACK * span:
        return current
    return back(lo - below * span), back(hi + above * span)


def _points(history, events, panel):
    """``[(t, value)]`` one replica's line shows in `panel`."""
    if panel == "rate":
        return history.rates(events, history.rate_window_s)
    if panel == "dropped":
        pts, total = [], 0.0
        for t, _, m in events:
            total += m.get("dropped", 0.0)
            pts.append((t, total))
        return pts
    return [(t, m[panel]) for t, _, m in events if panel in m]


def _choose_loss_scale(ax, data):
    """A log axis when the losses span decades (late progress stays visible), else linear;
    True when it changed."""
    losses = [m["loss"] for ev in data.values() for _, _, m in ev if "loss" in m]
    scale = "log" if losses and min(losses) > 0 and max(losses) / min(losses) > 100 else "linear"
    if ax.get_yscale() == scale:
        return False
    ax.set_yscale(scale)
    if scale == "linear":
        ax.ticklabel_format(axis="y", useOffset=False)
    return True
