"""Writes notebooks/07_timeline_and_performance.ipynb (outputs stripped):
``python notebooks/_src/07_timeline_and_performance.py``.

The notebook's cells live here as plain text, so a change to the notebook is a readable diff.
"""

import nbformat
from _write import write

TITLE = """\
# 07 · A step on the timeline: where the time goes

A distributed step is many small things at once: the client's `RunStep` at the master, a
`RunGraph` on every task, the ops (**kernels**) each task runs, and the tensors that cross
between tasks (**the wire**, a `_Send` on one side, a `_Recv` on the other). When a step is
slow, the question is *which* of these took the time. TensorFlow answers it with a
**traced step**: `sess.run(..., options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
run_metadata=md)` fills `md.step_stats` with every op's start and end on every task.

This notebook traces one training step, draws it on a timeline, adds up where its time went,
writes it as a Chrome trace, and then shows what happens to a step when the ps holds a
**big variable**."""

SETUP = """\
%load_ext nbdist
import json
import tempfile
import time
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import nbdist as tf
from nbdist.notebook.trace import BREAKDOWN, time_breakdown

np.random.seed(0)
tf.set_random_seed(0)"""

CLUSTER_MD = """\
## A cluster: one ps, one worker

Two server processes: `/job:ps/task:0` holds the variables, `/job:worker/task:0` computes."""

CLUSTER = "%dtf_cluster ps=1 worker=1"

MODEL_MD = """\
## The model: an embedding table on the ps

The shape of many real models (recommenders, language models): a big **table** of vectors,
one row per item, lives on the ps; every step the worker looks up the rows of a batch of item
ids and learns from them. `build(rows, ...)` makes one such training graph; the table has
`rows` rows of 8 floats. With `lookup_on_ps=False` the worker gathers its rows itself
(`tf.gather` under the worker's device); with `True` it uses `tf.nn.embedding_lookup`, which
(as in TensorFlow) places the gather *with the table*, on the ps. Hold that thought."""

MODEL = """\
DIMS, BATCH = 8, 32

def build(rows, lookup_on_ps=False):
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/job:ps/task:0"):
            table = tf.Variable(tf.zeros([rows, DIMS]), name="table")
            global_step = tf.train.get_or_create_global_step()
        with tf.device("/job:worker/task:0"):
            ids = tf.placeholder(tf.int64, [BATCH], name="ids")
            y = tf.placeholder(tf.float32, [BATCH], name="y")
            picked = tf.nn.embedding_lookup(table, ids) if lookup_on_ps else tf.gather(table, ids)
            loss = tf.reduce_mean(tf.square(tf.reduce_sum(picked, axis=1) - y))
            train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=global_step)
        init = tf.global_variables_initializer()
    rng = np.random.RandomState(0)
    feed = lambda: {ids: rng.randint(0, rows, BATCH), y: rng.normal(size=BATCH).astype(np.float32)}
    return graph, init, train_op, feed

TRACE = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)"""

TRACED_MD = """\
## One traced step on the timeline

A small table (1,000 rows). The first step registers the graph's pieces on the tasks
(`RegisterGraph`); the traced one is an ordinary step. `tf.show_timeline` draws it: one band
per task, with its **master service** and **worker service** calls (grey) and its ops
(coloured); each red arrow is a tensor crossing from a `_Send` to its `_Recv`. Hover a bar for
its name and duration; drag the slider to zoom in."""

TRACED = """\
graph, init, train_op, feed = build(rows=1_000)
with tf.Session(dtf.target("worker", 0), graph=graph) as sess:
    sess.run(init)
    sess.run(train_op, feed())                    # registers the pieces: not what we measure
    md = tf.RunMetadata()
    sess.run(train_op, feed(), options=TRACE, run_metadata=md)
tf.show_timeline(md, width_px=580)"""

BREAKDOWN_MD = """\
## Where the time goes

`md.step_stats` holds, per task, every op's start and end; `time_breakdown(md)` (in
`nbdist.notebook.trace`) adds them up. The step lasts as long as the client's `RunStep` at the
master, and each moment of it is counted once, in the first of:

- **kernels** — the task runs one of its ops;
- **wire** — a tensor the task sends or receives is on its way (from its `_Send` until the
  `_Recv` has it);
- **waiting** — neither: waiting for another task's tensor, for its `RunGraph` call, for the
  master.

The top bar is the whole step (kernels on any task, else a tensor on the wire, else waiting)."""

