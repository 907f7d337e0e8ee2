"""``nbdist demo``: a real local cluster trains a model, and an HTML report shows what happened.

Starts one server process per task on 127.0.0.1 (parameter servers and workers), trains a small
classifier of three interleaved spirals across them with a progress bar (loss and steps/s),
runs one traced step, writes a self-contained HTML report (the partitioned graph, the
placement, the loss curves per replica, the timeline of the traced step) and stops the cluster.

Two ways to replicate the training (``--mode``):

- ``in-graph``: one client (this process) builds one graph with a copy of the model on every
  worker task (a *tower*); each tower computes gradients on its share of the batch, and the ps
  averages them and applies one update per step.
- ``async``: between-graph replication. Every worker task runs its own client in its own process
  (the cell-execution path of ``%%dtf_worker``): it builds its own graph with the same variables
  on the ps, and applies its gradients as soon as it has them, without waiting for the others.
- ``sync``: the same clients, with ``tf.train.SyncReplicasOptimizer`` in a
  ``MonitoredTrainingSession``: every global step averages the gradients of
  ``workers - backup_workers`` replicas; the late ones (backup workers) are dropped and counted.

Also ``python -m nbdist demo`` and ``python -m nbdist.demo``.
"""

import argparse
import json
import sys
import threading
import time
from pathlib import Path

import numpy as np

import nbdist as tf
from nbdist.notebook import charts, run_report, task_exec
from nbdist.notebook.cluster import LocalCluster

DEFAULT_REPORT = "nbdist-demo-report.html"
INIT_WAIT_S = 30.0  # how long a non-chief worker waits for the chief to initialise the variables
RATE_WINDOW = 50  # steps/s is measured over the last this-many steps (never over one)
EXIT_INTERRUPTED = 130  # the shell's code for "stopped by SIGINT"


def spirals(n_per_class, classes=3, seed=0):
    """A seeded 2-D dataset of interleaved spirals, one per class."""
    rng = np.random.RandomState(seed)
    xs, ys = [], []
    for c in range(classes):
        r = np.linspace(0.1, 1.0, n_per_class)
        t = np.linspace(c * 4.0, (c + 1) * 4.0, n_per_class) + rng.randn(n_per_class) * 0.2
        xs.append(np.stack([r * np.sin(t), r * np.cos(t)], axis=1))
        ys.append(np.full(n_per_class, c))
    return np.concatenate(xs).astype(np.float32), np.concatenate(ys).astype(np.int64)


# -- the model -----------------------------------------------------------------------------------------
def _variables(n_ps, hidden=64, classes=3):
    """The model's variables, dealt out round-robin over the ps tasks; the global step on ps:0."""
    shapes = [("w1", tf.random_normal([2, hidden], stddev=1.0)), ("b1", tf.zeros([hidden]))]
    shapes += [("w2", tf.random_normal([hidden, classes], stddev=0.1)), ("b2", tf.zeros([classes]))]
    params = []
    for i, (name, initial) in enumerate(shapes):
        with tf.device(f"/job:ps/task:{i % n_ps}"):
            params.append(tf.Variable(initial, name=name))
    with tf.device("/job:ps/task:0"):
        global_step = tf.train.get_or_create_global_step()
    return params, global_step


def _tower(params, task_index):
    """One replica of the forward pass and its loss on ``/job:worker/task:<task_index>``."""
    w1, b1, w2, b2 = params
    with tf.device(f"/job:worker/task:{task_index}"), tf.name_scope(f"replica_{task_index}"):
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        y = tf.placeholder(tf.int64, [None], name="y")
        logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2) + b2
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), y), tf.float32))
    return {"x": x, "y": y, "loss": loss, "accuracy": accuracy}


def build_in_graph(n_workers, n_ps, learning_rate=0.05, seed=0):
    """In-graph replication: one tower per worker task, gradients averaged where each variable lives."""
    tf.reset_default_graph()
    tf.set_random_seed(seed)
    params, global_step = _variables(n_ps)
    towers = [_tower(params, i) for i in range(n_workers)]
    grads = []
    for i, tower in enumerate(towers):
        with tf.device(f"/job:worker/task:{i}"):  # each worker computes its own tower's gradients
            grads.append(tf.gradients(tower["loss"], params))
    optimizer = tf.train.AdamOptimizer(learning_rate)
    mean_grads = []
    for k, var in enumerate(params):
        with tf.device(var.device):  # averaged on the ps that holds the variable
            mean_grads.append(tf.add_n([g[k] for g in grads]) / float(n_workers))
    train_op = optimizer.apply_gradients(zip(mean_grads, params), global_step=global_step)
    return {"towers": towers, "train_op": train_op, "global_step": global_step, "params": params}


