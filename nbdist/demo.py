"""``python -m nbdist.demo``: a local cluster trains a model, with visible progress.

Starts a real cluster of server processes on 127.0.0.1 (one parameter server, two
workers), places the model's variables on the ps and one replica of the forward and
backward pass on each worker (in-graph replication: each worker computes gradients on
its half of every batch, the ps averages them and applies the update), trains it, and
prints the loss, accuracy and speed as it goes, then where the ops ran and what
crossed the wire in one traced step.

    python -m nbdist.demo [--steps 300] [--workers 2] [--seed 0]
"""

import argparse
import collections
import sys
import time

import numpy as np

import nbdist as tf
from nbdist.notebook.cluster import LocalCluster


def spirals(n_per_class, classes=3, seed=0):
    """A seeded 2-D dataset of interleaved spirals, one per class."""
    rng = np.random.RandomState(seed)
    xs, ys = [], []
    for c in range(classes):
        r = np.linspace(0.1, 1.0, n_per_class)
        t = np.linspace(c * 4.0, (c + 1) * 4.0, n_per_class) + rng.randn(n_per_class) * 0.2
        xs.append(np.stack([r * np.sin(t), r * np.cos(t)], axis=1))
        ys.append(np.full(n_per_class, c))
    return np.concatenate(xs).astype(np.float32), np.concatenate(ys).astype(np.int64)


def build(n_workers, hidden=64, classes=3, learning_rate=0.05, seed=0):
    """Variables on /job:ps/task:0; replica i of the model on /job:worker/task:i."""
    tf.reset_default_graph()
    tf.set_random_seed(seed)
    with tf.device("/job:ps/task:0"):
        w1 = tf.Variable(tf.random_normal([2, hidden], stddev=1.0), name="w1")
        b1 = tf.Variable(tf.zeros([hidden]), name="b1")
        w2 = tf.Variable(tf.random_normal([hidden, classes], stddev=0.1), name="w2")
        b2 = tf.Variable(tf.zeros([classes]), name="b2")
        global_step = tf.train.get_or_create_global_step()
    params = [w1, b1, w2, b2]
    xs, ys, losses, grads = [], [], [], []
    for i in range(n_workers):
        with tf.device(f"/job:worker/task:{i}"), tf.name_scope(f"replica_{i}"):
            x = tf.placeholder(tf.float32, [None, 2], name="x")
            y = tf.placeholder(tf.int64, [None], name="y")
            logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2) + b2
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
            xs.append(x)
            ys.append(y)
            losses.append(loss)
            grads.append(tf.gradients(loss, params))
    with tf.device("/job:ps/task:0"):
        mean_grads = [tf.add_n([g[k] for g in grads]) / float(n_workers) for k in range(len(params))]
        optimizer = tf.train.AdamOptimizer(learning_rate)
        train_op = optimizer.apply_gradients(zip(mean_grads, params), global_step=global_step)
    with tf.device("/job:worker/task:0"):
        inputs = tf.placeholder(tf.float32, [None, 2], name="eval_x")
        labels = tf.placeholder(tf.int64, [None], name="eval_y")
        logits = tf.matmul(tf.nn.relu(tf.matmul(inputs, w1) + b1), w2) + b2
        accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), labels), tf.float32))
    return {
        "xs": xs,
        "ys": ys,
        "losses": losses,
        "train_op": train_op,
        "global_step": global_step,
        "eval": (inputs, labels, accuracy),
    }


def train(model, target, data, labels, steps, batch, seed, out):
    rng = np.random.RandomState(seed)
    n_workers = len(model["xs"])
    inputs, eval_labels, accuracy = model["eval"]
    with tf.Session(target) as sess:
        sess.run(tf.global_variables_initializer())
        started = last = time.perf_counter()
        for step in range(1, steps + 1):
            idx = rng.choice(len(data), batch * n_workers, replace=False)
            feed = {}
            for i in range(n_workers):
                part = idx[i * batch : (i + 1) * batch]
                feed[model["xs"][i]] = data[part]
                feed[model["ys"][i]] = labels[part]
            _, losses = sess.run([model["train_op"], model["losses"]], feed)
            if step % 25 == 0 or step in (1, steps):
                acc = sess.run(accuracy, {inputs: data, eval_labels: labels})
                now = time.perf_counter()
                rate = (25 if step > 1 else 1) / (now - last)
                last = now
                per_worker = "  ".join(f"worker:{i} {v:.3f}" for i, v in enumerate(losses))
                print(
                    f"step {step:4d}/{steps}  loss {per_worker}  accuracy {acc:6.1%}  {rate:6.1f} steps/s",
                    file=out,
                    flush=True,
                )
        elapsed = time.perf_counter() - started
        print(
            f"trained {steps} steps in {elapsed:.1f} s ({steps / elapsed:.0f} steps/s); "
            f"global_step = {sess.run(model['global_step'])}",
            file=out,
            flush=True,
        )
        md = tf.RunMetadata()
        sess.run(
            model["train_op"],
            feed,
            options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
            run_metadata=md,
        )
        return md, acc


def describe_step(md, out):
    """Where the ops of one step ran, and what crossed the wire."""
    print(f"\none traced step (master: {md.master}):", file=out)
    for stats in sorted(md.step_stats.dev_stats, key=lambda d: d.device):
        kinds = collections.Counter(n["op"] for n in stats.node_stats if not n["op"].startswith("_"))
        sent = [t for t in stats.transfers if t["op"] == "_Send"]
        nbytes = sum(t["bytes"] for t in sent)
        top = ", ".join(f"{k} x{v}" for k, v in kinds.most_common(4))
        print(
            f"  {stats.device}: {sum(kinds.values())} ops ({top}); sent {len(sent)} tensors, "
            f"{nbytes / 1024:.1f} KiB",
            file=out,
        )
    calls = [c for c in md.service_calls if c["method"] == "RunGraph"]
    print(f"  service calls: RunStep at the master, RunGraph on {len(calls)} tasks", file=out)


def main(argv=None, out=sys.stdout):
    parser = argparse.ArgumentParser(prog="python -m nbdist.demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    data, labels = spirals(300, seed=args.seed)
    started = time.perf_counter()
    with LocalCluster(ps=1, worker=args.workers) as cluster:
        print(f"cluster ready in {time.perf_counter() - started:.2f} s: {cluster.cluster_spec}", file=out)
        for (job, index), pid in sorted(cluster.pids.items()):
            print(
                f"  /job:{job}/task:{index}  pid {pid}  {cluster.cluster_spec.task_address(job, index)}",
                file=out,
            )
        model = build(args.workers, seed=args.seed)
        md, acc = train(
            model, cluster.target("worker", 0), data, labels, args.steps, args.batch, args.seed, out
        )
        describe_step(md, out)
    print(f"\nfinal accuracy {acc:.1%}; cluster stopped.", file=out)
    return 0 if acc > 0.9 else 1


if __name__ == "__main__":
    sys.exit(main())
