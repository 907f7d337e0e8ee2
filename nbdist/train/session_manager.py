"""`tf.train.SessionManager`: create a session whose model is ready (restored or initialized).

- `prepare_session` (the chief): restore the latest checkpoint of `checkpoint_dir` if there
  is one, else run `init_op` / `init_fn`; then the local init; then check `ready_op`.
- `wait_for_session` (other workers): poll until the chief made the model ready, then run
  the local init. Where TF logs a bare "Waiting for model to be ready", nbdist names the
  uninitialized variables, the task holding them, and the chief task that should initialize
  them, and logs at most every ``min(recovery_wait_secs, 10)`` seconds.
- `recover_session`: restore if possible, report whether the model is ready.
"""

import contextlib
import logging
import time

import numpy as np

from nbdist import errors
from nbdist.graph.graph import get_default_graph
from nbdist.runtime.session import Session
from nbdist.train import checkpoint_management as _cm

_log = logging.getLogger("nbdist")
_LOG_EVERY_MAX_S = 10.0
_POLL_MAX_S = 0.5


def _names(value):
    return [v.decode() if isinstance(v, bytes) else str(v) for v in np.asarray(value).reshape(-1)]


def chief_task(sess):
    """The task that, by TF's convention, initializes the model: the chief job's, else worker 0."""
    workers = getattr(getattr(sess, "_backend", None), "_workers", {}) or {}
    if any(device.startswith("/job:chief/") for device in workers):
        return "/job:chief/task:0"
    return "/job:worker/task:0"