def build_replica(task_index, n_ps, learning_rate=0.05, seed=0, graph=None, sync=None):
    """Between-graph replication: the graph one worker's own client builds (its tower and its update).

    `sync` is ``(replicas_to_aggregate, total_num_replicas)`` for synchronous training.
    """
    graph = graph or tf.Graph()
    with graph.as_default():
        tf.set_random_seed(seed)
        params, global_step = _variables(n_ps)
        tower = _tower(params, task_index)
        opt = tf.train.AdamOptimizer(learning_rate)
        if sync is not None:
            opt = tf.train.SyncReplicasOptimizer(
                opt, replicas_to_aggregate=sync[0], total_num_replicas=sync[1]
            )
        train_op = opt.minimize(tower["loss"], global_step=global_step)
        init = tf.global_variables_initializer()
    return {
        "towers": [tower],
        "train_op": train_op,
        "global_step": global_step,
        "params": params,
        "init": init,
        "graph": graph,
        "optimizer": opt,
    }


def _feed(towers, data, labels, rng, batch):
    idx = rng.choice(len(data), batch * len(towers), replace=False)
    feed = {}
    for i, tower in enumerate(towers):
        part = idx[i * batch : (i + 1) * batch]
        feed[tower["x"]], feed[tower["y"]] = data[part], labels[part]
    return feed


class StepRate:
    """Steps per second over the last `window` steps (None until two steps are done)."""

    def __init__(self, window=RATE_WINDOW):
        self._times = []
        self._window = window

    def step(self, now=None):
        self._times.append(time.perf_counter() if now is None else now)
        del self._times[: -self._window - 1]

    @property
    def per_s(self):
        if len(self._times) < 3:  # the first step also ships and plans the graph: not a rate
            return None
        steps = len(self._times) - 1
        return steps / (self._times[-1] - self._times[0])


# -- in-graph: one client --------------------------------------------------------------------------------
def train_in_graph(cluster, args, data, labels, progress):
    model = build_in_graph(args.workers, args.ps, seed=args.seed)
    rng = np.random.RandomState(args.seed)
    with tf.Session(cluster.target("worker", 0)) as sess:
        sess.run(tf.global_variables_initializer())
        losses = [t["loss"] for t in model["towers"]]
        for step in range(1, args.steps + 1):
            _, values = sess.run(
                [model["train_op"], losses], _feed(model["towers"], data, labels, rng, args.batch)
            )
            now = time.time()
            for i, value in enumerate(values):
                progress.metric(f"/job:worker/task:{i}", step, float(value), now)
            progress.advance(step)
        return _traced_step(sess, model, data, labels, rng, args.batch)


# -- async: between-graph, one client per worker process ----------------------------------------------
def async_worker(server, task_index, n_ps, steps, batch, seed):
    """The training loop of one worker's own client (runs in the worker task's process).

    The chief (task 0) initialises the shared variables; the others wait (bounded) until they
    can read them. Each then trains until the shared global step reaches `steps`, reporting its
    loss after every step with `tf.report`. Returns the number of steps this worker ran.
    """
    data, labels = spirals(300, seed=seed)
    model = build_replica(task_index, n_ps, seed=seed)
    rng = np.random.RandomState(seed + 1 + task_index)
    tower, global_step = model["towers"][0], model["global_step"]
    with model["graph"].as_default(), tf.Session(server.target) as sess:
        if task_index == 0:
            sess.run(model["init"])
        _wait_until_initialized(sess, model["params"] + [global_step], task_index)
        stale = tf.train.staleness.of(model["train_op"])  # other updates that landed meanwhile
        local_step, step = 0, 0
        while step < steps:
            _, loss, step, staleness = sess.run(
                [model["train_op"], tower["loss"], global_step, stale],
                _feed([tower], data, labels, rng, batch),
            )
            local_step += 1
            tf.report(step=int(step), loss=float(loss), local_step=local_step, staleness=int(staleness))
    return local_step


