"""The tutorial-style corpus of issue 29: which programs there are and how one is run.

Every program here is a complete TF 1.x program written as tutorials write them, runnable as
``python program.py`` under nbdist and as ``python program.py --tf`` under real TensorFlow (the
import line is the only difference). Its last stdout line is JSON: ``values`` (the numbers to
compare), ``deterministic`` and, for a program whose run is not deterministic, its stated
``target`` (each value's minimum).

`run()` runs one: a ``"single"`` program as one process, a ``"tf_test"`` file (a
`tf.test.TestCase` module of tests/tf_style/) as one process reporting how many tests ran and
whether all passed, a ``"cluster"`` program as a ps (or ``ps_tasks`` of them) and two workers
(each its own process on 127.0.0.1; output in files under `log_dir`), every wait
bounded and every process killed by PID at the end. `record_tf.py` records real TF's results
in `tf_outputs.json`; tests/test_tutorial_corpus.py runs nbdist and compares.
"""

import hashlib
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
OUTPUTS = HERE / "tf_outputs.json"

# program file -> how it runs. `tf_start_worker1_after`: real TF's non-chief
# MonitoredTrainingSession that finds the model not yet initialized sleeps 30 s before it looks
# again, so under TF worker 1 starts once the chief's log shows this text. `ps_tasks`: how many
# ps processes a cluster program gets (default 1).
PROGRAMS = {
    "mlp_losses_metrics.py": {"kind": "single"},
    "cnn_layers_test.py": {"kind": "tf_test", "path": HERE.parent / "tf_style" / "cnn_layers_test.py"},
    "cifar_bn_towers.py": {"kind": "single"},
    "mnist_cnn_between_graph.py": {"kind": "cluster"},
    "sync_replicas_cnn.py": {
        "kind": "cluster",
        "sync": True,
        "tf_start_worker1_after": "Done running local_init_op",
    },
    "data_pipeline_shards.py": {"kind": "cluster", "tf_start_worker1_after": "Done running local_init_op"},
    "word2vec_distributed.py": {
        "kind": "cluster",
        "ps_tasks": 2,
        "tf_start_worker1_after": "Done running local_init_op",
    },
}
TIMEOUT_S = {"nbdist": 60, "tf": 180}
TF_SYNC_GRACE_S = 10  # how long a TF synchronous non-chief may outlive its chief (TF's known hang)


def path(name):
    return PROGRAMS[name].get("path", HERE / name)


def sha256(name):
    return hashlib.sha256(path(name).read_bytes()).hexdigest()


def tf_version():
    """The installed tensorflow's version (without importing it), or None."""
    try:
        return importlib.metadata.version("tensorflow")
    except importlib.metadata.PackageNotFoundError:
        return None


def _env(lib):
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    )
    if lib == "tf":
        env.update(TF_CPP_MIN_LOG_LEVEL="2", TF_USE_LEGACY_KERAS="1")
        env.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")  # TF's reference kernels, not oneDNN's reordered sums
    return env


def _last_json(out):
    return json.loads(out.strip().splitlines()[-1])


def _check_exit(name, lib, task, code, err):
    if code != 0:
        raise RuntimeError(f"{name} under {lib} ({task}) exited {code} (None: killed, hung):\n{err[-4000:]}")


def _test_report(done):
    """A unittest run's report: how many tests ran, skipped and failed, whether it passed."""
    text = done.stdout + done.stderr
    ran = re.findall(r"^Ran (\d+) tests? in", text, re.M)
    skipped = re.findall(r"skipped=(\d+)", text)
    return {
        "deterministic": True,
        "values": {},
        "passed": done.returncode == 0,
        "tests_run": int(ran[-1]) if ran else 0,
        "skipped": int(skipped[-1]) if skipped else 0,
        **({} if done.returncode == 0 else {"output": text[-4000:]}),
    }


def _free_ports(n):
    sys.path.insert(0, str(REPO / "tests"))
    from procs import free_port  # tests/procs.py, found through tests/

    return [free_port() for _ in range(n)]


