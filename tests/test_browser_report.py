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


def make_report(tmp_path, *options):
    """Runs the demo in a folder of its own; returns its report copied alone into another."""
    made = tmp_path / "made"
    made.mkdir()
    old = os.getcwd()
    os.chdir(made)
    try:
        assert demo.main(["--steps", "60", *options], out=io.StringIO()) == 0
    finally:
        os.chdir(old)
    alone = tmp_path / "alone"
    alone.mkdir()
    return shutil.copy(made / demo.DEFAULT_REPORT, alone)


def test_the_report_opens_in_chromium_with_graph_and_curves(browser, tmp_path):
    report = make_report(tmp_path)
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


def test_the_chinese_report_shows_chinese_headings_in_a_cjk_font(browser, tmp_path):
    """--lang zh: the headings in Chinese, laid out in a font that has their glyphs (the
    screenshot ``demo-report-zh.png`` shows no boxes), the charts' Chinese drawn as paths."""
    report = make_report(tmp_path, "--lang", "zh")
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    try:
        page.goto(f"file://{report}")
        expect(page.locator("h1")).to_have_text("nbdist 演示 · in-graph")
        expect(page.locator("h2")).to_have_text(
            ["切分后的计算图", "设备放置", "各副本的损失曲线", "单步时间线"]
        )
        expect(page.locator(".nbdist-loss svg")).to_be_visible()
        # a font with CJK glyphs is on the page's font stack (.ci/run installs it)
        family = page.locator("h2").first.evaluate("e => getComputedStyle(e).fontFamily")
        assert "WenQuanYi Micro Hei" in family, family
    finally:
        page.screenshot(path=str(artifacts_dir(tmp_path) / "demo-report-zh.png"), full_page=True)
        page.close()
