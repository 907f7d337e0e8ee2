"""The client side of ZeroMQ (`nbdist.runtime.net.transport`) in a long-lived process.

A notebook kernel or a test run starts and stops many clusters in one process. Channels to
peers that went away must neither freeze the process's ZeroMQ I/O thread (libzmq's socket
monitor blocks it once an unread event pipe is full) nor pile up sockets (a context holds at
most 1023).
"""

import contextlib
import http.server
import socket
import threading
import time

import pytest
import zmq

import nbdist as tf
from nbdist.runtime.net import liveness, transport
from nbdist.runtime.server_lib import Server
from procs import free_port


def _round_trip_works(timeout_ms=3000):
    """A fresh ROUTER/DEALER pair of this process exchanges a message."""
    ctx = transport.context()
    router, dealer = ctx.socket(zmq.ROUTER), ctx.socket(zmq.DEALER)
    try:
        port = router.bind_to_random_port("tcp://127.0.0.1")
        dealer.connect(f"tcp://127.0.0.1:{port}")
        dealer.send(b"ping")
        return bool(router.poll(timeout_ms))
    finally:
        router.close(linger=0)
        dealer.close(linger=0)


def test_an_unread_channel_to_a_dead_peer_does_not_freeze_zeromq():
    channel = transport.Channel(f"127.0.0.1:{free_port()}", "a dead peer")
    try:
        # Retry a second dead address every millisecond: thousands of connection events that
        # nobody reads (pyzmq's own monitor socket would block the I/O thread after 2,000).
        channel.socket.setsockopt(zmq.RECONNECT_IVL, 1)
        channel.socket.setsockopt(zmq.RECONNECT_IVL_MAX, 0)
        channel.socket.connect(f"tcp://127.0.0.1:{free_port()}")
        time.sleep(3)
        assert _round_trip_works(), "ZeroMQ's I/O thread is blocked"
        channel.poll_events()  # and the events are all there to read
        assert channel.refused_since is not None and not channel.connected
    finally:
        channel.close()


def test_a_threads_channels_to_stopped_servers_are_evicted():
    servers = [Server({"local": [f"localhost:{free_port()}"]}) for _ in range(2)]
    try:
        first = transport.channel_to(servers[0].address, "first")
        first.call("Ping", {}, timeout_s=10)
        servers[0].stop()
        deadline = time.monotonic() + 10
        while first.disconnected_at is None and time.monotonic() < deadline:
            first.poll_events()
            time.sleep(0.05)
        assert first.disconnected_at is not None, "the stopped server's disconnection was not seen"
        time.sleep(transport.GONE_S + 0.1)
        second = transport.channel_to(servers[1].address, "second")
        second.call("Ping", {}, timeout_s=10)
        assert transport.channel_to(servers[1].address) is second  # live peers stay cached
        assert transport.channel_to(servers[0].address) is not first  # the gone one was evicted
        assert not first.socket.closed  # held here: it closes when released, not under the holder
    finally:
        for server in servers:
            server.stop()
        for server in servers:
            transport.drop_channel(server.address)


@pytest.mark.parametrize("rounds", [30])
def test_starting_and_stopping_clusters_keeps_the_socket_count_bounded(rounds):
    """What the test suite and a notebook do all day; before the eviction every round kept its
    client's channels, and after ~110 rounds the context ran out of sockets."""
    from traced_steps import traced_steps

    counts = []
    for _ in range(rounds):
        with traced_steps(ps_tasks=2):
            pass
        time.sleep(transport.GONE_S / 10)
        counts.append(sum(1 for s in list(transport.context()._sockets) if not s.closed))
    assert max(counts[rounds // 2 :]) <= max(counts[: rounds // 2]) + 12, counts


def test_a_send_with_no_room_to_queue_fails_naming_the_peer_instead_of_blocking(monkeypatch):
    monkeypatch.setattr(transport, "CONNECT_TIMEOUT_S", 0.5)
    channel = transport.Channel(f"127.0.0.1:{free_port()}", "/job:ps/task:0")
    try:
        channel.socket.setsockopt(zmq.SNDHWM, 1)  # (applies to the pipe of the next connect)
        channel.socket.connect(f"tcp://127.0.0.1:{free_port()}")
        started = time.monotonic()
        with pytest.raises(
            tf.errors.UnavailableError, match=r"/job:ps/task:0 at 127\.0\.0\.1:\d+ is unavailable"
        ):
            for _ in range(10_000):  # ZeroMQ queues for a peer not there yet, up to the pipes' room
                channel.send("Ping", {})
        assert time.monotonic() - started < 10
    finally:
        channel.close()


# -- something else on the port --------------------------------------------------------------------------
def _session_error(target, bound_s=20.0):
    """The error `tf.Session(target).run(...)` raises, from a fresh thread (its channels go with
    it) that must finish within `bound_s` (the wait before the fix: 30 s, then "no connection")."""
    out = {}

    def run():
        try:
            with tf.Graph().as_default(), tf.Session(target) as sess:
                sess.run(tf.constant(1.0) * 2.0)
        except tf.errors.OpError as e:
            out["error"] = e

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(bound_s)
    assert not thread.is_alive(), f"tf.Session({target!r}) still waiting after {bound_s} s"
    assert "error" in out, f"tf.Session({target!r}) ran a step"
    return out["error"]


class _QuietHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):  # (no request lines on stderr)
        pass


@contextlib.contextmanager
def _http_server():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _QuietHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


@contextlib.contextmanager
def _closing_listener():
    """A port that accepts every connection and closes it at once, saying nothing."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    done = threading.Event()

    def serve():
        while not done.is_set():
            with contextlib.suppress(TimeoutError):
                conn, _ = listener.accept()
                conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{listener.getsockname()[1]}"
    finally:
        done.set()
        thread.join(10)
        listener.close()


def test_a_session_to_a_web_server_says_it_is_not_an_nbdist_server():
    with _http_server() as address:
        error = _session_error(f"grpc://{address}")
    assert isinstance(error, tf.errors.UnavailableError)
    assert (
        f"the master at {address} is unavailable: something answers there but is not an nbdist server "
        "(it sent b'" in error.message
    )
    assert "check the address and port (the session target, the cluster spec)" in error.message


def test_a_session_to_a_port_that_closes_at_once_says_it_is_not_an_nbdist_server():
    with _closing_listener() as address:
        error = _session_error(f"grpc://{address}")
    assert isinstance(error, tf.errors.UnavailableError)
    assert (
        f"the master at {address} is unavailable: something answers there but is not an nbdist "
        "server (it closed the connection without a ZeroMQ greeting) after " in error.message
    )


def test_the_probe_knows_an_nbdist_server_and_a_web_server_apart():
    port = free_port()
    server = Server({"local": [f"localhost:{port}"]}, "local", 0)
    try:
        assert liveness.probe_peer(f"localhost:{port}") == ("zeromq", None)
    finally:
        server.stop()
    with _http_server() as address:
        kind, detail = liveness.probe_peer(address)
    assert kind == "other" and detail.startswith("it sent b'")
    assert liveness.probe_peer(f"127.0.0.1:{free_port()}") == ("unreachable", None)
