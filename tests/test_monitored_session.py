"""`MonitoredSession`, `MonitoredTrainingSession`, `Scaffold` and the standard hooks (local)."""

import logging
import time

import numpy as np
import pytest

import nbdist as tf

pytestmark = pytest.mark.usefixtures("fresh_graph")


class _Recorder:
    """A hook (for either library) that records its calls as ``(name, call)``."""

    @staticmethod
    def make(lib, name, log, fetch=None, stop_after_runs=None):
        class Hook(lib.train.SessionRunHook):
            def begin(self):
                log.append((name, "begin", lib.get_default_graph().finalized))

            def after_create_session(self, session, coord):
                log.append((name, "after_create_session", lib.get_default_graph().finalized))

            def before_run(self, run_context):
                log.append((name, "before_run"))
                return lib.train.SessionRunArgs(fetch) if fetch is not None else None

            def after_run(self, run_context, run_values):
                # The fetched value is not compared: a read of the global step in the same run as
                # its increment may see either value (TF orders neither).
                log.append((name, "after_run", run_values.results is not None))
                runs = sum(1 for e in log if e[:2] == (name, "after_run"))
                if stop_after_runs is not None and runs >= stop_after_runs:
                    run_context.request_stop()

            def end(self, session):
                log.append((name, "end"))

        return Hook()


def _hook_order(lib):
    graph = lib.Graph()
    log = []
    with graph.as_default():
        step = lib.train.get_or_create_global_step()
        inc = lib.assign_add(step, 1)
        hooks = [_Recorder.make(lib, "a", log, fetch=step, stop_after_runs=3), _Recorder.make(lib, "b", log)]
        with lib.train.MonitoredSession(hooks=hooks) as sess:
            while not sess.should_stop():
                log.append(("caller", int(sess.run(inc))))
    return log


def test_hook_call_order():
    log = _hook_order(tf)
    assert log[:4] == [
        ("a", "begin", False),
        ("b", "begin", False),
        ("a", "after_create_session", True),
        ("b", "after_create_session", True),
    ]
    assert log[4:8] == [
        ("a", "before_run"),
        ("b", "before_run"),
        ("a", "after_run", True),
        ("b", "after_run", False),
    ]
    assert [e for e in log if e[0] == "caller"] == [("caller", 1), ("caller", 2), ("caller", 3)]
    assert log[-2:] == [("a", "end"), ("b", "end")]


@pytest.mark.tf
def test_hook_call_order_matches_real_tf():
    tf1 = pytest.importorskip("tensorflow").compat.v1
    ours, theirs = _hook_order(tf), _hook_order(tf1)
    assert ours == theirs


def test_stop_at_step_hook_num_steps_and_last_step():
    step = tf.train.get_or_create_global_step()
    inc = tf.assign_add(step, 1)
    with tf.train.MonitoredSession(hooks=[tf.train.StopAtStepHook(num_steps=3)]) as sess:
        runs = 0
        while not sess.should_stop():
            sess.run(inc)
            runs += 1
    assert runs == 3
    with pytest.raises(ValueError, match="Only one of num_steps or last_step"):
        tf.train.StopAtStepHook(num_steps=1, last_step=2)


def test_stop_at_step_hook_needs_a_global_step():
    tf.Variable(1.0)
    with pytest.raises(RuntimeError, match="Global step should be created to use StopAtStepHook"):
        tf.train.MonitoredSession(hooks=[tf.train.StopAtStepHook(num_steps=1)])


def test_graph_is_finalized_after_begin():
    tf.train.get_or_create_global_step()
    with tf.train.MonitoredSession() as sess:
        assert sess.graph.finalized
        with pytest.raises(RuntimeError, match="graph is finalized"):
            tf.constant(1.0)


