"""An MNIST-shaped MLP trained across processes, written the way TF 1.x tutorials write it.

The model is TF's ``mnist_replica.py``: 784 inputs, one ReLU hidden layer (``--hidden``, 100),
10 logits, softmax cross-entropy, Adam. ``--model cnn`` trains a small CNN instead, written with
`tf.layers` as the layers tutorials write it: the images reshaped to 28x28x1, ``conv2d`` (8
5x5 filters, ReLU) and 2x2 ``max_pooling2d``, ``conv2d`` (16) and pooling, ``flatten``,
``dropout`` (0.25, training) and a ``dense`` head of 10 (between-graph only).
The data are synthetic and seeded (no download): a set of 10,000 images of 784 pixels uniform
in [0, 1), labelled by a fixed random teacher network (784 -> 32 -> 10, argmax), served in
batches as ``mnist.train.next_batch`` serves MNIST; each worker its own set.

Between-graph replication (the default) runs one process per task. The ps tasks only serve
(``server.join()``); each worker builds the same graph under ``tf.train.replica_device_setter``
(variables on the ps, the model on the worker) and trains in its own
``tf.train.MonitoredTrainingSession`` with a ``StopAtStepHook``: asynchronously, or with
``--sync`` through ``tf.train.SyncReplicasOptimizer`` (every worker's gradient in each step)
and its session-run hook. Worker 0 is the chief: it initializes the model; the others poll
until it has before they open their session (TF's non-chief session, finding the model not
ready, would sleep 30 s before it looked again). ::

    python examples/mnist_mlp_distributed.py --job_name=ps --task_index=0 \
        --ps_hosts=localhost:2222 --worker_hosts=localhost:2223,localhost:2224 [--sync]
    python examples/mnist_mlp_distributed.py --job_name=worker --task_index=0 ...   # and 1

In-graph replication (``--in_graph``): every task only serves, and one client process (no
``--job_name``) builds a tower per worker task (``with tf.device('/job:worker/task:%d' % i)``),
the variables on the ps, and applies the towers' averaged gradients once per step (its loss
is the towers' mean)::

    python examples/mnist_mlp_distributed.py --in_graph --job_name=ps --task_index=0 \
        --ps_hosts=localhost:2222 --worker_hosts=localhost:2223,localhost:2224
    python examples/mnist_mlp_distributed.py --in_graph --job_name=worker --task_index=0 ...  # and 1
    python examples/mnist_mlp_distributed.py --in_graph --ps_hosts=... --worker_hosts=...    # the client

``--tf`` runs the same program on real TensorFlow. Each worker (the client, in-graph) prints
``Worker N: training begins @ <unix time> (global step G)`` after its first step and one
JSON line at the end: its steps, global steps, wall time of training and steps per second;
the chief adds the time at which the running mean of its last 50 losses first fell below
``--target_loss`` (without it: its loss at every step). In TF, a synchronous worker may wait
on the token queue for ever once another has stopped (TF's behaviour, the chief included);
whoever started it ends it.
"""

import argparse
import json
import sys
import time

import numpy as np

if "--tf" in sys.argv:  # the same program on real TensorFlow, for comparison
    sys.argv.remove("--tf")
    import os

    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # tf.compat.v1.layers needs Keras 2 (TF >= 2.16)
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
else:
    import nbdist as tf

IMAGE_PIXELS = 28 * 28
NUM_CLASSES = 10
TEACHER_HIDDEN = 32
MEAN_OF = 50  # the chief's running mean of this many losses is compared with --target_loss


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ps_hosts", required=True, help="comma-separated host:port of the ps tasks")
    p.add_argument("--worker_hosts", required=True, help="comma-separated host:port of the worker tasks")
    p.add_argument("--job_name", choices=["ps", "worker"], help="omit with --in_graph to run the client")
    p.add_argument("--task_index", type=int, default=0)
    p.add_argument("--model", choices=["mlp", "cnn"], default="mlp", help="the MLP or the tf.layers CNN")
    p.add_argument("--hidden", type=int, default=100, help="hidden units (the MLP)")
    p.add_argument("--batch_size", type=int, default=100, help="examples per step and worker")
    p.add_argument("--learning_rate", type=float, default=0.001, help="Adam's (its default)")
    p.add_argument("--train_steps", type=int, default=1000, help="global step to stop at")
    p.add_argument("--sync", action="store_true", help="SyncReplicasOptimizer: aggregate every worker")
    p.add_argument("--in_graph", action="store_true", help="one client, a tower per worker task")
    p.add_argument("--target_loss", type=float, help="report when the chief's mean loss fell below this")
    p.add_argument("--seed", type=int, default=0, help="the teacher's seed (the same on every worker)")
    p.add_argument(
        "--ready_timeout_s", type=float, default=120.0, help="how long a worker waits for the chief"
    )
    args = p.parse_args(argv)
    if args.model == "cnn" and args.in_graph:
        p.error("--model cnn runs between-graph only")
    if args.job_name is None and not args.in_graph:
        p.error("--job_name is required (only the --in_graph client runs without one)")
    return args


