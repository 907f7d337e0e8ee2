"""`tf.train.ReportHook`: monitored training feeds the notebook's event stream and dashboard
without any `tf.report` call — in the notebook's process, and from a real cluster's workers."""

import time

import numpy as np
import pytest

import nbdist as tf
from nbdist.notebook import event_stream as events


@pytest.fixture(autouse=True)
def _fresh_graph():
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()


@pytest.fixture
def local_stream():
    """The in-process stream `tf.report` publishes to in the notebook, emptied first."""
    stream = events.current_stream()
    assert not stream.collecting
    stream.clear()
    return stream


def _model():
    rng = np.random.RandomState(0)
    data = rng.standard_normal((16, 2)).astype(np.float32)
    target = data @ np.array([[2.0], [-1.0]], np.float32)
    step = tf.train.get_or_create_global_step()
    w = tf.Variable(np.zeros((2, 1), np.float32), name="w")
    loss = tf.reduce_mean(tf.square(tf.matmul(tf.constant(data), w) - target))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    return loss, train


def _train(hook, steps, fetch_loss=False):
    loss, train = _model()
    losses = []
    with tf.train.MonitoredTrainingSession(hooks=[hook(loss, train)]) as sess:
        for _ in range(steps):
            if fetch_loss:
                losses.append(float(sess.run([train, loss])[1]))
            else:
                sess.run(train)
    return losses


def test_every_run_reports_loss_global_step_local_step_rate_and_staleness(local_stream):
    losses = _train(lambda loss, train: tf.train.ReportHook({"loss": loss}, train_op=train), 5, True)
    metrics = local_stream.history("metric")
    assert [e["metrics"]["local_step"] for e in metrics] == [1, 2, 3, 4, 5]
    assert {e["task"] for e in metrics} == {"notebook"}
    # The loss the hook fetched is the loss of the same run; alone, no update is ever stale.
    assert [e["metrics"]["loss"] for e in metrics] == pytest.approx(losses)
    assert [e["metrics"]["staleness"] for e in metrics] == [0.0] * 5
    assert sorted(e["step"] for e in metrics)[-1] in (4, 5)  # read in the run that increments it
    assert "steps_per_s" not in metrics[0]["metrics"]
    assert all(e["metrics"]["steps_per_s"] > 0 for e in metrics[1:])


def test_every_n_steps_reports_every_nth_run(local_stream):
    _train(lambda loss, train: tf.train.ReportHook({"loss": loss}, every_n_steps=3), 7)
    assert [e["metrics"]["local_step"] for e in local_stream.history("metric")] == [1, 4, 7]


def test_a_run_without_the_train_op_reports_no_staleness_and_trains_nothing(local_stream):
    loss, train = _model()
    step = tf.train.get_global_step()
    with tf.train.MonitoredTrainingSession(
        hooks=[tf.train.ReportHook({"loss": loss}, train_op=train)]
    ) as sess:
        sess.run(train)
        sess.run(loss)  # an evaluation: the hook must not add the update to it
        assert int(sess.run(step)) == 1
    first, evaluation = local_stream.history("metric")[:2]
    assert "staleness" in first["metrics"] and "staleness" not in evaluation["metrics"]


def test_a_sync_train_op_reports_dropped_gradients():
    loss, _ = _model()
    opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), replicas_to_aggregate=1)
    train = opt.minimize(loss, global_step=tf.train.get_global_step())
    hook = tf.train.ReportHook({"loss": loss}, train_op=train)
    hook.begin()
    assert hook._update[0] == "dropped"


def test_misuse_is_refused_with_the_reason():
    loss, _ = _model()
    with pytest.raises(ValueError, match=r"reports \['local_step'\] itself"):
        tf.train.ReportHook({"local_step": loss})
    with pytest.raises(TypeError, match="takes a dict of metric name -> tensor"):
        tf.train.ReportHook([loss])
    hook = tf.train.ReportHook({"loss": loss}, train_op=tf.no_op(name="plain"))
    with pytest.raises(ValueError, match=r"'plain'.*records neither staleness"):
        hook.begin()


WORKER_CELL = """
import numpy as np
with tf.Graph().as_default():
    with tf.device(tf.train.replica_device_setter(worker_device=f"/job:worker/task:{task_index}", cluster=cluster)):
        rng = np.random.RandomState(task_index)
        data = rng.standard_normal((16, 2)).astype(np.float32)
        target = data @ np.array([[2.0], [-1.0]], np.float32)
        step = tf.train.get_or_create_global_step()
        w = tf.get_variable("w", [2, 1], initializer=tf.zeros_initializer())
        loss = tf.reduce_mean(tf.square(tf.matmul(tf.constant(data), w) - target))
        train = tf.train.GradientDescentOptimizer(0.05).minimize(loss, global_step=step)
    # 40 steps from where each worker starts: the non-chief may start after the chief finished.
    hooks = [tf.train.ReportHook({"loss": loss}, train_op=train), tf.train.StopAtStepHook(num_steps=40)]
    with tf.train.MonitoredTrainingSession(master=server.target, is_chief=task_index == 0, hooks=hooks) as sess:
        while not sess.should_stop():
            sess.run(train)
"""


@pytest.mark.slow
def test_workers_of_a_real_cluster_feed_the_dashboard_with_no_report_calls():
    pytest.importorskip("ipywidgets")
    from nbdist.notebook import task_exec

    with tf.LocalCluster(ps=1, worker=2) as cluster:
        dash = tf.Dashboard(cluster.events)
        workers = [("worker", i, cluster.cluster_spec.task_address("worker", i)) for i in range(2)]
        task_exec.run_cell(workers, WORKER_CELL, cluster.key, timeout_s=120)
        # Events are asynchronous: the last ones may still be on the way, and the chief's 40 alone
        # are no sign that the other worker's have arrived.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            history = cluster.events.history("metric")
            if len(history) >= 40 and len({e["task"] for e in history}) == 2:
                break
            time.sleep(0.05)
        metrics = cluster.events.history("metric")
        dash.stop()
    by_task = {}
    for e in metrics:
        by_task.setdefault(e["task"], []).append(e)
    assert set(by_task) == {"/job:worker/task:0", "/job:worker/task:1"}
    for reports in by_task.values():
        local = [e["metrics"]["local_step"] for e in reports]
        assert local == list(range(1, len(local) + 1))  # every run reported, none lost on the way
        assert all({"loss", "staleness"} <= set(e["metrics"]) for e in reports)
    assert sum(len(r) for r in by_task.values()) >= 40  # together they ran the 40 global steps
    summary = dash.history.summary()
    assert set(summary["tasks"]) == set(by_task) and summary["global_step"] >= 39
    assert all(t["loss"] is not None for t in summary["tasks"].values())
    first, last = by_task["/job:worker/task:0"][0], by_task["/job:worker/task:0"][-1]
    assert last["metrics"]["loss"] < first["metrics"]["loss"]
