"""``nbdist demo``: a real local cluster trains a model, and an HTML report shows what happened.

Starts one server process per task on 127.0.0.1 (parameter servers and workers), trains a small
classifier of three interleaved spirals across them with a progress bar (loss and steps/s),
runs one traced step, writes a self-contained HTML report (the partitioned graph, the
placement, the loss curves per replica, the timeline of the traced step) and stops the cluster.

Three ways to replicate the training (``--mode``): ``in-graph`` (one client, a tower per
worker task), ``async`` and ``sync`` (between-graph: every worker task its own client);
`nbdist.notebook.replicated_training` runs them (the playground widget runs the same code).

Also ``python -m nbdist demo`` and ``python -m nbdist.demo``.
"""

import argparse
import collections
import os
import sys
import threading
import time
from pathlib import Path

from nbdist.notebook import i18n, metrics_history, run_report
from nbdist.notebook.replicated_training import EXAMPLES_PER_CLASS, MODES, Settings, train

DEFAULT_REPORT = "nbdist-demo-report.html"
RATE_WINDOW = 50  # steps/s is measured over the last this-many steps (never over one)
# Why async training ends a little past --steps: as with TF's StopAtStepHook, each worker stops
# after the step it is running when the global step reaches the last one.
_OVERSHOOT = (
    "\n  (a few steps past --steps: each async worker finishes the step it had started, "
    "as with TF's StopAtStepHook)"
)
EXIT_INTERRUPTED = 130  # the shell's code for "stopped by SIGINT"


class StepRate:
    """Steps per second over (at least) the last `window` steps (None until there is a rate).

    Steps come as the global step a metric event carries, stamped with the time the worker
    reported it, and several may arrive at once (the events of a whole window travel in one
    message): steps with one time stamp are one point, never N points a few nanoseconds apart
    (which gave 168480.1 steps/s).
    """

    def __init__(self, window=RATE_WINDOW):
        self._points = collections.deque()  # (time, step), oldest first
        self._window = window
        self._seen = 0  # points recorded

    def step(self, now=None, step=None):
        """Records that training reached `step` (default: one more step) at `now` (seconds,
        default `time.perf_counter()`); steps stamped with one instant are one point."""
        now = time.perf_counter() if now is None else now
        if step is None:
            step = self._points[-1][1] + 1 if self._points else 1
        if self._points and now <= self._points[-1][0]:  # the same instant: the step it reached
            self._points[-1] = (self._points[-1][0], max(step, self._points[-1][1]))
            return
        self._points.append((now, step))
        self._seen += 1
        # keep the newest point that is at least `window` steps back, and every point after it
        while len(self._points) > 2 and step - self._points[1][1] >= self._window:
            self._points.popleft()

    @property
    def steps(self):
        """The steps the rate is measured over."""
        return self._points[-1][1] - self._points[0][1] if len(self._points) > 1 else 0

    @property
    def per_s(self):
        # the first step also ships and plans the graph: no rate from it alone
        if self._seen < 3:
            return None
        (t0, _), (t1, _) = self._points[0], self._points[-1]
        if t1 - t0 <= 0:
            return None
        return self.steps / (t1 - t0)


# -- progress ---------------------------------------------------------------------------------------------
class Progress:
    """The progress bar (tqdm) and the metrics history the report draws, fed from any thread."""

    def __init__(self, total, file, out, lang="en"):
        from tqdm import tqdm  # noqa: PLC0415 - only the command needs it

        self.history = metrics_history.MetricsHistory()
        self.rate = StepRate()
        self._lock = threading.Lock()
        self._losses = {}
        self.step = 0
        self._bar = tqdm(
            total=total,
            file=file,
            unit="step",
            dynamic_ncols=True,
            bar_format="{desc} {bar} {n_fmt}/{total_fmt} [{elapsed}<{remaining}]{postfix}",
            desc=i18n.text(lang, "training"),
            mininterval=0.2,
        )
        self._out = out
        self.streams = {"stdout": file, "stderr": file}

    def event(self, event):
        """A metric event: a tower's loss (in-graph) or a worker's `tf.report` (between-graph)."""
        if event.get("kind") != "metric" or not self.history.add(event):
            return
        loss = event.get("metrics", {}).get("loss")
        with self._lock:
            if loss is not None:
                self._losses[event["task"]] = loss
        self.advance(event.get("step") or 0, event.get("time"))

    def advance(self, step, when=None):
        """Training reached global `step` (at `when`, a `time.time()` stamp; default: now)."""
        with self._lock:
            if step <= self.step:
                return
            self.rate.step(time.time() if when is None else when, step=step)
            self.step = step
            losses = " ".join(f"w{t.rpartition(':')[2]} {v:.3f}" for t, v in sorted(self._losses.items()))
            rate = self.rate.per_s
            self._bar.set_postfix_str(
                f"loss {losses}" + (f", {rate:.1f} steps/s" if rate else ""), refresh=False
            )
            self._bar.update(min(step, self._bar.total) - self._bar.n)

    def note(self, text):
        """Prints a line above the bar (to the demo's output)."""
        self._bar.write(text, file=self._out)

    def close(self):
        self._bar.close()


