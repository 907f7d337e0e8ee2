"""Leak and lost-update scenarios on real clusters, shared by the tests (short, bounded) and by
``benchmarks/reliability.py`` (long): each returns its figures; callers assert or report them.

Probes read ``/proc`` of a process: resident memory, threads, open sockets, open files.
"""

import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

import nbdist as tf

BUMP_SCRIPT = Path(__file__).parent / "train_scripts" / "bump.py"


# -- probes ------------------------------------------------------------------------------------------------
def probe(pid):
    """``{"rss_bytes", "threads", "sockets", "fds"}`` of process `pid` (from /proc)."""
    with open(f"/proc/{pid}/status") as f:
        fields = dict(line.split(":", 1) for line in f if ":" in line)
    links = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            links.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:  # closed meanwhile
            continue
    return {
        "rss_bytes": int(fields["VmRSS"].split()[0]) * 1024,
        "threads": int(fields["Threads"]),
        "sockets": sum(link.startswith("socket:") for link in links),
        "fds": len(links),
    }


def children(pid):
    """PIDs of the live (not zombie) processes whose parent is `pid`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                state, ppid = f.read().rsplit(") ", 1)[1].split()[:2]
        except OSError:
            continue
        if int(ppid) == pid and state != "Z":
            found.append(int(entry))
    return found


def slope_per_1000(xs, ys):
    """Least-squares slope of `ys` over `xs`, per 1,000 units of x (0 with fewer than 2 points)."""
    if len(xs) < 2:
        return 0.0
    return float(np.polyfit(np.asarray(xs, float), np.asarray(ys, float), 1)[0] * 1000)


# -- a soak: N training steps, every server sampled --------------------------------------------------------
def _soak_model(cluster_spec):
    graph = tf.Graph()
    with graph.as_default():
        with tf.device(
            tf.train.replica_device_setter(worker_device="/job:worker/task:0", cluster=cluster_spec)
        ):
            step = tf.train.get_or_create_global_step()
            x = tf.placeholder(tf.float64, [None, 10], name="x")
            y = tf.placeholder(tf.float64, [None], name="y")
            w = tf.get_variable("w", [10], tf.float64, initializer=tf.zeros_initializer())
            loss = tf.reduce_mean(tf.square(tf.reduce_sum(x * w, axis=1) - y))
            train = tf.train.GradientDescentOptimizer(0.05).minimize(loss, global_step=step)
        init = tf.global_variables_initializer()
    return graph, init, train, x, y, step


def soak(steps, sample_every, warmup_steps, session_every):
    """Trains `steps` steps (ps=1 worker=1, async) from this process, reopening the session every
    `session_every` steps; after `warmup_steps`, samples every server every `sample_every` steps.

    Returns:
        ``{"steps", "final_step", "samples": {task: [(step, probe + graphs_registered)]},
        "rss_slope_bytes_per_1000": {task: slope}, "growth": {task: {what: last - first}}}``.
    """
    with tf.LocalCluster(ps=1, worker=1) as cluster:
        graph, init, train, x, y, step = _soak_model(cluster.cluster_spec)
        rng = np.random.default_rng(0)
        xs = rng.normal(size=(16, 10))
        feeds = {x: xs, y: xs @ np.arange(1.0, 11.0)}
        samples = {f"/job:{j}/task:{i}": [] for (j, i) in cluster.pids}
        sess = tf.Session(cluster.target("worker", 0), graph=graph)
        try:
            sess.run(init)
            for i in range(1, steps + 1):
                sess.run(train, feeds)
                if i % session_every == 0:
                    sess.close()
                    sess = tf.Session(cluster.target("worker", 0), graph=graph)
                if i >= warmup_steps and i % sample_every == 0:
                    for row in cluster.status():
                        pid = cluster.pids[(row["job"], row["index"])]
                        figures = {**probe(pid), "graphs_registered": row["graphs_registered"]}
                        samples[f"/job:{row['job']}/task:{row['index']}"].append((i, figures))
            final_step = int(sess.run(step))
        finally:
            sess.close()
    result = {"steps": steps, "final_step": final_step, "samples": samples, "rss_slope_bytes_per_1000": {}}
    result["growth"] = {}
    for task, rows in samples.items():
        result["rss_slope_bytes_per_1000"][task] = slope_per_1000(
            [s for s, _ in rows], [f["rss_bytes"] for _, f in rows]
        )
        first, last = rows[0][1], rows[-1][1]
        result["growth"][task] = {k: last[k] - first[k] for k in first}
        result["growth"][task]["max_graphs_registered"] = max(f["graphs_registered"] for _, f in rows)
    return result


# -- starting and stopping clusters --------------------------------------------------------------------------
def _wait_for(condition, timeout_s):
    deadline = time.monotonic() + timeout_s
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)
    return condition()


def start_stop_rounds(rounds, temp_dir):
    """Starts a `LocalCluster(ps=1, worker=1)`, runs a step on it and stops it, `rounds` times,
    with ``$TMPDIR`` (this process's and the tasks') at `temp_dir`.

    Returns:
        ``{"rounds", "seconds", "leftover": {"processes", "threads", "sockets", "temp_files"}}``:
        task processes still alive, and this process's threads and sockets beyond what it had
        after a first round (which starts the lasting ones: the spawner thread, zmq's context).
    """
    saved = os.environ.get("TMPDIR"), tempfile.tempdir
    os.environ["TMPDIR"], tempfile.tempdir = str(temp_dir), None
    me = os.getpid()
    started_pids = []

    def one_round():
        with tf.LocalCluster(ps=1, worker=1) as cluster:
            started_pids.extend(cluster.pids.values())
            g = tf.Graph()
            with g.as_default():
                with tf.device("/job:ps/task:0"):
                    v = tf.Variable(1.0, name="v")
                with tf.device("/job:worker/task:0"):
                    out = v * 2.0
                with tf.Session(cluster.target("worker", 0)) as sess:
                    sess.run(v.initializer)
                    assert sess.run(out) == 2.0

    try:
        began = time.monotonic()
        one_round()
        _wait_for(lambda: not children(me), 5)
        time.sleep(0.3)  # reader threads and zmq's asynchronous closes settle
        base = probe(me)
        for _ in range(rounds - 1):
            one_round()
        seconds = time.monotonic() - began
        _wait_for(
            lambda: probe(me)["threads"] <= base["threads"] and probe(me)["sockets"] <= base["sockets"], 5
        )
        now = probe(me)
        alive = [p for p in started_pids if os.path.exists(f"/proc/{p}") and _not_zombie(p)]
        return {
            "rounds": rounds,
            "seconds": seconds,
            "leftover": {
                "processes": len(alive) + len(children(me)),
                "threads": max(0, now["threads"] - base["threads"]),
                "sockets": max(0, now["sockets"] - base["sockets"]),
                "temp_files": sorted(os.listdir(temp_dir)),
            },
        }
    finally:
        os.environ.pop("TMPDIR")
        if saved[0] is not None:
            os.environ["TMPDIR"] = saved[0]
        tempfile.tempdir = saved[1]


def _not_zombie(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(") ", 1)[1][0] != "Z"
    except OSError:
        return False


# -- concurrent updates of one ps variable --------------------------------------------------------------------
def concurrent_updates(clients, updates, rows=16, processes=False, timeout_s=300):
    """`clients` concurrent clients each run `updates` times ``assign_add(counter, 1)`` and
    ``scatter_add(table, [i % rows, (i + 1) % rows], 1)`` on variables of one ps (threads of
    this process, each its own session, or separate processes with `processes`).

    Returns:
        ``{"clients", "updates", "counter", "expected_counter", "table_sum", "expected_table_sum",
        "lost_assign_add", "lost_scatter_add", "rows_exact", "seconds"}``.
    """
    with tf.LocalCluster(ps=1, worker=2) as cluster:
        graph, counter, table, init, _, _ = _counter_graph(rows)
        with tf.Session(cluster.target("ps", 0), graph=graph) as sess:
            sess.run(init)
        targets = [cluster.target(*task) for task in (("worker", 0), ("worker", 1), ("ps", 0))]
        began = time.monotonic()
        if processes:
            procs = [
                subprocess.Popen(
                    [sys.executable, str(BUMP_SCRIPT), targets[c % len(targets)], str(updates), str(rows)],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
                for c in range(clients)
            ]
            try:
                for p in procs:
                    _, err = p.communicate(timeout=timeout_s)
                    if p.returncode != 0:
                        raise RuntimeError(f"a bump client failed:\n{err[-3000:]}")
            finally:
                for p in procs:
                    if p.poll() is None:
                        p.kill()
                        p.communicate()
        else:
            errors_seen = []

            def client(target):
                try:
                    bump(target, updates, rows)
                except Exception as e:  # noqa: BLE001 - reported below
                    errors_seen.append(e)

            threads = [
                threading.Thread(target=client, args=(targets[c % len(targets)],)) for c in range(clients)
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout_s)
            if errors_seen or any(t.is_alive() for t in threads):
                raise RuntimeError(f"clients failed or hung: {errors_seen!r}")
        seconds = time.monotonic() - began
        with tf.Session(cluster.target("ps", 0), graph=graph) as sess:
            final_counter, final_table = sess.run([counter, table])
    expected_table = np.zeros(rows)
    for i in range(updates):
        expected_table[[i % rows, (i + 1) % rows]] += clients
    total = clients * updates
    return {
        "clients": clients,
        "updates": updates,
        "counter": float(final_counter),
        "expected_counter": float(total),
        "table_sum": float(final_table[:, 0].sum()),
        "expected_table_sum": float(2 * total),
        "lost_assign_add": int(total - final_counter),
        "lost_scatter_add": int(2 * total - final_table[:, 0].sum()),
        "rows_exact": bool(np.array_equal(final_table, np.repeat(expected_table[:, None], 4, axis=1))),
        "seconds": seconds,
    }


def _counter_graph(rows):
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/job:ps/task:0"):
            counter = tf.Variable(0.0, dtype=tf.float64, name="counter")
            table = tf.Variable(np.zeros((rows, 4)), name="table")
        ids = tf.placeholder(tf.int32, [2], name="ids")
        with tf.device("/job:worker/task:0"):
            ones = tf.ones([2, 4], tf.float64)
        bump_ops = tf.group(tf.assign_add(counter, 1.0), tf.scatter_add(table, ids, ones))
        init = tf.global_variables_initializer()
    return graph, counter, table, init, bump_ops, ids


def bump(target, updates, rows):
    """One client: `updates` runs of the counter's and the table's updates through `target`."""
    graph, _, _, _, bump_ops, ids = _counter_graph(rows)
    with tf.Session(target, graph=graph) as sess:
        for i in range(updates):
            sess.run(bump_ops, {ids: [i % rows, (i + 1) % rows]})
