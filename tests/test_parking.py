"""Partitions that wait only for tensors run on the server's I/O thread, parked while they wait.

A `_Recv` declares that it `parks`: a quick partition whose only waits are `_Recv`s is run
by `WorkerService.start_graph` on the I/O thread and, while a tensor it needs is still on
its way, parked on the rendezvous instead of blocking a thread. Arrivals, aborts and the
step's deadline advance it again. In-process servers on 127.0.0.1.
"""

import re
import threading
import time

import numpy as np
import pytest

import nbdist as tf
from nbdist.runtime import worker
from nbdist.runtime.server import Server
from procs import free_port
from traced_steps import build_model


@pytest.fixture
def servers(monkeypatch):
    # Whether a partition is quick enough to run inline is the machine's business; here it is.
    monkeypatch.setattr(worker, "INLINE_RUN_S", 10.0)
    cluster = {"ps": [f"localhost:{free_port()}"], "worker": [f"localhost:{free_port()}"]}
    started = [Server(cluster, job_name=job, task_index=0) for job in cluster]
    yield {s.server_def.job_name: s for s in started}
    for s in started:
        s.stop()


def _train(target, model, steps):
    """Trains `model` for `steps` in a session on `target` ("": a local session)."""
    feed = {model.x: np.ones((4, 3), np.float32)}
    with tf.Session(target, graph=model.graph) as sess:
        sess.run(model.init)
        for _ in range(steps):
            sess.run(model.train, feed)
        return sess.run([model.w, model.b, model.loss], feed)


def test_training_steps_park_on_the_io_thread_and_compute_what_a_local_session_does(servers):
    model = build_model()
    remote = _train(servers["worker"].target, model, 10)
    local = _train("", build_model(), 10)
    for got, want in zip(remote, local, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    # The first run of a signature goes to the pool; later ones run inline and park.
    assert servers["ps"].worker.steps_parked >= 8
    assert servers["worker"].worker.steps_parked >= 8
    assert servers["ps"].status()["steps_parked"] == servers["ps"].worker.steps_parked


def test_a_parked_partition_fails_at_its_deadline_naming_the_tensor_it_waits_for(servers):
    model = build_model()
    feed = {model.x: np.ones((4, 3), np.float32)}
    with tf.Session(servers["worker"].target, graph=model.graph) as sess:
        sess.run(model.init)
        for _ in range(3):
            sess.run(model.train, feed)  # now the worker's partition runs inline
        parked = servers["worker"].worker.steps_parked
        servers["ps"].worker.delay_s = 1.0  # the ps sends w/read only after 1 s
        options = tf.RunOptions(timeout_in_ms=300)
        with pytest.raises(tf.errors.DeadlineExceededError) as caught:
            sess.run(model.train, feed, options=options)
        servers["ps"].worker.delay_s = 0.0
        assert servers["worker"].worker.steps_parked == parked + 1
        assert "/job:worker/replica:0/task:0" in caught.value.message
        # The ps's RunGraph waits out its own deadline too, so its tensors may arrive just as the
        # worker gives up: whichever are still missing are named, with the task they come from.
        assert re.search(r"_recv/\S+ <- /job:ps/replica:0/task:0", caught.value.message), caught.value.message
        # Nothing is left waiting: the next steps run (and park) as before.
        for _ in range(2):
            sess.run(model.train, feed)
        assert servers["worker"].worker.steps_parked >= parked + 2


def test_closing_the_session_ends_a_parked_partition(servers):
    model = build_model()
    feed = {model.x: np.ones((4, 3), np.float32)}
    sess = tf.Session(servers["worker"].target, graph=model.graph)
    sess.run(model.init)
    for _ in range(3):
        sess.run(model.train, feed)
    servers["ps"].worker.delay_s = 1.0  # the worker's partition waits (parked) for w/read
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
    servers["ps"].worker.delay_s = 0.0
    assert not t.is_alive()
    assert isinstance(box.get("error"), tf.errors.CancelledError), box
    assert "closed" in box["error"].message


def test_a_tensor_arriving_for_a_step_that_ended_here_is_dropped(servers):
    model = build_model()
    _train(servers["worker"].target, model, 3)
    ps = servers["ps"].worker
    assert ps.status()["tensors_held"] == 0
    ps.rendezvous.cleanup(12345)  # as the RunGraph of step 12345 ends here
    ps.rendezvous.put_all(12345, [["late;key", np.ones(1000, np.float32)]])  # a late push for it
    ps.rendezvous.put_all(12346, [["early;key", np.ones(10, np.float32)]])  # a step not run here yet
    assert ps.status()["tensors_held"] == 1  # only the early one is kept, for its _Recv
