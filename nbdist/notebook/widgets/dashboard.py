"""`Dashboard`: live training metrics of every replica, updated while training runs.

    dash = tf.Dashboard()          # subscribes to the current cluster's event stream
    dash                           # display it, then train; tasks call tf.report(step=..., loss=...)
    ...
    dash.stop()                    # after training: final picture, kept as the static image

Events (``{"kind": "metric", "task", "step", "time", "metrics": {...}}``) may arrive on any
thread. `update` only records them and asks a `Redrawer` (throttle.py) for a new picture:
its thread redraws at most ``max_redraws_per_s`` times a second and only sets widget state
(a PNG and two HTML values), so neither training nor the kernel ever waits for matplotlib.
"""

import html
import threading
import time
import uuid

from nbdist.notebook import dashboard_plot, metrics_history
from nbdist.notebook.widgets import ipywidgets_or_none, static_bundle
from nbdist.notebook.widgets.throttle import Redrawer

_w = ipywidgets_or_none()
# The share of a core a live dashboard may draw pictures with while the machine's cores are
# busy (training shares them: what a larger share cost is measured in docs/benchmarks.md,
# "What watching costs training"), and while one is idle. A picture drawn over the last one
# (new lines only) is cheap, one drawn whole (its axes moved) is dear, and the budget spaces
# them out accordingly; the headline and the table (read in place) are refreshed every
# TEXT_EVERY_S meanwhile.
BUSY_FRACTION = 0.01
IDLE_FRACTION = 0.25
TEXT_EVERY_S = 1.0
# The first picture of metrics is drawn at once and not charged (matplotlib's warm-up would
# otherwise hold the next one back for long). After that, while metrics come, a picture is
# begun at most PICTURE_EVERY_S after the last, so one reaches the page every few seconds on a
# busy machine: one due before the budget allows it keeps the last layout and is charged too,
# so the budget holds over time (the pictures after it wait until it is paid for).
PICTURE_EVERY_S = 8.0
_VBox = _w.VBox if _w is not None else object


def _fmt(value, spec):
    return "—" if value is None else format(value, spec)


