"""A session on a server of its own process skips the wire to its master (TF's LocalMaster).

A tutorial's worker runs its own server and a session on ``server.target``: the session's
requests go to that server's serving loop as they are (`in_process.in_process_channel`),
and the replies come back copied, as the wire would have copied them. Servers of another
process, another cluster key, or ``$NBDIST_IN_PROCESS=0`` keep the wire.
In-process servers on 127.0.0.1.
"""

import numpy as np
import pytest

import nbdist as tf
from nbdist.runtime.net import in_process
from procs import free_port


def _traced_run(sess, fetch):
    meta = tf.RunMetadata()
    sess.run(fetch, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=meta)
    return {c["method"]: c for c in meta.service_calls}


def _model():
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/job:ps/task:0"):
            w = tf.Variable(np.zeros(3, np.float32), name="w")
        with tf.device("/job:worker/task:0"):
            x = tf.placeholder(tf.float32, [3], name="x")
            step = tf.assign_add(w, x * 2.0)
    return graph, w, x, step


def test_the_run_step_skips_the_wire_and_computes_what_the_wire_does(in_process_servers, monkeypatch):
    graph, w, x, step = _model()
    results = {}
    for mode in ("1", "0"):
        monkeypatch.setenv(in_process.IN_PROCESS_ENV, mode)
        with tf.Session(in_process_servers["worker"].target, graph=graph) as sess:
            sess.run(w.initializer)
            for i in range(3):
                sess.run(step, {x: np.full(3, i, np.float32)})
            calls = _traced_run(sess, w)
            results[mode] = sess.run(w)
        # The trace tells the learner which way the request went.
        assert calls["RunStep"]["in_process"] is (mode == "1")
        assert calls["RunStep"]["via"] == ("in process" if mode == "1" else "link")  # a loopback server
        assert calls["RunGraph"]["task"] == "/job:ps/replica:0/task:0"
        assert calls["RunGraph"]["via"] == "link"
    np.testing.assert_array_equal(results["1"], [6.0, 6.0, 6.0])
    np.testing.assert_array_equal(results["1"], results["0"])


def test_a_fetched_value_is_the_callers_own(in_process_servers):
    graph = tf.Graph()
    with graph.as_default(), tf.device("/job:worker/task:0"):
        v = tf.Variable(np.zeros(3, np.float32), name="v")
        assign = tf.assign(v, [1.0, 2.0, 3.0])
        x = tf.placeholder(tf.float32, [3])
        doubled = x * 2.0
    with tf.Session(in_process_servers["worker"].target, graph=graph) as sess:
        sess.run(v.initializer)
        stored = sess.run(assign)  # on the server this is the variable's own storage
        stored[:] = 99.0
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0, 3.0])
        fed = np.ones(3, np.float32)
        np.testing.assert_array_equal(sess.run(doubled, {x: fed}), [2.0, 2.0, 2.0])
        np.testing.assert_array_equal(fed, [1.0, 1.0, 1.0])


def test_errors_are_the_wires_errors(in_process_servers, monkeypatch):
    graph = tf.Graph()
    with graph.as_default(), tf.device("/job:worker/task:0"):
        q = tf.FIFOQueue(1, tf.float32, shapes=[[]], name="empty_queue")
        take = q.dequeue(name="take")
    messages = {}
    for mode in ("1", "0"):
        monkeypatch.setenv(in_process.IN_PROCESS_ENV, mode)
        with tf.Session(in_process_servers["worker"].target, graph=graph) as sess:
            with pytest.raises(tf.errors.DeadlineExceededError) as e:
                sess.run(take, options=tf.RunOptions(timeout_in_ms=300))
            messages[mode] = (e.value.node_def, e.value.message)
    assert messages["1"] == messages["0"]
    assert messages["1"][0] == "take"
    assert "FIFOQueue 'empty_queue'" in messages["1"][1]


def test_a_client_with_another_key_or_of_a_stopped_server_takes_the_wire(in_process_servers):
    address = in_process_servers["worker"].address
    assert in_process.in_process_channel(address, None) is not None
    assert in_process.in_process_channel(address, b"k" * 32) is None  # refused over the wire
    assert in_process.in_process_channel(f"localhost:{free_port()}", None) is None  # not here
    in_process_servers["worker"].stop()
    assert in_process.in_process_channel(address, None) is None
