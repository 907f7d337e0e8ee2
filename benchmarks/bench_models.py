"""Training an MNIST-shaped MLP and CNN across processes: nbdist against real TF, in the same run.

The program is ``examples/mnist_mlp_distributed.py`` (TF's ``mnist_replica.py`` model: 784 ->
hidden ReLU -> 10, softmax cross-entropy, Adam; seeded synthetic MNIST-shaped data, each
worker its own batches), in two sizes - "784-100-10" (batch 100) and "784-1000-10" (batch
256) - and its ``--model cnn`` (size "cnn-8-16", batch 64: a `tf.layers` CNN, two conv layers
of 8 and 16 5x5 filters with 2x2 max pooling, dropout and a dense head; async and sync only) -
in four ways of running it, every task its own process on 127.0.0.1 started as a
TF 1.x tutorial is run (``--job_name``/``--task_index``, the ps in ``server.join()``):

    async     between-graph, asynchronous: 1 ps + 2 workers, each its own MonitoredTrainingSession
    sync      the same with SyncReplicasOptimizer (2 of 2) and its hook
    in-graph  1 ps + 2 workers that only serve; one client process, a tower per worker,
              the averaged gradients applied once per step
    async-4w  asynchronous with 4 workers (on however many cores the machine has)

Both libraries run with their defaults, as users run them: TF without a ConfigProto (its own
thread pools), nbdist as installed; neither OPENBLAS_NUM_THREADS nor OMP_NUM_THREADS is set
here (a caller's are inherited, and printed). nbdist and TF alternate within each row (round
1 nbdist first, round 2 TF first, ...); each figure is the median of the rounds (a round that
failed is left out, and the output says of how many rounds the median is).

Reported per row: global steps per second while every worker trains (from the last worker's
first step to the first worker's last: each worker prints when its first step ended, at
which global step); and the time from the start of the chief's training (the in-graph
client's) until the running mean of its last 50 losses first fell below the row's target
loss. Both libraries start from the same initial weights and see the same data: synchronous
and in-graph runs follow the same trajectory, step for step, and differ only in time. An
asynchronous run's loss falls per global step at a rate that depends on how stale the
gradients are (computed from weights that other workers' updates have since changed), and
that depends on how the library schedules the workers' steps: a faster step is not always a
faster fall of the loss, hence both figures. The targets (`SIZES`, or ``--targets``) are
printed with the table.

TF's synchronous workers may wait for ever on the token queue once another has stopped (TF's
behaviour; either the chief or the other worker): once one worker has finished, the others
get `GRACE_S`, then are killed by PID and counted as hung; the figures come from what every
worker printed. Every process is killed by its PID at the end of its run, and on any failure.

    python benchmarks/bench_models.py                       # all modes and sizes, 3 rounds
    python benchmarks/bench_models.py --no-tf --rounds 1 --modes async,sync --sizes 784-100-10
    python benchmarks/bench_models.py --rounds 1 --steps 200 --targets 784-100-10=2.25,784-1000-10=2.0
    python benchmarks/bench_models.py --sizes cnn-8-16                   # the CNN's rows (async, sync)
"""

import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_training import ROOT, _ports

SCRIPT = ROOT / "examples" / "mnist_mlp_distributed.py"
# size: the MLP's hidden units, batch per worker (tower), global steps per run, target loss. The
# loss starts near ln 10 = 2.30; the targets are what the slowest learner here (asynchronous, 4
# workers: see the module docstring) reaches in about 2/3 (small) and 4/5 (large) of the steps.
# The CNN learns the teacher (an MLP on unstructured pixels) slowly: its 50-step mean loss
# passes 2.285 after a few hundred global steps in either library.
SIZES = {
    "784-100-10": {"model": "mlp", "hidden": 100, "batch_size": 100, "steps": 2000, "target": 2.1},
    "784-1000-10": {"model": "mlp", "hidden": 1000, "batch_size": 256, "steps": 1500, "target": 2.15},
    "cnn-8-16": {
        "model": "cnn",
        "batch_size": 64,
        "steps": 1200,
        "target": 2.285,
        "modes": ("async", "sync"),
    },
}
# mode: worker tasks, the example's flags
MODES = {
    "async": (2, []),
    "sync": (2, ["--sync"]),
    "in-graph": (2, ["--in_graph"]),
    "async-4w": (4, []),
}
LIBS = ("nbdist", "tf")
GRACE_S = 10.0  # how long the other workers may outlive the first to finish (then: hung, killed)
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")

