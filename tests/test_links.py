"""Links (nbdist.runtime.net.links): messages between processes of one host over a raw Unix socket,
beside the ZeroMQ connection that says whether the peer lives. Real sockets, real server
processes; nothing is mocked."""

import os
import queue
import signal
import socket
import stat
import threading
import time

import numpy as np
import pytest

import nbdist as tf
from nbdist import errors
from nbdist.runtime.net import links, samehost, transport, wire
from nbdist.runtime.server_lib import Server
from procs import ServerProcs, cluster_dict, free_port


def _pair():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    return links.Link(a, "b"), links.Link(b, "a")  # (each names its peer)


def _take(link, timeout_s=10.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if link.wait_readable(100):
            frames = link.take()
            if frames is not None:
                return frames
    raise AssertionError("no message on the link")


def test_a_link_carries_messages_whole_and_in_order_however_the_bytes_arrive():
    a, b = _pair()
    try:
        # one-frame messages (written as one buffer) among three-frame ones, interleaved
        sent = [[b"head-%d" % i, b"", bytes(range(i % 256)) * 3] for i in range(500)]
        sent[::2] = [[b"small-%d" % i + bytes(range(i % 256)) * 40] for i in range(250)]
        received = []
        reader = threading.Thread(target=lambda: received.extend(_take(b) for _ in sent))
        reader.start()
        for frames in sent:  # more than the socket holds: written as the reader makes room
            a.write(frames)
        reader.join(30.0)
        assert received == sent
        # the same bytes dribbled in one at a time still frame the same message
        raw_a, raw_b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        reader = links.Link(raw_b, "dribble")
        payload = [b"x" * 10, np.arange(5, dtype=np.float32)]
        expected = [payload[0], payload[1].tobytes()]
        writer = links.Link(raw_a, "writer")
        writer.write(payload)
        data = raw_b.recv(1 << 16)  # take the framed bytes off the socket...
        loop_a, loop_b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        dribbled = links.Link(loop_b, "dribbled")
        for i in range(len(data)):  # ...and feed them again, byte by byte
            loop_a.send(data[i : i + 1])
            got = dribbled.take()
            assert (got is None) == (i < len(data) - 1)
        assert got == expected
        for link in (reader, writer, dribbled):
            link.close()
        loop_a.close()
    finally:
        a.close()
        b.close()


def test_a_message_larger_than_the_socket_buffer_waits_for_room_and_arrives_intact():
    a, b = _pair()
    big = np.random.default_rng(0).standard_normal(2_000_000).astype(np.float32)  # 8 MB
    received = []
    reader = threading.Thread(target=lambda: received.append(_take(b, 30.0)))
    reader.start()
    try:
        a.write([b"header", big], timeout_s=30.0)  # blocks (bounded) until the reader made room
        reader.join(30.0)
        assert received and received[0][0] == b"header"
        np.testing.assert_array_equal(np.frombuffer(received[0][1], np.float32), big)
    finally:
        a.close()
        b.close()


def test_a_writer_whose_peer_never_reads_gives_up_within_its_bound():
    a, b = _pair()
    try:
        started = time.monotonic()
        with pytest.raises(links.LinkClosedError, match=r"the link to b made no room for 0\.3 s"):
            a.write([b"x" * (8 << 20)], timeout_s=0.3)
        assert time.monotonic() - started < 5.0
        assert a.closed
    finally:
        a.close()
        b.close()


def test_a_loop_thread_queues_what_the_socket_does_not_take_up_to_a_bound(monkeypatch):
    """On a serving loop's thread a write never blocks: the rest waits for POLLOUT; a peer that
    reads nothing for MAX_BACKLOG_BYTES loses its link (as ZeroMQ drops past its high-water mark)."""
    monkeypatch.setattr(links, "MAX_BACKLOG_BYTES", 4 << 20)
    a, b = _pair()
    backlogged = []
    links.set_flusher(backlogged.append)
    try:
        a.write([b"x" * (1 << 20)])  # more than the socket holds: returns at once, queued
        assert backlogged == [a] and not a.closed
        with pytest.raises(links.LinkClosedError, match=r"held \d+ bytes its peer did not read"):
            for _ in range(8):
                a.write([b"y" * (1 << 20)])
        assert a.closed
    finally:
        links.set_flusher(None)
        a.close()
        b.close()


def test_bytes_that_do_not_frame_a_message_close_the_link_with_an_error():
    raw, other = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    link = links.Link(other, "a stranger")
    try:
        raw.sendall((0).to_bytes(4, "little"))  # a message of no frames
        with pytest.raises(links.LinkError, match="a message of 0 frames on the link from a stranger"):
            link.take()
        assert link.closed
    finally:
        raw.close()
        link.close()


def test_the_peer_closing_is_told_after_the_messages_that_arrived_whole():
    a, b = _pair()
    a.write([b"last words"])
    a.close()
    assert _take(b) == [b"last words"]
    with pytest.raises(links.LinkClosedError, match=r"^a closed the link$"):
        b.take()
    b.close()


# -- a server's links ---------------------------------------------------------------------------------
def test_a_channel_to_a_loopback_server_takes_its_link_unless_told_not_to(monkeypatch):
    address = f"localhost:{free_port()}"
    server = Server({"local": [address]}, "local", 0)
    try:
        path = samehost.ipc_path(address, ".link")
        st = os.stat(os.path.dirname(path))
        assert stat.S_IMODE(st.st_mode) == 0o700 and stat.S_ISSOCK(os.stat(path).st_mode)
        channel = transport.Channel(address, "/job:local/task:0")
        try:
            assert channel.on_link
            assert channel.call("Ping", {}, timeout_s=10.0)["type"] == "Pong"
            assert channel.call("Status", {}, timeout_s=10.0)["link_clients"] == 1  # seen by the server
        finally:
            channel.close()
        inbox = transport.Channel(address, "inbox", identity=b"nbdist-client-test")
        try:  # a client the server writes to unasked names its routing id on its link (Hello)
            assert inbox.on_link
            _wait_until(lambda: _link_named(server, b"nbdist-client-test"))
        finally:
            inbox.close()
        monkeypatch.setenv(links.LINKS_ENV, "0")
        channel = transport.Channel(address, "/job:local/task:0")
        try:
            assert channel.link is None
            assert channel.call("Ping", {}, timeout_s=10.0)["type"] == "Pong"
        finally:
            channel.close()
    finally:
        server.stop()
    assert not os.path.exists(path)


def test_garbage_on_a_link_closes_only_that_link_and_the_server_serves_on():
    address = f"localhost:{free_port()}"
    server = Server({"local": [address]}, "local", 0)
    stranger = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        stranger.connect(samehost.ipc_path(address, ".link"))
        stranger.sendall(b"GET / HTTP/1.0\r\n\r\n")  # 1,413,825,863 frames: not a message
        stranger.settimeout(10.0)
        assert stranger.recv(10) == b""  # the server hung up on it
        unsigned = transport.Channel(address, "/job:local/task:0")
        try:
            assert unsigned.on_link and unsigned.call("Ping", {}, timeout_s=10.0)["type"] == "Pong"
            frames = [wire.join_head(b"", b"\xc1not msgpack")]  # framed, but not a message
            unsigned.link.write(frames)
            with pytest.raises(errors.InvalidArgumentError, match="undecodable message header"):
                unsigned.recv_reply(0, time.monotonic() + 10.0, 10.0, "the error reply")
            assert unsigned.call("Ping", {}, timeout_s=10.0)["type"] == "Pong"  # the same link
        finally:
            unsigned.close()
        assert server._loop.malformed == 2
    finally:
        stranger.close()
        server.stop()


@pytest.mark.slow
def test_large_tensors_cross_links_both_ways_in_one_step_without_shared_memory(fresh_graph, monkeypatch):
    """8 MB each way in one step, 8 MB fed through the master to another task and 8 MB
    fetched, with shared memory off: every message is bigger than a socket buffer, so each
    loop writes it as room is made (two loops blocked writing to each other would never
    finish)."""
    monkeypatch.setenv("NBDIST_SHM", "0")
    procs = ServerProcs(cluster_dict(a=1, b=1))
    try:
        rng = np.random.default_rng(1)
        x_value = rng.standard_normal(2_000_000).astype(np.float32)
        with tf.device("/job:b/task:0"):
            x = tf.placeholder(tf.float32, [2_000_000])  # fed by the master on a: RunGraph to b
        with tf.device("/job:a/task:0"):
            on_a = x * 2.0  # b -> a
        with tf.device("/job:b/task:0"):
            on_b = on_a + 1.0  # a -> b
        with tf.device("/job:a/task:0"):
            back = on_b - 1.0  # b -> a
        with tf.Session(procs.target("a", 0)) as sess:
            got_b, got_back = sess.run([on_b, back], {x: x_value})
        np.testing.assert_array_equal(got_b, x_value * 2.0 + 1.0)
        np.testing.assert_array_equal(got_back, x_value * 2.0 + 1.0 - 1.0)
    finally:
        procs.stop()


@pytest.mark.slow
def test_a_call_over_a_link_to_a_killed_server_fails_at_once_and_a_restart_serves_again(fresh_graph):
    procs = ServerProcs(cluster_dict(local=1))
    address = procs.address("local", 0)
    try:
        channel = transport.Channel(address, "/job:local/task:0")
        assert channel.on_link and channel.call("Ping", {}, timeout_s=10.0)["type"] == "Pong"
        procs.kill("local", 0, signal.SIGKILL)
        started = time.monotonic()
        with pytest.raises(errors.UnavailableError, match=r"/job:local/task:0 at .* the connection was lost"):
            channel.call("Ping", {}, timeout_s=30.0)
        assert time.monotonic() - started < 5.0
        channel.close()
    finally:
        procs.stop()
    procs = ServerProcs({"local": [address]})  # the same port: its link socket is made again
    try:
        channel = transport.Channel(address, "/job:local/task:0")
        try:
            assert channel.on_link and channel.call("Ping", {}, timeout_s=10.0)["type"] == "Pong"
        finally:
            channel.close()
    finally:
        procs.stop()


def _link_named(server, identity):
    return identity in server._loop._link_of


def _wait_until(condition, timeout_s=10.0):
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def _sent_to(server, identity, link_only=False):
    """What `ServingLoop.send_to` answers for a message to `identity`, run on the I/O thread."""
    loop, done = server._loop, queue.Queue()
    frames = loop.encode("FetchedTensors", {"run_id": 7, "task": "t", "fetches": [np.arange(3.0)]})
    loop.post(lambda: done.put(loop.send_to(identity, frames, link_only=link_only)))
    return done.get(timeout=10.0)


def test_a_hello_on_a_link_routes_messages_to_that_identity_over_the_link_until_it_closes():
    address = f"localhost:{free_port()}"
    key = wire.new_key()
    server = Server({"local": [address]}, "local", 0, cluster_key=key)
    try:
        inbox = transport.Channel(address, "inbox", key, identity=b"nbdist-client-hello")
        _wait_until(lambda: _link_named(server, b"nbdist-client-hello"))
        assert _sent_to(server, b"nbdist-client-hello", link_only=True)
        assert inbox.link.wait_readable(10_000)
        msg = wire.decode(inbox.link.take(), key)
        assert msg["type"] == "FetchedTensors" and msg["run_id"] == 7
        assert not inbox.socket.poll(100)  # nothing came through the ROUTER
        # A name that could be another link's, or a Hello over ZeroMQ, is refused and counted.
        malformed = server._loop.malformed
        inbox.link.write(wire.encode("Hello", 1, {"identity": b"\x00link-theirs"}, key, inbox.stamp))
        wire.send_frames(
            inbox.socket, wire.encode("Hello", 2, {"identity": b"zmq-hello"}, key, wire.SenderStamp())
        )
        _wait_until(lambda: server._loop.malformed == malformed + 2)
        assert not _link_named(server, b"\x00link-theirs") and not _link_named(server, b"zmq-hello")
        inbox.close()  # the link goes with its name: link-only messages are not sent
        _wait_until(lambda: not _link_named(server, b"nbdist-client-hello"))
        assert not _sent_to(server, b"nbdist-client-hello", link_only=True)
    finally:
        server.stop()
