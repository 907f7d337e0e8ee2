"""`placement_chart`, `metrics_history`, `dashboard_plot`, `png_writer`: placement per task and
training metrics, as data and Figures."""

import io

import numpy as np
import pytest
from PIL import Image

from nbdist.notebook import dashboard_plot, metrics_history, placement_chart, png_writer
from traced_steps import build_model, traced_steps


@pytest.fixture(scope="module")
def traced():
    with traced_steps(ps_tasks=2) as model:
        yield model


def rows_by_task(rows):
    return {r["task"]: r for r in rows}


# -- placement ---------------------------------------------------------------------------------------
def test_placement_says_which_task_holds_which_variables(traced):
    rows = rows_by_task(placement_chart.placement_summary(traced.md))
    assert rows["/job:ps/task:0"]["variables"] == [("w", "float32[3,2]", 24)]
    assert rows["/job:ps/task:1"]["variables"] == [("b", "float32[2]", 8)]
    assert rows["/job:worker/task:0"]["variables"] == []
    assert rows["/job:worker/task:0"]["op_types"]["MatMul"] == 2


def test_bytes_on_the_wire_are_measured_per_task(traced):
    rows = rows_by_task(placement_chart.placement_summary(traced.md))
    assert (rows["/job:ps/task:0"]["sent_bytes"], rows["/job:ps/task:0"]["recv_bytes"]) == (24, 24)
    assert (rows["/job:worker/task:0"]["sent_bytes"], rows["/job:worker/task:0"]["recv_bytes"]) == (32, 32)
    assert rows["/job:worker/task:0"]["recvs"] == 4 and all(r["measured"] for r in rows.values())


def test_requested_devices_give_an_estimate_of_the_same_bytes(traced):
    requested = rows_by_task(placement_chart.placement_summary(traced.graph))
    placed = rows_by_task(placement_chart.placement_summary(traced.md))
    for task in placed:
        assert requested[task]["sent_bytes"] == placed[task]["sent_bytes"]
        assert not requested[task]["measured"]


def test_placement_table_and_chart(traced):
    rows = placement_chart.placement_summary(traced.md)
    table = placement_chart.placement_html(rows)
    assert table.count("<tr>") == 1 + len(rows) and "<code>w</code> float32[3,2] · 24 B" in table
    fig = placement_chart.placement_figure(rows)
    assert [ax.get_title() for ax in fig.axes] == ["parameters held (bytes)", "bytes per step over the wire"]
    assert png_writer.figure_png(fig).startswith(b"\x89PNG")


def test_placement_of_a_graph_without_devices_has_one_unplaced_row():
    model = build_model()
    rows = rows_by_task(placement_chart.placement_summary(model.graph))
    assert rows[""]["op_types"] == {"NoOp": 1}  # tf.global_variables_initializer() requested no device


# -- metrics ------------------------------------------------------------------------------------------
def metric(task, step, t, **metrics):
    return {"kind": "metric", "task": task, "step": step, "time": t, "metrics": metrics}


def test_history_keeps_metric_events_per_task_and_ignores_others():
    history = metrics_history.MetricsHistory()
    assert history.add(metric("/job:worker/task:0", 1, 100.0, loss=1.0))
    assert not history.add({"kind": "heartbeat", "task": "/job:worker/task:0", "time": 100.0})
    assert not history.add("not an event")
    assert history.snapshot() == {"/job:worker/task:0": [(0.0, 1, {"loss": 1.0, "local_step": 1})]}


def test_a_long_run_is_kept_whole_more_coarsely_further_back_with_exact_counts():
    history = metrics_history.MetricsHistory(max_points=100, rate_window_s=1.0)
    for i in range(1000):  # 10 s at 100 reports a second, one gradient in 10 dropped
        history.add(metric("/job:worker/task:0", i, 100.0 + i / 100, loss=1.0, dropped=float(i % 10 == 0)))
    events = history.snapshot()["/job:worker/task:0"]
    assert len(events) < 100
    assert events[0][:2] == (0.0, 0) and events[-1][1] == 999  # the first and the latest
    assert sum(m["dropped"] for _, _, m in events) == 100  # dropped gradients all counted
    summary = history.summary()["tasks"]["/job:worker/task:0"]
    assert summary["reports"] == 1000 and history.count == 1000
    assert summary["steps_per_s"] == pytest.approx(100.0, rel=0.02)


def test_steps_per_second_count_reports_in_the_window():
    history = metrics_history.MetricsHistory(rate_window_s=1.0)
    for i in range(11):
        history.add(metric("/job:worker/task:0", i, 100.0 + 0.1 * i, loss=1.0))
    summary = history.summary()
    assert summary["tasks"]["/job:worker/task:0"]["steps_per_s"] == pytest.approx(10.0)


