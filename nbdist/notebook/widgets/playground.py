"""`Playground`: pick a cluster and a way to replicate, press Train, watch a real cluster train.

    import nbdist as tf
    tf.Playground()          # in a notebook; as an app: voila notebooks/playground.ipynb

In the spirit of TensorFlow Playground, for the cluster instead of the network: the learner
picks the ps and worker tasks, in-graph / async / sync replication, backup workers and a
straggler (the last worker slowed by a delay), presses Train and watches a real
`LocalCluster` train (`nbdist.notebook.replicated_training`, the code ``nbdist demo`` runs):
the cluster's tasks, the loss per replica, the global step over time, the staleness or the
dropped gradients, with the previous run's curves in grey on the same axes, a table of
every run and a few sentences on what to notice.

Threads: a button press only starts a run's thread and returns. The run's thread first waits
for the previous run to end (a new run stops the old one, whose cluster is stopped before
the new one starts), then starts the cluster, trains and stops the cluster. Metric events
arrive on the cluster's event thread and only ask a `Redrawer` for a picture; its thread
draws (a matplotlib ``Figure``, never pyplot) and sets widget state, nothing else.
"""

import collections
import html
import threading
import time

from nbdist.notebook import metrics_history, png_writer, run_charts
from nbdist.notebook.replicated_training import MODES, Settings, train, what_to_notice
from nbdist.notebook.widgets import ipywidgets_or_none, static_bundle
from nbdist.notebook.widgets.throttle import Redrawer

_w = ipywidgets_or_none()
_VBox = _w.VBox if _w is not None else object

STOP_WAIT_S = 30.0  # how long a new run waits for the previous one to stop its cluster
FINISHED = ("done", "stopped", "failed")
# What the learner chooses from: ``(label, value)`` per button; the counts stay small (2 cores).
CHOICES = {
    "mode": [(m, m) for m in MODES],
    "ps": [(str(n), n) for n in (1, 2, 3)],
    "workers": [(str(n), n) for n in (1, 2, 3, 4)],
    "backup_workers": [(str(n), n) for n in (0, 1, 2, 3)],
    "straggler_ms": [("none", 0), ("50 ms", 50), ("100 ms", 100), ("200 ms", 200), ("400 ms", 400)],
    "steps": [(str(n), n) for n in (40, 100, 200, 400)],
}
LABELS = {
    "mode": "replication",
    "ps": "ps tasks",
    "workers": "worker tasks",
    "backup_workers": "backup workers",
    "straggler_ms": "straggler delay",
    "steps": "global steps",
}
TOOLTIPS = {
    "in-graph": "one client, a tower per worker, gradients averaged on the ps",
    "async": "every worker its own client, applying its own gradients at once",
    "sync": "every worker its own client; each step averages fresh gradients (SyncReplicasOptimizer)",
}


class Run:
    """One press of Train: its settings, its metric events and what happened.

    Attributes:
        number: 1 for the first run of this playground.
        settings: the `Settings` it trained with.
        history: its metric events (`metrics_history.MetricsHistory`).
        state: ``"waiting"`` (for the previous run to stop), ``"starting"`` (the cluster),
            ``"training"``, then ``"done"``, ``"stopped"`` or ``"failed"``.
        result: the `Result` of `train` (None until done or stopped).
        error: what went wrong (``"failed"``), as text.
        pids: ``{(job, index): pid}`` of its cluster's task processes.
        cluster_up_at, cluster_down_at: ``time.monotonic()`` when its cluster was ready and
            when it had stopped (None until then).
        output: the last lines the worker clients printed.
    """

    def __init__(self, number, settings):
        self.number = number
        self.settings = settings
        self.history = metrics_history.MetricsHistory()
        self.state = "waiting"
        self.result = None
        self.error = None
        self.pids = {}
        self.cluster_up_at = self.cluster_down_at = None
        self.output = collections.deque(maxlen=200)
        self.stop_requested = threading.Event()
        self.thread = None
        self.elapsed_s = None
        self._started = None

    @property
    def label(self):
        return f"run {self.number}"

    @property
    def finished(self):
        return self.state in FINISHED

    def summary(self):
        """`run_charts.run_summary` of its metric events so far."""
        return run_charts.run_summary(self.history)

    def __repr__(self):
        return f"<{self.label}: {self.settings.describe()}, {self.state}, {self.history.count} metric events>"


