"""Notebooks run in real Jupyter kernels (nbclient / jupyter_client).

- every notebook under notebooks/ executes top to bottom without an error output, twice in
  one kernel (as "Run All" twice), and shows the same teaching output both times;
- notebooks are committed with their outputs stripped (checked on the files on disk);
- the extension's end-to-end scenario: `%dtf_cluster local=2`, a graph across both tasks,
  `%%dtf_worker` async training on `ps=1 worker=2` reporting losses, `%dtf_cluster stop`;
- a kernel killed with SIGKILL leaves no server process behind; the kernel's interrupt
  button interrupts a `%%dtf_worker` cell on every task and the cluster stays usable.
"""

import copy
import os
import queue
import re
import signal
import sys
import textwrap
import time
from pathlib import Path

import nbformat
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from browser import execute_notebook
from nbdist.notebook import render
from procs import REPO, alive, kernel_env, wait_gone

NOTEBOOKS = sorted((Path(REPO) / "notebooks").glob("*.ipynb"))
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def outputs_text(nb):
    """The cells' outputs as text, one part per output. Consecutive stream outputs of one
    stream are one part, as Jupyter shows them: the kernel may flush a ``print`` between its
    writes (``'/job:worker/task:0'``, then ``' as the client:'``), more often on a busy machine."""
    parts = []
    for cell in nb.cells:
        previous = None  # the output just before, if it was a stream's
        for out in cell.get("outputs", []):
            if out["output_type"] == "stream":
                if previous is not None and previous["name"] == out["name"]:
                    parts[-1] += out["text"]
                else:
                    parts.append(out["text"])
                previous = out
                continue
            previous = None
            if out["output_type"] == "error":
                parts.append(f"ERROR {out['ename']}: {out['evalue']}")
            else:
                parts.append(str(out.get("data", {}).get("text/plain", "")))
    return "\n".join(parts)


def static_html(nb):
    """The HTML of the outputs that show no widget: what stays as it was when the cell ran."""
    return "\n".join(
        str(o["data"]["text/html"])
        for c in nb.cells
        for o in c.get("outputs", [])
        if "text/html" in o.get("data", {}) and WIDGET_VIEW not in o["data"]
    )


def live_status_tables(nb):
    """The final HTML of every live cluster status table (widget state)."""
    states = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {}).values()
    return [
        s["state"]["value"] for s in states if "nbdist-cluster-status" in s["state"].get("_dom_classes", [])
    ]


def errors_of(nb):
    return [
        f"{o['ename']}: {o['evalue']}\n" + "\n".join(o.get("traceback", []))
        for c in nb.cells
        for o in c.get("outputs", [])
        if o["output_type"] == "error"
    ]


# ---------------------------------------------------------------- the tutorial notebooks


def test_there_are_notebooks():
    names = [p.name for p in NOTEBOOKS]
    assert "01_hello_distributed.ipynb" in names
    assert "02_cluster_and_servers.ipynb" in names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_committed_with_outputs_stripped(path):
    nb = nbformat.read(path, as_version=4)
    dirty = [
        i
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code" and (c.get("outputs") or c.get("execution_count") is not None)
    ]
    assert dirty == [], f"{path.name}: cells {dirty} have outputs; strip them before committing"
    assert "widgets" not in nb.metadata, f"{path.name} keeps widget state; strip it"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_starts_with_load_ext_and_names_its_kernel(path):
    nb = nbformat.read(path, as_version=4)
    first_code = next(c for c in nb.cells if c.cell_type == "code")
    assert first_code.source.startswith("%load_ext nbdist")
    assert nb.metadata.kernelspec.name == "python3"


