"""What watching costs training: `tf.report` at every step with the live dashboard on, and a
FULL_TRACE step, against the same training unwatched, in the same run.

A `LocalCluster` (1 ps, 2 workers, signed messages); each worker task runs its own client
(between-graph, asynchronous: a 100-feature linear model, batch 32, on the ps) as a
``%%dtf_worker`` cell does. A `tf.Dashboard` in this process is on all along, as in a
notebook. Rounds come in pairs: *plain* (no reports) and *watched* (`tf.report` of loss,
step and staleness after every step, which the dashboard draws as they arrive), in ABBA
order (plain first in one pair, watched first in the next) so a machine that speeds up or
slows down favours neither. Reported: all workers' local steps per second per round, the
median over pairs of watched / plain, and the CPU this process (the notebook: collecting
events, drawing) took as a share of one core.
Then, on one worker, the median time of a plain step and of a `FULL_TRACE` step.

    python benchmarks/bench_watching.py
    python benchmarks/bench_watching.py --pairs 10 --steps 8000 --busy-fraction 0.1
"""

import argparse
import statistics
import time

import nbdist as tf
from nbdist.notebook import task_exec

CELL = """
import time
import numpy as np
with tf.Graph().as_default():
    setter = tf.train.replica_device_setter(worker_device=f"/job:worker/task:{task_index}", cluster=cluster)
    with tf.device(setter):
        rng = np.random.RandomState(task_index)
        x = tf.placeholder(tf.float32, [32, 100])
        y = tf.placeholder(tf.float32, [32, 1])
        w = tf.get_variable("w", [100, 1], initializer=tf.zeros_initializer())
        step = tf.train.get_or_create_global_step()
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
        train = tf.train.GradientDescentOptimizer(0.01).minimize(loss, global_step=step)
        stale = tf.train.staleness.of(train)
    with tf.Session(server.target) as sess:
        if task_index == 0:
            sess.run(tf.global_variables_initializer())
        while True:  # the chief may still be initializing
            if not sess.run(tf.report_uninitialized_variables()).size:
                break
            time.sleep(0.01)
        xs = rng.normal(size=(32, 100)).astype(np.float32)
        feed = {x: xs, y: xs.sum(1, keepdims=True)}
        for _ in range(20):
            sess.run(train, feed)
        began = time.perf_counter()
        for i in range(STEPS):
            _, l, s, st = sess.run([train, loss, step, stale], feed)
            if WATCHED:
                tf.report(step=int(s), loss=float(l), local_step=i + 1, staleness=int(st))
        rate = STEPS / (time.perf_counter() - began)
        traced = []
        plain = []
        if TRACE and task_index == 0:
            for _ in range(30):
                t = time.perf_counter(); sess.run(train, feed); plain.append(time.perf_counter() - t)
                md = tf.RunMetadata()
                t = time.perf_counter()
                full = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
                sess.run(train, feed, options=full, run_metadata=md)
                traced.append(time.perf_counter() - t)
(rate, float(np.median(plain)) if plain else None, float(np.median(traced)) if traced else None)
"""


def one_round(cluster, steps, watched, trace=False):
    """``(all workers' steps/s, worker 0's result, this process's CPU share of a core)``."""
    tasks = [("worker", i, cluster.cluster_spec.task_address("worker", i)) for i in range(2)]
    code = f"STEPS, WATCHED, TRACE = {steps}, {watched}, {trace}\n" + CELL
    cpu0, wall0 = time.process_time(), time.perf_counter()
    results = task_exec.run_cell(tasks, code, cluster.key, timeout_s=300)
    cpu_share = (time.process_time() - cpu0) / (time.perf_counter() - wall0)
    return sum(r[0] for r in results.values()), results["worker:0"], cpu_share


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=6, help="pairs of rounds (plain, watched)")
    parser.add_argument(
        "--steps", type=int, default=3000, help="timed steps per worker and round (seconds, not 0.3 s)"
    )
    parser.add_argument(
        "--busy-fraction", type=float, default=None, help="the dashboard's drawing budget (default: its own)"
    )
    args = parser.parse_args()
    rates, shares, ratios = {False: [], True: []}, {False: [], True: []}, []
    options = {} if args.busy_fraction is None else {"busy_fraction": args.busy_fraction}
    with tf.LocalCluster(ps=1, worker=2) as cluster:
        dash = tf.Dashboard(cluster.events, **options)  # on all along; only watched rounds feed it
        one_round(cluster, args.steps // 4, False)  # warm-up: imports, first planning
        for pair in range(args.pairs):
            rate = {}
            for watched in (False, True) if pair % 2 == 0 else (True, False):
                rate[watched], _, share = one_round(cluster, args.steps, watched)
                rates[watched].append(rate[watched])
                shares[watched].append(share)
            ratios.append(rate[True] / rate[False])
        dash.stop()
        _, (_, plain_s, traced_s), _ = one_round(cluster, 50, False, trace=True)
    print("all workers' local steps/s, per round (pairs in ABBA order):")
    print("  plain:   " + " / ".join(f"{r:.0f}" for r in rates[False]))
    print(
        "  watched: " + " / ".join(f"{r:.0f}" for r in rates[True]) + "  (tf.report every step, dashboard on)"
    )
    print("  watched / plain per pair: " + " / ".join(f"{r:.3f}" for r in ratios))
    ratio = statistics.median(ratios)
    print(
        f"watched / plain (median of {len(ratios)} pairs): {ratio:.3f}  ({(1 - ratio) * 100:+.1f}% cost; "
        f"pairs range {min(ratios):.3f}-{max(ratios):.3f})"
    )
    print(
        f"this process (the notebook) used {statistics.median(shares[True]) * 100:.1f}% of a core per "
        f"watched round, {statistics.median(shares[False]) * 100:.1f}% per plain round (medians)"
    )
    print(
        f"one step on worker 0: plain {plain_s * 1000:.2f} ms, FULL_TRACE {traced_s * 1000:.2f} ms "
        f"({traced_s / plain_s:.2f}x)"
    )


if __name__ == "__main__":
    main()
