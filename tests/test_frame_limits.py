"""Memory before authentication: a peer without the cluster key cannot make a server hold more
than one frame's bound (`wire.MAX_FRAME_BYTES`), and tensors larger than a frame still travel
(as several frames, joined on arrival)."""

import secrets
import socket
import struct
import time

import numpy as np
import pytest

import nbdist as tf
from nbdist.runtime.net import transport, wire
from procs import ServerProcs, cluster_dict


def _peak_rss_mib(pid):
    """The most memory the process ever held (``VmHWM``): a buffer freed again still counts."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmHWM for pid {pid}")


def _zmtp_dealer(address):
    """A raw TCP connection that speaks just enough ZMTP 3.0 (NULL mechanism, a DEALER) for a
    ROUTER to read the frames that follow: what any peer can do without the cluster key."""
    host, port = address.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=10)
    greeting = b"\xff" + bytes(8) + b"\x7f" + b"\x03\x00" + b"NULL".ljust(20, b"\x00") + b"\x00" + bytes(31)
    ready = b"\x05READY" + bytes([len(b"Socket-Type")]) + b"Socket-Type" + struct.pack(">I", 6) + b"DEALER"
    sock.sendall(greeting + bytes([0x04, len(ready)]) + ready)
    return sock


def _stream_one_frame(sock, announced, limit):
    """Announces one frame of `announced` bytes, then sends up to `limit` of it; returns how
    much the server took before it closed the connection."""
    sent = 0
    chunk = bytes(1 << 20)
    try:
        sock.sendall(bytes([0x02]) + struct.pack(">Q", announced))  # a long, last frame
        while sent < limit:
            sock.sendall(chunk)
            sent += len(chunk)
    except OSError:  # the server closed the connection: the frame was refused
        pass
    return sent


@pytest.mark.slow
def test_a_peer_without_the_key_cannot_make_a_keyed_server_hold_a_gibibyte():
    key_hex = secrets.token_hex(32)
    procs = ServerProcs(cluster_dict(local=1), key_hex=key_hex)
    try:
        address, pid = procs.address("local", 0), procs.procs[("local", 0)].pid
        before = _peak_rss_mib(pid)
        sock = _zmtp_dealer(address)
        try:
            sent = _stream_one_frame(sock, announced=2**30, limit=2**30)
        finally:
            sock.close()
        grown = _peak_rss_mib(pid) - before
        assert grown < 100, f"the server grew {grown:.0f} MiB while a keyless peer streamed {sent >> 20} MiB"
        assert sent < 2**30, "the server read a whole gibibyte frame from a peer it cannot trust"
        channel = transport.channel_to(address, "/job:local/task:0", bytes.fromhex(key_hex))
        assert channel.call("Ping", {}, timeout_s=10)["type"] == "Pong"  # and it still serves
        transport.drop_channel(address, bytes.fromhex(key_hex))
    finally:
        procs.stop()


def test_a_tensor_larger_than_a_frame_travels_as_several(monkeypatch):
    monkeypatch.setattr(wire, "MAX_FRAME_BYTES", 2**20)
    value = np.arange(5 * 2**20 // 4 + 3, dtype=np.float32).reshape(-1, 1)
    key = wire.new_key()
    frames = wire.encode("SendTensor", 1, {"step_id": 1, "tensors": [["k", value]]}, key)
    assert len(frames) == 1 + 6 and all(len(memoryview(f)) <= 2**20 for f in frames[1:])
    got = wire.decode(frames, key)["tensors"][0][1]
    np.testing.assert_array_equal(got, value)
    assert got.flags.writeable


def test_a_frame_over_the_bound_is_refused_before_its_signature_is_checked(monkeypatch):
    key = wire.new_key()
    frames = wire.encode("SendTensor", 1, {"step_id": 1, "tensors": [["k", np.zeros(2**19)]]}, key)
    monkeypatch.setattr(wire, "MAX_FRAME_BYTES", 2**20)
    forged = [frames[0], bytes(2**20 + 1)]  # (a bad signature too: the bound must speak first)
    with pytest.raises(
        wire.WireError, match="tensor frame 0 of 1048577 bytes exceeds the 1048576-byte bound"
    ):
        wire.decode(forged, key)


@pytest.mark.slow
def test_a_variable_larger_than_a_frame_is_fed_and_fetched_across_processes(monkeypatch):
    monkeypatch.setenv("NBDIST_MAX_FRAME_BYTES", str(2**20))  # the servers' bound
    monkeypatch.setenv("NBDIST_SHM", "0")  # over frames, not shared memory
    monkeypatch.setattr(wire, "MAX_FRAME_BYTES", 2**20)  # this client's
    value = np.arange(3 * 2**20 // 4, dtype=np.float32)
    procs = ServerProcs(cluster_dict(local=2))
    try:
        with tf.Graph().as_default():
            fed = tf.placeholder(tf.float32, [value.size])
            with tf.device("/job:local/task:1"):
                v = tf.Variable(tf.zeros([value.size]), name="v")
                assign = v.assign(fed)
            with tf.Session(procs.target("local", 0)) as sess:
                sess.run(v.initializer)
                sess.run(assign, {fed: value})  # a 3 MiB feed: three frames to each task
                np.testing.assert_array_equal(sess.run(v), value)  # three frames back
    finally:
        procs.stop()


def _handshake_reply(sock, timeout_s=5.0):
    """What the server answers a raw ZMTP greeting with: b"READY" (admitted) or b"ERROR"."""
    sock.settimeout(timeout_s)
    data = b""
    while b"READY" not in data and b"ERROR" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return b"READY" if b"READY" in data else b"ERROR" if b"ERROR" in data else data


def test_connections_past_the_cap_are_refused_in_the_handshake(monkeypatch):
    """$NBDIST_MAX_CONNECTIONS=3: three raw peers are admitted, a fourth is refused before it can
    send a byte of a message, and one leaving makes room again; the cluster's own client works."""
    monkeypatch.setenv("NBDIST_MAX_CONNECTIONS", "3")
    procs = ServerProcs(cluster_dict(local=1))
    peers = []
    try:
        address = procs.address("local", 0)
        for _ in range(3):
            peers.append(_zmtp_dealer(address))
            assert _handshake_reply(peers[-1]) == b"READY"
        extra = _zmtp_dealer(address)
        assert _handshake_reply(extra) == b"ERROR"
        extra.close()
        peers.pop().close()
        deadline = time.monotonic() + 5
        while True:  # the server notices the close at its next decision
            again = _zmtp_dealer(address)
            reply = _handshake_reply(again)
            if reply == b"READY" or time.monotonic() > deadline:
                break
            again.close()
        assert reply == b"READY"
        peers.append(again)
        for p in peers:
            p.close()
        with tf.Graph().as_default(), tf.Session(procs.target("local", 0)) as sess:
            assert sess.run(tf.constant(2.0) * 3.0) == 6.0
    finally:
        for p in peers:
            p.close()
        procs.stop()