def test_global_step_is_the_highest_step_seen_over_all_replicas():
    history = metrics_history.MetricsHistory()
    history.add(metric("/job:worker/task:0", 5, 100.0, loss=1.0))
    history.add(metric("/job:worker/task:1", 3, 100.5, loss=1.0))
    history.add(metric("/job:worker/task:1", 7, 101.0, loss=1.0, global_step=9))
    assert history.global_steps(history.snapshot()) == [(0.0, 5), (1.0, 9)]
    assert history.summary()["global_step"] == 9


@pytest.mark.parametrize(
    ("extra", "titles"),
    [
        ({}, ["loss per replica", "steps/s per worker"]),
        (
            {"staleness": 2},
            ["loss per replica", "steps/s per worker", "staleness of applied gradients (async)"],
        ),
        (
            {"dropped": 1},
            ["loss per replica", "steps/s per worker", "dropped stale gradients (sync, cumulative)"],
        ),
    ],
)
def test_dashboard_figure_shows_staleness_or_dropped_only_when_reported(extra, titles):
    history = metrics_history.MetricsHistory()
    for i in range(5):
        for w in range(2):
            history.add(metric(f"/job:worker/task:{w}", 2 * i + w, 100.0 + i, loss=1.0 / (i + 1), **extra))
    fig = dashboard_plot.dashboard_figure(history, title="run")
    assert [ax.get_title() for ax in fig.axes if ax.get_title()] == titles
    loss_ax = fig.axes[0]
    assert [line.get_label() for line in loss_ax.get_lines()] == ["/job:worker/task:0", "/job:worker/task:1"]


def _pixels_of(png, color):
    """How many pixels of `png` have the colour `color` ("#rrggbb")."""
    import io

    import numpy as np
    from matplotlib.colors import to_rgb
    from matplotlib.image import imread

    rgb = imread(io.BytesIO(png), format="png")[..., :3]
    return int(np.all(np.abs(rgb - np.array(to_rgb(color))) < 0.02, axis=-1).sum())


def test_a_live_picture_redraws_only_the_lines_while_the_data_fit_its_limits():
    history, plot = metrics_history.MetricsHistory(), dashboard_plot.DashboardPlot()
    for i in range(50):
        history.add(metric("/job:worker/task:0", i, 100.0 + i, loss=2.0 - i / 100, staleness=i % 3))
    first = plot.png(history, "live", final=False)
    assert plot.full_draws == 1
    for i in range(50, 55):  # a little more time and lower loss: within the room the limits left
        history.add(metric("/job:worker/task:0", i, 100.0 + i, loss=2.0 - i / 100, staleness=i % 3))
    again = plot.png(history, "live", final=False)
    assert (plot.pictures, plot.full_draws) == (2, 1)
    blue = dashboard_plot.line_colors(["/job:worker/task:0"])["/job:worker/task:0"]
    assert _pixels_of(again, blue) > _pixels_of(first, blue) > 0  # the lines are drawn over, and longer


def test_a_live_picture_is_drawn_whole_when_the_data_leave_its_limits_and_a_final_one_always():
    history, plot = metrics_history.MetricsHistory(), dashboard_plot.DashboardPlot()
    for i in range(50):
        history.add(metric("/job:worker/task:0", i, 100.0 + i, loss=1.0))
    plot.png(history, final=False)
    history.add(metric("/job:worker/task:0", 50, 400.0, loss=9.0))  # far beyond both limits
    plot.png(history, final=False)
    assert plot.full_draws == 2
    plot.png(history, final=True)
    assert plot.full_draws == 3
    fig = plot.figure(history)  # a kept picture has matplotlib's own limits
    fresh = dashboard_plot.dashboard_figure(history)
    assert fig.axes[0].get_xlim() == pytest.approx(fresh.axes[0].get_xlim())
    assert fig.axes[0].get_ylim() == pytest.approx(fresh.axes[0].get_ylim())


@pytest.mark.parametrize(
    ("current", "data", "wanted", "expected"),
    [
        ((0.0, 15.0), (0.0, 9.0), (-0.5, 9.5), (0.0, 15.0)),  # the data fit: kept
        ((0.0, 15.0), (0.0, 16.0), (-0.8, 16.8), (-0.8, 25.6)),  # beyond: matplotlib's, half again
        ((0.0, 100.0), (0.0, 9.0), (-0.5, 9.5), (-0.5, 14.5)),  # ten times too wide: tightened
    ],
)
def test_live_limits_keep_still_while_the_data_fit_and_grow_with_room(current, data, wanted, expected):
    assert dashboard_plot._steady(current, data, wanted, below=0.0, above=0.5) == pytest.approx(expected)


