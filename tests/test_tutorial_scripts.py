"""The "test of truth": TF 1.x tutorial-style training scripts, run as separate processes.

`train_scripts/supervisor_replica.py` (flags, `Supervisor`, hand-wired `SyncReplicasOptimizer`,
`xw_plus_b`, `clip_by_value`, Adam/Adagrad/RMSProp, `tf.metrics.accuracy`) and
`train_scripts/mts_replica.py` (`MonitoredTrainingSession`, `decode_csv` on fed CSV lines,
`clip_by_global_norm`, int32 global step, local variables, `Scaffold`, the sync hook) together
use every API pattern of the public scripts they stand for (tests/tutorial_corpus/ has more
programs, real TF's results recorded there) (TF's `mnist_replica.py`, the
distributed how-to's trainer, two tutorial repositories and a course assignment; see
docs/architecture.md).

Each script runs as a ps (``server.join()``) and two workers, all their own processes on
127.0.0.1, asynchronous and synchronous, with nbdist and with real TensorFlow (``--tf``: the
import line is the only difference). Every worker must exit 0 without a traceback and report
a falling loss and the target global step; the ps is killed by PID at the end. Real TF's
synchronous non-chief workers may wait for ever once the chief is done (TF's known
behaviour; nbdist ends them cleanly): they get a bounded grace, are killed by PID, and only
the chief's result is checked.
"""

import importlib.util
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from procs import REPO, free_port

pytestmark = pytest.mark.slow

SCRIPTS = Path(__file__).parent / "train_scripts"
TRAIN_STEPS = 200
RUN_TIMEOUT_S = {"nbdist": 60, "tf": 180}  # TF: 12 processes import TensorFlow at once
TF_SYNC_GRACE_S = 10  # how long a TF non-chief may outlive its chief in synchronous mode


class _Cluster:
    """A ps and two workers of `script`, each its own process (output in files under `log_dir`),
    started at construction; `result()` waits (bounded) and kills every process by PID.

    With `second_worker_after`, worker 1 starts once worker 0's log shows that text (the chief has
    initialized the model): real TF's non-chief `MonitoredTrainingSession` that finds the model not
    ready sleeps 30 s before it looks again."""

    def __init__(self, script, lib, sync, log_dir, extra=(), second_worker_after=None):
        self.lib, self.sync, self.log_dir = lib, sync, log_dir
        log_dir.mkdir(parents=True, exist_ok=True)
        ps_hosts, worker_hosts = [f"localhost:{free_port()}"], [f"localhost:{free_port()}" for _ in range(2)]
        common = [
            f"--ps_hosts={','.join(ps_hosts)}",
            f"--worker_hosts={','.join(worker_hosts)}",
            f"--train_steps={TRAIN_STEPS}",
            *(["--sync_replicas"] if sync else []),
            *extra,
            *(["--tf"] if lib == "tf" else []),
        ]
        self._env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self._env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        self._argv = {
            name: [sys.executable, str(SCRIPTS / script), *common, f"--job_name={job}", f"--task_index={i}"]
            for name, job, i in (("ps", "ps", 0), ("worker0", "worker", 0), ("worker1", "worker", 1))
        }
        self.procs, self.files, self._lock, self._killed = {}, [], threading.Lock(), False
        self.deadline = time.monotonic() + RUN_TIMEOUT_S[lib]
        try:
            self._start("ps")
            self._start("worker0")
            if second_worker_after is None:
                self._start("worker1")
            else:
                threading.Thread(
                    target=self._start_after, args=("worker1", second_worker_after), daemon=True
                ).start()
        except BaseException:
            self.kill()
            raise

    def _start(self, name):
        with self._lock:
            if self._killed:
                return
            out, err = (open(self.log_dir / f"{name}.{kind}", "w") for kind in ("out", "err"))  # noqa: SIM115
            self.files += [out, err]
            self.procs[name] = subprocess.Popen(self._argv[name], stdout=out, stderr=err, env=self._env)

    def _start_after(self, name, marker):
        log = self.log_dir / "worker0.err"
        while time.monotonic() < self.deadline and not self._killed:
            if marker in log.read_text() or self.procs["worker0"].poll() is not None:
                break
            time.sleep(0.1)
        self._start(name)

    def _wait(self, name, timeout_s):
        deadline = time.monotonic() + timeout_s
        while name not in self.procs and time.monotonic() < deadline:  # (not started yet)
            time.sleep(0.05)
        try:
            return self.procs[name].wait(timeout=max(0.1, deadline - time.monotonic()))
        except (KeyError, subprocess.TimeoutExpired):
            return None

    def result(self):
        """``{task: (returncode or None if it had to be killed, stdout, stderr)}`` of the workers."""
        try:
            codes = {}
            for task, name in enumerate(("worker0", "worker1")):
                if self.lib == "tf" and self.sync and task == 1:
                    self.deadline = min(self.deadline, time.monotonic() + TF_SYNC_GRACE_S)
                codes[task] = self._wait(name, self.deadline - time.monotonic())
            assert self.procs["ps"].poll() is None, "the ps exited before the test killed it"
        finally:
            self.kill()
        return {
            task: (code, *((self.log_dir / f"worker{task}.{kind}").read_text() for kind in ("out", "err")))
            for task, code in codes.items()
        }

    def kill(self):
        with self._lock:
            self._killed = True
            for proc in self.procs.values():
                if proc.poll() is None:
                    proc.kill()
                proc.wait()
            for f in self.files:
                f.close()
            self.files = []