# What a notebook must have shown once run: it taught what it says, not only ran.
SHOWN = {
    "00_start_here.ipynb": [
        "master service of /job:local/replica:0/task:0: RunStep",
        "worker service of /job:local/replica:0/task:1: RunGraph",
        "<nbdist GraphView: placed",
    ],
    "05_between_graph_replication.ipynb": [
        "[ps:0] join() returned after 0.5 s; stopped: False",
        "w1 on /job:ps/task:0, logits on /job:worker/task:1",
        "client /job:worker/task:0: RunStep at the master of /job:worker/replica:0/task:0; "
        "RunGraph on /job:ps/replica:0/task:0, /job:worker/replica:0/task:0",
        "client /job:worker/task:1: RunStep at the master of /job:worker/replica:0/task:1; "
        "RunGraph on /job:ps/replica:0/task:0, /job:worker/replica:0/task:1",
        "<nbdist GraphView: placed, 70 nodes, tasks ['/job:ps/task:0', '/job:worker/task:1']>",  # (no update relay: partition.bypass_relays)
        "the last update's number: 404 = 4 earlier steps (above) + 200 + 200",
    ],
    "07_timeline_and_performance.ipynb": [
        "<nbdist TimelineView: 2 tasks",
        "step.json: ",
        "33,288 bytes moved",  # the 1,000-row table crosses the wire every step (32 KB)...
        "16,001,288 bytes moved",  # ...and so does the 500,000-row one (16 MB)
        "2,568 bytes moved",  # embedding_lookup on the ps: only the rows cross
        "[worker:0] iterator on /job:worker/task:0, w on /job:ps/task:0",  # each worker's own pipeline
        "[worker:0] 20 steps read 1280 records: 200 different ids, every id % 2 == 0: True",  # disjoint
        "[worker:1] 20 steps read 1280 records: 200 different ids, every id % 2 == 1: True",  # shards
        "worker 0's traced step: IteratorGetNext took ",  # the dequeue, on worker 0's timeline
        "the model's 29 other ops ",
    ],
    "08_faults_and_recovery.ipynb": [
        "UnavailableError: the master /job:worker/task:0 at localhost:",
        "no: process exited with code -9 (killed by SIGKILL)",
        "uninitialized variables after the worker's restart: none",
        "training goes on from 25 -> global step 45",
        "UnavailableError: [/job:worker/replica:0/task:0] /job:ps/task:0 at localhost:",
        "uninitialized variables after the ps's restart: ['w', 'global_step']",
        "restored model-40: global step 40 -> global step 65",
        "steps run: 65 ; last global step: 60",
    ],
    "09_a_cnn_across_the_cluster.ipynb": [
        "[worker:0] conv1/kernel   (5, 5, 1, 8)     on /job:ps/task:0",
        "[worker:0] conv2/kernel   (5, 5, 8, 16)    on /job:ps/task:0",
        "[worker:0] logits on /job:worker/task:0",
        "/job:ps/task:0 -> /job:worker/task:1: conv2/kernel/read:0 ",  # the kernels go out...
        "/job:worker/task:1 -> /job:ps/task:0: gradients/conv2/Conv2D_grad/Conv2DBackpropFilter:0 ",  # ...grads back
        "[worker:1] 90,192 bytes on the wire in this step",  # the parameters twice; no activation
        "<nbdist PlacementView (placed): /job:ps/task:0: 7 variables, /job:worker/task:1: 0 variables>",
        "<nbdist GraphView: placed, 118 nodes, tasks ['/job:ps/task:0', '/job:worker/task:1']>",  # (no update relay)
        "<nbdist TimelineView: 2 tasks",
        "went down: True",
        # is_training (tf.cond): per traced step, dropout ops on worker 0, Switch and AssignSub on the ps
        "[worker:0] cnn_bn/bn1/moving_mean     on /job:ps/task:0",
        "[worker:0] train_op, {is_training: True}                        12            6         2",
        "[worker:0] accuracy, is_training left False                      0            0         0",
        "[worker:0] train_op, is_training left False                      0            6         0",  # dead there
    ],
}


def status_row(state, job, index):
    """The start of a status table row (`render.status_html`) of a task in `state`."""
    return f'<tr style="color:{render.STATUS_COLORS[state]}"><td>{job}</td><td>{index}</td>'


# Tables that stay as they were shown (no widget): what a notebook keeps of a moment.
SHOWN_STATIC = {
    "08_faults_and_recovery.ipynb": [
        status_row("failed", "worker", 0),  # just after the worker was killed...
        status_row("alive", "worker", 0),  # ...and once it was restarted
        status_row("failed", "ps", 0),
        status_row("alive", "ps", 0),
    ],
}


