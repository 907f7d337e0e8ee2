"""Writes notebooks/09_a_cnn_across_the_cluster.ipynb (outputs stripped):
``python notebooks/_src/09_a_cnn_across_the_cluster.py``.

The notebook's cells live here as plain text, so a change to the notebook is a readable diff.
"""

import nbformat
from _write import write

TITLE = """\
# 09 · A CNN across the cluster

Notebooks 04 to 08 trained small models so that the machinery stayed in view. Here is the
model most TF 1.x tutorials train: a **convolutional network** on MNIST-shaped images (28x28
pixels, one channel, ten classes), written with `tf.layers` — two convolutions, each followed
by max pooling, then dropout and a dense head — and trained **between-graph** on one ps and two
workers, exactly as in notebook 05.

What to notice: the conv **kernels live on the ps** (`replica_device_setter` puts every
variable there); the **activations never leave the worker** that computes them — what crosses
the wire every step is the kernels going out and their **gradients** coming back; and the loss
goes down on both workers at once. At the end, the same CNN with batch norm gets an
`is_training` switch (a `tf.cond`): one graph that trains and evaluates."""

SETUP = """\
%load_ext nbdist
import time

import numpy as np
import nbdist as tf

np.random.seed(0)
tf.set_random_seed(0)"""

CLUSTER_MD = """\
## A cluster: one ps and two workers"""

CLUSTER = "%dtf_cluster ps=1 worker=2"

MODEL_MD = """\
## The model, built by every worker with `tf.layers`

The images are synthetic, so that the notebook needs no download: ten fixed random
"digit" patterns, each image one of them plus noise (seeded: the same data set on every
worker, each training on its own half). The cell is the worker part of a training script;
`tf.layers.conv2d` and `tf.layers.dense` create their `kernel` and `bias` variables with
`tf.get_variable`, inside the `replica_device_setter`, so they land on the ps."""

MODEL = """\
%%dtf_worker
import time
import numpy as np

def mnist_shaped(n, rng):
    patterns = (rng.rand(10, 28, 28, 1) > 0.75).astype(np.float32)   # ten "digits"
    labels = rng.randint(0, 10, n)
    images = 0.6 * patterns[labels] + 0.4 * rng.rand(n, 28, 28, 1).astype(np.float32)
    return images.astype(np.float32), labels.astype(np.int64)

X, Y = mnist_shaped(2000, np.random.RandomState(0))   # the same data on every worker...
X, Y = X[task_index::2], Y[task_index::2]              # ...and each trains on its own half
batches = np.random.RandomState(1 + task_index)

def feed(batch=32):
    idx = batches.randint(0, len(X), batch)
    return {images: X[idx], labels: Y[idx]}

tf.reset_default_graph()   # this process's own graph (so that the cell can be run again)
tf.set_random_seed(0)
worker_device = f"/job:worker/task:{task_index}"
with tf.device(tf.train.replica_device_setter(cluster=cluster, worker_device=worker_device)):
    images = tf.placeholder(tf.float32, [None, 28, 28, 1], name="images")
    labels = tf.placeholder(tf.int64, [None], name="labels")
    net = tf.layers.conv2d(images, 8, 5, padding="same", activation=tf.nn.relu, name="conv1")
    net = tf.layers.max_pooling2d(net, 2, 2, name="pool1")            # 14x14x8
    net = tf.layers.conv2d(net, 16, 5, padding="same", activation=tf.nn.relu, name="conv2")
    net = tf.layers.max_pooling2d(net, 2, 2, name="pool2")            # 7x7x16
    net = tf.layers.flatten(net)
    net = tf.layers.dropout(net, rate=0.25, training=True)
    logits = tf.layers.dense(net, 10, name="logits")
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    global_step = tf.train.get_or_create_global_step()
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=global_step)

if task_index == 0:
    for v in tf.trainable_variables():
        print(f"{v.op.name:<14} {str(v.shape):<16} on {v.device}")
    print(f"logits on {logits.device}")"""

