"""Synchronous training across real processes: SyncReplicasOptimizer in MonitoredTrainingSessions.

Each worker is its own client process running ``examples/sync_replicas_training.py`` (the
TF 1.x tutorial pattern: `replica_device_setter`, `SyncReplicasOptimizer`, its session-run
hook, `StopAtStepHook`). TF's non-chief workers hang on the token queue after the chief's
last step; here every worker must exit with status 0, within a bound.
"""

import time
from pathlib import Path

import pytest

import nbdist as tf
from procs import REPO, ServerProcs, cluster_dict, run_worker_scripts

SCRIPT = str(Path(REPO) / "examples" / "sync_replicas_training.py")
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
