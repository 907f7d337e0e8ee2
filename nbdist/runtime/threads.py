"""The thread policy of a process that runs kernels: how many threads numpy's BLAS may use.

Every process that runs a step's kernels - a `tf.train.Server`, a local `tf.Session`, the
servers of `create_local_server` / `create_local_cluster`, the task processes a
`LocalCluster` starts - claims a share of the cores here. BLAS's own default is one
spinning thread per core in *every* process: a ps and two workers on two cores then run six
BLAS threads on two cores, and a 784x100 matmul that takes 0.3 ms alone takes ten times as
long (docs/benchmarks.md, "A thread policy for every process that runs kernels").

A task's share, by what decides it (first that applies):

1. ``intra_op_parallelism_threads`` of the `tf.ConfigProto` given to ``tf.train.Server(config=)``
   (or to a `tf.Session` whose kernels run in this process: a local session, or one on the
   target of a server of this process; a session on another process's master cannot change
   that process's threads, and its value is ignored, as TF's remote master ignores it).
2. Otherwise the policy: the cores this process may use (`available_cores`: its affinity mask,
   capped by its cgroup's CPU quota; never ``os.cpu_count()``), divided among the cluster's tasks
   whose addresses are on this host, at least one each. A local session's share is every core.

The process's BLAS threads are the sum of the shares of the tasks it serves, at most its cores
unless a ConfigProto asked for more. A count the user chose before nbdist applied one - an
``OPENBLAS_NUM_THREADS`` / ``OMP_NUM_THREADS`` / ``MKL_NUM_THREADS`` in the environment, or the
program's own ``threadpoolctl`` limit - is kept. Two explicit values for one task: the first
wins, and a warning names both. ``inter_op_parallelism_threads`` is accepted and reported: a
step's ops run on one thread, and the serving pool is not sized from it (blocking ops need it).

What was chosen and why is in each server's Status (``threads``), the cluster status table and
a ``tf.logging`` INFO line.
"""

import functools
import logging
import os
import threading
from dataclasses import dataclass

from nbdist.runtime import allocator

# Below the ``nbdist`` logger, as nbdist's own modules log: tf.logging.set_verbosity(INFO) shows
# it. (Not `tf_logging`'s functions: their first call sets the ``nbdist`` logger to TF's default,
# WARN, which would hide the INFO lines a program that configured logging itself asked for.)
_log = logging.getLogger(__name__)

# Environment variables that set a BLAS's thread count: when the user sets one, it rules.
BLAS_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")

# The cores this process could use when nbdist (and with it numpy, and BLAS) was loaded: what
# OpenBLAS took as its default thread count. A count that differs from it was set by the program.
_CORES_AT_LOAD = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1

LOCAL_SESSION = "local session"  # the claim of a local `tf.Session` (its kernels run in this process)


@dataclass(frozen=True)
class ThreadChoice:
    """What a task's process runs its kernels with, and why (the Status reply's ``threads``)."""

    blas: int  # BLAS threads of the process now (None: no BLAS library found)
    share: int  # this task's share of them
    reason: str  # what decided it: "2 cores / 3 tasks on this host", "ConfigProto(...)", ...
    cores: int  # the cores this process may use
    intra_op: int  # intra_op_parallelism_threads asked for (0: choose)
    inter_op: int  # inter_op_parallelism_threads asked for (reported only)

    def as_status(self):
        return {
            "blas": self.blas,
            "share": self.share,
            "reason": self.reason,
            "cores": self.cores,
            "intra_op": self.intra_op,
            "inter_op": self.inter_op,
        }

    def describe(self):
        """One line, as the server's start-up line and the log show it."""
        return f"BLAS threads {self.blas} ({self.reason})"


