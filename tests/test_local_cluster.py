"""Tests for nbdist/notebook/local_cluster.py: LocalCluster starts, watches and stops real server processes."""

import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import nbdist as tf
from nbdist.notebook import local_cluster as cluster_lib
from nbdist.notebook import render
from nbdist.runtime import threads
from nbdist.runtime.net import transport

sys.path.insert(0, os.path.dirname(__file__))
from procs import REPO, alive, free_port, wait_gone


@pytest.fixture
def cluster():
    c = tf.LocalCluster(local=2)
    yield c
    c.stop()


# ---------------------------------------------------------------- input forms (no processes)


def test_needs_jobs():
    with pytest.raises(ValueError, match=r"needs job sizes, e.g. LocalCluster\(local=2\)"):
        tf.LocalCluster()


def test_job_size_must_be_positive():
    with pytest.raises(ValueError, match="job 'worker' needs a positive number of tasks, got 0"):
        tf.LocalCluster(worker=0)


def test_jobs_and_spec_are_exclusive():
    with pytest.raises(ValueError, match=r"give either job counts .* or spec=\.\.\., not both"):
        tf.LocalCluster(spec={"local": ["localhost:1"]}, worker=1)


def test_key_must_be_hex_or_bytes():
    with pytest.raises(ValueError, match="key must be bytes or a hex string, got 'zz'"):
        tf.LocalCluster(key="zz", local=1)


def test_status_text_lists_every_task():
    rows = [
        {
            "job": "ps",
            "index": 0,
            "address": "localhost:1",
            "pid": 12,
            "alive": True,
            "rss_bytes": 2**21,
            "ops_placed": {"Const": 2},
            "variables": {"w": {"nbytes": 8}},
            "heartbeat_age_s": 0.5,
            "threads": {"blas": 1, "reason": "2 cores / 3 tasks on this host"},
        },
        {
            "job": "worker",
            "index": 0,
            "address": "localhost:2",
            "pid": None,
            "alive": False,
            "error": "stopped",
        },
    ]
    text = render.status_text(rows)
    assert (
        "ps      0      localhost:1  12   yes (0.5 s ago)  2 MB  1 (2 cores / 3 tasks on this host)  2    1 (8 B)"
        in text
    )
    assert "worker  0      localhost:2  -    no: stopped" in text


def test_status_html_has_a_row_per_task():
    rows = [{"job": "ps", "index": 0, "address": "a:1", "pid": 1, "alive": False, "error": "<gone>"}]
    assert render.status_html(rows).count("<tr") == 2
    assert "&lt;gone&gt;" in render.status_html(rows)


def test_status_html_shows_a_task_stopped_on_purpose_grey_and_one_that_died_red():
    rows = [
        {"job": "ps", "index": 0, "address": "a:1", "pid": 1, "alive": True},
        {"job": "worker", "index": 0, "address": "a:2", "pid": None, "alive": False, "error": "stopped"},
        {"job": "worker", "index": 1, "address": "a:3", "pid": 3, "alive": False, "error": "no answer"},
        {"job": "worker", "index": 2, "address": "a:4", "pid": None, "alive": False, "error": "not started"},
    ]
    colors = re.findall(r'<tr style="color:(#\w+)">', render.status_html(rows))
    assert colors == ["#2a7", "#888", "#c33", "#c33"]  # green, grey, red, red


def test_a_status_snapshot_keeps_the_table_of_its_moment():
    rows = [{"job": "ps", "index": 0, "address": "a:1", "pid": 1, "alive": False, "error": "stopped"}]
    snapshot = render.StatusSnapshot(rows)
    rows[0].update(alive=True, error=None)  # (the cluster's rows of a later moment)
    bundle = snapshot._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"}  # no widget: it stays as it was shown
    assert "no: stopped" in bundle["text/plain"] and "no: stopped" in bundle["text/html"]


# ---------------------------------------------------------------- real processes


