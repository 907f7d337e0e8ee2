"""Reliability, measured: faults survived and the time to report each, malformed inputs tried,
updates lost, RSS slope per 1,000 steps, leftovers. Writes ``docs/reliability.md``.

Every scenario runs real processes on 127.0.0.1 (`LocalCluster` servers, client processes
from ``tests/train_scripts/``); the tests in ``tests/test_faults.py``, ``test_leaks.py``,
``test_server_fuzz.py`` and ``test_bad_graphs.py`` check the same behaviours in shorter,
bounded versions and assert them; this script measures them at full length. A time to
report is measured from the fault (a SIGKILLed task: from the moment its process was
reaped) to the moment the affected client has the error (its output line, polled every
5 ms, or its exception).

    python benchmarks/reliability.py                  # full length (~5 min on 2 cores)
    python benchmarks/reliability.py --quick          # short rounds, to try the script
"""

import argparse
import json
import os
import platform
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)

import zmq  # noqa: E402

import nbdist as tf  # noqa: E402
import reliability_scenarios as scenarios  # noqa: E402 - found through the path above
from nbdist.runtime.net import transport, wire  # noqa: E402
from procs import LoggedProcs  # noqa: E402
from test_server_fuzz import _bad_requests, _valid_messages  # noqa: E402

FAULT_WORKER = ROOT / "tests" / "train_scripts" / "fault_worker.py"
BOUND_S = 120


def _wait_line(clients, name, pattern, timeout_s=BOUND_S):
    """Seconds until `name`'s output matches `pattern` (polled every 5 ms)."""
    import re

    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        if re.search(pattern, clients.text(name), re.M):
            return time.monotonic() - started
        time.sleep(0.005)
    raise TimeoutError(f"{name}: no {pattern!r} within {timeout_s} s:\n{clients.text(name)[-2000:]}")


# -- faults -------------------------------------------------------------------------------------------
def fault_worker_killed(mode, workers, victim, replicas=None):
    """kill -9 of a non-chief worker's task while training; its client's report; the chief's steps
    while it is gone; the restarted task's new loop rejoins."""
    extra = ["--replicas", replicas] if replicas else []
    with tempfile.TemporaryDirectory() as tmp, tf.LocalCluster(ps=1, worker=workers) as cluster:
        clients = LoggedProcs(tmp)
        stop = Path(tmp) / "stop"
        spec = cluster.cluster_spec.to_json()
        try:
            for i in range(workers):
                # Synchronous workers stop when the chief does (it closes the token queue).
                stop_args = ["--stop_file", stop] if mode == "async" or i == 0 else []
                clients.start(
                    f"w{i}", FAULT_WORKER, spec, i, mode, *stop_args, "--step_sleep_s", 0.01, *extra
                )
            clients.wait_steps(f"w{victim}", 20, BOUND_S)
            cluster.kill("worker", victim)
            report_s = _wait_line(clients, f"w{victim}", r"(error |Error: ).*unavailable")
            status = next(r for r in cluster.status() if (r["job"], r["index"]) == ("worker", victim))
            before = len(clients.steps("w0"))
            time.sleep(2.0)
            chief_steps_while_down = len(clients.steps("w0")) - before
            clients.procs[f"w{victim}"][0].kill()
            restarted = time.monotonic()
            cluster.restart_task("worker", victim)
            clients.start("rejoin", FAULT_WORKER, spec, victim, mode, "--local_steps", 20, *extra)
            rejoined = clients.wait_exit("rejoin", BOUND_S) == 0 and "done 20" in clients.text("rejoin")
            rejoin_s = time.monotonic() - restarted
            stop.touch()
            chief_ok = clients.wait_exit("w0", BOUND_S) == 0
        finally:
            clients.stop()
    return {
        "report_s": report_s,
        "reported_by": f"the dead worker's client; status: {status.get('error')}",
        "survived": chief_ok and rejoined and chief_steps_while_down > 0,
        "detail": f"the chief ran {chief_steps_while_down} steps in the 2 s without it; restart + rejoin "
        f"(20 steps) {rejoin_s:.1f} s",
    }


def _ps_worker_graph(cluster_spec):
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:ps/task:0"):
            w = tf.Variable(np.zeros(4), name="w")
            step = tf.train.get_or_create_global_step()
        with tf.device("/job:worker/task:0"):
            train = tf.group(tf.assign_add(w, np.ones(4)), tf.assign_add(step, 1))
        init = tf.global_variables_initializer()
        saver = tf.train.Saver()
    return g, w, step, train, init, saver


