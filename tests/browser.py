"""Notebook and real-browser test helpers: the nbclient runner, Jupyter front ends on
127.0.0.1 and headless Chromium.

Shared by test_notebooks.py (nbclient), test_browser_widgets.py (JupyterLab 4),
test_browser_frontends.py (Notebook 7, Voila, nbconvert's static HTML) and
test_browser_report.py; their one browser is conftest's ``browser`` fixture (`chromium`
here). Each server runs from a temp dir with its own JUPYTER_* config, runtime, settings and
workspace dirs, is stopped by PID (SIGTERM, then SIGKILL) and must leave no child process
behind. Recipe: docs/testing-notebooks.md.
"""

import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import nbformat
import psutil
import pytest

from nbdist.notebook import graph_model as gm
from procs import free_port, kernel_env, wait_gone

try:
    from playwright import sync_api
except ImportError:  # the nbclient runner works without it; `chromium()` skips the test
    sync_api = None
expect = sync_api.expect if sync_api else None
CHROMIUM = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or shutil.which("chromium-browser")
TASKS = ["/job:ps/task:0", "/job:worker/task:0", "/job:worker/task:1"]
VIEWPORT = {"width": 1400, "height": 2400}  # tall: every cell and widget on screen at once

_SETUP = """%load_ext nbdist
import hashlib, threading, time
import numpy as np
import nbdist as tf
from nbdist.notebook import event_stream as events
np.random.seed(0)"""
_MODEL = """rng = np.random.RandomState(0)
X = rng.randn(256, 3).astype(np.float32)
Y = X @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.3
with tf.device("/job:ps/task:0"):
    w = tf.Variable(tf.zeros([3, 1]), name="w")
    b = tf.Variable(tf.zeros([1]), name="b")
    global_step = tf.train.get_or_create_global_step()
replicas = []
for i in range(2):
    with tf.device(f"/job:worker/task:{i}"), tf.name_scope(f"replica{i}"):
        xs = tf.placeholder(tf.float32, [None, 3], name="x")
        ys = tf.placeholder(tf.float32, [None, 1], name="y")
        loss = tf.reduce_mean(tf.square(tf.matmul(xs, w) + b - ys))
        train = tf.train.GradientDescentOptimizer(0.05).minimize(loss, global_step=global_step)
    replicas.append((xs, ys, loss, train))
sess = tf.Session(cluster.target("worker", 0))
sess.run(tf.global_variables_initializer())
md = tf.RunMetadata()
feed = {r[0]: X[:32] for r in replicas} | {r[1]: Y[:32] for r in replicas}
_ = sess.run([r[3] for r in replicas], feed, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
             run_metadata=md)"""
_TRAIN = """def train_loop(steps={steps}):
    for _ in range(steps):
        for i, (xs, ys, loss, train) in enumerate(replicas):
            idx = np.random.randint(0, len(X), 32)
            _, value, step = sess.run([train, loss, global_step], {{xs: X[idx], ys: Y[idx]}})
            events.publish({{"kind": "metric", "task": f"/job:worker/task:{{i}}", "step": int(step),
                            "time": time.time(), "metrics": {{"loss": float(value)}}}})
        time.sleep(0.12)

def finish():
    dash.stop()
    sess.close()
    cluster.stop()
    print("training finished, final picture sha256", hashlib.sha256(dash.png).hexdigest())

trainer = threading.Thread(target={target}, daemon=True)
trainer.start()"""


def write_live_notebook(path, join=True, steps=50):
    """Writes the live-widgets notebook: cluster, traced step, graph view, dashboard, training.

    Args:
        path: where to write the ``.ipynb``.
        join: end with a ``trainer.join(); finish()`` cell (JupyterLab, Notebook 7, nbclient).
            Without it the training thread calls ``finish()`` itself, so the last cell returns
            at once and the dashboard updates after the notebook has "run" (Voila).
        steps: training steps per replica (0.12 s each).
    """
    target = "train_loop" if join else "lambda: (train_loop(), finish())"
    cells = [
        _SETUP,
        "cluster = tf.LocalCluster(ps=1, worker=2)",
        _MODEL,
        "tf.show_graph(md)",
        'dash = tf.Dashboard(title="2 replicas, async SGD")\ndash',
        _TRAIN.format(steps=steps, target=target),
    ]
    if join:
        cells.append("trainer.join()\nfinish()")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


