"""The thread policy (`nbdist.runtime.threads`): every process that runs kernels gives BLAS its
share of the cores, read back through threadpoolctl in fresh processes started as a user's script
is, and the user's own choice (ConfigProto, environment, threadpoolctl) is kept."""

import json
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from nbdist.runtime import threads
from nbdist.runtime.cluster import ClusterSpec
from nbdist.runtime.net import samehost

ROOT = Path(__file__).resolve().parent.parent

# A user's script: creates what the test names, then prints BLAS's thread count (threadpoolctl)
# and the server's Status `threads` as one JSON line.
CHILD = textwrap.dedent(
    """
    import json, os, sys
    import nbdist as tf
    from threadpoolctl import threadpool_info, threadpool_limits

    args = json.loads(sys.argv[1])
    if args.get("affinity"):
        os.sched_setaffinity(0, set(args["affinity"]))
    if args.get("user_limit"):
        threadpool_limits(args["user_limit"], user_api="blas")
    tf.logging.set_verbosity(tf.logging.INFO)
    config = tf.ConfigProto(intra_op_parallelism_threads=args.get("intra", 0))
    servers = []
    if args.get("local_cluster"):
        workers, ps = tf.test.create_local_cluster(*args["local_cluster"])
        servers = workers + ps
    else:
        cluster = tf.train.ClusterSpec(args["cluster"])
        servers = [tf.train.Server(cluster, job_name=args["job"], task_index=0, config=config)]
    if args.get("session_intra"):
        tf.Session(servers[0].target, config=tf.ConfigProto(intra_op_parallelism_threads=args["session_intra"]))
    blas = max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")
    print(json.dumps({"blas": blas, "status": servers[0].status()["threads"]}), flush=True)
    for s in servers:
        s.stop()
    """
)


def _clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in threads.BLAS_THREAD_VARS}
    env.update(PYTHONPATH=str(ROOT), **extra)
    return env


def run_child(args, env=None, preexec_fn=None):
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(args)],
        env=env or _clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=preexec_fn,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


def _cluster(n_workers=2):
    ports = samehost.free_ports(1 + n_workers)
    return {"ps": [f"localhost:{ports[0]}"], "worker": [f"localhost:{p}" for p in ports[1:]]}


CORES = threads.available_cores()


