"""`show_graph`: where each op runs, as an interactive graph (ipywidgets composite).

    tf.show_graph(tf.get_default_graph())   # requested devices, before placement
    tf.show_graph(run_metadata)             # placed & partitioned, after a traced step
    tf.show_graph(sess, fetch=loss)         # only what `loss` needs

Controls: collapse name scopes (on by default: one node per scope and task, with its op count),
which scopes to expand, "fit to width" (never shrinking node text below `render.MIN_TEXT_PX`)
and "only what this needs" (an op or tensor name). The SVG is inline,
so hovering a node shows its device and outputs; the display bundle also carries the SVG
as a static image for frontends without widgets.
"""

import html

from nbdist.notebook import graph_model as gm
from nbdist.notebook import render
from nbdist.notebook.graph_control_flow import body_size
from nbdist.notebook.widgets import StaticView, ipywidgets_or_none, static_bundle

_w = ipywidgets_or_none()
_VBox = _w.VBox if _w is not None else object
MAX_HEIGHT_PX = 760


def _frame(svg, fit):
    """The SVG in a scrolling box; `fit` scales it down to the box's width, but never its nodes'
    text below `render.MIN_TEXT_PX` (a wider graph scrolls)."""
    style = f"overflow:auto;max-height:{MAX_HEIGHT_PX}px;border:1px solid #ddd;padding:4px"
    return f'<div style="{style}">{render.fit_to_width(svg) if fit else svg}</div>'


def _model(source, fetch):
    """``(model, fetch)`` both forms of `show_graph` draw: a Tensor or Operation `source`
    means its graph, only what it needs."""
    source, fetch = gm.split_fetch(source, fetch)
    return gm.graph_model(source), fetch


def _summary(model, collapse, fetch):
    tasks = [t for t in model.tasks() if t]
    n_ops = sum(n.op not in gm.TRANSFER_OPS for n in model.nodes)
    if model.mode == "placed":
        what = (
            "<b>Placed &amp; partitioned graph</b> (from a traced step) · "
            f"{len(tasks)} tasks · {n_ops} ops · "
            f"<span style='color:{gm.TRANSFER_COLOR}'>{len(model.pairs())} _Send/_Recv pairs</span>"
        )
    else:
        what = f"<b>Requested devices</b> (as recorded, before placement) · {len(tasks)} tasks · {n_ops} ops"
    notes = ["name scopes collapsed" if collapse else "all ops shown"]
    if fetch:
        notes.append(f"only what <code>{html.escape(fetch)}</code> needs")
    return f"{what} · {' · '.join(notes)} · <i>hover a node for its device and outputs</i>"


