"""What watching costs training: `tf.report` at every step with the live dashboard on, and a
FULL_TRACE step, against the same training unwatched, in the same run; asynchronous and
synchronous training.

A `LocalCluster` (1 ps, 2 workers, signed messages); each worker task runs its own client
(between-graph: a 100-feature linear model, batch 32, on the ps) as a ``%%dtf_worker`` cell
does: *async* (plain gradient descent, each worker at its own pace) and *sync*
(`SyncReplicasOptimizer`, 2 of 2, in a `MonitoredTrainingSession`). A `tf.Dashboard` in this
process is on all along, as in a notebook. Rounds come in pairs: *plain* (no reports) and
*watched* (`tf.report` after every step - loss, step and, async, staleness - which the
dashboard draws as they arrive), in ABBA order (plain first in one pair, watched first in
the next) so a machine that speeds up or slows down favours neither. Reported per mode: the
steps per second of each round (async: all workers' local steps; sync: global steps), the
median over pairs of watched / plain, and the CPU this process (the notebook: collecting
events, drawing) took as a share of one core. Then, on one worker, the median time of a
plain step and of a `FULL_TRACE` step.

    python benchmarks/bench_watching.py                      # both modes, 10 pairs each
    python benchmarks/bench_watching.py --modes async,aa --pairs 10 # aa: the control, both plain
    python benchmarks/bench_watching.py --modes async --pairs 10 --steps 8000 --busy-fraction 0.1
    python benchmarks/bench_watching.py --modes async --pairs 4 --threads  # which threads pay
    python benchmarks/bench_watching.py --modes async --no-dashboard  # what the reports alone cost
"""

import argparse
import os
import statistics
import time

import nbdist as tf
from nbdist.notebook import task_exec

# The model both modes train (a cell's beginning: the graph, under the device setter).
MODEL = """
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
"""