def sync_worker(server, task_index, n_ps, steps, batch, seed, aggregate, total):
    """One worker's client in synchronous training (runs in the worker task's process).

    A `MonitoredTrainingSession` with the SyncReplicasOptimizer's hook and a `StopAtStepHook`:
    the chief initialises and runs the queue runner that applies the averaged gradients; when
    it stops it closes the token queue, and every other worker stops cleanly. Each step
    reports its loss and whether this worker's gradient was dropped (it came too late).
    Returns the number of steps this worker ran.
    """
    data, labels = spirals(300, seed=seed)
    model = build_replica(task_index, n_ps, seed=seed, sync=(aggregate, total))
    rng = np.random.RandomState(seed + 1 + task_index)
    tower, global_step = model["towers"][0], model["global_step"]
    with model["graph"].as_default():
        dropped = tf.train.staleness.dropped_of(model["train_op"])
        hooks = [
            model["optimizer"].make_session_run_hook(task_index == 0),
            tf.train.StopAtStepHook(last_step=steps),
        ]
        local_step = 0
        with tf.train.MonitoredTrainingSession(
            master=server.target, is_chief=task_index == 0, hooks=hooks
        ) as sess:
            while not sess.should_stop():
                _, loss, step, lost = sess.run(
                    [model["train_op"], tower["loss"], global_step, dropped],
                    _feed([tower], data, labels, rng, batch),
                )
                local_step += 1
                tf.report(step=int(step), loss=float(loss), local_step=local_step, dropped=int(lost))
    return local_step


def _wait_until_initialized(sess, variables, task_index):
    deadline = time.monotonic() + INIT_WAIT_S
    while True:
        try:
            sess.run(variables)
            return
        except tf.errors.FailedPreconditionError:
            if time.monotonic() > deadline:
                raise tf.errors.DeadlineExceededError(
                    None,
                    None,
                    f"worker {task_index} waited {INIT_WAIT_S:.0f} s for the chief (/job:worker/task:0) "
                    "to initialise the variables on the ps; is the chief running?",
                ) from None
            time.sleep(0.05)


def train_async(cluster, args, data, labels, progress):
    return _between_graph(cluster, args, data, labels, progress, "async_worker", [])


def train_sync(cluster, args, data, labels, progress):
    if args.backup_workers >= args.workers:
        raise SystemExit(
            f"--backup-workers {args.backup_workers}: must be fewer than --workers {args.workers}"
        )
    extra = [args.workers - args.backup_workers, args.workers]
    return _between_graph(cluster, args, data, labels, progress, "sync_worker", extra)


def _between_graph(cluster, args, data, labels, progress, worker_fn, extra):
    unsubscribe = cluster.events.subscribe(progress.event)
    tasks = [("worker", i, cluster.cluster_spec.task_address("worker", i)) for i in range(args.workers)]
    call = json.dumps([args.ps, args.steps, args.batch, args.seed, *extra])
    code = f"from nbdist import demo\ndemo.{worker_fn}(server, task_index, *{call})"
    try:
        results = task_exec.run_cell(tasks, code, cluster.key, streams=progress.streams)
    finally:
        time.sleep(0.2)  # the last reports are still in flight on the event channel
        unsubscribe()
    progress.note("steps per worker: " + ", ".join(f"{k} {v}" for k, v in sorted(results.items())))
    # The traced step: worker 0's graph, run once more from this process after training
    # (the variables live on the ps, so this client sees what the workers trained).
    model = build_replica(0, args.ps, seed=args.seed)
    with model["graph"].as_default(), tf.Session(cluster.target("worker", 0)) as sess:
        return _traced_step(sess, model, data, labels, np.random.RandomState(args.seed), args.batch)


def _traced_step(sess, model, data, labels, rng, batch):
    """One more training step with ``FULL_TRACE``; returns (RunMetadata, accuracy on all data).

    The step runs once untraced first, so the traced one is a steady-state step (its partitions
    already registered), like every step of the training loop.
    """
    fetches = [model["train_op"], [t["loss"] for t in model["towers"]]]
    sess.run(fetches, _feed(model["towers"], data, labels, rng, batch))
    md = tf.RunMetadata()
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    sess.run(fetches, _feed(model["towers"], data, labels, rng, batch), options=options, run_metadata=md)
    tower = model["towers"][0]
    return md, float(sess.run(tower["accuracy"], {tower["x"]: data, tower["y"]: labels}))


MODES = {"in-graph": train_in_graph, "async": train_async, "sync": train_sync}


