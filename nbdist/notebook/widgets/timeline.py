"""`show_timeline`: one traced step across tasks — services, op spans, tensors on the wire.

    md = tf.RunMetadata()
    sess.run(train_op, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=md)
    tf.show_timeline(md)
    tf.export_chrome_trace(md, "step.json")   # the same step in Perfetto / chrome://tracing

One band per task: its master service (``RunStep``), its worker service (``RegisterGraph``,
``RunGraph``) and its ops; red arrows join each ``_Send`` to its ``_Recv``. Hover a bar for
its name and duration; the slider zooms into a time window.
"""

from nbdist.notebook import trace
from nbdist.notebook.widgets import StaticView, ipywidgets_or_none, static_bundle

_w = ipywidgets_or_none()
_VBox = _w.VBox if _w is not None else object


def _header(events):
    total_ms = max((s["end_s"] - events["t0"]) * 1e3 for s in events["spans"]) if events["spans"] else 0.0
    n_ops = sum(s["lane"] == "ops" for s in events["spans"])
    return (
        f"<b>Step timeline</b> · {len(events['tasks'])} tasks · {n_ops} op spans · "
        f"{len(events['flows'])} tensors sent between tasks · {total_ms:.2f} ms · "
        "<i>hover a bar for its name and duration; drag the slider to zoom</i>"
    )


def _picture(run_metadata, width_px):
    """``(events, svg)``: what both forms of `show_timeline` show of one traced step."""
    events = trace.step_events(run_metadata)
    return events, trace.timeline_svg(events, width_px=width_px)


class TimelineView(_VBox):
    """The timeline of one traced step with a zoom slider (see `show_timeline`)."""

    def __init__(self, run_metadata, width_px=1000):
        if _w is None:
            raise ImportError("TimelineView needs ipywidgets: pip install ipywidgets (or use show_timeline)")
        self.events, self.svg = _picture(run_metadata, width_px)
        self._width_px = width_px
        total_ms = max([(s["end_s"] - self.events["t0"]) * 1e3 for s in self.events["spans"]] + [0.001])
        self.header = _w.HTML(_header(self.events))
        self.window = _w.FloatRangeSlider(
            value=(0.0, total_ms),
            min=0.0,
            max=total_ms,
            step=total_ms / 500,
            description="window (ms)",
            readout_format=".3f",
            continuous_update=False,
            layout=_w.Layout(width="700px"),
            style={"description_width": "initial"},
        )
        self.timeline = _w.HTML(self._wrap(self.svg))
        self.footer = _w.HTML(
            "<small>Export the same step for Perfetto (https://ui.perfetto.dev) or chrome://tracing: "
            "<code>tf.export_chrome_trace(md, 'step.json')</code></small>"
        )
        self.header.add_class("nbdist-timeline-header")
        self.timeline.add_class("nbdist-timeline")
        super().__init__([self.header, self.window, self.timeline, self.footer])
        self.add_class("nbdist-timeline-view")
        self.window.observe(lambda change: self.zoom(*change["new"]), names="value")

    @staticmethod
    def _wrap(svg):
        return f'<div style="overflow:auto;border:1px solid #ddd">{svg}</div>'

    def zoom(self, start_ms, end_ms):
        """Shows only ``[start_ms, end_ms]`` of the step."""
        self.timeline.value = self._wrap(trace.timeline_svg(self.events, (start_ms, end_ms), self._width_px))

    def _repr_mimebundle_(self, **kwargs):
        data = super()._repr_mimebundle_(**kwargs)
        return {**static_bundle(repr(self), svg=self.svg), **(data or {}), "text/plain": repr(self)}

    def __repr__(self):
        return f"<nbdist TimelineView: {len(self.events['tasks'])} tasks, {len(self.events['spans'])} spans>"


def show_timeline(run_metadata, width_px=1000):
    """Shows a traced step: one band per task with its service calls and op spans, and red
    arrows for the tensors sent between tasks.

    Args:
        run_metadata: a `tf.RunMetadata` filled by a ``FULL_TRACE`` step (a local Session's
            trace works too: one task, no arrows), or a ``trace`` event dict.
        width_px: width of the time axis.

    Returns:
        A `TimelineView` widget (a `StaticView` SVG when ipywidgets is not installed).

    Raises:
        ValueError: the metadata holds no trace (run the step with ``FULL_TRACE``).
    """
    if _w is not None:
        return TimelineView(run_metadata, width_px)
    events, svg = _picture(run_metadata, width_px)
    return StaticView(f"<nbdist timeline of {len(events['tasks'])} tasks>", svg=svg)
