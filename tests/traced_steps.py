"""Test helper: a small ps/worker model and traced steps of it on in-process servers.

The model: ``w`` (float32[3,2]) on ``/job:ps/task:0``, ``b`` (float32[2]) on the last ps
task, the ``model`` scope and the optimizer's gradients on ``/job:worker/task:0``. One
training step crosses tasks 6 times: ``w/read`` and ``b/read`` to the worker, the two
gradients back to the ps tasks, and one control edge per ``ApplyGradientDescent`` to the
worker's ``GradientDescent`` NoOp.
"""

import contextlib
import types

import numpy as np

import nbdist as tf
from nbdist.runtime.server_lib import Server
from procs import free_port

CROSSINGS = 6  # _Send/_Recv pairs of one training step of the model


def build_model(ps_tasks=1):
    """A new graph with the model; returns a namespace (graph, x, loss, train, init)."""
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/job:ps/task:0"):
            w = tf.Variable(np.ones((3, 2), np.float32), name="w")
        with tf.device(f"/job:ps/task:{ps_tasks - 1}"):
            b = tf.Variable(np.zeros(2, np.float32), name="b")
        with tf.device("/job:worker/task:0"):
            x = tf.placeholder(tf.float32, [None, 3], name="x")
            with tf.name_scope("model"):
                y = tf.matmul(x, w) + b
                loss = tf.reduce_mean(tf.square(y))
            train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        init = tf.global_variables_initializer()
    return types.SimpleNamespace(graph=graph, x=x, loss=loss, train=train, init=init, w=w, b=b)


@contextlib.contextmanager
def traced_steps(ps_tasks=1):
    """Runs two traced training steps on in-process servers (ps_tasks ps + 1 worker).

    Yields the model namespace with ``first`` (RunMetadata of the first step, which
    registers the partitions) and ``md`` (the second, steady-state step).
    """
    cluster = {
        "ps": [f"localhost:{free_port()}" for _ in range(ps_tasks)],
        "worker": [f"localhost:{free_port()}"],
    }
    servers = [
        Server(cluster, job_name=job, task_index=i) for job in cluster for i in range(len(cluster[job]))
    ]
    model = build_model(ps_tasks)
    try:
        with tf.Session(servers[-1].target, graph=model.graph) as sess:
            sess.run(model.init)
            feed = {model.x: np.ones((4, 3), np.float32)}
            model.first, model.md = tf.RunMetadata(), tf.RunMetadata()
            options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
            sess.run(model.train, feed, options=options, run_metadata=model.first)
            sess.run(model.train, feed, options=options, run_metadata=model.md)
        yield model
    finally:
        for server in servers:
            server.stop()


def traced_in_graph_step(n_ps, n_workers):
    """The `tf.RunMetadata` of one traced step of the demo's in-graph replicated model (a tower per
    worker, gradients averaged on the ps) on `n_ps` + `n_workers` in-process servers."""
    from nbdist.notebook import replicated_training as rt

    cluster = {
        "ps": [f"localhost:{free_port()}" for _ in range(n_ps)],
        "worker": [f"localhost:{free_port()}" for _ in range(n_workers)],
    }
    servers = [
        Server(cluster, job_name=job, task_index=i) for job in cluster for i in range(len(cluster[job]))
    ]
    try:
        model = rt.build_in_graph(n_workers, n_ps)
        feed = {}
        for tower in model["towers"]:
            feed[tower["x"]], feed[tower["y"]] = np.ones((4, 2), np.float32), np.zeros(4, np.int64)
        md = tf.RunMetadata()
        options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
        with model["graph"].as_default(), tf.Session(servers[n_ps].target) as sess:
            sess.run(model["init"])
            sess.run(model["train_op"], feed)  # the traced step is a steady-state one
            sess.run(model["train_op"], feed, options=options, run_metadata=md)
        return md
    finally:
        for server in servers:
            server.stop()