def _time_error(fn, kill):
    """Runs `fn` in a loop on a thread, calls `kill`, returns (seconds to the error, the error)."""
    box = {}
    started = threading.Event()

    def loop():
        try:
            while True:
                fn()
                started.set()
        except tf.errors.OpError as e:
            box["error"], box["at"] = e, time.monotonic()
            started.set()

    t = threading.Thread(target=loop, daemon=True)
    t.start()
    started.wait(BOUND_S)
    killed = time.monotonic()
    kill()
    t.join(BOUND_S)
    if "error" not in box:
        raise TimeoutError("no error within the bound")
    return box["at"] - killed, box["error"]


def fault_ps_killed():
    """kill -9 of the ps under a plain session: UnavailableError; restart + Saver.restore resumes."""
    with tempfile.TemporaryDirectory() as tmp, tf.LocalCluster(ps=1, worker=1) as cluster:
        g, w, step, train, init, saver = _ps_worker_graph(cluster.cluster_spec)
        sess = tf.Session(cluster.target("worker", 0), graph=g)
        sess.run(init)
        for _ in range(5):
            sess.run(train)
        saver.save(sess, f"{tmp}/model", global_step=step)
        report_s, error = _time_error(lambda: sess.run(train), lambda: cluster.kill("ps", 0))
        sess.close()
        cluster.restart_task("ps", 0)
        sess = tf.Session(cluster.target("worker", 0), graph=g)
        attempts = 0
        for attempts in range(1, 6):  # noqa: B007 - the count is reported
            try:
                saver.restore(sess, tf.train.latest_checkpoint(tmp))
                break
            except tf.errors.UnavailableError:
                time.sleep(0.2)
        restored = int(sess.run(step))
        sess.run(train)
        resumed = int(sess.run(step)) == restored + 1 and float(sess.run(w)[0]) == restored + 1
        sess.close()
    return {
        "report_s": report_s,
        "reported_by": f"the client: {type(error).__name__}: {error.message.splitlines()[0][:150]}",
        "survived": resumed and restored == 5,
        "detail": f"restored step {restored} from the checkpoint, then trained on "
        f"({attempts} restore attempt(s))",
    }


def fault_task_stopped(timeout_ms):
    """SIGSTOP of a worker (a hung peer): DeadlineExceeded with a step timeout, else heartbeats."""
    with tf.LocalCluster(ps=1, worker=1) as cluster:
        g, _, _, train, init, _ = _ps_worker_graph(cluster.cluster_spec)
        config = tf.ConfigProto(operation_timeout_in_ms=timeout_ms) if timeout_ms else None
        with tf.Session(cluster.target("ps", 0), graph=g, config=config) as sess:
            sess.run(init)
            pid = cluster.pids[("worker", 0)]
            try:
                report_s, error = _time_error(lambda: sess.run(train), lambda: os.kill(pid, signal.SIGSTOP))
            finally:
                os.kill(pid, signal.SIGCONT)
    return {
        "report_s": report_s,
        "reported_by": f"the client: {type(error).__name__}: {error.message.splitlines()[0][:150]}",
        "survived": True,
        "detail": f"operation_timeout_in_ms={timeout_ms}"
        if timeout_ms
        else "no step timeout: heartbeats (5 s)",
    }


def fault_unfed_dequeue():
    """A dequeue nobody feeds: timeout_in_ms is honoured, closing the session cancels it."""
    with tf.LocalCluster(ps=1, worker=1) as cluster:
        g = tf.Graph()
        with g.as_default(), tf.device("/job:ps/task:0"):
            q = tf.FIFOQueue(4, tf.float32, shapes=(), shared_name="unfed")
            deq, size = q.dequeue(), q.size()
        with tf.Session(cluster.target("worker", 0), graph=g) as sess:
            began = time.monotonic()
            try:
                sess.run(deq, options=tf.RunOptions(timeout_in_ms=500))
            except tf.errors.DeadlineExceededError:
                deadline_s = time.monotonic() - began
        sess = tf.Session(cluster.target("worker", 0), graph=g)
        sess.run(size)
        box = {}

        def wait():
            try:
                sess.run(deq)
            except tf.errors.OpError as e:
                box["error"], box["at"] = e, time.monotonic()

        waiter = threading.Thread(target=wait)
        waiter.start()
        time.sleep(0.3)
        closed = time.monotonic()
        sess.close()
        waiter.join(BOUND_S)
        cancel_s, error = box["at"] - closed, box["error"]
        with tf.Session(cluster.target("worker", 0), graph=g) as again:
            healthy = again.run(size) == 0
    return {
        "report_s": cancel_s,
        "reported_by": f"the client: {type(error).__name__} on close; timeout_in_ms=500 ended the wait "
        f"after {deadline_s:.2f} s",
        "survived": healthy,
        "detail": "the server serves the next session",
    }