def execute_notebook(nb, cwd, store_widget_state=True, timeout_s=120):
    """Runs every cell of `nb` in order in a real ``python3`` kernel (nbclient) started in
    `cwd` with `kernel_env()`; the outputs (and, if asked, the widget state) land in `nb`.

    Returns:
        `nb`. A cell that raises stops the run with nbclient's ``CellExecutionError``.
    """
    from nbclient import NotebookClient

    NotebookClient(
        nb,
        timeout=timeout_s,
        kernel_name="python3",
        resources={"metadata": {"path": str(cwd)}},
        store_widget_state=store_widget_state,
    ).execute(env=kernel_env())
    return nb


# -- servers ------------------------------------------------------------------------------------------
@dataclass
class Server:
    """A running front end: ``base`` URL, access ``token`` ("" for none) and its log file."""

    base: str
    token: str
    log: Path

    def url(self, path):
        return f"{self.base}{path}?token={self.token}" if self.token else f"{self.base}{path}"


def isolated_env(state):
    """The environment for a server: nbdist importable, every JUPYTER_* dir under `state`,
    no news/update toast, and notebook windowing off (off-screen cells stay in the DOM)."""
    env = kernel_env()
    for var, sub in [
        ("JUPYTER_CONFIG_DIR", "cfg"),
        ("JUPYTER_RUNTIME_DIR", "runtime"),
        ("JUPYTER_DATA_DIR", "data"),
        ("JUPYTERLAB_SETTINGS_DIR", "settings"),
        ("JUPYTERLAB_WORKSPACES_DIR", "workspaces"),
    ]:
        env[var] = str(state / sub)
    for plugin, settings in [
        ("apputils-extension/notification", {"fetchNews": "false", "checkForUpdates": False}),
        ("notebook-extension/tracker", {"windowingMode": "none"}),
    ]:
        f = state / "settings" / "@jupyterlab" / f"{plugin}.jupyterlab-settings"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(settings))
    return env


@contextlib.contextmanager
def jupyter_server(app, root, state, env=None):
    """Runs ``jupyter lab`` or ``jupyter notebook`` (`app`) on `root` with ``window.jupyterapp``
    exposed; yields a `Server`. Logs and settings go to `state`, outside the file browser;
    `env` adds variables to the server's environment (its kernels and their clusters see them)."""
    token, port = secrets.token_hex(16), free_port()
    app_class = {"lab": "LabApp", "notebook": "JupyterNotebookApp"}[app]
    argv = [
        "jupyter",
        app,
        "--no-browser",
        f"--IdentityProvider.token={token}",
        f"--port={port}",
        "--ip=127.0.0.1",
        "--ServerApp.port_retries=0",
        f"--ServerApp.root_dir={root}",
        f"--{app_class}.expose_app_in_browser=True",
    ] + (["--allow-root"] if os.geteuid() == 0 else [])
    server = Server(f"http://127.0.0.1:{port}", token, state / f"jupyter-{app}.log")
    with _serve(argv, root, {**isolated_env(state), **(env or {})}, server, "/api/status"):
        yield server


@contextlib.contextmanager
def voila_server(notebook, state):
    """Serves `notebook` with Voila (no token; only 127.0.0.1); yields a `Server` for ``/``."""
    port = free_port()
    argv = [
        "voila",
        str(notebook),
        "--no-browser",
        f"--port={port}",
        "--Voila.ip=127.0.0.1",
        "--Voila.port_retries=0",
        "--show_tracebacks=True",
        f"--Voila.connection_dir_root={state}",  # default: straight into /tmp
    ]
    server = Server(f"http://127.0.0.1:{port}", "", state / "voila.log")
    # Any static file answers without starting a kernel (GET / would run the notebook).
    with _serve(argv, notebook.parent, isolated_env(state), server, "/voila/static/voila.js"):
        yield server


@contextlib.contextmanager
def _serve(argv, cwd, env, server, ready_path, timeout_s=60):
    with open(server.log, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", *argv], cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT
        )
        try:
            _wait_until_serving(proc, server.url(ready_path), server.log, timeout_s)
            yield server
        finally:
            _stop(proc, server.log)


