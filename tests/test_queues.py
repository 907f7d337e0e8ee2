"""Queues, conditional accumulators and queue runners: blocking ops that wait without a thread each.

Local sessions first (semantics, checked against real TF where it is installed), then a real
ps process: a dequeue that waits there does not stall the server, closing the session cancels
it, and a deadline names the queue.
"""

import sys
import threading
import time

import numpy as np
import pytest

import nbdist as tf

pytestmark = pytest.mark.servers(ps=1, worker=1)  # module_servers: the real ps of the last tests


def _in_thread(fn):
    box = {}

    def run():
        try:
            box["value"] = fn()
        except Exception as e:  # noqa: BLE001 - handed to the test
            box["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, box


# -- FIFOQueue -------------------------------------------------------------------------------------
def test_fifo_order_sizes_and_shapes(graph):
    q = tf.FIFOQueue(10, [tf.float32, tf.int32], shapes=[[2], []])
    enq = q.enqueue_many([np.arange(6, dtype=np.float32).reshape(3, 2), [7, 8, 9]])
    one = q.dequeue()
    two = q.dequeue_many(2)
    assert two[0].shape.as_list() == [2, 2]  # TF's: a constant n is the batch dimension
    with tf.Session() as sess:
        sess.run(enq)
        assert sess.run(q.size()) == 3
        first = sess.run(one)
        np.testing.assert_array_equal(first[0], [0, 1])
        assert first[1] == 7
        rest = sess.run(two)
        np.testing.assert_array_equal(rest[0], [[2, 3], [4, 5]])
        np.testing.assert_array_equal(rest[1], [8, 9])


def test_named_components_come_back_as_a_dict(graph):
    q = tf.FIFOQueue(2, [tf.int32, tf.float32], shapes=[(), ()], names=["label", "x"])
    with tf.Session() as sess:
        sess.run(q.enqueue({"label": 3, "x": 0.5}))
        assert sess.run(q.dequeue()) == {"label": 3, "x": np.float32(0.5)}


def test_dequeue_waits_for_an_enqueue_from_another_thread(graph):
    q = tf.FIFOQueue(3, tf.int32, shapes=())
    x = tf.placeholder(tf.int32, [])
    enq, deq = q.enqueue(x), q.dequeue()
    with tf.Session() as sess:
        t, box = _in_thread(lambda: sess.run(deq))
        time.sleep(0.2)
        assert t.is_alive()  # waiting
        sess.run(enq, {x: 42})
        t.join(10)
        assert box == {"value": 42}


def test_waiting_dequeues_are_served_in_the_order_they_came(graph):
    # As TF's queues: a dequeue that finds another waiting gets in line, even when elements
    # are there. (Otherwise a fast replica takes every token while a slow one waits.)
    q = tf.FIFOQueue(5, tf.int32, shapes=())
    first = q.dequeue()
    with tf.control_dependencies([q.enqueue_many([[7, 8]])]):
        later = q.dequeue()  # arrives just after the elements, in the same step
    with tf.Session() as sess:
        t, box = _in_thread(lambda: sess.run(first))
        time.sleep(0.2)
        assert t.is_alive()  # waiting first
        assert sess.run(later, options=tf.RunOptions(timeout_in_ms=10000)) == 8
        t.join(10)
        assert box == {"value": 7}


def test_dequeues_woken_together_never_both_take_one_element(graph):
    # Several steps waiting on one queue wake at every enqueue; the one served takes its
    # element in the same act as finding it. Before, two could both see one element and the
    # second failed with "closed and has insufficient elements" on a queue never closed.
    q = tf.FIFOQueue(-1, tf.int64, shapes=())
    x = tf.placeholder(tf.int64, [None])
    enq, deq = q.enqueue_many((x,)), q.dequeue()
    consumers, per_consumer = 8, 200
    got, failures = [], []
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: widen any race
    try:
        with tf.Session() as sess:

            def consume():
                for _ in range(per_consumer):
                    try:
                        got.append(int(sess.run(deq, options=tf.RunOptions(timeout_in_ms=30000))))
                    except tf.errors.OpError as e:
                        failures.append(e)
                        return

            threads = [threading.Thread(target=consume, daemon=True) for _ in range(consumers)]
            for t in threads:
                t.start()
            for i in range(consumers * per_consumer):
                sess.run(enq, {x: [i]})
            for t in threads:
                t.join(60)
    finally:
        sys.setswitchinterval(interval)
    assert failures == []
    assert sorted(got) == list(range(consumers * per_consumer))


def test_enqueue_into_a_full_queue_waits_for_room(graph):
    q = tf.FIFOQueue(1, tf.int32, shapes=())
    enq1, enq2, deq = q.enqueue(1), q.enqueue(2), q.dequeue()
    with tf.Session() as sess:
        sess.run(enq1)
        t, box = _in_thread(lambda: sess.run(enq2))
        time.sleep(0.2)
        assert t.is_alive()
        assert sess.run(deq) == 1
        t.join(10)
        assert "error" not in box
        assert sess.run(deq) == 2


def test_a_deadline_names_the_queue_and_its_size(graph):
    q = tf.FIFOQueue(5, tf.float32, shapes=(), name="inputs")
    with tf.Session() as sess, pytest.raises(tf.errors.DeadlineExceededError) as e:
        sess.run(q.dequeue_many(2), options=tf.RunOptions(timeout_in_ms=150))
    assert "2 element(s) from FIFOQueue 'inputs'" in e.value.message
    assert "(0 elements, capacity 5)" in e.value.message


def test_closing_drains_then_raises_out_of_range(graph):
    q = tf.FIFOQueue(5, tf.int32, shapes=())
    with tf.Session() as sess:
        sess.run(q.enqueue_many([[1, 2, 3]]))
        sess.run(q.close())
        assert sess.run(q.is_closed())
        with pytest.raises(tf.errors.CancelledError, match="is closed"):
            sess.run(q.enqueue(4))
        with pytest.raises(
            tf.errors.OutOfRangeError, match=r"insufficient elements \(requested 5, current size 3\)"
        ):
            sess.run(q.dequeue_many(5))
        np.testing.assert_array_equal(sess.run(q.dequeue_up_to(5)), [1, 2, 3])
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(q.dequeue())


def test_close_wakes_a_waiting_dequeue_with_out_of_range(graph):
    q = tf.FIFOQueue(5, tf.int32, shapes=())
    deq, close = q.dequeue(), q.close()
    with tf.Session() as sess:
        t, box = _in_thread(lambda: sess.run(deq))
        time.sleep(0.2)
        sess.run(close)
        t.join(10)
        assert isinstance(box.get("error"), tf.errors.OutOfRangeError)


def test_closing_the_session_cancels_a_waiting_dequeue(graph):
    q = tf.FIFOQueue(5, tf.int32, shapes=())
    deq = q.dequeue()
    sess = tf.Session()
    t, box = _in_thread(lambda: sess.run(deq))
    time.sleep(0.2)
    sess.close()
    t.join(10)
    assert not t.is_alive()
    assert isinstance(box.get("error"), tf.errors.CancelledError)


def test_dequeue_many_needs_known_shapes(graph):
    q = tf.FIFOQueue(5, tf.int32)
    with pytest.raises(ValueError, match="requires the components to have specified shapes"):
        q.dequeue_many(2)


def test_traced_dequeue_spans_its_wait(graph):
    q = tf.FIFOQueue(5, tf.int32, shapes=(), name="q")
    deq, enq = q.dequeue(), q.enqueue(1)
    md = tf.RunMetadata()
    with tf.Session() as sess:
        threading.Timer(0.2, lambda: sess.run(enq)).start()
        options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE, timeout_in_ms=10000)
        sess.run(deq, options=options, run_metadata=md)
    (stat,) = [n for d in md.step_stats.dev_stats for n in d.node_stats if n["node_name"] == "q_Dequeue"]
    assert stat["end_s"] - stat["start_s"] >= 0.15  # the timeline shows the op waiting