BREAKDOWN_CELL = """\
COLORS = {"kernels": "#4c72b0", "wire": "#d62728", "waiting": "#bbbbbb"}

def plot_breakdown(ax, rows, title):
    \"\"\"One stacked horizontal bar per row: ms of kernels, wire and waiting.\"\"\"
    names = list(rows)
    left = np.zeros(len(names))
    for kind in BREAKDOWN:
        ms = np.array([rows[n][kind] for n in names])
        ax.barh(names, ms, left=left, color=COLORS[kind], label=kind)
        left += ms
    ax.invert_yaxis()
    ax.set_xlabel("milliseconds of the step")
    ax.set_title(title, fontsize=10)

small = time_breakdown(md)
fig, ax = plt.subplots(figsize=(8, 2.2))
plot_breakdown(ax, {"the whole step": small["step"], **small["tasks"]},
               f"a step on a 1,000-row table: {small['step_ms']:.1f} ms")
ax.legend(frameon=False, ncol=3, loc="lower right", bbox_to_anchor=(1, 1.12))
plt.show()
print({kind: f"{ms:.2f} ms" for kind, ms in small["step"].items()})"""

CHROME_MD = """\
## The same step as a Chrome trace

`tf.export_chrome_trace(md, path)` writes the step in the Chrome trace-event format, the file
that TensorFlow's `timeline.Timeline(step_stats).generate_chrome_trace_format()` makes: open it
at https://ui.perfetto.dev (or `chrome://tracing`) for a zoomable view of a long step. Each
task is a *process* there and each lane a *thread*; the arrows are *flow* events. Below, the
file is read back and drawn as those viewers lay it out."""

CHROME = """\
path = tf.export_chrome_trace(md, Path(tempfile.mkdtemp(prefix="nbdist-trace-")) / "step.json")
doc = json.loads(path.read_text())
print(f"{path.name}: {path.stat().st_size:,} bytes, {len(doc['traceEvents'])} trace events")

meta = [e for e in doc["traceEvents"] if e["ph"] == "M"]
names = {(e["pid"], e["tid"], e["name"]): e["args"]["name"] for e in meta if "name" in e["args"]}
rows, opened, bars = {}, {}, []
for e in doc["traceEvents"]:
    where = (e.get("pid"), e.get("tid"))
    if e["ph"] == "B":
        opened[where] = e
    elif e["ph"] == "E":
        begin = opened.pop(where)
        label = f"{names[(where[0], 0, 'process_name')].split(' (')[0]} · {names[(*where, 'thread_name')]}"
        row = rows.setdefault(label, len(rows))
        bars.append((row, begin["ts"] / 1e3, (e["ts"] - begin["ts"]) / 1e3, begin["cat"]))
KIND_COLORS = {"service call": "#999999", "_Send / _Recv": COLORS["wire"], "kernel": COLORS["kernels"]}
fig, ax = plt.subplots(figsize=(9, 0.32 * len(rows) + 0.8))
for row, start, length, cat in bars:
    kind = "service call" if cat == "service" else "_Send / _Recv" if cat in ("_Send", "_Recv") else "kernel"
    ax.broken_barh([(start, max(length, 0.005))], (row - 0.4, 0.8), color=KIND_COLORS[kind])
for kind, color in KIND_COLORS.items():
    ax.bar(0, 0, color=color, label=kind)   # legend entries only
ax.legend(frameon=False, ncol=3, loc="lower right", bbox_to_anchor=(1, 1.06), fontsize=8)
ax.set_yticks(range(len(rows)), list(rows), fontsize=8)
ax.invert_yaxis()
ax.set_xlabel("ms since the step began")
ax.set_title(f"{path.name}, read back: a row per thread (lane) of each process (task)", fontsize=10)
plt.show()"""

BIG_MD = """\
## A big variable on the ps

Now the table grows to 500,000 rows (16 MB). The same program, three ways, each measured over
10 untraced steps (the median), then one traced step:

1. **small table, gather on the worker** — the step above;
2. **big table, gather on the worker** — `tf.gather` on the worker needs the whole table
   there: the table's value crosses the wire *every step*;
3. **big table, lookup on the ps** — `tf.nn.embedding_lookup` gathers on the ps: only the
   32 rows cross, and the gradient goes back as those 32 rows (an `IndexedSlices`).

The bytes moved are the sizes of the tensors the traced step sent between the tasks."""

