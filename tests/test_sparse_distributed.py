"""Sparse training across real processes: an embedding table on the ps, a worker touching
8 of its rows per step. What crosses the wire is proportional to the touched rows, measured
from the step's trace (the bytes of every `_Send` between tasks), not assumed."""

import numpy as np
import pytest

import nbdist as tf

pytestmark = [pytest.mark.slow, pytest.mark.servers(ps=1, worker=1)]

ROWS, DIM = 10_000, 16
TABLE_NBYTES = ROWS * DIM * 4
BATCHES = [[3, 17, 17, 9_999, 512, 4_096, 3, 77], [5, 17, 8_000, 9_001, 2, 2, 640, 1_234]]


def _embedding_model(make_optimizer, dense_gradient=False):
    """A 10000x16 float32 table on the ps; a worker looks 8 ids up and trains on them."""
    with tf.device("/job:ps/task:0"):
        # Computed on the ps (a small graph, the same values in every session and process).
        initial = tf.floormod(tf.cast(tf.range(ROWS * DIM), tf.float32), 97.0) / 97.0
        table = tf.Variable(tf.reshape(initial, [ROWS, DIM]), name="table")
    with tf.device("/job:worker/task:0"):
        ids = tf.placeholder(tf.int32, [8], name="ids")
        rows = tf.nn.embedding_lookup(table, ids)
        loss = tf.reduce_sum(tf.square(rows - 1.0))
        opt = make_optimizer()
        grads_and_vars = opt.compute_gradients(loss, [table])
        if dense_gradient:  # the control: what the same step costs with a dense gradient
            grads_and_vars = [(tf.convert_to_tensor(g), v) for g, v in grads_and_vars]
        train_op = opt.apply_gradients(grads_and_vars)
    return table, ids, train_op


def _bytes_sent(run_metadata):
    """The bytes of every tensor one task sent another during the traced step."""
    return sum(
        t["bytes"] for dev in run_metadata.step_stats.dev_stats for t in dev.transfers if t["op"] == "_Send"
    )


def _train(target, make_optimizer, dense_gradient=False):
    """Trains on BATCHES (the last step traced); returns the table and the traced step's bytes."""
    with tf.Graph().as_default():
        table, ids, train_op = _embedding_model(make_optimizer, dense_gradient)
        with tf.Session(target) as sess:
            sess.run(tf.global_variables_initializer())
            for batch in BATCHES[:-1]:
                sess.run(train_op, {ids: batch})
            md = tf.RunMetadata()
            options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
            sess.run(train_op, {ids: BATCHES[-1]}, options=options, run_metadata=md)
            return sess.run(table), md


@pytest.mark.parametrize(
    "make_optimizer",
    [
        lambda: tf.train.GradientDescentOptimizer(0.1),
        lambda: tf.train.MomentumOptimizer(0.1, 0.9),
        lambda: tf.train.AdamOptimizer(0.01),
    ],
    ids=["gd", "momentum", "adam"],
)
def test_a_sparse_step_sends_the_touched_rows_not_the_table(module_servers, make_optimizer):
    remote_table, md = _train(module_servers.target("worker", 0), make_optimizer)
    local_table, _ = _train("", make_optimizer)
    np.testing.assert_array_equal(remote_table, local_table)
    sent = _bytes_sent(md)
    # 8 rows of 16 float32 forward (512 B) and back (512 B), 8 indices, the table's shape.
    assert 0 < sent < 0.05 * TABLE_NBYTES, f"{sent} bytes crossed for a {TABLE_NBYTES}-byte table"
    assert sent < 2_000, f"{sent} bytes: more than the touched rows' values and indices"


def test_the_same_step_with_a_dense_gradient_sends_the_whole_table(module_servers):
    _, md = _train(module_servers.target("worker", 0), lambda: tf.train.GradientDescentOptimizer(0.1), True)
    assert _bytes_sent(md) >= TABLE_NBYTES  # the measurement sees a dense gradient's bytes
