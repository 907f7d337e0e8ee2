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
goes down on both workers at once."""

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

RECAP = """\
## What you saw

- **`tf.layers` under `replica_device_setter`**: `conv2d` and `dense` made their `kernel` and
  `bias` with `tf.get_variable`, so every one of them went to the ps (`show_placement`).
- **Activations stay home**: the images, the feature maps and the logits were computed and
  consumed on the worker; only the parameters (ps → worker) and their gradients (worker → ps)
  crossed the wire (`show_graph`, `show_timeline`).
- **The loss went down** on both workers, updating the same kernels asynchronously.

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
        md(RECAP),
        md(CLEANUP_MD),
        code(CLOSE),
        code(STOP),
    ]


def main():
    write("09_a_cnn_across_the_cluster", cells(), "nb09")


if __name__ == "__main__":
    main()
