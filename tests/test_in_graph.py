"""`tf.train.in_graph`: towers on worker tasks, gradients averaged where the variables live."""

import numpy as np
import pytest

import nbdist as tf
from nbdist.runtime.server_lib import Server
from procs import free_port

STEPS = 5
RNG = np.random.default_rng(7)
XS = RNG.normal(size=(2, 8, 3)).astype(np.float32)  # one batch of 8 per tower
YS = RNG.normal(size=(2, 8, 1)).astype(np.float32)


def build(num_towers=2, ps_tasks=1):
    """The replicated model in a new graph: returns (graph, replicas, feed, variables)."""
    graph = tf.Graph()
    with graph.as_default():
        placeholders = []

        def model(i):
            x = tf.placeholder(tf.float32, [None, 3], name="x")
            y = tf.placeholder(tf.float32, [None, 1], name="y")
            placeholders.append((x, y))
            w = tf.get_variable("w", [3, 1], initializer=tf.constant_initializer(0.5))
            b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
            return {"loss": tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y)), "x": x}

        step = tf.train.get_or_create_global_step()
        replicas = tf.train.in_graph.replicate(
            model, tf.train.GradientDescentOptimizer(0.1), num_towers, global_step=step, ps_tasks=ps_tasks
        )
        init = tf.global_variables_initializer()
    feed = {p: XS[i] if j == 0 else YS[i] for i, pair in enumerate(placeholders) for j, p in enumerate(pair)}
    return graph, replicas, feed, init


def train(target, graph, replicas, feed, init):
    with graph.as_default(), tf.Session(target) as sess:
        sess.run(init)
        for _ in range(STEPS):
            sess.run(replicas.train_op, feed)
        names = ["w", "b", "global_step"]
        return dict(zip(names, sess.run([graph.get_tensor_by_name(f"{n}:0") for n in names])))


def test_towers_go_to_their_workers_and_the_update_to_the_ps():
    graph, replicas, _, _ = build(num_towers=2, ps_tasks=2)
    w, b = (graph.get_operation_by_name(n) for n in ("w", "b"))
    assert {w.device, b.device} == {"/job:ps/task:0", "/job:ps/task:1"}  # round robin
    for i, loss in enumerate(replicas.losses):
        assert loss.device == f"/job:worker/task:{i}" and loss.op.name.startswith(f"tower_{i}/")
    for grad, var in replicas.grads:  # averaged on the variable's ps, not on a worker
        assert grad.op.colocation_groups() == var.op.colocation_groups()
    assert (
        len([v for v in graph.get_collection(tf.GraphKeys.GLOBAL_VARIABLES) if "global_step" not in v.name])
        == 2
    )


def test_the_averaged_step_is_one_step_on_the_whole_batch():
    graph, replicas, feed, init = build()
    got = train("", graph, replicas, feed, init)
    # The same model on all 16 examples at once (equal tower batches: the mean of the tower
    # means is the mean over the whole batch, so the gradients agree).
    w, b = np.full((3, 1), 0.5, np.float32), np.zeros(1, np.float32)
    x, y = XS.reshape(16, 3), YS.reshape(16, 1)
    for _ in range(STEPS):
        err = x @ w + b - y
        w, b = w - 0.1 * (2 * x.T @ err / 16), b - 0.1 * (2 * err.mean(0))
    np.testing.assert_allclose(got["w"], w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["b"], b, rtol=1e-5, atol=1e-6)
    assert got["global_step"] == STEPS


@pytest.mark.slow
def test_two_worker_tasks_give_the_result_of_the_local_graph():
    cluster = {"ps": [f"localhost:{free_port()}"], "worker": [f"localhost:{free_port()}" for _ in range(2)]}
    servers = [Server(cluster, job_name=j, task_index=i) for j in cluster for i in range(len(cluster[j]))]
    try:
        distributed = train(servers[1].target, *build())
    finally:
        for s in servers:
            s.stop()
    local = train("", *build())
    for name in local:
        np.testing.assert_allclose(distributed[name], local[name], rtol=1e-6, atol=1e-7)


def test_towers_must_share_their_variables():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="must use the same variables"):
            tf.train.in_graph.replicate(
                lambda i: tf.reduce_sum(tf.Variable(1.0) * 2.0), tf.train.GradientDescentOptimizer(0.1), 2
            )
        with pytest.raises(ValueError, match=r"must return its loss tensor"):
            tf.train.in_graph.replicate(lambda i: None, tf.train.GradientDescentOptimizer(0.1), 1)
        with pytest.raises(ValueError, match="num_towers >= 1"):
            tf.train.in_graph.replicate(lambda i: None, tf.train.GradientDescentOptimizer(0.1), 0)