# -- the command -------------------------------------------------------------------------------------------
def parser(prog="nbdist demo"):
    p = argparse.ArgumentParser(
        prog=prog,
        description=(
            "Start a local cluster of server processes (parameter servers and workers on\n"
            "127.0.0.1), train a small classifier across it with a progress bar, write a\n"
            "self-contained HTML report (the partitioned graph, the placement, the loss\n"
            "curves per replica, the timeline of one step) into the current folder, and\n"
            "stop the cluster. Ctrl-C stops it at any time."
        ),
        epilog="examples:\n  nbdist demo\n  nbdist demo --mode async --workers 3 --steps 400\n"
        "  nbdist demo --ps 2 --report /tmp/run.html",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--mode",
        choices=list(MODES),
        default="in-graph",
        help="in-graph: one client, a tower per worker, gradients averaged on the ps; "
        "async: between-graph, each worker its own client applying its own gradients; "
        "sync: between-graph with SyncReplicasOptimizer (default: %(default)s)",
    )
    p.add_argument(
        "--backup-workers",
        type=int,
        default=0,
        metavar="N",
        help="sync only: this many workers are backups, their late gradients dropped (default: %(default)s)",
    )
    p.add_argument(
        "--workers", type=_positive, default=2, metavar="N", help="worker tasks (default: %(default)s)"
    )
    p.add_argument(
        "--ps",
        type=_positive,
        default=1,
        metavar="N",
        help="parameter-server tasks; the variables are dealt out over them round-robin "
        "(default: %(default)s)",
    )
    p.add_argument(
        "--steps",
        type=_positive,
        default=300,
        metavar="N",
        help="global training steps (default: %(default)s)",
    )
    p.add_argument(
        "--batch",
        type=_positive,
        default=64,
        metavar="N",
        help="examples per worker per step (default: %(default)s)",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the data, the initial weights and the batches (default: %(default)s)",
    )
    p.add_argument(
        "--report",
        metavar="PATH",
        default=DEFAULT_REPORT,
        help="where to write the HTML report (default: ./%(default)s)",
    )
    p.add_argument("--no-report", action="store_true", help="train and trace, but write no report")
    p.add_argument(
        "--lang",
        choices=list(i18n.LANGS),
        default=i18n.default_lang(),
        help="language of the console lines and the report's headings and charts: en English, "
        "zh Chinese (default: zh when $LANG starts with zh, else en; now %(default)s)",
    )
    return p


