"""Replay protection: a captured signed request is refused when it is sent again.

A signature proves who made a message, not when: without more, anyone on the network could
record a signed ``Exec`` (run this code) or ``RunStep`` and send it again later. Every
signed request carries its channel's sender stamp (epoch, counter, time); the server's
`ReplayGuard` accepts each stamp once, in order, and not from before it started.
"""

import ast
import time
from pathlib import Path

import pytest
import zmq

import nbdist
from nbdist import errors
from nbdist.runtime.net import transport, wire
from nbdist.runtime.server_lib import Server
from procs import free_port

KEY = b"k" * 32


def _stamp(epoch=7, seq=1, sent_s=None):
    return [epoch, seq, int((time.time() if sent_s is None else sent_s) * 1000)]


def test_each_stamp_is_accepted_once_and_in_order():
    guard = wire.ReplayGuard()
    guard.check(_stamp(seq=1))
    guard.check(_stamp(seq=2))
    guard.check(_stamp(epoch=8, seq=1))  # another channel counts on its own
    for seq in (2, 1):
        with pytest.raises(wire.WireError, match=rf"sender 7 already sent #{seq} \(last #2\)") as e:
            guard.check(_stamp(seq=seq))
        assert e.value.code == "UNAUTHENTICATED"
    assert guard.refused == 2


def test_old_unstamped_and_pre_start_requests_are_refused():
    guard = wire.ReplayGuard()
    with pytest.raises(wire.WireError, match="sent 400 s ago"):
        guard.check(_stamp(sent_s=time.time() - 400))
    with pytest.raises(wire.WireError, match="before this server started"):
        guard.check(_stamp(sent_s=guard.started_s - 10))
    for bad in (None, [1, 2], ["a", 1, 2], {"epoch": 1}):
        with pytest.raises(wire.WireError, match="without a valid sender stamp"):
            guard.check(bad)


def test_a_signed_message_carries_a_fresh_stamp_and_an_unsigned_one_none():
    stamp = wire.SenderStamp()
    first = wire.decode(wire.encode("Status", 1, {}, KEY, stamp), KEY)["s"]
    second = wire.decode(wire.encode("Status", 2, {}, KEY, stamp), KEY)["s"]
    assert first[0] == second[0] and second[1] == first[1] + 1
    assert "s" not in wire.decode(wire.encode("Status", 1, {}, None, stamp))


@pytest.fixture
def server():
    address = f"localhost:{free_port()}"
    s = Server({"local": [address]}, job_name="local", task_index=0, cluster_key=KEY)
    yield s, address
    s.stop()


def _raw_call(sock, frames):
    sock.send_multipart(frames)
    assert sock.poll(5000), "no reply within 5 s"
    return wire.decode(sock.recv_multipart(), KEY)


def test_a_replayed_request_gets_an_error_and_the_server_keeps_serving(server):
    _, address = server
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(transport.zmq_endpoint(address))
    try:
        captured = wire.encode(
            "Reset", 41, {"containers": ["none"]}, KEY, wire.SenderStamp(), to="/job:local/task:0"
        )
        assert _raw_call(sock, captured)["type"] != "Error"
        replayed = _raw_call(sock, captured)  # the same bytes, valid signature
        assert replayed["type"] == "Error" and replayed["id"] == 41
        assert (
            replayed["code"] == errors.UNAUTHENTICATED and "replayed message refused" in replayed["message"]
        )
    finally:
        sock.close()
    channel = transport.channel_to(address, "/job:local/task:0", KEY)
    status = channel.call("Status", {}, timeout_s=5)  # a real client is still served
    assert status["malformed_requests"] >= 1
    transport.drop_channel(address, KEY)


def _refusal(sock, key, words):
    """Waits (10 s) for the error reply whose message has `words`; fails the test without one."""
    while sock.poll(10_000):
        reply = wire.decode(sock.recv_multipart(), key)
        if reply["type"] == "Error" and words in reply["message"]:
            return reply
    pytest.fail(f"no refusal ({words!r}) within 10 s")


def _dealer_to(address):
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(transport.zmq_endpoint(address))
    return sock


@pytest.mark.slow
def test_a_captured_exec_runs_once_and_on_no_other_task(tmp_path):
    with nbdist.LocalCluster(worker=2) as cluster:
        marker = tmp_path / "ran"
        code = f"open({str(marker)!r}, 'a').write('x')"
        body = {"exec_id": "replay-test", "code": code}
        # Signed and addressed to worker 0, as a notebook's client sends it.
        captured = wire.encode("Exec", 5, body, cluster.key, wire.SenderStamp(), to="/job:worker/task:0")
        genuine, other = (_dealer_to(cluster.cluster_spec.task_address("worker", i)) for i in (0, 1))
        try:
            other.send_multipart(captured)  # recorded on its way to worker 0, replayed to worker 1
            refused = _refusal(other, cluster.key, "it is addressed to '/job:worker/task:0'")
            assert (
                refused["code"] == errors.UNAUTHENTICATED
                and "/job:worker/replica:0/task:1" in refused["message"]
            )
            genuine.send_multipart(captured)
            deadline = time.monotonic() + 30
            while not marker.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert marker.read_text() == "x", "the genuine request did not run"
            genuine.send_multipart(captured)  # an attacker's copy of the same signed bytes
            _refusal(genuine, cluster.key, "replayed")
        finally:
            genuine.close()
            other.close()
        assert marker.read_text() == "x"  # ran once, on worker 0 only


def test_a_signed_request_without_a_receiver_is_refused_and_ping_needs_none(server):
    _, address = server
    sock = _dealer_to(address)
    try:
        unaddressed = wire.encode("CloseSession", 3, {"handle": "h"}, KEY, wire.SenderStamp())
        assert "it is addressed to None" in _raw_call(sock, unaddressed)["message"]
        assert _raw_call(sock, wire.encode("Ping", 4, {}, KEY, wire.SenderStamp()))["type"] == "Pong"
    finally:
        sock.close()


def test_a_client_that_knows_only_an_address_learns_the_incarnation_and_relearns_it(server):
    s, address = server
    channel = transport.Channel(address, f"the master at {address}", KEY)
    try:
        channel.call(
            "CloseSession", {"handle": "unknown"}, timeout_s=5
        )  # (closing an unknown one is a no-op)
        assert channel.to == s._loop.incarnation
        channel.to = "0123456789abcdef"  # as if the server had restarted since
        channel._to_learned = True
        channel.call("CloseSession", {"handle": "unknown"}, timeout_s=5)
        assert channel.to == s._loop.incarnation
    finally:
        channel.close()


UNSAFE_MODULES = {"pickle", "cPickle", "_pickle", "dill", "cloudpickle", "marshal", "shelve", "jsonpickle"}
PYZMQ_PICKLERS = {"recv_pyobj", "send_pyobj", "recv_serialized", "send_serialized"}


def test_no_module_of_nbdist_can_unpickle():
    """No network path may deserialise code: nothing in nbdist imports a pickle-like module
    or uses pyzmq's pickling helpers (AST scan, lazy imports inside functions included)."""
    found = []
    for path in sorted(Path(nbdist.__file__).parent.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module.split(".")[0]]
            elif isinstance(node, ast.Attribute) and node.attr in PYZMQ_PICKLERS:
                names = [node.attr]
            for name in names:
                if name in UNSAFE_MODULES or name in PYZMQ_PICKLERS:
                    found.append(f"{path.name}:{node.lineno}: {name}")
    assert not found, f"unsafe deserialisation in nbdist: {found}"
