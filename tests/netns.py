"""Test helper: "hosts" as Linux network namespaces on one machine, bridged on 192.0.2.0/24.

`NetnsHosts(n)` makes namespaces ``nbd<run>h1`` .. ``h<n>`` (host i has 192.0.2.(10+i) on its
``eth0``) and a switch namespace ``nbd<run>sw`` whose bridge joins them; the run id is unique to
the test process, so parallel runs never share a namespace. The documentation range
192.0.2.0/24 exists only inside these namespaces: nothing outside them is ever a target.
`close()` kills every process started in them (by PID) and deletes the namespaces, also after
a failure. Needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN) and iproute2.
"""

import contextlib
import os
import select
import signal
import subprocess
import sys
import time

from procs import REPO

SUBNET = "192.0.2"


def _ip(*args, check=True):
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30, check=check)


def unavailable_reason():
    """Why namespaces cannot be made here, or None."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    probe = f"nbdprobe{os.getpid()}"
    try:
        made = _ip("netns", "add", probe, check=False)
    except FileNotFoundError:
        return "iproute2 (`ip`) is not installed"
    if made.returncode != 0:
        return f"`ip netns add` failed: {made.stderr.strip()}"
    _ip("netns", "del", probe, check=False)
    return None


class NetnsHosts:
    def __init__(self, n):
        run = f"{os.getpid() % 100000}{os.urandom(2).hex()}"
        self.switch = f"nbd{run}sw"
        self.names = [f"nbd{run}h{i}" for i in range(1, n + 1)]
        self.procs = []
        self._made = []
        try:
            self._make()
        except BaseException:
            self.close()
            raise

    def _make(self):
        _ip("netns", "add", self.switch)
        self._made.append(self.switch)
        _ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.switch, "link", "set", "br0", "up")
        for i, ns in enumerate(self.names, start=1):
            _ip("netns", "add", ns)
            self._made.append(ns)
            _ip(
                "link",
                "add",
                "eth0",
                "netns",
                ns,
                "type",
                "veth",
                "peer",
                "name",
                f"p{i}",
                "netns",
                self.switch,
            )
            _ip("-n", self.switch, "link", "set", f"p{i}", "master", "br0")
            _ip("-n", self.switch, "link", "set", f"p{i}", "up")
            _ip("-n", ns, "addr", "add", f"{self.ip(i)}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            _ip("-n", ns, "link", "set", "lo", "up")

    @staticmethod
    def ip(host):
        """The address of host `host` (1-based)."""
        return f"{SUBNET}.{10 + host}"

    def ns(self, host):
        return self.names[host - 1]

    def set_link(self, host, up):
        """Plugs or unplugs host `host`'s cable (its port on the switch)."""
        _ip("-n", self.switch, "link", "set", f"p{host}", "up" if up else "down")

    def popen(self, host, argv, env=None, **kwargs):
        """Starts `argv` inside host `host` (``ip netns exec`` execs it: the PID is the program's)."""
        env = dict(env if env is not None else os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (REPO, env.get("PYTHONPATH")) if p)
        proc = subprocess.Popen(
            ["ip", "netns", "exec", self.ns(host), *argv],
            env=env,
            stdin=kwargs.pop("stdin", subprocess.DEVNULL),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
            **kwargs,
        )
        self.procs.append(proc)
        return proc

    def start_server(self, host, cluster_json, job, task, args=(), env=None, timeout_s=60):
        """``nbdist server`` for one task inside host `host`; returns once it prints its ready line."""
        argv = [
            sys.executable,
            "-m",
            "nbdist",
            "server",
            "--cluster",
            cluster_json,
            "--job",
            job,
            "--task",
            str(task),
        ]
        proc = self.popen(host, [*argv, *args], env=env)
        deadline = time.monotonic() + timeout_s
        while True:
            remaining = deadline - time.monotonic()
            ready, _, _ = select.select([proc.stdout], [], [], max(0.0, remaining))
            line = proc.stdout.readline() if ready else None
            if line and line.startswith("nbdist-server ready"):
                return proc
            if line == "" or remaining <= 0:
                proc.kill()
                _, err = proc.communicate(timeout=10)
                raise RuntimeError(f"/job:{job}/task:{task} in {self.ns(host)} did not start: {err[-3000:]}")

    def run(self, host, argv, env=None, timeout_s=120):
        """Runs `argv` inside host `host` to completion (bounded); returns (returncode, stdout, stderr)."""
        proc = self.popen(host, argv, env=env)
        try:
            out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate(timeout=10)
            raise AssertionError(f"{argv} did not finish within {timeout_s} s:\n{err[-3000:]}") from None
        return proc.returncode, out, err

    def kill(self, proc):
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=10)

    def close(self):
        for proc in self.procs:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
        for proc in self.procs:
            with contextlib.suppress(subprocess.TimeoutExpired, ValueError):
                proc.communicate(timeout=10)
        self.procs.clear()
        for ns in reversed(self._made):
            _ip("netns", "del", ns, check=False)
        self._made.clear()