_BEGINS = re.compile(r"training begins @ ([\d.]+) \(global step (\d+)\)")
_TARGET = re.compile(r"below ([\d.]+) after ([\d.]+) s \(global step (\d+)\)")


class RunError(RuntimeError):
    """A run that did not finish as it should: names the process and quotes its output's end."""


class Run:
    """One run of the example: the ps, the workers and (in-graph) the client, each its own
    process with its output in a file under `log_dir`; `wait()` bounds it, `kill()` ends
    every process still running, by its PID."""

    def __init__(self, mode, size, lib, steps, target, log_dir):
        workers, flags = MODES[mode]
        ports = _ports(1 + workers)
        common = [
            sys.executable,
            str(SCRIPT),
            f"--ps_hosts=localhost:{ports[0]}",
            f"--worker_hosts={','.join(f'localhost:{p}' for p in ports[1:])}",
            f"--model={SIZES[size]['model']}",
            *([f"--hidden={SIZES[size]['hidden']}"] if "hidden" in SIZES[size] else []),
            f"--batch_size={SIZES[size]['batch_size']}",
            f"--train_steps={steps}",
            f"--target_loss={target}",
            *flags,
            *(["--tf"] if lib == "tf" else []),
        ]
        tasks = [("ps", 0)] + [("worker", i) for i in range(workers)]
        self.servers, self.clients, self.log_dir = {}, {}, Path(log_dir)
        self.hung = []
        env = dict(os.environ, PYTHONPATH=str(ROOT), TF_CPP_MIN_LOG_LEVEL="3")
        try:
            for job, i in tasks:
                serves = job == "ps" or mode == "in-graph"
                name = f"{job}{i}"
                (self.servers if serves else self.clients)[name] = self._start(
                    name, [*common, f"--job_name={job}", f"--task_index={i}"], env
                )
            if mode == "in-graph":
                self.clients["client"] = self._start("client", common, env)
        except BaseException:
            self.kill()
            raise

    def _start(self, name, argv, env):
        with open(self.log_dir / f"{name}.out", "w") as out, open(self.log_dir / f"{name}.err", "w") as err:
            return subprocess.Popen(argv, stdout=out, stderr=err, env=env, stdin=subprocess.DEVNULL)

    def output(self, name, kind="out"):
        return (self.log_dir / f"{name}.{kind}").read_text(errors="replace")

    def _failure(self, name, what):
        tail = self.output(name, "err")[-3000:]
        return RunError(f"{name} {what}; the end of its stderr:\n{tail}")

    def wait(self, timeout_s):
        """Until every client has exited (the first with status 0 starts the others' grace),
        within `timeout_s`. Raises `RunError` if a process exits with an error, a server
        exits at all, or the run outlives its bound; a client past its grace is killed and
        listed in ``self.hung``."""
        deadline = time.monotonic() + timeout_s
        while True:
            for name, proc in self.servers.items():
                if proc.poll() is not None:
                    raise self._failure(name, f"(a server) exited with status {proc.returncode}")
            running = []
            for name, proc in self.clients.items():
                code = proc.poll()
                if code is None:
                    running.append(name)
                elif code != 0:
                    raise self._failure(name, f"exited with status {code}")
            if not running:
                return
            if len(running) < len(self.clients):  # one has finished: the others get a grace
                deadline = min(deadline, time.monotonic() + GRACE_S)
            if time.monotonic() > deadline:
                if len(running) == len(self.clients):
                    raise self._failure(
                        running[0], f"still running after {timeout_s:.0f} s (the run's bound)"
                    )
                for name in running:
                    self.clients[name].kill()
                    self.clients[name].wait()
                self.hung = running
                return
            time.sleep(0.05)

    def kill(self):
        for proc in [*self.clients.values(), *self.servers.values()]:
            if proc.poll() is None:
                proc.kill()
            proc.wait()

    def result(self):
        """``{"steps_per_s", "window_steps", "time_to_target_s", "hung"}`` from what the clients printed."""
        begins, reports, target = {}, {}, None
        for name in self.clients:
            text = self.output(name)
            m = _BEGINS.search(text)
            if m:
                begins[name] = (float(m.group(1)), int(m.group(2)))
            lines = [line for line in text.splitlines() if line.startswith("{")]
            if lines:
                reports[name] = json.loads(lines[-1])
            if name in ("worker0", "client"):
                m = _TARGET.search(text)
                target = float(m.group(2)) if m else None
        if len(begins) < len(self.clients):
            missing = sorted(set(self.clients) - set(begins))
            raise self._failure(missing[0], "never reported its first step")
        if not reports:
            raise RunError(f"no client printed its JSON line (hung: {self.hung})")
        t0, step0 = max(begins.values())  # the last worker's first step: from here all train
        first_done = min(reports.values(), key=lambda r: r["ended"])
        t1, step1 = first_done["ended"], first_done["global_step"] - 1  # (as read in its last step)
        return {
            "steps_per_s": (step1 - step0) / (t1 - t0) if t1 > t0 else float("nan"),
            "window_steps": step1 - step0,
            "time_to_target_s": target,
            "hung": self.hung,
        }


