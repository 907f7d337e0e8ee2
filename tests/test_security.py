"""Cluster secrets from private files: the signing key file, CURVE encryption, `nbdist keys`,
`--bind`, and `LocalCluster(attach=True)` (on 127.0.0.1; tests/test_multihost.py spans hosts)."""

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import zmq
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

import nbdist as tf
from nbdist.notebook import local_cluster as cluster_lib
from nbdist.runtime.net import security, transport
from procs import free_port, kernel_env

pytestmark = pytest.mark.usefixtures("fresh_graph")
needs_curve = pytest.mark.skipif(not zmq.has("curve"), reason="this ZeroMQ has no CURVE support")


@pytest.fixture
def clean_env(monkeypatch):
    """No cluster secret inherited from the test run (another test's LocalCluster sets one)."""
    for name in (security.KEY_ENV, security.KEY_FILE_ENV, security.CURVE_KEY_FILE_ENV):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.fixture
def keys(tmp_path):
    return security.new_cluster_keys(tmp_path / "keys")


def _in_new_thread(fn):
    """`fn()`'s result or exception, from a fresh thread: transport caches channels per thread,
    and a channel keeps the security settings it was made with."""
    out = {}

    def run():
        try:
            out["value"] = fn()
        except Exception as e:  # noqa: BLE001 - handed to the test
            out["error"] = e

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), "the client did not finish within 60 s"
    if "error" in out:
        raise out["error"]
    return out["value"]


def _run_doubled(target):
    with tf.Graph().as_default():
        y = tf.constant([1.0, 2.0]) * 2.0
        with tf.Session(target) as sess:
            return sess.run(y).tolist()


# -- key files ----------------------------------------------------------------------------------------
def test_keys_new_writes_private_files_and_never_overwrites(tmp_path):
    run = [sys.executable, "-m", "nbdist", "keys", "new", str(tmp_path / "k")]
    out = subprocess.run(run, capture_output=True, text=True, env=kernel_env(), timeout=60, check=True)
    assert f"export NBDIST_CLUSTER_KEY_FILE={tmp_path / 'k' / 'cluster.key'}" in out.stdout
    assert stat.S_IMODE(os.stat(tmp_path / "k").st_mode) == 0o700
    for name in ("cluster.key", "curve.key_secret") if zmq.has("curve") else ("cluster.key",):
        assert stat.S_IMODE(os.stat(tmp_path / "k" / name).st_mode) == 0o600
    again = subprocess.run(run, check=False, capture_output=True, text=True, env=kernel_env(), timeout=60)
    assert again.returncode == 1 and "exists: keys are never overwritten" in again.stderr


def test_a_key_file_open_to_others_is_refused_as_ssh_does(clean_env, keys):
    os.chmod(keys["signing"], 0o644)
    clean_env.setenv(security.KEY_FILE_ENV, keys["signing"])
    with pytest.raises(
        security.KeyFileError, match=r"accessible by group or others \(mode 0644\).*chmod 600"
    ):
        security.signing_key()
    os.chmod(keys["signing"], 0o600)
    assert len(security.signing_key()) == 32


def test_a_key_file_that_is_not_hex_is_refused(clean_env, tmp_path):
    path = tmp_path / "bad.key"
    security.write_private_file(path, b"not a key\n")
    clean_env.setenv(security.KEY_FILE_ENV, str(path))
    with pytest.raises(security.KeyFileError, match="must hold the key as hex"):
        security.signing_key()


def test_a_session_signs_with_the_key_file_of_its_process(clean_env, keys):
    key = bytes.fromhex(Path(keys["signing"]).read_text())
    server = tf.train.Server({"local": [f"localhost:{free_port()}"]}, cluster_key=key)
    try:
        with pytest.raises(tf.errors.UnauthenticatedError, match=r"unsigned message refused.*KEY_FILE"):
            _in_new_thread(lambda: _run_doubled(server.target))
        clean_env.setenv(security.KEY_FILE_ENV, keys["signing"])
        assert _in_new_thread(lambda: _run_doubled(server.target)) == [2.0, 4.0]
    finally:
        server.stop()


