"""`tf.train.MonitoredSession` and friends: a session with hooks that survives a ps restart.

A `MonitoredSession` is three wrappers around a raw `tf.Session`, as in TF:

- hooked: each `run` calls every hook's `before_run` (extra fetches/feeds), the run, then
  `after_run`; a hook's `request_stop()` makes `should_stop()` True;
- coordinated: a `Coordinator` (queue-runner threads started at creation) stops with it;
- recoverable: on `AbortedError` / `UnavailableError` (a ps or worker restarted) it logs
  that it does so, closes the session and creates a new one through its session creator,
  which restores the latest checkpoint (chief) or waits until the model is ready again
  (other workers), then re-runs the failed call. A run that keeps failing (a new session
  every 0.5 s at most) gives up `max_wait_secs` after its first error, so recovering is
  bounded. A preemption error while closing (a queue runner's, its task gone) is logged.

Hook order: every ``begin()`` (graph editable), then the scaffold finalizes the graph, then
``after_create_session`` per (re)created session, ``before_run``/``after_run`` per run, and
``end`` at a clean `close()` (not when closing because of an error). Leaving the ``with``
block on `OutOfRangeError` (an input queue closed and drained) is a clean stop.
"""

import contextlib
import logging

from nbdist import errors
from nbdist.graph.graph import GraphKeys, get_default_graph
from nbdist.runtime.config import RunMetadata, RunOptions
from nbdist.train import basic_session_run_hooks as _hooks
from nbdist.train.coordinator import Coordinator
from nbdist.train.recoverable_session import PREEMPTION_ERRORS, RecoverableSession
from nbdist.train.scaffold import Scaffold
from nbdist.train.session_manager import SessionManager
from nbdist.train.session_run_hook import SessionRunArgs, SessionRunContext, SessionRunValues

_log = logging.getLogger("nbdist")


class SessionCreator:
    """Creates a `tf.Session` (base class)."""

    def create_session(self):
        raise NotImplementedError("create_session is not implemented for a bare SessionCreator")


class ChiefSessionCreator(SessionCreator):
    """Restores the latest checkpoint of `checkpoint_dir` or initializes (`prepare_session`)."""

    def __init__(
        self, scaffold=None, master="", config=None, checkpoint_dir=None, checkpoint_filename_with_path=None
    ):
        self._checkpoint_dir = checkpoint_dir
        self._checkpoint_filename_with_path = checkpoint_filename_with_path
        self._scaffold = scaffold or Scaffold()
        self._session_manager = None
        self._master = master
        self._config = config

    def _get_session_manager(self):
        if self._session_manager is None:
            self._session_manager = SessionManager(
                local_init_op=self._scaffold.local_init_op,
                local_init_feed_dict=self._scaffold.local_init_feed_dict,
                ready_op=self._scaffold.ready_op,
                ready_for_local_init_op=self._scaffold.ready_for_local_init_op,
                graph=get_default_graph(),
            )
        return self._session_manager

    def create_session(self):
        self._scaffold.finalize()
        return self._get_session_manager().prepare_session(
            self._master,
            saver=self._scaffold.saver,
            checkpoint_dir=self._checkpoint_dir,
            checkpoint_filename_with_path=self._checkpoint_filename_with_path,
            config=self._config,
            init_op=self._scaffold.init_op,
            init_feed_dict=self._scaffold.init_feed_dict,
            init_fn=self._scaffold.init_fn,
        )


class WorkerSessionCreator(SessionCreator):
    """Waits until the chief made the model ready (`wait_for_session`), logging what is missing."""

    def __init__(self, scaffold=None, master="", config=None, max_wait_secs=30 * 60):
        self._scaffold = scaffold or Scaffold()
        self._session_manager = None
        self._master = master
        self._config = config
        self._max_wait_secs = max_wait_secs

    def _get_session_manager(self):
        if self._session_manager is None:
            self._session_manager = SessionManager(
                local_init_op=self._scaffold.local_init_op,
                local_init_feed_dict=self._scaffold.local_init_feed_dict,
                ready_op=self._scaffold.ready_op,
                ready_for_local_init_op=self._scaffold.ready_for_local_init_op,
                graph=get_default_graph(),
            )
        return self._session_manager

    def create_session(self):
        self._scaffold.finalize()
        return self._get_session_manager().wait_for_session(
            self._master, config=self._config, max_wait_secs=self._max_wait_secs
        )