class _Lines:
    """A file-like sink keeping a run's worker output (``[worker:0] ...`` lines)."""

    def __init__(self, lines):
        self._lines = lines

    def write(self, text):
        self._lines.extend(line for line in text.splitlines() if line.strip())
        return len(text)

    def flush(self):
        pass


class Playground(_VBox):
    """A distributed-training playground: choose the cluster and the replication, press Train.

    Args:
        mode, workers, ps, backup_workers, straggler_ms, steps: the controls' initial values
            (as `replicated_training.Settings`; each must be one of `CHOICES`).
        max_redraws_per_s: redraw throttle of the picture.

    Raises:
        ImportError: without ipywidgets.
        ValueError: a value that is not one of the choices, or settings that do not train.

    Run it from code as from the buttons::

        pg = tf.Playground()
        pg.train(mode="sync", backup_workers=1)   # sets the controls, then presses Train
        pg.wait(120)                              # until the run ended (True) or the timeout
        pg.runs[-1].summary()["global_steps_per_s"]
    """

    def __init__(
        self,
        mode="sync",
        workers=3,
        ps=1,
        backup_workers=0,
        straggler_ms=100,
        steps=200,
        max_redraws_per_s=4.0,
    ):
        if _w is None:
            raise ImportError("Playground needs ipywidgets: pip install ipywidgets")
        initial = {
            "mode": mode,
            "workers": workers,
            "ps": ps,
            "backup_workers": backup_workers,
            "straggler_ms": straggler_ms,
            "steps": steps,
        }
        self.runs = []
        self._redrawer = None  # (close() runs even when __init__ raised: at garbage collection)
        super().__init__()
        try:
            for name, value in initial.items():
                allowed = [v for _, v in CHOICES[name]]
                if value not in allowed:
                    raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
            Settings(**{**initial, "backup_workers": backup_workers if mode == "sync" else 0})
        except ValueError:
            self.close()
            raise
        self.redraws = 0
        self.png = b""
        self._draw_lock = threading.Lock()
        self.controls = {name: self._control(name, value) for name, value in initial.items()}
        self.controls["workers"].observe(self._on_workers, names="value")
        self.controls["mode"].observe(self._on_mode, names="value")
        self._on_workers()
        self._on_mode()
        self.train_button = _w.Button(description="Train", icon="play", button_style="success")
        self.stop_button = _w.Button(description="Stop", icon="stop", button_style="danger", disabled=True)
        self.train_button.on_click(lambda _: self.train())
        self.stop_button.on_click(lambda _: self.stop())
        self.title = _w.HTML(_TITLE)
        self.status = _w.HTML("<i>Choose a cluster and press Train.</i>")
        self.image = _w.Image(format="png", layout=_w.Layout(display="none", max_width="100%"))
        self.notice = _w.HTML()
        self.table = _w.HTML()
        self.cluster_box = _w.VBox()
        cluster_caption = _w.HTML(
            "<b>The cluster's tasks</b> (one server process each; live while a run trains)"
        )
        for widget, css in [
            (self.train_button, "train"),
            (self.stop_button, "stop"),
            (self.title, "title"),
            (self.status, "status"),
            (self.image, "curves"),
            (self.notice, "notice"),
            (self.table, "runs"),
            (self.cluster_box, "cluster"),
        ]:
            widget.add_class(f"nbdist-playground-{css}")
        c = self.controls
        left = _w.VBox([c["mode"], c["ps"], c["workers"], c["backup_workers"]])
        right = _w.VBox([c["straggler_ms"], c["steps"], _w.HBox([self.train_button, self.stop_button])])
        top = _w.HBox([left, right])
        parts = [self.title, top, self.status, self.image, self.notice, self.table, cluster_caption]
        self.children = (*parts, self.cluster_box)
        self.add_class("nbdist-playground")
        self._redrawer = Redrawer(self._draw, max_redraws_per_s, name="nbdist-playground")

    # -- controls ------------------------------------------------------------------------------------
    def _control(self, name, value):
        values = [v for _, v in CHOICES[name]]
        control = _w.ToggleButtons(
            options=CHOICES[name],
            value=value,
            description=LABELS[name],
            tooltips=[TOOLTIPS.get(str(v), "") for v in values],
            style={"button_width": "78px", "description_width": "110px"},
        )
        control.add_class(f"nbdist-playground-{name.replace('_', '-')}")
        return control

    def _on_workers(self, change=None):
        """Backup workers must be fewer than the workers: offer only those."""
        backup, workers = self.controls["backup_workers"], self.controls["workers"].value
        value = min(backup.value, workers - 1)
        backup.options = [(label, n) for label, n in CHOICES["backup_workers"] if n < workers]
        backup.value = value

    def _on_mode(self, change=None):
        self.controls["backup_workers"].disabled = self.controls["mode"].value != "sync"

    def _values(self):
        return {name: control.value for name, control in self.controls.items()}

    def settings(self):
        """The `Settings` the controls show (backup workers count in sync mode only)."""
        values = self._values()
        if values["mode"] != "sync":
            values["backup_workers"] = 0
        return Settings(**values)

    # -- runs ------------------------------------------------------------------------------------------
    def train(self, **values):
        """Presses Train: sets the given controls first (``mode="async"``, ``workers=2``, ...),
        stops the current run if one is going (its cluster stops before the new one starts)
        and starts a new run in the background. Returns its `Run`.

        Raises:
            ValueError: an unknown control or a value that is not one of its choices.
        """
        for name in values:
            if name not in self.controls:
                raise ValueError(f"no control {name!r}; the controls: {', '.join(self.controls)}")
        for name in ("mode", "workers"):  # first: they decide what backup_workers may be
            if name in values:
                self._set(name, values.pop(name))
        for name, value in values.items():
            self._set(name, value)
        settings = self.settings()
        previous = self.runs[-1] if self.runs else None
        if previous is not None:
            previous.stop_requested.set()
        run = Run(len(self.runs) + 1, settings)
        self.runs.append(run)
        run.thread = threading.Thread(
            target=self._run, args=(run, previous), name=f"nbdist-playground-{run.label}", daemon=True
        )
        self.stop_button.disabled = False
        run.thread.start()
        self._redrawer.request()
        return run

    def _set(self, name, value):
        control = self.controls[name]
        allowed = [v for _, v in control.options]
        if value not in allowed:
            raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
        control.value = value

    def stop(self):
        """Presses Stop: the current run ends at its next step and stops its cluster."""
        if self.runs:
            self.runs[-1].stop_requested.set()

    def wait(self, timeout_s=None):
        """Waits until the current run has ended and its cluster stopped; False on timeout."""
        if not self.runs or self.runs[-1].thread is None:
            return True
        self.runs[-1].thread.join(timeout_s)
        return not self.runs[-1].thread.is_alive()

    def close(self, timeout_s=STOP_WAIT_S):
        """Stops the current run (waiting up to `timeout_s` for its cluster to stop), then
        stops drawing and closes the widget."""
        self.stop()
        self.wait(timeout_s)
        if self._redrawer is not None:
            self._redrawer.close()
        super().close()

    def _run(self, run, previous):
        cluster = None
        try:
            if previous is not None and previous.thread is not None:
                previous.thread.join(STOP_WAIT_S)
                if previous.thread.is_alive():
                    raise RuntimeError(
                        f"{previous.label} did not stop its cluster within {STOP_WAIT_S:.0f} s "
                        f"(pids {sorted(previous.pids.values())}); press Train again to retry"
                    )
            if run.stop_requested.is_set():
                run.state = "stopped"
                return
            run.state = "starting"
            self._redrawer.request()
            cluster = run.settings.start_cluster()
            run.pids, run.cluster_up_at = cluster.pids, time.monotonic()
            view = cluster.status_view()
            self.cluster_box.children = (view,) if view is not None else ()
            run.state, run._started = "training", time.monotonic()
            self._redrawer.request()
            lines = _Lines(run.output)
            run.result = train(
                cluster,
                run.settings,
                lambda event: self._on_event(run, event),
                stop=run.stop_requested,
                streams={"stdout": lines, "stderr": lines},
            )
            run.state = "stopped" if run.result.stopped else "done"
        except Exception as e:  # noqa: BLE001 - a failed run is shown in the widget, not raised on a thread
            run.error = f"{type(e).__name__}: {e}"
            run.state = "failed"
        finally:
            if cluster is not None:
                cluster.stop()
                run.cluster_down_at = time.monotonic()
            if run._started is not None:
                run.elapsed_s = time.monotonic() - run._started
            if run is self.runs[-1]:
                self.stop_button.disabled = True
            self._redrawer.request()

    def _on_event(self, run, event):
        if run.history.add(event):
            self._redrawer.request()

    # -- drawing (the redrawer's thread; state only) -------------------------------------------------------
    def _draw(self):
        with self._draw_lock:
            runs = list(self.runs)
            current = runs[-1] if runs else None
            previous = next((r for r in reversed(runs[:-1]) if r.history.count), None)
            self.status.value = _status_html(current)
            if current is not None:
                fig = run_charts.runs_figure(
                    current.history,
                    previous.history if previous else None,
                    current_label=current.label,
                    previous_label=previous.label if previous else "",
                    mode=current.settings.mode,
                    straggler=current.settings.straggler,
                    workers=[f"/job:worker/task:{i}" for i in range(current.settings.workers)],
                )
                self.png = png_writer.figure_png(fig)
                self.image.value = self.png
                self.image.layout.display = None
                self.notice.value = _notice_html(current, previous)
                self.table.value = run_charts.runs_html([_row(r, current, previous) for r in reversed(runs)])
            self.redraws += 1

    def flush(self):
        """Redraws now from the calling thread (tests; the picture otherwise follows by itself)."""
        self._draw()

    # -- display ----------------------------------------------------------------------------------------
    def _repr_mimebundle_(self, **kwargs):
        data = super()._repr_mimebundle_(**kwargs)
        return {**static_bundle(repr(self), png=self.png or None), **(data or {}), "text/plain": repr(self)}

    def __repr__(self):
        return f"<nbdist Playground: {len(self.runs)} runs>"