def fault_chief_killed():
    """kill -9 of the sync chief's task: every other worker waits in its token dequeue, as in TF
    (issue 36 §11), with no error; the chief's task and loop restarted, all train on."""
    with tempfile.TemporaryDirectory() as tmp, tf.LocalCluster(ps=1, worker=3) as cluster:
        clients = LoggedProcs(tmp)
        stop = Path(tmp) / "stop"
        spec = cluster.cluster_spec.to_json()
        sync = ("sync", "--replicas", 2)
        try:
            for i in range(3):  # the others stop when the chief does (it closes the token queue)
                chief_stop = ["--stop_file", stop] if i == 0 else []
                clients.start(f"w{i}", FAULT_WORKER, spec, i, *sync, *chief_stop, "--step_sleep_s", 0.01)
            for i in range(3):
                clients.wait_steps(f"w{i}", 10, BOUND_S)
            cluster.kill("worker", 0)
            logged = {i: len(clients.text(f"w{i}")) for i in (1, 2)}
            time.sleep(2)
            waited = all(
                clients.procs[f"w{i}"][0].poll() is None and "rror" not in clients.text(f"w{i}")[logged[i] :]
                for i in (1, 2)
            )
            clients.procs["w0"][0].kill()
            cluster.restart_task("worker", 0)
            restarted = time.monotonic()
            clients.start("w0b", FAULT_WORKER, spec, 0, *sync, "--stop_file", stop)
            before = {i: len(clients.steps(f"w{i}")) for i in (1, 2)}
            for i in (1, 2):
                clients.wait_steps(f"w{i}", before[i] + 1, BOUND_S)
            resumed_s = time.monotonic() - restarted
            stop.touch()
            ended = all(clients.wait_exit(name, BOUND_S) == 0 for name in ("w0b", "w1", "w2"))
        finally:
            clients.stop()
    return {
        "report_s": resumed_s,
        "reported_by": "nobody: each other worker waits in its sync_token_q dequeue, as TF's does, with no "
        "error; the time is from the chief's task restarted until both resumed",
        "survived": waited and ended,
        "detail": "no worker fails or recreates its session while the chief is down; once the chief's task "
        "and loop are restarted every worker trains on and exits 0",
    }


def fault_new_session_to_dead_task():
    with tf.LocalCluster(local=2) as cluster:
        g = tf.Graph()
        with g.as_default(), tf.device("/job:local/task:1"):
            c = tf.constant(2.0) * 3.0
        with tf.Session(cluster.target("local", 1), graph=g) as sess:
            sess.run(c)
        cluster.kill("local", 1)
        box = {}

        def new_session():  # a new thread: new channels
            began = time.monotonic()
            try:
                with tf.Session(cluster.target("local", 1), graph=g) as s:
                    s.run(c)
            except tf.errors.UnavailableError as e:
                box["s"], box["e"] = time.monotonic() - began, e

        t = threading.Thread(target=new_session)
        t.start()
        t.join(BOUND_S)
    return {
        "report_s": box["s"],
        "reported_by": f"the client: {box['e'].message[:150]}",
        "survived": True,
        "detail": "refused connection to a task reached before (grace 0.5 s)",
    }


