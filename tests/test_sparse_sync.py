"""`tf.SparseConditionalAccumulator` and synchronous training of an embedding with it:
the accumulator's merge and per-row mean against real TF, a deterministic sync step against
real TF, and 2-of-2 synchronous training across processes."""

from pathlib import Path

import numpy as np
import pytest

import nbdist as tf
from procs import ServerProcs, cluster_dict, run_worker_scripts

SCRIPT = str(Path(__file__).parent / "train_scripts" / "sync_embedding.py")
TABLE = np.arange(40, dtype=np.float32).reshape(10, 4) / 10.0


pytestmark = pytest.mark.usefixtures("graph")


def test_sparse_accumulator_merges_and_averages_rows_as_tf(tf1):
    grads = [
        ([5, 1, 5], [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]),  # unsorted, a repeat: kept as it came
        ([0, 1, 7], [[1.0, 1.0], [1.0, 1.0], [2.0, 2.0]]),
        ([1, 9], [[4.0, 4.0], [8.0, 8.0]]),
    ]
    results = []
    for lib in (tf, tf1):
        with lib.Graph().as_default():
            acc = lib.SparseConditionalAccumulator(lib.float32, shape=[10, 2], shared_name="acc")
            applies = [acc.apply_grad(idx, np.float32(val), grad_shape=[10, 2]) for idx, val in grads]
            stale = acc.apply_grad([3], np.float32([[9.0, 9.0]]), local_step=-1)
            taken = acc.take_grad(3)
            with lib.Session() as sess:
                for a in [*applies, stale]:
                    sess.run(a)
                count = sess.run(acc.num_accumulated())
                results.append((count, *sess.run(taken)))
    ours, theirs = results
    assert ours[0] == theirs[0] == 3  # the stale one was dropped
    for a, b in zip(ours[1:], theirs[1:]):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_sparse_accumulator_errors():
    acc = tf.SparseConditionalAccumulator(tf.float32, shape=[10, 2])
    bad = acc.apply_grad([12], np.float32([[1.0, 1.0]]))
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError, match="index of slice 0 is 12"):
        sess.run(bad)


def test_a_sync_step_on_an_embedding_matches_tf(tf1):
    """Two replicas' batches per step in one session (no threads), the chief's sync op run by
    hand: the table after three steps equals TF's, and the gradients went through a sparse
    accumulator."""
    batches = [([1, 3, 1], [3, 4, 4]), ([9, 0], [9, 2]), ([2, 2], [5, 1])]
    results = []
    for lib in (tf, tf1):
        with lib.Graph().as_default():
            table = lib.Variable(TABLE, name="table")
            ids = lib.placeholder(lib.int32, [None])
            loss = lib.reduce_sum(lib.square(lib.nn.embedding_lookup(table, ids) - 1.0))
            step = lib.train.get_or_create_global_step()
            opt = lib.train.SyncReplicasOptimizer(lib.train.MomentumOptimizer(0.05, 0.9), 2)
            train = opt.minimize(loss, global_step=step)
            (sync_op,) = opt.get_chief_queue_runner().enqueue_ops
            types = {op.type for op in lib.get_default_graph().get_operations()}
            assert "SparseConditionalAccumulator" in types
            with lib.Session() as sess:
                sess.run([lib.global_variables_initializer(), lib.local_variables_initializer()])
                sess.run([opt.chief_init_op, opt.get_init_tokens_op()])
                for first, second in batches:
                    sess.run(opt.local_step_init_op)
                    sess.run(train, {ids: first})
                    sess.run(train, {ids: second})
                    sess.run(sync_op)
                results.append(sess.run([table, step]))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-6)
    assert results[0][1] == results[1][1] == 3


@pytest.mark.slow
def test_sync_training_of_an_embedding_two_of_two_converges():
    procs = ServerProcs(cluster_dict(ps=1, worker=2))
    try:
        results = run_worker_scripts(SCRIPT, procs, ["--train_steps=150"], timeout_s=150)
    finally:
        procs.stop()
    chief = results[0]
    assert "SparseAccumulatorApplyGradient" in chief["accumulator"], chief
    assert chief["step"] >= 149, chief
    assert chief["table_error"] < 0.01, chief  # the true table, learned from sparse gradients
    assert chief["average_error"] < 0.05, chief  # and its moving average, applied by the chief
