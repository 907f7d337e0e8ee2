"""Writes notebooks/08_faults_and_recovery.ipynb (outputs stripped):
``python notebooks/_src/08_faults_and_recovery.py``.

The notebook's cells live here as plain text, so a change to the notebook is a readable diff.
"""

import nbformat
from _write import write

TITLE = """\
# 08 · Faults and recovery: kill a worker, kill the ps, train on

A cluster is processes on machines, and processes die. What TensorFlow's distributed runtime
promises is not that nothing fails, but that a failure is **reported** (a clear error, not a
hang) and that training can **recover**. The rule of thumb: the **state lives on the ps**
(variables, global step); a worker only computes. So losing a worker costs a step; losing the
ps costs everything since the last **checkpoint**.

Here we train, kill a worker's process, see the error and the status table, restart it and
train on; then kill the ps, restart it, restore the variables from a checkpoint and train on.
Last, `MonitoredTrainingSession` does the same recovery by itself. Every wait is bounded."""

SETUP = """\
%load_ext nbdist
import tempfile
import time

import matplotlib.pyplot as plt
import numpy as np
import nbdist as tf

np.random.seed(0)
tf.set_random_seed(0)"""

CLUSTER_MD = """\
## A cluster, live

One ps and one worker. The table is live (it checks every second): a row turns red when its
task dies, green again when it is back, and grey when the cluster is stopped on purpose. Below,
`dtf.status_snapshot()` keeps a copy of the table at the moments that matter: the live one
shows only the latest."""

CLUSTER = "%dtf_cluster ps=1 worker=1"

MODEL_MD = """\
## The model, a session, a checkpoint every 10 steps

A linear regression: the weights and the global step on the ps, the loss and the update on the
worker. The notebook is the client; its session talks to the worker's master.
`operation_timeout_in_ms` bounds every step: a step that cannot finish fails with
`DeadlineExceededError` instead of waiting for ever. `train(n)` runs `n` steps, records each
one's loss and global step, and saves a checkpoint (`tf.train.Saver`) every 10 global steps."""

MODEL = """\
graph = tf.Graph()
with graph.as_default():
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(tf.zeros([10, 1]), name="w")
        global_step = tf.train.get_or_create_global_step()
    with tf.device("/job:worker/task:0"):
        x = tf.placeholder(tf.float32, [None, 10], name="x")
        y = tf.placeholder(tf.float32, [None, 1], name="y")
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
        train_op = tf.train.GradientDescentOptimizer(0.02).minimize(loss, global_step=global_step)
    init = tf.global_variables_initializer()
    not_initialized = tf.report_uninitialized_variables()
    saver = tf.train.Saver()

CONFIG = tf.ConfigProto(operation_timeout_in_ms=10_000)
CHECKPOINTS = tempfile.mkdtemp(prefix="nbdist-ckpt-")
rng = np.random.RandomState(0)
TRUE_W = rng.normal(size=(10, 1)).astype(np.float32)
history, faults = [], []      # (run, global step, loss) per step; (run, what) per fault

def train(sess, steps):
    for _ in range(steps):
        xs = rng.normal(size=(32, 10)).astype(np.float32)
        _, value, step = sess.run([train_op, loss, global_step], {x: xs, y: xs @ TRUE_W})
        history.append((len(history), int(step) + 1, float(value)))  # the step read before its update
        if (int(step) + 1) % 10 == 0:
            saver.save(sess, f"{CHECKPOINTS}/model", global_step=int(step) + 1)
    return f"global step {history[-1][1]}, loss {history[-1][2]:.4f}"

def open_session(timeout_s=10):
    \"\"\"A new session, once the cluster answers; returns it and the variables it finds uninitialized.
    UnavailableError (a restarted task's old connection) or AbortedError mean: ask again.\"\"\"
    deadline = time.monotonic() + timeout_s
    while True:
        sess = tf.Session(dtf.target("worker", 0), graph=graph, config=CONFIG)
        try:
            return sess, [name.decode() for name in sess.run(not_initialized)]
        except (tf.errors.UnavailableError, tf.errors.AbortedError):
            sess.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)

sess, missing = open_session()
sess.run(init)
train(sess, 25)"""

KILL_WORKER_MD = """\
## Kill the worker

`dtf.kill("worker", 0)` sends SIGKILL to the worker's process (`kill -9`, as a machine that
crashes). The next step fails at once with an `UnavailableError` that says which task, at
which address, and what to check; the status table, a copy of this moment, says how the
process ended: red."""

KILL_WORKER = """\
dtf.kill("worker", 0)
faults.append((len(history), "worker killed\\nand restarted"))
try:
    train(sess, 1)
except (tf.errors.UnavailableError, tf.errors.AbortedError) as e:
    print(f"{type(e).__name__}: {e.message}")
dtf.status_snapshot()  # the table now (the live one at the top changes on)"""

RESTART_WORKER_MD = """\
## Restart it and train on

`dtf.restart_task("worker", 0)` starts the task again at the same address. The old session
was bound to the dead master, so the client opens a new one. Nothing was lost: the variables
and the global step live on the ps, which never stopped. The worker's row is green again."""

RESTART_WORKER = """\
sess.close()
dtf.restart_task("worker", 0)
sess, missing = open_session()
print("uninitialized variables after the worker's restart:", missing or "none")
print("training goes on from", sess.run(global_step), "->", train(sess, 20))
dtf.status_snapshot()"""

KILL_PS_MD = """\
## Kill the ps

Now the task that holds the state. At global step 45, five steps after the last checkpoint
(step 40), the ps's process is killed. The error names the ps, seen from the worker that tried to
reach it; now the ps's row is red."""