class SessionManager:
    """Creates sessions whose model is ready: restored, initialized, or waited for.

    Args:
        local_init_op: run in every new session once `ready_for_local_init_op` is satisfied.
        ready_op: a string tensor listing what is not ready (empty: ready).
        recovery_wait_secs: polling bound for `wait_for_session` (see the module docstring).
    """

    def __init__(
        self,
        local_init_op=None,
        ready_op=None,
        ready_for_local_init_op=None,
        graph=None,
        recovery_wait_secs=30,
        local_init_run_options=None,
        local_init_feed_dict=None,
    ):
        self._local_init_op = local_init_op
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._graph = graph or get_default_graph()
        self._recovery_wait_secs = recovery_wait_secs
        self._local_init_run_options = local_init_run_options
        self._local_init_feed_dict = local_init_feed_dict
        self._target = None
        if ready_for_local_init_op is not None and local_init_op is None:
            raise ValueError("If you pass a ready_for_local_init_op you must also pass a local_init_op")

    # -- restoring -------------------------------------------------------------------------------
    def _restore_checkpoint(
        self,
        master,
        saver=None,
        checkpoint_dir=None,
        checkpoint_filename_with_path=None,
        wait_for_checkpoint=False,
        max_wait_secs=7200,
        config=None,
    ):
        self._target = master
        sess = Session(master, graph=self._graph, config=config)
        if checkpoint_dir and checkpoint_filename_with_path:
            raise ValueError("Can not provide both checkpoint_dir and checkpoint_filename_with_path.")
        if not saver or not (checkpoint_dir or checkpoint_filename_with_path):
            return sess, False
        if checkpoint_filename_with_path:
            saver.restore(sess, checkpoint_filename_with_path)
            return sess, True
        wait_time = 0
        state = _cm.get_checkpoint_state(checkpoint_dir)
        while not state or not state.model_checkpoint_path:
            if wait_for_checkpoint and wait_time < max_wait_secs:
                _log.info("Waiting for checkpoint to be available in %s.", checkpoint_dir)
                time.sleep(self._recovery_wait_secs)
                wait_time += self._recovery_wait_secs
                state = _cm.get_checkpoint_state(checkpoint_dir)
            else:
                return sess, False
        saver.restore(sess, state.model_checkpoint_path)
        saver.recover_last_checkpoints(state.all_model_checkpoint_paths)
        return sess, True

    def prepare_session(
        self,
        master,
        init_op=None,
        saver=None,
        checkpoint_dir=None,
        checkpoint_filename_with_path=None,
        wait_for_checkpoint=False,
        max_wait_secs=7200,
        config=None,
        init_feed_dict=None,
        init_fn=None,
    ):
        """A session with the model restored (latest checkpoint) or initialized, and ready.

        Raises:
            RuntimeError: nothing to initialize with, or the model is still not ready
                (naming the uninitialized variables).
        """
        sess, loaded = self._restore_checkpoint(
            master,
            saver,
            checkpoint_dir,
            checkpoint_filename_with_path,
            wait_for_checkpoint,
            max_wait_secs,
            config,
        )
        if loaded:
            _log.info(
                "Restored model from the latest checkpoint in %s",
                checkpoint_dir or checkpoint_filename_with_path,
            )
        else:
            if init_op is None and not init_fn and self._local_init_op is None:
                raise RuntimeError(
                    "Model is not initialized and no init_op or init_fn or local_init_op was given"
                )
            if init_op is not None:
                sess.run(init_op, feed_dict=init_feed_dict)
            if init_fn:
                init_fn(sess)
        ok, msg = self._try_run_local_init_op(sess)
        if not ok:
            raise RuntimeError(
                f"Init operations did not make model ready for local_init. Init op: {_op_name(init_op)}, "
                f"init fn: {init_fn}, error: {msg}"
            )
        ready, msg = self._model_ready(sess)
        if not ready:
            raise RuntimeError(
                f"Init operations did not make model ready. Init op: {_op_name(init_op)}, init fn: "
                f"{init_fn}, local_init_op: {_op_name(self._local_init_op)}, error: {msg}"
            )
        return sess

    def recover_session(
        self,
        master,
        saver=None,
        checkpoint_dir=None,
        checkpoint_filename_with_path=None,
        wait_for_checkpoint=False,
        max_wait_secs=7200,
        config=None,
    ):
        """``(session, initialized)``: restores if a checkpoint exists; says if the model is ready."""
        sess, loaded = self._restore_checkpoint(
            master,
            saver,
            checkpoint_dir,
            checkpoint_filename_with_path,
            wait_for_checkpoint,
            max_wait_secs,
            config,
        )
        ok, msg = self._try_run_local_init_op(sess)
        if not loaded:
            return sess, False
        where = checkpoint_dir or checkpoint_filename_with_path
        if not ok:
            _log.info("Restoring model from %s did not make model ready for local init: %s", where, msg)
            return sess, False
        ready, msg = self._model_ready(sess)
        if not ready:
            _log.info("Restoring model from %s did not make model ready: %s", where, msg)
            return sess, False
        _log.info("Restored model from %s", where)
        return sess, True

    # -- waiting ---------------------------------------------------------------------------------
    def wait_for_session(self, master, config=None, max_wait_secs=float("Inf")):
        """Waits until the model is ready (initialized by the chief); returns a session.

        Polls at most every 0.5 s; logs what it waits for (variables, their task, the chief)
        at most every ``min(recovery_wait_secs, 10)`` s.

        Raises:
            DeadlineExceededError: not ready after `max_wait_secs`, naming what is missing.
        """
        self._target = master
        max_wait_secs = float("Inf") if max_wait_secs is None else max_wait_secs
        start = time.monotonic()
        log_every = min(self._recovery_wait_secs, _LOG_EVERY_MAX_S)
        last_log = None
        sess = None
        while True:
            if sess is None:
                sess = Session(master, graph=self._graph, config=config)
            try:
                ok, local_msg = self._try_run_local_init_op(sess)
                ready, msg = self._model_ready(sess) if ok else (False, None)
            except (errors.UnavailableError, errors.AbortedError) as e:
                ok, ready, local_msg, msg = False, False, None, f"a task is unreachable: {e.message}"
                _safe_close(sess)
                sess = None
            if ok and ready:
                return sess
            waited = time.monotonic() - start
            what = self._describe_wait(sess, local_msg, msg)
            if waited + min(self._recovery_wait_secs, _POLL_MAX_S) > max_wait_secs:
                _safe_close(sess)
                raise errors.DeadlineExceededError(
                    None, None, f"Session was not ready after waiting {waited:.0f} secs: {what}"
                )
            if last_log is None or time.monotonic() - last_log >= log_every:
                _log.info("Waiting for model to be ready (%.0f s so far): %s", waited, what)
                last_log = time.monotonic()
            time.sleep(min(self._recovery_wait_secs, _POLL_MAX_S))

    def _describe_wait(self, sess, local_msg, msg):
        if msg and msg.startswith("a task is unreachable"):
            return msg
        names = self._last_not_ready or []
        chief = chief_task(sess) if sess is not None else "/job:worker/task:0"
        if names:
            by_device = {}
            for name in names:
                device = self._device_of(name)
                by_device.setdefault(device or "its device", []).append(name)
            held = "; ".join(f"{', '.join(v)} on {d}" for d, v in by_device.items())
            return (
                f"uninitialized variables: {held}. The chief ({chief}) should initialize them "
                "(or restore them from a checkpoint); is it running?"
            )
        return local_msg or msg or "the ready_op is not satisfied"

    def _device_of(self, name):
        try:
            return self._graph.get_operation_by_name(name).device
        except (KeyError, ValueError):
            return ""

    # -- readiness -------------------------------------------------------------------------------
    _last_not_ready = None

    def _ready(self, op, sess, kind):
        if op is None:
            return True, None
        try:
            names = _names(sess.run(op))
        except errors.FailedPreconditionError as e:
            if "uninitialized" not in e.message:
                raise
            _log.warning("Model not ready raised: %s", e.message)
            return False, f"{kind} raised: {e.message}"
        self._last_not_ready = names
        if not names:
            return True, None
        return False, "Variables not initialized: " + ", ".join(names)

    def _model_ready(self, sess):
        return self._ready(self._ready_op, sess, "ready_op")

    def _model_ready_for_local_init(self, sess):
        return self._ready(self._ready_for_local_init_op, sess, "ready_for_local_init_op")

    def _try_run_local_init_op(self, sess):
        if self._local_init_op is None:
            return True, None
        ready, msg = self._model_ready_for_local_init(sess)
        if not ready:
            return False, msg
        sess.run(
            self._local_init_op, feed_dict=self._local_init_feed_dict, options=self._local_init_run_options
        )
        return True, None


def _op_name(op):
    return getattr(op, "name", None)


def _safe_close(sess):
    if sess is None:
        return
    with contextlib.suppress(errors.OpError):  # its tasks may be gone: nothing to release
        sess.close()
