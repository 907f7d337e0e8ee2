"""Partitions that wait only for what notifies them run on the server's I/O thread, parked while they wait.

A `_Recv` (woken by the rendezvous) and queue and accumulator ops (woken by their resource
manager) declare that they `park`: a quick partition whose waits all park is run by
`WorkerService.start_graph` on the I/O thread and, while it waits, parked instead of
blocking a thread. Arrivals, queue changes, aborts, the step's deadline and a periodic
re-check advance it again. In-process servers on 127.0.0.1.
"""

import re
import threading
import time

import numpy as np
import pytest

import nbdist as tf
from nbdist.runtime import worker
from traced_steps import build_model


@pytest.fixture(autouse=True)
def _partitions_run_inline(monkeypatch):
    # Whether a partition is quick enough to run inline is the machine's business; here it is.
    monkeypatch.setattr(worker, "INLINE_RUN_S", 10.0)


def _train(target, model, steps):
    """Trains `model` for `steps` in a session on `target` ("": a local session)."""
    feed = {model.x: np.ones((4, 3), np.float32)}
    with tf.Session(target, graph=model.graph) as sess:
        sess.run(model.init)
        for _ in range(steps):
            sess.run(model.train, feed)
        return sess.run([model.w, model.b, model.loss], feed)


def test_training_steps_park_on_the_io_thread_and_compute_what_a_local_session_does(in_process_servers):
    model = build_model()
    remote = _train(in_process_servers["worker"].target, model, 10)
    local = _train("", build_model(), 10)
    for got, want in zip(remote, local, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    # The first run of a signature goes to the pool; later ones run inline and park.
    assert in_process_servers["ps"].worker.steps_parked >= 8
    assert in_process_servers["worker"].worker.steps_parked >= 8
    assert in_process_servers["ps"].status()["steps_parked"] == in_process_servers["ps"].worker.steps_parked


def test_a_parked_partition_fails_at_its_deadline_naming_the_tensor_it_waits_for(in_process_servers):
    model = build_model()
    feed = {model.x: np.ones((4, 3), np.float32)}
    with tf.Session(in_process_servers["worker"].target, graph=model.graph) as sess:
        sess.run(model.init)
        for _ in range(3):
            sess.run(model.train, feed)  # now the worker's partition runs inline
        parked = in_process_servers["worker"].worker.steps_parked
        in_process_servers["ps"].worker.delay_s = 1.0  # the ps sends w/read only after 1 s
        options = tf.RunOptions(timeout_in_ms=300)
        with pytest.raises(tf.errors.DeadlineExceededError) as caught:
            sess.run(model.train, feed, options=options)
        in_process_servers["ps"].worker.delay_s = 0.0
        assert in_process_servers["worker"].worker.steps_parked == parked + 1
        assert "/job:worker/replica:0/task:0" in caught.value.message
        # The ps's RunGraph waits out its own deadline too, so its tensors may arrive just as the
        # worker gives up: whichever are still missing are named, with the task they come from.
        assert re.search(r"_recv/\S+ <- /job:ps/replica:0/task:0", caught.value.message), caught.value.message
        # Nothing is left waiting: the next steps run (and park) as before.
        for _ in range(2):
            sess.run(model.train, feed)
        assert in_process_servers["worker"].worker.steps_parked >= parked + 2


def test_closing_the_session_ends_a_parked_partition(in_process_servers):
    model = build_model()
    feed = {model.x: np.ones((4, 3), np.float32)}
    sess = tf.Session(in_process_servers["worker"].target, graph=model.graph)
    sess.run(model.init)
    for _ in range(3):
        sess.run(model.train, feed)
    in_process_servers["ps"].worker.delay_s = 1.0  # the worker's partition waits (parked) for w/read
    box = {}

    def step():
        try:
            sess.run(model.train, feed)
        except tf.errors.OpError as e:
            box["error"] = e

    t = threading.Thread(target=step)
    t.start()
    time.sleep(0.3)
    sess.close()
    t.join(10)
    in_process_servers["ps"].worker.delay_s = 0.0
    assert not t.is_alive()
    assert isinstance(box.get("error"), tf.errors.CancelledError), box
    assert "closed" in box["error"].message


def test_a_tensor_arriving_for_a_step_that_ended_here_is_dropped(in_process_servers):
    model = build_model()
    _train(in_process_servers["worker"].target, model, 3)
    ps = in_process_servers["ps"].worker
    assert ps.status()["tensors_held"] == 0
    ps.rendezvous.cleanup(12345)  # as the RunGraph of step 12345 ends here
    ps.rendezvous.put_all(12345, [["late;key", np.ones(1000, np.float32)]])  # a late push for it
    ps.rendezvous.put_all(12346, [["early;key", np.ones(10, np.float32)]])  # a step not run here yet
    assert ps.status()["tensors_held"] == 1  # only the early one is kept, for its _Recv


def _queue_graph():
    graph = tf.Graph()
    with graph.as_default(), tf.device("/job:ps/task:0"):
        q = tf.FIFOQueue(100, tf.float32, shapes=[[]], shared_name="parked_q", name="q")
        x = tf.placeholder(tf.float32, [], name="x")
        return graph, q.enqueue([x], name="put"), q.dequeue(name="take"), q.size(name="size")


def test_a_dequeue_waiting_on_an_empty_queue_is_parked_and_woken_by_the_enqueue(in_process_servers):
    """Queues notify their resource manager: a partition waiting on one is parked on the I/O
    thread (no pool thread held), so many waiting steps cost no threads, and an enqueue from
    another session wakes them."""
    graph, put, take, _ = _queue_graph()
    ps = in_process_servers["ps"]
    taker = tf.Session(ps.target, graph=graph)
    putter = tf.Session(in_process_servers["worker"].target, graph=graph)
    putter.run(put, {"x:0": 1.0})
    assert taker.run(take) == 1.0  # the first run of a signature goes to the pool; now it is quick
    parked = ps.worker.steps_parked
    threads_before = threading.active_count()
    results, waiters = [], []
    for _ in range(6):
        t = threading.Thread(target=lambda: results.append(taker.run(take)))
        t.start()
        waiters.append(t)
    deadline = time.monotonic() + 10
    while ps.worker.steps_parked < parked + 6 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ps.worker.steps_parked == parked + 6  # every waiting dequeue is parked...
    assert threading.active_count() == threads_before + 6  # ...holding no server thread
    for i in range(6):
        putter.run(put, {"x:0": float(i)})
    for t in waiters:
        t.join(10)
    assert sorted(results) == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    taker.close()
    putter.close()


def test_a_parked_dequeue_looks_again_only_when_its_own_queue_changes(in_process_servers, monkeypatch):
    """A run parked on a queue is woken by that queue's changes, not by every queue's or
    accumulator's of the task (a sync step's gradients would wake its token dequeue)."""
    monkeypatch.setattr(worker, "PARKED_RECHECK_S", 30.0)  # (only the wakes count)
    graph = tf.Graph()
    with graph.as_default(), tf.device("/job:ps/task:0"):
        mine = tf.FIFOQueue(100, tf.float32, shapes=[[]], shared_name="mine", name="mine")
        other = tf.FIFOQueue(100, tf.float32, shapes=[[]], shared_name="other", name="other")
        x = tf.placeholder(tf.float32, [], name="x")
        put_mine, put_other, take = mine.enqueue([x]), other.enqueue([x]), mine.dequeue()
    advances = []  # the step id of each advance of a parked run
    advance = worker._ParkedRun.advance

    def counted(run, *args, **kwargs):
        advances.append(run.ctx.step_id)
        return advance(run, *args, **kwargs)

    monkeypatch.setattr(worker._ParkedRun, "advance", counted)
    ps = in_process_servers["ps"]
    with tf.Session(ps.target, graph=graph) as taker, tf.Session(ps.target, graph=graph) as putter:
        putter.run(put_mine, {x: 1.0})
        assert taker.run(take) == 1.0  # (the signature's first run goes to the pool)
        parked, result = ps.worker.steps_parked, []
        waiter = threading.Thread(target=lambda: result.append(taker.run(take)))
        waiter.start()
        deadline = time.monotonic() + 10
        while ps.worker.steps_parked == parked and time.monotonic() < deadline:
            time.sleep(0.01)
        waiting = advances[-1]  # the dequeue's step, parked
        for i in range(20):
            putter.run(put_other, {x: float(i)})
        assert advances.count(waiting) == 1  # its first pass only: the other queue's 20 changes woke nothing
        putter.run(put_mine, {x: 7.0})
        waiter.join(10)
    assert result == [7.0]


def test_a_long_parked_wait_says_what_it_waits_for(in_process_servers, monkeypatch, caplog):
    monkeypatch.setattr(worker, "HANG_REPORT_S", 0.3)
    graph, put, take, _ = _queue_graph()
    with tf.Session(in_process_servers["ps"].target, graph=graph) as sess:
        sess.run(put, {"x:0": 1.0})
        sess.run(take)
        with (
            caplog.at_level("WARNING"),
            pytest.raises(tf.errors.DeadlineExceededError, match="FIFOQueue 'parked_q'"),
        ):
            sess.run(take, options=tf.RunOptions(timeout_in_ms=1000))
    assert any(
        "has waited" in r.getMessage() and "FIFOQueue 'parked_q'" in r.getMessage() for r in caplog.records
    )