def _start_queue_runners(sess, coord):
    """Starts the graph's queue runners (anything with TF's ``create_threads``) under `coord`."""
    threads = []
    for qr in get_default_graph().get_collection(GraphKeys.QUEUE_RUNNERS):
        threads.extend(qr.create_threads(sess, coord=coord, daemon=True, start=True))
    return threads


def _merge_options(options, extra):
    if extra is None:
        return options
    merged = RunOptions(
        timeout_in_ms=max(options.timeout_in_ms or 0, extra.timeout_in_ms or 0),
        trace_level=max(options.trace_level or 0, extra.trace_level or 0),
    )
    return merged


class _HookedSession:
    """Calls the hooks around each run."""

    def __init__(self, sess, hooks):
        self._sess = sess
        self._hooks = hooks
        self._should_stop = False

    def should_stop(self):
        return self._should_stop

    def close(self):
        self._sess.close()

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        if self._should_stop:
            raise RuntimeError("Run called even after should_stop requested.")
        context = SessionRunContext(SessionRunArgs(fetches, feed_dict, options), self._sess)
        options = options or RunOptions()
        feeds = dict(feed_dict or {})
        user_keys = set(feeds)
        extra = []
        for hook in self._hooks:
            request = hook.before_run(context)
            if request is None:
                extra.append(None)
                continue
            if request.feed_dict:
                clash = user_keys.intersection(request.feed_dict) or set(feeds).intersection(
                    request.feed_dict
                )
                if clash:
                    raise RuntimeError(
                        "Same tensor is fed by a SessionRunHook and user (or two hooks): "
                        f"{sorted(map(str, clash))}"
                    )
                feeds.update(request.feed_dict)
            options = _merge_options(options, request.options)
            extra.append(request.fetches)
        wanted = [(i, f) for i, f in enumerate(extra) if f is not None]
        run_metadata = run_metadata or RunMetadata()
        outputs = self._sess.run(
            [fetches, [f for _, f in wanted]],
            feed_dict=feeds or None,
            options=options,
            run_metadata=run_metadata,
        )
        results = dict(zip([i for i, _ in wanted], outputs[1]))
        for i, hook in enumerate(self._hooks):
            hook.after_run(context, SessionRunValues(results.get(i), options, run_metadata))
        self._should_stop = self._should_stop or context.stop_requested
        return outputs[0]


class _CoordinatedSession:
    """Stops the coordinator's threads with the session."""

    def __init__(self, sess, coord, stop_grace_period_secs):
        self._sess = sess
        self._coord = coord
        self._stop_grace_period_secs = stop_grace_period_secs

    def should_stop(self):
        self._coord.raise_requested_exception()  # a thread's error surfaces here, as in TF
        return self._coord.should_stop() or self._sess.should_stop()

    def run(self, *args, **kwargs):
        try:
            return self._sess.run(*args, **kwargs)
        except PREEMPTION_ERRORS:
            raise
        except Exception:
            # A thread (e.g. a queue runner) may have failed first: its error explains this one.
            self._coord.raise_requested_exception()
            raise

    def close(self):
        self._coord.request_stop()
        try:
            self._coord.join(stop_grace_period_secs=self._stop_grace_period_secs, ignore_live_threads=True)
        finally:
            with contextlib.suppress(errors.OpError):  # the session's tasks may be gone
                self._sess.close()


class _CoordinatedSessionCreator:
    def __init__(self, session_creator, hooks, stop_grace_period_secs):
        self._session_creator = session_creator
        self._hooks = hooks
        self._stop_grace_period_secs = stop_grace_period_secs
        self.is_chief = not isinstance(session_creator, WorkerSessionCreator)
        self.coord = None
        self.tf_sess = None

    def create_session(self):
        self.tf_sess = self._session_creator.create_session()
        self.coord = Coordinator()
        _start_queue_runners(self.tf_sess, self.coord)
        for hook in self._hooks:
            hook.after_create_session(self.tf_sess, self.coord)
        return _CoordinatedSession(
            _HookedSession(self.tf_sess, self._hooks), self.coord, self._stop_grace_period_secs
        )