TRACE_MD = """\
## One traced step per worker

Each worker opens its own session; the chief (worker 0) initializes the shared variables and
worker 1 waits for it. Then a step to register the graph's pieces, and a traced one, sent to the
notebook with `tf.report_trace`. Each worker lists what its traced step received from the ps
and sent to it: the tensors on the wire, with their sizes."""

TRACE = """\
%%dtf_worker
sess = tf.Session(server.target)            # this worker's own client
if task_index == 0:
    sess.run(tf.global_variables_initializer())
not_ready, deadline = tf.report_uninitialized_variables(), time.monotonic() + 30
while len(sess.run(not_ready)) and time.monotonic() < deadline:
    time.sleep(0.05)                        # wait for the chief

sess.run(train_op, feed())
metadata = tf.RunMetadata()
sess.run(train_op, feed(), options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
         run_metadata=metadata)
tf.report_trace(metadata)
if task_index == 1:
    task = lambda device: device.split("/device:")[0].replace("/replica:0", "")
    sent = [t for d in metadata.step_stats.dev_stats for t in d.transfers if t["op"] == "_Send"]
    sent = [t for t in sent if not t["key"].split(";")[2].startswith("_")]   # (not control triggers)
    for src, dst, tensor, size in sorted((*t["key"].split(";"), t["bytes"]) for t in sent):
        print(f"{task(src)} -> {task(dst)}: {tensor:<52} {size:>6,} bytes")
    print(f"{sum(t['bytes'] for t in sent):,} bytes on the wire in this step")"""

PLACEMENT_MD = """\
## Where the kernels live

`tf.show_placement` of worker 1's traced step: per task, its ops by type and its variables.
All seven variables — the two conv kernels, the dense kernel, their three biases and the global
step — are on `/job:ps/task:0`; worker 1 holds none, and runs every `Conv2D`, `MaxPool` and
their gradients."""

WAIT_TRACES = """\
traces = {}
for _ in range(100):   # both traces, at most 5 s
    traces = {event["task"]: event for event in dtf.events.history("trace")}
    if len(traces) == 2:
        break
    time.sleep(0.05)
step = traces["/job:worker/task:1"]
tf.show_placement(step)"""

GRAPH_MD = """\
## What crosses the wire

Worker 1's step as its master cut it: one box per task. The red arrows are the tensors sent
between the tasks in every step — from the ps, the values of `conv1/kernel`, `conv2/kernel`,
`logits/kernel` and the biases; back to the ps, their gradients (`gradients/.../Conv2DBackpropFilter`
and friends), applied there. The images, the feature maps and the logits stay inside
worker 1's box: in data-parallel training only the parameters and their gradients travel, so
the wire costs as many bytes as the model has parameters, whatever the batch size."""

GRAPH = """\
tf.show_graph(step, title="worker 1's step, placed and partitioned by worker 1's master")"""

TIMELINE_MD = """\
The same step on a timeline: the `_Recv`s of the kernels at the start of worker 1's band, the
convolutions and their gradients, then the gradients' arrows into the ps band, where the
updates run."""

TIMELINE = """\
tf.show_timeline(step, width_px=700)"""

TRAIN_MD = """\
## Training, live

Both workers train asynchronously, each reporting its loss with `tf.report` after every step;
the dashboard draws one curve per worker. At the end each worker prints its loss averaged over
its first and its last 20 steps."""

DASH = """\
dash = tf.Dashboard(title="a CNN, 2 workers, async")
dash"""

TRAIN = """\
%%dtf_worker
number = train_op.outputs[0]   # the global step just after this update
losses = []
for _ in range(120):
    _, n, value = sess.run([train_op, number, loss], feed())
    losses.append(float(value))
    tf.report(step=int(n), loss=float(value))
first, last = np.mean(losses[:20]), np.mean(losses[-20:])
print(f"loss over my first 20 steps {first:.3f}, over my last 20 {last:.3f};",
      f"went down: {last < 0.5 * first}")"""

