"""`nbdist.notebook.render`: graphs to DOT/SVG, coloured by task, with Send/Recv edges."""

import html
import re

import numpy as np
import pytest

import nbdist as tf
from nbdist.notebook import graph_model as gm
from nbdist.notebook import render
from nbdist.runtime.server_lib import Server
from procs import free_port
from traced_steps import CROSSINGS, build_model, traced_steps


@pytest.fixture(scope="module")
def traced():
    with traced_steps(ps_tasks=2) as model:
        yield model


@pytest.fixture
def model():
    return build_model()


def fills(dot):
    return set(re.findall(r'fillcolor="(#[0-9a-f]{6})"', dot))


def edge_labels(dot):
    """The text of every edge label (HTML-like xlabels), lines joined by newlines."""
    cells = re.findall(r"xlabel=<<TABLE[^>]*><TR><TD>(.*?)</TD>", dot)
    return [html.unescape(c.replace("<BR/>", "\n")) for c in cells]


def clusters(dot):
    return re.findall(r"subgraph cluster_\d+ \{\n    graph \[label=\"([^\"]*)\"", dot)


# -- requested view --------------------------------------------------------------------------------
def test_requested_view_has_one_box_and_one_colour_per_task(model):
    dot = render.graph_to_dot(model.graph, collapse=False)
    assert clusters(dot) == ["/job:ps/task:0", "/job:worker/task:0", "no device requested"]
    expected = {gm.task_color("/job:ps/task:0"), gm.task_color("/job:worker/task:0")}
    assert expected <= fills(dot)


def test_legend_lists_every_task_with_its_colour_in_the_caption(model):
    dot = render.graph_to_dot(model.graph)
    legend = next(line for line in dot.splitlines() if line.startswith("  graph [label=<"))
    assert "Requested devices (as recorded" in legend  # the title, above the legend
    for task in ("/job:ps/task:0", "/job:worker/task:0"):
        assert f'BGCOLOR="{gm.task_color(task)}"' in legend and task in legend


def test_requested_view_marks_edges_the_master_will_cut(model):
    dot = render.graph_to_dot(model.graph, collapse=False)
    cut = [line for line in dot.splitlines() if "nbdist-cross" in line]
    assert any('"w/read" -> "model/MatMul"' in line for line in cut)


def test_variables_are_drawn_as_cylinders(model):
    dot = render.graph_to_dot(model.graph, collapse=False)
    line = next(line for line in dot.splitlines() if line.strip().startswith('"w" ['))
    assert 'shape="cylinder"' in line and "Variable float32[3,2]" in line


def test_a_session_or_tensor_draws_its_graph(model):
    with tf.Session(graph=model.graph) as sess:
        assert render.graph_to_dot(sess) == render.graph_to_dot(model.graph)
    assert "GradientDescent" not in render.graph_to_dot(model.loss)  # only what `loss` needs


# -- placed & partitioned view --------------------------------------------------------------------
def test_placed_view_draws_one_transfer_edge_per_send_recv_pair(traced):
    dot = render.graph_to_dot(traced.md, collapse=False)
    recvs = sum(n["op"] == "_Recv" for part in traced.md.partition_graphs for n in part["node"])
    assert recvs == CROSSINGS
    assert dot.count('class="nbdist-transfer"') == CROSSINGS


def test_transfer_edges_cross_between_task_boxes(traced):
    model = gm.graph_model(traced.md)
    for send, recv in model.pairs():
        assert model.task[send] != model.task[recv]
    assert clusters(render.graph_to_dot(model)) == ["/job:ps/task:0", "/job:ps/task:1", "/job:worker/task:0"]


