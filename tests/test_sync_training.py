"""Synchronous training across real processes: SyncReplicasOptimizer in MonitoredTrainingSessions.

Each worker is its own client process running ``examples/sync_replicas_training.py`` (the
TF 1.x tutorial pattern: `replica_device_setter`, `SyncReplicasOptimizer`, its session-run
hook, `StopAtStepHook`). TF's non-chief workers hang on the token queue after the chief's
last step; here every worker must exit with status 0, within a bound.
"""

import json
import re
import signal
import time
from pathlib import Path

import pytest

import nbdist as tf
from procs import REPO, LoggedProcs, ServerProcs, cluster_dict, run_worker_scripts, wait_gone

SCRIPT = str(Path(REPO) / "examples" / "sync_replicas_training.py")
MTS_SCRIPT = Path(__file__).parent / "train_scripts" / "sync_mts.py"  # one process per task
EXIT_BOUND_S = 120  # generous for a loaded 2-core machine; the point is "not never"


def _train(procs, replicas_to_aggregate, steps):
    args = [f"--replicas_to_aggregate={replicas_to_aggregate}", f"--train_steps={steps}"]
    return run_worker_scripts(SCRIPT, procs, args, timeout_s=EXIT_BOUND_S)


def _ps_counts(procs):
    """Global step and the accumulator's dropped count, read on the ps by a fresh client."""
    g = tf.Graph()
    with g.as_default(), tf.device("/job:ps/task:0"):
        gs = tf.train.get_or_create_global_step()
        acc = tf.ConditionalAccumulator(tf.float32, shape=[100, 1], shared_name="w:0/grad_accum")
        with tf.Session(procs.target("ps", 0)) as sess:
            return sess.run([gs, acc.num_dropped()])


@pytest.mark.slow
@pytest.mark.parametrize(("workers", "aggregate"), [(2, 2), (3, 2)])
def test_sync_training_converges_and_every_worker_exits(workers, aggregate):
    procs = ServerProcs(cluster_dict(ps=1, worker=workers))
    try:
        steps = 150
        results = _train(procs, aggregate, steps)
        global_step, dropped_on_ps = _ps_counts(procs)
    finally:
        procs.stop()
    chief = results[0]
    assert chief["w_max_error"] < 0.05, chief  # the true weights, learned synchronously
    assert global_step >= steps
    # What each worker was told was dropped is what the accumulator dropped: nothing is lost
    # silently (every applied gradient was either accepted into a step or counted as dropped).
    assert sum(r["dropped"] for r in results) == dropped_on_ps
    # Each step takes the mean of at least `aggregate` fresh gradients (all that arrived in
    # time, as TF's take_grad does); a last one may still sit in the accumulator.
    accepted = sum(r["local_steps"] - r["dropped"] for r in results)
    assert aggregate * global_step <= accepted <= workers * global_step + workers
    if workers > aggregate:  # a backup worker: late gradients exist and are reported
        assert dropped_on_ps > 0


# -- a worker that stops hands back its token ------------------------------------------------------
def _replica(cluster, task_index, total, aggregate=2):
    """One worker's graph of a 2-of-`total` synchronous job, as its own client builds it."""
    graph = tf.Graph()
    with (
        graph.as_default(),
        tf.device(
            tf.train.replica_device_setter(worker_device=f"/job:worker/task:{task_index}", cluster=cluster)
        ),
    ):
        global_step = tf.train.get_or_create_global_step()
        w = tf.get_variable("w", [3, 1], initializer=tf.zeros_initializer())
        loss = tf.reduce_mean(tf.square(tf.matmul(tf.ones([4, 3]), w) - 1.0))
        opt = tf.train.SyncReplicasOptimizer(
            tf.train.GradientDescentOptimizer(0.1), replicas_to_aggregate=aggregate, total_num_replicas=total
        )
        train_op = opt.minimize(loss, global_step=global_step)
        hook = opt.make_session_run_hook(is_chief=task_index == 0)
    return graph, train_op, global_step, hook


def _session(procs, graph, task_index, hook):
    with graph.as_default():
        return tf.train.MonitoredTrainingSession(
            master=procs.target("worker", task_index), is_chief=task_index == 0, hooks=[hook]
        )


