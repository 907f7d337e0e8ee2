"""Local-Session overhead: what nbdist adds on top of the numpy calls it makes.

Measures, in one run on one machine:
- ``Session.run`` of a 100-op chain on a small tensor, against the *same* 100 numpy calls made
  directly (the floor), giving the per-op overhead of the executor and the session;
- building a 10,000-op graph (recording only), its first run (plan compile + execute) and
  a steady-state run, and exporting it as a GraphDef.

Prints a Markdown table (paste it into docs/benchmarks.md with the command line).

    python benchmarks/bench_local.py
"""

import argparse
import platform
import statistics
import sys
import time

import numpy as np

import nbdist as tf
from nbdist.graph.graph_def import graph_to_graph_def

# The chain cycles through these: (nbdist op constructor, the numpy call its kernel makes).
_CHAIN = (
    (tf.add, np.add),
    (tf.multiply, np.multiply),
    (tf.maximum, np.maximum),
    (tf.subtract, np.subtract),
)


def _mean_s(fn, number):
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number


def _paired(fn_a, fn_b, repeat, number):
    """Medians of seconds per call of `fn_a` and `fn_b`, timed in alternating rounds.

    Alternating puts both under the same background load (the machine may be shared).
    """
    a_s, b_s = [], []
    for _ in range(repeat):
        a_s.append(_mean_s(fn_a, number))
        b_s.append(_mean_s(fn_b, number))
    return statistics.median(a_s), statistics.median(b_s)


def build_chain(n_ops, size):
    """A graph: placeholder x, one constant c, then `n_ops` binary ops chained on x."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [size], name="x")
        c = tf.constant(np.full(size, 0.5, np.float32), name="c")
        y = x
        for i in range(n_ops):
            y = _CHAIN[i % len(_CHAIN)][0](y, c)
    return graph, x, y


def numpy_chain(x, c, n_ops):
    y = x
    for i in range(n_ops):
        y = _CHAIN[i % len(_CHAIN)][1](y, c)
    return y


def bench_run_overhead(n_ops, size, repeat, number):
    graph, x, y = build_chain(n_ops, size)
    value = np.linspace(-1, 1, size, dtype=np.float32)
    c_value = np.full(size, 0.5, np.float32)
    with tf.Session(graph=graph) as sess:
        np.testing.assert_allclose(sess.run(y, {x: value}), numpy_chain(value, c_value, n_ops), rtol=1e-6)
        return _paired(
            lambda: sess.run(y, {x: value}), lambda: numpy_chain(value, c_value, n_ops), repeat, number
        )


def bench_big_graph(n_ops, size):
    start = time.perf_counter()
    graph, x, y = build_chain(n_ops, size)
    build_s = time.perf_counter() - start
    value = np.zeros(size, np.float32)
    start = time.perf_counter()
    graph_to_graph_def(graph)
    export_s = time.perf_counter() - start
    with tf.Session(graph=graph) as sess:
        start = time.perf_counter()
        sess.run(y, {x: value})
        first_s = time.perf_counter() - start
        start = time.perf_counter()
        sess.run(y, {x: value})
        steady_s = time.perf_counter() - start
    return build_s, export_s, first_s, steady_s, len(graph.get_operations())


def main(argv=None):
    parser = argparse.ArgumentParser(description="nbdist local Session overhead")
    parser.add_argument("--ops", type=int, default=100, help="ops in the run-overhead chain")
    parser.add_argument("--size", type=int, default=16, help="elements per tensor")
    parser.add_argument("--big", type=int, default=10_000, help="ops in the build benchmark")
    parser.add_argument("--big-repeat", type=int, default=3, help="rounds of the build benchmark")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--number", type=int, default=200)
    args = parser.parse_args(argv)

    run_s, floor_s = bench_run_overhead(args.ops, args.size, args.repeat, args.number)
    big = [bench_big_graph(args.big, args.size) for _ in range(args.big_repeat)]
    build_s, export_s, first_s, steady_s = (statistics.median(r[i] for r in big) for i in range(4))
    n_big = big[0][4]
    us = 1e6
    rows = [
        (f"Session.run, {args.ops}-op chain, {args.size} float32", f"{run_s * us:,.1f} µs per run"),
        (f"same {args.ops} numpy calls directly (floor)", f"{floor_s * us:,.1f} µs"),
        ("overhead per op (run - floor) / ops", f"{(run_s - floor_s) / args.ops * us:,.2f} µs"),
        ("run / floor", f"{run_s / floor_s:,.1f}x"),
        (f"build a {n_big:,}-op graph", f"{build_s * 1e3:,.0f} ms ({build_s / n_big * us:,.1f} µs/op)"),
        (f"GraphDef export, {n_big:,} ops", f"{export_s * 1e3:,.0f} ms"),
        (f"first run, {n_big:,} ops (plan + execute)", f"{first_s * 1e3:,.0f} ms"),
        (
            f"next run, {n_big:,} ops (cached plan)",
            f"{steady_s * 1e3:,.0f} ms ({steady_s / n_big * us:.1f} µs/op)",
        ),
    ]
    print(
        f"nbdist {tf.__version__}, numpy {np.__version__}, Python {platform.python_version()}, "
        f"{platform.machine()}\nrun overhead: median of {args.repeat} alternating rounds x "
        f"{args.number} calls; {n_big:,}-op graph: median of {args.big_repeat} rounds\n"
    )
    width = max(len(r[0]) for r in rows)
    print(f"| {'measurement'.ljust(width)} | result |")
    print(f"| {'-' * width} | ------ |")
    for name, value in rows:
        print(f"| {name.ljust(width)} | {value} |")


if __name__ == "__main__":
    main(sys.argv[1:])