# -- the cores this process may use ---------------------------------------------------------------
def available_cores():
    """The CPUs this process may use: its affinity mask, capped by its cgroup's CPU quota (Binder,
    Docker and Kubernetes pods run under quotas), at least 1."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    quota = _own_cgroup_quota()
    if quota is not None:
        cores = min(cores, max(1, int(quota + 0.999)))
    return max(1, cores)


@functools.cache
def _own_cgroup_quota():
    """This process's quota, read once: a process stays in the cgroup it started in (every local
    session asks; the files cost ~100 us to read)."""
    return cgroup_cpu_quota()


def cgroup_cpu_quota(proc="/proc/self"):
    """The CPU quota of this process's cgroup in cores (``1.5`` for 150 ms per 100 ms), the
    smallest along its path up to the hierarchy's root; None when there is none (or no cgroups).

    Reads cgroup v2's ``cpu.max`` and v1's ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``, finding the
    hierarchies' mount points in ``mountinfo`` (a container's view of its own cgroup included).
    """
    try:
        with open(f"{proc}/cgroup") as f:
            memberships = [line.rstrip("\n").split(":", 2) for line in f if line.count(":") >= 2]
        with open(f"{proc}/mountinfo") as f:
            mounts = [_mount_fields(line) for line in f]
    except OSError:
        return None
    quotas = []
    for _, controllers, path in memberships:
        for fstype, root, point, options in filter(None, mounts):
            if controllers == "" and fstype == "cgroup2":
                read = _v2_quota
            elif fstype == "cgroup" and "cpu" in controllers.split(",") and "cpu" in options.split(","):
                read = _v1_quota
            else:
                continue
            directory = _cgroup_dir(point, root, path)
            if directory is not None:
                quotas.extend(q for q in _along_path(directory, point, read) if q is not None)
    return min(quotas) if quotas else None


def _mount_fields(line):
    """(fstype, root, mount point, super options) of a cgroup mount in a mountinfo line, else None."""
    left, sep, right = line.partition(" - ")
    if not sep:
        return None
    fields, tail = left.split(), right.split()
    if len(fields) < 5 or len(tail) < 3 or not tail[0].startswith("cgroup"):
        return None
    return tail[0], fields[3], fields[4], tail[2]


def _cgroup_dir(point, root, path):
    """The directory of cgroup `path` under a hierarchy mounted at `point` from `root`."""
    if root != "/" and not (path == root or path.startswith(root + "/")):
        return None  # the mount shows another part of the hierarchy
    rest = path[len(root) :] if root != "/" else path
    return os.path.join(point, rest.lstrip("/"))


def _along_path(directory, point, read):
    """`read` of `directory` and of each parent up to `point`."""
    while True:
        yield read(directory)
        if os.path.normpath(directory) == os.path.normpath(point):
            return
        parent = os.path.dirname(directory.rstrip("/"))
        if parent == directory or not parent.startswith(os.path.normpath(point)):
            return
        directory = parent


def _v2_quota(directory):
    try:
        with open(os.path.join(directory, "cpu.max")) as f:
            quota, period = ([*f.read().split(), "", ""])[:2]
    except OSError:
        return None
    if quota == "max" or not quota.isdigit() or not period.isdigit() or int(period) == 0:
        return None
    return int(quota) / int(period)


def _v1_quota(directory):
    try:
        with open(os.path.join(directory, "cpu.cfs_quota_us")) as f:
            quota = int(f.read())
        with open(os.path.join(directory, "cpu.cfs_period_us")) as f:
            period = int(f.read())
    except (OSError, ValueError):
        return None
    if quota <= 0 or period <= 0:
        return None
    return quota / period


# -- the cluster's tasks on this host ---------------------------------------------------------------
def tasks_on_this_host(cluster, own_address):
    """How many of `cluster`'s tasks have addresses on the host of `own_address` (at least 1).

    By name, without DNS: the same host string as this task's, and for a loopback host every
    loopback name (``localhost``, ``127.x.y.z``, ``::1``) and this machine's hostname.
    """
    own_host = _host_of(own_address)
    local = {own_host}
    if _is_loopback(own_host):
        local |= {"localhost", "::1", _hostname()}
    count = 0
    for _, _, address in cluster.iter_tasks():
        host = _host_of(address)
        if host in local or (_is_loopback(own_host) and _is_loopback(host)):
            count += 1
    return max(1, count)


def _host_of(address):
    host = address.rpartition(":")[0] or address
    return host.strip("[]").lower()


def _is_loopback(host):
    return host in ("localhost", "::1") or host.startswith("127.")


def _hostname():
    import socket  # noqa: PLC0415 - only servers ask

    return socket.gethostname().lower()


# -- the process's claims -------------------------------------------------------------------------
@dataclass
class _Claim:
    label: str  # the task device, or LOCAL_SESSION
    share: int
    explicit: int  # intra_op_parallelism_threads asked for (0: the policy's share)
    reason: str
    inter_op: int


class _ProcessPolicy:
    """The claims of this process's tasks and what BLAS was set to for them."""

    def __init__(self):
        self._lock = threading.Lock()
        self._claims = {}  # key (a server's address, or LOCAL_SESSION) -> _Claim
        self._user_choice = None  # why the count is the user's, once found
        self._current = None  # BLAS's thread count when a claim was last applied (nbdist's, or the user's)
        self._cores = None  # the cores this process could use then

    def claim(self, key, label, config, cores, policy_share, policy_reason):
        """Records (or updates) the claim of `key` and applies the process's total; its choice."""
        intra, inter = _config_threads(config)
        allocator.keep_freed_memory()  # (the same processes: those that run kernels)
        with self._lock:
            old = self._claims.get(key)
            if old is not None and old.explicit:
                if intra and intra != old.explicit:
                    _log.warning(
                        "%s: intra_op_parallelism_threads=%d ignored: %d was set first "
                        "(the first value wins)",
                        old.label,
                        intra,
                        old.explicit,
                    )
                intra = old.explicit
            if intra:
                share, reason = intra, f"ConfigProto(intra_op_parallelism_threads={intra})"
            else:
                share, reason = policy_share, policy_reason
            if old is not None:
                label, inter = old.label, inter or old.inter_op
            claim = _Claim(label, share, intra, reason, inter)
            self._claims[key] = claim
            if claim != old:  # (another local session with the same config changes nothing)
                self._apply(cores)
            return self._choice(key)

    def release(self, key):
        """Forgets `key`'s claim; the remaining claims decide (none left: BLAS is left as it is)."""
        with self._lock:
            if self._claims.pop(key, None) is not None and self._claims:
                self._apply(available_cores())

    def has_claim(self, key):
        with self._lock:
            return key in self._claims

    def choice(self, key):
        """`key`'s choice as last applied (asks no BLAS library: a Status reply calls it)."""
        with self._lock:
            return self._choice(key) if key in self._claims else None

    def _apply(self, cores):
        current = _blas_threads()
        self._cores = cores
        if self._user_reason(current) is None and current is not None:
            explicit = sum(c.explicit for c in self._claims.values())
            total = max(1, min(sum(c.share for c in self._claims.values()), max(cores, explicit)))
            if total != current:
                _set_blas_threads(total)
            current = total
        self._current = current

    def _user_reason(self, current):
        """Why the current count is the user's (kept), or None when nbdist may set it: a variable
        in the environment, or a count that is neither what BLAS started with nor what nbdist set."""
        if self._user_choice is None:
            named = [f"{v}={os.environ[v]}" for v in BLAS_THREAD_VARS if os.environ.get(v)]
            if named:
                self._user_choice = f"{', '.join(named)} in the environment"
            elif current is not None and current != (self._current or _CORES_AT_LOAD):
                self._user_choice = f"the program's own limit ({current} threads, e.g. threadpoolctl)"
        return self._user_choice

    def _choice(self, key):
        claim = self._claims[key]
        return ThreadChoice(
            blas=self._current,
            share=claim.share,
            reason=f"kept: {self._user_choice}" if self._user_choice else claim.reason,
            cores=self._cores,
            intra_op=claim.explicit,
            inter_op=claim.inter_op,
        )


