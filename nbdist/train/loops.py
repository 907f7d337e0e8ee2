"""Waiting and looping around training: `GlobalStepWaiterHook`, `FeedFnHook`, `basic_train_loop`
and `checkpoints_iterator`, as TF 1.x's (``basic_session_run_hooks.py``, ``basic_loops.py``,
``checkpoint_utils.py``); messages go to the ``nbdist`` logger with TF's wording.

    for path in tf.train.checkpoints_iterator(train_dir, timeout=600):
        saver.restore(sess, path)
        evaluate(sess)
"""

import logging
import time

from nbdist import errors
from nbdist.train import training_util
from nbdist.train.checkpoint_management import latest_checkpoint
from nbdist.train.session_run_hook import SessionRunArgs, SessionRunHook

_log = logging.getLogger("nbdist")

# Seconds between two reads of the global step while `GlobalStepWaiterHook` waits (TF's 0.5).
STEP_POLL_SECS = 0.5


class GlobalStepWaiterHook(SessionRunHook):
    """Delays this worker's first step until the global step reaches `wait_until_step`.

    A worker of a data-parallel job can so start after the chief made progress (TF's way of
    warming up with few replicas). The wait reads the global step every `STEP_POLL_SECS` seconds,
    before the first `run` only; ``wait_until_step <= 0`` does not wait.

    Raises:
        RuntimeError: at `begin`, if the graph has no global step.
    """

    def __init__(self, wait_until_step):
        self._wait_until_step = wait_until_step

    def begin(self):
        self._worker_is_started = False
        self._global_step_tensor = training_util.get_global_step()
        if self._global_step_tensor is None:
            raise RuntimeError("Global step should be created to use _GlobalStepWaiterHook.")

    def before_run(self, run_context):
        if self._worker_is_started:
            return None
        if self._wait_until_step <= 0:
            self._worker_is_started = True
            return None
        _log.info("Waiting for global step %d before starting training.", self._wait_until_step)
        last_logged_step = 0
        while True:
            current_step = int(run_context.session.run(self._global_step_tensor))
            if current_step >= self._wait_until_step:
                self._worker_is_started = True
                return None
            if current_step - last_logged_step > 1000:
                _log.info(
                    "Waiting for global step %d before starting training. Current step is %d.",
                    self._wait_until_step,
                    current_step,
                )
                last_logged_step = current_step
            time.sleep(STEP_POLL_SECS)


class FeedFnHook(SessionRunHook):
    """Adds ``feed_fn()``'s feed dict to every `run` (e.g. the next batch of a Python iterator)."""

    def __init__(self, feed_fn):
        self.feed_fn = feed_fn

    def before_run(self, run_context):
        return SessionRunArgs(fetches=None, feed_dict=self.feed_fn())


def basic_train_loop(supervisor, train_step_fn, args=None, kwargs=None, master=""):
    """Calls ``train_step_fn(session, *args, **kwargs)`` until `supervisor` should stop.

    The session is ``supervisor.managed_session(master)``; an `AbortedError` (a task of the
    cluster restarted) opens a new managed session and carries on, as TF's loop does.
    """
    args = [] if args is None else args
    kwargs = {} if kwargs is None else kwargs
    should_retry = True
    while should_retry:
        try:
            should_retry = False
            with supervisor.managed_session(master) as sess:
                while not supervisor.should_stop():
                    train_step_fn(sess, *args, **kwargs)
        except errors.AbortedError:
            should_retry = True


def wait_for_new_checkpoint(checkpoint_dir, last_checkpoint=None, seconds_to_sleep=1, timeout=None):
    """The latest checkpoint of `checkpoint_dir` once it is not `last_checkpoint`; `None` after
    `timeout` seconds (`None`: no limit) without one."""
    _log.info("Waiting for new checkpoint at %s", checkpoint_dir)
    stop_time = time.time() + timeout if timeout is not None else None
    while True:
        checkpoint_path = latest_checkpoint(checkpoint_dir)
        if checkpoint_path is not None and checkpoint_path != last_checkpoint:
            _log.info("Found new checkpoint at %s", checkpoint_path)
            return checkpoint_path
        if stop_time is not None and time.time() + seconds_to_sleep > stop_time:
            return None
        time.sleep(seconds_to_sleep)


def checkpoints_iterator(checkpoint_dir, min_interval_secs=0, timeout=None, timeout_fn=None):
    """Yields each new checkpoint path of `checkpoint_dir` (its ``checkpoint`` file's latest).

    Waits at least `min_interval_secs` between two yields (from the previous yield's time), and
    at most `timeout` seconds for a new checkpoint (`None`: forever). After a timeout the
    iterator ends, or, with `timeout_fn`, ends if ``timeout_fn()`` is true and waits again
    otherwise. Only the latest checkpoint is seen: one written and superseded between two
    looks is skipped.
    """
    checkpoint_path = None
    while True:
        new_checkpoint_path = wait_for_new_checkpoint(checkpoint_dir, checkpoint_path, timeout=timeout)
        if new_checkpoint_path is None:
            if not timeout_fn:
                _log.info("Timed-out waiting for a checkpoint.")
                return
            if timeout_fn():
                return
            continue
        start = time.time()
        checkpoint_path = new_checkpoint_path
        yield checkpoint_path
        time_to_next_eval = start + min_interval_secs - time.time()
        if time_to_next_eval > 0:
            time.sleep(time_to_next_eval)