class SyntheticMnist:
    """An MNIST-shaped training set: pixels uniform in [0, 1), labelled by a fixed random teacher,
    served as TF's ``mnist.train.next_batch`` serves MNIST (slices of a set reshuffled each epoch).

    The teacher (784 -> 32 ReLU -> 10, argmax) comes from `teacher_seed`, the same everywhere;
    its logits are shifted so that the 10 classes are about equally frequent. The set's
    `examples` pixels come from `seed`: each worker its own. It is made once, before training,
    so a step costs what reading MNIST costs, not what drawing 78,400 random numbers does.
    """

    def __init__(self, seed, teacher_seed=0, examples=10_000):
        teacher = np.random.default_rng(teacher_seed)
        self.w1 = (teacher.normal(size=(IMAGE_PIXELS, TEACHER_HIDDEN)) / np.sqrt(IMAGE_PIXELS / 12)).astype(
            np.float32
        )
        self.w2 = (teacher.normal(size=(TEACHER_HIDDEN, NUM_CLASSES)) / np.sqrt(TEACHER_HIDDEN)).astype(
            np.float32
        )
        self.b2 = np.zeros(NUM_CLASSES, np.float32)  # then set to balance the classes on a sample:
        self.b2 = -self._logits(teacher.random((4096, IMAGE_PIXELS), dtype=np.float32)).mean(0)
        self.rng = np.random.default_rng(seed)
        self.images = self.rng.random((examples, IMAGE_PIXELS), dtype=np.float32)
        self.labels = self._logits(self.images).argmax(1).astype(np.int64)
        self._index = examples  # reshuffle before the first batch

    def _logits(self, images):
        return np.maximum((images - 0.5) @ self.w1, 0.0) @ self.w2 + self.b2

    def next_batch(self, batch_size):
        if self._index + batch_size > len(self.images):  # a new epoch, in a new order
            order = self.rng.permutation(len(self.images))
            self.images, self.labels = self.images[order], self.labels[order]
            self._index = 0
        start, self._index = self._index, self._index + batch_size
        return self.images[start : self._index], self.labels[start : self._index]


def mlp_variables(hidden, seed=0):
    """The weights, shaped and scaled as ``mnist_replica.py`` creates them, placed by the enclosing
    device scope. Their initial values come from a seeded numpy generator rather than
    ``tf.truncated_normal``, so that nbdist and TF start from the same point."""
    init = np.random.default_rng(seed)
    hid_w = tf.Variable(
        (init.normal(size=(IMAGE_PIXELS, hidden)) / np.sqrt(IMAGE_PIXELS)).astype(np.float32), name="hid_w"
    )
    hid_b = tf.Variable(tf.zeros([hidden]), name="hid_b")
    sm_w = tf.Variable(
        (init.normal(size=(hidden, NUM_CLASSES)) / np.sqrt(hidden)).astype(np.float32), name="sm_w"
    )
    sm_b = tf.Variable(tf.zeros([NUM_CLASSES]), name="sm_b")
    return hid_w, hid_b, sm_w, sm_b


def mlp_loss(images, labels, variables):
    """Mean softmax cross-entropy of the MLP's logits against integer labels."""
    hid_w, hid_b, sm_w, sm_b = variables
    hid = tf.nn.relu(tf.nn.xw_plus_b(images, hid_w, hid_b))
    logits = tf.nn.xw_plus_b(hid, sm_w, sm_b)
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))


CNN_FILTERS = (8, 16)