def run(name, lib, log_dir):
    """Runs program `name` under `lib` ("nbdist" or "tf"); returns ``{"chief": json, "workers":
    {task: json}}`` (a single program's one process is the chief). Raises RuntimeError when a
    process fails, prints a traceback or is still running at the bound."""
    spec = PROGRAMS[name]
    log_dir = Path(log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    args = ["--tf"] if lib == "tf" else []
    deadline = time.monotonic() + TIMEOUT_S[lib]
    if spec["kind"] in ("single", "tf_test"):
        env = _env(lib)
        env.pop("NBDIST_AS_TF", None)
        try:
            done = subprocess.run(
                [sys.executable, str(path(name)), *args],
                capture_output=True,
                text=True,
                env=env,
                cwd=path(name).parent if spec["kind"] == "tf_test" else log_dir,
                timeout=TIMEOUT_S[lib],
                check=False,
            )
        except subprocess.TimeoutExpired as e:  # (subprocess.run kills the child by PID)
            raise RuntimeError(f"{name} under {lib} still running after {TIMEOUT_S[lib]} s") from e
        if spec["kind"] == "tf_test":
            return {"chief": _test_report(done), "workers": {}}
        _check_exit(name, lib, "its process", done.returncode, done.stderr)
        result = _last_json(done.stdout)
        return {"chief": result, "workers": {0: result}}
    return _Cluster(name, lib, spec, log_dir, deadline).result()


class _Cluster:
    """A ps (or ``ps_tasks`` of them) and two workers of one program, started at construction;
    `result()` waits (bounded) and kills every process by PID."""

    def __init__(self, name, lib, spec, log_dir, deadline):
        self.name, self.lib, self.spec, self.log_dir, self.deadline = name, lib, spec, log_dir, deadline
        n_ps = spec.get("ps_tasks", 1)
        *ps, w0, w1 = _free_ports(n_ps + 2)
        self.ps = ["ps"] if n_ps == 1 else [f"ps{i}" for i in range(n_ps)]
        common = [
            f"--ps_hosts={','.join(f'localhost:{port}' for port in ps)}",
            f"--worker_hosts=localhost:{w0},localhost:{w1}",
            *(["--tf"] if lib == "tf" else []),
        ]
        self.argv = {
            **{proc: [*common, "--job_name=ps", f"--task_index={i}"] for i, proc in enumerate(self.ps)},
            "worker0": [*common, "--job_name=worker", "--task_index=0"],
            "worker1": [*common, "--job_name=worker", "--task_index=1"],
        }
        self.procs, self.files = {}, []
        try:
            for proc in self.ps:
                self._start(proc)
            self._start("worker0")
            marker = spec.get("tf_start_worker1_after") if lib == "tf" else None
            if marker:
                while time.monotonic() < self.deadline and self.procs["worker0"].poll() is None:
                    if marker in (log_dir / "worker0.err").read_text():
                        break
                    time.sleep(0.1)
            self._start("worker1")
        except BaseException:
            self.kill()
            raise

    def _start(self, proc):
        out, err = (open(self.log_dir / f"{proc}.{kind}", "w") for kind in ("out", "err"))  # noqa: SIM115
        self.files += [out, err]
        self.procs[proc] = subprocess.Popen(
            [sys.executable, str(HERE / self.name), *self.argv[proc]],
            stdout=out,
            stderr=err,
            env=_env(self.lib),
            cwd=self.log_dir,
        )

    def _wait(self, proc, deadline):
        try:
            return self.procs[proc].wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            return None

    def result(self):
        try:
            codes = {0: self._wait("worker0", self.deadline)}
            tf_sync = self.lib == "tf" and self.spec.get("sync")
            deadline = min(self.deadline, time.monotonic() + TF_SYNC_GRACE_S) if tf_sync else self.deadline
            codes[1] = self._wait("worker1", deadline)
            ps_exited = [proc for proc in self.ps if self.procs[proc].poll() is not None]
        finally:
            self.kill()
        if ps_exited:
            raise RuntimeError(f"{self.name} under {self.lib}: {ps_exited} exited before it was killed")
        workers = {}
        for task, code in codes.items():
            out, err = ((self.log_dir / f"worker{task}.{kind}").read_text() for kind in ("out", "err"))
            if code is None and tf_sync and task == 1:
                continue  # TF's known behaviour: waiting for a token the finished chief never sends
            _check_exit(self.name, self.lib, f"worker {task}", code, err)
            # TF's synchronous chief prints its queue runner thread's CancelledError when it closes.
            tolerated = err.count("Exception in thread QueueRunnerThread") if tf_sync else 0
            if err.count("Traceback") > tolerated:
                raise RuntimeError(f"{self.name} under {self.lib}, worker {task}:\n{err[-4000:]}")
            workers[task] = _last_json(out)
        return {"chief": workers[0], "workers": workers}

    def kill(self):
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        for f in self.files:
            f.close()
        self.files = []
