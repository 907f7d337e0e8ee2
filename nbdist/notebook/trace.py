"""A traced step, three ways: normalised spans, Chrome trace-event JSON, and an SVG timeline.

A traced distributed step (``sess.run(..., options=tf.RunOptions(trace_level=FULL_TRACE),
run_metadata=md)``) records op spans per task (``md.step_stats``), the tensors each task
sent and received (``dev_stats[i].transfers``) and the service calls of the step
(``md.service_calls``: ``RunStep`` at the master, ``RegisterGraph``/``RunGraph`` at each
worker). `step_events` turns any of these (or a ``trace`` event of
`nbdist.notebook.event_stream.report_trace`) into lanes of spans plus Send→Recv flows:

    export_chrome_trace(md, "step.json")   # open in https://ui.perfetto.dev or chrome://tracing
    svg = timeline_svg(step_events(md))    # what `nbdist.show_timeline` draws
    time_breakdown(md)                     # where the step's time went: kernels, wire, waiting
"""

import html
import itertools
import json
import math
from pathlib import Path

from nbdist.export.tf_protos import as_nbdist
from nbdist.notebook.graph_model import (
    TRANSFER_COLOR,
    format_bytes,
    task_color,
    task_label,
    task_sort_key,
    tint,
)

SERVICE_LANES = ("master service", "worker service")
_RESOURCE_COLORS = {"queue": "#1b7f79", "accumulator": "#6a3d9a"}
_SERVICE_COLORS = {
    "RunStep": "#4d4d4d",
    "RunGraph": "#7f7f7f",
    "RegisterGraph": "#b3b3b3",
    "PartitionCache": "#b3b3b3",
}


def _dev_stats(md):
    """``[(device, node_stats, transfers, pid, resource_events)]`` of a RunMetadata or a
    ``trace`` event dict."""
    if isinstance(md, dict):
        return [
            (
                d["device"],
                d.get("node_stats", []),
                d.get("transfers", []),
                d.get("pid"),
                d.get("resource_events", []),
            )
            for d in md.get("dev_stats", [])
        ]
    if not hasattr(md, "step_stats"):
        raise TypeError(
            f"expected a traced tf.RunMetadata (or a 'trace' event dict), got {type(md).__name__}"
        )
    return [
        (
            d.device,
            d.node_stats,
            getattr(d, "transfers", None) or [],
            getattr(d, "pid", None),
            getattr(d, "resource_events", None) or [],
        )
        for d in md.step_stats.dev_stats
    ]


