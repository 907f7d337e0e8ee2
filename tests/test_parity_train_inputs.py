"""`tf.train`'s queue-based input helpers that nbdist had but no test used (`input_producer`,
`shuffle_batch_join`, `maybe_batch_join`, `maybe_shuffle_batch`, `maybe_shuffle_batch_join`),
run with their queue runners as TF 1.x programs run them, with both libraries: the same
batches (as multisets where TF shuffles), dtypes, static shapes and errors.
"""

import numpy as np
import pytest

import nbdist as tf

ROWS = np.arange(12, dtype=np.float32).reshape(6, 2)
IDS = np.arange(6, dtype=np.int64)


def _drain(lib, build, runs):
    """`build(lib)`'s fetch run `runs` times under the queue runners; its static dtypes/shapes."""
    with lib.Graph().as_default():
        fetch = build(lib)
        flat = fetch if isinstance(fetch, (list, tuple)) else [fetch]
        static = [(f.dtype.name, f.shape.as_list()) for f in flat]
        with lib.Session() as sess:
            sess.run([lib.global_variables_initializer(), lib.local_variables_initializer()])
            coord = lib.train.Coordinator()
            threads = lib.train.start_queue_runners(sess, coord=coord)
            try:
                got = [sess.run(fetch) for _ in range(runs)]
                with pytest.raises(lib.errors.OutOfRangeError):
                    sess.run(fetch)
            finally:
                coord.request_stop()
                coord.join(threads, stop_grace_period_secs=5)
    return static, got


def _multiset(batches):
    """Every (row of a batch) as a sorted list, whatever the batches' order (TF shuffles)."""
    rows = []
    for batch in batches:
        parts = batch if isinstance(batch, (list, tuple)) else [batch]
        rows += [tuple(np.asarray(p[i]).ravel().tolist() for p in parts) for i in range(len(parts[0]))]
    return sorted(rows)


def test_input_producer_yields_the_rows_epoch_by_epoch(tf1):
    def build(lib):
        q = lib.train.input_producer(lib.constant(ROWS), num_epochs=2, shuffle=False, capacity=4)
        assert isinstance(q, lib.QueueBase)
        return q.dequeue_many(3)

    ours, theirs = _drain(tf, build, 4), _drain(tf1, build, 4)
    assert ours[0] == theirs[0] == [("float32", [3, 2])]
    for a, b in zip(ours[1], theirs[1], strict=True):
        np.testing.assert_array_equal(a, b)


def test_input_producer_shuffled_keeps_each_epochs_rows(tf1):
    def build(lib):
        return lib.train.input_producer(lib.constant(IDS), num_epochs=1, shuffle=True, seed=3).dequeue_many(6)

    ours, theirs = _drain(tf, build, 1), _drain(tf1, build, 1)
    assert sorted(ours[1][0].tolist()) == sorted(theirs[1][0].tolist()) == IDS.tolist()


def test_input_producer_rejects_a_scalar_as_tensorflow(tf1):
    for lib in (tf, tf1):
        with lib.Graph().as_default(), pytest.raises(ValueError, match="rank"):
            lib.train.input_producer(lib.constant(1.0))


def _sliced(lib, shuffle=True):
    rows, ids = lib.train.slice_input_producer(
        [lib.constant(ROWS), lib.constant(IDS)], num_epochs=1, shuffle=shuffle
    )
    return rows, ids


def test_shuffle_batch_join_mixes_the_readers_rows(tf1):
    def build(lib):
        first, second = _sliced(lib), _sliced(lib)
        return lib.train.shuffle_batch_join(
            [list(first), list(second)], batch_size=4, capacity=16, min_after_dequeue=2, seed=1
        )

    ours, theirs = _drain(tf, build, 3), _drain(tf1, build, 3)
    assert ours[0] == theirs[0] == [("float32", [4, 2]), ("int64", [4])]
    assert _multiset(ours[1]) == _multiset(theirs[1])


def test_maybe_batch_join_keeps_the_rows_it_is_told_to(tf1):
    def build(lib):
        rows, ids = _sliced(lib, shuffle=False)
        keep = lib.equal(ids % 2, 0)
        return lib.train.maybe_batch_join([[rows, ids]], keep, batch_size=3)

    ours, theirs = _drain(tf, build, 1), _drain(tf1, build, 1)
    assert ours[0] == theirs[0] == [("float32", [3, 2]), ("int64", [3])]
    assert _multiset(ours[1]) == _multiset(theirs[1])


def test_maybe_shuffle_batch_enqueue_many_keeps_by_a_vector(tf1):
    def build(lib):
        rows, ids = lib.constant(ROWS), lib.constant(IDS)
        keep = lib.constant([True, False, True, True, False, True])
        batch = lib.train.maybe_shuffle_batch(
            [rows, ids], 2, capacity=8, min_after_dequeue=0, keep_input=keep, enqueue_many=True, seed=2
        )
        return batch

    # enqueue_many with a constant enqueues the same 4 kept rows on every run: no end; take 2 batches
    def drain(lib):
        with lib.Graph().as_default():
            fetch = build(lib)
            with lib.Session() as sess:
                coord = lib.train.Coordinator()
                threads = lib.train.start_queue_runners(sess, coord=coord)
                got = [sess.run(fetch) for _ in range(2)]
                coord.request_stop()
                sess.run(lib.get_default_graph().get_collection(lib.GraphKeys.QUEUE_RUNNERS)[0].cancel_op)
                coord.join(threads, stop_grace_period_secs=5)
                return [(f.dtype.name, f.shape.as_list()) for f in fetch], got

    ours, theirs = drain(tf), drain(tf1)
    assert ours[0] == theirs[0] == [("float32", [2, 2]), ("int64", [2])]
    for got in (ours[1], theirs[1]):
        assert {r[1][0] for r in _multiset(got)} <= {0, 2, 3, 5}


def test_maybe_shuffle_batch_join_drops_the_rows_not_kept(tf1):
    def build(lib):
        first = _sliced(lib)
        keep = lib.less(first[1], 3)  # one decision for the (here: the same) lists of a run
        return lib.train.maybe_shuffle_batch_join(
            [list(first), list(first)], 3, capacity=12, min_after_dequeue=1, keep_input=keep, seed=5
        )

    for lib in (tf, tf1):
        with lib.Graph().as_default():
            fetch = build(lib)
            assert [(f.dtype.name, f.shape.as_list()) for f in fetch] == [("float32", [3, 2]), ("int64", [3])]
            with lib.Session() as sess:
                sess.run(lib.local_variables_initializer())
                coord = lib.train.Coordinator()
                threads = lib.train.start_queue_runners(sess, coord=coord)
                batches = [sess.run(fetch)]
                coord.request_stop()
                coord.join(threads, stop_grace_period_secs=5)
        assert all(i < 3 for _, (i,) in _multiset(batches))


def test_batch_joins_reject_mixed_types_and_a_vector_keep_input_as_tensorflow(tf1):
    for lib in (tf, tf1):
        with lib.Graph().as_default():
            a, b = lib.constant(1.0), lib.constant(2)
            with pytest.raises(TypeError, match="Expected types to be consistent"):
                lib.train.shuffle_batch_join([[a], [b]], 2, 8, 1)
            with pytest.raises(ValueError, match="cannot be a vector when `enqueue_many=False`"):
                lib.train.maybe_batch_join([[a]], lib.constant([True]), 2)