CELL = (
    MODEL
    + """        train = tf.train.GradientDescentOptimizer(0.01).minimize(loss, global_step=step)
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
)


# Synchronous: each worker times its steps after its 20th (the first waits for every replica)
# and reports global steps per second over that window. The chief stops at its last step and
# closes the token queue, so the other worker stops too; `Session.reset` between rounds gives
# each round fresh variables, accumulators and token queue.
SYNC_CELL = (
    MODEL
    + """        opt = tf.train.SyncReplicasOptimizer(
            tf.train.GradientDescentOptimizer(0.01), replicas_to_aggregate=2, total_num_replicas=2
        )
        train = opt.minimize(loss, global_step=step)
    hooks = [opt.make_session_run_hook(task_index == 0), tf.train.StopAtStepHook(last_step=STEPS + 20)]
    xs = rng.normal(size=(32, 100)).astype(np.float32)
    feed = {x: xs, y: xs.sum(1, keepdims=True)}
    local, began, first = 0, None, None
    chief = task_index == 0
    with tf.train.MonitoredTrainingSession(master=server.target, is_chief=chief, hooks=hooks) as sess:
        while not sess.should_stop():
            _, l, s = sess.run([train, loss, step], feed)
            local += 1
            if local == 20:
                began, first = time.perf_counter(), int(s)
            elif local > 20 and WATCHED:
                tf.report(step=int(s), loss=float(l), local_step=local)
        last = int(s)
(((last - first) / (time.perf_counter() - began)) if began else 0.0, None, None)
"""
)


def one_round(cluster, mode, steps, watched, trace=False):
    """``(steps/s, worker 0's result, this process's CPU share of a core)``: async, all
    workers' local steps/s; sync, global steps/s (the mean of the workers' figures)."""
    tasks = [("worker", i, cluster.cluster_spec.task_address("worker", i)) for i in range(2)]
    code = f"STEPS, WATCHED, TRACE = {steps}, {watched}, {trace}\n" + (CELL if mode == "async" else SYNC_CELL)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    results = task_exec.run_cell(tasks, code, cluster.key, timeout_s=300)
    cpu_share = (time.process_time() - cpu0) / (time.perf_counter() - wall0)
    rates = [r[0] for r in results.values()]
    if mode == "sync":
        tf.Session.reset(cluster.target("worker", 0))  # the next round starts from scratch
        return statistics.mean(rates), results["worker:0"], cpu_share
    return sum(rates), results["worker:0"], cpu_share


def thread_counters(pids):
    """``{(process, tid, name): (cpu_s, voluntary, involuntary context switches)}`` of every
    thread of `pids` (``{label: pid}``), from ``/proc`` (the scheduler's own CPU time)."""
    out = {}
    for label, pid in pids.items():
        for tid in os.listdir(f"/proc/{pid}/task"):
            base = f"/proc/{pid}/task/{tid}"
            try:
                with open(f"{base}/comm") as f:
                    name = f.read().strip()
                with open(f"{base}/schedstat") as f:
                    cpu_s = int(f.read().split()[0]) / 1e9
                with open(f"{base}/status") as f:
                    status = dict(line.split(":", 1) for line in f if ":" in line)
            except (FileNotFoundError, ProcessLookupError):  # (a thread that ended meanwhile)
                continue
            switches = int(status["voluntary_ctxt_switches"]), int(status["nonvoluntary_ctxt_switches"])
            out[label, int(tid), name] = (cpu_s, *switches)
    return out


def per_step(before, after, steps):
    """Each thread's CPU (us) and context switches (per 1,000) per step between two counters."""
    out = {}
    for key, (cpu_s, vol, invol) in after.items():
        cpu0, vol0, invol0 = before.get(key, (0.0, 0, 0))
        out[key] = ((cpu_s - cpu0) / steps * 1e6, (vol - vol0) / steps * 1e3, (invol - invol0) / steps * 1e3)
    return out


def measure(cluster, mode, pairs, steps, threads=False):
    """Pairs of rounds in ABBA order: ``(rates {watched: [...]}, shares {...}, ratios, counts)``;
    `counts` (with `threads`): ``{watched: [per_step(...) of each round]}``. Mode ``aa`` is
    async with both rounds of a pair plain: the noise floor of the ratio."""
    rates, shares, ratios = {False: [], True: []}, {False: [], True: []}, []
    counts = {False: [], True: []}
    pids = {f"{job}{index}": pid for (job, index), pid in cluster.pids.items()} | {"notebook": os.getpid()}
    control, mode = mode == "aa", "async" if mode == "aa" else mode
    one_round(cluster, mode, steps // 4, False)  # warm-up: imports, first planning
    for pair in range(pairs):
        rate = {}
        for watched in (False, True) if pair % 2 == 0 else (True, False):
            before = thread_counters(pids) if threads else None
            rate[watched], _, share = one_round(cluster, mode, steps, watched and not control)
            if threads:
                done = steps * 2 if mode == "async" else steps  # all local steps (async), global (sync)
                counts[watched].append(per_step(before, thread_counters(pids), done))
            rates[watched].append(rate[watched])
            shares[watched].append(share)
        ratios.append(rate[True] / rate[False])
    return rates, shares, ratios, counts


def print_threads(counts, min_cpu_us=0.5):
    """Per thread, the median over rounds of its CPU and context switches per step, plain vs
    watched: which threads watching costs (a thread below `min_cpu_us` in both is left out)."""
    medians = {}
    for watched, rounds in counts.items():
        for key in {k for r in rounds for k in r}:
            rows = [r[key] for r in rounds if key in r]
            medians.setdefault(key, {})[watched] = [statistics.median(x[i] for x in rows) for i in range(3)]
    print("  per thread, per step (medians): CPU us, voluntary / involuntary switches per 1,000 steps")
    for key in sorted(medians):
        plain, watched = medians[key].get(False, [0, 0, 0]), medians[key].get(True, [0, 0, 0])
        if max(plain[0], watched[0]) < min_cpu_us:
            continue
        row = "plain {:6.1f} us {:6.1f} / {:5.1f}   watched {:6.1f} us {:6.1f} / {:5.1f}"
        print(f"    {key[0]:>9} {key[2]:<12} {key[1]:>7}: " + row.format(*plain, *watched))


def print_mode(mode, rates, shares, ratios, counts, dashboard=True):
    unit = "global steps/s" if mode == "sync" else "all workers' local steps/s"
    if mode == "aa":
        print(f"aa (async, control: both rounds of a pair plain, the ratio's noise): {unit}:")
    else:
        print(f"{mode}: {unit}, per round (pairs in ABBA order):")
    print("  plain:   " + " / ".join(f"{r:.0f}" for r in rates[False]))
    watched = f"  (tf.report every step, dashboard {'on' if dashboard else 'off'})"
    watched = "  (plain too: the control)" if mode == "aa" else watched
    print("  watched: " + " / ".join(f"{r:.0f}" for r in rates[True]) + watched)
    print("  watched / plain per pair: " + " / ".join(f"{r:.3f}" for r in ratios))
    ratio = statistics.median(ratios)
    print(
        f"  watched / plain (median of {len(ratios)} pairs): {ratio:.3f}  ({(1 - ratio) * 100:+.1f}% cost; "
        f"pairs range {min(ratios):.3f}-{max(ratios):.3f})"
    )
    print(
        f"  this process (the notebook) used {statistics.median(shares[True]) * 100:.1f}% of a core per "
        f"watched round, {statistics.median(shares[False]) * 100:.1f}% per plain round (medians)"
    )
    if counts[True]:
        print_threads(counts)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--modes", default="async,sync", help="comma-separated: async, sync, aa (async, both rounds plain)"
    )
    parser.add_argument("--pairs", type=int, default=10, help="pairs of rounds (plain, watched) per mode")
    parser.add_argument(
        "--steps",
        type=int,
        default=6000,
        help="timed steps per worker and round, async (sync: half as many global steps); seconds, not 0.3 s",
    )
    parser.add_argument(
        "--busy-fraction", type=float, default=None, help="the dashboard's drawing budget (default: its own)"
    )
    parser.add_argument(
        "--no-dashboard", action="store_true", help="reports only: no dashboard (what the reports alone cost)"
    )
    parser.add_argument(
        "--threads", action="store_true", help="also each thread's CPU and context switches per step (/proc)"
    )
    args = parser.parse_args()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not modes or any(m not in ("async", "sync", "aa") for m in modes):
        parser.error(f"--modes takes async, sync and/or aa, got {args.modes!r}")
    options = {} if args.busy_fraction is None else {"busy_fraction": args.busy_fraction}
    results = {}
    with tf.LocalCluster(ps=1, worker=2) as cluster:
        # on all along; only watched rounds feed it
        dash = None if args.no_dashboard else tf.Dashboard(cluster.events, **options)
        for mode in modes:
            steps = args.steps // 2 if mode == "sync" else args.steps
            results[mode] = measure(cluster, mode, args.pairs, steps, args.threads)
        if dash is not None:
            dash.stop()
        _, (_, plain_s, traced_s), _ = one_round(cluster, "async", 50, False, trace=True)
    for mode in modes:
        print_mode(mode, *results[mode], dashboard=not args.no_dashboard)
    print(
        f"one step on worker 0: plain {plain_s * 1000:.2f} ms, FULL_TRACE {traced_s * 1000:.2f} ms "
        f"({traced_s / plain_s:.2f}x)"
    )


if __name__ == "__main__":
    main()