def _start_server_cli(args, env):
    proc = subprocess.Popen(
        [sys.executable, "-m", "nbdist", "server", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        line = proc.stdout.readline()  # the ready line, or "" when it exits
    except BaseException:
        proc.kill()
        raise
    return proc, line


@pytest.mark.slow
def test_the_server_cli_signs_with_its_key_file_which_stays_off_its_command_line(clean_env, keys):
    address = f"localhost:{free_port()}"
    args = ["--cluster", json.dumps({"local": [address]}), "--job", "local", "--task", "0"]
    proc, line = _start_server_cli([*args, "--key-file", keys["signing"]], kernel_env())
    try:
        assert line.startswith("nbdist-server ready /job:local/replica:0/task:0"), proc.stderr.read()
        key_hex = Path(keys["signing"]).read_text().strip()
        assert key_hex not in Path(f"/proc/{proc.pid}/cmdline").read_text()
        with pytest.raises(tf.errors.UnauthenticatedError, match="unsigned message refused"):
            _in_new_thread(lambda: _run_doubled(f"zmq://{address}"))
        clean_env.setenv(security.KEY_FILE_ENV, keys["signing"])
        assert _in_new_thread(lambda: _run_doubled(f"zmq://{address}")) == [2.0, 4.0]
    finally:
        proc.terminate()
        proc.communicate(timeout=10)


@pytest.mark.slow
def test_the_server_cli_refuses_a_key_file_others_can_read(keys):
    os.chmod(keys["signing"], 0o640)
    args = ["--cluster", json.dumps({"local": [f"localhost:{free_port()}"]}), "--job", "local", "--task", "0"]
    proc, line = _start_server_cli([*args, "--key-file", keys["signing"]], kernel_env())
    _, err = proc.communicate(timeout=30)
    assert line == "" and proc.returncode == 2
    assert "accessible by group or others (mode 0640)" in err and f"chmod 600 {keys['signing']}" in err


# -- binding ---------------------------------------------------------------------------------------
def test_a_server_binds_exactly_its_cluster_address(clean_env):
    port = free_port()
    server = tf.train.Server({"local": [f"127.0.0.1:{port}"]})
    try:
        assert server.bind_address == f"127.0.0.1:{port}"
        with pytest.raises(OSError):  # the port is taken on 127.0.0.1 only...
            _tcp_bind_probe("127.0.0.1", port)
        _tcp_bind_probe("127.0.0.2", port)  # ...not on the host's other addresses
    finally:
        server.stop()


def _tcp_bind_probe(host, port):
    import socket

    with socket.socket() as s:
        s.bind((host, port))


def test_a_cluster_address_of_another_host_says_to_run_there_or_bind(clean_env):
    with pytest.raises(OSError, match=r"192\.0\.2\.1:\d+.*not an address of this machine.*--bind IP"):
        tf.train.Server({"worker": [f"192.0.2.1:{free_port()}"]})


def test_bind_serves_a_cluster_name_that_does_not_resolve_yet(clean_env):
    port = free_port()
    cluster = {"worker": [f"worker-0.nbdist-test.invalid:{port}"]}
    with pytest.raises(ValueError, match=r"cannot resolve.*--bind IP"):
        tf.train.Server(cluster)
    server = tf.train.Server(cluster, bind_host="127.0.0.1")  # a pod's own IP, in Kubernetes
    try:
        assert server.bind_address == f"127.0.0.1:{port}"
        channel = transport.Channel(f"127.0.0.1:{port}", "/job:worker/task:0")
        try:
            assert channel.call("Ping", {}, timeout_s=10)["task"] == "/job:worker/replica:0/task:0"
        finally:
            channel.close()
    finally:
        server.stop()


# -- CURVE -----------------------------------------------------------------------------------------
@needs_curve
def test_curve_clients_of_the_cluster_talk_and_a_client_without_the_key_is_refused(clean_env, keys, tmp_path):
    clean_env.setenv(security.CURVE_KEY_FILE_ENV, keys["curve"])
    server = tf.train.Server.create_local_server()
    try:
        assert server.encrypted
        assert _in_new_thread(lambda: _run_doubled(server.target)) == [2.0, 4.0]
        clean_env.delenv(security.CURVE_KEY_FILE_ENV)
        with pytest.raises(
            tf.errors.UnauthenticatedError,
            match=r"master at localhost:\d+ refused.*one side encrypts with CURVE",
        ):
            _in_new_thread(lambda: _run_doubled(server.target))
        other = security.new_cluster_keys(tmp_path / "other")
        clean_env.setenv(security.CURVE_KEY_FILE_ENV, other["curve"])
        with pytest.raises(tf.errors.UnauthenticatedError, match="closed during the CURVE handshake"):
            _in_new_thread(lambda: _run_doubled(server.target))
    finally:
        server.stop()


@needs_curve
def test_a_client_with_its_own_keypair_is_refused_by_the_zap_handler(clean_env, keys):
    """Knowing the server's public key is not enough: only the cluster's keypair gets in."""
    clean_env.setenv(security.CURVE_KEY_FILE_ENV, keys["curve"])
    server = tf.train.Server.create_local_server()
    try:
        public, secret = zmq.curve_keypair()

        def rogue_client(socket):  # a CURVE client that knows the server's key, not the cluster's
            socket.curve_publickey, socket.curve_secretkey = public, secret
            socket.curve_serverkey = security.curve_keys().public
            return security.curve_keys()

        clean_env.setattr(security, "secure_client", rogue_client)
        channel = transport.Channel(server.address, "/job:localhost/task:0")
        try:
            with pytest.raises(
                tf.errors.UnauthenticatedError,
                match=r"/job:localhost/task:0 at localhost:\d+ refused.*server refused this client's CURVE key",
            ):
                channel.call("Ping", {}, timeout_s=10)
        finally:
            channel.close()
    finally:
        server.stop()


@needs_curve
@pytest.mark.slow
def test_a_local_cluster_with_a_curve_key_file_encrypts_every_task(clean_env, keys):
    clean_env.setenv(security.CURVE_KEY_FILE_ENV, keys["curve"])
    clean_env.setenv(security.KEY_FILE_ENV, keys["signing"])
    with tf.LocalCluster(ps=1, worker=1) as cluster:
        assert cluster.key == security.signing_key()  # the process's own key, not a random one
        with tf.device("/job:ps/task:0"):
            w = tf.Variable([1.0, 2.0])
        with tf.device("/job:worker/task:0"):
            y = w * 3.0
        with tf.Session(cluster.target("worker", 0)) as sess:
            sess.run(w.initializer)
            assert sess.run(y).tolist() == [3.0, 6.0]
        assert all(r["alive"] for r in cluster.status())


# -- attaching to running tasks ------------------------------------------------------------------------
def test_attach_connects_to_running_tasks_and_leaves_them_running(clean_env):
    spec = {"ps": [f"localhost:{free_port()}"], "worker": [f"localhost:{free_port()}"]}
    servers = [tf.train.Server(spec, "ps", 0), tf.train.Server(spec, "worker", 0)]
    try:
        cluster = tf.LocalCluster(spec=spec, attach=True, ready_timeout_s=10)
        assert cluster.pids == {} and "attached, running" in repr(cluster)
        rows = cluster.status()
        expected = [("ps", True, os.getpid()), ("worker", True, os.getpid())]
        assert [(r["job"], r["alive"], r["pid"]) for r in rows] == expected
        with pytest.raises(ValueError, match="was not started by this cluster"):
            cluster.kill("worker", 0)
        cluster.stop()
        assert _in_new_thread(lambda: _run_doubled(f"zmq://{spec['worker'][0]}")) == [2.0, 4.0]
    finally:
        for server in servers:
            server.stop()


def test_attach_names_a_task_that_does_not_answer(clean_env):
    address = f"localhost:{free_port()}"
    with pytest.raises(tf.errors.UnavailableError, match=f"/job:worker/task:0 at {address}"):
        tf.LocalCluster(spec={"worker": [address]}, attach=True, ready_timeout_s=1)


def test_attach_needs_a_spec():
    with pytest.raises(ValueError, match="give their spec"):
        tf.LocalCluster(attach=True, worker=1)


def test_dtf_cluster_attach_shows_the_running_tasks(clean_env):
    spec = {"worker": [f"localhost:{free_port()}"]}
    server = tf.train.Server(spec)
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "nbdist")
    try:
        with capture_output() as out:
            shell.run_line_magic("dtf_cluster", f"--spec '{json.dumps(spec)}' --attach --timeout 10")
        cluster = shell.user_ns["dtf"]
        assert cluster.attached and cluster_lib.current() is cluster
        table = out.outputs[0].data["text/plain"]  # the status table it shows
        assert "(attached, running)" in table
        assert f"worker  0      {spec['worker'][0]}  {os.getpid()}  yes" in table
        shell.run_line_magic("dtf_cluster", "stop")
        assert server.status()["address"] == spec["worker"][0]  # still serving
    finally:
        if cluster_lib.current() is not None:
            cluster_lib.current().stop()
        server.stop()


@pytest.fixture
def attached_by_magic(clean_env):
    """A shell attached (`%dtf_cluster --attach`) to a server started without --exec."""
    spec = {"worker": [f"localhost:{free_port()}"]}
    server = tf.train.Server(spec)
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "nbdist")
    try:
        with capture_output():
            shell.run_line_magic("dtf_cluster", f"--spec '{json.dumps(spec)}' --attach --timeout 10")
        yield shell, spec["worker"][0], server
    finally:
        if cluster_lib.current() is not None:
            cluster_lib.current().stop()
        server.stop()


def test_dtf_worker_on_a_task_started_without_exec_says_how_to_start_it(attached_by_magic):
    shell, address, _ = attached_by_magic
    with pytest.raises(tf.errors.FailedPreconditionError) as info:
        shell.run_cell_magic("dtf_worker", "", "print(task_index)")
    message = info.value.message
    assert f"/job:worker/task:0 at {address} runs no %%dtf_worker cells" in message
    assert "its server was started without --exec" in message
    assert "python -m nbdist.server --cluster JSON --job worker --task 0 --exec --key-file PATH" in message
    assert "unknown request type" not in message


def test_dtf_cluster_stop_on_an_attached_cluster_says_it_only_detached(attached_by_magic):
    shell, address, server = attached_by_magic
    with capture_output() as out:
        shell.run_line_magic("dtf_cluster", "stop")
    assert "Stopped" not in out.stdout
    assert "Detached from <LocalCluster" in out.stdout and "its servers were left running" in out.stdout
    assert server.status()["address"] == address  # still serving
