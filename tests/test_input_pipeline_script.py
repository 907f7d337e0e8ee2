"""`train_scripts/csv_queue_replica.py` (string_input_producer + TextLineReader + decode_csv, or
TFRecordReader + parse_single_example of `tf.train.Example`s, + shuffle_batch feeding a linear model on a ps, asynchronous between-graph training, TF's
Coordinator loop ending at num_epochs) as a ps and two workers, each its own process, under
nbdist and real TF (``--tf``: the import line is the only difference).

Both must end the same way: every worker reads each of its 64 records once per epoch (3
epochs, batches of 8: exactly 24 steps), its loop ends with `OutOfRangeError` and
``coord.should_stop()`` true, it exits 0, and its loss ends near zero (the chief's falls). Which worker steps first is a
race in both libraries, so losses are compared in kind, not exactly. The ps is killed by PID.
"""

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from procs import REPO, free_port

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).parent / "train_scripts" / "csv_queue_replica.py"
TIMEOUT_S = {"nbdist": 60, "tf": 120}


def _run(lib, tmp_path, data_format):
    """Runs the ps and two workers; ``{task: (returncode or None if killed, stdout, stderr)}``."""
    hosts = [
        f"--ps_hosts=localhost:{free_port()}",
        f"--worker_hosts=localhost:{free_port()},localhost:{free_port()}",
    ]
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    data_dir = tmp_path / f"{lib}-{data_format}"
    data_dir.mkdir()
    procs, files = {}, []
    try:
        for name, job, i in (("ps", "ps", 0), ("worker0", "worker", 0), ("worker1", "worker", 1)):
            out, err = (open(data_dir / f"{name}.{k}", "w") for k in ("out", "err"))  # noqa: SIM115
            files += [out, err]
            argv = [sys.executable, str(SCRIPT), *hosts, f"--job_name={job}", f"--task_index={i}"]
            argv += [f"--data_dir={data_dir}", f"--format={data_format}", *(["--tf"] if lib == "tf" else [])]
            procs[name] = subprocess.Popen(argv, stdout=out, stderr=err, env=env)
        deadline = time.monotonic() + TIMEOUT_S[lib]
        codes = {}
        for task in (0, 1):
            try:
                codes[task] = procs[f"worker{task}"].wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                codes[task] = None
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        for f in files:
            f.close()
    return {
        task: (code, *((data_dir / f"worker{task}.{k}").read_text() for k in ("out", "err")))
        for task, code in codes.items()
    }


def _check(results, lib):
    reports = {}
    for task, (rc, out, err) in sorted(results.items()):
        assert rc == 0, f"{lib} worker {task} exited {rc} (None: hung):\n{err[-4000:]}"
        assert "Traceback" not in err, f"{lib} worker {task}:\n{err[-4000:]}"
        reports[task] = r = json.loads(out.strip().splitlines()[-1])
        assert (r["local_steps"], r["records"]) == (24, 192), r  # 3 epochs of 64 records, batches of 8
        assert r["ended"] == "OutOfRangeError" and r["should_stop"], r
        assert r["last_loss"] < 0.05, r  # the shared model fits (y is exactly linear in x)
    assert reports[0]["last_loss"] < 0.5 * reports[0]["first_loss"], reports  # (the chief starts untrained)
    return reports


@pytest.mark.parametrize("data_format", ["csv", "tfrecord"])
def test_queue_pipeline_trains_under_nbdist_and_tensorflow(tmp_path, data_format):
    ours = _check(_run("nbdist", tmp_path, data_format), "nbdist")
    if importlib.util.find_spec("tensorflow") is None:
        pytest.skip("tensorflow is not installed: nbdist's half ran, the real-TF comparison did not")
    theirs = _check(_run("tf", tmp_path, data_format), "tf")
    print(f"nbdist {ours}\ntf {theirs}")  # shown with pytest -s
