"""Makes the README's pictures (`docs/img/*.png`) from a real run, never by hand.

    .venv/bin/python docs/make_pictures.py            # writes docs/img/*.png
    .venv/bin/python docs/make_pictures.py --out DIR  # somewhere else

Starts a real local cluster (one ps and two worker server processes on 127.0.0.1), trains the
demo's model on it asynchronously (between-graph: each worker its own client, as
``nbdist demo --mode async``), with worker 0 tracing one of its steps, stops the cluster and
writes:

- ``dashboard.png``: the live training dashboard, `tf.Dashboard`, fed by the async run's real
  `tf.report` events; the PNG is the widget's own picture (`Dashboard.png`, what its image
  shows in the notebook), not a re-drawing.
- ``partitioned_graph.png``: the graph view of worker 0's traced step, `tf.show_graph`:
  the DOT source the widget lays out (`render.graph_to_dot`), laid out by Graphviz's `dot` as
  PNG instead of SVG; one box per task, a red edge per `_Send`/`_Recv` pair.
- ``architecture.png``: the architecture in one picture, drawn here with Graphviz: the client,
  the cluster's jobs and tasks, each task a server process with a master service and a
  worker service, and the messages between them (the same task colours as the graph view).

Needs Graphviz's `dot` on PATH (apt `graphviz`). Takes about ten seconds on two cores.
"""

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from nbdist.notebook import render
from nbdist.notebook.graph_model import mix_colors, task_color, tint
from nbdist.notebook.replicated_training import Settings, train
from nbdist.notebook.widgets.dashboard import Dashboard

OUT = Path(__file__).resolve().parent / "img"
PICTURES = ("dashboard.png", "partitioned_graph.png", "architecture.png")
DASHBOARD_STEPS = 200  # global steps of the async run the dashboard shows
GRAPH_DPI = 90  # Graphviz's PNGs: readable on GitHub, well under 200 KB
FONT = "DejaVu Sans"


