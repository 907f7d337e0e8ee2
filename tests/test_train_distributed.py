"""Multi-process training as TF tutorials run it: a ps and two workers, each its own process.

`train_scripts/async_mts.py` is the program (``MonitoredTrainingSession`` + ``StopAtStepHook``
+ checkpoints on the chief). The tests kill and restart the ps by PID and check that the
monitored sessions recover from the latest checkpoint, and that a plain session gets
`UnavailableError` and `Saver.restore` brings training back. Every wait is bounded.
"""

import json
import re
import signal
import time
from pathlib import Path

import numpy as np
import pytest

import nbdist as tf
from procs import LoggedProcs, ServerProcs, cluster_dict, wait_gone

pytestmark = pytest.mark.slow

SCRIPT = str(Path(__file__).parent / "train_scripts" / "async_mts.py")


@pytest.fixture
def procs(tmp_path):
    p = LoggedProcs(tmp_path)
    yield p
    p.stop()


def _latest_step(checkpoint_dir):
    path = tf.train.latest_checkpoint(checkpoint_dir)
    return int(path.rsplit("-", 1)[1]) if path else -1


def _steps(text):
    return [int(s) for s in re.findall(r"^step (\d+)$", text, re.M)]


def test_monitored_training_recovers_from_a_ps_restart(procs, tmp_path):
    cluster = json.dumps(cluster_dict(ps=1, worker=2))
    ckpt = str(tmp_path / "ckpt")
    last_step = 400
    procs.start("ps", SCRIPT, cluster, "ps", "0")
    procs.wait_for("ps", "ps ready", 30)
    # The non-chief starts first: it must wait, saying for what and for whom.
    procs.start("w1", SCRIPT, cluster, "worker", "1", ckpt, str(last_step), "0.02")
    waiting = procs.wait_for("w1", r"Waiting for model to be ready.*", 30).group(0)
    assert "uninitialized variables: w, global_step on /job:ps/task:0" in waiting
    assert "The chief (/job:worker/task:0) should initialize them" in waiting
    procs.start("w0", SCRIPT, cluster, "worker", "0", ckpt, str(last_step), "0.02")

    deadline = time.monotonic() + 60
    while _latest_step(ckpt) < 30:
        assert time.monotonic() < deadline, "no checkpoint at step >= 30 within 60 s"
        time.sleep(0.02)
    ps = procs.procs["ps"][0]
    ps.send_signal(signal.SIGKILL)
    assert wait_gone([ps.pid], 10)
    restored = tf.train.latest_checkpoint(ckpt)  # only the ps writes checkpoints: this is final
    k = int(restored.rsplit("-", 1)[1])
    procs.start("ps2", SCRIPT, cluster, "ps", "0")
    procs.wait_for("ps2", "ps ready", 30)

    assert procs.wait_exit("w0", 120) == 0, procs.text("w0")[-3000:]
    assert procs.wait_exit("w1", 120) == 0, procs.text("w1")[-3000:]
    chief_log = procs.text("w0")
    assert "An error was raised. This may be due to a preemption" in chief_log
    assert f"Restoring parameters from {restored}" in chief_log
    assert "Recovered: a new session was created" in procs.text("w1")
    before, recovered, after = chief_log.partition("Recovered: a new session was created")
    assert recovered, chief_log[-3000:]
    # Training resumed from the checkpoint's step: not from 0, not from where the ps died.
    assert k >= 30 and _steps(before)
    assert k <= _steps(after)[0] <= k + 10, (k, _steps(after)[:5])  # the read may precede the increment
    # The printed step is read before that run's increment (nbdist's copy-on-write snapshot).
    assert max(_steps(after) + _steps(procs.text("w1"))) >= last_step - 1
    assert _latest_step(ckpt) >= last_step  # the chief's CheckpointSaverHook.end saved the last step
    ps2 = procs.procs["ps2"][0]
    ps2.send_signal(signal.SIGTERM)
    assert procs.wait_exit("ps2", 10) == 0
    assert "ps joined" in procs.text("ps2")


