"""Charts comparing training runs (the playground): one run in colour, the previous in grey.

Pure like `nbdist.notebook.dashboard_plot` (they read a `metrics_history.MetricsHistory`): metric events in,
a summary dict, a matplotlib `Figure` and an HTML table out.

    summary = run_summary(history)              # global steps/s, final loss, dropped, staleness
    png = png_writer.figure_png(runs_figure(history, previous_history, mode="sync"))
"""

import html

from nbdist.notebook.dashboard_plot import line_colors
from nbdist.notebook.graph_model import task_sort_key

PREVIOUS_RUN_COLOR = "#b0b8c6"  # a cool grey: no blend of black, white and the line colours


def run_summary(history):
    """What one training run's metric events add up to (for comparing runs).

    Returns:
        ``{"global_step", "duration_s", "global_steps_per_s", "final_loss" (mean of every
        replica's last loss), "local_steps" ({task: steps}), "dropped" ({task: gradients
        dropped}) and "staleness" (every reported staleness, in order)}``; a value is None
        (or empty) when no event carried it. Global steps/s is measured from the first report
        to the last, so the start-up (shipping and planning the graph) is left out.
    """
    data = history.snapshot()
    steps = history.global_steps(data)
    rate = None
    if len(steps) > 2 and steps[-1][0] > steps[0][0]:
        rate = (steps[-1][1] - steps[0][1]) / (steps[-1][0] - steps[0][0])
    last_losses, local_steps, dropped, staleness = [], {}, {}, []
    for task, ev in sorted(data.items(), key=lambda kv: task_sort_key(kv[0])):
        losses = [m["loss"] for _, _, m in ev if "loss" in m]
        if losses:
            last_losses.append(losses[-1])
        local_steps[task] = max((m.get("local_step", 0) for _, _, m in ev), default=0)
        if any("dropped" in m for _, _, m in ev):
            dropped[task] = sum(m.get("dropped", 0) for _, _, m in ev)
        staleness += [m["staleness"] for _, _, m in ev if "staleness" in m]
    times = [t for ev in data.values() for t, _, _ in ev]
    return {
        "global_step": steps[-1][1] if steps else None,
        "duration_s": max(times) if times else None,
        "global_steps_per_s": rate,
        "final_loss": sum(last_losses) / len(last_losses) if last_losses else None,
        "local_steps": local_steps,
        "dropped": dropped,
        "staleness": staleness,
    }


def runs_figure(
    current,
    previous=None,
    current_label="this run",
    previous_label="previous run",
    mode=None,
    straggler=None,
    workers=None,
):
    """Two training runs side by side on the same axes: `current` (a `MetricsHistory`) in
    colour, `previous` in grey. Panels: loss per replica, the global step over time (its
    slope is global steps/s), and what replication lost: the staleness of every update
    (async), the gradients dropped per worker (sync), or a note that in-graph loses none;
    `mode` (the current run's) picks that panel, else the metrics reported do. `straggler`
    (a task name) is marked as such; `workers` (the current run's worker task names) get a
    bar in the dropped panel even when they reported nothing."""
    from matplotlib.figure import Figure  # noqa: PLC0415 - matplotlib is imported only when drawing

    fig = Figure(figsize=(11.5, 3.3), dpi=100, layout="constrained")
    ax_loss, ax_step, ax_lost = fig.subplots(1, 3)
    for history, label, grey in [(previous, previous_label, True), (current, current_label, False)]:
        if history is None:
            continue
        data = history.snapshot()
        colors = line_colors(data)
        named = False
        for task, ev in sorted(data.items(), key=lambda kv: task_sort_key(kv[0])):
            pts = [(t, m["loss"]) for t, _, m in ev if "loss" in m]
            if not pts:
                continue
            if grey:
                style = {"color": PREVIOUS_RUN_COLOR, "linewidth": 1.0, "zorder": 1}
                style["label"], named = (None if named else label), True
            else:
                style = {
                    "color": colors[task],
                    "linewidth": 1.4,
                    "zorder": 2,
                    "label": _short(task, straggler),
                }
            ax_loss.plot(*zip(*pts), **style)
        steps = history.global_steps(data)
        if steps:
            rate = run_summary(history)["global_steps_per_s"]
            style = {"color": PREVIOUS_RUN_COLOR, "linestyle": "--"} if grey else {"color": "#222"}
            ax_step.plot(
                *zip(*steps), label=f"{label}: {rate:.1f} steps/s" if rate else label, lw=1.8, **style
            )
    for ax, title in ((ax_loss, "loss per replica"), (ax_step, "global step (slope: global steps/s)")):
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("time since the first step (s)")
        ax.grid(alpha=0.3)
        if ax.lines:
            ax.legend(fontsize=7, frameon=False, loc="upper right" if ax is ax_loss else "lower right")
    if not current.count:
        ax_loss.text(
            0.5, 0.5, "waiting for the first step…", ha="center", va="center", transform=ax_loss.transAxes
        )
    _lost_panel(ax_lost, current, previous, current_label, previous_label, mode, straggler, workers)
    return fig


def _short(task, straggler=None):
    """``"/job:worker/task:2"`` → ``"worker:2"``, with ``" (straggler)"`` when it is one."""
    short = task.replace("/job:", "").replace("/task:", ":")
    return short + " (straggler)" if task == straggler else short


_LOST_PANELS = {"async": "staleness", "sync": "dropped", "in-graph": None}