BIG = """\
def measure(rows, lookup_on_ps, steps=10):
    graph, init, train_op, feed = build(rows, lookup_on_ps)
    with tf.Session(dtf.target("worker", 0), graph=graph) as sess:
        sess.run(init)
        sess.run(train_op, feed())
        times = []
        for _ in range(steps):
            began = time.perf_counter()
            sess.run(train_op, feed())
            times.append(time.perf_counter() - began)
        md = tf.RunMetadata()
        sess.run(train_op, feed(), options=TRACE, run_metadata=md)
    moved = sum(t["bytes"] or 0 for d in md.step_stats.dev_stats for t in d.transfers if t["op"] == "_Recv")
    return {"step_ms": 1e3 * np.median(times), "moved": moved, "breakdown": time_breakdown(md), "md": md}

runs = {
    "small table,\\ngather on the worker": measure(1_000, lookup_on_ps=False),
    "big table,\\ngather on the worker": measure(500_000, lookup_on_ps=False),
    "big table,\\nlookup on the ps": measure(500_000, lookup_on_ps=True),
}
for name, run in runs.items():
    label = name.replace("\\n", " ")
    print(f"{label:<38} {run['step_ms']:7.1f} ms per step, {run['moved']:>12,} bytes moved")"""

BIG_CHART_MD = """\
Side by side: the bytes each step moved (a log scale: they differ ten-thousandfold), the step
time, and where the traced step's time went."""

BIG_CHART = """\
names = list(runs)
fig, (ax_bytes, ax_time, ax_where) = plt.subplots(1, 3, figsize=(13, 3.4), gridspec_kw={"wspace": 0.6})
ax_bytes.barh(names, [runs[n]["moved"] for n in names], color="#d62728")
for i, n in enumerate(names):
    ax_bytes.text(runs[n]["moved"], i, f" {runs[n]['moved'] / 1e6:.3g} MB", va="center", fontsize=9)
ax_bytes.set_xscale("log")
ax_bytes.set_xlim(1e3, 1e9)
ax_bytes.set(xlabel="bytes sent between the tasks per step", title="bytes moved")
ax_time.barh(names, [runs[n]["step_ms"] for n in names], color="#555555")
for i, n in enumerate(names):
    ax_time.text(runs[n]["step_ms"], i, f" {runs[n]['step_ms']:.1f} ms", va="center", fontsize=9)
ax_time.set_xlim(0, 1.35 * max(runs[n]["step_ms"] for n in names))
ax_time.set(xlabel="ms (median of 10 steps)", title="step time")
plot_breakdown(ax_where, {n: runs[n]["breakdown"]["step"] for n in names}, "where a traced step's time went")
ax_where.legend(frameon=False, fontsize=8)
for ax in (ax_bytes, ax_time):
    ax.invert_yaxis()
ax_time.set_yticks([])
ax_where.set_yticks([])
plt.show()"""

BIG_TIMELINE_MD = """\
The big table's step, gathered on the worker, on the timeline: the long red-shaded `_Recv` on
the worker is the table arriving (16 MB), and on the ps the `ScatterSub` kernel that applies
the 32 rows' update is long too. That one is nbdist's own cost: its variables are
*copy-on-write* (a step that read the table keeps an unchanged copy), so an update copies the
whole table, where TensorFlow updates in place. Both go away from the worker's step only by
moving less: the third way above."""

BIG_TIMELINE = 'tf.show_timeline(runs["big table,\\ngather on the worker"]["md"], width_px=580)'

RECAP = """\
## What you saw

- **A traced step** (`FULL_TRACE` + `tf.RunMetadata`) on the timeline: the master's `RunStep`,
  each task's `RunGraph`, every op, and every tensor that crossed (red arrows).
- **Where the time goes**: each moment of the step is a kernel running, a tensor on the wire,
  or waiting; `time_breakdown(md)` adds them up per task and for the whole step. For a small
  model most of a step is the wire and the services, not the math.
- **The Chrome trace**: `tf.export_chrome_trace(md, "step.json")` writes the same step for
  Perfetto or `chrome://tracing`: one process per task, one thread per lane.
- **A big variable on the ps**: a step that reads it on the worker moves the whole variable
  every time, and its step time grows with it; gathering *where the variable lives*
  (`tf.nn.embedding_lookup`) moves a few rows instead. Trace before you guess.

Next: [08 · faults and recovery](08_faults_and_recovery.ipynb) kills a worker and the ps in the
middle of training."""

STOP = "%dtf_cluster stop"


def cells():
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    return [
        md(TITLE),
        code(SETUP),
        md(CLUSTER_MD),
        code(CLUSTER),
        md(MODEL_MD),
        code(MODEL),
        md(TRACED_MD),
        code(TRACED),
        md(BREAKDOWN_MD),
        code(BREAKDOWN_CELL),
        md(CHROME_MD),
        code(CHROME),
        md(BIG_MD),
        code(BIG),
        md(BIG_CHART_MD),
        code(BIG_CHART),
        md(BIG_TIMELINE_MD),
        code(BIG_TIMELINE),
        md(RECAP),
        code(STOP),
    ]


def main():
    write("07_timeline_and_performance", cells(), "nb07")


if __name__ == "__main__":
    main()
