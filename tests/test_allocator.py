"""The allocator policy (`nbdist.runtime.allocator`): a process that runs kernels reuses the memory
of the arrays it freed instead of faulting fresh pages in for the next ones - read back as page
faults (``ru_minflt``) in fresh processes started as a user's script is."""

import json
import os
import platform
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nbdist.runtime import allocator
from nbdist.runtime.net import samehost

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the policy is glibc's mallopt")

# A user's script: starts what the test names, then churns memory as a ps applying Adam to a
# 784x1000 layer does (four new 3 MB arrays per update, the previous ones freed), and prints the
# page faults that cost and the server's Status `allocator` as one JSON line.
CHILD = textwrap.dedent(
    """
    import json, resource, sys
    import numpy as np
    import nbdist as tf

    args = json.loads(sys.argv[1])
    if args["start"] == "server":
        server = tf.train.Server(tf.train.ClusterSpec({"ps": [args["address"]]}), job_name="ps", task_index=0)
        status = server.status()["allocator"]
    else:
        sess = tf.Session()
        status = None
    state = [np.ones(784_000, np.float32) for _ in range(4)]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(20):
        state = [np.ones(784_000, np.float32) for _ in range(4)]
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    from nbdist.runtime import allocator
    print(json.dumps({"faults": faults, "status": status, "state": allocator.state()}), flush=True)
    """
)
# 20 updates of four 3 MB arrays: 15,000+ pages when each comes fresh (768 a 3 MB array)
FRESH_PAGES = 20 * 4 * 768


def run_child(start, **env):
    args = {"start": start, "address": f"localhost:{samehost.free_ports(1)[0]}"}
    clean = {k: v for k, v in os.environ.items() if k not in (*allocator.MALLOC_VARS, allocator.OFF_ENV)}
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(args)],
        env={**clean, "PYTHONPATH": str(ROOT), **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_script_server_reuses_freed_memory():
    out = run_child("server")
    assert out["status"] == "freed memory kept for reuse (up to 256 MiB a heap)"
    assert out["faults"] < FRESH_PAGES / 10, out


def test_without_the_policy_the_same_churn_faults_every_page_in():
    """What the policy saves (and that the churn above would show its absence)."""
    out = run_child("server", **{allocator.OFF_ENV: "0"})
    assert out["status"] == f"malloc's defaults ({allocator.OFF_ENV}=0)"
    assert out["faults"] > FRESH_PAGES / 2, out


def test_a_local_session_applies_it_too():
    out = run_child("session")
    assert out["state"] == "freed memory kept for reuse (up to 256 MiB a heap)"
    assert out["faults"] < FRESH_PAGES / 10, out


def test_the_users_malloc_tuning_is_kept():
    out = run_child("server", MALLOC_TRIM_THRESHOLD_="0")  # (return everything at once)
    assert out["status"] == "kept: MALLOC_TRIM_THRESHOLD_ in the environment"
    assert out["faults"] > FRESH_PAGES / 2, out