def test_each_pair_of_tasks_gets_one_label_saying_what_crosses_between_them(traced):
    """Tensor, dtype/shape and bytes when one tensor crosses; else which tasks, with the totals."""
    assert sorted(edge_labels(render.graph_to_dot(traced.md, collapse=False))) == [
        "ps:0 → worker:0:\nw/read:0\nfloat32[3,2] · 24 B\n1 control signal (0 B)",
        "ps:1 → worker:0:\nb/read:0\nfloat32[2] · 8 B\n1 control signal (0 B)",
        "…/Add_grad/SumToShape_1:0\nfloat32[2] · 8 B",
        "…/MatMul_grad/MatMul_1:0\nfloat32[3,2] · 24 B",
    ]


def test_edge_labels_are_left_out_rather_than_drawn_over_each_other(traced):
    """Graphviz places each xlabel after the layout where it overlaps no node and no other label,
    and leaves out one that has no such place (its edge's tooltip still says it all)."""
    dot = render.graph_to_dot(traced.md)
    assert 'forcelabels="false"' in dot
    transfers = [line for line in dot.splitlines() if 'class="nbdist-transfer"' in line]
    assert not any(" [label=" in line for line in transfers)
    assert all("tooltip=" in line for line in transfers)


def test_svg_has_the_transfer_edges_and_task_colours(traced):
    svg = html.unescape(render.dot_to_svg(render.graph_to_dot(traced.md, collapse=False)))
    assert svg.startswith("<svg")
    assert len(re.findall(r'class="edge nbdist-transfer"', svg)) == CROSSINGS
    for task in ("/job:ps/task:0", "/job:ps/task:1", "/job:worker/task:0"):
        assert f'fill="{gm.task_color(task)}"' in svg


def test_a_trace_event_from_a_task_draws_as_its_run_metadata(traced):
    """What `report_trace` sends from a ``%%dtf_worker`` task, after the wire, is drawn the same."""
    from nbdist.notebook import event_stream as events
    from nbdist.notebook import placement_chart, trace
    from nbdist.runtime.net import wire

    stream = events.current_stream()
    stream.clear()
    events.report_trace(traced.md, step=2)
    (sent,) = stream.history("trace")
    event = wire.decode(wire.encode("Event", 0, {"event": sent}))["event"]
    assert render.graph_to_dot(event, collapse=False) == render.graph_to_dot(traced.md, collapse=False)
    assert placement_chart.placement_summary(event) == placement_chart.placement_summary(traced.md)
    assert trace.step_events(event)["flows"] == trace.step_events(traced.md)["flows"]


def test_metadata_without_partition_graphs_says_how_to_trace(model):
    md = tf.RunMetadata()
    with tf.Session(graph=model.graph) as sess:
        sess.run(model.init, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=md)
    with pytest.raises(ValueError, match=r"no partition graphs.*FULL_TRACE"):
        render.graph_to_dot(md)


def test_something_that_is_not_a_graph_is_refused():
    with pytest.raises(TypeError, match=r"cannot draw int: pass a tf\.Graph"):
        render.graph_to_dot(3)


# -- collapsing and subgraphs ------------------------------------------------------------------------
def test_collapsed_scope_is_one_node_per_task(model):
    dot = render.graph_to_dot(model.graph, collapse=True)
    assert '"model@/job:worker/task:0" [label="model/\\n5 ops"' in dot
    assert '"model/MatMul"' not in dot


def test_expanding_a_scope_shows_its_ops(model):
    dot = render.graph_to_dot(model.graph, collapse=True, expanded=["model"])
    assert '"model/MatMul"' in dot and "model@" not in dot
    assert "gradients@/job:worker/task:0" in dot  # the others stay collapsed


def test_graphs_start_collapsed_with_the_op_count_of_each_scope(model):
    dot = render.graph_to_dot(model.graph)
    assert '"model@/job:worker/task:0" [label="model/\\n5 ops"' in dot and '"model/MatMul"' not in dot


def test_graphs_above_the_threshold_start_collapsed(model):
    assert "nbdist-scope" in render.graph_to_dot(model.graph, collapse_above=20)  # 39 ops
    assert "nbdist-scope" not in render.graph_to_dot(model.graph, collapse_above=100)