def test_a_script_server_gets_its_share_of_the_cores():
    out, stderr = run_child({"cluster": _cluster(), "job": "worker"})
    assert out["blas"] == max(1, CORES // 3)
    assert out["status"]["blas"] == out["blas"]
    assert out["status"]["reason"] == f"{CORES} core{'s' * (CORES != 1)} / 3 tasks on this host"
    assert f"BLAS threads {out['blas']} ({out['status']['reason']})" in stderr  # the tf.logging INFO line


def test_an_explicit_intra_op_count_is_respected():
    out, _ = run_child({"cluster": _cluster(), "job": "worker", "intra": 2})
    assert out["blas"] == 2
    assert out["status"]["reason"] == "ConfigProto(intra_op_parallelism_threads=2)"
    assert out["status"]["intra_op"] == 2


def test_the_environment_rules():
    out, _ = run_child({"cluster": _cluster(), "job": "worker"}, env=_clean_env(OPENBLAS_NUM_THREADS="2"))
    assert out["blas"] == 2
    assert out["status"]["reason"] == "kept: OPENBLAS_NUM_THREADS=2 in the environment"


@pytest.mark.skipif(CORES < 2, reason="needs 2 cores to tell the program's limit from the policy's")
def test_the_programs_own_threadpoolctl_limit_is_kept():
    out, _ = run_child({"cluster": {"local": _cluster(0)["ps"]}, "job": "local", "user_limit": 1})
    assert out["blas"] == 1
    assert out["status"]["reason"].startswith("kept: the program's own limit (1 threads")


@pytest.mark.skipif(CORES < 2, reason="needs 2 cores to narrow the affinity mask")
def test_the_affinity_mask_is_honoured():
    one_task = {"cluster": {"local": _cluster(0)["ps"]}, "job": "local"}
    out, _ = run_child(one_task)
    assert out["blas"] == CORES  # one task on this host: every core
    out, _ = run_child({**one_task, "affinity": [min(os.sched_getaffinity(0))]})
    assert out["blas"] == 1
    assert out["status"]["cores"] == 1


def test_several_servers_in_one_process_get_the_sum_of_their_shares():
    out, _ = run_child({"local_cluster": [2, 1]})
    assert out["blas"] == min(CORES, 3 * max(1, CORES // 3))


def test_two_explicit_values_the_first_wins_and_a_warning_names_both():
    out, stderr = run_child({"cluster": _cluster(), "job": "worker", "intra": 2, "session_intra": 3})
    assert out["blas"] == 2
    assert "intra_op_parallelism_threads=3 ignored: 2 was set first" in stderr


def _cpu_cgroup_dir():
    """A fresh cgroup directory with the cpu controller (v2 or v1), or None where none can be made."""
    candidates = [Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/cpu"), Path("/sys/fs/cgroup/cpu,cpuacct")]
    for base in candidates:
        v2 = (base / "cgroup.controllers").exists() and "cpu" in (base / "cgroup.controllers").read_text()
        v1 = (base / "cpu.cfs_quota_us").exists()
        if not (v1 or v2):
            continue
        path = base / f"nbdist-test-{uuid.uuid4().hex[:8]}"
        try:
            path.mkdir()
            if v2:
                (path / "cpu.max").write_text("100000 100000")
            else:
                (path / "cpu.cfs_period_us").write_text("100000")
                (path / "cpu.cfs_quota_us").write_text("100000")
        except OSError:
            if path.exists():
                path.rmdir()
            continue
        return path
    return None


@pytest.mark.skipif(CORES < 2, reason="needs 2 cores to see a quota of one")
def test_a_cgroup_cpu_quota_is_honoured():
    group = _cpu_cgroup_dir()
    if group is None:
        pytest.skip("no cgroup with the cpu controller can be made here (needs root and a writable cgroupfs)")
    procs = group / "cgroup.procs"

    def join_group():
        procs.write_text(str(os.getpid()))

    try:
        out, _ = run_child({"cluster": {"local": _cluster(0)["ps"]}, "job": "local"}, preexec_fn=join_group)
    finally:
        group.rmdir()  # the child has exited: the group is empty
    assert out["status"]["cores"] == 1
    assert out["blas"] == 1


# -- pure parts -------------------------------------------------------------------------------------
def _fake_proc(tmp_path, cgroup_lines, mount_lines):
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "cgroup").write_text("\n".join(cgroup_lines) + "\n")
    (proc / "mountinfo").write_text("\n".join(mount_lines) + "\n")
    return str(proc)


def test_cgroup_v2_quota_is_the_smallest_along_the_path(tmp_path):
    root = tmp_path / "cg"
    (root / "pod" / "ctr").mkdir(parents=True)
    (root / "cpu.max").write_text("max 100000\n")
    (root / "pod" / "cpu.max").write_text("150000 100000\n")
    (root / "pod" / "ctr" / "cpu.max").write_text("max 100000\n")
    proc = _fake_proc(tmp_path, ["0::/pod/ctr"], [f"30 20 0:26 / {root} rw - cgroup2 cgroup2 rw"])
    assert threads.cgroup_cpu_quota(proc) == 1.5


def test_cgroup_v1_quota_under_a_container_root(tmp_path):
    point = tmp_path / "cpu"
    point.mkdir()
    (point / "cpu.cfs_quota_us").write_text("250000\n")
    (point / "cpu.cfs_period_us").write_text("100000\n")
    proc = _fake_proc(
        tmp_path,
        ["4:cpu,cpuacct:/docker/abc", "1:memory:/docker/abc"],
        [f"40 30 0:33 /docker/abc {point} rw - cgroup cgroup rw,cpu,cpuacct"],
    )
    assert threads.cgroup_cpu_quota(proc) == 2.5


def test_no_quota_no_limit(tmp_path):
    root = tmp_path / "cg"
    root.mkdir()
    (root / "cpu.max").write_text("max 100000\n")
    proc = _fake_proc(tmp_path, ["0::/"], [f"30 20 0:26 / {root} rw - cgroup2 cgroup2 rw"])
    assert threads.cgroup_cpu_quota(proc) is None
    assert threads.cgroup_cpu_quota(str(tmp_path / "missing")) is None


def test_tasks_on_this_host_by_name():
    cluster = ClusterSpec(
        {"ps": ["localhost:1"], "worker": ["127.0.0.1:2", "10.0.0.5:3", "[::1]:4"], "chief": ["h2:5"]}
    )
    assert threads.tasks_on_this_host(cluster, "localhost:1") == 3
    assert threads.tasks_on_this_host(cluster, "10.0.0.5:3") == 1