def cnn_loss(images, labels, seed=0):
    """The `tf.layers` CNN's mean softmax cross-entropy. Its kernels start from a seeded numpy
    generator (glorot-uniform scaled, through ``constant_initializer``), so that nbdist and TF
    start from the same point; the biases from zeros. Dropout draws differ between the two."""
    init = np.random.default_rng(seed)

    def glorot(*shape):
        fan_in, fan_out = np.prod(shape[:-1]), shape[-1] * (np.prod(shape[:-2]) if len(shape) == 4 else 1)
        limit = np.sqrt(6.0 / (fan_in + fan_out))
        return tf.constant_initializer(init.uniform(-limit, limit, shape).astype(np.float32))

    f1, f2 = CNN_FILTERS
    net = tf.reshape(images, [-1, 28, 28, 1])
    net = tf.layers.conv2d(
        net,
        f1,
        5,
        padding="same",
        activation=tf.nn.relu,
        kernel_initializer=glorot(5, 5, 1, f1),
        name="conv1",
    )
    net = tf.layers.max_pooling2d(net, 2, 2, name="pool1")
    net = tf.layers.conv2d(
        net,
        f2,
        5,
        padding="same",
        activation=tf.nn.relu,
        kernel_initializer=glorot(5, 5, f1, f2),
        name="conv2",
    )
    net = tf.layers.max_pooling2d(net, 2, 2, name="pool2")
    net = tf.layers.dropout(tf.layers.flatten(net), rate=0.25, training=True)
    logits = tf.layers.dense(
        net, NUM_CLASSES, kernel_initializer=glorot(7 * 7 * f2, NUM_CLASSES), name="logits"
    )
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))


class Progress:
    """One worker's training, step by step: when it began, its first and last step (time, global
    step) and, for the chief, its losses and when their running mean of `MEAN_OF` first fell
    below `target`. The first step and the target are printed when they happen (a TF worker
    may never return from its last synchronous step)."""

    def __init__(self, name, watch_loss, target=None):
        self.name, self.watch_loss, self.target = name, watch_loss, target
        self.began = time.time()
        self.local_steps, self.first, self.last, self.losses = 0, None, None, []
        self.at_target = None  # (seconds into training, global step)

    def step_done(self, loss, global_step):
        now, global_step = time.time(), int(global_step)
        self.local_steps += 1
        self.last = (now, global_step)
        if self.first is None:  # steady state from here on: the first step registers the graph
            self.first = self.last
            print(f"{self.name}: training begins @ {now:.6f} (global step {global_step})", flush=True)
        if not self.watch_loss:
            return
        self.losses.append(float(loss))
        if self.target is None or self.at_target is not None or len(self.losses) < MEAN_OF:
            return
        if np.mean(self.losses[-MEAN_OF:]) < self.target:
            self.at_target = (now - self.began, global_step)
            below = f"mean loss of {MEAN_OF} steps below {self.target}"
            print(
                f"{self.name}: {below} after {now - self.began:.6f} s (global step {global_step})", flush=True
            )

    def report(self):
        """The JSON line's figures; steps per second from the end of the first step to the last."""
        if self.first is None:  # (a worker that joined after the last step)
            return {"local_steps": 0, "began": self.began}
        (t0, step0), (t1, step1) = self.first, self.last
        window_s = t1 - t0
        report = {
            "local_steps": self.local_steps,
            "global_step": step1 + 1,  # (the value read in the last step, before its own increment)
            "first_global_step": step0,
            "began": self.began,
            "first_step_done": t0,
            "ended": t1,
            "wall_s": t1 - self.began,
            "local_steps_per_s": (self.local_steps - 1) / window_s if window_s > 0 else None,
            "global_steps_per_s": (step1 - step0) / window_s if window_s > 0 else None,
        }
        if not self.watch_loss:
            return report
        report["first_loss"] = float(np.mean(self.losses[:MEAN_OF]))
        report["final_loss"] = float(np.mean(self.losses[-MEAN_OF:]))
        if self.target is None:
            report["losses"] = [round(v, 5) for v in self.losses]
        else:
            seconds, step = self.at_target or (None, None)
            report.update(target_loss=self.target, time_to_target_s=seconds, global_step_at_target=step)
        return report


def wait_for_model(target, report_op, task_index, timeout_s):
    """Polls until the chief has initialized the model. (TF's non-chief MonitoredTrainingSession
    looks once and, if the model is not ready, sleeps 30 s before it looks again.)"""
    deadline = time.monotonic() + timeout_s
    with tf.Session(target) as sess:
        while len(sess.run(report_op)) > 0:
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"worker {task_index}: model not initialized after {timeout_s} s; is worker 0 running?"
                )
            time.sleep(0.05)


def train(sess, train_op, loss, global_step, next_feed, progress):
    """The training loop, until the `StopAtStepHook` stops it."""
    while not sess.should_stop():
        _, loss_value, step = sess.run([train_op, loss, global_step], feed_dict=next_feed())
        progress.step_done(loss_value, step)
    return progress


