"""The dashboard's picture of a `MetricsHistory`: loss per replica with the global step,
steps/s per worker, staleness or dropped gradients, as a matplotlib Figure redrawn cheaply.

Pure like `nbdist.notebook.render`: a history in, a Figure or PNG bytes out; the widgets set
them as state.

    plot = DashboardPlot()
    png = plot.png(history, title="training", final=False)   # a live picture (blitted)
    fig = dashboard_figure(history)                           # a picture to keep
"""

import math

from nbdist.notebook import i18n
from nbdist.notebook.graph_model import task_sort_key
from nbdist.notebook.png_writer import rgb_png

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