@pytest.mark.slow
def test_every_task_is_a_running_process_at_its_address(cluster):
    assert cluster.cluster_spec.jobs == ["local"]
    assert set(cluster.pids) == {("local", 0), ("local", 1)}
    assert all(alive(pid) for pid in cluster.pids.values())
    assert cluster.target("local", 1) == f"zmq://{cluster.cluster_spec.task_address('local', 1)}"


@pytest.mark.slow
def test_a_graph_runs_across_both_tasks(cluster):
    with tf.Graph().as_default():
        with tf.device("/job:local/task:1"):
            b = tf.matmul(tf.constant(np.eye(2)), tf.constant(np.full((2, 2), 3.0)))
        with tf.device("/job:local/task:0"):
            total = tf.reduce_sum(b)
        with tf.Session(cluster.target("local", 0)) as sess:
            assert sess.run(total) == 12.0
            ops = {r["index"]: r["ops_placed"] for r in cluster.status()}  # while the session lives
    assert ops[1].get("MatMul") == 1
    assert ops[0].get("Sum") == 1


@pytest.mark.slow
def test_the_key_is_set_for_sessions_and_restored_at_stop(monkeypatch):
    monkeypatch.delenv("NBDIST_CLUSTER_KEY", raising=False)
    with tf.LocalCluster(local=1, key="ab" * 16) as c:
        assert os.environ["NBDIST_CLUSTER_KEY"] == "ab" * 16
        assert c.key == bytes.fromhex("ab" * 16)
    assert "NBDIST_CLUSTER_KEY" not in os.environ


@pytest.mark.slow
def test_stop_leaves_no_process_within_a_second(cluster):
    pids = list(cluster.pids.values())
    started = time.monotonic()
    cluster.stop()
    assert time.monotonic() - started < 1.0
    assert wait_gone(pids, 0.01)


@pytest.mark.slow
def test_stop_is_idempotent(cluster):
    cluster.stop()
    cluster.stop()
    assert not cluster.running
    assert cluster.pids == {}


@pytest.mark.slow
def test_stop_kills_a_task_that_ignores_sigterm(cluster):
    pid = cluster.pids[("local", 0)]
    os.kill(pid, signal.SIGSTOP)  # a stopped process cannot run its handler... until SIGCONT
    try:
        cluster.stop()
    finally:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)
    assert wait_gone([pid], 1.0)


@pytest.mark.slow
def test_context_manager_stops_the_cluster():
    with tf.LocalCluster(local=1) as c:
        pids = list(c.pids.values())
    assert wait_gone(pids, 1.0)


@pytest.mark.slow
def test_kill_and_restart_task(cluster):
    old = cluster.pids[("local", 1)]
    cluster.kill("local", 1)
    assert not alive(old)
    row = cluster.status()[1]
    assert not row["alive"]
    assert "exited with code -9" in row["error"]
    new = cluster.restart_task("local", 1)
    assert new != old
    assert cluster.pids[("local", 1)] == new
    assert all(r["alive"] for r in cluster.status())


@pytest.mark.slow
def test_restart_keeps_addresses_and_starts_new_processes(cluster):
    old = dict(cluster.pids)
    spec = cluster.cluster_spec
    cluster.restart()
    assert cluster.cluster_spec == spec
    assert set(cluster.pids.values()).isdisjoint(old.values())
    assert wait_gone(old.values(), 1.0)
    assert all(r["alive"] for r in cluster.status())


