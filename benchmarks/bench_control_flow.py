"""Control flow (issue 30) in a local session, nbdist against TF 1.x (``tensorflow.compat.v1``,
graph mode, v1 control flow: Switch/Merge, Enter/Exit frames) in the same run.

Programs of the size learners write, each run as a training step would be (`sess.run` of the
fetches, feeds included):

- ``mlp step``: an MNIST-shaped MLP's forward and backward pass (784 -> 100 -> 10, batch 100),
  the floor the control-flow rows are read against;
- ``mlp step, dropout by tf.cond``: the same with ``tf.layers.dropout(training=is_training)``
  on the hidden layer, fed True (the cond's cost: Switch, Merge, deadness checks);
- ``while_loop x 100``: 100 iterations of ``h = tanh(h @ W + x)`` on a [32, 64] state, and its
  gradient (a recurrent cell unrolled at run time);
- ``map_fn over 100 rows``: a per-row dense layer and its gradient.

Each figure: the median over 7 rounds of the mean wall time of a run; TF and nbdist on one
BLAS thread each (TF's intra/inter-op threads = 1, nbdist's local session under
`threadpoolctl`), alternating rounds.

    python benchmarks/bench_control_flow.py        # Markdown table
"""

import os
import platform
import statistics
import time

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import nbdist as tf

RNG = np.random.default_rng(30)
X = RNG.standard_normal((100, 784)).astype(np.float32)
Y = RNG.integers(0, 10, 100).astype(np.int32)
W1 = (RNG.standard_normal((784, 100)) * 0.05).astype(np.float32)
W2 = (RNG.standard_normal((100, 10)) * 0.1).astype(np.float32)
H0 = RNG.standard_normal((32, 64)).astype(np.float32)
WR = (RNG.standard_normal((64, 64)) * 0.1).astype(np.float32)
ROWS = RNG.standard_normal((100, 64)).astype(np.float32)


def mlp(t, dropout):
    x, y = t.placeholder(t.float32, [None, 784]), t.placeholder(t.int32, [None])
    training = t.placeholder_with_default(False, [])
    w1, w2 = t.Variable(W1), t.Variable(W2)
    h = t.nn.relu(t.matmul(x, w1))
    if dropout:
        h = t.layers.dropout(h, 0.2, training=training)
    logits = t.matmul(h, w2)
    loss = t.reduce_mean(t.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    return [loss, *t.gradients(loss, [w1, w2])], {x: X, y: Y, training: True}


def loop(t):
    x = t.placeholder(t.float32, [32, 64])
    w = t.Variable(WR)
    _, h = t.while_loop(lambda i, h: i < 100, lambda i, h: (i + 1, t.tanh(t.matmul(h, w) + x)), [0, x])
    loss = t.reduce_sum(h)
    return [loss, *t.gradients(loss, [w, x])], {x: H0}


def mapped(t):
    rows = t.placeholder(t.float32, [100, 64])
    w = t.Variable(WR)
    out = t.map_fn(lambda r: t.tanh(t.reshape(t.matmul(t.reshape(r, [1, 64]), w), [64])), rows)
    loss = t.reduce_sum(out)
    return [loss, *t.gradients(loss, [w])], {rows: ROWS}


CASES = {
    "mlp step (floor)": lambda t: mlp(t, False),
    "mlp step, dropout by tf.cond": lambda t: mlp(t, True),
    "while_loop x 100, with gradient": loop,
    "map_fn over 100 rows, with gradient": mapped,
}


def _session(lib, graph):
    if lib is tf:
        return tf.Session(graph=graph)
    config = lib.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
    return lib.Session(graph=graph, config=config)


def _prepared(lib, build):
    graph = lib.Graph()
    with graph.as_default():
        fetches, feeds = build(lib)
        init = lib.global_variables_initializer()
    sess = _session(lib, graph)
    sess.run(init)
    sess.run(fetches, feeds)  # warm: plans compiled, kernels loaded
    return sess, fetches, feeds


def _time(sess, fetches, feeds, runs):
    start = time.perf_counter()
    for _ in range(runs):
        sess.run(fetches, feeds)
    return (time.perf_counter() - start) / runs


def main():
    import tensorflow.compat.v1 as tf1
    from threadpoolctl import threadpool_limits

    tf1.disable_v2_behavior()
    rows = []
    with threadpool_limits(1):
        for name, build in CASES.items():
            ours, theirs = _prepared(tf, build), _prepared(tf1, build)
            runs = 20
            times = {"nbdist": [], "tf": []}
            for _ in range(7):
                times["nbdist"].append(_time(*ours, runs))
                times["tf"].append(_time(*theirs, runs))
            ours[0].close()
            theirs[0].close()
            nb, real = statistics.median(times["nbdist"]), statistics.median(times["tf"])
            rows.append((name, nb * 1e3, real * 1e3, real / nb))
    print(f"python {platform.python_version()}, numpy {np.__version__}, {os.cpu_count()} cores\n")
    print("| program (local session, one BLAS thread) | nbdist ms/run | TF ms/run | nbdist speed / TF |")
    print("| --- | --- | --- | --- |")
    for name, nb, real, ratio in rows:
        print(f"| {name} | {nb:.2f} | {real:.2f} | {ratio:.2f}x |")


if __name__ == "__main__":
    main()