def step_events(md):
    """The spans and flows of one traced step.

    Args:
        md: a `tf.RunMetadata` filled with ``FULL_TRACE``, or a ``trace`` event dict, or real
            TensorFlow's ``RunMetadata`` proto (traced with ``FULL_TRACE``).

    Returns:
        A dict: ``t0`` (earliest time, seconds), ``tasks`` (display order), ``pids``
        (task -> OS pid or None), ``spans`` (dicts: task, lane, name, cat, start_s, end_s,
        args) and ``flows`` (dicts: key, tensor, src_task, dst_task, start_s, end_s, bytes).

    Raises:
        ValueError: when the metadata holds no trace (the step was not run with FULL_TRACE).
    """
    md = as_nbdist(md)
    stats = _dev_stats(md)
    calls = list(
        md.get("service_calls", []) if isinstance(md, dict) else getattr(md, "service_calls", []) or []
    )
    if not stats and not calls:
        raise ValueError(
            "this RunMetadata holds no trace: run the step with options=tf.RunOptions("
            "trace_level=tf.RunOptions.FULL_TRACE), run_metadata=md"
        )
    spans, by_node, pids, sides = [], {}, {}, {}
    for device, node_stats, transfers, pid, resource_events in stats:
        task = task_label(device)
        pids[task] = pid
        spans.extend(_resource_span(task, r) for r in resource_events)
        for s in node_stats:
            span = {
                "task": task,
                "lane": "ops",
                "name": s["node_name"],
                "cat": s["op"],
                "start_s": s["start_s"],
                "end_s": max(s["end_s"], s["start_s"]),
                "args": {"op": s["op"]},
            }
            spans.append(span)
            by_node[(task, s["node_name"])] = span
        for t in transfers:
            sides.setdefault(t.get("key"), {})[t.get("op")] = (task, t)
    for c in calls:
        lane = "master service" if c.get("service") == "master" else "worker service"
        args = {k: v for k, v in c.items() if k not in ("start_s", "end_s", "task", "service", "method")}
        spans.append(
            {
                "task": task_label(c["task"]),
                "lane": lane,
                "name": c["method"],
                "cat": "service",
                "start_s": c["start_s"],
                "end_s": max(c["end_s"], c["start_s"]),
                "args": args,
            }
        )
    flows = _flows(sides, by_node)
    own = [s["start_s"] for s in spans if s["cat"] != RESOURCE_CAT]
    if own:  # another step's wait on a queue may have begun long before this step: clip it
        for span in spans:
            if span["start_s"] < min(own) <= span["end_s"]:
                span["args"]["began"] = f"{(min(own) - span['start_s']) * 1e3:.1f} ms before this step"
                span["start_s"] = min(own)
    t0 = min(s["start_s"] for s in spans) if spans else 0.0
    tasks = sorted({s["task"] for s in spans}, key=task_sort_key)
    return {"t0": t0, "tasks": tasks, "pids": pids, "spans": spans, "flows": flows}


# What an op does to a queue or an accumulator, in a word (the bar's label).
_RESOURCE_VERBS = {
    "QueueEnqueueV2": "enqueue",
    "QueueEnqueueManyV2": "enqueue_many",
    "QueueDequeueV2": "dequeue",
    "QueueDequeueManyV2": "dequeue_many",
    "QueueDequeueUpToV2": "dequeue_up_to",
    "QueueSizeV2": "size",
    "QueueIsClosedV2": "is_closed",
    "QueueCloseV2": "close",
    "AccumulatorApplyGradient": "apply_grad",
    "AccumulatorTakeGradient": "take_grad",
    "AccumulatorNumAccumulated": "num_accumulated",
    "AccumulatorNumDropped": "num_dropped",
    "AccumulatorSetGlobalStep": "set_global_step",
    "AccumulatorClose": "close",
}
RESOURCE_CAT = "resource"


def _resource_span(task, r):
    """One op on a queue or accumulator, as a span on that resource's own lane of `task`."""
    verb = _RESOURCE_VERBS.get(r["op"], r["op"])
    if r["op"] == "AccumulatorApplyGradient" and r.get("result") is not None:
        verb += " (accepted)" if r["result"] else " (dropped: stale)"
    args = {
        "op": r["op"],
        "node": r["node_name"],
        "step": "this step" if r.get("this_step") else "another step",
    }
    args.update(r.get("state") or {})
    return {
        "task": task,
        "lane": f"{r['kind']} {r['resource']}",
        "name": verb,
        "cat": RESOURCE_CAT,
        "start_s": r["start_s"],
        "end_s": max(r["end_s"], r["start_s"]),
        "args": args,
        "this_step": bool(r.get("this_step")),
    }


def _flows(sides, by_node):
    flows = []
    for key, side in sides.items():
        if "_Send" not in side or "_Recv" not in side:
            continue
        (src, send), (dst, recv) = side["_Send"], side["_Recv"]
        send_span, recv_span = by_node.get((src, send["node_name"])), by_node.get((dst, recv["node_name"]))
        start = send_span["start_s"] if send_span else send.get("time_s")
        end = recv_span["end_s"] if recv_span else recv.get("time_s")
        if start is None or end is None:
            continue
        flows.append(
            {
                "key": key,
                "tensor": str(key).rsplit(";", 1)[-1],
                "src_task": src,
                "dst_task": dst,
                "start_s": start,
                "end_s": max(end, start),
                "bytes": recv.get("bytes", send.get("bytes")),
                "send": send["node_name"],
                "recv": recv["node_name"],
            }
        )
    return sorted(flows, key=lambda f: f["start_s"])