# What may differ between two runs of a notebook in one kernel, masked before comparing them:
# OS-chosen ports, decimals (losses, timings, "0.3 s ago"), numbers of 4 digits and more (pids,
# file sizes, bytes), a status row's pid of any length, memory, a dashboard's redraws (as many as
# the machine's load allows); the status table's heartbeat age and column widths; IPython's note
# that the extension is loaded already. Op counts, node and device names, placements stay.
MASKS = [
    (re.compile(r"(localhost|127\.0\.0\.1):\d+"), r"\1:PORT"),
    (re.compile(r"\b\d+ redraws\b"), "# redraws"),
    (re.compile(r"\d[\d,]*\.\d+(e-?\d+)?"), "#.#"),
    (re.compile(r"\b\d{1,3}(,\d{3})+\b|\b\d{4,}\b"), "####"),
    (re.compile(r"\b\d+ MB\b"), "# MB"),
    (re.compile(r"yes \(#\.# s ago\)"), "yes"),
    (re.compile(r"\s+"), " "),  # (a table's columns are as wide as its widest value)
    # A status row's pid after the masks above (pids wrap around to 3 digits on a busy machine).
    (re.compile(r"(:PORT) (\d+|####) (yes|no)\b"), r"\1 PID \3"),
]
ALREADY_LOADED = ("The nbdist extension is already loaded", "%reload_ext nbdist")
# Lines whose numbers depend on how the processes were scheduled (asynchronous training), per notebook.
RUN_TO_RUN = {
    "05_between_graph_replication.ipynb": [re.compile(r"accuracy on my half of the data")],
    "06_async_vs_sync.ipynb": [re.compile(r"gradients computed|<nbdist Dashboard: \d+ metric events")],
}


def teaching_lines(nb, name):
    """Per code cell, the sorted lines of its text outputs with `MASKS` applied (concurrent
    tasks print in either order); lines `RUN_TO_RUN` names for this notebook are left out."""
    cells = []
    for cell in (c for c in nb.cells if c.cell_type == "code"):
        lines = []
        for line in outputs_text(nbformat.v4.new_notebook(cells=[cell])).splitlines():
            if not line.strip() or line.strip().startswith(ALREADY_LOADED):
                continue
            if any(p.search(line) for p in RUN_TO_RUN.get(name, [])):
                continue
            for pattern, mask in MASKS:
                line = pattern.sub(mask, line)
            lines.append(line)
        cells.append(sorted(lines))
    return cells


def execute_twice(nb, cwd):
    """Runs every cell of `nb`, then every cell again, in one kernel ("Run All" twice);
    returns each run's cells with their outputs, as two notebooks."""
    both = copy.deepcopy(nb)
    both.cells = copy.deepcopy(nb.cells) + copy.deepcopy(nb.cells)
    execute_notebook(both, cwd)
    first, second = copy.deepcopy(both), copy.deepcopy(both)  # (the metadata: the widgets' final state)
    first.cells, second.cells = first.cells[: len(nb.cells)], second.cells[len(nb.cells) :]
    return first, second


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_twice_in_one_kernel_and_teaches_the_same_both_times(path):
    started = time.monotonic()
    first, second = execute_twice(nbformat.read(path, as_version=4), path.parent)
    assert time.monotonic() - started < 120
    for run, nb in enumerate((first, second), 1):
        assert errors_of(nb) == [], f"run {run}"
        missing = [s for s in SHOWN.get(path.name, []) if s not in outputs_text(nb)]
        assert missing == [], f"{path.name}, run {run}, did not show {missing}"
        missing = [s for s in SHOWN_STATIC.get(path.name, []) if s not in static_html(nb)]
        assert missing == [], f"{path.name}, run {run}, kept no table with {missing}"
    stopped = render.STATUS_COLORS["stopped"]
    for table in live_status_tables(second):  # every notebook stops its cluster at the end: all grey
        assert set(re.findall(r'<tr style="color:(#\w+)">', table)) == {stopped}, table
    changed = [
        (i, [f"- {line}" for line in a if line not in b] + [f"+ {line}" for line in b if line not in a])
        for i, (a, b) in enumerate(zip(teaching_lines(first, path.name), teaching_lines(second, path.name)))
        if a != b
    ]
    assert changed == [], f"{path.name} taught otherwise when run again (code cell, lines): {changed}"


# Each term of 00's map, with the Chinese term in common use beside it (issue 33: much of what
# learners read on distributed TF 1.x is in Chinese).
GLOSSARY = {
    "client": "客户端",
    "cluster": "集群",
    "job": "作业",
    "master service": "主服务",
    "task": "任务",
    "server": "服务器",
    "worker service": "工作服务",
    "in-graph replication": "图内复制",
    "between-graph replication": "图间复制",
    "asynchronous training": "异步训练",
    "synchronous training": "同步训练",
}


def test_start_here_maps_every_term_and_is_honest_about_the_notebooks():
    """00 links every notebook there is, links none that is missing, and calls "coming" only
    notebooks that do not exist yet (when one lands, 00 must link it)."""
    start_here = Path(REPO) / "notebooks" / "00_start_here.ipynb"
    nb = nbformat.read(start_here, as_version=4)
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    for term, chinese in GLOSSARY.items():
        assert f"| **{term}** ({chinese}) |" in text, f"00 has no row for {term!r} ({chinese})"
    for chinese in ("参数服务器", "设备放置", "会话", "计算图"):  # named inside the rows
        assert chinese in text, f"00's map does not name {chinese!r}"
    linked = set(re.findall(r"\]\(((?:\d\d_\w+|playground)\.ipynb)\)", text))
    assert linked == {p.name for p in NOTEBOOKS} - {start_here.name}
    coming = set(re.findall(r"(\d\d) · [^*|]*\*\(coming\)\*", text))
    landed = [n for n in sorted(coming) if any(p.name.startswith(f"{n}_") for p in NOTEBOOKS)]
    assert landed == [], f"notebooks {landed} exist: link them in 00 instead of calling them coming"


