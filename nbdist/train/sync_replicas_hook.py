"""The session-run hook of `SyncReplicasOptimizer` (``opt.make_session_run_hook(is_chief)``).

After the session is created it waits for the global variables (the chief initializes
them), runs the local init (the chief also sets every accumulator's time step), seeds the
token queue and starts the sync op's queue runner (chief only). At `end` the chief closes
the token queue and the accumulators, so every other worker's blocked step ends with
`OutOfRangeError` — a clean stop — instead of waiting for ever as it does in TF; any
other worker hands back the token it holds, so a chief still training is never left
waiting for a gradient nobody will send (`SyncReplicasOptimizer.get_release_token_op`).
"""

import logging

from nbdist import errors
from nbdist.train.session_run_hook import SessionRunHook

_log = logging.getLogger(__name__)


class SyncReplicasOptimizerHook(SessionRunHook):
    """Runs the sync optimizer's init, tokens, queue runner, and (chief) its clean end."""

    def __init__(self, sync_optimizer, is_chief, num_tokens):
        self._sync_optimizer = sync_optimizer
        self._is_chief = is_chief
        self._num_tokens = num_tokens

    def begin(self):
        opt = self._sync_optimizer
        if opt.local_step_init_op is None:
            raise ValueError("SyncReplicasOptimizer.apply_gradients should be called before using the hook.")
        if self._is_chief:
            self._local_init_op = opt.chief_init_op
            self._q_runner = opt.get_chief_queue_runner()
            self._init_tokens_op = opt.get_init_tokens_op(self._num_tokens)
            self._end_op = opt.get_close_op()
        else:
            self._local_init_op = opt.local_step_init_op
            self._q_runner = None
            self._init_tokens_op = None
            self._end_op = opt.get_release_token_op()
        self._ready_for_local_init_op = opt.ready_for_local_init_op

    def after_create_session(self, session, coord):
        missing = session.run(self._ready_for_local_init_op)
        if len(missing):
            names = [m.decode() if isinstance(m, bytes) else str(m) for m in missing]
            raise RuntimeError(
                "Init operations did not make model ready for SyncReplicasOptimizerHook local_init. "
                f"Init op: {self._local_init_op.name}, uninitialized variables: {names}"
            )
        session.run(self._local_init_op)
        if self._init_tokens_op is not None:
            session.run(self._init_tokens_op)
        if self._q_runner is not None:
            self._q_runner.create_threads(session, coord=coord, daemon=True, start=True)

    def end(self, session):
        try:
            session.run(self._end_op)
        except (errors.CancelledError, errors.OutOfRangeError):  # training is over: the queue is closed
            return
        except errors.OpError as e:  # the ps may be gone already: nothing is left to release
            what = "close the token queue" if self._is_chief else "hand back its token"
            _log.warning("SyncReplicasOptimizer: could not %s: %s", what, e)
            return
        if self._is_chief:
            _log.info("SyncReplicasOptimizer: the chief closed the token queue and the accumulators")
        else:
            _log.info("SyncReplicasOptimizer: this worker stopped and handed back its token")
