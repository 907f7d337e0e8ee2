"""Real browser: JupyterLab + headless Chromium show the graph view and the live dashboard.

A notebook in a temp dir starts ``tf.LocalCluster(ps=1, worker=2)``, traces one step of
two replicas, shows the placed & partitioned graph, and trains in a background thread while
a `Dashboard` listens to the events. Playwright checks that the graph SVG is in the page
with every task's colour and that the loss picture changes while training runs; the
screenshots go to ``$NB_ARTIFACTS_DIR`` (default: pytest's tmp dir). Servers, browser and
notebook: tests/browser.py; recipe: docs/testing-notebooks.md.
"""

import pytest

from browser import (
    artifacts_dir,
    chromium,
    expect,
    expect_graph_with_task_colors,
    jupyter_server,
    loss_pictures_while_training,
    page_with_screenshots,
    run_all_in_jupyter,
    saved_static_png,
    widget_errors,
    write_live_notebook,
)

NOTEBOOK = "widgets_live.ipynb"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("lab")  # server root: only the notebook
    write_live_notebook(root / NOTEBOOK)
    with jupyter_server("lab", root, tmp_path_factory.mktemp("labstate")) as server:
        yield server


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


@pytest.mark.slow
def test_graph_and_live_dashboard_render_and_update_in_jupyterlab(lab, browser, tmp_path):
    with page_with_screenshots(browser, artifacts_dir(tmp_path), "browser-widgets") as page:
        run_all_in_jupyter(page, lab.url(f"/lab/tree/{NOTEBOOK}"))
        expect_graph_with_task_colors(page)

        expect(page.locator("img.nbdist-loss")).to_be_visible(timeout=60_000)
        saved_before = saved_static_png(page)
        seen = loss_pictures_while_training(page)
        assert len(set(seen)) >= 3, f"the loss picture changed only {len(set(seen))} times"
        expect(page.locator(".nbdist-dashboard-table")).to_contain_text("/job:worker/task:1")
        expect(page.locator(".jp-OutputArea-output", has_text="training finished")).to_be_visible(
            timeout=60_000
        )
        assert not widget_errors(page), page.console_errors
        # dash.stop() (in a later cell) replaced the output's static PNG with the final picture.
        assert saved_before and saved_static_png(page) not in (None, saved_before)
