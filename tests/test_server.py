"""`tf.train.Server` in-process: lifecycle, ports, targets, and a server that survives garbage."""

import logging
import os
import socket
import threading
import time

import msgpack
import pytest
import zmq

import nbdist as tf
from nbdist.runtime import sched
from nbdist.runtime.net import transport, wire
from nbdist.runtime.remote import parse_target
from nbdist.runtime.server_lib import Server
from procs import free_port


@pytest.fixture
def server():
    s = Server.create_local_server()
    yield s
    s.stop()


@pytest.fixture
def raw_dealer(server):
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(transport.zmq_endpoint(server.address))
    yield sock
    sock.close(linger=0)


def _recv(sock, timeout_ms=5000):
    assert sock.poll(timeout_ms), "no reply from the server"
    return wire.decode(sock.recv_multipart())


def test_create_local_server_target_and_server_def(server):
    assert server.target.startswith("zmq://localhost:")
    assert server.server_def.job_name == "localhost" and server.server_def.task_index == 0


@pytest.mark.parametrize("form", ["zmq://{a}", "grpc://{a}", "{a}"])
def test_every_target_form_reaches_the_master(server, form):
    tf.reset_default_graph()
    c = tf.constant(b"Hello, distributed TensorFlow!")
    with tf.Session(form.format(a=server.address)) as sess:
        assert sess.run(c) == b"Hello, distributed TensorFlow!"


@pytest.mark.parametrize(("setting", "policy"), [(None, "batch"), ("0", "default")])
def test_the_io_thread_is_a_batch_thread_unless_turned_off_and_status_says_which(
    monkeypatch, setting, policy
):
    if setting is None:
        monkeypatch.delenv(sched.BATCH_ENV, raising=False)
    else:
        monkeypatch.setenv(sched.BATCH_ENV, setting)
    main_policy = os.sched_getscheduler(0)
    with Server.create_local_server() as s:
        with tf.Session(s.target) as sess:
            assert sess.run(tf.constant(2.0) * 3.0) == 6.0  # it serves either way
        [io] = [t for t in threading.enumerate() if t.name == f"nbdist-io-{s.address}"]
        expected = os.SCHED_BATCH if policy == "batch" else main_policy
        assert os.sched_getscheduler(io.native_id) == expected
        assert transport.channel_to(s.address).call("Status", {}, timeout_s=10.0)["io_policy"] == policy
    assert os.sched_getscheduler(0) == main_policy  # only the I/O thread: not its creator


def test_a_keyless_server_warns_through_tf_logging_that_anyone_reaching_it_can_act_as_its_user(
    monkeypatch, caplog
):
    """Issue 36 §9: what tutorial scripts run, an in-process `tf.train.Server`, says it too."""
    monkeypatch.delenv("NBDIST_CLUSTER_KEY", raising=False)
    monkeypatch.delenv("NBDIST_CLUSTER_KEY_FILE", raising=False)
    with caplog.at_level(logging.WARNING, logger="nbdist"):
        keyless = Server.create_local_server()
        keyless.stop()
        keyed = Server({"local": [f"localhost:{free_port()}"]}, "local", 0, cluster_key=os.urandom(32))
        keyed.stop()
    (warning,) = [r for r in caplog.records if "without a cluster key" in r.getMessage()]
    assert warning.name == "nbdist" and warning.levelno == logging.WARNING
    assert warning.getMessage().startswith(
        f"/job:localhost/replica:0/task:0 serves {keyless.address} without a cluster key: anyone who can "
        "reach that port (any local user too) can run ops on it and read and write files as user"
    ), warning.getMessage()
    assert "NBDIST_CLUSTER_KEY_FILE=DIR/cluster.key" in warning.getMessage()


def test_bad_target_says_what_a_target_looks_like():
    with pytest.raises(ValueError, match="is not 'zmq://host:port'"):
        parse_target("zmq://nohost")


def test_binding_a_port_in_use_names_the_address():
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(OSError, match=rf"localhost:{port}.*another server"):
            Server({"local": [f"localhost:{port}"]})


def test_a_stopped_server_frees_its_port_at_once():
    port = free_port()
    for _ in range(3):  # re-running a notebook cell
        s = Server({"local": [f"localhost:{port}"]})
        s.stop()


def test_garbage_gets_an_error_reply_and_the_server_keeps_serving(server, raw_dealer):
    raw_dealer.send_multipart([wire.join_head(b"", b"\xc1garbage")])
    reply = _recv(raw_dealer)
    assert reply["type"] == "Error" and "undecodable" in reply["message"]
    raw_dealer.send_multipart(wire.encode("Ping", 2, {}))
    assert _recv(raw_dealer)["type"] == "Pong"


def test_unknown_request_type_is_an_error_reply(raw_dealer):
    raw_dealer.send_multipart(wire.encode("Launch", 5, {}))
    reply = _recv(raw_dealer)
    assert reply["id"] == 5 and "unknown request type 'Launch'" in reply["message"]


def test_request_missing_a_field_is_an_error_reply(raw_dealer):
    raw_dealer.send_multipart(wire.encode("RunGraph", 6, {}))
    assert "missing field 'handle'" in _recv(raw_dealer)["message"]


def test_signed_server_refuses_unsigned_requests():
    key = wire.new_key()
    s = Server({"local": [f"localhost:{free_port()}"]}, cluster_key=key)
    sock = zmq.Context.instance().socket(zmq.DEALER)
    try:
        sock.connect(transport.zmq_endpoint(s.address))
        sock.send_multipart(wire.encode("Ping", 1, {}))  # no key
        assert sock.poll(5000)
        reply = wire.decode(sock.recv_multipart(), key)  # the refusal itself is signed
        assert reply["type"] == "Error" and "unsigned message refused" in reply["message"]
        assert reply["code"] == tf.errors.UNAUTHENTICATED
        sock.send_multipart(wire.encode("Ping", 2, {}, key, wire.SenderStamp()))
        assert sock.poll(5000) and wire.decode(sock.recv_multipart(), key)["type"] == "Pong"
    finally:
        sock.close(linger=0)
        s.stop()