def pack_lanes(spans):
    """Splits spans of one lane into rows with no overlap: ``[[span, ...], ...]`` (greedy)."""
    rows, ends = [], []
    for span in sorted(spans, key=lambda s: (s["start_s"], -s["end_s"])):
        for i, end in enumerate(ends):
            if span["start_s"] >= end:
                rows[i].append(span)
                ends[i] = span["end_s"]
                break
        else:
            rows.append([span])
            ends.append(span["end_s"])
    return rows


def lanes(events):
    """``[(task, lane name, [spans])]`` in display order, overlapping spans on extra rows:
    per task the service lanes, the ops, then one lane per queue or accumulator it holds."""
    out = []
    for task in events["tasks"]:
        resources = sorted(
            {s["lane"] for s in events["spans"] if s["task"] == task and s["cat"] == RESOURCE_CAT}
        )
        for lane in (*SERVICE_LANES, "ops", *resources):
            spans = [s for s in events["spans"] if s["task"] == task and s["lane"] == lane]
            for i, row in enumerate(pack_lanes(spans)):
                out.append((task, lane if i == 0 else f"{lane} ({i + 1})", row))
    return out


# -- where the time went ---------------------------------------------------------------------------
BREAKDOWN = ("kernels", "wire", "waiting")
_WIRE_OPS = ("_Send", "_Recv")


def time_breakdown(md):
    """Where a traced step's wall-clock time went, for each task and for the whole step.

    The step lasts from the start to the end of the client's ``RunStep`` at the master (from
    the first span to the last when the trace has no service calls). Each moment of it is
    counted once, in the first of:

    - ``kernels``: the task runs one of its ops (any op but ``_Send``/``_Recv``);
    - ``wire``: a tensor the task sends or receives is on its way, from the moment its
      ``_Send`` starts (the tensor is ready) until its ``_Recv`` has it;
    - ``waiting``: neither: the task waits for a tensor another task has not made yet, for
      its ``RunGraph`` call, for the master.

    For the whole step (``"step"``), a moment is ``kernels`` when any task runs an op, else
    ``wire`` when any tensor is on its way, else ``waiting`` (the services and the RPCs).

    Args:
        md: a `tf.RunMetadata` filled with ``FULL_TRACE``, or a ``trace`` event dict.

    Returns:
        ``{"step_ms": float, "step": {kind: ms}, "tasks": {task: {kind: ms}}}`` with the kinds
        of `BREAKDOWN`; each row's values add up to ``step_ms``.

    Raises:
        ValueError: the metadata holds no trace.
    """
    events = step_events(md)
    runs = [s for s in events["spans"] if s["lane"] == "master service" and s["name"] == "RunStep"]
    if runs:
        window = (runs[0]["start_s"], runs[0]["end_s"])
    else:
        window = (events["t0"], max((s["end_s"] for s in events["spans"]), default=events["t0"]))
    ops = [s for s in events["spans"] if s["lane"] == "ops"]
    kernels = {
        t: [(s["start_s"], s["end_s"]) for s in ops if s["task"] == t and s["cat"] not in _WIRE_OPS]
        for t in events["tasks"]
    }
    wire = {
        t: [(f["start_s"], f["end_s"]) for f in events["flows"] if t in (f["src_task"], f["dst_task"])]
        for t in events["tasks"]
    }
    every = (
        [iv for ivs in kernels.values() for iv in ivs],
        [(f["start_s"], f["end_s"]) for f in events["flows"]],
    )
    return {
        "step_ms": (window[1] - window[0]) * 1e3,
        "step": _split(window, every),
        "tasks": {t: _split(window, (kernels[t], wire[t])) for t in events["tasks"]},
    }


