"""Faults during training, with real processes: a `LocalCluster` owns the servers, and each
worker's training loop is its own client process (`train_scripts/fault_worker.py`).

- async (ps=1 worker=2): kill -9 the non-chief worker; the chief keeps training; the dead
  worker's client and the cluster's status name the task; the task restarts and a new
  loop on it rejoins training.
- sync (ps=1 worker=3, 2 replicas to aggregate: one backup): the same, and the chief carries
  on with the two replicas left.

Every wait is bounded; processes are killed by PID (`LoggedProcs.stop`, `LocalCluster.stop`).
"""

import re
from pathlib import Path

import pytest

import nbdist as tf
from procs import LoggedProcs

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).parent / "train_scripts" / "fault_worker.py"
BOUND_S = 60  # generous for a loaded 2-core machine: catches a hang, not a slow step


@pytest.fixture
def clients(tmp_path):
    c = LoggedProcs(tmp_path)
    yield c
    c.stop()


def _start_workers(clients, cluster, mode, stop_file, *extra):
    spec = cluster.cluster_spec.to_json()
    for i in range(cluster.cluster_spec.num_tasks("worker")):
        clients.start(
            f"w{i}", SCRIPT, spec, i, mode, "--stop_file", stop_file, "--step_sleep_s", 0.01, *extra
        )


def _kill_and_rejoin(cluster, clients, mode, victim, stop_file, *extra):
    """Kills worker `victim`'s task; checks the report, the chief's progress and the rejoin."""
    address = cluster.cluster_spec.task_address("worker", victim)
    name = f"w{victim}"
    clients.wait_steps(name, 10, BOUND_S)
    cluster.kill("worker", victim)
    # The dead task's client says which task died (its own master, here).
    error = clients.wait_for(name, r"(?:error |Error: ).*unavailable.*", BOUND_S).group(0)
    assert f"/job:worker/task:{victim} at {address} is unavailable" in error, error
    (row,) = [r for r in cluster.status() if (r["job"], r["index"]) == ("worker", victim)]
    assert not row["alive"]
    assert row["error"] == "process exited with code -9 (killed by SIGKILL)"
    # The chief keeps training without it.
    before = len(clients.steps("w0"))
    clients.wait_steps("w0", before + 20, BOUND_S)
    # Restart the task and start that worker's loop again: it rejoins.
    clients.procs[name][0].kill()
    cluster.restart_task("worker", victim)
    spec = cluster.cluster_spec.to_json()
    clients.start(f"{name}b", SCRIPT, spec, victim, mode, "--local_steps", 15, *extra)
    assert clients.wait_exit(f"{name}b", BOUND_S) == 0, clients.text(f"{name}b")[-3000:]
    assert "done 15" in clients.text(f"{name}b")
    rejoined = clients.steps(f"{name}b")
    assert rejoined[0] > clients.steps(name)[-1]  # it continued the shared model, not a new one
    stop_file.touch()
    for i in range(cluster.cluster_spec.num_tasks("worker")):
        if i != victim:
            assert clients.wait_exit(f"w{i}", BOUND_S) == 0, clients.text(f"w{i}")[-3000:]
    return rejoined


def test_async_training_survives_a_killed_worker_that_rejoins(clients, tmp_path):
    stop_file = tmp_path / "stop"
    with tf.LocalCluster(ps=1, worker=2) as cluster:
        _start_workers(clients, cluster, "async", stop_file)
        _kill_and_rejoin(cluster, clients, "async", 1, stop_file)
        assert "done" in clients.text("w0")


def test_sync_training_with_a_backup_survives_a_killed_worker_that_rejoins(clients, tmp_path):
    stop_file = tmp_path / "stop"
    with tf.LocalCluster(ps=1, worker=3) as cluster:
        _start_workers(clients, cluster, "sync", stop_file, "--replicas", 2)
        rejoined = _kill_and_rejoin(cluster, clients, "sync", 2, stop_file, "--replicas", 2)
        # The synchronous steps went on with two replicas, and the rejoined one took part.
        assert len(rejoined) == 15
        steps = clients.steps("w0")
        assert steps == sorted(steps) and len(set(steps)) > 40
        assert not re.search(r"Traceback", clients.text("w0"))