def test_logging_tensor_hook_logs_every_n_iter(caplog):
    step = tf.train.get_or_create_global_step()
    inc = tf.assign_add(step, 1)
    hook = tf.train.LoggingTensorHook({"step": step}, every_n_iter=2)
    with caplog.at_level(logging.INFO, logger="nbdist"), tf.train.MonitoredSession(hooks=[hook]) as sess:
        for _ in range(5):
            sess.run(inc)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("step = ")]
    assert len(lines) == 3
    assert lines[1].endswith("sec)")


def test_nan_tensor_hook_raises_or_stops():
    loss = tf.constant(np.nan)
    session = tf.train.MonitoredSession(hooks=[tf.train.NanTensorHook(loss)])
    with pytest.raises(tf.train.NanLossDuringTrainingError, match="NaN loss during training"):
        session.run(loss)
    session.close()
    tf.reset_default_graph()
    loss = tf.constant(np.nan)
    with tf.train.MonitoredSession(hooks=[tf.train.NanTensorHook(loss, fail_on_nan_loss=False)]) as sess:
        sess.run(loss)
        assert sess.should_stop()


def test_final_ops_hook_runs_at_end():
    v = tf.Variable(2.0)
    hook = tf.train.FinalOpsHook(v * 10)
    with tf.train.MonitoredSession(hooks=[hook]) as sess:
        sess.run(tf.get_default_graph().get_operation_by_name("Variable"))
    assert hook.final_ops_values == 20.0


def test_hook_feeds_and_user_feeds_must_not_clash():
    x = tf.placeholder(tf.float32, [])
    doubled = x * 2

    class Feeder(tf.train.SessionRunHook):
        def before_run(self, run_context):
            return tf.train.SessionRunArgs(None, feed_dict={x: 1.0})

    with tf.train.MonitoredSession(hooks=[Feeder()]) as sess:
        assert sess.run(doubled) == 2.0
        with pytest.raises(RuntimeError, match="Same tensor is fed by a SessionRunHook and user"):
            sess.run(x, feed_dict={x: 3.0})


def test_out_of_range_in_the_block_is_a_clean_stop():
    tf.Variable(1.0)
    with tf.train.MonitoredSession() as sess:
        raise tf.errors.OutOfRangeError(None, None, "input exhausted")
    assert sess.should_stop()


def test_training_session_checkpoints_and_resumes(tmp_path, caplog):
    step = tf.train.get_or_create_global_step()
    w = tf.Variable(0.0, name="w")
    train = tf.group(tf.assign_add(step, 1), tf.assign_add(w, 1.0))
    with tf.train.MonitoredTrainingSession(
        checkpoint_dir=str(tmp_path), hooks=[tf.train.StopAtStepHook(last_step=7)], save_checkpoint_steps=3
    ) as sess:
        while not sess.should_stop():
            sess.run(train)
    saved = sorted(int(p.name.split("-")[1].split(".")[0]) for p in tmp_path.glob("model.ckpt-*.index"))
    assert saved == [0, 3, 6, 7]  # after creation, every 3 steps, and at the end
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-7")
    tf.reset_default_graph()
    step = tf.train.get_or_create_global_step()
    w = tf.Variable(100.0, name="w")
    with (
        caplog.at_level(logging.INFO, logger="nbdist"),
        tf.train.MonitoredTrainingSession(
            checkpoint_dir=str(tmp_path), hooks=[tf.train.StopAtStepHook(last_step=7)]
        ) as sess,
    ):
        assert sess.should_stop() is False
        assert sess.run([step, w]) == [7, 7.0]
    assert "Restoring parameters from" in caplog.text