def _wait_until_serving(proc, url, log_path, timeout_s):
    deadline = time.monotonic() + timeout_s
    while True:
        assert proc.poll() is None, log_path.read_text()
        try:
            with urllib.request.urlopen(url, timeout=2):  # noqa: S310 - our own local server
                return
        except urllib.error.HTTPError as e:
            raise AssertionError(f"{url} answered {e.code}; log: {log_path.read_text()}") from e
        except OSError:
            assert time.monotonic() < deadline, f"{url} did not answer in {timeout_s} s"
            time.sleep(0.25)


def _stop(proc, log_path):
    """SIGTERM to the server's PID (it shuts its kernels down), then SIGKILL; then checks that
    its kernels and their clusters are gone too, killing (by PID) and reporting any that are not."""
    try:
        children = psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        children = []
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if wait_gone([c.pid for c in children], timeout_s=15):
        return
    left = [c for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]
    for c in left:
        with contextlib.suppress(psutil.NoSuchProcess):
            c.kill()
    raise AssertionError(f"the server left {[' '.join(c.cmdline()[:4]) for c in left]}; log: {log_path}")


# -- browser ------------------------------------------------------------------------------------------
@contextlib.contextmanager
def chromium():
    """Headless Chromium (the system one, ``$CHROMIUM_PATH`` or on PATH) driven by Playwright;
    the test is skipped where Playwright is not installed."""
    if sync_api is None:
        pytest.skip("playwright is not installed (pip install -e '.[test]')")
    with sync_api.sync_playwright() as p:
        kwargs = {"headless": True, "args": ["--no-sandbox"]}  # --no-sandbox: root in containers
        if CHROMIUM:
            kwargs["executable_path"] = CHROMIUM
        b = p.chromium.launch(**kwargs)
        try:
            yield b
        finally:
            b.close()


def artifacts_dir(tmp_path):
    """``$NB_ARTIFACTS_DIR`` (created), else `tmp_path`: where screenshots go."""
    out = Path(os.environ.get("NB_ARTIFACTS_DIR", tmp_path))
    out.mkdir(parents=True, exist_ok=True)
    return out


@contextlib.contextmanager
def page_with_screenshots(browser, out_dir, prefix):
    """A tall page that records console errors (``page.console_errors``); on exit, whatever
    happened, saves ``<prefix>-page.png`` and a picture of each nbdist widget that is visible
    (``<prefix>-dashboard.png``, ``<prefix>-dashboard-2.png``, ...), then closes it."""
    page = browser.new_page(viewport=VIEWPORT)
    page.console_errors = []
    page.on("console", lambda m: m.type == "error" and page.console_errors.append(m.text))
    try:
        yield page
    finally:
        page.screenshot(path=str(out_dir / f"{prefix}-page.png"))
        for selector, name in [(".nbdist-graph-view", "graph-view"), (".nbdist-dashboard", "dashboard")]:
            widgets = page.locator(selector)
            for i in range(widgets.count()):
                path = out_dir / f"{prefix}-{name}{f'-{i + 1}' if i else ''}.png"
                # (a picture of what is shown, not a check: one that is not, is left out and
                # the test's own error, if any, is the one reported)
                with contextlib.suppress(sync_api.Error):
                    widgets.nth(i).screenshot(path=str(path), timeout=10_000)
        page.close()


def run_all_in_jupyter(page, url):
    """Opens a notebook in JupyterLab or Notebook 7 (both expose ``window.jupyterapp``), waits
    until it is the current tab with an idle kernel (Lab may restore another notebook of the
    same server's workspace as well) and starts "run all cells" without waiting for the cells
    to finish."""
    page.goto(url)
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=90_000)
    page.wait_for_function(
        """(name) => {
            const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
            const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
            return k && k.status === 'idle' && w.context.path.split('/').pop() === name;
        }""",
        arg=urllib.parse.unquote(url.split("?")[0].rsplit("/", 1)[-1]),
        timeout=90_000,
    )
    # Fire and forget: awaiting the command's promise would only return after the last cell.
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")


def saved_static_png(page):
    """The ``image/png`` (base64) that the notebook file would store for the dashboard's output
    (JupyterLab and Notebook 7)."""
    return page.evaluate(
        """() => {
            const cells = window.jupyterapp.shell.currentWidget.content.model.toJSON().cells;
            const cell = cells.find(c => String(c.source).startsWith("dash = tf.Dashboard"));
            const out = cell && cell.outputs.find(o => o.data && o.data["image/png"]);
            return out ? out.data["image/png"] : null;
        }"""
    )