class Dashboard(_VBox):
    """Loss per replica with the global step, steps/s per worker, staleness or dropped gradients.

    Args:
        source: an object with ``subscribe(callback) -> unsubscribe`` (and optionally
            ``history(kind)``, and ``subscribe_metrics`` to take metric events in columns),
            e.g. `nbdist.notebook.event_stream.current_stream()` (the default). Events already in
            its history are shown too.
        title: the heading.
        max_redraws_per_s: redraw throttle (the picture lags events by at most 1/this s).
        busy_fraction: at most this share of one core is spent drawing pictures while the
            machine's cores are busy (the notebook's CPU is the training's when they share
            them); `idle_fraction` while a whole core is idle.
        rate_window_s: steps/s are averaged over this window.
        picture_every_s: while metrics come, a new picture at least this often (None: only
            as the budget allows).
        subscribe: False to feed events only through `update`.
        replay: False to show only what is reported from now on (not the events the source
            already holds, nor late ones stamped earlier): one dashboard per experiment on
            one cluster.

    Raises:
        TypeError: a source without ``subscribe``.
    """

    def __init__(
        self,
        source=None,
        title="Training",
        max_redraws_per_s=5.0,
        rate_window_s=3.0,
        subscribe=True,
        replay=True,
        busy_fraction=BUSY_FRACTION,
        idle_fraction=IDLE_FRACTION,
        picture_every_s=PICTURE_EVERY_S,
    ):
        if _w is None:
            raise ImportError("Dashboard needs ipywidgets: pip install ipywidgets")
        self.history = metrics_history.MetricsHistory(rate_window_s=rate_window_s)
        self.plot = dashboard_plot.DashboardPlot()
        self._since = None if replay else time.time()  # events stamped earlier are not shown
        self.title_text = title
        self.redraws = 0
        self._redrawer = Redrawer(
            self.flush,
            max_redraws_per_s,
            "nbdist-dashboard",
            busy_fraction,
            idle_fraction,
            between=self.refresh_text,
            between_every_s=TEXT_EVERY_S,
            max_interval_s=picture_every_s,
            overdue=lambda: self.flush(relayout=False),
        )
        self._draw_lock = threading.Lock()
        self._unsubscribe = None
        self._display_id = None
        self.png = b""
        self.status = _w.HTML()
        self.image = _w.Image(format="png")
        self.table = _w.HTML()
        self.status.add_class("nbdist-dashboard-title")
        self.image.add_class("nbdist-loss")
        self.table.add_class("nbdist-dashboard-table")
        super().__init__([self.status, self.image, self.table])
        self.add_class("nbdist-dashboard")
        if subscribe:
            self.subscribe(source)
        self.flush()  # the picture until metrics come (not counted: the first of them is drawn at once)

    # -- events ------------------------------------------------------------------------------------
    def subscribe(self, source=None):
        """Listens to `source` (default: the current cluster's event stream)."""
        if source is None:
            from nbdist.notebook import event_stream  # noqa: PLC0415 - only needed when subscribing

            source = event_stream.current_stream()
        if not callable(getattr(source, "subscribe", None)):
            raise TypeError(f"Dashboard source must have subscribe(callback), got {type(source).__name__}")
        if self._unsubscribe is not None:
            self._unsubscribe()
        if callable(getattr(source, "history", None)) and self._since is None:
            for event in source.history(kind="metric"):
                self.history.add(event)
        subscribe_metrics = getattr(source, "subscribe_metrics", None)  # (an EventStream: in columns)
        if callable(subscribe_metrics):
            self._unsubscribe = subscribe_metrics(self.update_batch)
        else:
            self._unsubscribe = source.subscribe(self.update)

    def update(self, event):
        """Records one event (any thread; returns at once) and schedules a throttled redraw."""
        if self._since is not None and isinstance(event, dict) and (event.get("time") or 0) < self._since:
            return
        if self.history.add(event):
            self._redrawer.request()

    def update_batch(self, batch):
        """`update` for the events of a `MetricBatch` (one task's, in columns)."""
        if self._since is not None:
            batch = batch.since(self._since)
        if self.history.add_batch(batch):
            self._redrawer.request()

    # -- drawing -------------------------------------------------------------------------------------
    def flush(self, relayout=True):
        """Redraws now from the calling thread (sets widget state only).

        Args:
            relayout: False: a live picture keeps the last layout (`dashboard_plot.DashboardPlot.png`).
        """
        with self._draw_lock:
            data = self.history.snapshot()
            summary = self.history.summary()
            live = not self._redrawer.closed
            title = _headline(self.title_text, summary)
            self.png = self.plot.png(self.history, title=title, final=not live, data=data, relayout=relayout)
            self._set_text(summary, live)  # (first: a new picture finds its numbers shown)
            self.image.value = self.png
            self.redraws += 1

    def refresh_text(self):
        """Refreshes the headline and the table only (between pictures: cheap, nothing copied)."""
        with self._draw_lock:
            self._set_text(self.history.summary(), live=not self._redrawer.closed)

    def _set_text(self, summary, live):
        if live:
            every, most = 1 / self._redrawer.min_interval_s, self._redrawer.max_interval_s
            at_least = f", at least every {most:g} s" if most else ""
            note = (
                f"pictures as metrics arrive (at most {every:g} a second{at_least}; "
                f"numbers every {TEXT_EVERY_S:g} s)"
            )
        else:
            note = "the final picture, also kept in the saved notebook"
        state = "live" if live else "stopped"
        self.status.value = (
            f"<b>{html.escape(self.title_text)}</b> <span class='nbdist-status'>({state})</span> "
            f"{html.escape(_headline('', summary))} <small>— {note}</small>"
        )
        self.table.value = _table(summary)

    def stop(self):
        """Stops listening, draws the final picture and makes it the output's static image
        (what the saved notebook shows on nbviewer/GitHub). Call it after training."""
        if self._unsubscribe is None and self._redrawer.closed:
            return  # stopped already: its final picture is drawn (and at exit it could not be)
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self._redrawer.close()
        self.flush()
        self.snapshot()

    def snapshot(self):
        """Replaces the static image of the displayed output with the current picture."""
        if self._display_id is None:
            return
        from IPython.display import update_display  # noqa: PLC0415 - IPython only in a kernel

        update_display(self._repr_mimebundle_(), raw=True, display_id=self._display_id)

    def close(self):
        """Stops listening and drawing, then closes the widget."""
        self.stop()
        super().close()

    # -- display -------------------------------------------------------------------------------------
    def _ipython_display_(self, **kwargs):
        from IPython.display import display  # noqa: PLC0415 - IPython only in a kernel

        self._display_id = self._display_id or f"nbdist-dashboard-{uuid.uuid4().hex}"
        display(self._repr_mimebundle_(), raw=True, display_id=self._display_id)

    def _repr_mimebundle_(self, **kwargs):
        data = super()._repr_mimebundle_(**kwargs)
        return {**static_bundle(repr(self), png=self.png or None), **(data or {}), "text/plain": repr(self)}

    def __repr__(self):
        return f"<nbdist Dashboard: {self.history.count} metric events, {self.redraws} redraws>"


def _headline(title, summary):
    """``"<title> — global step N · 2 replicas · M reports"`` (without a title: ``"global step N ..."``)."""
    gs, replicas = summary["global_step"], len(summary["tasks"])
    headline = (
        f"global step {'—' if gs is None else int(gs)} · {replicas} replica{'' if replicas == 1 else 's'}"
        f" · {summary['events']} reports"
    )
    return f"{title} — {headline}" if title else headline


def _table(summary):
    colors = dashboard_plot.line_colors(summary["tasks"])
    rows = "".join(
        f"<tr><td><span style='color:{colors[task]}'>■</span> {html.escape(task)}</td>"
        f"<td>{_fmt(v['loss'], '.4g')}</td><td>{_fmt(v['steps_per_s'], '.1f')}</td>"
        f"<td>{v['reports']}</td></tr>"
        for task, v in summary["tasks"].items()
    )
    return (
        "<table style='font-size:12px;border-collapse:collapse' border='1' cellpadding='3'>"
        f"<tr><th>replica</th><th>last loss</th><th>steps/s</th><th>reports</th></tr>{rows}</table>"
    )
