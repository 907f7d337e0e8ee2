"""Training steps/s, nbdist against real TF, on the same between-graph programs in the same run.

Each run starts one ps and two workers as separate processes on 127.0.0.1, exactly as a
TF 1.x tutorial is run (``--job_name``/``--task_index``, the ps in ``server.join()``),
with ``examples/async_linear_regression.py`` (100 features, batch 32, asynchronous) and
``examples/sync_replicas_training.py`` (the same model, SyncReplicasOptimizer 2 of 2).
Reported: async = all workers' local steps per second of training; sync = global steps
per second while both workers train. The ps is killed by PID at the end; TF's non-chief
sync workers hang on the token queue after the chief's last step (TF's behaviour), so they
are killed by PID once the chief has reported.

    python benchmarks/bench_training.py            # both libraries, 3 rounds
    python benchmarks/bench_training.py --no-tf    # nbdist only
    python benchmarks/bench_training.py --wire     # also nbdist without its in-process master
    python benchmarks/bench_training.py --no-links # also nbdist with every message over ZeroMQ
    python benchmarks/bench_training.py --no-batch --tf-batch  # scheduling policies (see --help)
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = {
    "async": ROOT / "examples" / "async_linear_regression.py",
    "sync": ROOT / "examples" / "sync_replicas_training.py",
}


# nbdist with one mechanism turned off, by its environment variable (docs/architecture.md)
CONTENDER_ENV = {
    "nbdist-wire": {"NBDIST_IN_PROCESS": "0"},  # each worker's session reaches its own server over the wire
    "nbdist-zmq": {"NBDIST_LINKS": "0"},  # no links: every message between the processes over ZeroMQ
    "nbdist-nobatch": {"NBDIST_BATCH_IO": "0"},  # serving loops under the default scheduling policy
}


def _ports(n):
    sys.path.insert(0, str(ROOT))  # (run from a checkout without installing)
    from nbdist.runtime.net import samehost

    return samehost.free_ports(n)


def run_once(mode, lib, steps, workers=2, timeout_s=300):
    ports = _ports(1 + workers)
    hosts = [f"localhost:{p}" for p in ports]
    common = [f"--ps_hosts={hosts[0]}", f"--worker_hosts={','.join(hosts[1:])}", f"--train_steps={steps}"]
    if lib.startswith("tf"):
        common.append("--tf")
    env = dict(os.environ, PYTHONPATH=str(ROOT), TF_CPP_MIN_LOG_LEVEL="3", **CONTENDER_ENV.get(lib, {}))
    cmd = [sys.executable, str(SCRIPTS[mode])]
    if lib == "tf-batch":  # TF's every thread under SCHED_BATCH, as nbdist's serving loops: does TF gain too?
        cmd = ["chrt", "--batch", "0", *cmd]
    ps = subprocess.Popen(
        [*cmd, *common, "--job_name=ps", "--task_index=0"], env=env, stderr=subprocess.DEVNULL
    )
    procs = [
        subprocess.Popen(
            [*cmd, *common, "--job_name=worker", f"--task_index={i}"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        for i in range(workers)
    ]
    try:
        results = []
        chief_out, _ = procs[0].communicate(timeout=timeout_s)
        results.append(json.loads(chief_out.strip().splitlines()[-1]))
        for p in procs[1:]:
            try:
                out, _ = p.communicate(timeout=10)
                results.append(json.loads(out.strip().splitlines()[-1]))
            except subprocess.TimeoutExpired:
                results.append(None)  # a TF sync worker waiting for ever on the token queue
        return results
    finally:
        for p in [*procs, ps]:
            if p.poll() is None:
                p.kill()
            p.wait()


def measure(mode, lib, steps, attempts):
    """`run_once`, again while a sync window held under half the steps; ``(results, attempts)``.

    TF's non-chief checks once whether the chief initialized the model, and if not, sleeps
    30 s (`SessionManager`'s `recovery_wait_secs`), while the chief - whose own gradients
    fill every replica's place in `SyncReplicasOptimizer` - trains alone: started together,
    the two overlap in about one run out of two, and a run where they did not measures
    nothing (a window of a step or two). Its figure is then not reported: the run is redone.
    """
    attempt = 1
    results = run_once(mode, lib, steps)
    while mode == "sync" and sync_window_steps(results) < steps // 2 and attempt < attempts:
        attempt += 1
        results = run_once(mode, lib, steps)
    return results, attempt


def steps_per_s(mode, results):
    if mode == "async":
        done = [r for r in results if r]
        return sum(r["local_steps"] for r in done) / max(r["local_steps"] / r["steps_per_s"] for r in done)
    # Global steps per second while every worker trains: from the window of the worker that
    # started last (TF's non-chief polls for the model every 30 s before it starts). Each
    # window starts after that worker's first step, which waits until every replica joined
    # (else TF's chief, the only one to report when its non-chief hangs on the token queue,
    # counted its wait for a late non-chief as training time).
    done = [r for r in results if r and r["elapsed_s"] > 0]
    last = min(done, key=lambda r: r["elapsed_s"])
    return (last["global_step"] - last["first_global_step"]) / last["elapsed_s"]


def sync_window_steps(results):
    """Global steps in the window `steps_per_s` measured sync over (few: a noisy figure)."""
    done = [r for r in results if r and r["elapsed_s"] > 0]
    last = min(done, key=lambda r: r["elapsed_s"])
    return last["global_step"] - last["first_global_step"]


def main():
    parser = argparse.ArgumentParser(description="Training steps/s, nbdist vs TF")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-tf", action="store_true", help="skip real TensorFlow")
    parser.add_argument("--steps", type=int, default=600, help="global steps to train for")
    parser.add_argument(
        "--attempts", type=int, default=4, help="sync: runs of a round until its window is valid (`measure`)"
    )
    parser.add_argument(
        "--wire",
        action="store_true",
        help="also nbdist with NBDIST_IN_PROCESS=0 (a worker's session reaches its own master over the wire)",
    )
    parser.add_argument(
        "--no-links",
        action="store_true",
        help="also nbdist with NBDIST_LINKS=0 (every message over ZeroMQ, none over a link)",
    )
    parser.add_argument(
        "--no-batch",
        action="store_true",
        help="also nbdist with NBDIST_BATCH_IO=0 (serving loops under the default scheduling policy)",
    )
    parser.add_argument(
        "--tf-batch", action="store_true", help="also TF with all its threads under SCHED_BATCH"
    )
    args = parser.parse_args()
    libs = ["nbdist"] + (["nbdist-wire"] if args.wire else []) + (["nbdist-zmq"] if args.no_links else [])
    libs += ["nbdist-nobatch"] if args.no_batch else []
    libs += [] if args.no_tf else ["tf"] + (["tf-batch"] if args.tf_batch else [])
    for mode in ("async", "sync"):
        for round_ in range(args.rounds):
            line = [f"{mode:5s} round {round_ + 1}:"]
            rates = {}
            for lib in libs:  # interleaved, so both see the same load
                results, attempts = measure(mode, lib, args.steps, args.attempts)
                rates[lib] = steps_per_s(mode, results)
                unit = "total steps/s" if mode == "async" else "global steps/s"
                hung = sum(r is None for r in results)
                window = "" if mode == "async" else f" (over {sync_window_steps(results)} global steps)"
                line.append(
                    f"{lib} {rates[lib]:7.1f} {unit}{window}"
                    + (f" ({hung} worker(s) hung, killed)" if hung else "")
                    + (f" (attempt {attempts})" if attempts > 1 else "")
                )
            if "tf" in rates:
                line.append(f"ratio {rates['nbdist'] / rates['tf']:.2f}x")
            print("  ".join(line), flush=True)
            time.sleep(0.5)


if __name__ == "__main__":
    main()
