"""Real browser, other front ends: Notebook 7 and Voila render the widgets; nbconvert's HTML
(what nbviewer and GitHub show) falls back to the static pictures.

The notebook (tests/browser.py) starts ``tf.LocalCluster(ps=1, worker=2)``, shows the placed
& partitioned graph of a traced step and a `Dashboard` fed by a background training thread.
Screenshots go to ``$NB_ARTIFACTS_DIR`` (default: pytest's tmp dir). Recipe:
docs/testing-notebooks.md.
"""

import base64
import hashlib
import re
import subprocess
import sys

import nbformat
import pytest

from browser import (
    TASKS,
    artifacts_dir,
    execute_notebook,
    expect,
    expect_graph_with_task_colors,
    expect_live_dashboard,
    expect_live_notebook_rendered,
    isolated_env,
    jupyter_server,
    loss_pictures_while_training,
    page_with_screenshots,
    run_all_in_jupyter,
    voila_server,
    widget_errors,
    write_live_notebook,
)
from nbdist.notebook import graph_model as gm

NOTEBOOK = "widgets_live.ipynb"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.mark.slow
def test_graph_and_live_dashboard_render_and_update_in_notebook7(browser, tmp_path_factory, tmp_path):
    root = tmp_path_factory.mktemp("nb7")
    write_live_notebook(root / NOTEBOOK)
    with (
        jupyter_server("notebook", root, tmp_path_factory.mktemp("nb7state")) as server,
        page_with_screenshots(browser, artifacts_dir(tmp_path), "notebook7") as page,
    ):
        run_all_in_jupyter(page, server.url(f"/notebooks/{NOTEBOOK}"))
        expect_live_notebook_rendered(page)


@pytest.mark.slow
def test_graph_and_live_dashboard_render_and_update_in_voila(browser, tmp_path_factory, tmp_path):
    root = tmp_path_factory.mktemp("voila")
    # No join cell: Voila shows the page only after the last cell, then the curve moves live.
    # 100 steps (12 s): on a loaded machine Voila took more than the 50 steps' 6 s to show the
    # page, and the dashboard was first seen with 94 of that run's 100 reports, its picture final.
    write_live_notebook(root / NOTEBOOK, join=False, steps=100)
    with (
        voila_server(root / NOTEBOOK, tmp_path_factory.mktemp("voilastate")) as server,
        page_with_screenshots(browser, artifacts_dir(tmp_path), "voila") as page,
    ):
        page.goto(server.url("/"), timeout=120_000)
        expect_graph_with_task_colors(page)
        expect_live_dashboard(loss_pictures_while_training(page))
        expect(page.locator(".nbdist-dashboard-title")).to_contain_text("(stopped)")
        expect(page.locator(".nbdist-dashboard-table")).to_contain_text("/job:worker/task:1")
        assert not widget_errors(page), page.console_errors


@pytest.fixture
def saved_notebook(tmp_path):
    """The live notebook run top to bottom and saved as JupyterLab saves it by default:
    widget views in the outputs, but no widget state in the metadata."""
    path = tmp_path / NOTEBOOK
    write_live_notebook(path)
    nb = execute_notebook(nbformat.read(path, as_version=4), tmp_path, store_widget_state=False)
    nbformat.write(nb, path)
    return path, nb


def _output(nb, source_start):
    cell = next(c for c in nb.cells if c.source.startswith(source_start))
    return next(o for o in cell.outputs if "data" in o)


@pytest.mark.slow
def test_nbconvert_html_shows_the_static_graph_and_final_dashboard(saved_notebook, browser, tmp_path):
    path, nb = saved_notebook
    graph_out, dash_out = _output(nb, "tf.show_graph"), _output(nb, "dash = tf.Dashboard")
    assert WIDGET_VIEW in graph_out["data"] and WIDGET_VIEW in dash_out["data"]  # widget front ends
    final_sha256 = re.search(r"final picture sha256 (\w+)", nb.cells[-1].outputs[-1]["text"]).group(1)
    dash_png = dash_out["data"]["image/png"]
    assert hashlib.sha256(base64.b64decode(dash_png)).hexdigest() == final_sha256  # dash.stop() updated it

    subprocess.run(
        [sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", str(path)],
        cwd=tmp_path,
        env=isolated_env(tmp_path / "state"),
        check=True,
        capture_output=True,
        timeout=120,
    )
    html = path.with_suffix(".html").read_text()
    assert f'<script type="{WIDGET_VIEW}">' not in html  # no widget state: no widget placeholders
    # nbconvert 7 inlines the SVG as an <img> data URI (so no hover titles, but the same picture).
    svg_uris = re.findall(r'src="data:image/svg\+xml;base64,([^"]+)"', html)
    svgs = [base64.b64decode(u).decode() for u in svg_uris]
    assert graph_out["data"]["image/svg+xml"] in svgs, f"{len(svgs)} SVG images in the HTML"
    assert all(f'fill="{gm.task_color(t)}"' in svgs[0] for t in TASKS)
    assert f"data:image/png;base64,{dash_png}" in html

    out_dir = artifacts_dir(tmp_path)
    with page_with_screenshots(browser, out_dir, "nbconvert") as page:
        page.route(re.compile(r"^(?!file:)"), lambda route: route.abort())  # offline, like a static viewer
        page.goto(path.with_suffix(".html").as_uri(), wait_until="domcontentloaded", timeout=60_000)
        for name, img in [
            ("graph", page.locator(".jp-RenderedSVG img").first),
            ("dashboard", page.locator(f'img[src="data:image/png;base64,{dash_png}"]')),
        ]:
            expect(img).to_be_visible(timeout=30_000)
            assert img.evaluate("img => img.complete && img.naturalWidth") > 0, name
            img.screenshot(path=str(out_dir / f"nbconvert-{name}.png"))
