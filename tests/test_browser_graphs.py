"""Real browser: graphs that read at fit-to-width, measured in headless Chromium.

The demo's in-graph replicated model, one traced step on 4 tasks (2 ps, 2 workers) and on 8
(2 ps, 6 workers), drawn as `show_graph` draws it (name scopes collapsed) in a box as wide as a
notebook's output (900 px), and the demo's HTML report (3 tasks). From the ``<text>`` bounding
boxes: every node's text is at least `render.MIN_TEXT_PX` tall and no two edge labels
intersect. Screenshots go to ``$NB_ARTIFACTS_DIR`` (default: pytest's tmp dir).
"""

import pytest

from browser import artifacts_dir
from nbdist.notebook import render, run_report
from nbdist.notebook.metrics_history import MetricsHistory
from nbdist.notebook.widgets import graph_view
from traced_steps import traced_in_graph_step

pytestmark = pytest.mark.slow
NOTEBOOK_WIDTH_PX = 900  # a notebook's output area (Jupyter Notebook 7, or Lab with a side panel open)

# Per drawing: the height and font size (CSS px) of each node's text; per edge with a label, the
# box around its text; the drawing's width and its box's.
_MEASURE = """svg => {
    const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
    const box = els => {
        const rs = els.map(e => e.getBoundingClientRect());
        return [Math.min(...rs.map(r => r.left)), Math.min(...rs.map(r => r.top)),
                Math.max(...rs.map(r => r.right)), Math.max(...rs.map(r => r.bottom))];
    };
    const nodes = [...svg.querySelectorAll('g.node text')].filter(t => t.textContent.trim()).map(t => ({
        text: t.textContent, height: t.getBoundingClientRect().height,
        font_px: parseFloat(t.getAttribute('font-size')) * scale}));
    const labels = [...svg.querySelectorAll('g.edge')].map(g => [...g.querySelectorAll('text')])
        .filter(ts => ts.length).map(ts => ({text: ts.map(t => t.textContent).join(' '), box: box(ts)}));
    return {nodes, labels, width: svg.getBoundingClientRect().width,
            box_width: svg.parentElement.clientWidth};
}"""


def intersecting(labels):
    """Pairs of edge labels whose boxes share some area."""
    return [
        (a["text"], b["text"])
        for i, a in enumerate(labels)
        for b in labels[i + 1 :]
        if a["box"][0] < b["box"][2] and b["box"][0] < a["box"][2]
        if a["box"][1] < b["box"][3] and b["box"][1] < a["box"][3]
    ]


def expect_readable(m, name):
    """Every node's text at least MIN_TEXT_PX tall (its glyphs too), no edge labels intersecting."""
    small = [(n["text"], round(n["height"], 1)) for n in m["nodes"] if n["height"] < render.MIN_TEXT_PX]
    print(
        f"{name}: drawing {m['width']:.0f} px in a {m['box_width']} px box; node text "
        f"{min(n['height'] for n in m['nodes']):.1f} px tall at the least (font "
        f"{min(n['font_px'] for n in m['nodes']):.1f} px); {len(m['labels'])} edge labels, "
        f"{len(intersecting(m['labels']))} pairs intersecting"
    )
    assert not small, f"{name}: node text under {render.MIN_TEXT_PX} px: {small}"
    assert min(n["font_px"] for n in m["nodes"]) >= render.MIN_TEXT_PX - 0.05
    assert m["labels"] and not intersecting(m["labels"]), intersecting(m["labels"])


@pytest.mark.parametrize(("ps", "workers", "fits"), [(2, 2, True), (2, 6, False)])
def test_a_graph_fitted_to_a_notebooks_width_reads(browser, tmp_path, ps, workers, fits):
    """4 tasks fit the box; 8 do not at 10 px text, so that drawing keeps 10 px and scrolls."""
    view = graph_view.show_graph(traced_in_graph_step(ps, workers))
    assert view.collapse.value and view.fit.value  # the defaults: scopes collapsed, fit to width
    page = browser.new_page(viewport={"width": 1100, "height": 1000})
    try:
        page.set_content(f'<div id="cell" style="width:{NOTEBOOK_WIDTH_PX}px">{view.graph.value}</div>')
        m = page.locator("#cell svg").evaluate(_MEASURE)
        page.locator("#cell").screenshot(
            path=str(artifacts_dir(tmp_path) / f"graph-{ps + workers}-tasks.png")
        )
    finally:
        page.close()
    expect_readable(m, f"{ps + workers} tasks")
    assert (m["width"] <= m["box_width"]) == fits, m["width"]


def test_the_reports_graph_reads(browser, tmp_path):
    """The demo's report (1 ps, 2 workers): the graph fitted to the page, labels apart."""
    report = tmp_path / "report.html"
    report.write_text(run_report.run_report_html(traced_in_graph_step(1, 2), MetricsHistory(), title="graph"))
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    try:
        page.goto(f"file://{report}")
        m = page.locator(".nbdist-graph svg").evaluate(_MEASURE)
        page.locator(".nbdist-graph").screenshot(path=str(artifacts_dir(tmp_path) / "report-graph.png"))
    finally:
        page.close()
    expect_readable(m, "report, 3 tasks")
    assert m["width"] <= m["box_width"]