def _check(results, lib, sync):
    """Every worker exited 0 with no traceback, the chief and every worker that ran a step end well
    below the untrained model's loss, and the target global step was reached; a real-TF
    synchronous non-chief may hang at the end instead (killed, not checked). Returns the reports."""
    reports = {}
    for task, (rc, out, err) in sorted(results.items()):
        if rc is None and lib == "tf" and sync and task != 0:
            continue  # TF's known behaviour: waiting for a token the finished chief never sends
        assert rc == 0, f"{lib} worker {task} exited {rc} (None: hung):\n{err[-4000:]}"
        # TF's synchronous chief prints its queue runner thread's CancelledError when it closes
        # (TF's known noise, the process still exits 0); nbdist prints no traceback at all.
        tolerated = err.count("Exception in thread QueueRunnerThread") if lib == "tf" and sync else 0
        assert err.count("Traceback") == tolerated, f"{lib} worker {task}:\n{err[-4000:]}"
        reports[task] = json.loads(out.strip().splitlines()[-1])
    assert 0 in reports, "the chief did not finish"
    # The untrained model's loss: the first loss of whichever worker stepped first. (The chief's own
    # first loss is no reference: under real TF's Supervisor a sync chief may start its loop after
    # another worker's gradients were already applied.)
    untrained = max(r["first_loss"] for r in reports.values() if r["local_steps"])
    assert reports[0]["last_loss"] < 0.5 * untrained, f"{lib}: the chief did not learn: {reports}"
    for task, r in reports.items():  # the model is shared: every worker ends well below the start
        if r["local_steps"]:  # (an asynchronous worker that started after the last step has none)
            assert r["last_loss"] < 0.7 * untrained, f"{lib} worker {task}: {reports}"
    assert max(r["global_step"] for r in reports.values()) >= TRAIN_STEPS, reports
    return reports


CASES = {
    "supervisor-async": ("supervisor_replica.py", False, ["--optimizer=adagrad"]),
    "supervisor-sync": ("supervisor_replica.py", True, ["--optimizer=adam"]),
    "mts-async": ("mts_replica.py", False, ["--optimizer=adagrad"]),
    "mts-sync": ("mts_replica.py", True, ["--optimizer=rmsprop"]),
}


def _args(case, log_dir):
    script, _, extra = CASES[case]
    return [*extra, f"--checkpoint_dir={log_dir / 'ckpt'}"] if script == "mts_replica.py" else extra


@pytest.fixture(scope="module")
def tf_clusters(tmp_path_factory):
    """Real TF's run of every case, all started at once before the first test: TF takes seconds to
    start and its non-chief MonitoredTrainingSession polls the chief every 30 s, so they overlap
    with each other and with the nbdist runs. Killed by PID at the end of the module."""
    if importlib.util.find_spec("tensorflow") is None:
        yield None
        return
    root = tmp_path_factory.mktemp("tf")
    clusters = {}
    try:
        for case, (script, sync, _) in CASES.items():
            marker = "Done running local_init_op" if script == "mts_replica.py" else None
            clusters[case] = _Cluster(script, "tf", sync, root / case, _args(case, root / case), marker)
        yield clusters
    finally:
        for cluster in clusters.values():
            cluster.kill()


@pytest.mark.parametrize("case", sorted(CASES))
def test_tutorial_script_trains_under_nbdist_and_tensorflow(case, tf_clusters, tmp_path):
    script, sync, _ = CASES[case]
    ours = _check(_Cluster(script, "nbdist", sync, tmp_path, _args(case, tmp_path)).result(), "nbdist", sync)
    assert set(ours) == {0, 1}, "nbdist ends every worker cleanly, synchronous ones too"
    if sync:  # synchronous steps need every worker's gradient: both trained
        assert all(r["local_steps"] >= 1 for r in ours.values()), ours
    if tf_clusters is None:
        pytest.skip("tensorflow is not installed: nbdist's half ran, the real-TF comparison did not")
    theirs = _check(tf_clusters[case].result(), "tf", sync)
    print(f"{case}: nbdist {ours}\n{case}: tf {theirs}")  # shown with pytest -s
    # The same kind of result: `_check` asked both for the target step and the chief's loss
    # below half the untrained model's (the first loss of whichever worker stepped first: the
    # chief's own first loss is no reference, as TF's async chief may step after the other
    # worker trained a while - seen in CI, first loss 0.0996 against 1.187).
