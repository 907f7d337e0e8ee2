"""Writes notebooks/06_async_vs_sync.ipynb (outputs stripped): ``python notebooks/_src/06_async_vs_sync.py``.

The notebook's cells live here as plain text, so a change to the notebook is a readable diff.
"""

import nbformat
from _write import write

TITLE = """\
# 06 · Asynchronous vs synchronous training, side by side

**Between-graph replication**: every worker task is its *own* client. It builds the same graph
— the variables on the parameter server (ps) through `tf.train.replica_device_setter`, the
model on the worker — and trains on its own data. Two ways to combine the workers' gradients:

- **asynchronous**: each worker applies its gradient to the ps as soon as it has it. Nobody
  waits, but a gradient may have been computed from parameters that other workers changed
  since: it is **stale**.
- **synchronous**: `tf.train.SyncReplicasOptimizer` collects `replicas_to_aggregate` gradients
  per step in accumulators on the ps, averages them and applies one update. Extra workers are
  **backup workers**: a gradient that arrives after its step was taken is **dropped**.

One worker is made a **straggler**, and the same model is trained both ways: watch what each
mode does with the straggler's work, and what each costs in wall-clock time."""

SETUP = """\
%load_ext nbdist
import matplotlib.pyplot as plt
import numpy as np
import nbdist as tf

np.random.seed(0)"""

CLUSTER_MD = """\
## A cluster with a straggler

One ps and three workers, each its own process. `/job:worker/task:2` is slowed down on purpose:
it waits 25 ms before every piece of a step it runs (`delays_ms`, the same as
`python -m nbdist.server --delay-ms 25`); the two others wait 4 ms, a fast network."""

CLUSTER = """\
cluster = tf.LocalCluster(ps=1, worker=3, delays_ms={("worker", 0): 4, ("worker", 1): 4, ("worker", 2): 25})
cluster.start()
cluster"""

PROGRAM_MD = """\
## The program every worker runs

`%%dtf_worker` runs a cell in every worker's process at once; each one is its own client
(`server`, `cluster` and `task_index` are defined there). This cell only *defines* `train`:
a linear model learns 20 true weights from noisy data (the noise alone is a loss of 0.09).
The two modes differ in one line, the optimizer. Each run gets its own resource container
(`tf.container`), so the runs do not share variables, global step or queues on the ps.

Every step, each worker reports its loss and what nbdist measures that TensorFlow hides:
`tf.train.staleness.of(train_op)` (async: how many other updates landed while this gradient was
computed) or `tf.train.staleness.dropped_of(train_op)` (sync: 1 if this gradient was dropped)."""

PROGRAM = """\
%%dtf_worker
import numpy as np

FEATURES, BATCH, LAST_STEP = 20, 16, 200
TRUE_W = np.random.RandomState(0).normal(size=(FEATURES, 1)).astype(np.float32)

def train(mode, replicas_to_aggregate=2, last_step=LAST_STEP):
    rng = np.random.RandomState(100 + task_index)  # every worker its own data
    workers = cluster.num_tasks("worker")
    setter = tf.train.replica_device_setter(worker_device=f"/job:worker/task:{task_index}", cluster=cluster)
    graph = tf.Graph()
    with graph.as_default(), tf.container(mode), tf.device(setter):
        global_step = tf.train.get_or_create_global_step()
        x = tf.placeholder(tf.float32, [None, FEATURES])
        y = tf.placeholder(tf.float32, [None, 1])
        w = tf.get_variable("w", [FEATURES, 1], initializer=tf.zeros_initializer())
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
        opt = tf.train.GradientDescentOptimizer(0.05)
        hooks = [tf.train.StopAtStepHook(last_step=last_step)]
        if mode == "sync":
            opt = tf.train.SyncReplicasOptimizer(opt, replicas_to_aggregate, total_num_replicas=workers)
            hooks.append(opt.make_session_run_hook(is_chief=task_index == 0))
        train_op = opt.minimize(loss, global_step=global_step)
        if mode == "sync":
            measure, name = tf.train.staleness.dropped_of(train_op), "dropped"
        else:
            measure, name = tf.train.staleness.of(train_op), "staleness"
    with graph.as_default(), tf.train.MonitoredTrainingSession(
            master=server.target, is_chief=task_index == 0, hooks=hooks) as sess:
        while not sess.should_stop():
            xs = rng.normal(size=(BATCH, FEATURES)).astype(np.float32)
            ys = xs @ TRUE_W + 0.3 * rng.normal(size=(BATCH, 1)).astype(np.float32)
            _, value, step, m = sess.run([train_op, loss, global_step, measure], {x: xs, y: ys})
            tf.report(step=int(step), loss=float(value), **{name: int(m)})"""

