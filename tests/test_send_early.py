"""A task sends what another task waits for before it runs the ops only it needs.

A plan orders the subgraphs of its `_Send`s before its fetches' and other targets'; a run's
first pass pushes the tensors queued for tasks other than the master's as soon as it is past
its last `_Send`, instead of after every op behind it. In-graph training is the case: the ps
sends the variables to every tower, then runs Adam's constants and reads. Three in-process
servers on 127.0.0.1.
"""

import time

import numpy as np
import pytest

import nbdist as tf
from nbdist.graph.graph_def import NodeDef
from nbdist.runtime.plan_compiler import prune_and_sort

W1 = "/job:worker/replica:0/task:1/device:CPU:0"
SLOW_S = 0.5


@pytest.fixture
def servers():
    """ps:0, worker:0 (the master), worker:1, in this process; stopped after the test."""
    from nbdist.runtime.server_lib import Server
    from procs import free_port

    spec = {"ps": [f"localhost:{free_port()}"], "worker": [f"localhost:{free_port()}" for _ in range(2)]}
    started = [Server(spec, job_name=job, task_index=i) for job in spec for i in range(len(spec[job]))]
    yield {s.server_def.job_name + str(s.server_def.task_index): s for s in started}
    for s in started:
        s.stop()


def test_a_plan_runs_its_sends_subgraphs_before_its_fetches_and_other_targets():
    nodes = [
        NodeDef("v", "Const", [], attr={"value": np.float32(1)}, output=[(tf.float32, tf.TensorShape([]))]),
        NodeDef("slow", "Neg", ["v"], output=[(tf.float32, tf.TensorShape([]))]),
        NodeDef("other", "NoOp", ["^v"]),
        NodeDef("read", "Identity", ["v"], output=[(tf.float32, tf.TensorShape([]))]),
        NodeDef("_send/read", "_Send", ["read"], attr={"recv_device": W1, "key": "k"}),
    ]
    order = prune_and_sort({n.name: n for n in nodes}, set(), ["slow:0"], ["other", "_send/read"])
    assert [n.name for n in order] == ["v", "read", "_send/read", "slow", "other"]


def test_the_ps_sends_a_variable_to_another_worker_before_its_slow_ops_run(servers):
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(np.arange(3, dtype=np.float32), name="v")

            def slow():
                time.sleep(SLOW_S)
                return np.float64(time.monotonic())

            slow_end = tf.py_func(slow, [], tf.float64, name="slow")
        with tf.device("/job:worker/task:1"):
            seen = tf.py_func(
                lambda x: np.float64(time.monotonic()), [v.read_value()], tf.float64, name="seen"
            )
    with tf.Session(servers["worker0"].target, graph=graph) as sess:
        sess.run(v.initializer)
        got_seen, got_slow_end = sess.run([seen, slow_end])
    # worker 1 ran its op with the variable's value while the ps was still in its slow op
    assert got_seen < got_slow_end - SLOW_S / 2, (got_seen, got_slow_end)
