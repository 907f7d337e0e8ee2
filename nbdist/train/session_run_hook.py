"""`tf.train.SessionRunHook` and what hooks exchange with a `MonitoredSession`.

A monitored session calls, per hook and in the hooks' order::

    begin()                              # graph still editable; finalized after all begins
    after_create_session(session, coord) # each time a session is (re)created
    before_run(run_context) -> SessionRunArgs or None   # per run: extra fetches/feeds
    after_run(run_context, run_values)   # per run: run_values.results = the extra fetches
    end(session)                         # at close, unless closing because of an error
"""

import collections


class SessionRunHook:
    """Base class: override the calls you need (every default does nothing)."""

    def begin(self):
        pass

    def after_create_session(self, session, coord):
        pass

    def before_run(self, run_context):
        return None

    def after_run(self, run_context, run_values):
        pass

    def end(self, session):
        pass


class SessionRunArgs(collections.namedtuple("SessionRunArgs", ["fetches", "feed_dict", "options"])):
    """What a hook adds to a run: `fetches` (any structure), a `feed_dict`, `RunOptions`."""

    def __new__(cls, fetches, feed_dict=None, options=None):
        return super().__new__(cls, fetches, feed_dict, options)


class SessionRunValues(collections.namedtuple("SessionRunValues", ["results", "options", "run_metadata"])):
    """What a hook gets back: `results` has the structure of its `SessionRunArgs.fetches`."""


class SessionRunContext:
    """The run being made: its original arguments, the session, and a way to stop the loop."""

    def __init__(self, original_args, session):
        self._original_args = original_args
        self._session = session
        self._stop_requested = False

    @property
    def original_args(self):
        """The `SessionRunArgs` the caller passed to `run`."""
        return self._original_args

    @property
    def session(self):
        """The raw session (runs here call no hooks)."""
        return self._session

    @property
    def stop_requested(self):
        return self._stop_requested

    def request_stop(self):
        """After this run, `MonitoredSession.should_stop()` returns True."""
        self._stop_requested = True