def _config_threads(config):
    if config is None:
        return 0, 0
    intra = int(getattr(config, "intra_op_parallelism_threads", 0) or 0)
    inter = int(getattr(config, "inter_op_parallelism_threads", 0) or 0)
    if intra < 0:
        raise ValueError(
            f"ConfigProto(intra_op_parallelism_threads={intra}): give 0 (choose) or a positive count"
        )
    return intra, max(0, inter)


def _blas_threads():
    """This process's BLAS thread count (the largest, with several BLAS libraries); None without one."""
    from threadpoolctl import threadpool_info  # noqa: PLC0415 - only processes that run kernels

    counts = [i["num_threads"] for i in threadpool_info() if i.get("user_api") == "blas"]
    return max(counts) if counts else None


def _set_blas_threads(n):
    from threadpoolctl import threadpool_limits  # noqa: PLC0415

    threadpool_limits(n, user_api="blas")


_POLICY = _ProcessPolicy()
_local_lock = threading.Lock()
_local_sessions = 0  # open local sessions (they share the claim LOCAL_SESSION)


# -- what servers and sessions call ---------------------------------------------------------------
def claim_for_server(key, task_device, cluster, config):
    """A server of this process at address `key` starts serving: its share; returns its choice."""
    cores = available_cores()
    tasks = tasks_on_this_host(cluster, key)
    share = max(1, cores // tasks)
    reason = f"{cores} core{'s' * (cores != 1)} / {tasks} task{'s' * (tasks != 1)} on this host"
    choice = _POLICY.claim(key, task_device, config, cores, share, reason)
    _log.info("Server %s: %s; %s", task_device, choice.describe(), allocator.state())
    return choice


def claim_for_local_session(config):
    """A local `tf.Session` runs its kernels in this process; returns the choice. The process's
    local sessions hold one claim (`release_local_session` when each closes)."""
    global _local_sessions
    cores = available_cores()
    reason = f"a local session: {cores} core{'s' * (cores != 1)}"
    with _local_lock:
        _local_sessions += 1
    return _POLICY.claim(LOCAL_SESSION, LOCAL_SESSION, config, cores, cores, reason)


def release_local_session():
    global _local_sessions
    with _local_lock:
        _local_sessions -= 1
        last = _local_sessions == 0
    if last:
        _POLICY.release(LOCAL_SESSION)


def session_on_target(config, address):
    """A session on `address`: when a server of this process serves it, the session's
    ``intra_op_parallelism_threads`` applies to that server's task (else it is ignored)."""
    intra, _ = _config_threads(config)
    if intra and _POLICY.has_claim(address):
        _POLICY.claim(address, f"the server at {address}", config, available_cores(), None, None)


def choice_of(key):
    """The current choice for a claim still held (a server's Status asks)."""
    return _POLICY.choice(key)


def release(key):
    _POLICY.release(key)
