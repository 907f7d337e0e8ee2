"""``examples/mnist_mlp_distributed.py`` under nbdist: 1 ps + 1 worker, each its own process.

A few steps of the MNIST-shaped MLP, between-graph (the worker's own client) and in-graph (a
separate client process driving the worker's tower): the worker prints when its first step
ended and when its loss's running mean fell below the target (what benchmarks/bench_models.py
reads), then one JSON line, and the loss has decreased. With one worker the run is
deterministic (the same initial weights, the same batches).
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from procs import REPO, free_port

SCRIPT = str(Path(REPO) / "examples" / "mnist_mlp_distributed.py")
STEPS = 150
TARGET = 2.28  # the 50-step mean starts near 2.30 and ends near 2.25
TIMEOUT_S = 60


def _start(args, stdout=subprocess.DEVNULL):
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen(
        [sys.executable, SCRIPT, *args], stdout=stdout, stderr=subprocess.PIPE, text=True, env=env
    )


@pytest.mark.parametrize("in_graph", [False, True], ids=["between-graph", "in-graph"])
def test_the_example_trains_and_reports_one_json_line(in_graph):
    hosts = [f"--ps_hosts=localhost:{free_port()}", f"--worker_hosts=localhost:{free_port()}"]
    common = [
        *hosts,
        f"--train_steps={STEPS}",
        f"--target_loss={TARGET}",
        *(["--in_graph"] if in_graph else []),
    ]
    procs = []
    try:
        procs.append(_start([*common, "--job_name=ps", "--task_index=0"]))
        if in_graph:  # the worker only serves; the client is its own process
            procs.append(_start([*common, "--job_name=worker", "--task_index=0"]))
            procs.append(_start(common, stdout=subprocess.PIPE))
        else:
            procs.append(_start([*common, "--job_name=worker", "--task_index=0"], stdout=subprocess.PIPE))
        out, err = procs[-1].communicate(timeout=TIMEOUT_S)
        assert procs[-1].returncode == 0, err[-4000:]
        assert all(p.poll() is None for p in procs[:-1]), "a server exited before it was killed"
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.communicate()

    name = "Client" if in_graph else "Worker 0"
    assert re.search(rf"^{name}: training begins @ [\d.]+ \(global step 0\)$", out, re.M), out
    assert re.search(
        rf"^{name}: mean loss of 50 steps below {TARGET} after [\d.]+ s \(global step \d+\)$", out, re.M
    )
    report = json.loads(out.strip().splitlines()[-1])
    assert report["mode"] == ("in_graph" if in_graph else "async")
    assert report["library"].startswith("nbdist")
    assert (report["workers"], report["hidden"], report["batch_size"]) == (1, 100, 100)
    assert report["local_steps"] == report["global_step"] == STEPS
    assert report["global_steps_per_s"] > 0 and report["wall_s"] > 0
    assert report["final_loss"] < report["first_loss"] - 0.02, report  # 50-step means: it learned
    assert 0 < report["time_to_target_s"] <= report["wall_s"]
    assert 50 <= report["global_step_at_target"] < STEPS