AFTER_TRAIN = """\
for _ in range(100):   # the last reports may still be on their way (at most 5 s)
    if len(dtf.events.history("metric")) >= 240:
        break
    time.sleep(0.05)
dash.stop()"""

SWITCH_MD = """\
## One graph for training and evaluation: `tf.cond`

The CNN above has `training=True` written into its dropout, so every step drops a quarter of
the features, even a step meant to measure the model. TF 1.x models take a **boolean tensor**
instead: `is_training = tf.placeholder_with_default(False, [], name="is_training")`, passed as
`training=is_training` to `tf.layers.dropout` and `tf.layers.batch_normalization`. Each of these
layers then builds a `tf.cond`: dropout drops features or passes them through; batch norm
normalizes with the batch's statistics and updates its moving averages, or normalizes with the
moving averages as they are. One graph, and the feed decides: `{is_training: True}` to train,
nothing to evaluate.

Worker 0 alone (`--tasks 0`: one client is enough to see the switch) builds the CNN again with
batch norm after the first convolution, trains it for 30 steps and measures it, before and
after, on 500 images of worker 1's half, which it never trained on (`is_training` left False).
As before, every variable goes to the ps, batch norm's `moving_mean` and `moving_variance` too,
and so do the ops that update them (`AssignMovingAvg`, placed with its variable)."""

SWITCH = """\
%%dtf_worker --tasks 0
sess.close()               # (the first CNN's session: this is a new graph)
tf.reset_default_graph()
tf.set_random_seed(0)
with tf.device(tf.train.replica_device_setter(cluster=cluster, worker_device=worker_device)):
    is_training = tf.placeholder_with_default(False, [], name="is_training")
    images = tf.placeholder(tf.float32, [None, 28, 28, 1], name="images")
    labels = tf.placeholder(tf.int64, [None], name="labels")
    with tf.variable_scope("cnn_bn"):
        net = tf.layers.conv2d(images, 8, 5, padding="same", name="conv1")
        net = tf.layers.batch_normalization(net, training=is_training, momentum=0.9,   # a tf.cond
                                            name="bn1")   # (0.9: its moving averages settle in 30 steps)
        net = tf.layers.max_pooling2d(tf.nn.relu(net), 2, 2, name="pool1")
        net = tf.layers.conv2d(net, 16, 5, padding="same", activation=tf.nn.relu, name="conv2")
        net = tf.layers.max_pooling2d(net, 2, 2, name="pool2")
        net = tf.layers.flatten(net)
        net = tf.layers.dropout(net, rate=0.25, training=is_training, name="dropout")  # a tf.cond
        logits = tf.layers.dense(net, 10, name="logits")
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), labels), tf.float32))
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):   # the moving averages
        train_op = tf.train.MomentumOptimizer(0.05, momentum=0.9).minimize(loss)    # (fast in 30 steps)

X1, Y1 = mnist_shaped(2000, np.random.RandomState(0))
held_out = {images: X1[1::2][:500], labels: Y1[1::2][:500]}   # worker 1's half: never trained on
sess = tf.Session(server.target)
sess.run(tf.global_variables_initializer())
print(f"accuracy on 500 held-out images before training: {sess.run(accuracy, held_out):.2f}")
for _ in range(30):
    sess.run(train_op, {**feed(), is_training: True})        # feed() fills the new placeholders
print(f"accuracy on 500 held-out images after 30 steps:  {sess.run(accuracy, held_out):.2f}")
for v in tf.global_variables():
    if "moving" in v.op.name:
        print(f"{v.op.name:<26} on {v.device}")"""

DEAD_MD = """\
## What a step runs: Switch, Merge and dead tensors

`tf.cond` is built as in TF 1.x, from two kinds of ops. A **Switch** passes its input to one of
its two outputs, the one the predicate picks; the other output is **dead**, a tensor without a
value. An op with a dead input does not run and its outputs are dead too, so the whole untaken
branch is skipped; a **Merge** at the end passes on whichever of its inputs is alive. The
branches' ops run where they were placed: batch norm's updates are on the ps, so the predicate
is sent there, and when it is False the ps skips them and sends its dead result back to the
worker as a flag, not a tensor.

Worker 0 traces three steps and counts, per task, the ops of the branches that ran: a training
step, an evaluation step, and the train op with `is_training` left False (how one fine-tunes
with batch norm's statistics frozen: the weights change, the moving averages do not)."""