class GraphView(_VBox):
    """The graph coloured by task, one box per task, with controls (see `show_graph`)."""

    def __init__(self, source, fetch=None, collapse=None, expanded=(), title=None):
        if _w is None:
            raise ImportError("GraphView needs ipywidgets: pip install ipywidgets (or use show_graph)")
        self.model, fetch = _model(source, fetch)
        fetch_name = gm.fetch_name(fetch) if fetch is not None else ""
        if fetch_name:
            self.model.needed(fetch_name)  # a bad fetch fails here, before any widget exists
        n_ops = sum(n.op not in gm.TRANSFER_OPS for n in self.model.nodes)
        auto = n_ops > render.COLLAPSE_ABOVE if collapse is None else bool(collapse)
        sizes = gm.collapsible_scopes(self.model)
        loops = {n.name: body_size(n) for n in self.model.nodes if body_size(n) is not None}
        self._title = title
        self.header = _w.HTML()
        self.collapse = _w.Checkbox(value=auto, description="collapse name scopes", indent=False)
        self.fit = _w.Checkbox(value=True, description="fit to width", indent=False)
        self.expand = _w.SelectMultiple(
            options=[(f"{s} ({n} ops)", s) for s, n in sorted(sizes.items()) if n > 1]
            + [(f"{name} (loop body: {n} ops)", name) for name, n in sorted(loops.items())],
            value=[s for s in expanded if sizes.get(s, 0) > 1 or s in loops],
            rows=4,
            description="expand:",
            layout=_w.Layout(width="340px"),
        )
        names = [n.name for n in self.model.nodes if n.op not in gm.TRANSFER_OPS]
        self.fetch = _w.Combobox(
            value=fetch_name,
            options=names[:5000],
            placeholder="op or tensor name",
            description="only what this needs:",
            ensure_option=False,
            continuous_update=False,
            style={"description_width": "initial"},
            layout=_w.Layout(width="360px"),
        )
        self.graph = _w.HTML()
        self.header.add_class("nbdist-graph-header")
        self.graph.add_class("nbdist-graph")
        toggles = _w.VBox([self.collapse, self.fit], layout=_w.Layout(width="190px"))
        controls = _w.HBox([toggles, self.expand, self.fetch], layout=_w.Layout(align_items="flex-start"))
        super().__init__([self.header, controls, self.graph])
        self.add_class("nbdist-graph-view")
        for control in (self.collapse, self.expand, self.fetch):
            control.observe(lambda _: self.refresh(), names="value")
        self.fit.observe(lambda _: self._show(), names="value")
        self.dot_source, self.svg, self._html = "", None, ""
        self.refresh()

    def refresh(self):
        """Redraws with the current control values (called when a control changes)."""
        fetch = self.fetch.value.strip()
        try:
            fetch = gm.fetch_name(fetch) if fetch else None
            if fetch is not None:
                self.model.needed(fetch)
        except ValueError as e:
            self.header.value = f"<span style='color:#b00'>{html.escape(str(e))}</span>"
            return
        drawing = render.draw_graph(
            self.model, fetch, self.collapse.value, tuple(self.expand.value), self._title
        )
        self.dot_source, self.svg, self._html = drawing.source, drawing.svg, drawing.html
        self.header.value = _summary(self.model, self.collapse.value, fetch)
        self._show()

    def _show(self):
        self.graph.value = _frame(self.svg, self.fit.value) if self.svg else self._html

    def _repr_mimebundle_(self, **kwargs):
        data = super()._repr_mimebundle_(**kwargs)
        static = static_bundle(repr(self), svg=self.svg, html=None if self.svg else self.graph.value)
        return {**static, **(data or {}), "text/plain": repr(self)}

    def __repr__(self):
        model = self.model
        tasks = [t for t in model.tasks() if t]
        loose = sum(not model.task[n.name] for n in model.nodes)  # no device requested (e.g. `init`)
        more = f", {loose} with no device requested" if loose else ""
        return f"<nbdist GraphView: {model.mode}, {len(model.nodes)} nodes{more}, tasks {tasks}>"


def show_graph(source, fetch=None, collapse=None, expanded=(), title=None):
    """Shows where each op runs: one colour and one box per task, with a legend.

    Args:
        source: a `tf.Graph`, `tf.Session` or Tensor/Operation (their graph: the *requested*
            devices), a traced `tf.RunMetadata` (the *placed & partitioned* graph of that
            step, ``_Send``/``_Recv`` pairs as red edges labelled tensor, dtype/shape, bytes),
            a ``trace`` event (a step a ``%%dtf_worker`` task traced, `tf.report_trace`), or a
            GraphDef dict.
        fetch: a Tensor, Operation or name: show only the subgraph it needs.
        collapse: draw each name scope as one node per task (None: yes, when the graph has
            more than `render.COLLAPSE_ABOVE` ops, i.e. any). The widget has controls to show
            every op or to expand chosen scopes.
        expanded: scopes to start expanded.
        title: caption of the drawing.

    Returns:
        A `GraphView` widget (a `StaticView` picture when ipywidgets is not installed).
        Without Graphviz's `dot` binary it shows how to install it, plus the DOT source.

    Raises:
        TypeError: for a source that is not a graph; ValueError: for an unknown fetch or a
        RunMetadata that holds no partition graphs.
    """
    if _w is not None:
        return GraphView(source, fetch=fetch, collapse=collapse, expanded=expanded, title=title)
    model, fetch = _model(source, fetch)
    drawing = render.draw_graph(model, fetch, collapse, expanded, title)
    return StaticView(
        f"<nbdist graph: {model.mode}, {len(model.nodes)} nodes>",
        svg=drawing.svg,
        html=None if drawing.svg else drawing.html,
    )
