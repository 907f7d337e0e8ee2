"""The playground, headless: its settings, its pictures and its widget state after real runs.

Real `LocalCluster`s of server processes on 127.0.0.1, trained through the same code as
``nbdist demo`` (`nbdist.notebook.replicated_training`). Every run's processes are checked
gone by PID; the browser check in Voila is test_browser_playground.py.
"""

import time

import psutil
import pytest

import nbdist as tf
from nbdist.notebook import run_charts
from nbdist.notebook.metrics_history import MetricsHistory
from nbdist.notebook.replicated_training import Settings, what_to_notice
from nbdist.notebook.widgets import playground
from procs import alive, wait_gone

STRAGGLER = "/job:worker/task:2"


def server_children():
    """PIDs of this process's `nbdist.server` children (the playground's cluster tasks)."""
    return [
        c.pid
        for c in psutil.Process().children(recursive=True)
        if "nbdist.server" in " ".join(c.cmdline()[:3])
    ]


def history_of(events):
    history = MetricsHistory()
    for task, step, t, metrics in events:
        history.add({"kind": "metric", "task": task, "step": step, "time": t, "metrics": metrics})
    return history


def sync_history(t0=1000.0, dt=0.1, steps=10):
    """Two fast workers whose gradients are sometimes dropped; the straggler never reports."""
    events = []
    for k in range(steps):
        for i in range(2):
            metrics = {"loss": 1.0 / (k + 1), "local_step": k + 1, "dropped": int(k % 3 == i)}
            events.append((f"/job:worker/task:{i}", k, t0 + k * dt, metrics))
    return history_of(events)


def async_history(t0=2000.0, dt=0.05, steps=20):
    events = [
        (f"/job:worker/task:{k % 3}", k, t0 + k * dt, {"loss": 1.0 / (k + 1), "staleness": k % 3 * 2})
        for k in range(steps)
    ]
    return history_of(events)