DEAD = """\
%%dtf_worker --tasks 0
def ran_in(fetch, feed_dict):
    \"\"\"(job, op name, op type) of every op that ran in a traced step.\"\"\"
    metadata = tf.RunMetadata()
    sess.run(fetch, feed_dict, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
             run_metadata=metadata)
    return [(d.device.split("/replica")[0], s["node_name"], s["op"])
            for d in metadata.step_stats.dev_stats for s in d.node_stats]

steps = {
    "train_op, {is_training: True}": ran_in(train_op, {**feed(), is_training: True}),
    "accuracy, is_training left False": ran_in(accuracy, held_out),
    "train_op, is_training left False": ran_in(train_op, feed()),
}
print(f"{'step':<33} {'worker 0: dropout ops':>21}   {'ps: Switch':>10} {'AssignSub':>9}")
for step, ran in steps.items():
    dropout = [op for job, name, op in ran
               if name.startswith("cnn_bn/dropout/cond/dropout/") and op != "Switch"]   # (not the gate)
    on_ps = [op for job, name, op in ran if job == "/job:ps"]
    print(f"{step:<33} {len(dropout):>21}   {on_ps.count('Switch'):>10} {on_ps.count('AssignSub'):>9}")
    if dropout:
        print(f"{'':<4}(the dropout: {', '.join(sorted(set(dropout)))})")"""

READ_MD = """\
The training step ran the dropout's ops on worker 0 and both moving-average updates
(`AssignSub`) on the ps. The evaluation step ran no dropout op, its Switch sent the features
along the False side straight to the Merge, and nothing of the updates, which `accuracy` does
not need. The third step shows a branch skipped on another task than the one that decided: the
ps received the predicate and ran its Switches, but its `AssignSub`s had dead inputs and did not
run, so the moving averages kept their values while the weights took a step."""


RECAP = """\
## What you saw

- **`tf.layers` under `replica_device_setter`**: `conv2d` and `dense` made their `kernel` and
  `bias` with `tf.get_variable`, so every one of them went to the ps (`show_placement`).
- **Activations stay home**: the images, the feature maps and the logits were computed and
  consumed on the worker; only the parameters (ps → worker) and their gradients (worker → ps)
  crossed the wire (`show_graph`, `show_timeline`).
- **The loss went down** on both workers, updating the same kernels asynchronously.
- **One graph for training and evaluation**: `is_training`, a `tf.placeholder_with_default`
  False, as `training=` of dropout and batch norm; each builds a `tf.cond` from Switch and Merge
  ops, and a step runs only the branch the feed picks, on whichever task its ops are: the
  dropout on the worker, the moving-average updates on the ps.

`benchmarks/bench_models.py` times this CNN against TensorFlow's runtime. Back to
[00 · start here](00_start_here.ipynb) for the map of every notebook."""

CLEANUP_MD = """\
## Clean up"""

CLOSE = """\
%%dtf_worker
sess.close()"""

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
        md(TRACE_MD),
        code(TRACE),
        md(PLACEMENT_MD),
        code(WAIT_TRACES),
        md(GRAPH_MD),
        code(GRAPH),
        md(TIMELINE_MD),
        code(TIMELINE),
        md(TRAIN_MD),
        code(DASH),
        code(TRAIN),
        code(AFTER_TRAIN),
        md(SWITCH_MD),
        code(SWITCH),
        md(DEAD_MD),
        code(DEAD),
        md(READ_MD),
        md(RECAP),
        md(CLEANUP_MD),
        code(CLOSE),
        code(STOP),
    ]


def main():
    write("09_a_cnn_across_the_cluster", cells(), "nb09")


if __name__ == "__main__":
    main()