def expect_graph_with_task_colors(page, timeout_ms=120_000):
    """The graph view's inline SVG is visible, every task's colour fills some node, and the
    placed graph has ``_Send``/``_Recv`` edges."""
    expect(page.locator(".nbdist-graph svg")).to_be_visible(timeout=timeout_ms)
    fills = set(
        page.locator(".nbdist-graph svg g.node polygon, .nbdist-graph svg g.node path").evaluate_all(
            "els => els.map(e => e.getAttribute('fill'))"
        )
    )
    assert {gm.task_color(t) for t in TASKS} <= fills, fills
    assert page.locator(".nbdist-graph svg g.nbdist-transfer").count() > 0
    expect(page.locator(".nbdist-graph-header")).to_contain_text("_Send/_Recv pairs")


def loss_pictures_while_training(scope, timeout_s=90, enough=None):
    """Distinct states of the dashboard in `scope` (a page, or a locator of one dashboard of
    several) until it says stopped, `timeout_s` passed, or ``enough(states)``: ``(seconds since
    the first, loss image src, headline)``. While training keeps the cores busy pictures are
    budgeted and the headline's numbers (global step, reports) change every second between them."""
    curve, status = scope.locator("img.nbdist-loss").first, scope.locator(".nbdist-dashboard-title").first
    expect(curve).to_be_visible(timeout=60_000)
    assert curve.evaluate("img => img.naturalWidth") > 0
    seen, began, deadline = [], time.monotonic(), time.monotonic() + timeout_s
    while time.monotonic() < deadline and not (enough and enough(seen)):
        state = (curve.get_attribute("src"), status.inner_text())
        if state[0] and (not seen or seen[-1][1:] != state):
            seen.append((round(time.monotonic() - began, 1), *state))
        if "(stopped)" in state[1]:
            break
        time.sleep(0.2)
    return seen


def expect_live_dashboard(seen):
    """The dashboard changed while training ran: a new picture at least once (the final one,
    at the least) and its numbers at least three times."""
    pictures = {src for _, src, _ in seen}
    assert len(pictures) >= 2, f"the loss picture changed only {len(pictures) - 1} times"
    assert len({text for *_, text in seen}) >= 3, f"the dashboard's headline changed only: {seen}"


def pictures_after_training_began(seen, within_s):
    """``(seconds, global step)`` of the first live picture that shows a global step above 0
    and of the new pictures in the `within_s` after it ([] when there is none). A picture's
    step is the headline's when it came: the dashboard sets its numbers, then the picture
    drawn with them (later numbers only come a second later)."""
    pictures = []  # (seconds, global step) of each picture that came while live and watched
    for (t, src, headline), before in zip(seen, [None, *seen]):
        step = re.search(r"\(live\) .*global step (\d+)", headline)
        if step and before is not None and src != before[1]:
            pictures.append((t, int(step[1])))
    first = next((i for i, (_, step) in enumerate(pictures) if step > 0), None)
    if first is None:
        return []
    return [(t, step) for t, step in pictures[first:] if t - pictures[first][0] <= within_s]


def widget_errors(page):
    """Console errors that mention widgets (a widget manager or view that failed)."""
    return [e for e in page.console_errors if "widget" in e.lower()]


def expect_live_notebook_rendered(page):
    """The live notebook, run in Lab or Notebook 7: the graph with task colours, a loss picture
    that changes while training runs, the dashboard table, the last cell's output, no widget
    errors, and the saved static PNG replaced by the final picture (by `dash.stop()`)."""
    expect_graph_with_task_colors(page)
    expect(page.locator("img.nbdist-loss")).to_be_visible(timeout=60_000)
    saved_before = saved_static_png(page)
    expect_live_dashboard(loss_pictures_while_training(page))
    expect(page.locator(".nbdist-dashboard-table")).to_contain_text("/job:worker/task:1")
    expect(page.locator(".jp-OutputArea-output", has_text="training finished")).to_be_visible(timeout=60_000)
    assert not widget_errors(page), page.console_errors
    assert saved_before and saved_static_png(page) not in (None, saved_before)
