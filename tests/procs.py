"""Test helpers: real `python -m nbdist.server` processes on 127.0.0.1, killed by PID."""

import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbdist
from nbdist.runtime.net import samehost

REPO = str(Path(nbdist.__file__).resolve().parent.parent)


def kernel_env():
    """The environment for a child that runs user code (a Jupyter kernel or server): this
    checkout of nbdist first on PYTHONPATH, and no cluster key inherited from the test run."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH")) if p))
    env.pop("NBDIST_CLUSTER_KEY", None)
    return env


_handed_out = set()  # ports free_port returned in this process


def free_port():
    """A free TCP port on 127.0.0.1 that this process has not been given before: once a probe
    socket closes, the kernel may hand the same port to the next bind, and a cluster built from
    two calls in a row then names one address twice."""
    while True:
        (port,) = samehost.free_ports(1)  # (outside the ephemeral range: see there)
        if port not in _handed_out:
            _handed_out.add(port)
            return port


def _state(pid):
    """The process state letter from /proc (R, S, T for stopped, Z, ...)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0]
    except OSError:
        return ""


def alive(pid):
    """Whether `pid` is a live process (a zombie counts as gone)."""
    return _state(pid) not in ("", "Z")


def wait_gone(pids, timeout_s):
    """True once none of `pids` is alive, False if some still are after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not any(alive(p) for p in pids):
            return True
        time.sleep(0.02)
    return not any(alive(p) for p in pids)


def cluster_dict(**jobs):
    """``{"ps": ["localhost:P", ...], ...}`` with free ports, e.g. ``cluster_dict(ps=1, worker=1)``."""
    return {job: [f"localhost:{free_port()}" for _ in range(n)] for job, n in jobs.items()}


class ServerProcs:
    """Starts one server process per task of `cluster` and stops them (by PID) at `stop()`."""

    def __init__(self, cluster, key_hex=None, ready_timeout_s=30.0, delays_ms=None):
        self.cluster = cluster
        self.procs = {}
        env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
        if key_hex is not None:
            env["NBDIST_CLUSTER_KEY"] = key_hex
        for job, addresses in cluster.items():
            for i in range(len(addresses)):
                self.procs[(job, i)] = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "nbdist.server",
                        "--cluster",
                        json.dumps(cluster),
                        "--job",
                        job,
                        "--task",
                        str(i),
                        "--parent-pid",
                        str(os.getpid()),
                        f"--delay-ms={(delays_ms or {}).get((job, i), 0)}",
                    ],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    env=env,
                    text=True,
                )
        try:
            self._wait_ready(ready_timeout_s)
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self, timeout_s):
        deadline = time.monotonic() + timeout_s
        for (job, i), proc in self.procs.items():
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"/job:{job}/task:{i} not ready in {timeout_s} s")
                ready, _, _ = select.select([proc.stdout], [], [], remaining)
                if ready:
                    line = proc.stdout.readline()
                    if line.startswith("nbdist-server ready"):
                        break
                    if not line:
                        raise RuntimeError(f"/job:{job}/task:{i} exited: {proc.stderr.read()}")

    def address(self, job, i):
        return self.cluster[job][i]

    def target(self, job, i):
        return f"zmq://{self.cluster[job][i]}"

    def kill(self, job, i, sig=signal.SIGKILL):
        proc = self.procs[(job, i)]
        proc.send_signal(sig)
        if sig in (signal.SIGKILL, signal.SIGTERM):
            proc.wait(10)
        elif sig == signal.SIGSTOP:  # delivery is asynchronous: wait until every thread stopped
            deadline = time.monotonic() + 5
            while _state(proc.pid) != "T" and time.monotonic() < deadline:
                time.sleep(0.005)

    def stop(self):
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                proc.terminate()
        for proc in self.procs.values():
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            for f in (proc.stdout, proc.stderr):
                f.close()


def run_worker_scripts(script, procs, args, timeout_s=180):
    """Runs `script` once per worker task of `procs` as that worker's client process
    (``--existing_servers --job_name=worker --task_index=i`` plus `args`), waits for every
    one within `timeout_s`, requires exit status 0 and no traceback, and returns each
    worker's last stdout line as JSON. Leftover processes are killed by PID."""
    cluster = procs.cluster
    common = [
        f"--ps_hosts={','.join(cluster['ps'])}",
        f"--worker_hosts={','.join(cluster['worker'])}",
        "--existing_servers",
        "--job_name=worker",
        *args,
    ]
    workers = [
        subprocess.Popen(
            [sys.executable, script, *common, f"--task_index={i}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(len(cluster["worker"]))
    ]
    deadline = time.monotonic() + timeout_s
    results = []
    try:
        for i, w in enumerate(workers):
            out, err = w.communicate(timeout=max(1.0, deadline - time.monotonic()))
            assert w.returncode == 0, f"worker {i} exited {w.returncode}:\n{err[-4000:]}"
            assert "Traceback" not in err, err[-4000:]
            results.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for w in workers:
            if w.poll() is None:
                w.kill()
                w.communicate()
    return results


class LoggedProcs:
    """Client processes (Python scripts), each with its stdout and stderr in one log file
    under `log_dir`; every one still running is killed by PID at `stop()`."""

    def __init__(self, log_dir):
        self.log_dir = Path(log_dir)
        self.procs = {}

    def start(self, name, script, *args):
        """Starts `script` with `args`; its environment is this process's at this moment (the key)."""
        env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
        out = open(self.log_dir / f"{name}.log", "w")  # noqa: SIM115 - closed in stop()
        proc = subprocess.Popen(
            [sys.executable, str(script), *map(str, args)], stdout=out, stderr=subprocess.STDOUT, env=env
        )
        self.procs[name] = (proc, out)
        return proc

    def text(self, name):
        return (self.log_dir / f"{name}.log").read_text()

    def steps(self, name):
        """The global steps a `train_scripts/fault_worker.py` client printed, in order."""
        return [int(s) for s in re.findall(r"^step (\d+)$", self.text(name), re.M)]

    def wait_for(self, name, pattern, timeout_s):
        """Waits until the process's output matches `pattern` (also after it exited); returns the match."""
        deadline = time.monotonic() + timeout_s
        while True:
            m = re.search(pattern, self.text(name), re.M)
            if m:
                return m
            if time.monotonic() > deadline or self.procs[name][0].poll() is not None:
                m = re.search(pattern, self.text(name), re.M)
                if m:
                    return m
                raise AssertionError(
                    f"{name}: no {pattern!r} in its output within {timeout_s} s:\n{self.text(name)[-3000:]}"
                )
            time.sleep(0.01)

    def wait_steps(self, name, count, timeout_s):
        """Waits until `name` printed at least `count` steps; returns them."""
        deadline = time.monotonic() + timeout_s
        while len(self.steps(name)) < count:
            if time.monotonic() > deadline or self.procs[name][0].poll() is not None:
                raise AssertionError(
                    f"{name}: fewer than {count} steps within {timeout_s} s:\n{self.text(name)[-3000:]}"
                )
            time.sleep(0.02)
        return self.steps(name)

    def wait_exit(self, name, timeout_s):
        proc = self.procs[name][0]
        try:
            return proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"{name} (pid {proc.pid}) still running after {timeout_s} s:\n{self.text(name)[-3000:]}"
            ) from None

    def stop(self):
        for proc, _ in self.procs.values():
            if proc.poll() is None:
                proc.kill()
        for proc, out in self.procs.values():
            proc.wait(10)
            out.close()