ASYNC_MD = """\
## Asynchronous training

A live dashboard of what the workers report: loss per worker, steps per second per worker, and
the staleness of every gradient applied (one dot per update)."""

ASYNC_DASH = """\
async_dash = tf.Dashboard(title="asynchronous: 3 workers, one a straggler", replay=False)
async_dash"""

ASYNC_RUN = """\
%%dtf_worker
train("async")"""

ASYNC_STOP = "async_dash.stop()  # the final picture stays in the saved notebook"

STALENESS_MD = """\
### Who sends the stale gradients?

The staleness of every update, counted per worker. A fast worker's gradient usually lands on
parameters one or two updates newer than the ones it read. The straggler computes for longer,
so more updates land meanwhile: its gradients are the stale ones — and asynchronous training
applies them anyway."""

STALENESS = """\
WORKER_COLORS = {"/job:worker/task:0": "#1f77b4",  # the dashboards' colours
                 "/job:worker/task:1": "#2ca02c",
                 "/job:worker/task:2": "#9467bd"}

def per_worker(history, metric):
    return {task: [int(m[metric]) for _, _, m in events if metric in m]
            for task, events in sorted(history.snapshot().items())}

staleness = per_worker(async_dash.history, "staleness")
top = max(max(v, default=0) for v in staleness.values())
fig, ax = plt.subplots(figsize=(8, 3.2))
for i, (task, values) in enumerate(staleness.items()):
    counts = np.bincount(values, minlength=top + 1)
    ax.bar(np.arange(top + 1) + (i - 1) * 0.27, counts, width=0.27, color=WORKER_COLORS[task],
           label=f"{task} (mean {np.mean(values or [0]):.1f})")
ax.set_xlabel("staleness: other updates applied while this gradient was computed")
ax.set_ylabel("updates")
ax.set_title("asynchronous: staleness of the applied gradients, per worker")
ax.set_xticks(range(top + 1))
ax.legend(frameon=False)
plt.show()"""

SYNC_MD = """\
## Synchronous training, 2 of 3 (one backup worker)

The same program with `SyncReplicasOptimizer(opt, replicas_to_aggregate=2, total_num_replicas=3)`.
Each worker puts its gradient in the accumulator on the ps, stamped with the step it was
computed at, then waits for a **token** from the token queue; the chief averages two fresh
gradients per step, applies them and hands out one token per worker for the next step. A
gradient stamped with an older step is dropped by the accumulator."""

SYNC_DASH = """\
sync_dash = tf.Dashboard(title="synchronous: 2 of 3 gradients per step", replay=False)
sync_dash"""

SYNC_RUN = """\
%%dtf_worker
import os
train("sync", replicas_to_aggregate=2,
      last_step=int(os.environ.get("NBDIST_NB06_STEPS", LAST_STEP)))  # a browser test trains longer"""

SYNC_STOP = "sync_dash.stop()"

DROPPED_MD = """\
### Who fed the synchronous steps?

Every gradient a worker sent was either averaged into a step or dropped as stale. The
straggler's come too late: the two fast workers have supplied the step before it is done.
Each step hands out three tokens, one per worker, but a token is not addressed to anyone:
whoever asks first takes the next one. So the fast workers often take the third token too, and
the gradient they compute with it arrives after the step was taken: dropped as well. (TF's
documentation says so: *some workers can consume multiple minibatches, while some may not
consume even one*.)"""

