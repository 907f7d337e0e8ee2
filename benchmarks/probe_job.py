"""Where one training job's time goes: its processes' CPU, page faults and samples, mid-run.

Starts the MNIST MLP example (``examples/mnist_mlp_distributed.py``) as tutorials launch it -
1 ps and N workers, each its own process on 127.0.0.1 with ``--job_name``/``--task_index``
(``--in-graph``: the tasks only serve, and one more process, ``client``, drives a tower per
worker) - waits until every client has trained its first step, then for ``--window`` seconds reads each
process's CPU time and minor page faults from ``/proc/<pid>/stat`` and, when asked, attaches
a profiler to the tasks named (``ps``, ``w0``, ``w1``, ...): ``--py-spy`` (Python stacks, only
while holding the GIL; raw files for flame graphs), ``--perf`` (native stacks: kernels, page
faults, BLAS) or ``--strace`` (system calls counted). Prints the CPU %, faults/s and each
worker's global steps/s; every process is stopped by its PID. ``--timeline S`` records every
task's runtime hops for S seconds (`benchmarks/timeline/sitecustomize.py`) and prints what each
costs (client between steps, client to master, master to the ``RunGraph`` sent, encodes, a
woken loop to its handler, a parked run's advance) with the merged timeline in
``OUT/timeline/timeline.txt``: where a step's latency goes, hop by hop, across processes.
This is how the allocator policy, the shared-memory bar and the relay bypass were found and
checked (docs/benchmarks.md, "Again, after five runtime changes"); runs are single and the
machine's speed drifts, so compare alternating runs, never one against a number from another
hour.

    python benchmarks/probe_job.py                                     # async 784-100-10
    python benchmarks/probe_job.py --hidden 1000 --batch 256 --sync    # the large model, sync
    python benchmarks/probe_job.py --env NBDIST_KEEP_FREED=0           # a mechanism turned off
    python benchmarks/probe_job.py --workers 1 --strace w0             # system calls of a worker
    python benchmarks/probe_job.py --perf ps --py-spy w0 --out /tmp/p  # profiles into /tmp/p
    python benchmarks/probe_job.py --tf                                # the same job on real TF
    python benchmarks/probe_job.py --sync --timeline 0.5               # hop by hop, every task
    python benchmarks/probe_job.py --in-graph --py-spy ps,client        # in-graph, two profiles
"""

import argparse
import collections
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_training import ROOT, _ports

SCRIPT = ROOT / "examples" / "mnist_mlp_distributed.py"
TIMELINE_SITE = Path(__file__).resolve().parent / "timeline"
# (first event, next event, what the gap is, the next event may be another thread's of the same
# process) for `--timeline`'s table
HOPS = [
    ("client.run<", "client.run>", "client: between two steps", False),
    ("client.run>", "master.RunStep>", "client -> its master (I/O thread)", True),
    ("master.RunStep>", "link.write<", "master: RunStep to its first RunGraph written", False),
    ("master.finish>", "client.run<", "master's answer -> client thread", True),
    ("loop.woke", "worker.RunGraph>", "loop woke to the RunGraph handler (decode)", False),
    ("loop.woke", "worker.SendTensor>", "loop woke to the SendTensor handler (decode)", False),
    ("run.advance>", "run.advance<", "a parked run's advance", False),
    ("link.read>", "link.read<", "read a link's bytes", False),
    ("wire.decode>", "wire.decode<", "decode a message", False),
    ("wire.encode> SendTensor", "wire.encode<", "encode a SendTensor", False),
    ("wire.encode> RunGraphResponse", "wire.encode<", "encode a RunGraph reply", False),
    ("shm.put>", "shm.put<", "copy a tensor into shared memory", False),
]
START_TIMEOUT_S = 180  # until every worker's first step (TF imports slowly)
RUN_TIMEOUT_S = 600  # for the whole job


