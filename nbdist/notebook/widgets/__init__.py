"""Widgets that show the distribution: graph, placement, step timeline, live dashboard.

Each is an ipywidgets 8 composite in its own module, loaded on first use; their names, and
which of them ``tf.*`` offers too, are listed once, in `nbdist._widget_names`.
`ClusterStatusView` (cluster_status.py), a `LocalCluster`'s live status table, is made by
`LocalCluster.status_view()`.

Data and drawing live in `nbdist.notebook.render`, `placement_chart`, `dashboard_plot` and
`trace`; the widgets only set widget state. Every view also carries a static SVG/PNG/HTML in
its display bundle, which is what nbviewer, GitHub and other frontends without widgets show;
without ipywidgets the ``show_*`` functions return that static view directly.
"""

import base64

from nbdist._facade import lazy_names
from nbdist._widget_names import TF_WIDGETS, VIEWS

_MODULES = {name: f"{__name__}.{module}" for name, module in {**TF_WIDGETS, **VIEWS}.items()}
__all__ = list(_MODULES)
__all__ += ["StaticView"]
__getattr__ = lazy_names(__name__, _MODULES)


def ipywidgets_or_none():
    """The ipywidgets module, or None when it is not installed (views degrade to `StaticView`)."""
    try:
        import ipywidgets  # noqa: PLC0415 - imported lazily: nbdist works without a notebook
    except ImportError:
        return None
    return ipywidgets


class StaticView:
    """A picture that displays anywhere (no widgets): SVG, PNG and/or HTML, plus plain text.

    Args:
        text: the plain-text form (terminals).
        svg: an ``<svg>`` str; png: PNG bytes; html: an HTML str.
    """

    def __init__(self, text, svg=None, png=None, html=None):
        self.text, self.svg, self.png, self.html = text, svg, png, html

    def _repr_mimebundle_(self, include=None, exclude=None):
        return static_bundle(self.text, self.svg, self.png, self.html)

    def __repr__(self):
        return self.text


def static_bundle(text, svg=None, png=None, html=None):
    """A display bundle with the static forms that are given."""
    data = {"text/plain": text}
    if svg is not None:
        data["image/svg+xml"] = svg
    if png is not None:
        data["image/png"] = base64.b64encode(png).decode("ascii")
    if html is not None:
        data["text/html"] = html
    return data


def png_img_html(png, css_class="", alt=""):
    """An ``<img>`` tag with `png` inlined as a data URI."""
    b64 = base64.b64encode(png).decode("ascii")
    return f'<img class="{css_class}" alt="{alt}" src="data:image/png;base64,{b64}"/>'