def test_numbered_sibling_scopes_collapse_into_one_series_node():
    graph = tf.Graph()
    with graph.as_default(), tf.device("/job:worker/task:0"):
        h = tf.constant(np.ones((1, 2), np.float32))
        for i in range(1, 7):
            with tf.name_scope(f"layer{i}"):
                h = tf.nn.relu(h * 2.0)
    dot = render.graph_to_dot(graph, collapse=True)
    assert "layer[1-6]@/job:worker/task:0" in dot
    assert "layer[1-6]" in gm.collapsible_scopes(gm.graph_model(graph))
    assert "layer3@" in render.graph_to_dot(graph, collapse=True, expanded=["layer[1-6]"])


def test_collapsed_placed_view_draws_flows_between_scopes_counting_bytes_once(traced):
    dot = render.graph_to_dot(traced.md, collapse=True)
    transfers = [line for line in dot.splitlines() if 'class="nbdist-transfer"' in line]
    assert "nbdist-transfer-op" not in dot  # no _Send/_Recv nodes: one edge per flow
    assert any(line.startswith('  "w@/job:ps/task:0" -> "model@/job:worker/task:0"') for line in transfers)
    labelled = [int(b) for b in re.findall(r"· (\d+) B", "".join(edge_labels(dot)))]
    assert sorted(labelled) == [8, 8, 24, 24]  # each tensor once, though b/read feeds 2 scopes
    assert "".join(edge_labels(dot)).count("control signal (0 B)") == 2
    assert dot.count('class="nbdist-transfer-again"') == 1


def test_fetch_shows_only_the_subgraph_it_needs(traced):
    dot = render.graph_to_dot(traced.md, fetch="model/Mean", collapse=False)
    assert '"model/Mean"' in dot and '"w"' in dot  # w crosses over from ps:0
    assert "GradientDescent" not in dot and "gradients/" not in dot
    assert dot.count('class="nbdist-transfer"') == 2


def test_unknown_fetch_names_the_close_matches(model):
    with pytest.raises(ValueError, match=r"fetch 'model/Mea' is not a node.*did you mean 'model/Mean'"):
        render.graph_to_dot(model.graph, fetch="model/Mea")


