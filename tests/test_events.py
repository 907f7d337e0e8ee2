"""Tests for nbdist/notebook/event_stream.py: the event stream, its collector, report() and publishers."""

import os
import threading
import time

import numpy as np
import pytest
import zmq

import nbdist
from nbdist.notebook import event_stream as events
from nbdist.runtime import sched
from nbdist.runtime.net import wire

KEY = b"k" * 32


def wait_for(predicate, timeout_s=5.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return False


@pytest.fixture
def collector():
    stream = events.EventStream(KEY, collect=True)
    yield stream
    stream.close()


@pytest.fixture
def publisher(collector):
    pub = events.Publisher(collector.address, "/job:worker/task:0", KEY)
    yield pub
    pub.close()


@pytest.fixture
def local_stream():
    """The in-process stream that report() uses in the notebook, emptied first."""
    stream = events.current_stream()
    assert not stream.collecting
    stream.clear()
    return stream


# ---------------------------------------------------------------- EventStream in-process


def test_subscriber_gets_published_events():
    stream, seen = events.EventStream(), []
    stream.subscribe(seen.append)
    stream.publish({"kind": "metric", "task": "notebook"})
    assert seen == [{"kind": "metric", "task": "notebook"}]


def test_unsubscribe_stops_delivery_and_is_idempotent():
    stream, seen = events.EventStream(), []
    unsubscribe = stream.subscribe(seen.append)
    unsubscribe()
    unsubscribe()
    stream.publish({"kind": "metric"})
    assert seen == []


def test_history_filters_by_kind():
    stream = events.EventStream()
    for kind in ("metric", "heartbeat", "metric"):
        stream.publish({"kind": kind})
    assert [e["kind"] for e in stream.history("metric")] == ["metric", "metric"]
    assert len(stream.history()) == 3


def test_history_is_bounded_and_keeps_the_newest():
    stream = events.EventStream(history_size=3)
    for i in range(5):
        stream.publish({"kind": "metric", "step": i})
    assert [e["step"] for e in stream.history()] == [2, 3, 4]


def test_a_failing_subscriber_does_not_stop_the_others():
    stream, seen = events.EventStream(), []
    stream.subscribe(lambda e: 1 / 0)
    stream.subscribe(seen.append)
    stream.publish({"kind": "metric"})
    assert len(seen) == 1
    assert stream.callback_errors == 1


def test_subscribe_needs_a_callable():
    with pytest.raises(TypeError, match="needs a callable taking one event dict, got 3"):
        events.EventStream().subscribe(3)


def test_publish_is_thread_safe():
    stream = events.EventStream(history_size=100_000)
    threads = [
        threading.Thread(target=lambda: [stream.publish({"kind": "metric"}) for _ in range(500)])
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(stream.history()) == 2000


# ---------------------------------------------------------------- collector and publisher


def test_collector_binds_a_random_loopback_port(collector):
    assert collector.address.startswith("tcp://127.0.0.1:")
    assert collector.collecting


def test_pushed_event_reaches_subscribers_with_its_task(collector, publisher):
    seen = []
    collector.subscribe(seen.append)
    publisher.publish({"kind": "metric", "step": 3, "time": 1.0, "metrics": {"loss": 0.5}})
    assert wait_for(lambda: seen)
    assert seen[0] == {
        "kind": "metric",
        "task": "/job:worker/task:0",
        "step": 3,
        "time": 1.0,
        "metrics": {"loss": 0.5},
    }


def test_collector_drops_events_signed_with_another_key(collector):
    other = events.Publisher(collector.address, "/job:evil/task:0", b"x" * 32)
    try:
        other.publish({"kind": "metric", "metrics": {"loss": 1.0}})
        assert wait_for(lambda: collector.rejected == 1)
    finally:
        other.close()
    assert collector.history() == []


def test_collector_drops_unsigned_events(collector):
    sock = zmq.Context.instance().socket(zmq.PUSH)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(collector.address)
    try:
        sock.send_multipart(wire.encode("Event", 0, {"event": {"kind": "metric"}}, None))
        assert wait_for(lambda: collector.rejected == 1)
    finally:
        sock.close()


def test_collector_drops_unknown_kinds(collector, publisher):
    publisher.publish({"kind": "bogus"})
    assert wait_for(lambda: collector.rejected == 1)


def test_publisher_never_blocks_and_drops_when_nobody_collects():
    stream = events.EventStream(KEY, collect=True)
    address = stream.address
    stream.close(wait_s=2.0)  # nobody reads: the send buffer fills
    pub = events.Publisher(address, "/job:worker/task:0", KEY)
    try:
        started = time.monotonic()
        for _ in range(3 * events.SEND_HWM * events.MAX_BATCH):  # batches enough to fill the buffer
            pub.publish({"kind": "metric", "metrics": {"loss": 1.0}})
        assert time.monotonic() - started < 10.0  # (a blocked send would never return)
        assert pub.dropped > 0
    finally:
        pub.close()


def test_an_event_after_a_quiet_spell_goes_at_once_and_a_burst_goes_in_a_few_messages(collector, publisher):
    """Reporting after every step must not cost a message (and the wake-ups of two ZeroMQ I/O
    threads) per step: a burst travels in batches, in order, nothing lost."""
    publisher.publish({"kind": "metric", "step": 0, "metrics": {"loss": 1.0}})
    assert publisher.sent == 1  # sent at once: nothing was sent in the last COALESCE_S
    for step in range(1, 601):
        publisher.publish({"kind": "metric", "step": step, "metrics": {"loss": 1.0}})
    assert wait_for(lambda: len(collector.history()) == 601)
    assert [e["step"] for e in collector.history()] == list(range(601))
    assert publisher.messages <= 1 + 600 // events.MAX_BATCH + 3, publisher.messages
    assert publisher.dropped == 0


def test_events_held_for_a_batch_are_sent_when_its_window_ends_or_the_publisher_closes(collector):
    pub = events.Publisher(collector.address, "/job:worker/task:0", KEY)
    try:
        pub.publish({"kind": "metric", "step": 1, "metrics": {"loss": 1.0}})
        pub.publish({"kind": "metric", "step": 2, "metrics": {"loss": 1.0}})
        assert pub.sent == 1  # the second waits for the window to end...
        assert wait_for(lambda: pub.sent == 2)  # ...and goes then, with nothing more published
        time.sleep(2 * events.COALESCE_S)
        pub.publish({"kind": "metric", "step": 3, "metrics": {"loss": 1.0}})
        pub.publish({"kind": "metric", "step": 4, "metrics": {"loss": 1.0}})
    finally:
        pub.close()  # sends what it holds
    assert pub.sent == 4
    assert wait_for(lambda: [e["step"] for e in collector.history()] == [1, 2, 3, 4])


def test_events_published_by_many_threads_arrive_each_once(collector):
    """A held event takes no lock (the publisher's deque): threads publishing at once lose none
    and send none twice."""
    pub = events.Publisher(collector.address, "/job:worker/task:0", KEY)
    per_thread, threads = 300, 4

    def publish_many(first):
        for step in range(first, first + per_thread):
            pub.publish({"kind": "metric", "step": step, "metrics": {"loss": 1.0}})

    workers = [threading.Thread(target=publish_many, args=(i * per_thread,)) for i in range(threads)]
    try:
        for t in workers:
            t.start()
        for t in workers:
            t.join(10)
    finally:
        pub.close()
    assert (pub.sent, pub.dropped) == (per_thread * threads, 0)
    assert wait_for(lambda: len(collector.history()) == per_thread * threads)
    assert sorted(e["step"] for e in collector.history()) == list(range(per_thread * threads))


def test_the_threads_that_carry_events_never_preempt_training(collector, monkeypatch):
    """The collector, a publisher's flusher and the I/O thread of the events' ZeroMQ context
    run under SCHED_BATCH (`nbdist.runtime.sched`): woken by events, they wait for a CPU."""
    monkeypatch.delenv(sched.BATCH_ENV, raising=False)
    pub = events.Publisher(collector.address, "/job:worker/task:0", KEY)
    try:
        pub.publish({"kind": "metric", "step": 1, "metrics": {"loss": 1.0}})
        pub.publish({"kind": "metric", "step": 2, "metrics": {"loss": 1.0}})  # held: starts the flusher
        assert wait_for(lambda: len(collector.history()) == 2)
        policy = {
            "collector": os.sched_getscheduler(collector._thread.native_id),
            "flusher": os.sched_getscheduler(pub._flusher.native_id),
        }
    finally:
        pub.close()
    io_threads = [
        int(tid)
        for tid in os.listdir("/proc/self/task")
        if _comm(tid).startswith("ZMQbg/IO") and os.sched_getscheduler(int(tid)) == os.SCHED_BATCH
    ]
    assert policy == {"collector": os.SCHED_BATCH, "flusher": os.SCHED_BATCH}
    assert io_threads, "the events' ZeroMQ context has no I/O thread under SCHED_BATCH"


def _comm(tid):
    try:
        with open(f"/proc/self/task/{tid}/comm") as f:
            return f.read()
    except FileNotFoundError:  # (a thread that ended meanwhile)
        return ""


def test_reports_travel_in_columns_to_metric_subscribers_and_as_dicts_to_the_others(collector, publisher):
    """A window of reports is one `MetricBatch` per run of alike events: `subscribe_metrics`
    gets the batch, `subscribe` callbacks and the history the same events as dicts, and a
    callback for another kind is not called (and no dict is made for it)."""
    batches, dicts, heartbeats = [], [], []
    collector.subscribe_metrics(batches.append)
    collector.subscribe(dicts.append, kind="metric")
    collector.subscribe(heartbeats.append, kind="heartbeat")
    reports = [
        {
            "kind": "metric",
            "step": i,
            "time": 100.0 + i,
            "metrics": {"loss": 1.0 / (i + 1), "local_step": i + 1},
        }
        for i in range(50)
    ]
    for event in reports:
        publisher.publish(dict(event))
    publisher.publish({"kind": "heartbeat", "time": 200.0, "rss_bytes": 7})
    publisher.flush()
    assert wait_for(lambda: sum(map(len, batches)) == 50 and heartbeats)
    expected = [{**event, "task": "/job:worker/task:0"} for event in reports]
    assert len(batches) < 10  # (the first report goes at once, the others with the window after it)
    assert [e for b in batches for e in b.events()] == expected
    assert dicts == expected and collector.history("metric") == expected
    assert [e["rss_bytes"] for e in heartbeats] == [7]
    assert collector.rejected == 0


def test_a_malformed_batch_of_metrics_is_counted_and_the_rest_of_the_message_delivered(collector):
    sock = zmq.Context.instance().socket(zmq.PUSH)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(collector.address)
    good = ["/job:worker/task:1", ["loss"], [1, 2], [1.0, 2.0], [[0.5, 0.4]]]
    bad = ["/job:worker/task:1", ["loss"], [3], [3.0], [["not a number"]]]
    body = {
        "events": [{"kind": "heartbeat", "task": "/job:worker/task:1", "time": 1.0}],
        "metrics": [bad, good],
    }
    try:
        sock.send_multipart(wire.encode("Events", 0, body, KEY, wire.SenderStamp()))
        assert wait_for(lambda: len(collector.history()) == 3)
    finally:
        sock.close()
    assert collector.rejected == 1
    assert [e["kind"] for e in collector.history()] == ["heartbeat", "metric", "metric"]
    assert [e["step"] for e in collector.history("metric")] == [1, 2]


def test_history_of_batches_is_bounded_by_events_and_keeps_the_newest():
    from nbdist.in_task.metric_batch import MetricBatch

    stream = events.EventStream(history_size=5)
    stream.publish({"kind": "heartbeat", "task": "t"})
    for first in (0, 3, 6):
        steps = [first, first + 1, first + 2]
        stream.publish_metrics(MetricBatch("t", ["loss"], steps, [float(s) for s in steps], [[1.0] * 3]))
    assert [e["step"] for e in stream.history()] == [4, 5, 6, 7, 8]
    stream.clear()
    assert stream.history() == []


def test_an_event_published_alone_reaches_metric_subscribers_as_a_batch_of_one():
    stream, batches = events.EventStream(), []
    stream.subscribe_metrics(batches.append)
    stream.publish({"kind": "metric", "task": "notebook", "step": 2, "time": 5.0, "metrics": {"loss": 0.5}})
    stream.publish({"kind": "heartbeat", "task": "notebook"})
    stream.publish({"kind": "metric", "metrics": "not metrics"})
    assert [(b.task, b.steps, b.columns) for b in batches] == [("notebook", [2], [[0.5]])]
    assert stream.callback_errors == 1


def test_closed_collector_keeps_its_history(collector, publisher):
    publisher.publish({"kind": "heartbeat", "rss_bytes": 1})
    assert wait_for(collector.history)
    collector.close()
    assert not collector.collecting
    assert collector.history("heartbeat")[0]["rss_bytes"] == 1


# ---------------------------------------------------------------- report() in the notebook


def test_report_in_the_notebook_publishes_a_metric_event(local_stream):
    before = time.time()
    assert nbdist.report(step=7, loss=0.25, accuracy=np.float32(0.5))
    (event,) = local_stream.history("metric")
    assert event["task"] == "notebook"
    assert event["step"] == 7
    assert event["metrics"] == {"loss": 0.25, "accuracy": 0.5}
    assert before <= event["time"] <= time.time()


def test_report_step_may_be_none(local_stream):
    nbdist.report(loss=1)
    assert local_stream.history("metric")[0]["step"] is None


def test_report_accepts_one_element_arrays(local_stream):
    nbdist.report(step=np.int64(2), loss=np.array([0.5]))
    event = local_stream.history("metric")[0]
    assert event["metrics"]["loss"] == 0.5
    assert type(event["step"]) is int


def test_report_rejects_a_non_numeric_metric():
    with pytest.raises(TypeError, match=r"metric 'loss' must be a number .* got 'high'"):
        nbdist.report(step=1, loss="high")


def test_report_rejects_a_non_integer_step():
    with pytest.raises(TypeError, match=r"step=...\) must be an integer or None, got 1.5"):
        nbdist.report(step=1.5, loss=1.0)


def test_report_needs_a_metric():
    with pytest.raises(ValueError, match="needs at least one metric"):
        nbdist.report(step=1)


def test_report_trace_publishes_the_step_stats(local_stream):
    md = nbdist.RunMetadata()
    with nbdist.Graph().as_default() as g:
        y = nbdist.constant(2.0) * 3.0
        with nbdist.Session(graph=g) as sess:
            sess.run(y, options=nbdist.RunOptions(trace_level=nbdist.RunOptions.FULL_TRACE), run_metadata=md)
    events.report_trace(md, step=4)
    (event,) = local_stream.history("trace")
    assert event["step"] == 4
    assert {n["op"] for n in event["dev_stats"][0]["node_stats"]} >= {"Mul"}


# ---------------------------------------------------------------- which stream is current


def test_current_stream_is_the_latest_activated_one():
    a, b = events.EventStream(), events.EventStream()
    events.activate(a)
    events.activate(b)
    try:
        assert events.current_stream() is b
        events.deactivate(b)
        assert events.current_stream() is a
    finally:
        events.deactivate(a)
        events.deactivate(b)
    assert not events.current_stream().collecting


def test_rss_bytes_is_positive_on_linux():
    assert events.rss_bytes() > 1_000_000


# ---------------------------------------------------------------- from real task processes


@pytest.mark.slow
def test_tasks_send_heartbeats_and_reported_metrics():
    with nbdist.LocalCluster(worker=1) as cluster:
        assert events.current_stream() is cluster.events
        assert wait_for(lambda: cluster.events.history("heartbeat"), 5.0)
        heartbeat = cluster.events.history("heartbeat")[0]
        assert heartbeat["task"] == "/job:worker/task:0"
        assert heartbeat["rss_bytes"] > 1_000_000
        from nbdist.notebook import task_exec

        task_exec.run_cell(
            [("worker", 0, cluster.cluster_spec.task_address("worker", 0))],
            "tf.report(step=task_index, loss=0.5)",
            cluster.key,
        )
        assert wait_for(lambda: cluster.events.history("metric"), 5.0)
        metric = cluster.events.history("metric")[0]
        assert (metric["task"], metric["step"], metric["metrics"]) == ("/job:worker/task:0", 0, {"loss": 0.5})