def _split(window, layers):
    """Milliseconds of `window` covered by each layer's ``(start, end)`` intervals, a moment
    counted in the first layer that covers it; the rest is ``waiting`` (see `BREAKDOWN`)."""
    a, b = window
    cuts = sorted({a, b, *(t for intervals in layers for iv in intervals for t in iv if a < t < b)})
    out = dict.fromkeys(BREAKDOWN, 0.0)
    for x0, x1 in itertools.pairwise(cuts):
        mid = (x0 + x1) / 2
        kind = next(
            (k for k, intervals in zip(BREAKDOWN, layers) if any(s <= mid < e for s, e in intervals)),
            "waiting",
        )
        out[kind] += (x1 - x0) * 1e3
    return out


# -- Chrome trace-event format -------------------------------------------------------------------
def chrome_trace(md):
    """The step as a Chrome trace-event JSON object (one process per task, B/E pairs, flows)."""
    events = step_events(md)
    t0 = events["t0"]

    def us(t):
        return round((t - t0) * 1e6, 3)

    out = []
    pid_of = {task: i + 1 for i, task in enumerate(events["tasks"])}
    for task, pid in pid_of.items():
        os_pid = events["pids"].get(task)
        name = task + (f" (pid {os_pid})" if os_pid else "")
        out.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}})
        out.append(
            {"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": pid}}
        )
    tid_of, next_tid = {}, {}
    for task, lane, row in lanes(events):
        pid = pid_of[task]
        tid = next_tid[pid] = next_tid.get(pid, 0) + 1
        out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": lane}})
        for span in row:
            tid_of[(task, span["name"], span["lane"])] = tid
            common = {"pid": pid, "tid": tid, "cat": span["cat"], "name": span["name"]}
            out.append({**common, "ph": "B", "ts": us(span["start_s"]), "args": span["args"]})
            out.append({**common, "ph": "E", "ts": us(span["end_s"])})
    ops = {(s["task"], s["name"]): s for s in events["spans"] if s["lane"] == "ops"}
    for i, f in enumerate(events["flows"]):
        send, recv = ops.get((f["src_task"], f["send"])), ops.get((f["dst_task"], f["recv"]))
        if send is None or recv is None:
            continue
        # Each end sits inside its slice (mid-point), so viewers bind the arrow to the _Send/_Recv.
        common = {"name": f"{f['tensor']} ({format_bytes(f['bytes'])})", "cat": "transfer", "id": i + 1}
        for ph, span, task, name in (
            ("s", send, f["src_task"], f["send"]),
            ("f", recv, f["dst_task"], f["recv"]),
        ):
            out.append(
                {
                    **common,
                    "ph": ph,
                    "bp": "e",
                    "ts": us((span["start_s"] + span["end_s"]) / 2),
                    "pid": pid_of[task],
                    "tid": tid_of[(task, name, "ops")],
                }
            )
    return {
        "traceEvents": out,
        "displayTimeUnit": "ms",
        "otherData": {"source": "nbdist", "t0_unix_s": t0, "tasks": events["tasks"]},
    }


