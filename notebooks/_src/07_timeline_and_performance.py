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
writes it as a Chrome trace, shows what happens to a step when the ps holds a **big
variable**, and ends with two workers reading their shards of a file through an **input
pipeline**, its dequeue on the timeline beside the training step."""

SETUP = """\
%load_ext nbdist
import json
import os
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

INPUT_MD = """\
## Each worker reads its shard: the input pipeline on the timeline

So far the worker's data came from `feed_dict`. Between-graph programs usually read files
instead, through an **input pipeline** that every worker builds with the same code, so
without more they would all read the same records. `dataset.shard(num_workers, task_index)`
keeps every `num_workers`-th record, starting at the worker's own index: the workers read
**disjoint shards** of the file and, together, all of it once per epoch.

A file to read first: 400 `tf.train.Example`s (an `id`, 4 features `x` and a target `y`) in a
TFRecord file. Sharding needs more than one worker, so a new cluster follows: one ps, two
workers. Its tasks inherit the notebook's environment, which tells them where the file is (a
real job passes a flag, or a path on a shared filesystem)."""

RECORDS = """\
N_RECORDS, TRUE_W = 400, np.array([1.0, -2.0, 0.5, 3.0], np.float32)
records = Path(tempfile.mkdtemp(prefix="nbdist-records-")) / "examples.tfrecord"
rng = np.random.RandomState(0)
with tf.python_io.TFRecordWriter(str(records)) as writer:
    for i in range(N_RECORDS):
        x = rng.normal(size=4).astype(np.float32)
        example = tf.train.Example(features=tf.train.Features(feature={
            "id": tf.train.Feature(int64_list=tf.train.Int64List(value=[i])),
            "x": tf.train.Feature(float_list=tf.train.FloatList(value=x)),
            "y": tf.train.Feature(float_list=tf.train.FloatList(value=[x @ TRUE_W])),
        }))
        writer.write(example.SerializeToString())
os.environ["RECORDS"] = str(records)   # the tasks started below inherit it
print(f"{records.name}: {N_RECORDS} examples, {records.stat().st_size:,} bytes")"""

INPUT_CLUSTER = "%dtf_cluster ps=1 worker=2"

INPUT_WORKER_MD = """\
Every worker runs the same cell: its pipeline (`shard` first, then `shuffle`, `repeat`, `map`
to parse, `batch`), whose `get_next()` feeds a linear model built under
`replica_device_setter`; 20 asynchronous training steps. Once both have trained, worker 0
traces one more step and sends it to the notebook with `tf.report_trace`. Each prints the ids
of its first batch and what it found in every record it read."""

INPUT_WORKER = """\
%%dtf_worker
import os
import time
import numpy as np

def parse(record):
    features = tf.parse_single_example(record, {
        "id": tf.FixedLenFeature([], tf.int64),
        "x": tf.FixedLenFeature([4], tf.float32),
        "y": tf.FixedLenFeature([], tf.float32),
    })
    return features["id"], features["x"], features["y"]

num_workers = cluster.num_tasks("worker")
tf.reset_default_graph()   # this process's own graph (so that the cell can be run again)
tf.set_random_seed(0)
worker_device = f"/job:worker/task:{task_index}"
with tf.device(tf.train.replica_device_setter(cluster=cluster, worker_device=worker_device)):
    dataset = (tf.data.TFRecordDataset(os.environ["RECORDS"])
               .shard(num_workers, task_index)      # records task_index, task_index + 2, ...
               .shuffle(100, seed=task_index)       # shuffled within this worker's shard
               .repeat()
               .map(parse)                          # parsed as the step asks for them
               .batch(64))
    ids, x, y = dataset.make_one_shot_iterator().get_next()
    w = tf.get_variable("w", [4], initializer=tf.zeros_initializer())
    loss = tf.reduce_mean(tf.square(tf.reduce_sum(x * w, axis=1) - y))
    global_step = tf.train.get_or_create_global_step()
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=global_step)

sess = tf.Session(server.target)
if task_index == 0:
    sess.run(tf.global_variables_initializer())
not_ready, deadline = tf.report_uninitialized_variables(), time.monotonic() + 30
while len(sess.run(not_ready)) and time.monotonic() < deadline:
    time.sleep(0.05)                        # wait for the chief

read = []
for _ in range(20):
    batch_ids, _ = sess.run([ids, train_op])
    read.append(batch_ids)
deadline = time.monotonic() + 30
while sess.run(global_step) < 20 * num_workers and time.monotonic() < deadline:
    time.sleep(0.01)                        # until both have trained: the ps is idle now
if task_index == 0:
    metadata = tf.RunMetadata()
    sess.run(train_op, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=metadata)
    tf.report_trace(metadata)
read = np.concatenate(read)
print(f"iterator on {ids.device}, w on {w.device}")
print(f"my first batch: records {sorted(read[:64].tolist())}")
print(f"20 steps read {len(read)} records: {len(set(read.tolist()))} different ids, "
      f"every id % {num_workers} == {task_index}: {bool(np.all(read % num_workers == task_index))}; "
      f"loss {sess.run(loss):.4f}")
sess.close()"""

INPUT_TIMELINE_MD = """\
Worker 0 read only even ids, worker 1 only odd ones: two disjoint shards, each read whole
(200 records) every epoch. Below is worker 0's traced step. In its **ops** lane the long bar
is `IteratorGetNext`, the pipeline's dequeue: reading, parsing and batching the next 64
records of its shard, on the worker that holds the iterator. The model's ops are the thin
sliver at the end of the lane: they waited for that batch and for `w` from the ps (the first
red arrow, into a `_Recv`), and end in the `_Send` of the gradient back to the ps (the
other). For a model this small the input takes most of the worker's step: TF's
`dataset.prefetch(1)` would prepare the next batch during the step (nbdist accepts it but
makes a batch when asked, so here the dequeue stays in the step)."""

INPUT_TIMELINE = """\
trace = None
for _ in range(100):   # the trace may still be on its way (at most 5 s)
    trace = next((e for e in dtf.events.history("trace") if e["task"] == "/job:worker/task:0"), None)
    if trace is not None:
        break
    time.sleep(0.05)
ops = [s for d in trace["dev_stats"] if "/job:worker/" in d["device"] for s in d["node_stats"]]
dequeue = [s for s in ops if s["op"] == "IteratorGetNext"]
model = [s for s in ops if s["op"] not in ("IteratorGetNext", "_Send", "_Recv")]
took_ms = lambda spans: 1e3 * sum(s["end_s"] - s["start_s"] for s in spans)
print(f"worker 0's traced step: IteratorGetNext took {took_ms(dequeue):.2f} ms, "
      f"the model's {len(model)} other ops {took_ms(model):.2f} ms together")
tf.show_timeline(trace, width_px=580)"""

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
- **Each worker reads its shard**: `tf.data.TFRecordDataset(path).shard(num_workers,
  task_index)` gives between-graph workers disjoint parts of the same file; the iterator lives
  on its worker, and its `IteratorGetNext` (the pipeline's dequeue) opens the worker's step on
  the timeline.

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
        md(INPUT_MD),
        code(RECORDS),
        code(INPUT_CLUSTER),
        md(INPUT_WORKER_MD),
        code(INPUT_WORKER),
        md(INPUT_TIMELINE_MD),
        code(INPUT_TIMELINE),
        md(RECAP),
        code(STOP),
    ]


def main():
    write("07_timeline_and_performance", cells(), "nb07")


if __name__ == "__main__":
    main()
