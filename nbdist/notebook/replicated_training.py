"""One small model trained on a `LocalCluster`, replicated one of three ways.

What `nbdist demo` (the command) and `nbdist.Playground()` (the widget) both run: a
classifier of three interleaved spirals whose variables live on the ps tasks, trained by
the worker tasks.

- ``in-graph``: one client (the calling process) builds one graph with a copy of the model
  on every worker task (a *tower*); each tower computes gradients on its share of the batch,
  and the ps averages them and applies one update per step.
- ``async``: between-graph replication. Every worker task runs its own client in its own
  process (the cell-execution path of ``%%dtf_worker``): it builds its own graph with the
  same variables on the ps, and applies its gradients as soon as it has them.
- ``sync``: the same clients, with ``tf.train.SyncReplicasOptimizer`` in a
  ``MonitoredTrainingSession``: every global step averages the gradients of
  ``workers - backup_workers`` replicas; the late ones (backup workers) are dropped and counted.

    settings = Settings(mode="sync", workers=3, backup_workers=1, steps=40, straggler_ms=200)
    with settings.start_cluster() as cluster:
        result = train(cluster, settings, on_event=print)

Progress arrives as metric events (``{"kind": "metric", "task", "step", "time",
"metrics": {"loss", ...}}``, the `nbdist.report` form) on `on_event`, from whichever thread
sees them; a `threading.Event` passed as `stop` ends the run early at the next step.
"""

import dataclasses
import json
import time

import numpy as np

import nbdist as tf
from nbdist.in_task.publisher import trace_event
from nbdist.notebook import task_exec
from nbdist.notebook.local_cluster import LocalCluster

MODES = ("in-graph", "async", "sync")
INIT_WAIT_S = 30.0  # how long a non-chief worker waits for the chief to initialise the variables
EXAMPLES_PER_CLASS = 300
EVENTS_IN_FLIGHT_S = 0.2  # after the workers finished, their last reports may still be on the way


