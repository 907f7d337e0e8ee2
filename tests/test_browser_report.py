"""Real browser: the `nbdist demo` HTML report, copied alone into an empty folder, opens in
headless Chromium with the graph, the placement, the loss curves and the timeline drawn, and
without fetching anything (no network, no other file). The screenshot goes to
``$NB_ARTIFACTS_DIR`` (default: pytest's tmp dir)."""

import io
import os
import shutil

import pytest

from browser import TASKS, artifacts_dir, expect
from nbdist import demo
from nbdist.notebook import graph_model as gm

pytestmark = pytest.mark.slow


def test_the_report_opens_in_chromium_with_graph_and_curves(browser, tmp_path):
    made = tmp_path / "made"
    made.mkdir()
    old = os.getcwd()
    os.chdir(made)
    try:
        assert demo.main(["--steps", "60"], out=io.StringIO()) == 0
    finally:
        os.chdir(old)
    alone = tmp_path / "alone"
    alone.mkdir()
    report = shutil.copy(made / demo.DEFAULT_REPORT, alone)
    requests = []
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    page.on("request", lambda r: requests.append(r.url))
    try:
        page.goto(f"file://{report}")
        graph = page.locator(".nbdist-graph svg")
        expect(graph).to_be_visible()
        fills = set(
            page.locator(".nbdist-graph svg g.node polygon, .nbdist-graph svg g.node path").evaluate_all(
                "els => els.map(e => e.getAttribute('fill'))"
            )
        )
        assert {gm.task_color(t) for t in TASKS} <= fills, fills
        assert page.locator(".nbdist-graph svg g.nbdist-transfer").count() > 0
        curves = page.locator(".nbdist-loss svg")
        expect(curves).to_be_visible()
        assert curves.bounding_box()["width"] > 400 and curves.bounding_box()["height"] > 200
        assert page.locator(".nbdist-loss svg g[id^='line2d_'] path").count() >= 3
        expect(page.locator(".nbdist-timeline svg")).to_be_visible()
        expect(page.locator(".nbdist-placement-table")).to_be_visible()
        expect(page.locator("h1")).to_have_text("nbdist demo · in-graph")
    finally:
        page.screenshot(path=str(artifacts_dir(tmp_path) / "demo-report.png"), full_page=True)
        page.close()
    assert [u for u in requests if not u.startswith(("file://", "data:"))] == []
    assert [u for u in requests if u.startswith("file://")] == [f"file://{report}"]