class _StepContext:
    """What `run_step_fn`'s function gets: the raw session, `run_with_hooks`, `request_stop`."""

    def __init__(self, session, run_with_hooks_fn):
        self._session = session
        self._run_with_hooks_fn = run_with_hooks_fn
        self.stop_requested = False

    @property
    def session(self):
        return self._session

    def run_with_hooks(self, *args, **kwargs):
        return self._run_with_hooks_fn(*args, **kwargs)

    def request_stop(self):
        self.stop_requested = True


class _MonitoredSession:
    """What `MonitoredSession` and `SingularMonitoredSession` share."""

    def __init__(
        self, session_creator, hooks, should_recover, stop_grace_period_secs=120, max_wait_secs=7200
    ):
        self._hooks = list(hooks or [])
        for hook in self._hooks:
            hook.begin()
        self._coordinated_creator = _CoordinatedSessionCreator(
            session_creator or ChiefSessionCreator(), self._hooks, stop_grace_period_secs
        )
        if should_recover:
            self._sess = RecoverableSession(self._coordinated_creator, max_wait_secs)
        else:
            self._sess = self._coordinated_creator.create_session()

    @property
    def graph(self):
        return get_default_graph()

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Runs `fetches` with the hooks' extra fetches and feeds (see the module docstring)."""
        if self._sess is None:
            raise RuntimeError("Session is already closed.")
        return self._sess.run(fetches, feed_dict=feed_dict, options=options, run_metadata=run_metadata)

    def run_step_fn(self, step_fn):
        """Calls ``step_fn(step_context)``; its `request_stop()` ends the loop like a hook's."""
        context = _StepContext(self._coordinated_creator.tf_sess, self.run)
        value = step_fn(context)
        if context.stop_requested:
            self._coordinated_creator.coord.request_stop()
        return value

    def should_stop(self):
        return self._sess is None or self._sess.should_stop()

    def close(self):
        self._close_internal()

    def _close_internal(self, exception_type=None):
        try:
            if not exception_type:
                for hook in self._hooks:
                    hook.end(self._coordinated_creator.tf_sess)
        finally:
            try:
                if self._sess is not None:
                    self._sess.close()
            finally:
                self._sess = None
                self._coordinated_creator.tf_sess = None
                self._coordinated_creator.coord = None

    def __enter__(self):
        return self

    def __exit__(self, exception_type, exception_value, traceback):
        if exception_type in (errors.OutOfRangeError, StopIteration):
            exception_type = None
        self._close_internal(exception_type)
        return exception_type is None


class MonitoredSession(_MonitoredSession):
    """A session that runs hooks around each run and re-creates itself after a task restart.

    Recovers from `AbortedError` / `UnavailableError` by re-creating its session.

    Example::

        with tf.train.MonitoredSession(session_creator=tf.train.ChiefSessionCreator(
                master=server.target, checkpoint_dir=ckpt_dir), hooks=hooks) as sess:
            while not sess.should_stop():
                sess.run(train_op)
    """

    def __init__(self, session_creator=None, hooks=None, stop_grace_period_secs=120):
        super().__init__(
            session_creator, hooks, should_recover=True, stop_grace_period_secs=stop_grace_period_secs
        )


class SingularMonitoredSession(_MonitoredSession):
    """A chief `MonitoredSession` that does not recover; `raw_session()` gives the tf.Session."""

    def __init__(
        self,
        hooks=None,
        scaffold=None,
        master="",
        config=None,
        checkpoint_dir=None,
        stop_grace_period_secs=120,
        checkpoint_filename_with_path=None,
    ):
        creator = ChiefSessionCreator(
            scaffold=scaffold,
            master=master,
            config=config,
            checkpoint_dir=checkpoint_dir,
            checkpoint_filename_with_path=checkpoint_filename_with_path,
        )
        super().__init__(creator, hooks, should_recover=False, stop_grace_period_secs=stop_grace_period_secs)

    def raw_session(self):
        return self._coordinated_creator.tf_sess


USE_DEFAULT = object()