# -- settings --------------------------------------------------------------------------------------------
def test_settings_describe_the_cluster_and_the_straggler():
    s = Settings(mode="sync", workers=3, backup_workers=1, straggler_ms=200)
    assert s.describe() == "sync · 1 ps · 3 workers (1 backup) · straggler worker:2 +200 ms"
    assert s.straggler == STRAGGLER and s.aggregated == 2
    assert Settings(mode="async", backup_workers=1).aggregated == 2  # backups count in sync only
    assert Settings().straggler is None


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"mode": "ring"}, r"mode must be one of in-graph, async, sync; got 'ring'"),
        ({"workers": 0}, r"workers must be a positive integer, got 0"),
        ({"straggler_ms": -5}, r"straggler_ms must be 0 \(no straggler\) or more, got -5"),
        (
            {"mode": "sync", "workers": 2, "backup_workers": 2},
            r"backup_workers=2: must be 0 or more and fewer than workers=2",
        ),
    ],
)
def test_settings_refuse_what_cannot_train(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Settings(**kwargs)


# -- the pictures (pure) ------------------------------------------------------------------------------
def test_run_summary_of_a_sync_run():
    s = run_charts.run_summary(sync_history())
    assert s["global_step"] == 9 and s["duration_s"] == pytest.approx(0.9)
    assert s["global_steps_per_s"] == pytest.approx(9 / 0.9)
    assert s["dropped"] == {"/job:worker/task:0": 4, "/job:worker/task:1": 3}
    assert s["local_steps"] == {"/job:worker/task:0": 10, "/job:worker/task:1": 10}
    assert s["final_loss"] == pytest.approx(0.1) and s["staleness"] == []


def test_the_figure_draws_both_runs_the_previous_in_grey():
    fig = run_charts.runs_figure(
        sync_history(),
        async_history(),
        "run 2",
        "run 1",
        mode="sync",
        straggler=STRAGGLER,
        workers=[f"/job:worker/task:{i}" for i in range(3)],
    )
    ax_loss, ax_step, ax_lost = fig.axes
    grey = [ln for ln in ax_loss.lines if ln.get_color() == run_charts.PREVIOUS_RUN_COLOR]
    assert len(grey) == 3 and len(ax_loss.lines) == 5  # run 1: 3 replicas in grey; run 2: 2 in colour
    labels = [t.get_text() for t in ax_step.get_legend().get_texts()]
    assert labels == ["run 1: 20.0 steps/s", "run 2: 10.0 steps/s"]
    ticks = [t.get_text() for t in ax_lost.get_xticklabels()]
    assert ticks == ["worker:0", "worker:1", "worker:2\n(straggler)"]
    bar_labels = [t.get_text() for t in ax_lost.texts]
    assert bar_labels == ["4/10", "3/10", "0/0"]  # the straggler that never reported: an empty bar


def test_the_figure_of_an_async_run_is_a_staleness_histogram():
    fig = run_charts.runs_figure(async_history(), None, mode="async")
    ax_lost = fig.axes[2]
    assert ax_lost.get_title() == "staleness of each update (async)"
    assert sum(p.get_height() for p in ax_lost.patches) == 20


def test_the_runs_table_marks_the_current_and_the_previous_run():
    rows = [
        {
            "label": "run 2",
            "settings": "sync",
            "outcome": "done",
            "summary": run_charts.run_summary(sync_history()),
            "accuracy": 0.97,
            "role": "current",
        },
        {
            "label": "run 1",
            "settings": "async",
            "outcome": "stopped",
            "summary": run_charts.run_summary(async_history()),
            "accuracy": None,
            "role": "previous",
        },
    ]
    text = run_charts.runs_html(rows)
    assert '<tr style="font-weight:bold"><td>run 2</td>' in text and "7 of 20 dropped" in text
    assert f'<tr style="color:{run_charts.PREVIOUS_RUN_COLOR}"><td>run 1</td>' in text
    assert "mean staleness 1.9" in text and "97%" in text


def test_what_to_notice_compares_with_the_previous_run():
    now = Settings(mode="sync", workers=3, backup_workers=1, straggler_ms=100)
    before = Settings(mode="sync", workers=3, straggler_ms=100)
    slower = run_charts.run_summary(sync_history(dt=0.4))
    lines = what_to_notice(now, run_charts.run_summary(sync_history()), None, (before, slower))
    assert lines[0].startswith("Sync: each global step averages 2 fresh gradients")
    assert lines[1] == "This run: global step 9 after 0.9 s, 10.0 global steps/s."
    assert lines[2] == "7 of 20 gradients dropped."
    assert (
        lines[3] == f"Previous run ({before.describe()}): 2.5 global steps/s; this one is 4.0 times as fast."
    )
    assert lines[4].startswith("Try next: 0 backup workers")
    first = what_to_notice(before, slower)
    assert (
        first[-1] == "Try next: 1 backup worker: the straggler's gradients are dropped instead of waited for."
    )


# -- the widget without a cluster ------------------------------------------------------------------------
def test_the_facade_gives_the_playground():
    pg = tf.Playground()
    try:
        assert isinstance(pg, playground.Playground) and "nbdist-playground" in pg._dom_classes
        assert pg.settings() == Settings(mode="sync", workers=3, steps=200, straggler_ms=100)
    finally:
        pg.close()


def test_backup_workers_offered_are_fewer_than_the_workers_and_only_for_sync():
    pg = playground.Playground(mode="sync", workers=3, backup_workers=2)
    try:
        backup = pg.controls["backup_workers"]
        assert [v for _, v in backup.options] == [0, 1, 2] and not backup.disabled
        pg.controls["workers"].value = 2
        assert [v for _, v in backup.options] == [0, 1] and backup.value == 1
        pg.controls["mode"].value = "async"
        assert backup.disabled and pg.settings().backup_workers == 0
    finally:
        pg.close()


def test_train_refuses_unknown_controls_and_values():
    pg = playground.Playground()
    try:
        with pytest.raises(ValueError, match=r"no control 'replicas'; the controls: mode, workers, ps"):
            pg.train(replicas=2)
        with pytest.raises(ValueError, match=r"straggler_ms must be one of \[0, 50, 100, 200, 400\], got 75"):
            pg.train(straggler_ms=75)
        with pytest.raises(ValueError, match=r"workers must be one of \[1, 2, 3, 4\], got 8"):
            playground.Playground(workers=8)
        assert pg.runs == [] and server_children() == []
    finally:
        pg.close()


# -- real runs -------------------------------------------------------------------------------------------
@pytest.fixture
def pg():
    widget = playground.Playground(steps=40, max_redraws_per_s=10)
    yield widget
    widget.close()
    assert wait_gone([p for run in widget.runs for p in run.pids.values()], 10.0)
    assert server_children() == [], "the playground left server processes"


def wait_for(predicate, timeout_s, what):
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out after {timeout_s} s waiting for {what}"
        time.sleep(0.05)


@pytest.mark.slow
def test_two_runs_keep_both_curves_and_stop_each_cluster(pg):
    first = pg.train(mode="async", straggler_ms=100)
    assert pg.wait(120), first
    assert first.state == "done", first.error
    assert first.result.accuracy > 0.5 and set(first.result.steps_per_worker) == {
        "worker:0",
        "worker:1",
        "worker:2",
    }
    assert len(first.pids) == 4 and not any(alive(p) for p in first.pids.values())
    assert server_children() == []

    second = pg.train(mode="sync", backup_workers=1)
    wait_for(lambda: second.state == "training", 60, "the second run's cluster")
    assert set(server_children()) == set(second.pids.values())  # only the new run's tasks
    assert pg.wait(120) and second.state == "done", second.error
    assert first.cluster_down_at <= second.cluster_up_at

    pg.flush()
    assert "run 2" in pg.status.value and "done: 40 global steps" in pg.status.value
    assert pg.table.value.index("run 2") < pg.table.value.index("run 1")  # newest first, both kept
    assert f"Previous run ({first.settings.describe()})" in pg.notice.value
    assert "gradients dropped" in pg.notice.value
    assert pg.image.value == pg.png and pg.png.startswith(b"\x89PNG")
    assert pg.stop_button.disabled
    assert "nbdist-cluster-status" in pg.cluster_box.children[0]._dom_classes


@pytest.mark.slow
def test_train_during_a_run_stops_it_before_the_next_cluster_starts(pg):
    first = pg.train(mode="in-graph", steps=400, straggler_ms=200)
    wait_for(lambda: first.history.count >= 3, 60, "the first run's first steps")
    assert not pg.stop_button.disabled
    second = pg.train(mode="async", steps=40)
    assert pg.wait(120) and second.state == "done", second.error
    assert first.state == "stopped" and first.cluster_down_at <= second.cluster_up_at
    assert not any(alive(p) for p in first.pids.values())


@pytest.mark.slow
def test_the_stop_button_stops_a_between_graph_run_and_its_cluster(pg):
    run = pg.train(mode="sync", steps=400, straggler_ms=200)
    wait_for(lambda: run.history.count >= 3, 60, "the run's first steps")
    pg.stop_button.click()
    assert pg.wait(60), "the run did not end after Stop"
    assert run.state == "stopped" and run.result.stopped
    assert wait_gone(list(run.pids.values()), 10.0)
    pg.flush()
    assert "stopped: global step" in pg.status.value


def test_a_dropped_bar_is_as_tall_as_the_share_of_gradients_dropped():
    """1 of 265 dropped is a sliver of a 0-100% axis, not a full-height bar."""
    history = history_of(
        ("/job:worker/task:0", k, 100.0 + k / 10, {"loss": 1.0, "local_step": k + 1, "dropped": int(k == 7)})
        for k in range(265)
    )
    fig = run_charts.runs_figure(history, None, "run 1", None, mode="sync", workers=["/job:worker/task:0"])
    ax_lost = fig.axes[2]
    (bar,) = ax_lost.patches
    assert bar.get_height() == pytest.approx(100 / 265) and ax_lost.get_ylim()[1] >= 100
    assert [t.get_text() for t in ax_lost.texts] == ["1/265"]