# ---------------------------------------------------------------- the extension, end to end

TRAIN_CELL = """%%dtf_worker
import time
import numpy as np
rng = np.random.RandomState(task_index)
X = rng.randn(64, 3).astype(np.float32)
y = X @ np.array([[1.0], [-2.0], [0.5]], dtype=np.float32)
with tf.Graph().as_default():
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(tf.zeros([3, 1]), name="w")
        global_step = tf.train.get_or_create_global_step()
    with tf.device(f"/job:worker/task:{task_index}"):
        xs = tf.placeholder(tf.float32, [None, 3])
        ys = tf.placeholder(tf.float32, [None, 1])
        loss = tf.reduce_mean(tf.square(tf.matmul(xs, w) - ys))
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=global_step)
    sess = tf.Session(server.target)
    if task_index == 0:
        sess.run(tf.global_variables_initializer())
    while True:  # the other workers wait until the chief has initialized the shared variables
        try:
            sess.run(w)
            break
        except tf.errors.FailedPreconditionError:
            time.sleep(0.05)
    for _ in range(15):
        _, value, step = sess.run([train, loss, global_step], {xs: X, ys: y})
        tf.report(step=int(step), loss=float(value))
        print(f"step {step} loss {value:.4f}")
"""


def scenario_notebook():
    cells = [
        "%load_ext nbdist\nimport time\nimport numpy as np\nimport nbdist as tf\nnp.random.seed(0)",
        "%dtf_cluster local=2",
        textwrap.dedent("""\
            with tf.device("/job:local/task:1"):
                b = tf.matmul(tf.constant(np.eye(2)), tf.constant(np.full((2, 2), 3.0)))
            with tf.device("/job:local/task:0"):
                total = tf.reduce_sum(b)
            with tf.Session(dtf.target("local", 0)) as sess:
                print("total across both tasks:", sess.run(total))"""),
        "%dtf_cluster ps=1 worker=2",
        TRAIN_CELL,
        textwrap.dedent("""\
            time.sleep(0.3)
            reported = dtf.events.history("metric")
            print("reported by", sorted({e["task"] for e in reported}))
            last = {e["task"]: round(e["metrics"]["loss"], 4) for e in reported}
            print("last losses", dict(sorted(last.items())))  # workers report in any order"""),
        "%dtf_cluster stop",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


@pytest.mark.slow
def test_scenario_cluster_graph_and_async_training(tmp_path):
    nb = execute_notebook(scenario_notebook(), tmp_path)
    assert errors_of(nb) == []
    text = outputs_text(nb)
    assert "total across both tasks: 12.0" in text
    for task in (0, 1):
        assert f"[worker:{task}] step " in text
        assert f"[worker:{task}] " in text and " loss " in text
    assert "reported by ['/job:worker/task:0', '/job:worker/task:1']" in text
    assert "last losses {'/job:worker/task:0':" in text
    assert "Stopped <LocalCluster ps=1 worker=2 (stopped)" in text
    states = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {}).values()
    views = [s["state"] for s in states if "nbdist-cluster-status" in s["state"].get("_dom_classes", [])]
    assert len(views) == 2  # one per %dtf_cluster
    assert all("(stopped)" in v["value"] for v in views)
    for cell in nb.cells:  # each start shows the cluster once: the widget, with text/HTML fallbacks
        if cell.source.startswith("%dtf_cluster") and "stop" not in cell.source:
            assert [o["output_type"] for o in cell.outputs] == ["display_data"], cell.outputs
            shown = cell.outputs[0]["data"]
            assert {"application/vnd.jupyter.widget-view+json", "text/html", "text/plain"} <= set(shown)
            assert shown["text/plain"].startswith("<LocalCluster") and "address" in shown["text/plain"]


# ---------------------------------------------------------------- kernels killed and interrupted