# -- malformed input -----------------------------------------------------------------------------------
def malformed_inputs(rounds):
    """The fuzz's messages (random, truncated, bit-flipped, forged, replayed, valid-looking signed
    ones with wrong contents) at a task process with the master, worker and Exec services."""
    sent = replies = 0
    with tf.LocalCluster(local=1) as cluster:
        g = tf.Graph()
        with g.as_default(), tf.device("/job:local/task:0"):
            x = tf.placeholder(tf.float32, [3], name="x")
            v = tf.Variable(np.ones(3, np.float32), name="v")
            y = tf.assign_add(v, x, name="y")
        sess = tf.Session(cluster.target("local"), graph=g)
        sess.run(v.initializer)
        sess.run(y, {x: np.ones(3, np.float32)})
        pid = cluster.pids[("local", 0)]
        rss_before = scenarios.probe(pid)["rss_bytes"]
        sock = zmq.Context.instance().socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(transport.zmq_endpoint(cluster.cluster_spec.task_address("local", 0)))
        rng = np.random.default_rng(1234)
        types = ["RunStep", "RunGraph", "CreateSession", "SendTensor", "Exec", "ExecPoll", "Status", "Ping"]
        try:
            for r in range(rounds):
                key = cluster.key if r % 10 else wire.new_key()
                for frames in _valid_messages(rng, key, types):
                    sock.send_multipart(frames)
                    sent += 1
                for frames, _ in _bad_requests(
                    cluster.key, sess._backend._handle, ["/job:local/replica:0/task:0/graph:2"]
                ):
                    sock.send_multipart([bytes(f) for f in frames])
                    sent += 1
                while sock.poll(200):
                    sock.recv_multipart()
                    replies += 1
            value = sess.run(v)
            served = bool(np.array_equal(sess.run(y, {x: np.ones(3, np.float32)}), value + 1))
            rss_after = scenarios.probe(pid)["rss_bytes"]
        finally:
            sock.close(linger=0)
            sess.close()
    return {
        "sent": sent,
        "replies": replies,
        "served_after": served,
        "rss_growth_bytes": rss_after - rss_before,
    }


# -- the report ----------------------------------------------------------------------------------------
def _fmt_mb(n):
    return f"{n / 2**20:+.2f} MB"


