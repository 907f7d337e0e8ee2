"""`tf.train.Supervisor`: TF's older training-session helper, as many tutorials still use it.

    sv = tf.train.Supervisor(is_chief=(task_index == 0), logdir=ckpt_dir,
                             global_step=global_step, save_model_secs=60)
    with sv.managed_session(server.target) as sess:
        while not sv.should_stop() and step < 1000:
            _, step = sess.run([train_op, global_step])

The chief restores the latest checkpoint of `logdir` or runs `init_op`, writes the graph to
`logdir`'s event file, then starts its standard services: a thread saving a checkpoint every
`save_model_secs` and, every `save_summaries_secs`, one writing `summary_op` (when the graph
has summaries) and one writing ``global_step/sec``. Event files need tensorboardX (a
dependency); where it is missing the Supervisor writes none and says so once in the log. Other
workers wait until the model is ready, logging the uninitialized variables and the chief
that should initialize them (`SessionManager.wait_for_session`). `managed_session` treats
`OutOfRangeError` as a clean stop and re-raises any other error after stopping the threads.
"""

import contextlib
import logging
import os
import time

from nbdist.graph.graph import GraphKeys, get_default_graph
from nbdist.ops import control_flow_ops, state_ops, summary_ops
from nbdist.summary import writer as _writer
from nbdist.train import training_util
from nbdist.train.coordinator import Coordinator, LooperThread
from nbdist.train.saver import Saver
from nbdist.train.scaffold import LOCAL_INIT_OP, READY_FOR_LOCAL_INIT_OP, SUMMARY_OP
from nbdist.train.session_manager import SessionManager

_log = logging.getLogger("nbdist")


def _from_collection_or(graph, key, make):
    found = graph.get_collection(key)
    if found:
        return found[0]
    op = make()
    if op is not None:
        graph.add_to_collection(key, op)
    return op


def _default_summary_op():
    return summary_ops.merge_all()  # None when the graph has no summaries