class Kernel:
    """A real ipykernel driven through jupyter_client; collects each execution's stream output."""

    def __init__(self):
        from jupyter_client.manager import start_new_kernel

        self.km, self.kc = start_new_kernel(kernel_name="python3", env=kernel_env())

    def run(self, code, timeout_s=60):
        out = []

        def hook(msg):
            if msg["msg_type"] == "stream":
                out.append(msg["content"]["text"])
            elif msg["msg_type"] == "error":
                out.append(f"ERROR {msg['content']['ename']}")

        reply = self.kc.execute_interactive(code, timeout=timeout_s, output_hook=hook)
        return reply["content"]["status"], "".join(out)

    def close(self):
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)  # also cleans up after a kernel that was killed
        self.km.context.destroy(linger=0)  # the manager's own zmq context (not the global one)


@pytest.fixture
def kernel():
    k = Kernel()
    yield k
    k.close()


@pytest.mark.slow
def test_sigkilled_kernel_leaves_no_server_process(kernel):
    status, out = kernel.run(
        "%load_ext nbdist\n%dtf_cluster ps=1 worker=2\nimport os\nprint(os.getpid(), *dtf.pids.values())"
    )
    assert status == "ok", out
    kernel_pid, *server_pids = (int(p) for p in out.split()[-4:])
    assert len(server_pids) == 3 and all(alive(p) for p in server_pids)
    os.kill(kernel_pid, signal.SIGKILL)
    assert wait_gone(server_pids, 3.0), [p for p in server_pids if alive(p)]


@pytest.mark.slow
def test_kernel_interrupt_interrupts_every_task_and_keeps_the_cluster(kernel):
    status, out = kernel.run("%load_ext nbdist\n%dtf_cluster worker=2\nprint(*dtf.pids.values())")
    pids = [int(p) for p in out.split()[-2:]]
    kernel.kc.execute(
        "%%dtf_worker\nimport time\nprint('sleeping', flush=True)\n"
        "for _ in range(600):\n    time.sleep(0.1)\ndone = True",
        stop_on_error=False,  # the kernel must not abort the next request after the interrupt
    )
    time.sleep(1.5)
    started = time.monotonic()
    kernel.km.interrupt_kernel()
    msg = kernel.kc.get_shell_msg(timeout=10)
    assert msg["content"]["status"] == "error"
    assert msg["content"]["ename"] == "KeyboardInterrupt"
    assert time.monotonic() - started < 6
    assert all(alive(p) for p in pids)
    status, out = kernel.run("%%dtf_worker\nprint('still here', globals().get('done', False))")
    assert status == "ok", out
    assert "[worker:0] still here False" in out
    assert "[worker:1] still here False" in out


SYNC_TRAINING_CELL = """%%dtf_worker
import numpy as np
with tf.device(tf.train.replica_device_setter(worker_device=f"/job:worker/task:{task_index}", cluster=cluster)):
    step = tf.train.get_or_create_global_step()
    x = tf.placeholder(tf.float64, [None, 4])
    w = tf.get_variable("w", [4], tf.float64, initializer=tf.zeros_initializer())
    loss = tf.reduce_mean(tf.square(tf.reduce_sum(x * w, axis=1) - 1.0))
    opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), replicas_to_aggregate=2)
    train = opt.minimize(loss, global_step=step)
hooks = [opt.make_session_run_hook(task_index == 0)]
with tf.train.MonitoredTrainingSession(master=server.target, is_chief=task_index == 0, hooks=hooks) as sess:
    for i in range(100000):
        sess.run(train, {x: np.ones((8, 4))})
        if i == 5:
            print("training", flush=True)
"""


@pytest.mark.slow
def test_a_kernel_killed_during_a_sync_training_step_leaves_no_process(kernel):
    status, out = kernel.run(
        "%load_ext nbdist\n%dtf_cluster ps=1 worker=2\nimport os\nprint(os.getpid(), *dtf.pids.values())"
    )
    assert status == "ok", out
    kernel_pid, *server_pids = (int(p) for p in out.split()[-4:])
    kernel.kc.execute(SYNC_TRAINING_CELL)
    deadline = time.monotonic() + 60
    seen = ""
    while seen.count("training") < 2:  # both workers are inside synchronous steps
        assert time.monotonic() < deadline, f"no training output within 60 s: {seen!r}"
        try:
            msg = kernel.kc.get_iopub_msg(timeout=1)
        except queue.Empty:  # keep waiting, within the bound
            continue
        if msg["msg_type"] == "stream":
            seen += msg["content"]["text"]
        elif msg["msg_type"] == "error":
            raise AssertionError(msg["content"])
    os.kill(kernel_pid, signal.SIGKILL)
    assert wait_gone(server_pids, 5.0), [p for p in server_pids if alive(p)]