def MonitoredTrainingSession(  # noqa: N802 - TF's public name (a function in TF too)
    master="",
    is_chief=True,
    checkpoint_dir=None,
    scaffold=None,
    hooks=None,
    chief_only_hooks=None,
    save_checkpoint_secs=USE_DEFAULT,
    save_summaries_steps=USE_DEFAULT,
    save_summaries_secs=USE_DEFAULT,
    config=None,
    stop_grace_period_secs=120,
    log_step_count_steps=100,
    max_wait_secs=7200,
    save_checkpoint_steps=USE_DEFAULT,
    summary_dir=None,
):
    """A `MonitoredSession` set up for (distributed) training, as TF's.

    The chief (`is_chief`) restores the latest checkpoint of `checkpoint_dir` or
    initializes the model, and runs `chief_only_hooks` plus the default hooks, in this
    order: `StepCounterHook` (every `log_step_count_steps`), `SummarySaverHook` (every
    `save_summaries_steps`, default 100), `CheckpointSaverHook` (every
    `save_checkpoint_secs`, default 600, or `save_checkpoint_steps`), then `hooks`.
    Other workers wait (at most `max_wait_secs`) until the model is ready, then run `hooks`.
    Both recover from a ps restart (see `MonitoredSession`). `max_wait_secs` also bounds the
    time a run goes without a successful step, across recoveries (TF waits for ever there,
    e.g. a sync worker whose chief is gone): past it, the run raises the last error's class.

    Returns:
        A `MonitoredSession`.
    """
    if save_summaries_steps is USE_DEFAULT and save_summaries_secs is USE_DEFAULT:
        save_summaries_steps, save_summaries_secs = 100, None
    elif save_summaries_secs is USE_DEFAULT:
        save_summaries_secs = None
    elif save_summaries_steps is USE_DEFAULT:
        save_summaries_steps = None
    if save_checkpoint_steps is USE_DEFAULT and save_checkpoint_secs is USE_DEFAULT:
        save_checkpoint_steps, save_checkpoint_secs = None, 600
    elif save_checkpoint_secs is USE_DEFAULT:
        save_checkpoint_secs = None
    elif save_checkpoint_steps is USE_DEFAULT:
        save_checkpoint_steps = None
    scaffold = scaffold or Scaffold()
    if not is_chief:
        creator = WorkerSessionCreator(
            scaffold=scaffold, master=master, config=config, max_wait_secs=max_wait_secs
        )
        return _monitored(creator, list(hooks or []), stop_grace_period_secs, max_wait_secs)
    all_hooks = list(chief_only_hooks or [])
    creator = ChiefSessionCreator(
        scaffold=scaffold, checkpoint_dir=checkpoint_dir, master=master, config=config
    )
    summary_dir = summary_dir or checkpoint_dir
    if summary_dir:
        if log_step_count_steps and log_step_count_steps > 0:
            all_hooks.append(
                _hooks.StepCounterHook(output_dir=summary_dir, every_n_steps=log_step_count_steps)
            )
        if (save_summaries_steps and save_summaries_steps > 0) or (
            save_summaries_secs and save_summaries_secs > 0
        ):
            all_hooks.append(
                _hooks.SummarySaverHook(
                    scaffold=scaffold,
                    save_steps=save_summaries_steps,
                    save_secs=save_summaries_secs,
                    output_dir=summary_dir,
                )
            )
    if checkpoint_dir and (
        (save_checkpoint_secs and save_checkpoint_secs > 0)
        or (save_checkpoint_steps and save_checkpoint_steps > 0)
    ):
        all_hooks.append(
            _hooks.CheckpointSaverHook(
                checkpoint_dir,
                save_steps=save_checkpoint_steps,
                save_secs=save_checkpoint_secs,
                scaffold=scaffold,
            )
        )
    all_hooks.extend(hooks or [])
    return _monitored(creator, all_hooks, stop_grace_period_secs, max_wait_secs)


def _monitored(creator, hooks, stop_grace_period_secs, max_wait_secs):
    session = MonitoredSession.__new__(MonitoredSession)
    _MonitoredSession.__init__(
        session,
        creator,
        hooks,
        should_recover=True,
        stop_grace_period_secs=stop_grace_period_secs,
        max_wait_secs=max_wait_secs,
    )
    return session
