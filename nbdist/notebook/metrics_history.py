"""How training goes: ``metric`` events accumulated per task (`MetricsHistory`), thinned
evenly over a long run, with steps/s, the global step and a cheap summary of the latest values.

    history = MetricsHistory()                  # fed metric events from any thread
    history.add(event); history.summary()       # drawn by `dashboard_plot.DashboardPlot`
"""

import collections
import threading

from nbdist.in_task.metric_batch import MetricBatch
from nbdist.notebook.graph_model import task_sort_key


class MetricsHistory:
    """``metric`` events accumulated per task, for the dashboard (thread-safe).

    An event is ``{"kind": "metric", "task": ..., "step": global step, "time": t,
    "metrics": {"loss": ..., "staleness": ..., "dropped": ..., "global_step": ...}}``.
    Steps/s per task counts that task's reports per second (one report per local step):
    an event without ``metrics["local_step"]`` gets the number of its task's reports so far.

    A task's events are kept from the first: past `max_points`, only every other one of them
    is kept, then every fourth, ... (evenly over the whole run, so a long or fast run is
    still shown whole), and always the latest; a forgotten event's ``dropped`` count goes to
    the next one kept, so that counts stay exact.

    Args:
        max_points: events kept per task.
        rate_window_s: the window steps/s are averaged over.
    """

    def __init__(self, max_points=5000, rate_window_s=3.0):
        self._lock = threading.Lock()
        self._max_points = max(max_points, 4)
        self.rate_window_s = rate_window_s
        self.t0 = None
        self.count = 0
        self.names = set()  # every metric name reported so far
        self._events = {}  # task -> list of (time, step, metrics, its number among the task's events)
        self._reports = collections.Counter()  # task -> its events so far (kept or not)
        self._stride = {}  # task -> keep its events number 1, 1 + stride, 1 + 2 * stride, ...
        self._global_step = None  # the largest global step reported so far

    def add(self, event):
        """Records `event`; returns False (ignoring it) unless it is a metric event."""
        if not isinstance(event, dict) or event.get("kind", "metric") != "metric":
            return False
        return self.add_batch(MetricBatch.of(event))

    def add_batch(self, batch):
        """Records the events of `batch` (a `MetricBatch`, one task's, in order); returns
        whether there were any.

        A row that would be forgotten at once (not one of the kept numbers, not the last of
        the batch) only adds to the counts: no dict is made for it.
        """
        n = len(batch)
        if not n:
            return False
        task, names = batch.task, batch.names
        times = batch.times
        dropped = names.index("dropped") if "dropped" in names else None
        global_steps = batch.columns[names.index("global_step")] if "global_step" in names else batch.steps
        reached = max((v for v in global_steps if v is not None), default=None)
        with self._lock:
            first = min(times)
            self.t0 = first if self.t0 is None else min(self.t0, first)
            number = self._reports[task]
            self._reports[task] = number + n
            series = self._events.setdefault(task, [])
            stride = self._stride.setdefault(task, 1)
            carried = 0.0  # the dropped counts of rows forgotten at once, for the next one kept
            for i, (t, step, *values) in enumerate(zip(times, batch.steps, *batch.columns)):
                number += 1
                if (number - 1) % stride and i != n - 1:
                    if dropped is not None:
                        carried += values[dropped]
                    continue
                metrics = dict(zip(names, values))
                metrics.setdefault("local_step", number)
                if carried:
                    metrics["dropped"] = metrics.get("dropped", 0.0) + carried
                    carried = 0.0
                if series and (series[-1][3] - 1) % stride:  # the last was kept only as the latest
                    _carry_dropped(series.pop()[2], metrics)
                series.append((float(t), step, metrics, number))
                if len(series) >= self._max_points:
                    stride *= 2
                    self._stride[task] = stride
                    series = self._events[task] = _keep_every(series, stride)
            if reached is not None and (self._global_step is None or reached > self._global_step):
                self._global_step = reached
            self.names.update(names)
            self.names.add("local_step")
            self.count += n
        return True

    def reports(self, task):
        """How many metric events `task` sent (kept or not)."""
        with self._lock:
            return self._reports[task]

    def snapshot(self):
        """``{task: [(seconds since start, step, metrics), ...]}``: a consistent copy."""
        with self._lock:
            return {task: [(t - self.t0, s, m) for t, s, m, _ in ev] for task, ev in self._events.items()}

    @staticmethod
    def rates(events, window_s, last_only=False):
        """``[(t, steps/s)]`` of one task's events, averaged over `window_s` (only the latest
        with `last_only`)."""
        out, j = [], 0
        first = len(events) - 1 if last_only else 0
        if last_only and events:  # the window's first event, by bisection on the times
            lo, hi, t_last = 0, first, events[first][0]
            while lo < hi:
                mid = (lo + hi) // 2
                lo, hi = (mid + 1, hi) if t_last - events[mid][0] > window_s else (lo, mid)
            j = lo
        for i in range(first, len(events)):
            t, m = events[i][0], events[i][2]  # (a snapshot's triples, or the kept quadruples)
            while t - events[j][0] > window_s:
                j += 1
            if i > j and t > events[j][0]:
                done = m.get("local_step", i) - events[j][2].get("local_step", j)
                out.append((t, done / (t - events[j][0])))
        return out

    @staticmethod
    def global_steps(data):
        """``[(t, global step)]`` over all tasks: ``metrics["global_step"]`` or the event's step."""
        points = sorted((t, m.get("global_step", s)) for ev in data.values() for t, s, m in ev)
        out, best = [], None
        for t, g in points:
            if g is not None and (best is None or g > best):
                best = g
                out.append((t, g))
        return out

    def summary(self):
        """``{"global_step", "tasks": {task: {"loss", "steps_per_s", "reports"}}, "events"}`` of
        the latest values, read in place (cheap: nothing is copied, for a status line
        refreshed often)."""
        with self._lock:
            tasks = {}
            for task, ev in sorted(self._events.items(), key=lambda kv: task_sort_key(kv[0])):
                rates = self.rates(ev, self.rate_window_s, last_only=True)
                loss = next((e[2]["loss"] for e in reversed(ev) if "loss" in e[2]), None)
                tasks[task] = {
                    "loss": loss,
                    "reports": self._reports[task],
                    "steps_per_s": rates[-1][1] if rates else None,
                }
            return {"global_step": self._global_step, "tasks": tasks, "events": self.count}


def _keep_every(series, stride):
    """The events of `series` numbered 1, 1 + stride, ... and the latest; a forgotten event's
    ``dropped`` count goes to the next one kept (so cumulative sums stay exact)."""
    out, forgotten = [], {}
    for i, (t, step, metrics, number) in enumerate(series):
        if (number - 1) % stride and i != len(series) - 1:
            _carry_dropped(metrics, forgotten)
            continue
        if forgotten:
            metrics = dict(metrics)
            _carry_dropped(forgotten, metrics)
            forgotten = {}
        out.append((t, step, metrics, number))
    return out


def _carry_dropped(source, target):
    """Adds the ``dropped`` count of `source` (metrics of a forgotten event) to `target`'s."""
    if "dropped" in source:
        target["dropped"] = target.get("dropped", 0.0) + source["dropped"]
