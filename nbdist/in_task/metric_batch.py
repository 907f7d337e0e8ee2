"""`MetricBatch`: a task's metric events in columns, as they travel and as watchers read them.

A worker that calls `report` after each of its 1,000 steps a second makes 1,000 events a
second, nearly all alike: the same task, the same metric names, a step, a time and a few
numbers. As dicts, each one costs the task's flusher an encoding and the notebook a decoding,
a check and a dict per subscriber call, on the CPUs the training runs on. In columns, a
window's reports of one task with the same names are one `MetricBatch`: ``names``, then one
list per column (``steps``, ``times``, one per metric). The notebook checks a column at once
and the dashboard reads the rows straight into its history; a dict per event is made only
for whoever asks for one (a per-event subscriber, ``history()``).

On the wire (the ``metrics`` field of an ``Events`` message, docs/protocol.md) a batch is
``[task, names, steps, times, columns]``.
"""

import time

_NUMBER_TYPES = frozenset((float, int))
_STEP_TYPES = frozenset((int, type(None)))


class MetricBatch:
    """Consecutive metric events of one task with the same metric names, in columns.

    Args:
        task: the task that reported them, e.g. ``/job:worker/task:0`` (``notebook`` there).
        names: the metric names (a list of str).
        steps: one global step (int or None) per event.
        times: one ``time.time()`` per event.
        columns: one list per name, a value (float or int) per event.
    """

    __slots__ = ("task", "names", "steps", "times", "columns", "_events")

    def __init__(self, task, names, steps, times, columns):
        self.task = task
        self.names = names
        self.steps = steps
        self.times = times
        self.columns = columns
        self._events = None

    def __len__(self):
        return len(self.times)

    def __repr__(self):
        return f"<MetricBatch of {self.task}: {len(self)} events of {', '.join(self.names)}>"

    @classmethod
    def of(cls, event):
        """The batch of one metric event dict (a missing task is ``notebook``, a missing time now)."""
        metrics = dict(event.get("metrics") or {})
        return cls(
            event.get("task") or "notebook",
            list(metrics),
            [event.get("step")],
            [float(event.get("time") or time.time())],
            [[value] for value in metrics.values()],
        )

    @classmethod
    def from_wire(cls, group):
        """The batch ``[task, names, steps, times, columns]`` received from a task.

        Raises:
            ValueError: it is not of that form: each column as long as ``times``, steps
                integers or None, times and values numbers (checked a column at a time).
        """
        if not isinstance(group, list) or len(group) != 5:
            raise ValueError("a metric batch is [task, names, steps, times, columns]")
        task, names, steps, times, columns = group
        if not isinstance(task, str) or not isinstance(names, list) or not isinstance(columns, list):
            raise ValueError("a metric batch's task must be a str, its names and columns lists")
        if not all(isinstance(name, str) for name in names) or len(columns) != len(names):
            raise ValueError("a metric batch needs one column per metric name (str)")
        if not isinstance(steps, list) or not isinstance(times, list) or len(steps) != len(times):
            raise ValueError("a metric batch needs one step and one time per event")
        if not set(map(type, steps)) <= _STEP_TYPES or not set(map(type, times)) <= _NUMBER_TYPES:
            raise ValueError("a metric batch's steps must be integers or None, its times numbers")
        for column in columns:
            if not isinstance(column, list) or len(column) != len(times):
                raise ValueError("each column of a metric batch has one value per event")
            if not set(map(type, column)) <= _NUMBER_TYPES:
                raise ValueError("a metric batch's values must be numbers")
        return cls(task, names, steps, times, columns)

    def events(self):
        """The batch as metric event dicts (made once; ``{"kind": "metric", "task", "step",
        "time", "metrics"}``, the form `report` documents)."""
        if self._events is None:
            task, names = self.task, self.names
            self._events = [
                {"kind": "metric", "task": task, "step": step, "time": t, "metrics": dict(zip(names, values))}
                for step, t, *values in zip(self.steps, self.times, *self.columns)
            ]
        return self._events

    def since(self, t0):
        """The events stamped at `t0` or later (this batch when all are)."""
        times = self.times
        if not times or times[0] >= t0:
            return self
        keep = [i for i, t in enumerate(times) if t >= t0]
        return MetricBatch(
            self.task,
            self.names,
            [self.steps[i] for i in keep],
            [times[i] for i in keep],
            [[column[i] for i in keep] for column in self.columns],
        )


def pack(events):
    """Splits a task's window of events into ``(others, batches)``: the metric events as
    `MetricBatch`es in wire form (each a run of consecutive events of one task with the same
    names, so each task's rows keep their order), the other events as they are.

    A metric event goes in columns when it has exactly the fields `report` makes; one with
    other fields, or values that are not Python numbers, travels as a dict.
    """
    others, batches = [], []
    current = current_key = None
    for event in events:
        metrics = event.get("metrics")
        if not (
            len(event) == 5
            and event.get("kind") == "metric"
            and type(metrics) is dict
            and type(event.get("task")) is str
            and type(event.get("step")) in _STEP_TYPES
            and type(event.get("time")) in _NUMBER_TYPES
            and set(map(type, metrics.values())) <= _NUMBER_TYPES
        ):
            others.append(event)
            current_key = None
            continue
        key = (event["task"], *metrics)
        if key != current_key:
            if not all(type(name) is str for name in metrics):
                others.append(event)
                current_key = None
                continue
            current = [event["task"], list(metrics), [], [], [[] for _ in metrics]]
            current_key = key
            batches.append(current)
        current[2].append(event["step"])
        current[3].append(event["time"])
        for column, value in zip(current[4], metrics.values()):
            column.append(value)
    return others, batches