@dataclasses.dataclass(frozen=True)
class Settings:
    """What one training run is: the cluster, the replication mode and the training loop.

    Args:
        mode: ``"in-graph"``, ``"async"`` or ``"sync"`` (see the module docstring).
        workers: worker tasks (one replica each).
        ps: parameter-server tasks; the variables are dealt out over them round-robin.
        steps: global training steps.
        backup_workers: sync only: this many of the workers' gradients per step are not
            waited for (the late ones are dropped); must be fewer than `workers`.
        batch: examples per worker per step.
        seed: seed of the data, the initial weights and the batches.
        straggler_ms: the last worker task (``/job:worker/task:<workers-1>``) waits this long
            before every piece of a step it runs (`LocalCluster`'s ``delays_ms``); 0: none.

    Raises:
        ValueError: an unknown mode, a count below 1, a negative delay, or as many backup
            workers as workers in sync mode.
    """

    mode: str = "in-graph"
    workers: int = 2
    ps: int = 1
    steps: int = 300
    backup_workers: int = 0
    batch: int = 64
    seed: int = 0
    straggler_ms: float = 0.0

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}; got {self.mode!r}")
        for name in ("workers", "ps", "steps", "batch"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.straggler_ms < 0:
            raise ValueError(f"straggler_ms must be 0 (no straggler) or more, got {self.straggler_ms!r}")
        if self.mode == "sync" and not 0 <= self.backup_workers < self.workers:
            raise ValueError(
                f"backup_workers={self.backup_workers}: must be 0 or more and fewer than "
                f"workers={self.workers} (each step needs at least one gradient)"
            )

    @property
    def aggregated(self):
        """Gradients averaged per global step: every worker's, less the backups in sync mode."""
        return self.workers - self.backup_workers if self.mode == "sync" else self.workers

    @property
    def straggler(self):
        """The straggling task's name (``"/job:worker/task:2"``), or None."""
        return f"/job:worker/task:{self.workers - 1}" if self.straggler_ms else None

    def start_cluster(self):
        """Starts the `LocalCluster` these settings train on (the straggler slowed)."""
        delays = {("worker", self.workers - 1): self.straggler_ms} if self.straggler_ms else None
        return LocalCluster(ps=self.ps, worker=self.workers, delays_ms=delays)

    def describe(self):
        """One line, e.g. ``sync · 1 ps · 3 workers (1 backup) · straggler worker:2 +200 ms``."""
        workers = f"{self.workers} worker{'s' * (self.workers != 1)}"
        if self.mode == "sync" and self.backup_workers:
            workers += f" ({self.backup_workers} backup)"
        text = f"{self.mode} · {self.ps} ps · {workers}"
        if self.straggler_ms:
            text += f" · straggler worker:{self.workers - 1} +{self.straggler_ms:g} ms"
        return text


@dataclasses.dataclass
class Result:
    """What a run left behind.

    Attributes:
        steps_per_worker: between-graph modes: ``{"worker:0": local steps, ...}``; else None.
        accuracy: on all the data after training (None when stopped early).
        run_metadata: the traced step when asked for (``trace=True``): in-graph, the client's
            `tf.RunMetadata`; between-graph, the chief worker's own step as a ``trace`` event
            dict (`nbdist.in_task.publisher.trace_event`), drawn alike by the graph, placement and
            timeline views.
        stopped: True when `stop` ended the run before its last step.
        global_step: the global step after training, read from the ps (the metric events carry
            the value each step read, which in sync training is the one before its update).
    """

    steps_per_worker: dict = None
    accuracy: float = None
    run_metadata: object = None
    stopped: bool = False
    global_step: int = None


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


def build_in_graph(n_workers, n_ps, learning_rate=0.05, seed=0, graph=None):
    """In-graph replication: one tower per worker task, gradients averaged where each variable
    lives. Builds into `graph` (default: a new one), never touching the caller's default graph."""
    graph = graph or tf.Graph()
    with graph.as_default():
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
        init = tf.global_variables_initializer()
    return {
        "towers": towers,
        "train_op": train_op,
        "global_step": global_step,
        "params": params,
        "init": init,
        "graph": graph,
    }


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


# -- the run ---------------------------------------------------------------------------------------------
def train(cluster, settings, on_event, stop=None, streams=None, trace=False):
    """Trains on `cluster` (started by ``settings.start_cluster()``) as `settings` say.

    Args:
        cluster: a running `LocalCluster` with ``settings.ps`` ps and ``settings.workers`` workers.
        settings: a `Settings`.
        on_event: called with every metric event (any thread; must return quickly).
        stop: a `threading.Event`; once set, the run ends at the next step (the between-graph
            clients are interrupted) and the result says ``stopped``.
        streams: ``{"stdout": file, "stderr": file}`` for the worker clients' output.
        trace: trace one training step (`Result.run_metadata`): in-graph, one more step after
            training; between-graph, one of the chief worker's own steps from the middle of
            training on (`StepTracer`), so a sync trace shows the accumulators and token queue.

    Returns:
        A `Result`.
    """
    data, labels = spirals(EXAMPLES_PER_CLASS, seed=settings.seed)
    if settings.mode == "in-graph":
        return _train_in_graph(cluster, settings, data, labels, on_event, stop, trace)
    return _between_graph(cluster, settings, data, labels, on_event, stop, streams, trace)


def _train_in_graph(cluster, settings, data, labels, on_event, stop, trace):
    model = build_in_graph(settings.workers, settings.ps, seed=settings.seed)
    rng = np.random.RandomState(settings.seed)
    with model["graph"].as_default(), tf.Session(cluster.target("worker", 0)) as sess:
        sess.run(model["init"])
        losses = [t["loss"] for t in model["towers"]]
        for step in range(1, settings.steps + 1):
            if stop is not None and stop.is_set():
                return Result(stopped=True)
            feed = _feed(model["towers"], data, labels, rng, settings.batch)
            _, values = sess.run([model["train_op"], losses], feed)
            now = time.time()
            for i, value in enumerate(values):
                on_event(_metric(f"/job:worker/task:{i}", step, now, loss=float(value)))
        return _finish(sess, model, data, labels, rng, settings.batch, trace, Result())


def _metric(task, step, now, **metrics):
    return {"kind": "metric", "task": task, "step": step, "time": now, "metrics": metrics}


def _between_graph(cluster, settings, data, labels, on_event, stop, streams, trace):
    """Every worker task runs its own client: `async_worker` or `sync_worker`, sent to it as a
    ``%%dtf_worker``-style cell; their `tf.report` events come back on the cluster's stream."""
    unsubscribe = cluster.events.subscribe(on_event, kind="metric")
    tasks = [("worker", i, cluster.cluster_spec.task_address("worker", i)) for i in range(settings.workers)]
    kwargs = {"n_ps": settings.ps, "steps": settings.steps, "batch": settings.batch, "seed": settings.seed}
    if settings.mode == "sync":
        worker_fn = "sync_worker"
        kwargs.update(aggregate=settings.aggregated, total=settings.workers)
    else:
        worker_fn = "async_worker"
    call = f"run.{worker_fn}(server, task_index, trace={bool(trace)}, **{json.dumps(kwargs)})"
    code = f"import {__name__} as run\n{call}"
    try:
        results = task_exec.run_cell(tasks, code, cluster.key, streams=streams, cancel=stop)
    except tf.errors.CancelledError:
        return Result(stopped=True)
    finally:
        time.sleep(EVENTS_IN_FLIGHT_S)
        unsubscribe()
    result = Result(
        steps_per_worker={task: r["local_steps"] for task, r in sorted(results.items())},
        run_metadata=results["worker:0"]["trace"] if trace else None,
    )
    # Accuracy: worker 0's graph, run from this process after training (the variables live on
    # the ps, so this client sees what the workers trained).
    model = build_replica(0, settings.ps, seed=settings.seed)
    with model["graph"].as_default(), tf.Session(cluster.target("worker", 0)) as sess:
        rng = np.random.RandomState(settings.seed)
        return _finish(sess, model, data, labels, rng, settings.batch, False, result)


def _finish(sess, model, data, labels, rng, batch, trace, result):
    """Fills in the global step, the accuracy on all the data and, when asked, the traced
    step's metadata (its step comes after the global step was read)."""
    result.global_step = int(sess.run(model["global_step"]))
    if trace:
        result.run_metadata = _traced_step(sess, model, data, labels, rng, batch)
    tower = model["towers"][0]
    result.accuracy = float(sess.run(tower["accuracy"], {tower["x"]: data, tower["y"]: labels}))
    return result


def _traced_step(sess, model, data, labels, rng, batch):
    """One more training step with ``FULL_TRACE``; returns its `tf.RunMetadata`.

    The step runs once untraced first, so the traced one is a steady-state step (its partitions
    already registered), like every step of the training loop.
    """
    fetches = [model["train_op"], [t["loss"] for t in model["towers"]]]
    sess.run(fetches, _feed(model["towers"], data, labels, rng, batch))
    md = tf.RunMetadata()
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    sess.run(fetches, _feed(model["towers"], data, labels, rng, batch), options=options, run_metadata=md)
    return md


# -- the worker clients (run in the worker tasks' processes) ----------------------------------------------
def async_worker(server, task_index, n_ps, steps, batch, seed, trace=False):
    """The training loop of one worker's own client (runs in the worker task's process).

    The chief (task 0) initialises the shared variables; the others wait (bounded) until they
    can read them. Each then trains until the shared global step reaches `steps`, reporting its
    loss after every step with `tf.report`. Returns ``{"local_steps": steps this worker ran,
    "trace": the chief's traced step (`StepTracer`) or None}``.
    """
    data, labels = spirals(EXAMPLES_PER_CLASS, seed=seed)
    model = build_replica(task_index, n_ps, seed=seed)
    rng = np.random.RandomState(seed + 1 + task_index)
    tower, global_step = model["towers"][0], model["global_step"]
    with model["graph"].as_default(), tf.Session(server.target) as sess:
        if task_index == 0:
            sess.run(model["init"])
        _wait_until_initialized(sess, model["params"] + [global_step], task_index)
        stale = tf.train.staleness.of(model["train_op"])  # other updates that landed meanwhile
        tracer = StepTracer(steps if trace and task_index == 0 else None)
        local_step, step = 0, 0
        while step < steps:
            _, loss, step, staleness = sess.run(
                [model["train_op"], tower["loss"], global_step, stale],
                _feed([tower], data, labels, rng, batch),
                **tracer.run_kwargs(step),
            )
            tracer.ran(step)
            local_step += 1
            tf.report(step=int(step), loss=float(loss), local_step=local_step, staleness=int(staleness))
    return {"local_steps": local_step, "trace": tracer.event}


def sync_worker(server, task_index, n_ps, steps, batch, seed, aggregate, total, trace=False):
    """One worker's client in synchronous training (runs in the worker task's process).

    A `MonitoredTrainingSession` with the SyncReplicasOptimizer's hook and a `StopAtStepHook`:
    the chief initialises and runs the queue runner that applies the averaged gradients; when
    it stops it closes the token queue, and every other worker stops cleanly. Each step
    reports its loss and whether this worker's gradient was dropped (it came too late).
    Returns ``{"local_steps": steps this worker ran, "trace": the chief's traced step
    (`StepTracer`: its gradients into the accumulators, its token from the queue) or None}``.
    """
    data, labels = spirals(EXAMPLES_PER_CLASS, seed=seed)
    model = build_replica(task_index, n_ps, seed=seed, sync=(aggregate, total))
    rng = np.random.RandomState(seed + 1 + task_index)
    tower, global_step = model["towers"][0], model["global_step"]
    with model["graph"].as_default():
        dropped = tf.train.staleness.dropped_of(model["train_op"])
        hooks = [
            model["optimizer"].make_session_run_hook(task_index == 0),
            tf.train.StopAtStepHook(last_step=steps),
        ]
        tracer = StepTracer(steps if trace and task_index == 0 else None)
        local_step, step = 0, 0
        with tf.train.MonitoredTrainingSession(
            master=server.target, is_chief=task_index == 0, hooks=hooks
        ) as sess:
            while not sess.should_stop():
                _, loss, step, lost = sess.run(
                    [model["train_op"], tower["loss"], global_step, dropped],
                    _feed([tower], data, labels, rng, batch),
                    **tracer.run_kwargs(step),
                )
                tracer.ran(step)
                local_step += 1
                tf.report(step=int(step), loss=float(loss), local_step=local_step, dropped=int(lost))
    return {"local_steps": local_step, "trace": tracer.event}


class StepTracer:
    """Traces one step of a worker's training loop: the first from the middle of training on.

    A steady-state step (its partitions registered long before, the queues and accumulators
    busy with every replica's work), not the first or the last. ``StepTracer(None)`` traces
    nothing (a worker that is not asked to).

        tracer = StepTracer(steps)
        while ...:
            step = sess.run(fetches, feed, **tracer.run_kwargs(step))[...]
            tracer.ran(step)
        tracer.event  # a ``trace`` event dict (`trace_event`), or None
    """

    def __init__(self, steps):
        self._from_step = None if steps is None else steps // 2  # the middle of training
        self._md = None
        self.event = None

    def run_kwargs(self, global_step):
        """``sess.run`` keyword arguments for the next step (tracing it, or not), given the
        global step the previous one returned."""
        if self._from_step is None or self.event is not None or global_step < self._from_step:
            self._md = None
            return {}
        self._md = tf.RunMetadata()
        return {"options": tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), "run_metadata": self._md}

    def ran(self, global_step):
        """The step `run_kwargs` was asked for ran and returned `global_step`."""
        if self._md is not None:
            self.event = trace_event(self._md, step=int(global_step))
            self._md = None


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