# -- progress ---------------------------------------------------------------------------------------------
class Progress:
    """The progress bar (tqdm) and the metrics history the report draws, fed from any thread."""

    def __init__(self, total, file, out):
        from tqdm import tqdm  # noqa: PLC0415 - only the command needs it

        self.history = charts.MetricsHistory()
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
            desc="training",
            mininterval=0.2,
        )
        self._out = out
        self.streams = {"stdout": file, "stderr": file}

    def metric(self, task, step, loss, now):
        self.history.add(
            {"kind": "metric", "task": task, "step": step, "time": now, "metrics": {"loss": loss}}
        )
        with self._lock:
            self._losses[task] = loss

    def event(self, event):
        """An event from the cluster's stream (async mode): a worker's `tf.report`."""
        if event.get("kind") != "metric" or not self.history.add(event):
            return
        loss = event.get("metrics", {}).get("loss")
        with self._lock:
            if loss is not None:
                self._losses[event["task"]] = loss
        self.advance(event.get("step") or 0)

    def advance(self, step):
        with self._lock:
            if step <= self.step:
                return
            for _ in range(step - self.step):
                self.rate.step()
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
    return p


def _positive(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def main(argv=None, out=None, prog="python -m nbdist.demo"):
    """Runs the demo; returns the exit code (0 done, 130 interrupted by Ctrl-C)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser(prog).parse_args(argv)
    out = out or sys.stdout
    bar_file = sys.stderr if out is sys.stdout else out
    cluster = progress = None
    try:
        started = time.perf_counter()
        with LocalCluster(ps=args.ps, worker=args.workers) as cluster:
            print(
                f"cluster ready in {time.perf_counter() - started:.2f} s: "
                f"{args.ps} ps, {args.workers} workers",
                file=out,
            )
            for (job, index), pid in sorted(cluster.pids.items()):
                print(
                    f"  /job:{job}/task:{index}  pid {pid}  {cluster.cluster_spec.task_address(job, index)}",
                    file=out,
                )
            data, labels = spirals(300, seed=args.seed)
            progress = Progress(args.steps, bar_file, out)
            t0 = time.perf_counter()
            md, accuracy = MODES[args.mode](cluster, args, data, labels, progress)
            elapsed = time.perf_counter() - t0
            progress.close()
            rate = progress.rate.per_s
            print(
                f"{args.mode}: trained {progress.step} global steps in {elapsed:.1f} s"
                + (
                    f" ({rate:.1f} steps/s over the last {min(progress.step - 1, RATE_WINDOW)} steps)"
                    if rate
                    else ""
                )
                + f"; accuracy {accuracy:.1%}",
                file=out,
            )
            if not args.no_report:
                path = _write_report(args, argv, md, progress, elapsed, accuracy, cluster)
                print(f"report: {path}", file=out)
        print("cluster stopped.", file=out, flush=True)
        return 0
    except KeyboardInterrupt:
        if progress is not None:
            progress.close()
        if cluster is not None:
            cluster.stop()  # idempotent: the with-block may have stopped it already
        where = f" at step {progress.step}" if progress is not None else ""
        print(f"\ninterrupted{where}: cluster stopped.", file=out, flush=True)
        return EXIT_INTERRUPTED


def _write_report(args, argv, md, progress, elapsed, accuracy, cluster):
    what = {
        "in-graph": "in-graph replication: one client, one tower per worker, gradients averaged on the ps",
        "async": "between-graph replication, asynchronous: each worker task its own client",
        "sync": f"between-graph replication, synchronous (SyncReplicasOptimizer, "
        f"{args.workers - args.backup_workers} of {args.workers} gradients per step)",
    }[args.mode]
    facts = {
        "mode": what,
        "cluster": ", ".join(f"/job:{j}/task:{i} {a}" for j, i, a in cluster.cluster_spec.iter_tasks()),
        "training": f"{progress.step} global steps in {elapsed:.1f} s, "
        f"batch {args.batch} per worker, seed {args.seed}",
        "steps/s": f"{progress.rate.per_s:.1f} (last {RATE_WINDOW} steps)" if progress.rate.per_s else "-",
        "accuracy": f"{accuracy:.1%} on all {3 * 300} examples",
        "traced step": {
            "in-graph": "the one client's step: every tower, the averaging and the update",
            "async": "worker 0's graph (each worker's client builds its own), run once more from "
            "this process after training",
            "sync": "worker 0's forward and backward pass with a plain (asynchronous) update, run "
            "once more from this process after training (a synchronous step needs every replica)",
        }[args.mode],
        "options": " ".join(argv) or "(the defaults)",
    }
    html_text = run_report.run_report_html(
        md, progress.history, title=f"nbdist demo · {args.mode}", facts=facts
    )
    path = Path(args.report).expanduser().resolve()
    path.write_text(html_text, encoding="utf-8")
    return path


if __name__ == "__main__":
    sys.exit(main())