def _wait_for_step(sess, global_step, step, timeout_s=30):
    deadline = time.monotonic() + timeout_s
    while sess.run(global_step) < step:
        assert time.monotonic() < deadline, f"global step {step} not reached in {timeout_s} s"
        time.sleep(0.01)


@pytest.mark.slow
def test_workers_that_stop_hand_back_their_tokens_so_the_chief_is_not_left_waiting():
    """The end-of-training hang of notebook 06, step by step (2 of 3 replicas).

    Both other workers take a token of the last step and stop (as `StopAtStepHook` makes them
    when they see the last global step). The chief, whose run began before that step, starts
    one run more: it applies its gradient and needs a token. Without the tokens handed back
    it waits for ever (in TF too): one gradient of the two a step needs can come, no token.
    """
    procs = ServerProcs(cluster_dict(ps=1, worker=3))
    bound = tf.RunOptions(timeout_in_ms=20000)  # a hang fails the test, naming the token queue
    try:
        cluster = tf.train.ClusterSpec(procs.cluster)
        replicas = [_replica(cluster, i, total=3) for i in range(3)]
        chief = _session(procs, replicas[0][0], 0, replicas[0][3])  # init, 2 tokens of step 0
        train_op, global_step = replicas[0][1], replicas[0][2]
        others = [_session(procs, g, i, hook) for i, (g, _, _, hook) in enumerate(replicas) if i]
        for (_, op, _, _), sess in zip(replicas[1:], others):
            sess.run(op, options=bound)  # gradients of step 0; both tokens of step 0 taken
        _wait_for_step(chief, global_step, 1)  # the chief's queue runner applied them: 3 tokens
        for (_, op, _, _), sess in zip(replicas[1:], others):
            sess.run(op, options=bound)  # stale gradients (dropped); two tokens of step 1 taken
        for sess in others:
            sess.close()  # they stop, each holding a token of step 1
        for _ in range(3):  # gradient of step 0 (dropped), then two of step 1: a step of its own
            chief.run(train_op, options=bound)
        assert chief.run(global_step) == 2
        chief.close()
    finally:
        procs.stop()


def test_closing_between_take_and_enqueue_ends_the_chiefs_queue_runner_quietly():
    # The chief closes the sync machinery when it stops; its queue runner may be past take_grad,
    # about to enqueue the new tokens. That enqueue meets a closed queue (CancelledError): a
    # clean end, not an error for the chief's Coordinator (which would fail its session's close).
    graph = tf.Graph()
    with graph.as_default():
        global_step = tf.train.get_or_create_global_step()
        w = tf.Variable(tf.zeros([2]), name="w")
        opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), replicas_to_aggregate=1)
        train_op = opt.minimize(tf.reduce_sum(tf.square(w - 1.0)), global_step=global_step)
        close_tokens = graph.get_operation_by_name("sync_replicas/sync_token_q_Close")  # the token queue only
        with tf.Session() as sess:
            sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
            sess.run(opt.chief_init_op)
            coord = tf.train.Coordinator()
            threads = opt.get_chief_queue_runner().create_threads(sess, coord=coord, daemon=True, start=True)
            sess.run(close_tokens)
            with pytest.raises(tf.errors.OutOfRangeError, match="sync_token_q"):
                sess.run(train_op)  # its gradient goes in; the queue runner takes it, then enqueues
            deadline = time.monotonic() + 10
            while sess.run(global_step) < 1 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert sess.run(global_step) == 1  # the step was applied before the enqueue failed
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=10)  # raises the thread's error, if any


# -- faults under MonitoredTrainingSession(checkpoint_dir=...), tutorial-style processes -------------
@pytest.fixture
def clients(tmp_path):
    c = LoggedProcs(tmp_path)
    yield c
    c.stop()


def _latest_step(checkpoint_dir):
    path = tf.train.latest_checkpoint(checkpoint_dir)
    return int(path.rsplit("-", 1)[1]) if path else -1


