"""Real browser: JupyterLab + headless Chromium show the graph view and the live dashboard.

A notebook in a temp dir starts ``tf.LocalCluster(ps=1, worker=2)``, traces one step of
two replicas, shows the placed & partitioned graph, and trains in a background thread while
a `Dashboard` listens to the events. Playwright checks that the graph SVG is in the page
with every task's colour and that the loss picture changes while training runs; the
screenshots go to ``$NB_ARTIFACTS_DIR`` (default: pytest's tmp dir). Recipe:
docs/testing-notebooks.md (JupyterLab on 127.0.0.1, Debian's chromium, no Xvfb).
"""

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from nbdist.notebook import graph_model as gm
from procs import REPO, free_port

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect
CHROMIUM = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or shutil.which("chromium-browser")
TASKS = ["/job:ps/task:0", "/job:worker/task:0", "/job:worker/task:1"]
NOTEBOOK = "widgets_live.ipynb"

CELLS = [
    """%load_ext nbdist
import threading, time
import numpy as np
import nbdist as tf
from nbdist.notebook import events
np.random.seed(0)""",
    """cluster = tf.LocalCluster(ps=1, worker=2)""",
    """rng = np.random.RandomState(0)
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
             run_metadata=md)""",
    """tf.show_graph(md)""",
    """dash = tf.Dashboard(title="2 replicas, async SGD")
dash""",
    """def train_loop(steps=30):
    for _ in range(steps):
        for i, (xs, ys, loss, train) in enumerate(replicas):
            idx = np.random.randint(0, len(X), 32)
            _, value, step = sess.run([train, loss, global_step], {xs: X[idx], ys: Y[idx]})
            events.publish({"kind": "metric", "task": f"/job:worker/task:{i}", "step": int(step),
                            "time": time.time(), "metrics": {"loss": float(value)}})
        time.sleep(0.12)

trainer = threading.Thread(target=train_loop, daemon=True)
trainer.start()""",
    """trainer.join()
dash.stop()
sess.close()
cluster.stop()
print("training finished")""",
]


def _write_notebook(path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("lab")  # server root: only the notebook
    state = tmp_path_factory.mktemp("labstate")  # config, settings, workspaces, log
    _write_notebook(root / NOTEBOOK)
    token, port = secrets.token_hex(16), free_port()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH")) if p))
    env.pop("NBDIST_CLUSTER_KEY", None)
    for var, sub in [
        ("JUPYTER_CONFIG_DIR", "cfg"),
        ("JUPYTER_RUNTIME_DIR", "runtime"),
        ("JUPYTERLAB_SETTINGS_DIR", "settings"),
        ("JUPYTERLAB_WORKSPACES_DIR", "workspaces"),
    ]:
        env[var] = str(state / sub)
    for plugin, settings in [
        ("apputils-extension/notification", {"fetchNews": "false", "checkForUpdates": False}),
        ("notebook-extension/tracker", {"windowingMode": "none"}),  # keep every cell in the DOM
    ]:
        f = state / "settings" / "@jupyterlab" / f"{plugin}.jupyterlab-settings"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(settings))
    log_path = state / "jupyter-lab.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "jupyter",
                "lab",
                "--no-browser",
                f"--IdentityProvider.token={token}",
                f"--port={port}",
                "--ip=127.0.0.1",
                "--ServerApp.port_retries=0",
                f"--ServerApp.root_dir={root}",
                "--LabApp.expose_app_in_browser=True",
            ]
            + (["--allow-root"] if os.geteuid() == 0 else []),
            cwd=root,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            _wait_until_serving(proc, base, token, log_path)
            yield {"base": base, "token": token, "log": log_path}
        finally:
            proc.send_signal(signal.SIGTERM)  # this PID only: the server shuts its kernels down
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _wait_until_serving(proc, base, token, log_path, timeout_s=60):
    deadline = time.monotonic() + timeout_s
    while True:
        assert proc.poll() is None, log_path.read_text()
        try:
            with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2) as r:  # noqa: S310 - our own local server
                json.load(r)
            return
        except OSError:
            assert time.monotonic() < deadline, f"jupyter lab did not start in {timeout_s} s"
            time.sleep(0.25)


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        kwargs = {"headless": True, "args": ["--no-sandbox"]}  # --no-sandbox: root in containers
        if CHROMIUM:
            kwargs["executable_path"] = CHROMIUM
        b = p.chromium.launch(**kwargs)
        yield b
        b.close()


