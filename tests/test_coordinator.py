"""`tf.train.Coordinator` and `tf.train.LooperThread`."""

import threading
import time

import pytest

import nbdist as tf


def _worker(coord, started, fail=None):
    started.set()
    with coord.stop_on_exception():
        while not coord.should_stop():
            if fail is not None:
                raise fail
            time.sleep(0.005)


def test_request_stop_stops_every_thread():
    coord = tf.train.Coordinator()
    started = [threading.Event() for _ in range(3)]
    threads = [threading.Thread(target=_worker, args=(coord, s)) for s in started]
    for t in threads:
        t.start()
    for s in started:
        assert s.wait(5)
    assert not coord.should_stop()
    coord.request_stop()
    coord.join(threads, stop_grace_period_secs=5)
    assert coord.should_stop() and coord.joined
    assert not any(t.is_alive() for t in threads)


def test_join_reraises_the_reported_exception():
    coord = tf.train.Coordinator()
    thread = threading.Thread(target=_worker, args=(coord, threading.Event(), ValueError("bad input")))
    thread.start()
    with pytest.raises(ValueError, match="bad input"):
        coord.join([thread], stop_grace_period_secs=5)


def test_out_of_range_is_a_clean_stop():
    coord = tf.train.Coordinator()
    err = tf.errors.OutOfRangeError(None, None, "queue closed")
    thread = threading.Thread(target=_worker, args=(coord, threading.Event(), err))
    thread.start()
    coord.join([thread], stop_grace_period_secs=5)  # no exception
    assert coord.should_stop()


def test_raise_requested_exception_and_clear_stop():
    coord = tf.train.Coordinator()
    coord.request_stop(RuntimeError("first"))
    coord.request_stop(RuntimeError("second"))  # only the first is kept
    with pytest.raises(RuntimeError, match="first"):
        coord.raise_requested_exception()
    coord.clear_stop()
    assert not coord.should_stop()
    coord.raise_requested_exception()


def test_join_names_threads_that_do_not_stop():
    coord = tf.train.Coordinator()
    release = threading.Event()
    stubborn = threading.Thread(target=release.wait, args=(10,), name="stubborn-thread")
    stubborn.start()
    coord.request_stop()
    try:
        with pytest.raises(RuntimeError, match="stubborn-thread"):
            coord.join([stubborn], stop_grace_period_secs=0.1)
    finally:
        release.set()
        stubborn.join(5)


def test_request_stop_rejects_non_exceptions():
    with pytest.raises(ValueError, match="must be an exception"):
        tf.train.Coordinator().request_stop("not an exception")


def test_looper_thread_calls_target_until_stop():
    coord = tf.train.Coordinator()
    calls = []
    looper = tf.train.LooperThread.loop(coord, 0.01, target=calls.append, args=(1,))
    deadline = time.monotonic() + 5
    while len(calls) < 3 and time.monotonic() < deadline:
        time.sleep(0.005)
    coord.request_stop()
    coord.join([looper], stop_grace_period_secs=5)
    assert len(calls) >= 3


def test_an_exception_reported_after_the_stop_is_dropped():
    # As TF's (`if not self._stop_event.is_set()`): a thread that fails because the stop closed
    # its session, or because its ps died while stopping, is not what stopped the threads.
    coord = tf.train.Coordinator()
    coord.request_stop()
    coord.request_stop(tf.errors.UnavailableError(None, None, "the ps is gone"))
    coord.raise_requested_exception()  # nothing recorded
    coord.join([], stop_grace_period_secs=1)  # no exception