def write_report(path, command, results):
    faults = results["faults"]
    lines = [
        "# Reliability, measured",
        "",
        f"Produced by `{command}` on {results['machine']} ({results['date']}). Every process ran on",
        "127.0.0.1; the tests (`tests/test_faults.py`, `test_leaks.py`, `test_server_fuzz.py`,",
        "`test_bad_graphs.py`, `test_train_distributed.py`, `test_saver.py`, `test_notebooks.py`) assert",
        "the same behaviours in shorter runs. Times are wall-clock on a shared 2-core machine: the",
        "≤ 1 s goal on one host is this figure, not a test assertion. A time to report runs from the",
        "fault (for kill -9 of a task: from the moment its process was reaped) until the affected",
        "client has the error (its exception, or its output line, polled every 5 ms).",
        "",
        "## Faults during training",
        "",
        "| fault | survived | time to report | reported by | detail |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, r in faults.items():
        if "error" in r:
            lines.append(f"| {name} | **no** | — | {r['error'][:200]} | |")
            continue
        lines.append(
            f"| {name} | {'yes' if r['survived'] else '**no**'} | {r['report_s']:.2f} s | "
            f"{r['reported_by'].replace('|', '/')} | {r['detail']} |"
        )
    survived = sum(1 for r in faults.values() if r.get("survived"))
    lines += [
        "",
        f"**Faults survived: {survived} of {len(faults)}.** Also tested, not timed here: a ps restart under",
        "`MonitoredTrainingSession` recovers by itself from the latest checkpoint",
        "(`tests/test_train_distributed.py`); a process killed inside `Saver.save` leaves",
        "`latest_checkpoint` restorable (`tests/test_saver.py`); a kernel SIGKILLed during a sync",
        "training step leaves no server process (`tests/test_notebooks.py`).",
        "",
        "## Malformed input",
        "",
    ]
    m = results["malformed"]
    lines += [
        f"{m['sent']} malformed messages (random frames, truncated and bit-flipped messages, forged",
        "signatures, replays, and signed requests with wrong tensor sizes, dtypes, shapes, unknown session,",
        "graph and step ids, malformed GraphDefs, huge declared sizes) sent to one task process serving the",
        f"master, worker and Exec services: {m['replies']} error or plain replies, the rest dropped; the",
        f"task served a real client afterwards: **{'yes' if m['served_after'] else 'no'}**; its RSS",
        f"changed by {_fmt_mb(m['rss_growth_bytes'])}.",
        "",
        "## Updates lost",
        "",
    ]
    u = results["updates"]
    lines += [
        f"{u['clients']} concurrent client processes x {u['updates']} steps, each an",
        f"`assign_add(counter, 1)` and a `scatter_add` of two rows of a table on one ps, in "
        f"{u['seconds']:.1f} s: counter "
        f"{u['counter']:.0f} of {u['expected_counter']:.0f}, table {u['table_sum']:.0f} of "
        f"{u['expected_table_sum']:.0f}, every row exact: {u['rows_exact']}. "
        f"**Updates lost: {u['lost_assign_add']} (assign_add), {u['lost_scatter_add']} (scatter_add).**",
        "",
        "## Memory and resources over a soak",
        "",
    ]
    s = results["soak"]
    lines += [
        f"{s['steps']} asynchronous training steps (ps=1 worker=1, the session reopened every",
        f"{results['soak_session_every']} steps), sampled after a {results['soak_warmup']}-step warm-up:",
        "",
        "| task | RSS slope per 1,000 steps | RSS change | threads change | sockets change "
        "| max registered partitions |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for task, slope in s["rss_slope_bytes_per_1000"].items():
        gr = s["growth"][task]
        lines.append(
            f"| {task} | {slope / 1024:+.1f} KB | {_fmt_mb(gr['rss_bytes'])} | {gr['threads']:+d} | "
            f"{gr['sockets']:+d} | {gr['max_graphs_registered']} |"
        )
    lo = results["start_stop"]
    left = lo["leftover"]
    lines += [
        "",
        "## Leftovers",
        "",
        f"{lo['rounds']} rounds of start a `LocalCluster(ps=1, worker=1)`, run a step, stop it "
        f"({lo['seconds']:.1f} s): processes left {left['processes']}, threads {left['threads']}, sockets "
        f"{left['sockets']}, temp files {len(left['temp_files'])}. "
        f"**Leftovers: {left['processes'] + left['threads'] + left['sockets'] + len(left['temp_files'])}.**",
        "",
    ]
    Path(path).write_text("\n".join(lines))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="short rounds (not for the record)")
    p.add_argument("--out", default=str(ROOT / "docs" / "reliability.md"))
    args = p.parse_args()
    quick = args.quick
    command = "python benchmarks/reliability.py" + (" --quick" if quick else "")
    results = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "date": time.strftime("%Y-%m-%d"),
        "faults": {},
    }
    fault_runs = {
        "kill -9 a non-chief worker (async, ps=1 worker=2)": lambda: fault_worker_killed("async", 2, 1),
        "kill -9 a non-chief worker (sync, ps=1 worker=3, 2 replicas: one backup)": lambda: (
            fault_worker_killed("sync", 3, 2, replicas=2)
        ),
        "kill -9 the sync chief (ps=1 worker=3)": fault_chief_killed,
        "kill -9 the ps (plain session), restart, Saver.restore": fault_ps_killed,
        "a new session to a task that died": fault_new_session_to_dead_task,
        "SIGSTOP a worker, step timeout 1 s": lambda: fault_task_stopped(1000),
        "SIGSTOP a worker, no step timeout": lambda: fault_task_stopped(0),
        "a dequeue nobody feeds; the session closed": fault_unfed_dequeue,
    }
    for name, run in fault_runs.items():
        print(f"fault: {name} ...", flush=True)
        try:
            results["faults"][name] = run()
        except Exception as e:  # noqa: BLE001 - recorded as not survived
            results["faults"][name] = {"error": f"{type(e).__name__}: {e}"}
        print(json.dumps(results["faults"][name], default=str)[:300], flush=True)
    print("malformed input ...", flush=True)
    results["malformed"] = malformed_inputs(2 if quick else 10)
    print("concurrent updates ...", flush=True)
    results["updates"] = scenarios.concurrent_updates(8, 50 if quick else 500, processes=True)
    results["soak_session_every"], results["soak_warmup"] = (500, 300) if quick else (2000, 1000)
    print("soak ...", flush=True)
    steps = 1500 if quick else 10_000
    results["soak"] = scenarios.soak(
        steps,
        sample_every=100 if quick else 250,
        warmup_steps=results["soak_warmup"],
        session_every=results["soak_session_every"],
    )
    print("start/stop rounds ...", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        results["start_stop"] = scenarios.start_stop_rounds(5 if quick else 50, tmp)
    write_report(args.out, command, results)
    print(f"wrote {args.out}", flush=True)


if __name__ == "__main__":
    main()
