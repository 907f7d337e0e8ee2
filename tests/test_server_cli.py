"""`python -m nbdist.server`: a task as its own process (TF_CONFIG, signals, bad input)."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

import nbdist as tf
from procs import REPO, free_port

pytestmark = pytest.mark.slow


def _env(**extra):
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("TF_CONFIG", None)
    env.update(extra)
    return env


def _start(args, env):
    proc = subprocess.Popen(
        [sys.executable, "-m", "nbdist.server", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    line = proc.stdout.readline()
    return proc, line


def test_tf_config_names_the_cluster_and_the_task():
    cluster = {"worker": [f"localhost:{free_port()}"]}
    env = _env(TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": "worker", "index": 0}}))
    proc, line = _start([], env)
    try:
        assert line.startswith("nbdist-server ready /job:worker/replica:0/task:0"), line
        tf.reset_default_graph()
        with tf.Session(f"grpc://{cluster['worker'][0]}") as sess:
            assert sess.run(tf.constant(2.0) * 3.0) == 6.0
    finally:
        proc.terminate()
        proc.wait(10)
        proc.stdout.close()
        proc.stderr.close()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_the_server_cleanly_and_frees_the_port(sig):
    address = f"localhost:{free_port()}"
    args = ["--cluster", json.dumps({"local": [address]}), "--job", "local", "--task", "0"]
    proc, line = _start(args, _env())
    assert "ready" in line
    started = time.monotonic()
    proc.send_signal(sig)
    assert proc.wait(10) == 0
    assert time.monotonic() - started < 3.0
    proc.stdout.close()
    proc.stderr.close()
    proc, line = _start(args, _env())  # the same port binds again at once
    try:
        assert "ready" in line
    finally:
        proc.terminate()
        proc.wait(10)
        proc.stdout.close()
        proc.stderr.close()


def test_bad_cluster_json_is_a_usage_error():
    result = subprocess.run(
        [sys.executable, "-m", "nbdist.server", "--cluster", "{not json", "--job", "x", "--task", "0"],
        check=False,
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
    )
    assert result.returncode == 2 and "--cluster" in result.stderr


def test_missing_cluster_says_what_to_give():
    result = subprocess.run(
        [sys.executable, "-m", "nbdist.server"],
        check=False,
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
    )
    assert result.returncode == 2 and "TF_CONFIG" in result.stderr


def test_a_task_not_in_the_cluster_is_reported():
    args = ["--cluster", json.dumps({"local": [f"localhost:{free_port()}"]}), "--job", "ps", "--task", "0"]
    result = subprocess.run(
        [sys.executable, "-m", "nbdist.server", *args],
        check=False,
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
    )
    assert result.returncode == 2 and "'ps'" in result.stderr


@pytest.mark.parametrize("keyed", [False, True], ids=["keyless", "keyed"])
def test_a_keyless_server_says_on_stderr_that_anyone_reaching_it_can_act_as_its_user(keyed):
    """Issue 36 §9: a keyless server let another local user write files as its user."""
    address = f"localhost:{free_port()}"
    env = _env()
    env.pop("NBDIST_CLUSTER_KEY_FILE", None)
    env.pop("NBDIST_CLUSTER_KEY", None)
    if keyed:
        env["NBDIST_CLUSTER_KEY"] = os.urandom(32).hex()
    args = ["--cluster", json.dumps({"local": [address]}), "--job", "local", "--task", "0"]
    proc, line = _start(args, env)
    assert "ready" in line, line
    proc.terminate()
    assert proc.wait(10) == 0
    err = proc.stderr.read()
    proc.stdout.close()
    proc.stderr.close()
    said = (
        f"/job:local/replica:0/task:0 serves {address} without a cluster key: anyone who can reach that "
        "port (any local user too) can run ops on it and read and write files as user"
    )
    assert (said in err) is not keyed, err
    assert ("`nbdist keys new DIR`, then NBDIST_CLUSTER_KEY_FILE=DIR/cluster.key" in err) is not keyed, err