@pytest.mark.slow
def test_status_reports_each_task(cluster):
    rows = cluster.status()
    assert [(r["job"], r["index"]) for r in rows] == [("local", 0), ("local", 1)]
    for r in rows:
        assert r["alive"]
        assert r["pid"] == cluster.pids[("local", r["index"])]
        assert r["rss_bytes"] > 1_000_000
        assert {"steps_run", "ops_placed", "variables"} <= set(r)
        # each task process gets its share of the cores (nbdist.runtime.threads), and says why
        if not any(os.environ.get(v) for v in threads.BLAS_THREAD_VARS):
            assert r["threads"]["blas"] == max(1, threads.available_cores() // 2)
            assert r["threads"]["reason"].endswith(" / 2 tasks on this host")
    assert "BLAS threads" in render.status_text(rows)


@pytest.mark.slow
def test_a_task_that_cannot_start_shows_its_stderr():
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = holder.getsockname()[1]
    try:
        with pytest.raises(
            cluster_lib.TaskStartError,
            match=r"(?s)task /job:local/task:0 at 127.0.0.1:\d+ exited with code 2; "
            r"its stderr:\n.*cannot start server",
        ):
            tf.LocalCluster(spec={"local": [f"127.0.0.1:{port}"]})
    finally:
        holder.close()


@pytest.mark.slow
def test_remote_addresses_are_only_connected_to():
    port = free_port()
    spec = {"local": [f"localhost:{port}"], "remote": ["10.255.255.1:2222"]}
    with tf.LocalCluster(spec=spec) as c:
        assert set(c.pids) == {("local", 0)}
        remote = next(r for r in c.status() if r["job"] == "remote")
        assert not remote["alive"]
        assert "unavailable" in remote["error"]


@pytest.mark.slow
def test_repr_names_jobs_state_and_addresses(cluster):
    addresses = ", ".join(cluster.cluster_spec.job_tasks("local"))
    assert repr(cluster) == f"<LocalCluster local=2 (running) at {addresses}>"
    cluster.stop()
    assert "(stopped)" in repr(cluster)


@pytest.mark.slow
def test_current_is_the_latest_running_cluster(cluster):
    assert cluster_lib.current() is cluster
    cluster.stop()
    assert cluster_lib.current() is None


@pytest.mark.slow
def test_task_output_outside_cells_becomes_stream_events(cluster):
    pid = cluster.pids[("local", 0)]
    # A thread started by a cell outlives it: its later output goes to the process's stdout.
    from nbdist.notebook import task_exec

    task_exec.run_cell(
        [("local", 0, cluster.cluster_spec.task_address("local", 0))],
        "import threading, time\nthreading.Timer(0.2, lambda: print('late line', flush=True)).start()",
        cluster.key,
    )
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        texts = [e["text"] for e in cluster.events.history("stream") if e["task"] == "/job:local/task:0"]
        if "late line\n" in texts:
            break
        time.sleep(0.05)
    assert "late line\n" in texts, texts
    assert alive(pid)


def _script(body):
    return textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {REPO!r})
        import nbdist as tf
        {body}
    """)


@pytest.mark.slow
def test_no_orphans_when_the_owner_is_killed():
    owner = subprocess.Popen(
        [
            sys.executable,
            "-c",
            _script(
                "c = tf.LocalCluster(ps=1, worker=1)\n"
                "        print(*c.pids.values(), flush=True)\n"
                "        time.sleep(60)"
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        pids = [int(p) for p in owner.stdout.readline().split()]
        assert len(pids) == 2 and all(alive(p) for p in pids)
    finally:
        owner.kill()
        owner.wait()
        owner.stdout.close()
    assert wait_gone(pids, 3.0)


@pytest.mark.slow
def test_clusters_left_running_are_stopped_at_exit():
    owner = subprocess.run(
        [sys.executable, "-c", _script("c = tf.LocalCluster(local=2)\n        print(*c.pids.values())")],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    pids = [int(p) for p in owner.stdout.split()]
    assert wait_gone(pids, 1.0)


@pytest.mark.slow
def test_a_cluster_made_on_a_short_lived_thread_survives_it():
    import threading

    made = []
    t = threading.Thread(target=lambda: made.append(tf.LocalCluster(local=1)))
    t.start()
    t.join()
    c = made[0]
    try:
        time.sleep(0.3)  # PR_SET_PDEATHSIG would have fired when the thread ended
        assert all(alive(p) for p in c.pids.values())
    finally:
        c.stop()


@pytest.mark.slow
def test_after_stop_the_status_says_stopped_not_not_started(cluster):
    cluster.stop()
    rows = cluster.status()
    assert [(r["alive"], r["error"]) for r in rows] == [(False, "stopped")] * 2
    assert "no: stopped" in render.status_text(rows, cluster)


@pytest.mark.slow
def test_restart_drops_this_threads_channels_to_the_old_processes(cluster):
    from nbdist.runtime.net import transport

    address = cluster.cluster_spec.task_address("local", 0)
    old = transport.channel_to(address, "/job:local/task:0", cluster.key)
    cluster.restart()
    assert old.socket.closed  # a channel to the old process would report its lost connection
    assert transport.channel_to(address, "/job:local/task:0", cluster.key) is not old
    assert all(r["alive"] for r in cluster.status())


def _ps_probe_graph():
    graph = tf.Graph()
    with graph.as_default(), tf.device("/job:ps/task:0"):
        v = tf.Variable(1.0, name="v")
    return graph, v


@pytest.mark.slow
def test_the_first_sessions_after_restart_task_reach_the_restarted_task(monkeypatch):
    """Issue 36 §7: each worker's master had lost its connection to the old ps; a new session's
    first call re-dials (the runtime, even without `restart_task`'s own check), and
    `restart_task` returns once a session through every other task reaches it."""
    graph, v = _ps_probe_graph()
    with tf.LocalCluster(ps=1, worker=2) as cluster:
        for w in (0, 1):
            with tf.Session(cluster.target("worker", w), graph=graph) as sess:
                sess.run(v.initializer)
        with monkeypatch.context() as m:  # the runtime alone
            m.setattr(cluster_lib.LocalCluster, "_wait_reached", lambda self, task, started: None)
            cluster.restart_task("ps", 0)
        for i in range(4):
            with tf.Session(cluster.target("worker", i % 2), graph=graph) as sess:
                sess.run(v.initializer)
                assert sess.run(v) == 1.0
        cluster.restart_task("ps", 0)
        for w in (1, 0):
            with tf.Session(cluster.target("worker", w), graph=graph) as sess:
                sess.run(v.initializer)


@pytest.mark.slow
def test_a_reaped_task_is_named_dead_with_its_evidence_well_before_the_timeouts(monkeypatch):
    """Issue 36 §8: with connect and heartbeat timeouts of 60 s (in the tasks' environment and in
    this process), a task whose process this LocalCluster reaped is named dead at once with its
    pid; a master that never reached it names the Unix socket its server left behind."""
    for name in ("NBDIST_CONNECT_TIMEOUT_S", "NBDIST_HEARTBEAT_TIMEOUT_S"):
        monkeypatch.setenv(name, "60")
    monkeypatch.setattr(transport, "CONNECT_TIMEOUT_S", 60.0)
    monkeypatch.setattr(transport, "HEARTBEAT_TIMEOUT_S", 60.0)
    graph = tf.Graph()
    with graph.as_default(), tf.device("/job:worker/task:1"):
        c = tf.constant(2.0) * 3.0
    with tf.LocalCluster(worker=2) as cluster:
        pid = cluster.pids[("worker", 1)]
        cluster.kill("worker", 1)
        started = time.monotonic()
        with (
            pytest.raises(
                tf.errors.UnavailableError,
                match=rf"the master at localhost:\d+ is unavailable: its server is gone: its process, "
                rf"pid {pid} \(started by this process\), exited with code -9 \(killed by SIGKILL\)",
            ),
            tf.Session(cluster.target("worker", 1), graph=graph) as sess,
        ):
            sess.run(c)
        assert time.monotonic() - started < 5  # (1 s on an idle machine; the bound is for load)
        started = time.monotonic()
        with (
            pytest.raises(
                tf.errors.UnavailableError,
                match=r"\[/job:worker/replica:0/task:0\] /job:worker/replica:0/task:1 at localhost:\d+ is "
                r"unavailable: connection refused \(a Unix socket its server left at \S+ refuses "
                r"connections: its server is gone\)",
            ),
            tf.Session(cluster.target("worker", 0), graph=graph) as sess,
        ):
            sess.run(c)
        assert time.monotonic() - started < 5