def _cpu_and_faults(pid):
    """(CPU seconds, minor page faults) of process `pid` so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), int(fields[7])


def _profilers(args, procs):
    """The profiler processes asked for, each bounded by the window."""
    out, started = Path(args.out), []
    out.mkdir(parents=True, exist_ok=True)
    w = str(int(args.window))
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))  # (in the venv)
    for tool, names in (("py-spy", args.py_spy), ("perf", args.perf), ("strace", args.strace)):
        for name in filter(None, names.split(",")):
            pid, to = str(procs[name].pid), f"{out}/{name}"
            if tool == "py-spy":
                cmd = [spy, "record", "--gil", "-r", "200", "-fraw", "-d", w, "-p", pid, "-o", f"{to}.raw"]
            elif tool == "perf":
                cmd = ["perf", "record", "-g", "-F", "999", "-p", pid, "-o", f"{to}.perf", "--", "sleep", w]
            else:
                cmd = ["timeout", "-s", "INT", w, "strace", "-c", "-f", "-p", pid, "-o", f"{to}.strace"]
            if shutil.which(cmd[0]) is None or not Path(shutil.which(cmd[0])).exists():
                sys.exit(f"{cmd[0]} is not installed")
            started.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    return started


def _args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tf", action="store_true", help="run the job on real TensorFlow")
    p.add_argument("--hidden", type=int, default=100)
    p.add_argument("--batch", type=int, default=100)
    p.add_argument("--steps", type=int, default=4000, help="global steps of the job")
    p.add_argument("--sync", action="store_true", help="SyncReplicasOptimizer")
    p.add_argument(
        "--in-graph",
        action="store_true",
        help="in-graph: the tasks only serve, one client process drives a tower per worker",
    )
    p.add_argument("--workers", type=int, default=2)
    p.add_argument(
        "--window", type=float, default=4.0, help="seconds measured, from 1 s after training began"
    )
    p.add_argument("--env", action="append", default=[], metavar="VAR=VALUE", help="for every task")
    p.add_argument("--py-spy", default="", metavar="TASKS", help="e.g. ps,w0")
    p.add_argument("--perf", default="", metavar="TASKS")
    p.add_argument("--strace", default="", metavar="TASKS")
    p.add_argument("--out", default="probe_job_out", help="where profiles go")
    p.add_argument("--timeline", type=float, default=0.0, metavar="S", help="record each task's hops for S s")
    return p.parse_args()


def main():
    args = _args()

    ports = _ports(1 + args.workers)
    flags = [
        f"--ps_hosts=127.0.0.1:{ports[0]}",
        "--worker_hosts=" + ",".join(f"127.0.0.1:{port}" for port in ports[1:]),
        f"--train_steps={args.steps}",
        f"--hidden={args.hidden}",
        f"--batch_size={args.batch}",
        *(["--sync"] if args.sync else []),
        *(["--in_graph"] if args.in_graph else []),
        *(["--tf"] if args.tf else []),
    ]
    env = dict(os.environ, **dict(kv.split("=", 1) for kv in args.env))
    timeline = _timeline_folder(args, env)
    procs, lines = {}, {}
    try:
        procs["ps"] = subprocess.Popen(
            [sys.executable, str(SCRIPT), *flags, "--job_name=ps", "--task_index=0"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        clients = ["client"] if args.in_graph else [f"w{i}" for i in range(args.workers)]
        for i in range(args.workers):
            procs[f"w{i}"] = subprocess.Popen(
                [sys.executable, str(SCRIPT), *flags, "--job_name=worker", f"--task_index={i}"],
                env=env,
                stdout=subprocess.PIPE if f"w{i}" in clients else subprocess.DEVNULL,
                stderr=subprocess.STDOUT if f"w{i}" in clients else subprocess.DEVNULL,
                text=True,
            )
        if args.in_graph:  # (the script without --job_name is the in-graph client)
            procs["client"] = subprocess.Popen(
                [sys.executable, str(SCRIPT), *flags],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
        lines.update((k, []) for k in clients)
        readers = [
            threading.Thread(target=lambda k=k: lines[k].extend(procs[k].stdout), daemon=True) for k in lines
        ]
        for t in readers:
            t.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not all(any("training begins" in line for line in list(lines[k])) for k in lines):
            if time.monotonic() > deadline or any(procs[k].poll() is not None for k in lines):
                said = "".join(line for k in lines for line in lines[k])
                sys.exit(f"the workers did not begin training:\n{said}")
            time.sleep(0.1)
        time.sleep(1.0)
        profilers = _profilers(args, procs)
        if args.timeline:  # every task records from 0.2 s on (`timeline/sitecustomize.py` polls for it)
            (timeline / "start.tmp").write_text(f"{time.time() + 0.2} {args.timeline}")
            (timeline / "start.tmp").rename(timeline / "start")
        before, t0 = {k: _cpu_and_faults(proc.pid) for k, proc in procs.items()}, time.monotonic()
        time.sleep(args.window)
        after, seconds = {k: _cpu_and_faults(proc.pid) for k, proc in procs.items()}, time.monotonic() - t0
        for prof in profilers:
            prof.wait(timeout=args.window + 30)
        for k in lines:
            procs[k].wait(timeout=RUN_TIMEOUT_S)
        for t in readers:
            t.join(5)
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    cpu = {k: 100 * (after[k][0] - before[k][0]) / seconds for k in procs}
    print("CPU %:", " ".join(f"{k} {v:.0f}" for k, v in cpu.items()), f"(total {sum(cpu.values()):.0f})")
    print("page faults/s:", " ".join(f"{k} {(after[k][1] - before[k][1]) / seconds:.0f}" for k in procs))
    reports = [json.loads(line) for k in lines for line in lines[k] if line.startswith("{")]
    print("global steps/s per worker:", [round(r.get("global_steps_per_s") or 0, 1) for r in reports])
    if any((args.py_spy, args.perf, args.strace)):
        print(f"profiles in {args.out}/")
    if args.timeline:
        _report_timeline(timeline)


def _timeline_folder(args, env):
    """With ``--timeline``: an empty OUT/timeline, and `env` making every task record into it."""
    folder = Path(args.out) / "timeline"
    if args.timeline:
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.iterdir():
            old.unlink()
        env["NBDIST_TIMELINE_DIR"] = str(folder)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TIMELINE_SITE), env.get("PYTHONPATH")]))
    return folder


def _report_timeline(folder):
    """Prints each hop's median per task and writes the merged timeline (us from its start)."""
    events, missing = [], set()
    for path in glob.glob(str(folder / "*.json")):
        with open(path) as f:
            got = json.load(f)
        flags = dict(a.lstrip("-").split("=", 1) for a in got["argv"] if a.startswith("--") and "=" in a)
        if "ps_hosts" not in flags:
            continue  # (not a task of the job: the probe itself, a tool)
        if "job_name" in flags:
            task = {"ps": "ps", "worker": "w"}[flags["job_name"]] + flags.get("task_index", "0")
        else:
            task = "client"  # the in-graph client
        events += [(t, task, thread, what) for t, thread, what in got["events"]]
        missing.update(got["missing"])
    if missing:
        print("timeline probes missing (renamed in the runtime?):", ", ".join(sorted(missing)))
    if not events:
        print(f"no timeline events in {folder}")
        return
    events.sort()
    by_thread = collections.defaultdict(list)  # (task, thread) -> events; (task, None) -> all of its
    for t, task, thread, what in events:
        by_thread[task, thread].append((t, what))
        by_thread[task, None].append((t, what))
    tasks = sorted({task for _, task, _, _ in events})
    print("hop (median us, count)".ljust(48) + "".join(f"{task:>14}" for task in tasks))
    for first, then, name, across_threads in HOPS:
        gaps = collections.defaultdict(list)
        for (task, thread), seq in by_thread.items():
            if (thread is None) != across_threads:
                continue
            for i, (t, what) in enumerate(seq):
                if what.startswith(first):
                    for t2, w2 in seq[i + 1 : i + 80]:
                        if w2.startswith(then):
                            gaps[task].append((t2 - t) / 1e3)
                        if w2.startswith((then, first)):  # (another `first`: this one led elsewhere)
                            break
        cells = [f"{statistics.median(gaps[t]):7.0f} ({len(gaps[t]):4d})" if gaps[t] else "-" for t in tasks]
        print(name.ljust(48) + "".join(f"{c:>14}" for c in cells))
    t0 = events[0][0]
    column = {task: i for i, task in enumerate(tasks)}
    with open(folder / "timeline.txt", "w") as f:
        for t, task, thread, what in events:
            f.write(f"{(t - t0) / 1e3:10.0f} {' ' * 36 * column[task]}{task} {thread[:12]} {what}\n")
    print(f"the merged timeline: {folder / 'timeline.txt'} ({len(events)} events, us)")


if __name__ == "__main__":
    main()