def between_graph(args, cluster, server):
    num_workers = cluster.num_tasks("worker")
    is_chief = args.task_index == 0
    worker_device = f"/job:worker/task:{args.task_index}"
    with tf.device(tf.train.replica_device_setter(worker_device=worker_device, cluster=cluster)):
        global_step = tf.train.get_or_create_global_step()
        images = tf.placeholder(tf.float32, [None, IMAGE_PIXELS], name="images")
        labels = tf.placeholder(tf.int64, [None], name="labels")
        if args.model == "cnn":
            loss = cnn_loss(images, labels)
        else:
            loss = mlp_loss(images, labels, mlp_variables(args.hidden))
        opt = tf.train.AdamOptimizer(args.learning_rate)
        if args.sync:
            opt = tf.train.SyncReplicasOptimizer(
                opt, replicas_to_aggregate=num_workers, total_num_replicas=num_workers
            )
        train_op = opt.minimize(loss, global_step=global_step)
    with tf.device(worker_device):
        report_op = tf.report_uninitialized_variables(tf.global_variables())

    hooks = [tf.train.StopAtStepHook(last_step=args.train_steps)]
    if args.sync:
        hooks.append(opt.make_session_run_hook(is_chief))
    if not is_chief:
        wait_for_model(server.target, report_op, args.task_index, args.ready_timeout_s)
    data = SyntheticMnist(seed=1000 + args.task_index, teacher_seed=args.seed)

    def next_feed():
        xs, ys = data.next_batch(args.batch_size)
        return {images: xs, labels: ys}

    with tf.train.MonitoredTrainingSession(master=server.target, is_chief=is_chief, hooks=hooks) as sess:
        print(f"Worker {args.task_index}: session initialization complete.", flush=True)
        progress = Progress(f"Worker {args.task_index}", is_chief, args.target_loss)
        return train(sess, train_op, loss, global_step, next_feed, progress)


def average_gradients(tower_grads):
    """The towers' gradients of each variable, averaged (as the multi-GPU CIFAR-10 tutorial does)."""
    averaged = []
    for grads_and_vars in zip(*tower_grads):
        grads = [tf.expand_dims(g, 0) for g, _ in grads_and_vars]
        averaged.append((tf.reduce_mean(tf.concat(grads, 0), 0), grads_and_vars[0][1]))
    return averaged


def in_graph(args, cluster):
    num_workers = cluster.num_tasks("worker")
    with tf.device("/job:ps/task:0"):
        global_step = tf.train.get_or_create_global_step()
        variables = mlp_variables(args.hidden)
        opt = tf.train.AdamOptimizer(args.learning_rate)
    placeholders, tower_grads, tower_losses = [], [], []
    for i in range(num_workers):
        with tf.device(f"/job:worker/task:{i}"), tf.name_scope(f"tower_{i}"):
            images = tf.placeholder(tf.float32, [None, IMAGE_PIXELS], name="images")
            labels = tf.placeholder(tf.int64, [None], name="labels")
            loss = mlp_loss(images, labels, variables)
            tower_grads.append(opt.compute_gradients(loss, var_list=list(variables)))
            tower_losses.append(loss)
            placeholders.append((images, labels))
    with tf.device("/job:ps/task:0"):
        train_op = opt.apply_gradients(average_gradients(tower_grads), global_step=global_step)
        loss = tf.add_n(tower_losses) / float(num_workers)

    data = [SyntheticMnist(seed=1000 + i, teacher_seed=args.seed) for i in range(num_workers)]

    def next_feed():
        feed = {}
        for (images, labels), tower_data in zip(placeholders, data):
            feed[images], feed[labels] = tower_data.next_batch(args.batch_size)
        return feed

    hooks = [tf.train.StopAtStepHook(last_step=args.train_steps)]
    master = "grpc://" + cluster.task_address("worker", 0)
    with tf.train.MonitoredTrainingSession(master=master, is_chief=True, hooks=hooks) as sess:
        print("Client: session initialization complete.", flush=True)
        return train(sess, train_op, loss, global_step, next_feed, Progress("Client", True, args.target_loss))


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    cluster = tf.train.ClusterSpec({"ps": args.ps_hosts.split(","), "worker": args.worker_hosts.split(",")})
    if args.job_name is None:
        progress, mode = in_graph(args, cluster), "in_graph"
    else:
        server = tf.train.Server(cluster, job_name=args.job_name, task_index=args.task_index)
        if args.job_name == "ps" or args.in_graph:
            server.join()
            return
        progress, mode = between_graph(args, cluster, server), "sync" if args.sync else "async"
    report = {
        "mode": mode,
        "library": "nbdist " + tf.__version__ if tf.__name__ == "nbdist" else "tensorflow " + tf.VERSION,
        "task_index": args.task_index if args.job_name else None,
        "workers": cluster.num_tasks("worker"),
        "model": args.model,
        "hidden": args.hidden,
        "batch_size": args.batch_size,
        **progress.report(),
    }
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
