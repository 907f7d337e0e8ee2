"""Asynchronous between-graph training across real processes: one ps, several worker clients.

Each worker is its own client process running ``examples/async_linear_regression.py`` (the
way TF 1.x tutorials write it: `replica_device_setter`, a chief that initializes, the others
waiting until the model is ready) against server processes on 127.0.0.1.
"""

from pathlib import Path

import numpy as np
import pytest

import nbdist as tf
from procs import REPO, ServerProcs, cluster_dict, run_worker_scripts

SCRIPT = str(Path(REPO) / "examples" / "async_linear_regression.py")


def _final_global_step(procs):
    g = tf.Graph()
    with g.as_default(), tf.device("/job:ps/task:0"):
        gs = tf.train.get_or_create_global_step()  # the same variable (by name) the workers share
        with tf.Session(procs.target("worker", 0)) as sess:
            return int(sess.run(gs))


def _run_workers(procs, steps):
    return run_worker_scripts(SCRIPT, procs, [f"--train_steps={steps}"])


def test_a_control_edge_from_another_task_is_waited_for():
    """An op whose control input comes from another task runs only after it (a `_Recv` of the edge).

    The global step's increment on the ps waits for the update group; before the executor
    checked control inputs of deferred steps it ran at the start of the ps partition.
    """
    procs = ServerProcs(cluster_dict(ps=1, worker=1))
    try:
        g = tf.Graph()
        with g.as_default():
            with tf.device("/job:ps/task:0"):
                v = tf.Variable(np.ones((50, 50), np.float32), name="v")
                counter = tf.Variable(0, name="counter")
            with tf.device("/job:worker/task:0"):
                h = v.value()
                for _ in range(20):
                    h = tf.matmul(h, h) * 0.01  # the worker is busy for a while
                done = tf.reduce_sum(h, name="done")
            with tf.device("/job:ps/task:0"), tf.control_dependencies([done]):
                inc = tf.assign_add(counter, 1, name="inc")
            md = tf.RunMetadata()
            with tf.Session(procs.target("worker", 0)) as sess:
                sess.run(tf.global_variables_initializer())
                sess.run(inc, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=md)
        ops = {n["node_name"]: n for d in md.step_stats.dev_stats for n in d.node_stats}
        recv = next(n for name, n in ops.items() if name.startswith("_recv/ctrl_") and "ps_0" in name)
        assert ops["done"]["end_s"] <= ops["inc"]["start_s"]
        assert recv["end_s"] <= ops["inc"]["start_s"]
    finally:
        procs.stop()


@pytest.mark.slow
@pytest.mark.parametrize(
    "servers", [{"ps": 1, "worker": 2}, {"ps": 2, "worker": 2}, {"ps": 1, "worker": 3}], indirect=True
)
def test_async_linear_regression_converges_and_every_update_lands(servers):
    steps = 400
    results = _run_workers(servers, steps)
    for r in results:
        assert r["local_steps"] > 0, r
        assert r["w_max_error"] < 0.05, r  # 100 features learned to the true weights
        assert r["mean_staleness"] is not None and r["mean_staleness"] >= 0
    # Every worker's update reached the ps: the global step counts each local step once.
    assert _final_global_step(servers) == sum(r["local_steps"] for r in results)
    assert sum(r["local_steps"] for r in results) >= steps


@pytest.mark.slow
def test_a_straggler_computes_from_stale_parameters_and_it_is_reported():
    # Worker 1's task waits 30 ms before each partition (python -m nbdist.server --delay-ms):
    # while it computes, worker 0's updates land, so its gradients are applied stale.
    procs = ServerProcs(cluster_dict(ps=1, worker=2), delays_ms={("worker", 1): 30})
    try:
        results = _run_workers(procs, 300)
    finally:
        procs.stop()
    fast, slow = results
    print("mean staleness, fast / slow worker:", fast["mean_staleness"], slow["mean_staleness"])
    assert slow["mean_staleness"] > 1.0, slow
    assert slow["mean_staleness"] > fast["mean_staleness"], (fast, slow)
    assert slow["local_steps"] < fast["local_steps"]
    assert all(r["w_max_error"] < 0.05 for r in results)  # async still converges here
