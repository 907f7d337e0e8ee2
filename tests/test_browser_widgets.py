"""Real browser: JupyterLab + headless Chromium show the graph view and the live dashboard.

A notebook in a temp dir starts ``tf.LocalCluster(ps=1, worker=2)``, traces one step of
two replicas, shows the placed & partitioned graph, and trains in a background thread while
a `Dashboard` listens to the events. Playwright checks that the graph SVG is in the page
with every task's colour and that the loss picture changes while training runs. Notebook 06
runs as a learner runs it (its synchronous training made longer): its dashboard's picture
follows the training while it runs. The screenshots go to ``$NB_ARTIFACTS_DIR`` (default:
pytest's tmp dir). Servers, browser and notebook: tests/browser.py (the browser: conftest's
``browser`` fixture); recipe: docs/testing-notebooks.md.
"""

import shutil
from pathlib import Path

import pytest

from browser import (
    artifacts_dir,
    expect_live_notebook_rendered,
    jupyter_server,
    loss_pictures_while_training,
    page_with_screenshots,
    pictures_after_training_began,
    run_all_in_jupyter,
    write_live_notebook,
)
from procs import REPO

NOTEBOOK = "widgets_live.ipynb"
NOTEBOOK_06 = "06_async_vs_sync.ipynb"
NB06_STEPS = 20_000  # synchronous steps (the notebook: 200): more than the test watches; it stops the kernel


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("lab")  # server root: only the notebooks
    write_live_notebook(root / NOTEBOOK)
    shutil.copy(Path(REPO) / "notebooks" / NOTEBOOK_06, root)
    state = tmp_path_factory.mktemp("labstate")
    with jupyter_server("lab", root, state, env={"NBDIST_NB06_STEPS": str(NB06_STEPS)}) as server:
        yield server


@pytest.mark.slow
def test_graph_and_live_dashboard_render_and_update_in_jupyterlab(lab, browser, tmp_path):
    with page_with_screenshots(browser, artifacts_dir(tmp_path), "browser-widgets") as page:
        run_all_in_jupyter(page, lab.url(f"/lab/tree/{NOTEBOOK}"))
        expect_live_notebook_rendered(page)


@pytest.mark.slow
def test_notebook_06s_dashboard_pictures_follow_the_training_while_it_runs(lab, browser, tmp_path):
    """The synchronous run's dashboard: a picture that shows a global step above 0 while
    training runs (the first picture, of the first report, costs matplotlib's warm-up: not
    charged to the budget), then at least 2 new pictures within 20 s (at least one every
    10 s while reports come)."""
    with page_with_screenshots(browser, artifacts_dir(tmp_path), "notebook06") as page:
        # (its own workspace: Lab would restore the other test's notebook beside it)
        run_all_in_jupyter(page, lab.url(f"/lab/workspaces/nb06/tree/{NOTEBOOK_06}"))
        sync_dashboard = page.locator(".nbdist-dashboard").nth(1)

        def enough(seen):  # three pictures, or 20 s since the first that showed training
            pictures = pictures_after_training_began(seen, 20)
            return pictures and (len(pictures) >= 3 or seen[-1][0] - pictures[0][0] > 20)

        seen = loss_pictures_while_training(sync_dashboard, timeout_s=120, enough=enough)
        pictures = pictures_after_training_began(seen, 20)
        assert pictures, f"no picture showed a global step above 0 while training ran: {seen}"
        assert len(pictures) >= 3, f"pictures (seconds, global step) in the 20 s after the first: {pictures}"