# -- RandomShuffleQueue ------------------------------------------------------------------------------
def test_shuffle_queue_keeps_min_after_dequeue_back_until_closed(graph):
    q = tf.RandomShuffleQueue(20, 5, tf.int32, shapes=(), seed=7)
    with tf.Session() as sess:
        sess.run(q.enqueue_many([list(range(10))]))
        got = list(sess.run(q.dequeue_many(5)))
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(q.dequeue(), options=tf.RunOptions(timeout_in_ms=100))  # 5 left = min_after_dequeue
        sess.run(q.close())
        got += list(sess.run(q.dequeue_up_to(10)))
    assert sorted(got) == list(range(10))
    assert got != list(range(10))


def test_shuffle_queue_checks_its_arguments(graph):
    with pytest.raises(ValueError, match="must be less than capacity"):
        tf.RandomShuffleQueue(5, 5, tf.int32)


# -- QueueRunner -----------------------------------------------------------------------------------------
def test_queue_runner_keeps_a_queue_fed_and_ends_when_it_closes(graph):
    counter = tf.Variable(0, name="counter")
    q = tf.FIFOQueue(4, tf.int32, shapes=())
    closed = (tf.errors.OutOfRangeError, tf.errors.CancelledError)  # enqueue after close: Cancelled (TF)
    qr = tf.train.QueueRunner(
        q, [q.enqueue(tf.assign_add(counter, 1))] * 2, queue_closed_exception_types=closed
    )
    tf.train.add_queue_runner(qr)
    deq = q.dequeue()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        threads = tf.train.start_queue_runners(sess)
        assert len(threads) == 2
        got = [sess.run(deq) for _ in range(20)]
        sess.run(q.close(cancel_pending_enqueues=True))
        for t in threads:
            t.join(10)
            assert not t.is_alive()
    assert len(set(got)) == 20 and min(got) >= 1