def _lost_panel(ax, current, previous, current_label, previous_label, mode, straggler, workers):
    runs = [
        (run_summary(h), label, h is previous)
        for h, label in ((previous, previous_label), (current, current_label))
        if h is not None
    ]
    if mode in _LOST_PANELS:
        kind = _LOST_PANELS[mode]
    else:  # unknown mode: what the runs reported, the current run's first
        kind = next((k for s, _, _ in runs[::-1] for k in ("staleness", "dropped") if s[k]), None)
    if kind == "staleness":
        _staleness_panel(ax, runs)
    elif kind == "dropped":
        _dropped_panel(ax, runs, straggler, workers)
    else:
        ax.set_axis_off()
        ax.set_title("what replication lost", fontsize=10)
        note = (
            "in-graph: one client runs every tower\nin one step, so no gradient is stale\n"
            "and none is dropped, but every step\nwaits for the slowest tower"
        )
        ax.text(0.5, 0.5, note, ha="center", va="center", transform=ax.transAxes, fontsize=9, color="#444")


def _staleness_panel(ax, runs):
    top = max((max(s["staleness"], default=0) for s, _, _ in runs), default=0)
    bins = [b - 0.5 for b in range(int(top) + 2)]
    for s, label, grey in runs:
        if s["staleness"]:
            style = {"histtype": "step", "color": PREVIOUS_RUN_COLOR, "linewidth": 2} if grey else {}
            ax.hist(s["staleness"], bins=bins, label=label, **(style or {"color": "#1f77b4", "alpha": 0.8}))
    ax.set_title("staleness of each update (async)", fontsize=10)
    ax.set(xlabel="updates by others since it read the weights", ylabel="updates")
    ax.grid(alpha=0.3)
    if ax.patches:
        ax.legend(fontsize=7, frameon=False)


def _dropped_panel(ax, runs, straggler, workers):
    """Bars per worker: the share of its gradients dropped (a bar as tall as that share of the axis,
    0 to 100%), labelled dropped/sent; a worker that sent nothing (a straggler still starting) gets
    an empty bar labelled 0/0, so its absence shows."""
    tasks = sorted({*(workers or ()), *(t for s, _, _ in runs for t in s["dropped"])}, key=task_sort_key)
    colors = line_colors(tasks)
    width = 0.4
    for s, label, grey in runs:
        if not s["dropped"]:
            continue
        mine = [t for t in tasks if t in s["dropped"] or (not grey and t in (workers or ()))]
        x = [tasks.index(t) + (-width / 2 if grey else width / 2) for t in mine]
        fill = [PREVIOUS_RUN_COLOR if grey else colors[t] for t in mine]
        dropped = [s["dropped"].get(t, 0) for t in mine]
        sent = [s["local_steps"].get(t, 0) for t in mine]
        shares = [100.0 * d / n if n else 0.0 for d, n in zip(dropped, sent)]
        bars = ax.bar(x, shares, width, color=fill, edgecolor="#555", label=label)
        ax.bar_label(bars, labels=[f"{d:.0f}/{n:.0f}" for d, n in zip(dropped, sent)], fontsize=7)
    ax.set_xticks(range(len(tasks)), [_short(t, straggler).replace(" ", "\n") for t in tasks], fontsize=8)
    ax.set_title("gradients dropped per worker (sync)", fontsize=10)
    ax.set(ylabel="% dropped (labels: dropped/sent)")
    ax.set_ylim(0, 112)  # room above a full bar for its label
    ax.set_yticks(range(0, 101, 25))
    ax.grid(alpha=0.3)
    if ax.patches:
        ax.legend(fontsize=7, frameon=False)


def runs_html(rows):
    """An HTML table comparing runs, newest first.

    Args:
        rows: dicts with ``label``, ``settings`` (one line), ``outcome``, ``summary``
            (`run_summary`), ``accuracy`` (or None) and ``role`` (``"current"``, ``"previous"``
            or ``""``: the current run is bold, the previous one grey as in the picture).
    """
    head = (
        "<tr><th>run</th><th>settings</th><th>outcome</th><th>global step</th><th>global steps/s</th>"
        "<th>final loss</th><th>stale or dropped</th><th>accuracy</th></tr>"
    )
    body = []
    for r in rows:
        s = r["summary"]
        style = {"current": "font-weight:bold", "previous": f"color:{PREVIOUS_RUN_COLOR}"}.get(r["role"], "")
        lost = "—"
        if s["staleness"]:
            lost = f"mean staleness {sum(s['staleness']) / len(s['staleness']):.1f}"
        elif s["dropped"]:
            lost = f"{sum(s['dropped'].values()):.0f} of {sum(s['local_steps'].values()):.0f} dropped"
        cells = [
            r["label"],
            r["settings"],
            r["outcome"],
            "—" if s["global_step"] is None else f"{s['global_step']:.0f}",
            "—" if s["global_steps_per_s"] is None else f"{s['global_steps_per_s']:.1f}",
            "—" if s["final_loss"] is None else f"{s['final_loss']:.3f}",
            lost,
            "—" if r["accuracy"] is None else f"{r['accuracy']:.0%}",
        ]
        body.append(
            f'<tr style="{style}">' + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>"
        )
    return (
        '<table class="nbdist-runs-table" style="border-collapse:collapse;font-size:12px" border="1" '
        f'cellpadding="4">{head}{"".join(body)}</table>'
    )