DROPPED = """\
dropped = per_worker(sync_dash.history, "dropped")
tasks = list(dropped)
used = [len(v) - int(sum(v)) for v in dropped.values()]
lost = [int(sum(v)) for v in dropped.values()]
fig, ax = plt.subplots(figsize=(8, 2.6))
ax.barh(tasks, used, color=[WORKER_COLORS[t] for t in tasks], label="averaged into a step")
ax.barh(tasks, lost, left=used, color="#bbbbbb", hatch="//", label="dropped (too late)")
for i, (u, d) in enumerate(zip(used, lost)):
    ax.text(u + d, i, f"  {u} used, {d} dropped", va="center", fontsize=9)
ax.invert_yaxis()
ax.set_xlabel("gradients sent")
ax.set_xlim(0, max(u + d for u, d in zip(used, lost)) * 1.35)
ax.set_title("synchronous, 2 of 3: what became of each worker's gradients")
ax.legend(frameon=False, loc="lower right")
plt.show()"""

TRADEOFF_MD = """\
## The trade-off, per wall-clock second

Both runs took the model to the same last global step (200). Left: the global step against
time — its slope is steps per second. Right: the loss the workers measured, against time
(a running median over the three workers' reports)."""

TRADEOFF = """\
def progress(history):
    data = history.snapshot()
    steps = history.global_steps(data)
    losses = sorted((t, m["loss"]) for events in data.values() for t, _, m in events)
    t, loss = np.array(losses).T
    smooth = [np.median(loss[max(0, i - 15):i + 1]) for i in range(len(loss))]
    return np.array(steps).T, (t, smooth)

fig, (ax_steps, ax_loss) = plt.subplots(1, 2, figsize=(11, 3.6))
for label, history, color in [("asynchronous", async_dash.history, "#ff7f0e"),
                              ("synchronous, 2 of 3", sync_dash.history, "#1f77b4")]:
    (t_steps, steps), (t_loss, loss) = progress(history)
    rate = steps[-1] / t_steps[-1]
    ax_steps.plot(t_steps, steps, color=color, label=f"{label}: {rate:.0f} steps/s")
    ax_loss.plot(t_loss, loss, color=color, label=label)
ax_steps.set(xlabel="seconds since the first step", ylabel="global step", title="steps per second")
ax_loss.set(xlabel="seconds since the first step", ylabel="loss (running median)", yscale="log",
            title="loss per wall-clock second")
for ax in (ax_steps, ax_loss):
    ax.grid(alpha=0.3)
    ax.legend(frameon=False)
plt.show()

for label, history, metric in [("asynchronous", async_dash.history, "staleness"),
                               ("synchronous", sync_dash.history, "dropped")]:
    values = [v for vs in per_worker(history, metric).values() for v in vs]
    kind = f"mean staleness {np.mean(values):.2f}" if metric == "staleness" else f"{int(sum(values))} dropped"
    print(f"{label:>12}: {len(values)} gradients computed, {kind}")"""

RECAP = """\
## What you saw

- **Asynchronous** (the staleness histogram): nobody waits, every gradient is applied — the
  straggler's too, computed from parameters several updates old. The global step climbs fastest:
  one step per gradient.
- **Synchronous with a backup worker** (the dropped-gradients bars): every step is the average
  of two gradients computed from the *current* parameters; the straggler's late ones are dropped,
  so its work is mostly wasted, but no step waits for it.
- **The trade-off** (the last two charts): a synchronous step costs more wall-clock time (two
  gradients and a barrier), an asynchronous one is cheaper but may be stale. Here asynchronous
  training reached the noise floor first: for a small, smooth model a few stale gradients barely
  hurt. With bigger models and staler gradients the averaged fresh gradients of synchronous
  training can win — measure it, as here, instead of guessing.
- Both are the same program; only the optimizer differs. And when the chief stops, it closes the
  token queue, so every worker stopped by itself (in TensorFlow they would wait for ever)."""

STOP = """\
cluster.stop()
cluster"""


def cells():
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    return [
        md(TITLE),
        code(SETUP),
        md(CLUSTER_MD),
        code(CLUSTER),
        md(PROGRAM_MD),
        code(PROGRAM),
        md(ASYNC_MD),
        code(ASYNC_DASH),
        code(ASYNC_RUN),
        code(ASYNC_STOP),
        md(STALENESS_MD),
        code(STALENESS),
        md(SYNC_MD),
        code(SYNC_DASH),
        code(SYNC_RUN),
        code(SYNC_STOP),
        md(DROPPED_MD),
        code(DROPPED),
        md(TRADEOFF_MD),
        code(TRADEOFF),
        md(RECAP),
        code(STOP),
    ]


def main():
    write("06_async_vs_sync", cells(), "nb06")


if __name__ == "__main__":
    main()
