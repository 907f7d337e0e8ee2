"""Real browser: the playground served as an app by Voila (notebooks/playground.ipynb).

Two runs with different settings, chosen and started by clicking; both runs' curves are in
the picture (the previous one in grey); a third run is left training when the page closes,
and no server process the app started is left once the page is closed and Voila stopped.
Screenshots go to ``$NB_ARTIFACTS_DIR`` (default: pytest's tmp dir). Recipe:
docs/testing-notebooks.md.
"""

import io
import re
import shutil
import time
from pathlib import Path

import psutil
import pytest

from browser import artifacts_dir, chromium, expect, voila_server, widget_errors
from nbdist.notebook import run_charts
from procs import REPO, wait_gone

NOTEBOOK = Path(REPO) / "notebooks" / "playground.ipynb"
RUN_TIMEOUT_MS = 120_000


def server_pids():
    """PIDs of `nbdist.server` processes below this test (Voila → kernel → the cluster's tasks)."""
    pids = set()
    for c in psutil.Process().children(recursive=True):
        try:
            if "nbdist.server" in " ".join(c.cmdline()[:3]):
                pids.add(c.pid)
        except psutil.NoSuchProcess:
            continue
    return pids


def choose(page, control, label):
    """Clicks the button labelled `label` (exactly) of a playground control."""
    buttons = page.locator(f".nbdist-playground-{control} button")
    buttons.filter(has_text=re.compile(rf"^\s*{re.escape(label)}\s*$")).click()


def train_and_watch(page, number, seen_pids):
    """Presses Train and waits until run `number` is done, noting the server PIDs seen meanwhile."""
    page.locator(".nbdist-playground-train").click()
    status = page.locator(".nbdist-playground-status")
    deadline = time.monotonic() + RUN_TIMEOUT_MS / 1000
    while not re.search(rf"run {number} .* done", status.inner_text()):
        assert time.monotonic() < deadline, f"run {number} not done: {status.inner_text()!r}"
        assert "failed" not in status.inner_text(), status.inner_text()
        seen_pids |= server_pids()
        time.sleep(0.2)


def pixels_near(png, rgb, tolerance=10):
    """How many pixels of `png` have the colour `rgb` (0-255 each, within `tolerance`)."""
    import matplotlib.image

    image = matplotlib.image.imread(io.BytesIO(png), format="png")[..., :3] * 255
    return int((abs(image - rgb).max(axis=-1) <= tolerance).sum())


def rgb(hex_color):
    return [int(hex_color[i : i + 2], 16) for i in (1, 3, 5)]


@pytest.mark.slow
def test_two_runs_in_voila_keep_both_curves_and_leave_no_process(tmp_path_factory, tmp_path):
    root = tmp_path_factory.mktemp("playground")
    shutil.copy(NOTEBOOK, root)
    out_dir = artifacts_dir(tmp_path)
    seen_pids = set()
    with (
        chromium() as browser,
        voila_server(root / NOTEBOOK.name, tmp_path_factory.mktemp("state")) as server,
    ):
        page = browser.new_page(viewport={"width": 1280, "height": 1500})
        page.console_errors = []
        page.on("console", lambda m: m.type == "error" and page.console_errors.append(m.text))
        try:
            page.goto(server.url("/"), timeout=RUN_TIMEOUT_MS)
            expect(page.locator(".nbdist-playground-train")).to_be_visible(timeout=RUN_TIMEOUT_MS)
            curves = page.locator("img.nbdist-playground-curves")

            choose(page, "steps", "40")
            choose(page, "mode", "async")
            choose(page, "straggler-ms", "100 ms")
            train_and_watch(page, 1, seen_pids)
            expect(curves).to_be_visible()
            first = curves.screenshot(path=str(out_dir / "playground-run1.png"))

            choose(page, "mode", "sync")
            choose(page, "backup-workers", "1")
            train_and_watch(page, 2, seen_pids)
            expect(page.locator(".nbdist-playground-notice")).to_contain_text("Previous run (async")
            table = page.locator(".nbdist-runs-table tr")
            expect(table).to_have_count(3)  # the header, run 2, run 1
            expect(table.nth(1)).to_contain_text("sync · 1 ps · 3 workers (1 backup)")
            expect(table.nth(2)).to_contain_text("async · 1 ps · 3 workers")
            page.wait_for_timeout(500)  # the last redraw after "done"
            second = curves.screenshot(path=str(out_dir / "playground-run2.png"))
            page.screenshot(path=str(out_dir / "playground-voila.png"), full_page=True)

            grey = rgb(run_charts.PREVIOUS_RUN_COLOR)  # a tint no blend of the other colours makes
            assert pixels_near(first, grey) < 20 and pixels_near(second, grey) > 200, "run 1 not in grey"
            assert pixels_near(second, rgb("#1f77b4")) > 500, "no run 2 curve (worker:0's blue)"
            assert not widget_errors(page), page.console_errors
            assert seen_pids, "no server process was seen while the runs trained"

            # A third run, still training when the page closes: with no backup worker the 400 ms
            # straggler holds back every synchronous step (400 steps at full speed took 2.3 s, and
            # the page once saw "starting" then "done", never "training").
            choose(page, "backup-workers", "0")
            choose(page, "straggler-ms", "400 ms")
            choose(page, "steps", "400")
            page.locator(".nbdist-playground-train").click()
            expect(page.locator(".nbdist-playground-status")).to_contain_text("run 3", timeout=RUN_TIMEOUT_MS)
            expect(page.locator(".nbdist-playground-status")).to_contain_text(
                "training", timeout=RUN_TIMEOUT_MS
            )
            seen_pids |= server_pids()
        finally:
            page.close()
    assert wait_gone(sorted(seen_pids), 15.0), (
        f"left running: {sorted(p for p in seen_pids if psutil.pid_exists(p))}"
    )