def run_once(mode, size, lib, steps, target, timeout_s):
    with tempfile.TemporaryDirectory(prefix="bench_models_") as log_dir:
        run = Run(mode, size, lib, steps, target, log_dir)
        try:
            run.wait(timeout_s)
            return run.result()
        finally:
            run.kill()


def _fmt(value, spec):
    return "-" if value is None or math.isnan(value) else format(value, spec)


def _median(values):
    """Median of the rounds' figures; None if there are none, or if a round that ran has none (its
    target not reached: the median time is then unknown). Failed rounds are left out."""
    return statistics.median(values) if values and None not in values else None


def _ratio(ours, theirs):
    return ours / theirs if ours is not None and theirs else None


def parse_targets(text):
    targets = {}
    for item in filter(None, text.split(",")):
        size, _, loss = item.partition("=")
        if size not in SIZES or not loss:
            raise argparse.ArgumentTypeError(
                f"--targets: {item!r} is not SIZE=LOSS with SIZE in {list(SIZES)}"
            )
        targets[size] = float(loss)
    return targets


def _names(choices, option):
    def parse(text):
        names = [n for n in text.split(",") if n]
        unknown = [n for n in names if n not in choices]
        if unknown:
            raise argparse.ArgumentTypeError(f"{option}: unknown {unknown}; expected some of {list(choices)}")
        return names

    return parse


