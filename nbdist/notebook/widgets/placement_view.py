"""`show_placement`: which task holds which parameters, runs which ops, moves how many bytes.

    tf.show_placement(run_metadata)   # measured: what a traced step placed and sent
    tf.show_placement(graph)          # estimated from the requested devices

A compact table (ops by type, variables and their bytes, bytes sent/received per step)
plus a bar chart, in one ipywidgets composite.
"""

from nbdist.notebook import graph_model as gm
from nbdist.notebook import placement_chart, png_writer
from nbdist.notebook.widgets import StaticView, ipywidgets_or_none, png_img_html, static_bundle

_w = ipywidgets_or_none()
_VBox = _w.VBox if _w is not None else object


def _header(model, rows):
    total = sum(r["param_bytes"] for r in rows)
    wire = sum(r["sent_bytes"] for r in rows)
    if model.mode == "placed":
        source = "placed by the master (from a traced step; bytes measured)"
    else:
        source = "requested devices (bytes estimated from static shapes; run a traced step for measured ones)"
    return (
        f"<b>Placement</b> — {source} · {len(rows)} tasks · parameters {gm.format_bytes(total)} · "
        f"{gm.format_bytes(wire)} over the wire per step"
    )


def _picture(source):
    """``(model, rows, png)``: what both forms of `show_placement` show of `source`."""
    model = gm.graph_model(source)
    rows = placement_chart.placement_summary(model)
    return model, rows, png_writer.figure_png(placement_chart.placement_figure(rows))


class PlacementView(_VBox):
    """Per-task table and bar chart of a graph's placement (see `show_placement`)."""

    def __init__(self, source):
        if _w is None:
            raise ImportError(
                "PlacementView needs ipywidgets: pip install ipywidgets (or use show_placement)"
            )
        self.model, self.rows, self.png = _picture(source)
        self.header = _w.HTML(_header(self.model, self.rows))
        self.table = _w.HTML(placement_chart.placement_html(self.rows))
        self.chart = _w.Image(value=self.png, format="png")
        self.header.add_class("nbdist-placement-header")
        self.table.add_class("nbdist-placement-table")
        self.chart.add_class("nbdist-placement-chart")
        super().__init__([self.header, self.table, self.chart])
        self.add_class("nbdist-placement-view")

    def _repr_mimebundle_(self, **kwargs):
        data = super()._repr_mimebundle_(**kwargs)
        return {
            **static_bundle(repr(self), png=self.png, html=_static_html(self.model, self.rows, self.png)),
            **(data or {}),
            "text/plain": repr(self),
        }

    def __repr__(self):
        held = ", ".join(f"{r['task'] or 'no device'}: {len(r['variables'])} variables" for r in self.rows)
        return f"<nbdist PlacementView ({self.model.mode}): {held}>"


def _static_html(model, rows, png):
    chart = png_img_html(png, "nbdist-placement-chart")
    return f"<div>{_header(model, rows)}</div>{placement_chart.placement_html(rows)}{chart}"


def show_placement(source):
    """Shows, per task, its ops by type, its variables and their bytes, and bytes sent/received.

    Args:
        source: a traced `tf.RunMetadata` or a ``trace`` event (what the master placed; bytes
            measured in that step), or a `tf.Graph`/`tf.Session`/GraphDef (requested
            devices; bytes estimated from static shapes).

    Returns:
        A `PlacementView` widget (a `StaticView` when ipywidgets is not installed).

    Raises:
        TypeError / ValueError: as `gm.graph_model`.
    """
    if _w is not None:
        return PlacementView(source)
    model, rows, png = _picture(source)
    return StaticView(
        f"<nbdist placement of {len(rows)} tasks>", png=png, html=_static_html(model, rows, png)
    )