def test_live_limits_on_a_log_axis_grow_in_decades():
    lo, hi = dashboard_plot._steady((1.0, 10.0), (0.01, 5.0), (0.01, 10.0), below=0.25, above=0.25, log=True)
    assert (lo, hi) == pytest.approx((10**-2.75, 10**1.75))


def test_replicas_get_distinct_line_colours():
    colors = dashboard_plot.line_colors([f"/job:worker/task:{i}" for i in range(5)])
    assert len(set(colors.values())) == 5


def test_the_fast_png_encoder_keeps_every_pixel():
    """`rgb_png` (a live dashboard picture's encoder) writes a PNG that decodes to the image's
    RGB pixels exactly; alpha is dropped (the pictures are opaque)."""
    rgba = np.random.RandomState(0).randint(0, 256, size=(7, 13, 4)).astype(np.uint8)
    image = Image.open(io.BytesIO(png_writer.rgb_png(rgba)))
    image.load()
    assert (image.mode, image.size) == ("RGB", (13, 7))
    assert np.array_equal(np.asarray(image), rgba[:, :, :3])


def test_a_batch_in_columns_is_recorded_as_its_events_one_by_one():
    """The dashboard reads a task's reports a batch at a time (`MetricBatch`), skipping the
    rows it would forget at once: what it keeps, counts and shows must be what adding the
    events one by one gives, across thinning, dropped counts and the global step."""
    import random

    from nbdist.in_task.metric_batch import MetricBatch

    rng = random.Random(7)
    one_by_one = metrics_history.MetricsHistory(max_points=50, rate_window_s=1.0)
    in_batches = metrics_history.MetricsHistory(max_points=50, rate_window_s=1.0)
    step = {0: 0, 1: 0}
    for _ in range(120):
        w = rng.randrange(2)
        task = f"/job:worker/task:{w}"
        events = []
        for _ in range(rng.randrange(1, 12)):
            step[w] += 1
            t = 100.0 + step[w] / 50 + w / 1000
            events.append(metric(task, step[w], t, loss=1.0 / step[w], dropped=float(step[w] % 7 == 0)))
        for event in events:
            one_by_one.add(event)
        names = ["loss", "dropped"]
        in_batches.add_batch(
            MetricBatch(
                task,
                names,
                [e["step"] for e in events],
                [e["time"] for e in events],
                [[e["metrics"][n] for e in events] for n in names],
            )
        )
    assert in_batches.snapshot() == one_by_one.snapshot()
    assert in_batches.summary() == one_by_one.summary()
    assert (in_batches.count, in_batches.names) == (one_by_one.count, one_by_one.names)
    kept = in_batches.snapshot()["/job:worker/task:0"]
    assert len(kept) < 50 and sum(m["dropped"] for _, _, m in kept) == step[0] // 7


def test_a_picture_that_keeps_its_layout_lays_out_again_only_when_a_tick_label_got_longer(monkeypatch):
    """``relayout=False`` (the dashboard's overdue pictures): limits that moved are drawn
    whole, but laid out afresh only when a tick label got longer (one that stuck out would
    overlap the next panel), not when one got shorter."""
    lengths = iter([(3, 4), (3, 3), (3, 5)])  # each axis's longest tick label: laid out, shorter, longer
    monkeypatch.setattr(dashboard_plot, "_tick_label_lengths", lambda fig: next(lengths))
    history, plot = metrics_history.MetricsHistory(), dashboard_plot.DashboardPlot()
    for i in range(20):
        history.add(metric("/job:worker/task:0", i, 100.0 + i, loss=0.5))
    plot.png(history, final=False)
    for i, t in enumerate([160.0, 5100.0]):  # time beyond its limits, twice
        history.add(metric("/job:worker/task:0", 20 + i, t, loss=0.5))
        plot.png(history, final=False, relayout=False)
        assert (plot.full_draws, plot.layouts) == (2 + i, 1 + i)


def test_the_cumulative_dropped_count_gets_room_to_grow_like_the_global_step():
    history, plot = metrics_history.MetricsHistory(), dashboard_plot.DashboardPlot()
    for i in range(40):
        history.add(metric("/job:worker/task:0", i, 100.0 + i, loss=0.5, dropped=1))
    plot.png(history, final=False)
    dropped_ax = plot.fig.axes[2]
    assert dropped_ax.get_title().startswith("dropped")
    assert dropped_ax.get_ylim()[1] >= 2 * 40  # as much room again (a quarter more moved it every picture)