def _open_and_run_all(page, lab):
    page.goto(f"{lab['base']}/lab/tree/{NOTEBOOK}?token={lab['token']}")
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=90_000)
    page.wait_for_function(
        """() => {
            const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
            const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
            return k && k.status === 'idle';
        }""",
        timeout=90_000,
    )
    # Fire and forget: awaiting the command's promise would only return after the last cell.
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")


def _loss_pictures_while_training(page, timeout_s=90):
    """Distinct ``src`` values of the dashboard's loss image until the dashboard says stopped."""
    curve, status = page.locator("img.nbdist-loss"), page.locator(".nbdist-dashboard-title")
    expect(curve).to_be_visible(timeout=60_000)
    seen, deadline = [], time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        src = curve.get_attribute("src")
        if src and (not seen or seen[-1] != src):
            seen.append(src)
        if "(stopped)" in status.inner_text():
            break
        time.sleep(0.2)
    return seen


def _saved_static_png(page):
    """The ``image/png`` that the notebook file would store for the dashboard's output."""
    return page.evaluate(
        """() => {
            const cells = window.jupyterapp.shell.currentWidget.content.model.toJSON().cells;
            const cell = cells.find(c => String(c.source).startsWith("dash = tf.Dashboard"));
            const out = cell && cell.outputs.find(o => o.data && o.data["image/png"]);
            return out ? out.data["image/png"] : null;
        }"""
    )


@pytest.mark.slow
def test_graph_and_live_dashboard_render_and_update_in_jupyterlab(lab, browser, tmp_path):
    out_dir = Path(os.environ.get("NB_ARTIFACTS_DIR", tmp_path))
    out_dir.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": 1400, "height": 2400})
    console_errors = []
    page.on("console", lambda m: m.type == "error" and console_errors.append(m.text))
    try:
        _open_and_run_all(page, lab)
        svg = page.locator(".nbdist-graph svg")
        expect(svg).to_be_visible(timeout=120_000)
        fills = set(
            page.locator(".nbdist-graph svg g.node polygon, .nbdist-graph svg g.node path").evaluate_all(
                "els => els.map(e => e.getAttribute('fill'))"
            )
        )
        assert {gm.task_color(t) for t in TASKS} <= fills, fills
        assert page.locator(".nbdist-graph svg g.nbdist-transfer").count() > 0  # Send/Recv edges
        expect(page.locator(".nbdist-graph-header")).to_contain_text("_Send/_Recv pairs")

        expect(page.locator("img.nbdist-loss")).to_be_visible(timeout=60_000)
        saved_before = _saved_static_png(page)
        seen = _loss_pictures_while_training(page)
        assert len(set(seen)) >= 3, f"the loss picture changed only {len(set(seen))} times"
        expect(page.locator(".nbdist-dashboard-table")).to_contain_text("/job:worker/task:1")
        expect(page.locator(".jp-OutputArea-output", has_text="training finished")).to_be_visible(
            timeout=60_000
        )
        assert not [e for e in console_errors if "widget" in e.lower()], console_errors
        # dash.stop() (in a later cell) replaced the output's static PNG with the final picture.
        assert saved_before and _saved_static_png(page) not in (None, saved_before)
    finally:
        page.screenshot(path=str(out_dir / "browser-widgets-page.png"))
        for selector, name in [
            (".nbdist-graph-view", "browser-graph-view.png"),
            (".nbdist-dashboard", "browser-dashboard.png"),
        ]:
            if page.locator(selector).count():
                page.locator(selector).first.screenshot(path=str(out_dir / name))
        page.close()
