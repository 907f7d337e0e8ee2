"""`nbdist.in_task.metric_batch`: a task's metric events in columns, packed and checked."""

import pytest

from nbdist.in_task import metric_batch
from nbdist.in_task.metric_batch import MetricBatch

TASK = "/job:worker/task:0"


def report(step, t, task=TASK, **metrics):
    """An event as `report` makes it, with the task the publisher fills in."""
    return {"kind": "metric", "step": step, "time": t, "metrics": metrics, "task": task}


def test_consecutive_reports_with_the_same_names_travel_as_one_batch_and_come_back_as_they_were():
    events = [report(i, 100.0 + i, loss=1.0 / (i + 1), staleness=i % 3) for i in range(5)]
    others, batches = metric_batch.pack(events)
    assert others == [] and len(batches) == 1
    batch = MetricBatch.from_wire(batches[0])
    assert (batch.task, batch.names, batch.steps, len(batch)) == (
        TASK,
        ["loss", "staleness"],
        [0, 1, 2, 3, 4],
        5,
    )
    assert batch.events() == events


def test_runs_of_other_names_or_tasks_make_new_batches_in_order():
    events = [
        report(1, 1.0, loss=1.0),
        report(2, 2.0, loss=0.9),
        report(2, 2.5, accuracy=0.5),
        report(3, 3.0, loss=0.8),
        report(None, 3.5, task="/job:worker/task:1", loss=0.7),
    ]
    _, batches = metric_batch.pack(events)
    assert [(b[0], b[1], b[2]) for b in batches] == [
        (TASK, ["loss"], [1, 2]),
        (TASK, ["accuracy"], [2]),
        (TASK, ["loss"], [3]),
        ("/job:worker/task:1", ["loss"], [None]),
    ]
    assert [e for b in batches for e in MetricBatch.from_wire(b).events()] == events


@pytest.mark.parametrize(
    "event",
    [
        {"kind": "heartbeat", "task": TASK, "time": 1.0, "rss_bytes": 5},
        {"kind": "metric", "step": 1, "time": 1.0, "metrics": {"loss": 1.0}, "task": TASK, "note": "more"},
        {"kind": "metric", "step": 1, "metrics": {"loss": 1.0}, "task": TASK},  # no time
        report(1, 1.0, loss="high"),
        report(1, 1.0, loss=True),
        report(1.5, 1.0, loss=1.0),
        {"kind": "metric", "step": 1, "time": 1.0, "metrics": {3: 1.0}, "task": TASK},
    ],
)
def test_events_that_are_not_plain_reports_travel_as_dicts(event):
    others, batches = metric_batch.pack([report(0, 0.5, loss=2.0), event, report(2, 2.0, loss=1.0)])
    assert others == [event]
    assert [b[2] for b in batches] == [[0], [2]]  # (the run is broken: rows stay in order)


@pytest.mark.parametrize(
    ("group", "what"),
    [
        ("not a list", "is \\[task, names"),
        ([TASK, ["loss"], [1], [1.0]], "is \\[task, names"),
        ([5, ["loss"], [1], [1.0], [[1.0]]], "task must be a str"),
        ([TASK, [5], [1], [1.0], [[1.0]]], "one column per metric name"),
        ([TASK, ["loss", "acc"], [1], [1.0], [[1.0]]], "one column per metric name"),
        ([TASK, ["loss"], [1, 2], [1.0], [[1.0]]], "one step and one time per event"),
        ([TASK, ["loss"], ["1"], [1.0], [[1.0]]], "steps must be integers or None"),
        ([TASK, ["loss"], [1], [None], [[1.0]]], "times numbers"),
        ([TASK, ["loss"], [1], [1.0], [[1.0, 2.0]]], "one value per event"),
        ([TASK, ["loss"], [1], [1.0], [["x"]]], "values must be numbers"),
        ([TASK, ["loss"], [1], [1.0], [[{"a": 1}]]], "values must be numbers"),
    ],
)
def test_a_malformed_batch_from_the_wire_is_refused_saying_what_is_wrong(group, what):
    with pytest.raises(ValueError, match=what):
        MetricBatch.from_wire(group)


def test_a_batch_since_a_time_keeps_the_later_rows():
    batch = MetricBatch(TASK, ["loss"], [1, 2, 3], [10.0, 11.0, 12.0], [[0.3, 0.2, 0.1]])
    assert batch.since(9.0) is batch
    later = batch.since(11.0)
    assert (later.steps, later.times, later.columns) == ([2, 3], [11.0, 12.0], [[0.2, 0.1]])
    assert len(batch.since(13.0)) == 0


def test_one_event_makes_a_batch_of_one():
    batch = MetricBatch.of({"kind": "metric", "step": 4, "time": 3.0, "metrics": {"loss": 0.5}})
    assert (batch.task, batch.names, batch.steps, batch.times, batch.columns) == (
        "notebook",
        ["loss"],
        [4],
        [3.0],
        [[0.5]],
    )