def main(argv=None):
    p = argparse.ArgumentParser(prog="python docs/make_pictures.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=OUT, help="folder for the PNGs (default: docs/img)")
    args = p.parse_args(argv)
    if shutil.which("dot") is None:
        p.error(render.INSTALL_HINT.split(" The DOT source")[0])
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    dashboard_png, graph_dot = run_cluster()
    (args.out / "dashboard.png").write_bytes(dashboard_png)
    (args.out / "partitioned_graph.png").write_bytes(dot_to_png(graph_dot, GRAPH_DPI))
    (args.out / "architecture.png").write_bytes(dot_to_png(architecture_dot(), GRAPH_DPI))
    for name in PICTURES:
        path = args.out / name
        print(f"{path}  {path.stat().st_size / 1024:.0f} KB")
    print(f"done in {time.perf_counter() - started:.1f} s")
    return 0


def run_cluster():
    """Trains on a real local cluster; returns ``(the dashboard's PNG, the traced step's DOT)``."""
    async_run = Settings(mode="async", workers=2, ps=1, steps=DASHBOARD_STEPS, seed=0)
    with async_run.start_cluster() as cluster:
        dash = Dashboard(subscribe=False, title="Training (async, 2 workers)")
        try:
            result = train(cluster, async_run, dash.update, trace=True)
        finally:
            dash.close()  # stops listening and draws the final picture, as after training in a notebook
    return dash.png, render.graph_to_dot(result.run_metadata)


def dot_to_png(source, dpi):
    """Lays out DOT `source` with Graphviz's `dot` as a PNG at `dpi`; returns its bytes."""
    proc = subprocess.run(
        ["dot", "-Tpng", f"-Gdpi={dpi}"], input=source.encode(), capture_output=True, timeout=120, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(f"graphviz `dot` failed: {proc.stderr.decode(errors='replace')[:800]}")
    return proc.stdout


# -- the architecture in one picture -------------------------------------------------------------------------
CLUSTER = {"ps": ["localhost:2222"], "worker": ["localhost:2223", "localhost:2224"]}
MASTER = "/job:worker/task:0"  # the task whose address the client's Session names
GOLD = "#b08d00"
YELLOW = {"fillcolor": "#fff7d6", "color": GOLD}  # what runs outside the cluster
BOX = {"style": "rounded,filled", "fillcolor": "white"}
RED = "#d62728"  # tensors between tasks, as in the graph view


def architecture_dot():
    """DOT source of the architecture: client, cluster, jobs, tasks, services and messages."""
    tasks = [f"/job:{job}/task:{i}" for job, addresses in CLUSTER.items() for i in range(len(addresses))]
    ps, w0, w1 = (_id(t) for t in tasks)
    master = _id(MASTER)
    client = (
        "client: your notebook or script\n"
        "builds the Graph (tf.device places ops),\n"
        f"then sess = tf.Session('zmq://{CLUSTER['worker'][0]}')"
    )
    events = "the notebook's event stream\ntf.Dashboard, the status table"
    cluster = f"the cluster: tf.train.ClusterSpec({json.dumps(CLUSTER)})"
    run_step = " CreateSession: the GraphDef, once\n RunStep: feeds, fetches"
    run_graph = " RegisterGraph once,\n RunGraph every step"
    transfer = "_Send/_Recv: tensors\npeer to peer"
    lines = [
        "digraph architecture {",
        f"  graph {_attrs(fontname=FONT, fontsize=13, newrank='true', nodesep=0.3, ranksep=0.45)};",
        f"  node {_attrs(fontname=FONT, fontsize=11, shape='box', **BOX)};",
        f"  edge {_attrs(fontname=FONT, fontsize=10)};",
        f"  client {_attrs(label=client, **YELLOW)};",
        f"  events {_attrs(label=events, **YELLOW)};",
        "  subgraph cluster_spec {",
        f"    graph {_attrs(label=cluster, style='rounded,dashed', color='#888888', labeljust='l')};",
    ]
    for job in CLUSTER:
        lines.append(f"    subgraph cluster_job_{job} {{")
        label = f'job "{job}"'
        lines.append(f"      graph {_attrs(label=label, style='rounded', color='#bbbbbb')};")
        for task in (t for t in tasks if t.startswith(f"/job:{job}/")):
            lines.extend("      " + line for line in _task_box(task))
        lines.append("    }")
    lines += [
        "  }",
        "  { rank=same; " + " ".join(f"{_id(t)}_master;" for t in tasks) + " }",  # services in rows
        "  { rank=same; " + " ".join(f"{_id(t)}_worker;" for t in tasks) + " }",
        f"  client -> {master}_master {_attrs(label=run_step, penwidth=1.6)};",
        f"  {master}_master -> {w0}_worker {_attrs(label=run_graph, color='#555555')};",
        f"  {master}_master -> {{{w1}_worker; {ps}_worker}} {_attrs(color='#555555')};",
        f"  {ps}_worker -> {w0}_worker {_attrs(label=transfer, color=RED, fontcolor=RED, dir='both')};",
        f"  {w0}_worker -> {w1}_worker {_attrs(style='invis')};",  # worker 1 right of worker 0
        f"  {ps}_worker -> {w1}_worker {_attrs(color=RED, dir='both', constraint='false')};",
        f"  {{{ps}_worker; {w0}_worker; {w1}_worker}} -> events {_attrs(style='dashed', color=GOLD)};",
        "}",
    ]
    return "\n".join(lines)


def _task_box(task):
    """A task: one server process with a master service and a worker service."""
    job, index = task.split("/")[1][len("job:") :], int(task.rpartition(":")[2])
    role = "holds the variables" if job == "ps" else "runs the towers' ops"
    if task == MASTER:
        role += ";\nthe client's master"
    color = task_color(task)
    box = _attrs(
        label=f"{task}  {CLUSTER[job][index]}\nserver process (python -m nbdist.server): {role}",
        style="rounded,filled",
        fillcolor=tint(color),
        color=mix_colors(color, "#000000", 0.25),
    )
    master = "master service\nplace, partition, run steps"
    worker = "worker service\nruns graph partitions;\nvariables, queues, accumulators"
    return [
        f"subgraph cluster_{_id(task)} {{",
        f"  graph {box};",
        f"  {_id(task)}_master {_attrs(label=master)};",
        f"  {_id(task)}_worker {_attrs(label=worker)};",
        "}",
    ]


def _id(task):
    return task.replace("/job:", "").replace("/task:", "_")


def _attrs(**attrs):
    """A DOT attribute list; every value quoted (a newline in a label is a centred line break)."""
    return "[" + ", ".join(f"{k}={json.dumps(str(v))}" for k, v in attrs.items()) + "]"


if __name__ == "__main__":
    sys.exit(main())