def test_monitored_session_recreates_itself_on_aborted(tmp_path, caplog):
    step = tf.train.get_or_create_global_step()
    inc = tf.assign_add(step, 1)

    class Preempt(tf.train.SessionRunHook):
        """Raises AbortedError once at step 5, as a restarted ps makes a run fail."""

        created = 0

        def after_create_session(self, session, coord):
            Preempt.created += 1

        def before_run(self, run_context):
            if Preempt.created == 1 and int(run_context.session.run(step)) == 5:
                raise tf.errors.AbortedError(None, None, "ps restarted")

    hooks = [Preempt(), tf.train.StopAtStepHook(last_step=8)]
    with (
        caplog.at_level(logging.INFO, logger="nbdist"),
        tf.train.MonitoredTrainingSession(
            checkpoint_dir=str(tmp_path), hooks=hooks, save_checkpoint_steps=2
        ) as sess,
    ):
        values = []
        while not sess.should_stop():
            values.append(int(sess.run(inc)))
    assert Preempt.created == 2
    assert "An error was raised. This may be due to a preemption" in caplog.text
    assert "Recovered: a new session was created (recovery 1)" in caplog.text
    # The new local session restored step 4's checkpoint, so training continued from there.
    assert values == [1, 2, 3, 4, 5, 5, 6, 7, 8]


def test_singular_monitored_session_gives_the_raw_session():
    v = tf.Variable(3.0)
    with tf.train.SingularMonitoredSession() as sess:
        assert sess.raw_session().run(v) == 3.0


def test_scaffold_uses_collection_entries_and_rejects_two():
    tf.Variable(1.0)
    init = tf.global_variables_initializer()
    tf.add_to_collection(tf.GraphKeys.INIT_OP, init)
    scaffold = tf.train.Scaffold().finalize()
    assert scaffold.init_op is init
    assert scaffold.summary_op is None
    assert isinstance(scaffold.saver, tf.train.Saver)
    tf.reset_default_graph()
    tf.Variable(1.0)
    tf.add_to_collection(tf.GraphKeys.INIT_OP, tf.global_variables_initializer())
    tf.add_to_collection(tf.GraphKeys.INIT_OP, tf.global_variables_initializer())
    with pytest.raises(RuntimeError, match='More than one item in the collection "init_op"'):
        tf.train.Scaffold().finalize()


def test_recovering_is_bounded_by_max_wait_secs_across_new_sessions(caplog):
    # Each new session fails again at once (a sync worker's, its chief gone, before issue 36 §4's
    # bound: a new session every 0.5 s for ever). The hook relents after 40 tries so that an
    # unbounded version ends too, and fails this test.
    step = tf.train.get_or_create_global_step()
    inc = tf.assign_add(step, 1)

    class PeerDown(tf.train.SessionRunHook):
        raised = 0

        def before_run(self, run_context):
            if PeerDown.raised < 40:
                PeerDown.raised += 1
                raise tf.errors.AbortedError(None, None, "/job:worker/task:0 is unavailable")

    started = time.monotonic()
    with (
        caplog.at_level(logging.INFO, logger="nbdist"),
        pytest.raises(
            tf.errors.AbortedError,
            match=r"^No step succeeded in 1\.\d s \(max_wait_secs=1\) over [1-3] new session\(s\)\. "
            r"The last error: /job:worker/task:0 is unavailable$",
        ),
        tf.train.MonitoredTrainingSession(hooks=[PeerDown()], max_wait_secs=1) as sess,
    ):
        sess.run(inc)
    assert time.monotonic() - started < 5
    assert PeerDown.raised < 10


def test_a_step_that_waits_longer_than_max_wait_secs_fails_naming_what_it_waits_for():
    # A sync worker whose chief is gone waits in its token dequeue (as TF's, for ever there);
    # max_wait_secs bounds a step as it bounds recovering. A caller's longer timeout does not
    # extend it (before issue 36 §4, this waited for the caller's 5 s).
    queue = tf.FIFOQueue(1, tf.int32, shapes=(), name="sync_token_q")
    dequeue = queue.dequeue()
    started = time.monotonic()
    with (
        pytest.raises(
            tf.errors.DeadlineExceededError,
            match=r"^No step succeeded in 1\.\d s \(max_wait_secs=1\)\. The last error: .*FIFOQueue 'sync_token_q'",
        ),
        tf.train.MonitoredTrainingSession(max_wait_secs=1) as sess,
    ):
        sess.run(dequeue, options=tf.RunOptions(timeout_in_ms=5000))
    assert time.monotonic() - started < 4