class Supervisor:
    """TF's older training helper: initialize or restore, save periodically, stop together.

    Each op argument is ``USE_DEFAULT`` (take it from the graph's collection, else build
    TF's default), None (do not use one), or the op itself. The graph is finalized.
    """

    USE_DEFAULT = 0

    def __init__(
        self,
        graph=None,
        ready_op=USE_DEFAULT,
        ready_for_local_init_op=USE_DEFAULT,
        is_chief=True,
        init_op=USE_DEFAULT,
        init_feed_dict=None,
        local_init_op=USE_DEFAULT,
        logdir=None,
        summary_op=USE_DEFAULT,
        saver=USE_DEFAULT,
        global_step=USE_DEFAULT,
        save_summaries_secs=120,
        save_model_secs=600,
        recovery_wait_secs=30,
        stop_grace_secs=120,
        checkpoint_basename="model.ckpt",
        session_manager=None,
        summary_writer=USE_DEFAULT,
        init_fn=None,
        local_init_run_options=None,
    ):
        graph = graph or get_default_graph()
        use = Supervisor.USE_DEFAULT
        with graph.as_default():
            self._ready_op = (
                _from_collection_or(graph, GraphKeys.READY_OP, state_ops.report_uninitialized_variables)
                if ready_op is use
                else ready_op
            )
            self._ready_for_local_init_op = (
                _from_collection_or(
                    graph,
                    READY_FOR_LOCAL_INIT_OP,
                    lambda: state_ops.report_uninitialized_variables(state_ops.global_variables()),
                )
                if ready_for_local_init_op is use
                else ready_for_local_init_op
            )
            self._init_op = (
                _from_collection_or(graph, GraphKeys.INIT_OP, state_ops.global_variables_initializer)
                if init_op is use
                else init_op
            )
            self._local_init_op = (
                _from_collection_or(
                    graph,
                    LOCAL_INIT_OP,
                    lambda: control_flow_ops.group(state_ops.local_variables_initializer()),
                )
                if local_init_op is use
                else local_init_op
            )
            if saver is use:
                saver = _from_collection_or(
                    graph, GraphKeys.SAVERS, lambda: Saver() if state_ops.global_variables() else None
                )
            self._saver = saver
            self._summary_op = (
                _from_collection_or(graph, SUMMARY_OP, _default_summary_op)
                if summary_op is use
                else summary_op
            )
            self._global_step = training_util.get_global_step(graph) if global_step is use else global_step
        self._graph = graph
        self._is_chief = is_chief
        self._coord = Coordinator()
        self._init_feed_dict = init_feed_dict
        self._init_fn = init_fn
        self._logdir = logdir
        self._save_summaries_secs = save_summaries_secs
        self._save_model_secs = save_model_secs
        self._recovery_wait_secs = recovery_wait_secs
        self._stop_grace_secs = stop_grace_secs
        self._save_path = os.path.join(logdir, checkpoint_basename) if logdir else None
        self._summary_writer = summary_writer if summary_writer is not use else None
        self._default_writer = summary_writer is use
        self._graph_added_to_summary = False
        self._session_manager = session_manager or SessionManager(
            local_init_op=self._local_init_op,
            ready_op=self._ready_op,
            ready_for_local_init_op=self._ready_for_local_init_op,
            graph=graph,
            recovery_wait_secs=recovery_wait_secs,
            local_init_run_options=local_init_run_options,
        )
        if not is_chief:
            unplaced = [op.name for op in graph.get_operations() if op.type == "VariableV2" and not op.device]
            if unplaced:
                raise ValueError(
                    f"When using replicas, all Variables must have their device set: {unplaced[0]!r} has "
                    "none (create it under tf.device('/job:ps/task:0') or replica_device_setter)"
                )
        graph.finalize()

    # -- properties -------------------------------------------------------------------------------
    is_chief = property(lambda self: self._is_chief)
    session_manager = property(lambda self: self._session_manager)
    coord = property(lambda self: self._coord)
    init_op = property(lambda self: self._init_op)
    init_feed_dict = property(lambda self: self._init_feed_dict)
    ready_op = property(lambda self: self._ready_op)
    ready_for_local_init_op = property(lambda self: self._ready_for_local_init_op)
    summary_op = property(lambda self: self._summary_op)
    save_summaries_secs = property(lambda self: self._save_summaries_secs)
    global_step = property(lambda self: self._global_step)
    saver = property(lambda self: self._saver)
    save_model_secs = property(lambda self: self._save_model_secs)
    save_path = property(lambda self: self._save_path)

    @property
    def summary_writer(self):
        """The chief's event writer for `logdir` (None on other tasks, without a logdir, or
        where tensorboardX is missing), created on first use."""
        if self._summary_writer is None and self._default_writer and self._is_chief and self._logdir:
            self._summary_writer = _writer.default_writer(self._logdir)
            self._default_writer = False  # decided once
        return self._summary_writer

    def _write_graph(self):
        writer = self.summary_writer
        if writer is not None and not self._graph_added_to_summary:
            writer.reopen()  # a writer this Supervisor closed at a previous stop()
            writer.add_graph(self._graph)
            self._graph_added_to_summary = True

    # -- sessions ---------------------------------------------------------------------------------
    def prepare_or_wait_for_session(
        self,
        master="",
        config=None,
        wait_for_checkpoint=False,
        max_wait_secs=7200,
        start_standard_services=True,
    ):
        """Chief: restore or initialize, start the services. Others: wait until ready."""
        self._coord.clear_stop()
        if self._is_chief:
            sess = self._session_manager.prepare_session(
                master,
                init_op=self._init_op,
                saver=self._saver,
                checkpoint_dir=self._logdir,
                wait_for_checkpoint=wait_for_checkpoint,
                max_wait_secs=max_wait_secs,
                config=config,
                init_feed_dict=self._init_feed_dict,
                init_fn=self._init_fn,
            )
            self._write_graph()
            if start_standard_services:
                _log.info("Starting standard services.")
                self.start_standard_services(sess)
        else:
            sess = self._session_manager.wait_for_session(master, config=config, max_wait_secs=max_wait_secs)
        if start_standard_services:
            _log.info("Starting queue runners.")
            self.start_queue_runners(sess)
        return sess

    @contextlib.contextmanager
    def managed_session(
        self, master="", config=None, start_standard_services=True, close_summary_writer=True
    ):
        """A session for a ``with`` block; stops the services and closes it at the end.

        `OutOfRangeError` in the block is a clean stop; any other exception is re-raised
        (after the threads stopped).
        """
        sess = None
        try:
            sess = self.prepare_or_wait_for_session(
                master=master, config=config, start_standard_services=start_standard_services
            )
            yield sess
        except Exception as e:  # noqa: BLE001 - reported to the coordinator; stop() re-raises it
            self.request_stop(e)
        finally:
            try:
                self.stop(close_summary_writer=close_summary_writer)
            finally:
                if sess is not None:
                    with contextlib.suppress(Exception):  # pending calls end with the session
                        sess.close()

    def start_standard_services(self, sess):
        """Starts the checkpoint thread and, with an event writer, the summary thread (when the
        graph has summaries) and the step counter thread (with a global step); writes a
        ``SessionLog.START`` at the current global step.

        Raises:
            RuntimeError: on a non-chief.
        """
        if not self._is_chief:
            raise RuntimeError(
                "Only chief supervisor can start standard services. "
                "Because only chief supervisors can write events."
            )
        if not self._logdir:
            _log.warning("Standard services need a 'logdir' passed to the SessionManager")
            return []
        writer = self.summary_writer
        if self._global_step is not None and writer is not None:
            step = training_util.global_step(sess, self._global_step)
            writer.add_session_log(_writer.session_log("START"), step)
        threads = []
        if self._save_summaries_secs and writer is not None:
            if self._summary_op is not None:
                threads.append(
                    LooperThread(self._coord, self._save_summaries_secs, self._write_summary, (sess,))
                )
            if self._global_step is not None:
                threads.append(_StepCounterThread(self, sess))
        if self._saver is not None and self._save_model_secs:
            threads.append(LooperThread(self._coord, self._save_model_secs, self._save_checkpoint, (sess,)))
        for t in threads:
            t.start()
        return threads

    def _save_checkpoint(self, sess):
        _log.info("Saving checkpoint to path %s", self._save_path)
        self._saver.save(sess, self._save_path, global_step=self._global_step)

    def _write_summary(self, sess):
        if self._global_step is not None:
            summary, step = sess.run([self._summary_op, self._global_step])
        else:
            summary, step = sess.run(self._summary_op), None
        self.summary_computed(sess, summary, step)

    def summary_computed(self, sess, summary, global_step=None):
        """Writes a computed summary (a chief with a summary writer only)."""
        writer = self.summary_writer
        if writer is None:
            raise RuntimeError("Writing a summary requires a summary writer.")
        if global_step is None and self._global_step is not None:
            global_step = training_util.global_step(sess, self._global_step)
        writer.add_summary(summary, global_step)

    def start_queue_runners(self, sess, queue_runners=None):
        """Starts the graph's queue runners (TF's ``create_threads`` protocol); returns the threads."""
        queue_runners = (
            self._graph.get_collection(GraphKeys.QUEUE_RUNNERS) if queue_runners is None else queue_runners
        )
        threads = []
        for qr in queue_runners:
            threads.extend(qr.create_threads(sess, coord=self._coord, daemon=True, start=True))
        return threads

    def loop(self, timer_interval_secs, target, args=None, kwargs=None):
        """Calls `target` every `timer_interval_secs` on a thread until stop; returns it."""
        looper = LooperThread(self._coord, timer_interval_secs, target=target, args=args, kwargs=kwargs)
        looper.start()
        return looper

    # -- stopping ---------------------------------------------------------------------------------
    def should_stop(self):
        return self._coord.should_stop()

    def request_stop(self, ex=None):
        self._coord.request_stop(ex=ex)

    def stop_on_exception(self):
        return self._coord.stop_on_exception()

    def wait_for_stop(self):
        self._coord.wait_for_stop()

    def stop(self, threads=None, close_summary_writer=True, ignore_live_threads=False):
        """Requests a stop, waits `stop_grace_secs` for the threads, re-raises a reported error."""
        self._coord.request_stop()
        try:
            self._coord.join(
                threads, stop_grace_period_secs=self._stop_grace_secs, ignore_live_threads=ignore_live_threads
            )
        finally:
            # The writer closes last: the threads above may have been using it.
            if close_summary_writer and self._summary_writer is not None:
                self._summary_writer.add_session_log(_writer.session_log("STOP"))
                self._summary_writer.close()
                self._graph_added_to_summary = False


class _StepCounterThread(LooperThread):
    """Writes ``global_step/sec`` every `save_summaries_secs` (TF's ``SVStepCounterThread``)."""

    def __init__(self, sv, sess):
        super().__init__(sv.coord, sv.save_summaries_secs)
        self._sv = sv
        self._sess = sess
        self._tag = f"{sv.global_step.op.name}/sec"
        self.name = "LooperThread-step-counter"

    def start_loop(self):
        self._last_time = time.time()
        self._last_step = training_util.global_step(self._sess, self._sv.global_step)

    def run_loop(self):
        step = training_util.global_step(self._sess, self._sv.global_step)
        now = time.time()
        elapsed_s = now - self._last_time
        rate = (step - self._last_step) / elapsed_s if elapsed_s > 0 else float("inf")
        self._last_step, self._last_time = step, now
        self._sv.summary_writer.add_summary(_writer.scalar_summary(self._tag, rate), step)
        _log.info("%s: %g", self._tag, rate)