_TITLE = (
    "<div style='max-width:900px;line-height:1.4'><b>Distributed training playground.</b> Every "
    "Train starts a real cluster of server processes on this machine (ps tasks hold the variables, "
    "worker tasks compute the gradients), trains a small classifier of three spirals on it, then "
    "stops it. The straggler is the last worker, slowed by the chosen delay before every piece of "
    "a step it runs. The previous run stays in grey.</div>"
)
_STATE_TEXT = {
    "waiting": "waiting for the previous run to stop its cluster",
    "starting": "starting the cluster",
    "training": "training",
    "done": "done",
    "stopped": "stopped",
    "failed": "failed",
}


def _status_html(run):
    if run is None:
        return "<i>Choose a cluster and press Train.</i>"
    summary = run.summary()
    step = "" if summary["global_step"] is None else f": global step {summary['global_step']:.0f}"
    text = f"<b>{run.label}</b> · {html.escape(run.settings.describe())} — {_STATE_TEXT[run.state]}"
    if run.state == "done":
        text += f": {run.settings.steps} global steps"
    elif run.state in ("training", "stopped") and step:
        text += f"{step} of {run.settings.steps}"
    if run.elapsed_s is not None:
        text += f" in {run.elapsed_s:.1f} s"
    if run.result is not None and run.result.accuracy is not None:
        text += f", accuracy {run.result.accuracy:.0%} on all the data"
    if run.state == "failed":
        last = "\n".join(list(run.output)[-5:])
        text += f"<pre style='color:#b00'>{html.escape(run.error or '')}\n{html.escape(last)}</pre>"
    return f"<span class='nbdist-playground-state-{run.state}'>{text}</span>"


def _notice_html(run, previous):
    steps = run.result.steps_per_worker if run.result is not None else None
    before = (previous.settings, previous.summary()) if previous is not None else None
    lines = what_to_notice(run.settings, run.summary(), steps, before)
    items = "".join(f"<li>{html.escape(line)}</li>" for line in lines)
    return f"<b>What to notice</b><ul style='margin:2px 0;max-width:900px'>{items}</ul>"


def _row(run, current, previous):
    return {
        "label": run.label,
        "settings": run.settings.describe(),
        "outcome": run.state,
        "summary": run.summary(),
        "accuracy": run.result.accuracy if run.result is not None else None,
        "role": "current" if run is current else "previous" if run is previous else "",
    }