def _positive(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def _check_options(p, args):
    """Refuses what would be ignored or fail only after training (`p.error`: exit 2, usage shown)."""
    if args.backup_workers and args.mode != "sync":
        # TF has backup workers only in SyncReplicasOptimizer (replicas_to_aggregate fewer than
        # total_num_replicas): in-graph or async training has no step to drop late gradients from.
        p.error(
            f"--backup-workers {args.backup_workers} needs --mode sync (got --mode {args.mode}): "
            "backup workers are the gradients a synchronous step does not wait for; "
            "add --mode sync, or leave --backup-workers out"
        )
    if not args.no_report:
        problem = _report_path_problem(args.report)
        if problem:
            p.error(f"--report {args.report!r}: {problem}")


def _report_path_problem(report):
    """Why the report could not be written to `report` (checked before training), or None."""
    path = Path(report).expanduser()
    folder = path.parent.resolve()
    if path.is_dir():
        return "is a folder; give a file name in it, e.g. --report " + str(path / DEFAULT_REPORT)
    if not folder.is_dir():
        return (
            f"its folder {str(folder)!r} does not exist; create it first (mkdir -p), "
            "choose another path, or pass --no-report"
        )
    if not os.access(folder, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        where = str(folder)
        return f"cannot write there (no permission in {where!r}); choose another path, or pass --no-report"
    return None


def main(argv=None, out=None, prog="python -m nbdist.demo"):
    """Runs the demo; returns the exit code (0 done, 130 interrupted by Ctrl-C)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    p = parser(prog)
    args = p.parse_args(argv)
    _check_options(p, args)
    try:
        settings = Settings(
            mode=args.mode,
            workers=args.workers,
            ps=args.ps,
            steps=args.steps,
            backup_workers=args.backup_workers,
            batch=args.batch,
            seed=args.seed,
        )
    except ValueError as e:
        p.error(str(e))
    out = out or sys.stdout
    lang = args.lang
    bar_file = sys.stderr if out is sys.stdout else out
    cluster = progress = None
    try:
        started = time.perf_counter()
        with settings.start_cluster() as cluster:
            seconds = time.perf_counter() - started
            print(
                i18n.text(lang, "cluster_ready", seconds=seconds, ps=args.ps, workers=args.workers), file=out
            )
            for (job, index), pid in sorted(cluster.pids.items()):
                print(
                    f"  /job:{job}/task:{index}  pid {pid}  {cluster.cluster_spec.task_address(job, index)}",
                    file=out,
                )
            progress = Progress(args.steps, bar_file, out, lang)
            t0 = time.perf_counter()
            result = train(cluster, settings, progress.event, streams=progress.streams, trace=True)
            elapsed = time.perf_counter() - t0
            if result.steps_per_worker is not None:
                progress.note(
                    i18n.text(lang, "steps_per_worker")
                    + ", ".join(f"{k} {v}" for k, v in result.steps_per_worker.items())
                )
            progress.close()
            md, accuracy = result.run_metadata, result.accuracy
            rate = progress.rate.per_s
            steps = result.global_step if result.global_step is not None else progress.step
            print(
                i18n.text(lang, "trained", mode=args.mode, steps=steps, seconds=elapsed)
                + (i18n.text(lang, "trained_rate", rate=rate, over=progress.rate.steps) if rate else "")
                + i18n.text(lang, "trained_accuracy", accuracy=accuracy)
                + (_OVERSHOOT if args.mode == "async" and steps > args.steps else ""),
                file=out,
            )
            if not args.no_report:
                path = _write_report(args, argv, md, progress, steps, elapsed, accuracy, cluster)
                print(i18n.text(lang, "report_written", path=path), file=out)
        print(i18n.text(lang, "cluster_stopped"), file=out, flush=True)
        return 0
    except KeyboardInterrupt:
        if progress is not None:
            progress.close()
        if cluster is not None:
            cluster.stop()  # idempotent: the with-block may have stopped it already
        where = f" at step {progress.step}" if progress is not None else ""
        print(f"\ninterrupted{where}: cluster stopped.", file=out, flush=True)
        return EXIT_INTERRUPTED


def _write_report(args, argv, md, progress, steps, elapsed, accuracy, cluster):
    what = {
        "in-graph": "in-graph replication: one client, one tower per worker, gradients averaged on the ps",
        "async": "between-graph replication, asynchronous: each worker task its own client",
        "sync": f"between-graph replication, synchronous (SyncReplicasOptimizer, "
        f"{args.workers - args.backup_workers} of {args.workers} gradients per step)",
    }[args.mode]
    lang = args.lang
    facts = {
        "f_mode": what,
        "f_cluster": ", ".join(f"/job:{j}/task:{i} {a}" for j, i, a in cluster.cluster_spec.iter_tasks()),
        "f_training": f"{steps} global steps in {elapsed:.1f} s, "
        f"batch {args.batch} per worker, seed {args.seed}",
        "f_rate": (
            f"{progress.rate.per_s:.1f} (last {progress.rate.steps} steps)" if progress.rate.per_s else "-"
        ),
        "f_accuracy": f"{accuracy:.1%} on all {3 * EXAMPLES_PER_CLASS} examples",
        "f_traced": {
            "in-graph": "the one client's step: every tower, the averaging and the update",
            "async": "one of worker 0's own steps from the middle of training, traced by its client "
            "(in its process): its forward and backward pass and its update of the ps",
            "sync": "one of worker 0's own steps from the middle of training, traced by its client "
            "(in its process): its gradients into the accumulators on the ps and its token taken "
            "from the token queue (the chief's queue runner applies the average apart from it)",
        }[args.mode],
        "f_options": " ".join(argv) or "(the defaults)",
    }
    facts = {i18n.text(lang, key): value for key, value in facts.items()}
    html_text = run_report.run_report_html(
        md, progress.history, title=i18n.text(lang, "report_title", mode=args.mode), facts=facts, lang=lang
    )
    path = Path(args.report).expanduser().resolve()
    path.write_text(html_text, encoding="utf-8")
    return path


if __name__ == "__main__":
    sys.exit(main())