KILL_PS = """\
dtf.kill("ps", 0)
faults.append((len(history), "ps killed,\\nrestored"))
try:
    train(sess, 1)
except (tf.errors.UnavailableError, tf.errors.AbortedError) as e:
    print(f"{type(e).__name__}: {e.message}")
dtf.status_snapshot()"""

RESTORE_MD = """\
## Restart the ps, restore from the checkpoint

A restarted ps is a new, empty process: its variables are gone (the new session reports them
uninitialized). `saver.restore` reads the latest checkpoint back into them: training resumes
from global step 40, and the 5 steps after that checkpoint are lost — they are trained
again."""

RESTORE = """\
sess.close()
dtf.restart_task("ps", 0)
sess, missing = open_session()
print("uninitialized variables after the ps's restart:", missing)
latest = tf.train.latest_checkpoint(CHECKPOINTS)
saver.restore(sess, latest)
print(f"restored {latest.rsplit('/', 1)[-1]}: global step {sess.run(global_step)} ->", train(sess, 25))
sess.close()
dtf.status_snapshot()"""

CURVE_MD = """\
## The loss across the faults

Every step the client ran, in order. Top: the loss; bottom: the global step, with the
checkpoints. After the worker's death training continues where it was; after the ps's, the
global step falls back to the checkpoint, and the loss with it, then goes on."""

CURVE = """\
runs, steps, losses = np.array(history).T
fig, (ax_loss, ax_step) = plt.subplots(2, 1, figsize=(9, 5), sharex=True, gridspec_kw={"hspace": 0.1})
ax_loss.plot(runs, losses, color="#1f77b4")
ax_loss.set(yscale="log", ylabel="loss")
ax_step.plot(runs, steps, color="#555555")
saved = steps % 10 == 0
ax_step.plot(runs[saved], steps[saved], "o", color="#2ca02c", label="checkpoint saved")
ax_step.set(xlabel="steps run by the client", ylabel="global step")
for run, what in faults:
    for ax in (ax_loss, ax_step):
        ax.axvline(run - 0.5, color="#d62728", linestyle="--")
    ax_loss.text(run, ax_loss.get_ylim()[1], what, color="#d62728", va="top", fontsize=9)
ax_step.legend(frameon=False, loc="lower right")
plt.show()"""

MTS_MD = """\
## `MonitoredTrainingSession` recovers by itself

TF 1.x training loops usually run in a `tf.train.MonitoredTrainingSession`: the chief's
session initializes the variables or restores them from `checkpoint_dir`, and saves a
checkpoint every `save_checkpoint_steps`. When a step fails because a task went away
(`UnavailableError`, `AbortedError`), it closes the session, opens a new one — restoring from
the latest checkpoint — and the loop goes on. Below, the ps is killed and restarted in the
middle of the loop, at global step 35; the loop never sees an error."""

MTS = """\
mts_dir = tempfile.mkdtemp(prefix="nbdist-mts-")
mts_steps, killed = [], False
with graph.as_default(), tf.train.MonitoredTrainingSession(
        master=dtf.target("worker", 0), is_chief=True, checkpoint_dir=mts_dir, save_checkpoint_steps=10,
        save_summaries_steps=None, log_step_count_steps=0, config=CONFIG,
        hooks=[tf.train.StopAtStepHook(last_step=60)]) as mts:
    while not mts.should_stop():
        xs = rng.normal(size=(32, 10)).astype(np.float32)
        _, step = mts.run([train_op, global_step], {x: xs, y: xs @ TRUE_W})
        mts_steps.append(int(step) + 1)
        if mts_steps[-1] == 35 and not killed:
            dtf.kill("ps", 0)
            dtf.restart_task("ps", 0)
            killed = True
            kill_run = len(mts_steps)

fig, ax = plt.subplots(figsize=(9, 2.6))
ax.plot(range(len(mts_steps)), mts_steps, color="#555555")
ax.axvline(kill_run - 0.5, color="#d62728", linestyle="--")
ax.text(kill_run, 5, "  ps killed and restarted:\\n  the session restored step 30 by itself", color="#d62728")
ax.set(xlabel="steps run by the loop", ylabel="global step",
       title="MonitoredTrainingSession across a ps restart")
plt.show()
print("steps run:", len(mts_steps), "; last global step:", mts_steps[-1])"""

RECAP = """\
## What you saw

- **A killed worker** (the status table: `process exited with code -9`): the client's next step
  failed at once with an `UnavailableError` naming the task and its address. Restarted, with a
  new session, training went on from the same global step: the state is on the ps.
- **A killed ps**: the same clear error, naming the ps. A restarted ps is empty (the new session
  reported its variables uninitialized); `saver.restore` brought back the last checkpoint, and
  the steps after it were trained again (the global step fell back, in the loss curve).
- **`MonitoredTrainingSession`** with a `checkpoint_dir` does that recovery by itself: a new
  session, restored from the latest checkpoint, and the loop never noticed.
- **Every wait bounded**: `operation_timeout_in_ms` for steps, a deadline for reconnecting.
  Checkpoint as often as you can afford to lose the steps in between.

Back to [00 · start here](00_start_here.ipynb) for the map of every notebook."""

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
        md(KILL_WORKER_MD),
        code(KILL_WORKER),
        md(RESTART_WORKER_MD),
        code(RESTART_WORKER),
        md(KILL_PS_MD),
        code(KILL_PS),
        md(RESTORE_MD),
        code(RESTORE),
        md(CURVE_MD),
        code(CURVE),
        md(MTS_MD),
        code(MTS),
        md(RECAP),
        code(STOP),
    ]


def main():
    write("08_faults_and_recovery", cells(), "nb08")


if __name__ == "__main__":
    main()
