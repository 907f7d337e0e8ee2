"""The client of tests/test_multihost.py, run inside one network namespace ("host").

    python multihost_client.py train CLUSTER_JSON      # attach, show status, train 20 steps
    python multihost_client.py step CLUSTER_JSON TARGET [JOB:TASK ...]   # one step; its error
    python multihost_client.py feed CLUSTER_JSON PATTERN_HEX             # feed a tensor to worker 0

Signs with $NBDIST_CLUSTER_KEY_FILE (and encrypts with $NBDIST_CURVE_KEY_FILE) like any
nbdist process. Prints one JSON line.
"""

import json
import sys

import numpy as np

import nbdist as tf

rng = np.random.RandomState(0)
X = rng.randn(64, 3)
Y = X @ np.array([[1.0], [-2.0], [0.5]]) + 0.3


def build(workers):
    """Linear regression: variables on the ps, each worker the loss of its half of the data."""
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(tf.zeros([3, 1], dtype=tf.float64), name="w")
        b = tf.Variable(tf.zeros([1], dtype=tf.float64), name="b")
    losses = []
    for i, (xs, ys) in zip(workers, zip(np.array_split(X, len(workers)), np.array_split(Y, len(workers)))):
        with tf.device(f"/job:worker/task:{i}"):
            losses.append(tf.reduce_mean(tf.square(tf.matmul(tf.constant(xs), w) + b - tf.constant(ys))))
    loss = tf.add_n(losses) / float(len(losses))
    train = tf.train.GradientDescentOptimizer(0.2).minimize(loss, colocate_gradients_with_ops=True)
    return loss, train, tf.variables_initializer([w, b])


def train(cluster):
    attached = tf.LocalCluster(spec=cluster, attach=True, ready_timeout_s=30)
    status = [[r["job"], r["index"], r["address"], r["alive"]] for r in attached.status()]
    loss, step, init = build([0, 1])
    with tf.Session(attached.target("worker", 0)) as sess:
        sess.run(init)
        losses = [float(sess.run([loss, step])[0]) for _ in range(20)]
        # While the session lives, each task holds its partition of the graph.
        ops_placed = {f"{r['job']}:{r['index']}": sum(r["ops_placed"].values()) for r in attached.status()}
    attached.stop()
    return {"status": status, "losses": losses, "ops_placed": ops_placed}


def step(target, workers):
    _, train_op, init = build(workers)
    try:
        with tf.Session(target) as sess:
            sess.run(init)
            sess.run(train_op)
    except tf.errors.OpError as e:
        return {"error": type(e).__name__, "message": e.message}
    return {"error": None}


def feed(cluster, pattern):
    data = np.frombuffer(pattern * (65536 // len(pattern)), dtype=np.uint8)
    with tf.device("/job:worker/task:0"):
        x = tf.placeholder(tf.uint8, [data.size])
        total = tf.reduce_sum(tf.cast(x, tf.int64))
    with tf.Session(f"zmq://{cluster['worker'][0]}") as sess:
        got = int(sess.run(total, {x: data}))
    return {"sum": got, "expected": int(data.astype(np.int64).sum()), "nbytes": data.nbytes}


if __name__ == "__main__":
    phase, cluster = sys.argv[1], json.loads(sys.argv[2])
    if phase == "train":
        result = train(cluster)
    elif phase == "step":
        result = step(sys.argv[3], [int(w) for w in sys.argv[4:]])
    else:
        result = feed(cluster, bytes.fromhex(sys.argv[3]))
    print(json.dumps(result), flush=True)