def test_oversized_header_field_types_do_not_crash_the_server(server, raw_dealer):
    head = msgpack.packb({"v": wire.PROTOCOL_VERSION, "type": "RunStep", "id": 9, "handle": 3})
    raw_dealer.send_multipart([wire.join_head(b"", head)])
    reply = _recv(raw_dealer)
    assert reply["type"] == "Error"
    raw_dealer.send_multipart(wire.encode("Status", 10, {}))
    assert _recv(raw_dealer)["type"] == "StatusResponse"


def test_server_context_manager_stops_it():
    with Server({"local": [f"localhost:{free_port()}"]}) as s:
        assert "serving" in repr(s)
    assert "stopped" in repr(s)


def test_job_name_is_required_when_the_cluster_has_several_jobs():
    with pytest.raises(ValueError, match="job_name must be given"):
        Server({"ps": ["localhost:1"], "worker": ["localhost:2"]}, start=False)


def test_a_refused_request_gets_an_error_the_client_can_match():
    key = wire.new_key()
    s = Server({"local": [f"localhost:{free_port()}"]}, cluster_key=key)
    try:
        channel = transport.Channel(s.address, "/job:local/task:0", key=None)
        with pytest.raises(tf.errors.UnauthenticatedError, match="unsigned message refused"):
            channel.call("Ping", {}, timeout_s=5)
        channel.close()
        assert s.signed
    finally:
        s.stop()


def test_stop_returns_promptly():
    import time

    s = Server({"local": [f"localhost:{free_port()}"]})
    started = time.monotonic()
    s.stop()
    assert time.monotonic() - started < 0.1


def test_a_target_nobody_serves_is_unavailable_within_the_connect_bound(monkeypatch):
    import time

    monkeypatch.setattr(transport, "CONNECT_TIMEOUT_S", 0.5)
    address = f"localhost:{free_port()}"  # nothing listens there
    tf.reset_default_graph()
    c = tf.constant(1.0)
    started = time.monotonic()
    with tf.Session(f"zmq://{address}") as sess, pytest.raises(tf.errors.UnavailableError, match=address):
        sess.run(c)
    assert time.monotonic() - started < 2.0


def test_the_server_only_composes_the_services_rpc_tables():
    from nbdist.runtime.worker import LocalWorker, RemoteWorker

    s = Server({"local": [f"localhost:{free_port()}"]}, start=False)
    assert set(s.master.rpc_table()) == {"CreateSession", "ExtendSession", "RunStep", "CloseSession", "Reset"}
    assert set(s.worker.rpc_table()) == {
        "RegisterGraph",
        "DeregisterGraph",
        "RunGraph",
        "AbortStep",
        "SendTensor",
        "CleanupAll",
    }
    assert s.request_types() == sorted([*s.master.rpc_table(), *s.worker.rpc_table(), "Ping", "Status"])
    with pytest.raises(ValueError, match=r"\['Ping', 'Status'\] already handled"):
        s.add_service(s)  # one service per request type
    stub_api = {"register_graph", "deregister_graph", "run_graph", "abort_step", "cleanup_all"}
    for stub in (LocalWorker, RemoteWorker):
        assert stub_api <= {n for n in vars(stub) if not n.startswith("_")}


def test_an_address_without_a_port_is_invalid_argument_and_value_error():
    with pytest.raises(tf.errors.InvalidArgumentError, match="'localhost' has no port") as e:
        Server({"local": ["localhost"]}, job_name="local", task_index=0)
    assert isinstance(e.value, ValueError)


def test_server_def_round_trips_into_a_server():
    s = Server.create_local_server(start=False)
    again = Server(s.server_def, start=False)
    assert again.server_def == s.server_def
    assert tf.train.ClusterSpec(s.server_def.cluster) == s.cluster_spec


def test_stop_cancels_a_step_blocked_on_a_queue(server):
    import threading

    tf.reset_default_graph()
    q = tf.FIFOQueue(1, [tf.float32])
    dequeue = q.dequeue()
    sess = tf.Session(server.target)
    sess.run(q.enqueue(1.0))
    sess.run(dequeue)
    raised = []

    def blocked():
        try:
            sess.run(dequeue)
        except tf.errors.OpError as e:
            raised.append(e)

    t = threading.Thread(target=blocked, daemon=True)
    t.start()
    wait_until = time.monotonic() + 10
    while not server.worker._running:
        assert time.monotonic() < wait_until, "the dequeue never started"
        time.sleep(0.02)
    server.stop()
    t.join(10)
    assert not t.is_alive()
    assert raised and isinstance(raised[0], (tf.errors.CancelledError, tf.errors.UnavailableError))
    # (the session is in the server's process: its in-process call ends too, naming the server)
    assert server.address in raised[0].message or "/job:localhost" in raised[0].message, raised[0].message


@pytest.mark.slow
def test_a_process_whose_server_holds_a_blocked_step_exits_when_main_ends():
    import subprocess
    import sys
    import textwrap

    child = textwrap.dedent(
        """
        import threading, time
        import nbdist as tf
        server = tf.train.Server.create_local_server()
        q = tf.FIFOQueue(1, [tf.float32])
        d = q.dequeue()
        sess = tf.Session(server.target)
        threading.Thread(target=lambda: sess.run(d), daemon=True).start()
        while not server.worker._running:
            time.sleep(0.01)
        print("main ends", flush=True)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", child], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "main ends" in out.stdout