def export_chrome_trace(md, path):
    """Writes a traced step as Chrome trace-event JSON, for Perfetto or ``chrome://tracing``.

    Args:
        md: a `tf.RunMetadata` filled by a ``FULL_TRACE`` step (or a ``trace`` event dict).
        path: the file to write (parent directories are created).

    Returns:
        The `pathlib.Path` written.

    Raises:
        ValueError: the metadata holds no trace.

    Example::

        md = tf.RunMetadata()
        sess.run(train_op, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=md)
        tf.export_chrome_trace(md, "step.json")   # then open it at https://ui.perfetto.dev
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(chrome_trace(md), indent=1))
    return path


# -- SVG timeline ------------------------------------------------------------------------------------
_ROW_PX, _BAR_PX, _LABEL_PX, _TASK_GAP_PX, _AXIS_PX = 18, 14, 250, 10, 28


def _nice_step(span_ms, target=8):
    raw = span_ms / target
    mag = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    return next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)


def _span_style(span):
    if span["cat"] == "service":
        return _SERVICE_COLORS.get(span["name"], "#999999"), "#ffffff" if span["name"] in (
            "RunStep",
            "RunGraph",
        ) else "#000"
    if span["cat"] in ("_Send", "_Recv"):
        return tint(TRANSFER_COLOR, 0.45), "#000"
    if span["cat"] == RESOURCE_CAT:
        # This step's own ops on the resource stand out; other steps' (other workers, the
        # chief's queue runner) are paler: that is who this step waited for.
        color = _RESOURCE_COLORS.get(span["lane"].split(" ", 1)[0], "#777777")
        return (color, "#ffffff") if span.get("this_step") else (tint(color, 0.55), "#000")
    return task_color(span["task"]), "#000"


def timeline_svg(events, window_ms=None, width_px=1000):
    """An SVG timeline of `step_events`: one band per task (service lanes, then op lanes),
    op spans with hover titles (name, op, duration), and red Send→Recv arrows.

    Args:
        events: the dict `step_events` returns.
        window_ms: ``(start, end)`` in ms since the step began; None shows the whole step.
        width_px: width of the time axis.

    Returns:
        The ``<svg>`` element as a str.
    """
    total_ms = max([(s["end_s"] - events["t0"]) * 1e3 for s in events["spans"]] + [1e-3])
    a, b = window_ms if window_ms else (0.0, total_ms)
    b = max(b, a + 1e-3)

    def x(t_s):
        ms = (t_s - events["t0"]) * 1e3
        return _LABEL_PX + (min(max(ms, a), b) - a) / (b - a) * width_px

    rows, y, prev_task, parts, lane_y = lanes(events), _AXIS_PX, None, [], {}
    for task, lane, spans in rows:
        if task != prev_task:
            y += _TASK_GAP_PX if prev_task is not None else 0
            n = sum(1 for t, _, _ in rows if t == task)
            parts.append(
                f'<rect x="0" y="{y - 2}" width="{_LABEL_PX + width_px + 10}" height="{n * _ROW_PX + 4}" '
                f'fill="{tint(task_color(task), 0.75)}" stroke="{task_color(task)}"/>'
                f'<text x="6" y="{y + 12}" font-weight="bold">{html.escape(task or "local")}</text>'
            )
            prev_task = task
        if "(" not in lane:  # continuation rows of a lane stay unlabelled
            parts.append(
                f'<text x="{_LABEL_PX - 6}" y="{y + 12}" text-anchor="end" fill="#444" font-size="10">'
                f"{html.escape(lane)}</text>"
            )
        for span in spans:
            lane_y[(task, span["name"], span["lane"])] = y + _ROW_PX / 2
            parts.append(_span_svg(span, x, y, events["t0"], (a, b)))
        y += _ROW_PX
    parts.extend(_flow_svg(f, x, lane_y) for f in events["flows"])
    height = y + 40
    axis = _axis_svg(a, b, width_px, height - 20)
    legend = (
        f'<text x="{_LABEL_PX}" y="{height - 22}" fill="#555">Hover a bar for its name, op and duration. '
        f'<tspan fill="{TRANSFER_COLOR}">Red: tensors sent between tasks (_Send → _Recv).</tspan></text>'
        f'<text x="{_LABEL_PX}" y="{height - 6}" fill="#555">Grey: service calls — RunStep at the master, '
        "RegisterGraph (first step only) and RunGraph at each worker; coloured: ops on that task.</text>"
    )
    if any(s["cat"] == RESOURCE_CAT for s in events["spans"]):
        height += 16
        legend += (
            f'<text x="{_LABEL_PX}" y="{height - 6}" fill="#555">Queue and accumulator lanes: every op on '
            "them while this step ran, dark for this step's own, pale for other steps' (other workers, "
            "the chief's queue runner).</text>"
        )
    return (
        '<svg xmlns="http://www.w3.org/2000/svg" class="nbdist-timeline-svg" '
        f'width="{_LABEL_PX + width_px + 10}" '
        f'height="{height}" font-family="DejaVu Sans, sans-serif" font-size="11">'
        '<defs><marker id="nbdist-arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" '
        'markerHeight="6" orient="auto">'
        f'<path d="M0,0 L10,5 L0,10 z" fill="{TRANSFER_COLOR}"/></marker></defs>'
        + axis
        + "".join(parts)
        + legend
        + "</svg>"
    )


def _span_svg(span, x, y, t0, window_ms):
    start, end = ((span[k] - t0) * 1e3 for k in ("start_s", "end_s"))
    if end < window_ms[0] or start > window_ms[1]:
        return ""  # outside the window
    x0, x1 = x(span["start_s"]), x(span["end_s"])
    fill, ink = _span_style(span)
    dur = end - start
    extra = "".join(f"\n{k}: {v}" for k, v in span["args"].items() if k != "op")
    tip = (
        f"{span['name']} ({span['cat']})\n{span['task']} · {span['lane']}\n"
        f"start {start:.3f} ms, took {dur:.3f} ms{extra}"
    )
    w = max(x1 - x0, 1.5)
    out = (
        f'<g class="nbdist-span"><title>{html.escape(tip)}</title>'
        f'<rect x="{x0:.1f}" y="{y + 2}" width="{w:.1f}" height="{_BAR_PX}" fill="{fill}" '
        'stroke="#555" stroke-width="0.4"/>'
    )
    label = {"service": span["name"], "_Send": "Send", "_Recv": "Recv", RESOURCE_CAT: span["name"]}.get(
        span["cat"], span["name"].rsplit("/", 1)[-1]
    )
    if w > 6.5 * len(label) + 4:
        out += (
            f'<text x="{x0 + 3:.1f}" y="{y + 13}" fill="{ink}" font-size="10" pointer-events="none">'
            f"{html.escape(label)}</text>"
        )
    return out + "</g>"


def _flow_svg(flow, x, lane_y):
    y0, y1 = (
        lane_y.get((flow["src_task"], flow["send"], "ops")),
        lane_y.get((flow["dst_task"], flow["recv"], "ops")),
    )
    if y0 is None or y1 is None:
        return ""
    tip = (
        f"{flow['tensor']}: {flow['src_task']} → {flow['dst_task']}, {format_bytes(flow['bytes'])}, "
        f"{(flow['end_s'] - flow['start_s']) * 1e3:.3f} ms from send to arrival"
    )
    return (
        f'<g class="nbdist-flow"><title>{html.escape(tip)}</title>'
        f'<line x1="{x(flow["start_s"]):.1f}" y1="{y0}" x2="{x(flow["end_s"]):.1f}" y2="{y1}" '
        f'stroke="{TRANSFER_COLOR}" stroke-width="1.6" '
        'marker-end="url(#nbdist-arrow)"/></g>'
    )


def _axis_svg(a, b, width_px, height):
    step = _nice_step(b - a)
    out = [f'<text x="{_LABEL_PX - 6}" y="14" text-anchor="end" fill="#444">time (ms)</text>']
    t = math.ceil(a / step) * step
    while t <= b + 1e-9:
        px = _LABEL_PX + (t - a) / (b - a) * width_px
        out.append(
            f'<line x1="{px:.1f}" y1="18" x2="{px:.1f}" y2="{height - 20}" stroke="#ddd"/>'
            f'<text x="{px:.1f}" y="14" text-anchor="middle" fill="#444">{t:g}</text>'
        )
        t += step
    return "".join(out)