def _start_sync_job(clients, tmp_path, last_step, max_wait_secs):
    """A ps and two workers of a 2-of-2 synchronous job, each its own `sync_mts.py` process;
    the non-chief starts once the chief trains. Returns the cluster (JSON) and the checkpoint dir."""
    cluster, ckpt = json.dumps(cluster_dict(ps=1, worker=2)), str(tmp_path / "ckpt")
    clients.start("ps", MTS_SCRIPT, cluster, "ps", 0)
    clients.wait_for("ps", "ps ready", 30)
    for i in (0, 1):
        clients.start(f"w{i}", MTS_SCRIPT, cluster, "worker", i, ckpt, last_step, 0.02, max_wait_secs)
        clients.wait_steps(f"w{i}", 1, 60)
    return cluster, ckpt


@pytest.mark.slow
def test_sync_training_resumes_from_the_latest_checkpoint_after_a_ps_restart(clients, tmp_path):
    """Issue 36 §3: kill -9 the ps, restart it 2 s later. As TF's, the chief logs its queue
    runner's error when it closes the session and restores the latest checkpoint; the other
    worker waits for it; both train on to the last step (before: the chief exited with the
    queue runner's UnavailableError, the other gave up after max_wait_secs)."""
    last_step = 60
    cluster, ckpt = _start_sync_job(clients, tmp_path, last_step, max_wait_secs=60)
    deadline = time.monotonic() + 60
    while _latest_step(ckpt) < 10:
        assert time.monotonic() < deadline, "no checkpoint at step >= 10 within 60 s"
        time.sleep(0.02)
    ps = clients.procs["ps"][0]
    ps.send_signal(signal.SIGKILL)
    assert wait_gone([ps.pid], 10)
    restored = tf.train.latest_checkpoint(ckpt)  # the ps wrote the checkpoints: this is the last
    k = int(restored.rsplit("-", 1)[1])
    time.sleep(2)
    clients.start("ps2", MTS_SCRIPT, cluster, "ps", 0)
    for i in (0, 1):
        assert clients.wait_exit(f"w{i}", 90) == 0, clients.text(f"w{i}")[-3000:]
    chief, other = clients.text("w0"), clients.text("w1")
    assert f"Restoring parameters from {restored}" in chief
    _, recovered, after = chief.partition("Recovered: a new session was created")
    assert recovered, chief[-3000:]
    steps_after = [int(s) for s in re.findall(r"^step (\d+)$", after, re.M)]
    # From the checkpoint: not from 0, not from where the ps died (the other worker's two
    # gradients of the first tokens may come before the chief's first read).
    assert k <= steps_after[0] <= k + 2, (k, steps_after[:5])
    assert "Recovered: a new session was created" in other
    assert "done task=0" in chief and "done task=1" in other
    assert _latest_step(ckpt) >= last_step


@pytest.mark.slow
def test_a_sync_worker_whose_chief_is_gone_ends_within_max_wait_secs_naming_it(clients, tmp_path):
    """Issue 36 §4: kill the chief (task and client: one process) and do not restart it. The
    other worker waits in its token dequeue (as TF's, which waits there for ever) for at most
    max_wait_secs, then ends with an error naming the chief's task."""
    max_wait_secs = 4
    _start_sync_job(clients, tmp_path, 100000, max_wait_secs)
    clients.wait_steps("w1", 5, 60)
    chief = clients.procs["w0"][0]
    chief.send_signal(signal.SIGKILL)
    assert wait_gone([chief.pid], 10)
    killed = time.monotonic()
    assert clients.wait_exit("w1", max_wait_secs + 20) == 3, clients.text("w1")[-3000:]
    took_s = time.monotonic() - killed
    error = clients.wait_for("w1", r"^error .*", 1).group(0)
    # The step's own error (whichever task's deadline came first) follows what it waited for.
    assert re.match(
        r"error DeadlineExceededError: No step succeeded in 4\.\d s \(max_wait_secs=4\); this worker's steps "
        r"wait for the chief, /job:worker/task:0 \(is it running\?\)\. The last error: .*sync_token_q",
        error,
    ), error
    assert max_wait_secs - 1 < took_s < max_wait_secs + 10, took_s
