"""`nbdist.notebook.trace`: a traced step as spans, Chrome trace-event JSON and an SVG timeline."""

import collections
import json

import numpy as np
import pytest

import nbdist as tf
from nbdist.notebook import trace
from traced_steps import CROSSINGS, build_model, traced_steps

TASKS = ["/job:ps/task:0", "/job:ps/task:1", "/job:worker/task:0"]
PHASES = {"B", "E", "M", "s", "f"}


@pytest.fixture(scope="module")
def traced():
    with traced_steps(ps_tasks=2) as model:
        yield model


def check_trace_event_format(doc):
    """Asserts the Chrome trace-event rules nbdist relies on; returns the events by phase."""
    assert set(doc) >= {"traceEvents"} and doc.get("displayTimeUnit", "ms") in ("ms", "ns")
    by_phase = collections.defaultdict(list)
    stacks = collections.defaultdict(list)  # (pid, tid) -> open B events
    slices = collections.defaultdict(list)  # (pid, tid) -> closed (start, end)
    for e in doc["traceEvents"]:
        assert e["ph"] in PHASES, e
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int), e
        by_phase[e["ph"]].append(e)
        if e["ph"] == "M":
            assert e["name"] in ("process_name", "process_sort_index", "thread_name") and "args" in e
            continue
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0, e
        key = (e["pid"], e["tid"])
        if e["ph"] == "B":
            assert e["name"], e
            stacks[key].append(e)
        elif e["ph"] == "E":
            assert stacks[key], f"E without B on {key}: {e}"
            begin = stacks[key].pop()
            assert begin["name"] == e["name"] and begin["ts"] <= e["ts"], (begin, e)
            slices[key].append((begin["ts"], e["ts"]))
    assert not any(stacks.values()), "unclosed B events"
    for e in by_phase["s"] + by_phase["f"]:  # each flow end lies inside a slice of its thread
        assert any(a <= e["ts"] <= b for a, b in slices[(e["pid"], e["tid"])]), e
    return by_phase


def test_chrome_trace_follows_the_trace_event_format(traced):
    check_trace_event_format(trace.chrome_trace(traced.md))


def test_one_process_per_task(traced):
    meta = check_trace_event_format(trace.chrome_trace(traced.md))["M"]
    names = {e["pid"]: e["args"]["name"].split(" (pid")[0] for e in meta if e["name"] == "process_name"}
    assert sorted(names.values()) == TASKS and len(set(names)) == len(TASKS)


def test_send_recv_are_flow_arrows_between_processes(traced):
    phases = check_trace_event_format(trace.chrome_trace(traced.md))
    starts, ends = {e["id"]: e for e in phases["s"]}, {e["id"]: e for e in phases["f"]}
    assert len(starts) == len(ends) == CROSSINGS and starts.keys() == ends.keys()
    assert all(starts[i]["pid"] != ends[i]["pid"] for i in starts)


def test_service_calls_are_drawn_on_their_tasks(traced):
    phases = check_trace_event_format(trace.chrome_trace(traced.first))
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in phases["M"] if e["name"] == "thread_name"}
    calls = {(threads[(e["pid"], e["tid"])], e["name"]) for e in phases["B"] if e["cat"] == "service"}
    assert ("master service", "RunStep") in calls
    assert {("worker service", "RegisterGraph"), ("worker service", "RunGraph")} <= calls


def test_export_writes_json_that_loads(traced, tmp_path):
    path = tf.export_chrome_trace(traced.md, tmp_path / "traces" / "step.json")
    assert path == tmp_path / "traces" / "step.json"
    check_trace_event_format(json.loads(path.read_text()))


def test_a_local_session_trace_is_one_process():
    model = build_model()
    md = tf.RunMetadata()
    with tf.Session(graph=model.graph) as sess:
        sess.run(model.init)
        options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
        sess.run(model.train, {model.x: np.ones((2, 3), np.float32)}, options=options, run_metadata=md)
    phases = check_trace_event_format(trace.chrome_trace(md))
    assert [e["args"]["name"] for e in phases["M"] if e["name"] == "process_name"] == [
        "/job:localhost/task:0"
    ]
    assert not phases["s"]


def test_metadata_without_a_trace_says_how_to_trace():
    with pytest.raises(ValueError, match=r"holds no trace.*FULL_TRACE"):
        trace.chrome_trace(tf.RunMetadata())


