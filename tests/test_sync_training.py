"""Synchronous training across real processes: SyncReplicasOptimizer in MonitoredTrainingSessions.

Each worker is its own client process running ``examples/sync_replicas_training.py`` (the
TF 1.x tutorial pattern: `replica_device_setter`, `SyncReplicasOptimizer`, its session-run
hook, `StopAtStepHook`). TF's non-chief workers hang on the token queue after the chief's
last step; here every worker must exit with status 0, within a bound.
"""

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