# -- laying out -------------------------------------------------------------------------------------
def test_missing_dot_gives_install_hints_and_the_source_not_a_traceback(model, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    drawing = render.draw_graph(model.graph)
    assert drawing.svg is None
    assert (
        "sudo apt-get install graphviz" in drawing.html
        and "conda install -c conda-forge graphviz" in drawing.html
    )
    assert "digraph nbdist {" in drawing.html


def test_dot_to_svg_without_dot_raises_with_the_source(model, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(render.GraphvizNotFoundError, match="apt-get install graphviz") as info:
        render.dot_to_svg("digraph { a }")
    assert info.value.source == "digraph { a }"


def test_too_many_nodes_are_not_laid_out(model):
    drawing = render.draw_graph(model.graph, collapse=False, max_nodes=10)
    assert drawing.svg is None and "too many to lay out" in drawing.html and drawing.nodes == 39


def test_fitted_to_a_width_a_drawing_never_shrinks_node_text_below_10_px(model):
    """Graphviz's user units are points and node text is 10 pt: at 1 CSS px per unit it is 10 px."""
    svg = render.draw_graph(model.graph).svg
    width = float(re.search(r'viewBox="[-\d.]+ [-\d.]+ ([\d.]+) ', svg)[1])
    style = f"max-width:100%;height:auto;min-width:{width:.0f}px"
    assert render.fit_to_width(svg) == svg.replace("<svg ", f'<svg style="{style}" ', 1)


def test_draw_graph_returns_the_svg(model):
    drawing = render.draw_graph(model.graph)
    assert drawing.svg.startswith("<svg") and drawing.html == drawing.svg


# -- control flow: tf.cond, tf.while_loop -----------------------------------------------------------
TRACE = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)


def control_flow_graph():
    """A cond (x * 2 + 1 or x² - 3) and a loop (5 iterations) on the worker, both feeding `out`."""
    graph = tf.Graph()
    with graph.as_default(), tf.device("/job:worker/task:0"):
        x = tf.placeholder(tf.float32, [], name="x")
        p = tf.placeholder(tf.bool, [], name="p")
        y = tf.cond(p, lambda: x * 2.0 + 1.0, lambda: tf.square(x) - 3.0)
        start = (tf.constant(0), tf.constant(1.0))
        _, acc = tf.while_loop(lambda i, a: i < 5, lambda i, a: (i + 1, a * 1.5 + x), start)
        out = tf.identity(y + acc, name="out")
    return graph, x, p, out


def cluster_nodes(dot, label):
    """The quoted node ids declared inside the (nested) cluster labelled `label`."""
    lines = dot.splitlines()
    start = next(i for i, line in enumerate(lines) if f'graph [label="{label}"' in line)
    depth, ids = 1, []
    for line in lines[start + 1 :]:
        depth += line.count("{") - line.count("}")
        if depth == 0:
            return ids
        m = re.match(r'\s*"([^"]+)" \[', line)
        if m:
            ids.append(m[1])
    raise AssertionError(f"cluster {label!r} is not closed")


def test_a_collapsed_cond_is_one_box_that_says_it_is_a_cond():
    graph, *_ = control_flow_graph()
    dot = render.graph_to_dot(graph)
    assert '"cond@/job:worker/task:0" [label="cond/\\ntf.cond: 15 ops (true/false branches)"' in dot
    assert "true branch" not in dot and '"cond/Mul"' not in dot


def test_an_expanded_cond_draws_its_true_and_false_branches_apart():
    """Behind output_true (:1) of its Switches, the true branch; behind output_false (:0), the
    false one; the predicate and the Merge that joins them belong to neither."""
    graph, *_ = control_flow_graph()
    dot = render.graph_to_dot(graph, expanded=["cond"])
    true, false = cluster_nodes(dot, "cond: true branch"), cluster_nodes(dot, "cond: false branch")
    assert {"cond/Switch", "cond/Mul", "cond/Add", "cond/pivot_t", "cond/Const"} <= set(true)
    assert {"cond/Switch_1", "cond/Square", "cond/Sub", "cond/pivot_f", "cond/Const_2"} <= set(false)
    assert not {"cond/Merge", "cond/pred_id"} & {*true, *false}
    assert '"cond/Merge" [' in dot and 'class="nbdist-true-branch"' in dot


def test_nested_conds_nest_their_branches():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [], name="x")
        inner = lambda: tf.cond(x > 1.0, lambda: x * 3.0, lambda: x - 1.0)  # noqa: E731
        tf.cond(x > 0.0, inner, lambda: tf.negative(x))
    dot = render.graph_to_dot(graph, collapse=False)
    outer_true = cluster_nodes(dot, "cond: true branch")
    assert {"cond/cond/Mul", "cond/cond/Sub", "cond/cond/Merge"} <= set(outer_true)
    assert "cond/cond/Mul" in cluster_nodes(dot, "cond/cond: true branch")
    assert "cond/cond/Sub" in cluster_nodes(dot, "cond/cond: false branch")


def test_a_loop_is_one_op_labelled_as_a_loop_and_its_body_is_not_a_node_of_the_graph():
    graph, *_ = control_flow_graph()
    dot = render.graph_to_dot(graph, collapse=False)
    line = next(line for line in dot.splitlines() if line.strip().startswith('"while/while" ['))
    assert 'label="while/while\\ntf.while_loop: body 5 ops"' in line and 'class="nbdist-loop"' in line
    assert "body of while/while" not in dot and "while/while:body:" not in dot
    model = gm.graph_model(graph)  # placement and partitions see the one op
    assert not any(n.name.startswith(("body/", "captured/")) for n in model.nodes)
    assert [n.name for n in model.nodes if n.name.startswith("while/")] == ["while/while"]


