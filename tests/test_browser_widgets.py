"""Real browser: JupyterLab + headless Chromium show the graph view and the live dashboard.

A notebook in a temp dir starts ``tf.LocalCluster(ps=1, worker=2)``, traces one step of
two replicas, shows the placed & partitioned graph, and trains in a background thread while
a `Dashboard` listens to the events. Playwright checks that the graph SVG is in the page
with every task's colour and that the loss picture changes while training runs; the
screenshots go to ``$NB_ARTIFACTS_DIR`` (default: pytest's tmp dir). Servers, browser and
notebook: tests/browser.py (the browser: conftest's ``browser`` fixture); recipe: docs/testing-notebooks.md.
"""

import pytest

from browser import (
    artifacts_dir,
    expect_live_notebook_rendered,
    jupyter_server,
    page_with_screenshots,
    run_all_in_jupyter,
    write_live_notebook,
)

NOTEBOOK = "widgets_live.ipynb"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("lab")  # server root: only the notebook
    write_live_notebook(root / NOTEBOOK)
    with jupyter_server("lab", root, tmp_path_factory.mktemp("labstate")) as server:
        yield server


@pytest.mark.slow
def test_graph_and_live_dashboard_render_and_update_in_jupyterlab(lab, browser, tmp_path):
    with page_with_screenshots(browser, artifacts_dir(tmp_path), "browser-widgets") as page:
        run_all_in_jupyter(page, lab.url(f"/lab/tree/{NOTEBOOK}"))
        expect_live_notebook_rendered(page)