def test_step_events_pair_each_send_with_its_recv(traced):
    events = trace.step_events(traced.md)
    assert events["tasks"] == TASKS and len(events["flows"]) == CROSSINGS
    flow = next(f for f in events["flows"] if f["tensor"] == "w/read:0")
    assert (flow["src_task"], flow["dst_task"], flow["bytes"]) == ("/job:ps/task:0", "/job:worker/task:0", 24)
    assert flow["end_s"] >= flow["start_s"]


def test_overlapping_spans_go_to_separate_rows():
    spans = [{"start_s": 0.0, "end_s": 2.0}, {"start_s": 1.0, "end_s": 3.0}, {"start_s": 2.0, "end_s": 4.0}]
    assert trace.pack_lanes(spans) == [[spans[0], spans[2]], [spans[1]]]


def test_timeline_svg_has_a_band_per_task_hover_titles_and_arrows(traced):
    svg = trace.timeline_svg(trace.step_events(traced.first))
    assert svg.startswith("<svg") and all(f">{task}</text>" in svg for task in TASKS)
    assert svg.count('class="nbdist-flow"') == CROSSINGS
    assert "<title>RunStep (service)" in svg and "took" in svg


def test_timeline_window_leaves_out_what_lies_outside(traced):
    events = trace.step_events(traced.md)
    full = trace.timeline_svg(events)
    zoomed = trace.timeline_svg(events, window_ms=(0.0, 1e-6))
    assert zoomed.count('class="nbdist-span"') < full.count('class="nbdist-span"')


def _op(name, op, start_ms, end_ms):
    return {"node_name": name, "op": op, "start_s": start_ms / 1e3, "end_s": end_ms / 1e3}


def test_time_breakdown_counts_each_moment_once_kernels_first():
    """A worker reads `w` from the ps: kernels 0-1 and 8-9 ms on the worker, 2-3 ms on the ps;
    the tensor leaves the ps at 3 ms and the worker has it at 8 ms; RunStep lasts 10 ms."""
    key = "/job:ps/replica:0/task:0/device:CPU:0;/job:worker/replica:0/task:0/device:CPU:0;w/read:0"
    ps, worker = "/job:ps/replica:0/task:0/device:CPU:0", "/job:worker/replica:0/task:0/device:CPU:0"
    md = {
        "dev_stats": [
            {
                "device": worker,
                "node_stats": [
                    _op("c", "Const", 0, 1),
                    _op("recv", "_Recv", 1, 8),
                    _op("mul", "Mul", 8, 9),
                ],
                "transfers": [{"node_name": "recv", "op": "_Recv", "key": key, "bytes": 8}],
            },
            {
                "device": ps,
                "node_stats": [_op("w/read", "Identity", 2, 3), _op("send", "_Send", 3, 4)],
                "transfers": [{"node_name": "send", "op": "_Send", "key": key, "bytes": 8}],
            },
        ],
        "service_calls": [
            {
                "service": "master",
                "task": "/job:worker/replica:0/task:0",
                "method": "RunStep",
                "start_s": 0.0,
                "end_s": 0.010,
            },
        ],
    }
    got = trace.time_breakdown(md)

    def rounded(row):
        return {k: round(v, 6) for k, v in row.items()}

    assert round(got["step_ms"], 6) == 10.0
    assert rounded(got["tasks"]["/job:worker/task:0"]) == {"kernels": 2.0, "wire": 5.0, "waiting": 3.0}
    assert rounded(got["tasks"]["/job:ps/task:0"]) == {"kernels": 1.0, "wire": 5.0, "waiting": 4.0}
    assert rounded(got["step"]) == {"kernels": 3.0, "wire": 5.0, "waiting": 2.0}


def test_time_breakdown_of_a_real_step_adds_up_to_the_step(traced):
    got = trace.time_breakdown(traced.md)
    assert sorted(got["tasks"]) == TASKS and got["step_ms"] > 0
    for row in [got["step"], *got["tasks"].values()]:
        assert set(row) == set(trace.BREAKDOWN)
        assert sum(row.values()) == pytest.approx(got["step_ms"])
    assert all(row["wire"] > 0 for row in got["tasks"].values())  # every task sent or received


def test_time_breakdown_says_how_to_trace():
    with pytest.raises(ValueError, match=r"holds no trace.*FULL_TRACE"):
        trace.time_breakdown(tf.RunMetadata())