# -- ConditionalAccumulator ---------------------------------------------------------------------------------
def test_accumulator_averages_fresh_gradients_and_drops_stale_ones(graph):
    acc = tf.ConditionalAccumulator(tf.float32, shape=[2], name="acc")
    g = tf.placeholder(tf.float32, [2])
    step = tf.placeholder(tf.int64, [])
    apply = acc.apply_grad(g, local_step=step)
    take = acc.take_grad(2)
    with tf.Session() as sess:
        assert sess.run(apply.outputs[0], {g: [1, 2], step: 0})
        assert sess.run(apply.outputs[0], {g: [3, 6], step: 0})
        assert sess.run(acc.num_accumulated()) == 2
        np.testing.assert_allclose(sess.run(take), [2, 4])  # the mean; the time step is now 1
        assert not sess.run(apply.outputs[0], {g: [9, 9], step: 0})  # computed at step 0: stale
        assert sess.run(acc.num_dropped()) == 1
        assert sess.run(acc.num_accumulated()) == 0
        sess.run(acc.set_global_step(5))
        assert not sess.run(apply.outputs[0], {g: [1, 1], step: 4})


def test_accumulator_takes_an_int32_step_as_tf_casts_it(graph):
    # Tutorials make an int32 global step (tf.Variable(0, dtype=tf.int32)); SyncReplicas feeds it here.
    acc = tf.ConditionalAccumulator(tf.float32, shape=[], name="acc")
    step = tf.Variable(3, dtype=tf.int32, name="step")
    with tf.Session() as sess:
        sess.run(step.initializer)
        sess.run(acc.set_global_step(step))
        assert not sess.run(acc.apply_grad(1.0, local_step=step - 1).outputs[0])
        assert sess.run(acc.apply_grad(1.0, local_step=step).outputs[0])


def test_take_grad_waits_for_enough_gradients_and_close_ends_it(graph):
    acc = tf.ConditionalAccumulator(tf.float32, shape=[], name="acc")
    take = acc.take_grad(2)
    with tf.Session() as sess:
        t, box = _in_thread(lambda: sess.run(take))
        sess.run(acc.apply_grad(1.0))
        time.sleep(0.2)
        assert t.is_alive()  # one of two
        sess.run(acc.apply_grad(3.0))
        t.join(10)
        assert box == {"value": np.float32(2.0)}
        t, box = _in_thread(lambda: sess.run(take))
        time.sleep(0.1)
        sess.run(acc.close())
        t.join(10)
        assert isinstance(box.get("error"), tf.errors.OutOfRangeError)
    acc2 = tf.ConditionalAccumulator(tf.float32, shape=[], name="acc2")
    with tf.Session() as sess, pytest.raises(tf.errors.DeadlineExceededError) as e:
        sess.run(acc2.take_grad(1), options=tf.RunOptions(timeout_in_ms=50))
    assert "1 gradient(s) in accumulator 'acc2'" in e.value.message
    assert "holds 0 gradient(s) of time step 0" in e.value.message


def test_accumulator_checks_the_gradient_shape(graph):
    acc = tf.ConditionalAccumulator(tf.float32, shape=[2])
    with pytest.raises(ValueError, match="incompatible"):
        acc.apply_grad([1.0, 2.0, 3.0])


