"""The recoverable layer of a `MonitoredSession` (`nbdist.train.monitored_session`): a session
re-created on `AbortedError` / `UnavailableError` (a ps or worker restarted, or not started yet)
while a step can still succeed within `max_wait_secs`.
"""

import copy
import logging
import time

from nbdist import errors
from nbdist.runtime.config import RunOptions
from nbdist.runtime.net import transport
from nbdist.train.session_manager import chief_task

_log = logging.getLogger("nbdist")
PREEMPTION_ERRORS = (errors.AbortedError, errors.UnavailableError)
_RETRY_S = 0.5


class RecoverableSession:
    """Re-creates the session on AbortedError/UnavailableError while a step can still succeed.

    Bounded by `max_wait_secs` of time without a successful step, across recoveries: each run
    gets that deadline (or the caller's own, if sooner), counted from the run's start or from
    the first error since the last successful step. A sync worker whose chief is gone waits in
    its token dequeue, as TF's does, until then; past it, the last error's class is raised, its
    message (which names what the step waited for) prefixed with how long it was tried.
    """

    def __init__(self, creator, max_wait_secs):
        self._creator = creator
        self._max_wait_secs = max_wait_secs
        self.recoveries = 0
        self._failing = None  # (since, recoveries then): the first error with no step since
        self._sess = self._create_session(time.monotonic() + max_wait_secs)

    def _create_session(self, deadline):
        while True:
            try:
                return self._creator.create_session()
            except PREEMPTION_ERRORS as e:
                left_s = deadline - time.monotonic()
                if left_s <= 0:
                    raise
                if transport.NEVER_REACHED in e.message:  # not started yet: tasks start in any order
                    _log.info("Waiting (%.0f s left of max_wait_secs): %s", left_s, e.message.splitlines()[0])
                else:
                    _log.info(
                        "An error was raised while a session was being created. This may be due to a "
                        "preemption of a connected worker or parameter server. A new session will be "
                        "created in %.1f s. Error: %s",
                        min(_RETRY_S, left_s),
                        e.message.splitlines()[0],
                    )
                time.sleep(min(_RETRY_S, left_s))

    def _gave_up(self, error, since):
        """`error`'s class, its message prefixed with how long and how often a step was tried
        and, on a worker that is not the chief, the chief its steps wait for."""
        waited_s = time.monotonic() - since
        recoveries = self.recoveries - self._failing[1] if self._failing else 0
        said = f"No step succeeded in {waited_s:.1f} s (max_wait_secs={self._max_wait_secs:g})"
        if recoveries:
            said += f" over {recoveries} new session(s)"
        if not self._creator.is_chief and self._creator.tf_sess is not None:
            # Its token dequeue (sync training) or its model (any) waits for the chief: name it.
            chief = chief_task(self._creator.tf_sess)
            said += f"; this worker's steps wait for the chief, {chief} (is it running?)"
        self.close()
        return type(error)(error.node_def, error.op, f"{said}. The last error: {error.message}")

    def _failed(self, error):
        """Notes a preemption error; gives up (closing, raising) past the deadline. Returns the
        seconds left."""
        now = time.monotonic()
        if self._failing is None:
            self._failing = (now, self.recoveries)
        since = self._failing[0]
        if now >= since + self._max_wait_secs:
            raise self._gave_up(error, since) from error
        return since + self._max_wait_secs - now

    def _recover(self):
        if self._failing is None:  # a run after giving up (the session closed): a new bound
            self._failing = (time.monotonic(), self.recoveries)
        try:
            self._sess = self._create_session(self._failing[0] + self._max_wait_secs)
        except PREEMPTION_ERRORS as e:
            self._failed(e)
            raise  # (not reached: past the deadline, _failed raises)
        self.recoveries += 1
        _log.info("Recovered: a new session was created (recovery %d).", self.recoveries)

    def should_stop(self):
        """As TF: an error a thread reported (its coordinator's) is raised here; a preemption
        error re-creates the session (not a stop), any other says stop (`close` raises it)."""
        if self._sess is None:
            return True
        try:
            return self._sess.should_stop()
        except PREEMPTION_ERRORS as e:
            self._failed(e)
            _log.info(
                "An error was raised while considering whether the session is complete. This may be "
                "due to a preemption in a connected worker or parameter server. The current session "
                "will be closed and a new session will be created. Error: %s",
                e.message.splitlines()[0],
            )
            self.close()
            self._recover()
            return False
        except Exception:  # noqa: BLE001 - as TF's: should_stop says stop; close() raises it
            return True

    def _bounded(self, options, since):
        """`options` with a step deadline at `since` + `max_wait_secs`, unless the caller's own
        (`options.timeout_in_ms`, else the config's `operation_timeout_in_ms`) is sooner; and
        whether the deadline is this one."""
        config = getattr(self._creator.tf_sess, "_config", None)
        theirs = (options.timeout_in_ms if options else 0) or getattr(config, "operation_timeout_in_ms", 0)
        ours = max(1, int((since + self._max_wait_secs - time.monotonic()) * 1000))
        if theirs and theirs <= ours:
            return options, False
        bounded = copy.copy(options) if options else RunOptions()
        bounded.timeout_in_ms = ours
        return bounded, True

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        started = time.monotonic()
        fresh = False  # a session created by this call: failing again at once is not progress
        while True:
            if self._sess is None:
                self._recover()
                fresh = True
            since = self._failing[0] if self._failing else started
            bounded, ours = self._bounded(options, since)
            try:
                outputs = self._sess.run(
                    fetches, feed_dict=feed_dict, options=bounded, run_metadata=run_metadata
                )
            except PREEMPTION_ERRORS as e:
                left_s = self._failed(e)
                if fresh:  # the cause is still there (a peer that is still down): do not spin
                    time.sleep(min(_RETRY_S, left_s))
                _log.info(
                    "An error was raised. This may be due to a preemption in a connected worker or "
                    "parameter server. The current session will be closed and a new session will be "
                    "created (restoring the latest checkpoint on the chief). Error: %s",
                    e.message.splitlines()[0],
                )
                self.close()
                continue
            except errors.DeadlineExceededError as e:
                if not ours:
                    raise
                raise self._gave_up(e, since) from e
            self._failing = None
            return outputs

    def close(self):
        """Closes the session; a preemption error on the way (a thread's, reported to the
        coordinator when its task went away) is logged, not raised, as in TF."""
        if self._sess is not None:
            try:
                self._sess.close()
            except PREEMPTION_ERRORS as e:
                _log.error(
                    "An error occurred when attempting to close the session. This may be due to a "
                    "preemption in a connected worker or parameter server. Error: %s",
                    e.message.splitlines()[0],
                )
            finally:
                self._sess = None