def measure_row(mode, size, libs, rounds, steps, target, timeout_s):
    """`rounds` runs per library, alternating which goes first; prints each round's figures and
    returns each library's medians ``{lib: {"steps_per_s", "time_to_target_s"}}``."""
    figures = {lib: {"steps_per_s": [], "time_to_target_s": []} for lib in libs}
    for round_ in range(rounds):
        line = [f"{mode} {size} round {round_ + 1}:"]
        for lib in libs if round_ % 2 == 0 else libs[::-1]:
            try:
                res = run_once(mode, size, lib, steps, target, timeout_s)
            except RunError as e:
                print(f"{mode} {size} {lib} FAILED: {e}", flush=True)
                line.append(f"{lib} failed")
                continue
            hung = f", {len(res['hung'])} hung worker(s) killed" if res["hung"] else ""
            short = " (SHORT window)" if res["window_steps"] < steps // 2 else ""
            line.append(
                f"{lib} {res['steps_per_s']:.1f} steps/s over {res['window_steps']} steps{short}, "
                f"loss < {target} after {_fmt(res['time_to_target_s'], '.2f')} s{hung}"
            )
            for key, values in figures[lib].items():
                values.append(res[key])
        print("  ".join(line), flush=True)
    for lib, f in figures.items():
        ran = len(f["steps_per_s"])  # (a failed round adds no figure)
        if ran < rounds:
            print(f"{mode} {size} {lib}: the median is of {ran} round(s); {rounds - ran} failed", flush=True)
    return {lib: {key: _median(values) for key, values in f.items()} for lib, f in figures.items()}


def print_table(rows):
    print()
    print("global steps/s while every worker trains; s until the chief's 50-step mean loss < target")
    print("(steps/s ratio > 1 and time ratio < 1: nbdist faster)")
    columns = ["mode", "size", "steps", "nbdist steps/s", "TF steps/s", "nbdist/TF"]
    columns += ["target loss", "nbdist s", "TF s", "nbdist/TF"]
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for mode, size, steps, target, med in rows:
        ours, theirs = med["nbdist"], med.get("tf", {"steps_per_s": None, "time_to_target_s": None})
        cells = [mode, size, steps]
        for key, spec in (("steps_per_s", ".1f"), ("time_to_target_s", ".2f")):
            if key == "time_to_target_s":
                cells.append(target)
            ratio = _ratio(ours[key], theirs[key])
            cells += [_fmt(ours[key], spec), _fmt(theirs[key], spec), _fmt(ratio, ".2f")]
        print("| " + " | ".join(map(str, cells)) + " |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="runs per library and row (median reported)")
    default_steps = ",".join(f"{s}={v['steps']}" for s, v in SIZES.items())
    parser.add_argument("--steps", type=int, help=f"global steps per run (default: {default_steps})")
    parser.add_argument("--modes", type=_names(MODES, "--modes"), default=list(MODES), help=",".join(MODES))
    parser.add_argument("--sizes", type=_names(SIZES, "--sizes"), default=list(SIZES), help=",".join(SIZES))
    default_targets = ",".join(f"{s}={v['target']}" for s, v in SIZES.items())
    parser.add_argument(
        "--targets", type=parse_targets, default={}, help=f"SIZE=LOSS,... (default: {default_targets})"
    )
    parser.add_argument("--no-tf", action="store_true", help="skip real TensorFlow")
    parser.add_argument(
        "--timeout", type=float, help="bound of one run, seconds (default: 120 + 0.2 per step)"
    )
    args = parser.parse_args()
    libs = ["nbdist"] if args.no_tf else list(LIBS)
    threads = ", ".join(f"{v}={os.environ.get(v, 'unset')}" for v in THREAD_VARIABLES)
    print(f"{os.cpu_count()} CPUs; {threads} (not set by this benchmark, for either library)")
    if not args.no_tf:
        print("TF: its defaults (no ConfigProto: its own intra-/inter-op thread pools)")
    print(f"{args.rounds} round(s), nbdist and TF alternating; figures are medians", flush=True)
    rows = []
    for size in args.sizes:
        steps = args.steps or SIZES[size]["steps"]
        target = args.targets.get(size, SIZES[size]["target"])
        for mode in [m for m in args.modes if m in SIZES[size].get("modes", MODES)]:
            timeout_s = args.timeout or 120 + 0.2 * steps
            rows.append(
                (
                    mode,
                    size,
                    steps,
                    target,
                    measure_row(mode, size, libs, args.rounds, steps, target, timeout_s),
                )
            )
    print_table(rows)


if __name__ == "__main__":
    main()
