"""Which task holds what: per task its ops, variables and bytes on the wire, as an HTML table
and a matplotlib Figure.

Pure like `nbdist.notebook.render` (whose graph model and task colours it uses): a graph or
a traced step in, rows, HTML and a `matplotlib.figure.Figure` out; the widgets set them as state.

    rows = placement_summary(run_metadata)      # per task: ops, variables, bytes on the wire
    png = png_writer.figure_png(placement_figure(rows))
"""

import collections
import html

from nbdist.notebook import i18n
from nbdist.notebook.graph_model import (
    TRANSFER_OPS,
    VARIABLE_OPS,
    format_bytes,
    format_spec,
    graph_model,
    nbytes_of,
    task_color,
)


def placement_summary(obj):
    """Per task: its ops by type, its variables with their bytes, and bytes sent/received per step.

    Args:
        obj: anything `graph_model` takes. From a traced RunMetadata the bytes are measured
            (or read from each ``_Recv``'s dtype/shape); from a Graph they are the estimate of
            what would cross tasks given the requested devices.

    Returns:
        A list of dicts, one per task in display order: ``task``, ``color``, ``ops`` (count),
        ``op_types`` (Counter), ``variables`` (list of ``(name, "float32[3,2]", nbytes)``),
        ``param_bytes``, ``sent_bytes``, ``recv_bytes``, ``sends``, ``recvs``, ``measured``.
    """
    model = graph_model(obj)
    rows = {
        t: {
            "task": t,
            "color": task_color(t),
            "ops": 0,
            "op_types": collections.Counter(),
            "variables": [],
            "param_bytes": 0,
            "sent_bytes": 0,
            "recv_bytes": 0,
            "sends": 0,
            "recvs": 0,
            "measured": model.mode == "placed",
        }
        for t in model.tasks()
    }
    for node in model.nodes:
        row = rows[model.task[node.name]]
        if node.op in TRANSFER_OPS:
            continue
        row["ops"] += 1
        row["op_types"][node.op] += 1
        if node.op in VARIABLE_OPS and node.output:
            nbytes = nbytes_of(*node.output[0])
            row["variables"].append((node.name, format_spec(*node.output[0]), nbytes))
            row["param_bytes"] += nbytes or 0
    for src_task, dst_task, nbytes in _crossings(model):
        rows[src_task]["sent_bytes"] += nbytes or 0
        rows[src_task]["sends"] += 1
        rows[dst_task]["recv_bytes"] += nbytes or 0
        rows[dst_task]["recvs"] += 1
    return list(rows.values())


def _crossings(model):
    """``(from task, to task, bytes)`` per tensor crossing tasks in one step."""
    if model.mode == "placed":
        return [(model.task[s], model.task[r], model.pair_bytes(model.by_name[r])) for s, r in model.pairs()]
    seen, out = set(), []
    for node in model.nodes:
        dst = model.task[node.name]
        for inp in node.input:
            src_name = inp[1:] if inp.startswith("^") else inp.rpartition(":")[0]
            src = model.task.get(src_name, "")
            if not src or not dst or src == dst or (inp, dst) in seen:
                continue
            seen.add((inp, dst))
            producer = model.by_name[src_name]
            nbytes = 0 if inp.startswith("^") else nbytes_of(*producer.output[int(inp.rpartition(":")[2])])
            out.append((src, dst, nbytes))
    return out


_SWATCH = "display:inline-block;width:12px;height:12px;border:1px solid #888;"


def placement_html(rows):
    """A compact HTML table of `placement_summary` rows."""
    head = (
        "<tr><th>task</th><th>ops</th><th>most common op types</th><th>variables (what it holds)</th>"
        "<th>params</th><th>sent / step</th><th>received / step</th></tr>"
    )
    body = []
    for r in rows:
        swatch = f'<span style="{_SWATCH}background:{r["color"]}"></span>'
        types = ", ".join(f"{t} x{c}" for t, c in r["op_types"].most_common(4))
        variables = (
            "<br>".join(
                f"<code>{html.escape(n)}</code> {s} · {format_bytes(b)}" for n, s, b in r["variables"]
            )
            or "—"
        )
        est = "" if r["measured"] else " (est.)"
        body.append(
            f"<tr><td>{swatch} <b>{html.escape(r['task'] or 'no device')}</b></td><td>{r['ops']}</td>"
            f"<td>{html.escape(types)}</td><td>{variables}</td><td>{format_bytes(r['param_bytes'])}</td>"
            f"<td>{format_bytes(r['sent_bytes'])} in {r['sends']}{est}</td>"
            f"<td>{format_bytes(r['recv_bytes'])} in {r['recvs']}{est}</td></tr>"
        )
    style = "border-collapse:collapse;font-size:12px"
    return (
        f'<table class="nbdist-placement-table" style="{style}" border="1" cellpadding="4">'
        f"{head}{''.join(body)}</table>"
    )


def placement_figure(rows, lang="en"):
    """A matplotlib Figure: parameter bytes per task, and bytes sent/received per step; titles
    and labels in `lang` (`i18n.LANGS`; draw it under ``rc_context(i18n.font_rc(lang))``)."""
    from matplotlib.figure import Figure  # noqa: PLC0415 - matplotlib is imported only when drawing
    from matplotlib.ticker import MaxNLocator  # noqa: PLC0415

    fig = Figure(figsize=(9, 1.2 + 0.45 * len(rows)), dpi=90, layout="constrained")
    ax_params, ax_wire = fig.subplots(1, 2, sharey=True)
    labels = [r["task"] or i18n.text(lang, "c_no_device") for r in rows]
    y = range(len(rows))
    colors = [r["color"] for r in rows]
    ax_params.barh(y, [r["param_bytes"] for r in rows], color=colors, edgecolor="#555")
    ax_params.set(yticks=list(y), yticklabels=labels, title=i18n.text(lang, "c_params"))
    ax_params.invert_yaxis()
    height = 0.38
    ax_wire.barh(
        [i - height / 2 for i in y],
        [r["sent_bytes"] for r in rows],
        height,
        color=colors,
        edgecolor="#555",
        label=i18n.text(lang, "c_sent"),
    )
    ax_wire.barh(
        [i + height / 2 for i in y],
        [r["recv_bytes"] for r in rows],
        height,
        color=colors,
        edgecolor="#555",
        hatch="///",
        label=i18n.text(lang, "c_received"),
    )
    ax_wire.set(title=i18n.text(lang, "c_wire"))
    ax_wire.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
    for ax in (ax_params, ax_wire):
        for bars in ax.containers:
            ax.bar_label(bars, labels=[format_bytes(b.get_width()) for b in bars], fontsize=8, padding=2)
        ax.margins(x=0.18)
        ax.grid(axis="x", alpha=0.3)
        ax.xaxis.set_major_locator(MaxNLocator(nbins=4))
        ax.xaxis.set_major_formatter(lambda v, _: format_bytes(v))
    return fig