def test_a_traced_step_gives_each_loop_its_iteration_count():
    graph, x, p, out = control_flow_graph()
    meta = tf.RunMetadata()
    with tf.Session(graph=graph) as sess:
        sess.run(out, {x: 2.0, p: True}, options=TRACE, run_metadata=meta)
    assert gm.graph_model(graph, trace=meta).iterations == {"while/while": 5}
    dot = render.graph_to_dot(graph, trace=meta)
    assert 'label="while/while\\ntf.while_loop: body 5 ops\\n5 iterations in this step"' in dot


def test_an_expanded_loop_draws_its_condition_and_body_in_boxes_tied_to_it():
    graph, x, p, out = control_flow_graph()
    meta = tf.RunMetadata()
    with tf.Session(graph=graph) as sess:
        sess.run(out, {x: 2.0, p: False}, options=TRACE, run_metadata=meta)
    dot = render.graph_to_dot(graph, expanded=["while/while"], trace=meta)
    body = cluster_nodes(dot, "body of while/while (ran 5 times in this step)")
    assert {
        f"while/while:body:{n}" for n in ("body/loop_var_1", "while/Mul", "while/Add_1", "captured/x")
    } <= set(body)
    assert "while/while:condition:while/Less" in cluster_nodes(dot, "condition of while/while")
    assert 'label="Add_1\\nAdd\\n→ output 1"' in dot  # what the body gives back
    assert '"while/while:body:while/Mul" -> "while/while:body:while/Add_1"' in dot
    assert "graph [compound=true];" in dot and re.search(
        r'"while/while" -> "while/while:body:[^"]+" \[lhead=', dot
    )


def test_expanding_a_loop_opens_the_scopes_it_is_in_and_scopes_count_their_loops():
    graph = tf.Graph()
    with graph.as_default():
        m = tf.map_fn(lambda v: v * 2.0, tf.constant([1.0, 2.0, 3.0]))
        tf.gradients(tf.reduce_sum(m), m)
    assert "map/\\n7 ops · 1 loop" in render.graph_to_dot(graph)
    dot = render.graph_to_dot(graph, expanded=["map/while/while"])
    assert "map/while/while:body:map/while/Mul" in cluster_nodes(dot, "body of map/while/while")


def test_a_loop_gradient_is_a_loop_too():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [], name="x")
        _, acc = tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * x), [0, 1.0])
        tf.gradients(acc, x)
    dot = render.graph_to_dot(graph, expanded=["gradients"])
    assert "gradients/\\n" not in dot
    assert re.search(r'label="…/while_grad/WhileGrad\\ngradient of loop while: body \d+ ops"', dot)
    grad = "gradients/while/while_grad/WhileGrad"
    assert cluster_nodes(render.graph_to_dot(graph, expanded=[grad]), f"gradient body of {grad}")


def test_the_placed_view_counts_a_loops_iterations_on_its_task():
    cluster = {"ps": [f"localhost:{free_port()}"], "worker": [f"localhost:{free_port()}"]}
    servers = [Server(cluster, job_name=job, task_index=0) for job in cluster]
    try:
        graph = tf.Graph()
        with graph.as_default():
            with tf.device("/job:ps/task:0"):
                x = tf.placeholder(tf.float32, [], name="x")
                _, acc = tf.while_loop(lambda i, a: i < 4, lambda i, a: (i + 1, a + x), [0, 0.0])
            with tf.device("/job:worker/task:0"):
                out = tf.identity(acc, name="out")
        meta = tf.RunMetadata()
        with tf.Session(servers[-1].target, graph=graph) as sess:
            sess.run(out, {x: 1.0}, options=TRACE, run_metadata=meta)
    finally:
        for server in servers:
            server.stop()
    dot = render.graph_to_dot(meta, expanded=["while/while"])
    assert "tf.while_loop: body 3 ops\\n4 iterations in this step" in dot
    assert "while/while:body:while/Add_1" in cluster_nodes(
        dot, "body of while/while (ran 4 times in this step)"
    )