# -- what a learner should notice --------------------------------------------------------------------------
def what_to_notice(settings, summary, steps_per_worker=None, previous=None):
    """A few plain sentences on a run: how its mode works, what was measured, how it compares
    with the previous run, and what to try next.

    Args:
        settings: the run's `Settings`.
        summary: `nbdist.notebook.run_charts.run_summary` of its metric events.
        steps_per_worker: `Result.steps_per_worker` (between-graph modes), when known.
        previous: ``(settings, summary)`` of the run to compare with, or None.

    Returns:
        A list of sentences.
    """
    lines = [_how_it_works(settings)]
    rate = summary["global_steps_per_s"]
    if summary["global_step"] is not None:
        measured = f"This run: global step {summary['global_step']:.0f} after {summary['duration_s']:.1f} s"
        lines.append(measured + (f", {rate:.1f} global steps/s." if rate else "."))
    lost = _what_was_lost(settings, summary, steps_per_worker)
    if lost:
        lines.append(lost)
    if previous is not None and rate and previous[1]["global_steps_per_s"]:
        before = previous[1]["global_steps_per_s"]
        ratio = rate / before
        pace = f"{ratio:.1f} times as fast" if ratio >= 1 else f"{1 / ratio:.1f} times slower"
        lines.append(
            f"Previous run ({previous[0].describe()}): {before:.1f} global steps/s; this one is {pace}."
        )
    lines.append("Try next: " + _try_next(settings))
    return lines