# -- against real TensorFlow -----------------------------------------------------------------------------------
def _queue_program(lib):
    g = lib.Graph()
    out = []
    with g.as_default():
        q = lib.FIFOQueue(6, [lib.int32, lib.float32], shapes=[[], [2]])
        enq = q.enqueue_many([[1, 2, 3, 4], np.arange(8, dtype=np.float32).reshape(4, 2)])
        deq, many, up_to, size, close = (
            q.dequeue(),
            q.dequeue_many(2),
            q.dequeue_up_to(3),
            q.size(),
            q.close(),
        )
        acc = lib.ConditionalAccumulator(lib.float32, shape=[2])
        a0 = acc.apply_grad([1.0, 2.0], local_step=0)
        a1 = acc.apply_grad([3.0, 5.0], local_step=0)
        take = acc.take_grad(2)
        a_stale = acc.apply_grad([100.0, 100.0], local_step=0)
        a_fresh = acc.apply_grad([7.0, 9.0], local_step=1)
        take1 = acc.take_grad(1)
        with lib.Session(graph=g) as sess:
            sess.run(enq)
            out += [sess.run(size), sess.run(deq), sess.run(many)]
            sess.run(close)
            out.append(sess.run(up_to))
            try:
                sess.run(deq)
            except lib.errors.OutOfRangeError:
                out.append("OutOfRange")
            sess.run([a0])
            sess.run([a1])
            out.append(sess.run(take))
            sess.run([a_stale])
            sess.run([a_fresh])
            out.append(sess.run(take1))
    return out


@pytest.mark.tf
def test_queue_and_accumulator_semantics_match_tensorflow(tf1):
    ours, theirs = _queue_program(tf), _queue_program(tf1)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        if isinstance(a, (list, tuple)):
            for x, y in zip(a, b):
                np.testing.assert_allclose(x, y)
        elif isinstance(a, str):
            assert a == b
        else:
            np.testing.assert_allclose(a, b)


# -- on a real ps --------------------------------------------------------------------------------------------
def _remote_queue(name):
    with tf.device("/job:ps/task:0"):
        q = tf.FIFOQueue(10, tf.int32, shapes=(), shared_name=name, name=name)
        v = tf.Variable(1.0, name=f"{name}_v")
    return q, v


def test_a_dequeue_waiting_on_the_ps_does_not_stall_it(module_servers, graph):
    q, v = _remote_queue("q1")
    deq = q.dequeue()
    x = tf.placeholder(tf.int32, [])
    enq = q.enqueue(x)
    waiter = tf.Session(module_servers.target("worker", 0))
    t, box = _in_thread(lambda: waiter.run(deq))
    try:
        with tf.Session(module_servers.target("worker", 0)) as other:
            other.run(v.initializer)
            started = time.monotonic()
            for _ in range(20):  # other steps on the ps go on while the dequeue waits there
                other.run(v.assign_add(1.0))
            assert time.monotonic() - started < 10
            assert t.is_alive()
            other.run(enq, {x: 5})
        t.join(10)
        assert box == {"value": 5}
    finally:
        waiter.close()


def test_closing_a_remote_session_cancels_its_waiting_dequeue(module_servers, graph):
    q, _ = _remote_queue("q2")
    deq = q.dequeue()
    sess = tf.Session(module_servers.target("worker", 0))
    sess.run(q.size())  # the session exists on the master
    t, box = _in_thread(lambda: sess.run(deq))
    time.sleep(0.3)
    closed = time.monotonic()
    sess.close()
    t.join(10)
    assert not t.is_alive() and time.monotonic() - closed < 5
    assert isinstance(box.get("error"), tf.errors.CancelledError), box
    with tf.Session(module_servers.target("worker", 0)) as again:  # the server is fine
        assert again.run(q.size()) == 0


def test_a_remote_deadline_names_the_queue_on_its_task(module_servers, graph):
    q, _ = _remote_queue("q3")
    with (
        tf.Session(module_servers.target("worker", 0)) as sess,
        pytest.raises(tf.errors.DeadlineExceededError) as e,
    ):
        sess.run(q.dequeue(), options=tf.RunOptions(timeout_in_ms=300))
    assert "FIFOQueue 'q3' on /job:ps/replica:0/task:0" in e.value.message
    with tf.Session(module_servers.target("worker", 0)) as again:  # the server stays healthy
        assert again.run(q.size()) == 0
