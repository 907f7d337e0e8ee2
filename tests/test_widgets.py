"""The widgets' state, headless (no browser): what each composite shows and how it updates."""

import itertools
import os
import threading
import time

import pytest

import nbdist as tf
from nbdist.notebook import widgets
from nbdist.notebook.event_stream import EventStream
from traced_steps import CROSSINGS, build_model, traced_steps

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module")
def traced():
    with traced_steps(ps_tasks=2) as model:
        yield model


def metric(task, step, loss, t=None, **extra):
    return {
        "kind": "metric",
        "task": task,
        "step": step,
        "time": t or time.time(),
        "metrics": {"loss": loss, **extra},
    }


# -- graph view ----------------------------------------------------------------------------------------
def test_show_graph_is_lazily_available_from_the_facade(traced):
    view = tf.show_graph(traced.md)
    assert isinstance(view, widgets.GraphView)
    assert "nbdist-graph" in view.graph._dom_classes


def test_graph_view_of_a_traced_step_shows_the_partition(traced):
    view = widgets.show_graph(traced.md, collapse=False)
    assert f"{CROSSINGS} _Send/_Recv pairs" in view.header.value
    assert "<svg" in view.graph.value and view.dot_source.count('class="nbdist-transfer"') == CROSSINGS


def test_graph_view_controls_collapse_and_expand(traced):
    view = widgets.show_graph(traced.graph, collapse=False)
    assert "model/MatMul" in view.dot_source
    view.collapse.value = True
    assert "model@/job:worker/task:0" in view.dot_source and "name scopes collapsed" in view.header.value
    view.expand.value = ("model",)
    assert "model/MatMul" in view.dot_source and "gradients@/job:worker/task:0" in view.dot_source


def test_graph_view_offers_each_loop_to_expand():
    graph = tf.Graph()
    with graph.as_default():
        tf.while_loop(lambda i: i < 3, lambda i: i + 1, [tf.constant(0)])
    view = widgets.show_graph(graph)
    assert ("while/while (loop body: 2 ops)", "while/while") in view.expand.options
    view.expand.value = ("while/while",)
    assert "body of while/while" in view.dot_source


def test_graph_view_fetch_control_and_its_errors(traced):
    view = widgets.show_graph(traced.graph, collapse=False)
    view.fetch.value = "model/Mean"
    assert (
        "GradientDescent" not in view.dot_source and "only what <code>model/Mean</code>" in view.header.value
    )
    before = view.graph.value
    view.fetch.value = "model/Meen"
    assert "did you mean" in view.header.value and view.graph.value == before


def test_graph_and_placement_summaries_name_no_task_without_a_device():
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:ps/task:0"):
            w = tf.Variable(tf.zeros([2]), name="w")
        tf.global_variables_initializer()  # `init` has no device: it is not a task named ''
    text = repr(widgets.show_graph(g))
    assert "''" not in text and "1 with no device requested, tasks ['/job:ps/task:0']" in text
    assert "''" not in repr(widgets.show_placement(g)) and w.device == "/job:ps/task:0"


def test_graph_view_of_a_tensor_shows_what_it_needs(traced):
    view = widgets.show_graph(traced.loss)
    assert view.fetch.value == "model/Mean" and "GradientDescent" not in view.dot_source