def _how_it_works(settings):
    straggler = settings.straggler is not None
    if settings.mode == "in-graph":
        return (
            "In-graph: one client runs every worker's tower in one step and the ps averages their "
            "gradients, so a step lasts as long as its slowest tower"
            + (" and the straggler sets the pace." if straggler else ".")
        )
    if settings.mode == "async":
        return (
            "Async: every worker is its own client and applies its gradient as soon as it has it. "
            + ("Nobody waits for the straggler, but " if straggler else "Nobody waits, but ")
            + "an update may come from weights others changed meanwhile: its staleness."
        )
    backup = (
        f" With {settings.backup_workers} backup worker{'s' * (settings.backup_workers > 1)}, a step "
        "does not wait for the slowest gradients: they arrive late and are dropped."
        if settings.backup_workers
        else " Without backup workers a step waits for its last gradient."
    )
    return (
        f"Sync: each global step averages {settings.aggregated} fresh gradients (any worker's; a "
        "gradient computed from an older step is dropped)." + backup
    )


def _what_was_lost(settings, summary, steps_per_worker):
    straggler = settings.straggler
    if settings.mode == "async" and summary["staleness"]:
        values = summary["staleness"]
        text = f"Mean staleness {sum(values) / len(values):.1f} updates (max {max(values):.0f})"
        if straggler and steps_per_worker:
            text += f"; the straggler ran {steps_per_worker.get(f'worker:{settings.workers - 1}', 0)} steps"
        return text + "."
    if settings.mode == "sync" and summary["dropped"]:
        dropped, sent = sum(summary["dropped"].values()), sum(summary["local_steps"].values())
        text = f"{dropped:.0f} of {sent:.0f} gradients dropped"
        if straggler in summary["dropped"]:
            mine = summary["dropped"][straggler]
            text += f", {mine:.0f} of the straggler's {summary['local_steps'][straggler]:.0f}"
        return text + "."
    return None


def _try_next(settings):
    if not settings.straggler:
        return "a straggler (a delay on the last worker), to see who waits for whom."
    if settings.mode == "sync" and not settings.backup_workers:
        return "1 backup worker: the straggler's gradients are dropped instead of waited for."
    if settings.mode == "sync":
        return "0 backup workers (the previous run is kept in grey to compare), or async."
    if settings.mode == "async":
        return "sync, with and without a backup worker: fresh gradients only, at what speed?"
    return "async or sync: between-graph replication, every worker its own client."