def test_server_join_ends_cleanly_on_sigterm_and_sigint(procs):
    for sig in (signal.SIGTERM, signal.SIGINT):
        name = f"ps-{sig.name}"
        procs.start(name, SCRIPT, json.dumps(cluster_dict(ps=1)), "ps", "0")
        procs.wait_for(name, "ps ready", 30)
        time.sleep(0.2)  # let it reach join()
        start = time.monotonic()
        procs.procs[name][0].send_signal(sig)
        assert procs.wait_exit(name, 10) == 0, procs.text(name)
        assert time.monotonic() - start < 3.0
        assert "ps joined" in procs.text(name)


def test_plain_session_gets_unavailable_and_restore_brings_training_back(procs, tmp_path):
    cluster = cluster_dict(ps=1, worker=1)
    procs.start("ps", SCRIPT, json.dumps(cluster), "ps", "0")
    procs.wait_for("ps", "ps ready", 30)
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/job:ps/task:0"):
            w = tf.Variable(np.zeros(4), name="w")
            step = tf.train.get_or_create_global_step()
        with tf.device("/job:worker/task:0"):
            train = tf.group(tf.assign_add(w, np.ones(4)), tf.assign_add(step, 1))
        init = tf.global_variables_initializer()
        saver = tf.train.Saver()
    server = tf.train.Server(tf.train.ClusterSpec(cluster), job_name="worker", task_index=0)
    config = tf.ConfigProto(operation_timeout_in_ms=10000)
    try:
        sess = tf.Session(server.target, graph=graph, config=config)
        sess.run(init)
        for _ in range(3):
            sess.run(train)
        path = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=step)
        sess.run(train)
        ps = procs.procs["ps"][0]
        ps.send_signal(signal.SIGKILL)
        assert wait_gone([ps.pid], 10)
        with pytest.raises(
            (tf.errors.UnavailableError, tf.errors.AbortedError),
            match=rf"/job:ps/replica:0/task:0 at {cluster['ps'][0]} is unavailable",
        ):
            sess.run(train)
        procs.start("ps2", SCRIPT, json.dumps(cluster), "ps", "0")
        procs.wait_for("ps2", "ps ready", 30)
        sess.close()
        sess = tf.Session(server.target, graph=graph, config=config)
        # The worker's master may still hold the dead ps's connection: the first call after the
        # restart can fail once more with UnavailableError, and the runtime reconnects on the next.
        attempts = 0
        while True:
            attempts += 1
            try:
                saver.restore(sess, tf.train.latest_checkpoint(str(tmp_path)))
                break
            except tf.errors.UnavailableError:
                assert attempts < 5
                time.sleep(0.2)
        assert path.endswith("-3")
        np.testing.assert_array_equal(sess.run(w), np.full(4, 3.0))
        sess.run(train)
        assert sess.run(step) == 4
        sess.close()
    finally:
        server.stop()


def test_each_ps_writes_and_reads_its_own_shard(tmp_path):
    servers = ServerProcs(cluster_dict(ps=2, worker=1))
    try:
        graph = tf.Graph()
        with graph.as_default():
            with tf.device("/job:ps/task:0"):
                a = tf.Variable(np.arange(1000.0), name="a")
            with tf.device("/job:ps/task:1"):
                b = tf.Variable(np.full((30, 30), 2.0), name="b")
            init = tf.global_variables_initializer()
            saver = tf.train.Saver()
        with tf.Session(servers.target("worker", 0), graph=graph) as sess:
            sess.run(init)
            meta = tf.RunMetadata()
            sess.run(
                saver.saver_def.save_tensor_name,
                {saver.saver_def.filename_tensor_name: str(tmp_path / "m")},
                options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                run_metadata=meta,
            )
            where = {name: dev for name, dev in meta.placement.items() if name.startswith("save/")}
            assert where["save/SaveV2"].startswith("/job:ps/replica:0/task:0")
            assert where["save/SaveV2_1"].startswith("/job:ps/replica:0/task:1")
            assert sorted(p.name for p in tmp_path.glob("m.data-*")) == [
                "m.data-00000-of-00002",
                "m.data-00001-of-00002",
            ]
            sess.run([tf.assign(a, np.zeros(1000)), tf.assign(b, np.zeros((30, 30)))])
            saver.restore(sess, str(tmp_path / "m"))
            np.testing.assert_array_equal(sess.run(a), np.arange(1000.0))
            np.testing.assert_array_equal(sess.run(b), np.full((30, 30), 2.0))
    finally:
        servers.stop()
