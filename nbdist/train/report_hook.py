"""`ReportHook`: a session-run hook that feeds the notebook's live dashboard (nbdist's addition).

    train_op = opt.minimize(loss, global_step=gs)
    hooks = [tf.train.ReportHook({"loss": loss}, train_op=train_op)]
    with tf.train.MonitoredTrainingSession(master=server.target, is_chief=..., hooks=hooks) as sess:
        while not sess.should_stop():
            sess.run(train_op, feeds)           # no tf.report(...) calls needed

Every `every_n_steps` runs (or `every_n_secs`) it fetches the given tensors in the same run
and publishes one ``metric`` event with `tf.report` (``nbdist.in_task.publisher``): the event's
``step`` is the global step, and its metrics are the tensors' values plus

- ``local_step``: the runs this hook has seen (the dashboard's steps/s per worker uses it);
- ``steps_per_s``: local steps per second since the previous report;
- ``staleness`` (asynchronous training) or ``dropped`` (a `SyncReplicasOptimizer`): how
  many other updates landed while this worker's gradient was computed, or 1 when it came too
  late and was dropped — when `train_op` is given, and only in runs that run `train_op`
  (fetching them runs the update, so the hook never adds a training step of its own).

In a task's process the event goes to the notebook that started the cluster; in the notebook
itself, to its current event stream; elsewhere nowhere (`tf.report` returns False). It never
blocks training: a full buffer drops the event.
"""

from nbdist.graph.graph import Operation, Tensor, get_default_graph
from nbdist.train import staleness as _staleness
from nbdist.train import training_util
from nbdist.train.basic_session_run_hooks import SecondOrStepTimer
from nbdist.train.session_run_hook import SessionRunArgs, SessionRunHook


class ReportHook(SessionRunHook):
    """Reports tensors, global step, steps/s, staleness or dropped gradients to the dashboard.

    See the module docstring for what each report holds and where it goes.

    Args:
        tensors: ``{metric name: scalar tensor or its name}``, e.g. ``{"loss": loss}``.
        every_n_steps: report every this many runs (default 1) ...
        every_n_secs: ... or every this many seconds (give exactly one).
        train_op: the training op; adds ``staleness`` or ``dropped`` to the runs that run it.

    Raises:
        ValueError: both or neither of `every_n_steps` and `every_n_secs`; a metric name the
            hook reports itself; a `train_op` with neither staleness nor dropped gradients.
        TypeError: `tensors` is not a dict.
    """

    _OWN_METRICS = ("local_step", "steps_per_s", "staleness", "dropped", "global_step")

    def __init__(self, tensors, every_n_steps=1, every_n_secs=None, train_op=None):
        if every_n_secs is not None and every_n_steps == 1:
            every_n_steps = None  # every_n_secs alone chooses seconds
        if not isinstance(tensors, dict):
            raise TypeError(f"ReportHook(tensors=...) takes a dict of metric name -> tensor, got {tensors!r}")
        clash = sorted(set(tensors) & set(self._OWN_METRICS))
        if clash:
            raise ValueError(f"ReportHook reports {clash} itself; give your tensors other names")
        self._tensors = dict(tensors)
        self._timer = SecondOrStepTimer(every_secs=every_n_secs, every_steps=every_n_steps)
        self._train_op = train_op

    def begin(self):
        from nbdist.in_task import publisher  # noqa: PLC0415 - zmq loads only when a program reports

        self._report = publisher.report
        graph = get_default_graph()
        self._fetches = {name: graph.as_graph_element(t) for name, t in self._tensors.items()}
        step = training_util.get_global_step(graph)
        if step is not None:
            self._fetches["global_step"] = step
        self._update = self._update_metric() if self._train_op is not None else None
        self._timer.reset()
        self._local_step = 0

    def _update_metric(self):
        """``(name, tensor)`` of `train_op`'s dropped flag (sync) or staleness (async)."""
        for name, find in (("dropped", _staleness.dropped_of), ("staleness", _staleness.of)):
            try:
                return name, find(self._train_op)
            except ValueError:
                continue
        raise ValueError(
            f"ReportHook(train_op={getattr(self._train_op, 'name', self._train_op)!r}): the op records "
            "neither staleness (build it with opt.minimize(loss, global_step=...)) nor dropped "
            "gradients (tf.train.SyncReplicasOptimizer); leave train_op out"
        )

    def before_run(self, run_context):
        self._trigger = self._timer.should_trigger_for_step(self._local_step + 1)
        if not self._trigger:
            return None
        fetches = dict(self._fetches)
        if self._update is not None and _fetches_contain(run_context.original_args.fetches, self._train_op):
            fetches[self._update[0]] = self._update[1]
        return SessionRunArgs(fetches)

    def after_run(self, run_context, run_values):
        self._local_step += 1
        if not self._trigger:
            return
        values = dict(run_values.results)
        step = values.pop("global_step", None)
        elapsed_s, elapsed_steps = self._timer.update_last_triggered_step(self._local_step)
        values["local_step"] = self._local_step
        if elapsed_s:
            values["steps_per_s"] = elapsed_steps / elapsed_s
        self._report(step=None if step is None else int(step), **values)


def _fetches_contain(fetches, op):
    """Whether the nested `fetches` (lists, tuples, dicts, names) name `op` or one of its outputs."""
    op = op.op if isinstance(op, Tensor) else op
    if isinstance(fetches, (list, tuple)):
        return any(_fetches_contain(f, op) for f in fetches)
    if isinstance(fetches, dict):
        return any(_fetches_contain(f, op) for f in fetches.values())
    if isinstance(fetches, Operation):
        return fetches is op
    if isinstance(fetches, Tensor):
        return fetches.op is op
    if isinstance(fetches, str):
        return fetches.split(":")[0] == op.name
    return getattr(fetches, "op", None) is op  # a Variable
