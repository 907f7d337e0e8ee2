"""`tf.train.SessionManager` and `tf.train.Supervisor` (local sessions)."""

import logging

import numpy as np
import pytest

import nbdist as tf

pytestmark = pytest.mark.usefixtures("fresh_graph")


def _manager(**kwargs):
    return tf.train.SessionManager(ready_op=tf.report_uninitialized_variables(), **kwargs)


def test_prepare_session_runs_init_op_without_checkpoint(tmp_path):
    v = tf.Variable(3.0, name="v")
    sm = _manager()
    sess = sm.prepare_session(
        "", init_op=tf.global_variables_initializer(), saver=tf.train.Saver(), checkpoint_dir=str(tmp_path)
    )
    assert sess.run(v) == 3.0
    sess.close()


def test_prepare_session_restores_the_latest_checkpoint(tmp_path):
    v = tf.Variable(3.0, name="v")
    saver = tf.train.Saver()
    init = tf.global_variables_initializer()
    with tf.Session() as sess:
        sess.run(init)
        sess.run(tf.assign(v, 8.0))
        saver.save(sess, str(tmp_path / "m"), global_step=1)
    sess = _manager().prepare_session("", init_op=init, saver=saver, checkpoint_dir=str(tmp_path))
    assert sess.run(v) == 8.0  # restored, not re-initialized
    assert saver.last_checkpoints == [str(tmp_path / "m-1")]
    sess.close()


def test_prepare_session_without_any_init_is_an_error():
    tf.Variable(1.0)
    with pytest.raises(RuntimeError, match="Model is not initialized and no init_op"):
        _manager().prepare_session("")


def test_prepare_session_checks_ready_op():
    tf.Variable(1.0, name="forgotten")
    other = tf.Variable(2.0, name="other")
    with pytest.raises(RuntimeError, match="Variables not initialized: forgotten"):
        _manager().prepare_session("", init_op=other.initializer)


def test_wait_for_session_names_what_it_waits_for(caplog):
    with tf.device("/job:ps/task:0"):
        tf.Variable(1.0, name="w")
    sm = _manager(recovery_wait_secs=0.1)
    with (
        caplog.at_level(logging.INFO, logger="nbdist"),
        pytest.raises(tf.errors.DeadlineExceededError, match="Session was not ready after waiting"),
    ):
        sm.wait_for_session("", max_wait_secs=0.5)
    waits = [r.getMessage() for r in caplog.records if "Waiting for model to be ready" in r.getMessage()]
    assert waits
    assert "uninitialized variables: w on /job:ps/task:0" in waits[0]
    assert "The chief (/job:worker/task:0) should initialize them" in waits[0]


def test_recover_session_reports_whether_it_restored(tmp_path):
    v = tf.Variable(3.0, name="v")
    saver = tf.train.Saver()
    sm = _manager()
    sess, initialized = sm.recover_session("", saver=saver, checkpoint_dir=str(tmp_path))
    assert initialized is False
    sess.run(v.initializer)
    saver.save(sess, str(tmp_path / "m"))
    sess.close()
    sess, initialized = sm.recover_session("", saver=saver, checkpoint_dir=str(tmp_path))
    assert initialized is True and sess.run(v) == 3.0
    sess.close()


# -- Supervisor ---------------------------------------------------------------------------------------
def _sv_model():
    step = tf.train.get_or_create_global_step()
    w = tf.Variable(np.zeros(2), name="w")
    train = tf.group(tf.assign_add(step, 1), tf.assign_add(w, np.ones(2)))
    return step, w, train


def test_supervisor_managed_session_initializes_saves_and_restores(tmp_path):
    step, w, train = _sv_model()
    sv = tf.train.Supervisor(logdir=str(tmp_path), global_step=step, save_model_secs=3600)
    assert tf.get_default_graph().finalized
    with sv.managed_session() as sess:
        for _ in range(4):
            sess.run(train)
        sv.saver.save(sess, sv.save_path, global_step=step)
    assert sv.should_stop()
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-4")
    assert tf.train.checkpoint_exists(str(tmp_path / "model.ckpt-0"))  # the service's first save
    tf.reset_default_graph()
    step, w, train = _sv_model()
    sv = tf.train.Supervisor(logdir=str(tmp_path), global_step=step, save_model_secs=0)
    with sv.managed_session() as sess:
        assert sess.run(step) == 4
        np.testing.assert_array_equal(sess.run(w), np.full(2, 4.0))


def test_supervisor_treats_out_of_range_as_a_clean_stop(tmp_path):
    _sv_model()
    sv = tf.train.Supervisor(logdir=str(tmp_path), save_model_secs=0)
    with sv.managed_session():
        raise tf.errors.OutOfRangeError(None, None, "input exhausted")
    assert sv.should_stop()


def test_supervisor_reraises_other_errors(tmp_path):
    _sv_model()
    sv = tf.train.Supervisor(logdir=str(tmp_path), save_model_secs=0)
    with pytest.raises(ValueError, match="boom"), sv.managed_session():
        raise ValueError("boom")


def test_non_chief_supervisor_needs_placed_variables():
    tf.Variable(1.0, name="unplaced")
    with pytest.raises(ValueError, match="all Variables must have their device set: 'unplaced'"):
        tf.train.Supervisor(is_chief=False)
