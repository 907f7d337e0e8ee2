"""The views draw real TensorFlow: a traced step of a TF 2-task cluster (ps + worker, in a
child process: tests/scripts/tf_cluster_trace.py) renders in show_graph, show_placement and
show_timeline with its _Send/_Recv pairs; a GraphDef proto draws its requested devices."""

import subprocess
import sys
from pathlib import Path

import pytest

import nbdist as tf
from nbdist.notebook import graph_model as gm
from nbdist.notebook import placement_chart, trace
from procs import kernel_env

pytestmark = pytest.mark.slow
SCRIPT = Path(__file__).parent / "scripts" / "tf_cluster_trace.py"
PS, WORKER = "/job:ps/task:0", "/job:worker/task:0"


@pytest.fixture(scope="module")
def tf_trace(tmp_path_factory, tf1_graph_mode):
    """(RunMetadata proto, GraphDef proto) of one traced step of a real TF cluster."""
    out = tmp_path_factory.mktemp("tf_trace")
    subprocess.run([sys.executable, str(SCRIPT), str(out)], env=kernel_env(), check=True, timeout=180)
    md = tf1_graph_mode.RunMetadata()
    md.ParseFromString((out / "run_metadata.pb").read_bytes())
    graph_def = tf1_graph_mode.GraphDef()
    graph_def.ParseFromString((out / "graph_def.pb").read_bytes())
    return md, graph_def


def test_partition_graphs_pair_each_send_with_its_recv(tf_trace):
    model = gm.graph_model(tf_trace[0])
    assert model.mode == "placed"
    assert model.tasks() == [PS, WORKER]
    pairs = {(model.task[s], model.task[r], s.rsplit("_S", 1)[0]) for s, r in model.pairs()}
    # w and b are read on the worker; their gradients and the learning rate go to the ps.
    assert (PS, WORKER, "w/read") in pairs and (PS, WORKER, "b/read") in pairs
    assert (WORKER, PS, "GradientDescent/learning_rate") in pairs
    assert {(s, d) for s, d, _ in pairs} == {(PS, WORKER), (WORKER, PS)}


def test_timeline_has_each_cross_task_tensor_as_a_flow_with_its_bytes(tf_trace):
    events = trace.step_events(tf_trace[0])
    assert events["tasks"] == [PS, WORKER]
    flows = {f["tensor"]: f for f in events["flows"]}
    w_read = next(f for name, f in flows.items() if name.endswith("_w/read"))
    assert (w_read["src_task"], w_read["dst_task"], w_read["bytes"]) == (PS, WORKER, 4 * 3 * 4)
    assert len(flows) == len(gm.graph_model(tf_trace[0]).pairs())
    op_spans = {s["name"] for s in events["spans"] if s["task"] == PS}
    assert "GradientDescent/update_w/ApplyGradientDescent" in op_spans
    breakdown = trace.time_breakdown(tf_trace[0])
    assert set(breakdown["tasks"]) == {PS, WORKER}
    assert breakdown["step"]["kernels"] > 0


def test_placement_counts_variables_and_measured_bytes(tf_trace):
    rows = {r["task"]: r for r in placement_chart.placement_summary(tf_trace[0])}
    assert [v[:2] for v in rows[PS]["variables"]] == [("w", "float32[4,3]"), ("b", "float32[3]")]
    assert rows[PS]["sent_bytes"] == rows[WORKER]["recv_bytes"] == 48 + 12
    assert rows[WORKER]["sent_bytes"] == rows[PS]["recv_bytes"] > 48 + 12  # gradients + learning rate


def test_all_three_views_render_the_traced_step(tf_trace):
    md = tf_trace[0]
    graph = tf.show_graph(md)
    assert "placed" in repr(graph) and PS in repr(graph) and WORKER in repr(graph)
    svg = graph._repr_mimebundle_()["image/svg+xml"]
    assert "gradients/" in svg and "_Recv" in svg  # name scopes collapsed by default
    expanded = tf.show_graph(md, collapse=False)._repr_mimebundle_()["image/svg+xml"]
    assert "w/read_S" in expanded
    placement = tf.show_placement(md)
    assert "/job:ps/task:0: 2 variables" in repr(placement)
    timeline = tf.show_timeline(md)
    assert "2 tasks" in repr(timeline)
    assert timeline.svg.count("nbdist-flow") == len(trace.step_events(md)["flows"]) >= 3


def test_a_graph_def_proto_draws_its_requested_devices(tf_trace):
    model = gm.graph_model(tf_trace[1])
    assert model.mode == "requested"
    assert model.task["w"] == PS and model.task["MatMul"] == WORKER
    rows = {r["task"]: r for r in placement_chart.placement_summary(tf_trace[1])}
    assert rows[PS]["param_bytes"] == 48 + 12
    assert "requested" in repr(tf.show_graph(tf_trace[1]))