def test_graph_view_without_dot_shows_install_hints_and_the_source(traced, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    view = widgets.show_graph(traced.md)
    assert "apt-get install graphviz" in view.graph.value and "digraph nbdist" in view.graph.value
    bundle = view._repr_mimebundle_()
    assert "image/svg+xml" not in bundle and "apt-get install graphviz" in bundle["text/html"]


def test_graph_view_bundle_carries_a_static_svg(traced):
    bundle = widgets.show_graph(traced.md)._repr_mimebundle_()
    assert bundle["image/svg+xml"].startswith("<svg") and WIDGET_VIEW in bundle
    assert bundle["text/plain"].startswith("<nbdist GraphView: placed")


def test_static_view_when_ipywidgets_is_missing(traced, monkeypatch):
    from nbdist.notebook.widgets import graph_view

    monkeypatch.setattr(graph_view, "_w", None)
    view = graph_view.show_graph(traced.md)
    assert isinstance(view, widgets.StaticView) and view._repr_mimebundle_()["image/svg+xml"].startswith(
        "<svg"
    )


# -- placement and timeline --------------------------------------------------------------------------------
def test_placement_view_table_and_chart(traced):
    view = tf.show_placement(traced.md)
    assert "<code>w</code> float32[3,2] · 24 B" in view.table.value
    assert (
        bytes(view.chart.value).startswith(b"\x89PNG") and "nbdist-placement-chart" in view.chart._dom_classes
    )
    assert "bytes measured" in view.header.value
    assert view._repr_mimebundle_()["image/png"]


def test_timeline_view_zooms_with_its_slider(traced):
    view = tf.show_timeline(traced.first)
    full = view.timeline.value
    assert "RunStep" in full and full.count('class="nbdist-flow"') == CROSSINGS
    view.window.value = (0.0, view.window.max / 4)
    assert view.timeline.value != full
    assert view._repr_mimebundle_()["image/svg+xml"] == view.svg


# -- dashboard ---------------------------------------------------------------------------------------
def test_dashboard_draws_loss_per_replica():
    dash = tf.Dashboard(subscribe=False, title="run")
    for step in range(6):
        for w in range(2):
            dash.update(metric(f"/job:worker/task:{w}", 2 * step + w, 1.0 / (step + 1)))
    dash.stop()
    assert dash.history.summary()["global_step"] == 11 and "(stopped)" in dash.status.value
    assert bytes(dash.image.value).startswith(b"\x89PNG") and "nbdist-loss" in dash.image._dom_classes
    assert dash.table.value.count("/job:worker/task:") == 2
    redraws = dash.redraws
    dash.stop()  # again (and close(), and the widget's finalizer at exit): nothing more to draw
    dash.close()
    assert dash.redraws == redraws


def test_dashboard_redraws_at_most_five_times_a_second_while_events_pour_in():
    dash = widgets.Dashboard(subscribe=False, max_redraws_per_s=5)
    start, redraws0 = time.monotonic(), dash.redraws

    def feed(w):
        for step in range(150):
            dash.update(metric(f"/job:worker/task:{w}", step, 1.0))
            time.sleep(0.01)

    threads = [threading.Thread(target=feed, args=(w,)) for w in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    deadline = time.monotonic() + 10.0  # the events are drawn (once the budget's pause is over)
    while dash.redraws == redraws0 and time.monotonic() < deadline:
        time.sleep(0.05)
    elapsed = time.monotonic() - start
    dash.stop()
    drawn = dash.redraws - redraws0 - 1  # minus the final picture of stop()
    assert 1 <= drawn <= 5 * elapsed + 2, (drawn, elapsed)  # (and far fewer: a 20th of a core)
    assert dash.history.count == 300


def test_dashboard_numbers_stay_live_between_pictures():
    """The headline and the table are refreshed from the history in place, without a picture
    (`refresh_text`, called between budgeted pictures every `TEXT_EVERY_S`)."""
    dash = widgets.Dashboard(subscribe=False)
    try:
        for step in range(3):
            dash.history.add(metric("/job:worker/task:0", step, 0.5))  # recorded, no picture asked
        redraws = dash.redraws
        dash.refresh_text()
        assert dash.redraws == redraws
        assert "global step 2 · 1 replica · 3 reports" in dash.status.value and "(live)" in dash.status.value
        assert "/job:worker/task:0" in dash.table.value and "0.5" in dash.table.value
    finally:
        dash.stop()


def test_update_returns_at_once_even_while_a_picture_is_drawn():
    dash = widgets.Dashboard(subscribe=False)
    started = time.monotonic()
    for step in range(200):
        dash.update(metric("/job:worker/task:0", step, 1.0))
    assert time.monotonic() - started < 0.2
    dash.stop()


def test_dashboard_subscribes_and_replays_the_stream_history():
    stream = EventStream()
    stream.publish(metric("/job:worker/task:0", 1, 0.9))
    dash = widgets.Dashboard(stream)
    stream.publish(metric("/job:worker/task:1", 2, 0.8))
    stream.publish({"kind": "heartbeat", "task": "/job:worker/task:1", "time": time.time()})
    dash.stop()
    assert dash.history.count == 2
    stream.publish(metric("/job:worker/task:1", 3, 0.7))  # after stop: no longer listening
    assert dash.history.count == 2


def test_a_dashboard_without_replay_shows_only_what_is_reported_from_now_on():
    stream = EventStream()
    stream.publish(metric("/job:worker/task:0", 1, 0.9))  # an earlier experiment
    late = {**metric("/job:worker/task:0", 2, 0.8), "time": time.time() - 1.0}
    dash = widgets.Dashboard(stream, replay=False)
    stream.publish(late)  # reported before the dashboard existed, arriving after
    stream.publish(metric("/job:worker/task:1", 1, 0.5))
    dash.stop()
    assert dash.history.count == 1
    assert list(dash.history.summary()["tasks"]) == ["/job:worker/task:1"]


def test_a_dashboard_reads_a_batch_in_columns_from_its_stream_and_without_replay_only_its_later_rows():
    from nbdist.in_task.metric_batch import MetricBatch

    stream = EventStream()
    dash = widgets.Dashboard(stream, replay=False)
    now = time.time()
    stream.publish_metrics(
        MetricBatch("/job:worker/task:0", ["loss"], [1, 2, 3], [now - 1, now + 1, now + 2], [[0.9, 0.8, 0.7]])
    )
    dash.stop()
    assert dash.history.count == 2
    assert dash.history.summary()["tasks"]["/job:worker/task:0"]["loss"] == 0.7


def test_dashboard_defaults_to_the_current_event_stream():
    dash = widgets.Dashboard()
    tf.report(step=4, loss=0.25)
    dash.stop()
    assert dash.history.summary()["tasks"]["notebook"]["loss"] == 0.25


def test_dashboard_refuses_a_source_it_cannot_subscribe_to():
    with pytest.raises(TypeError, match="must have subscribe"):
        widgets.Dashboard(source=[1, 2])


def test_dashboard_bundle_has_the_picture_as_a_static_png():
    dash = widgets.Dashboard(subscribe=False)
    dash.update(metric("/job:worker/task:0", 1, 0.5))
    dash.stop()
    bundle = dash._repr_mimebundle_()
    assert WIDGET_VIEW in bundle and bundle["image/png"]


def test_build_model_helper_graph_has_requested_devices():
    model = build_model()
    assert model.w.op.device == "/job:ps/task:0" and model.loss.op.device == "/job:worker/task:0"


def busy(cpu_s):
    """Burns `cpu_s` of this thread's CPU time (a picture being drawn)."""
    began = time.thread_time()
    while time.thread_time() - began < cpu_s:
        pass


def request_for(redrawer, seconds):
    """Requests a picture every 10 ms for `seconds` (events arriving)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        redrawer.request()
        time.sleep(0.01)


def test_a_slow_picture_is_drawn_less_often_so_watching_leaves_training_its_cores():
    """A draw that takes 0.2 s of CPU is followed by a pause of 10x that (a tenth of a core at
    most goes to drawing), however fast requests come: after the first two, one draw in 2 s,
    not 10. It draws on a batch thread (`nbdist.runtime.sched`)."""
    from nbdist.notebook.widgets.throttle import Redrawer

    draws, policies = [], []
    redrawer = Redrawer(
        lambda: (draws.append(time.monotonic()), policies.append(os.sched_getscheduler(0)), busy(0.2)),
        max_per_s=5,
    )
    request_for(redrawer, 2.5)
    redrawer.close()
    assert 2 <= len(draws) <= 3, draws  # the first draw (the warm-up) is not charged: see below
    assert all(b - a >= 1.9 for a, b in itertools.pairwise(draws[1:])), draws
    assert set(policies) == {os.SCHED_BATCH}  # a picture waits for a CPU: it never preempts training


def test_the_first_picture_pays_the_warm_up_and_is_not_charged_to_the_budget():
    """matplotlib's first picture costs ~0.5 s of CPU, the next ones 15-20 ms: at 1% of a core
    the first would hold the second back 50 s. It is not charged: the second follows at
    `max_per_s`, and the budget applies from it on (5 ms of CPU: 0.5 s at 1%)."""
    from nbdist.notebook.widgets.throttle import Redrawer

    draws = []
    redrawer = Redrawer(
        lambda: (draws.append(time.monotonic()), busy(0.5 if len(draws) == 1 else 0.005)),
        max_per_s=5,
        busy_fraction=0.01,
    )
    request_for(redrawer, 1.6)
    redrawer.close()
    assert 3 <= len(draws) <= 4, draws
    assert draws[1] - draws[0] < 0.5 + 0.2 + 0.3, draws  # its CPU, the 0.2 s floor, and slack
    assert all(b - a >= 0.45 for a, b in itertools.pairwise(draws[1:])), draws


def test_while_requests_come_a_picture_comes_at_least_every_max_interval_and_is_charged():
    """A 50 ms picture at 1% of a core is paid for by 5 s without drawing; with
    ``max_interval_s`` a picture comes at least that often anyway, drawn by `overdue` (the
    dashboard's keeps the last layout) and charged: the debt grows by 5 s a picture, and
    pictures within the budget come only once it is paid."""
    from nbdist.notebook.widgets.throttle import Redrawer

    draws, overdue = [], []
    redrawer = Redrawer(
        lambda: (draws.append(time.monotonic()), busy(0.05)),
        max_per_s=5,
        busy_fraction=0.01,
        max_interval_s=0.3,
        overdue=lambda: (overdue.append(time.monotonic()), busy(0.05)),
    )
    request_for(redrawer, 1.3)
    redrawer.close()
    assert len(draws) == 2, draws  # the first (not charged) and the second (within the budget)
    pictures = sorted(draws + overdue)
    assert len(overdue) >= 2 and all(b - a <= 0.3 + 0.3 for a, b in itertools.pairwise(pictures)), pictures
    assert redrawer.overdue_draws == len(overdue)
    assert redrawer.debt_s >= 5.0 * (len(overdue) + 1) - 2.5, redrawer.debt_s  # every draw but the first


def test_while_a_costly_picture_pauses_the_next_what_is_cheap_stays_live():
    """A draw of 0.1 s at a budget of 1% pauses pictures for 10 s (after the first two: the
    first is not charged); meanwhile `between` (the dashboard's headline and table) is called
    every ``between_every_s`` while requests come, and not when none came."""
    from nbdist.notebook.widgets.throttle import Redrawer

    draws, betweens = [], []
    redrawer = Redrawer(
        lambda: (draws.append(time.monotonic()), busy(0.1)),
        max_per_s=5,
        busy_fraction=0.01,
        between=lambda: betweens.append(time.monotonic()),
        between_every_s=0.3,
    )
    request_for(redrawer, 2.0)
    quiet = len(betweens)
    time.sleep(1.0)  # no requests: nothing to refresh
    redrawer.close()
    assert len(draws) == 2, draws
    assert 3 <= quiet <= 8, betweens
    assert len(betweens) <= quiet + 1, betweens
    assert all(b - a >= 0.29 for a, b in itertools.pairwise(betweens)), betweens


def test_a_dashboard_at_a_tight_budget_shows_the_first_metrics_at_once_then_a_picture_every_interval():
    """The dashboard's own pictures (matplotlib, real costs), at 1% of a core busy or idle: the
    first after the first metric event comes at once, then one at least every
    ``picture_every_s`` while events come (those before the budget allows keep the last layout)."""
    dash = widgets.Dashboard(subscribe=False, busy_fraction=0.01, idle_fraction=0.01, picture_every_s=0.5)
    pictures = []
    dash.image.observe(lambda change: pictures.append(time.monotonic()), names="value")
    try:
        first_event = time.monotonic()
        for step in range(50):  # 2.5 s of reports
            dash.update(metric(f"/job:worker/task:{step % 3}", step, 1.0 / (step + 1)))
            time.sleep(0.05)
        last_event = time.monotonic()
    finally:
        dash.stop()
    live = [t for t in pictures if t <= last_event + 0.5]  # (the last is stop()'s final picture)
    assert live and live[0] - first_event < 2.0, (live, first_event)
    gaps = [b - a for a, b in itertools.pairwise([*live, last_event])]
    assert max(gaps) < 0.5 + 1.0, gaps  # the interval, and the time a picture takes to draw
    assert dash._redrawer.overdue_draws >= 1


def test_pictures_take_a_larger_share_only_while_the_machine_has_a_core_idle(monkeypatch):
    """The budget is what training can spare: `idle_fraction` while a whole core was idle
    since the last picture (``/proc/stat``), `busy_fraction` while the cores are busy."""
    from nbdist.notebook.widgets import throttle

    assert throttle.idle_cores((100, 200, 2), (150, 300, 2)) == 1.0  # half of 2 cores idle
    assert throttle.idle_cores((100, 200, 2), None) is None
    samples = iter([(0, 0, 2), (60, 100, 2), (70, 200, 2)])  # 1.2 cores idle, then 0.2
    monkeypatch.setattr(throttle, "cpu_times", lambda: next(samples))
    redrawer = throttle.Redrawer(lambda: None, max_per_s=5, busy_fraction=0.025, idle_fraction=0.25)
    assert redrawer._fraction() == 0.25
    assert redrawer._fraction() == 0.025
    assert throttle.Redrawer(lambda: None, max_per_s=5, busy_fraction=0.1)._fraction() == 0.1


def test_cpu_times_of_this_linux_machine():
    from nbdist.notebook.widgets import throttle

    idle, total, cores = throttle.cpu_times()
    assert 0 <= idle <= total and cores >= 1
