"""readiness.Poller: the serving loop's wait on ZeroMQ sockets (by their edge-triggered
``ZMQ_FD``) and plain descriptors at once. Real ZeroMQ sockets and Unix sockets."""

import itertools
import socket
import time

import pytest
import zmq

from nbdist.runtime.net import readiness
from nbdist.runtime.net.transport import context

_PAIRS = itertools.count()


@pytest.fixture
def pair():
    """A ROUTER and a DEALER connected to it over inproc, a message waiting at the DEALER."""
    ctx = context()
    router, dealer = ctx.socket(zmq.ROUTER), ctx.socket(zmq.DEALER)
    address = f"inproc://readiness-{next(_PAIRS)}"  # (not id(): a closed socket unbinds late)
    router.bind(address)
    dealer.connect(address)
    dealer.send(b"ping")
    identity, _ = router.recv_multipart()
    router.send_multipart([identity, b"pong"])
    assert dealer.poll(5000)  # (the reply waits; this check consumed the descriptor's signal)
    yield router, dealer
    router.close(linger=0)
    dealer.close(linger=0)


def _wait_for(poller, sock, timeout_s=5.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if sock in poller.poll(50):
            return True
    return False


def test_a_new_poller_asks_every_socket_so_a_waiting_message_is_found(pair):
    _, dealer = pair
    poller = readiness.Poller({dealer: zmq.POLLIN})
    assert poller.poll(0) == {dealer: zmq.POLLIN}


def test_a_socket_whose_signal_was_consumed_is_found_once_touched(pair):
    """The edge this module exists for: the DEALER holds a message, yet its descriptor is
    silent (a send - here a state check - consumed the signal). Only `touched` finds it
    without waiting out a quiet poll."""
    _, dealer = pair
    poller = readiness.Poller({dealer: zmq.POLLIN})
    assert dealer in poller.poll(0)  # asked once: the signal is gone, the message stays
    assert poller.poll(0) == {}  # the descriptor alone does not say it
    poller.touched(dealer)
    assert poller.poll(0) == {dealer: zmq.POLLIN}
    assert dealer.recv() == b"pong"


def test_a_quiet_wait_asks_every_socket_so_a_missed_signal_costs_one_wait(pair):
    _, dealer = pair
    poller = readiness.Poller({dealer: zmq.POLLIN})
    poller.poll(0)
    started = time.monotonic()
    assert poller.poll(30) == {dealer: zmq.POLLIN}
    assert time.monotonic() - started < 5.0


def test_a_message_arriving_while_waiting_wakes_the_poller(pair):
    router, dealer = pair
    assert dealer.recv() == b"pong"
    assert not dealer.poll(0)  # nothing left: the next message signals the descriptor
    poller = readiness.Poller({dealer: zmq.POLLIN, router: zmq.POLLIN})
    assert poller.poll(0) == {}
    dealer.send(b"again")
    assert _wait_for(poller, router)
    assert router.recv_multipart()[1] == b"again"


def test_a_descriptor_firing_asks_no_zeromq_socket(pair):
    """What the poller is for: a message on a link (a plain descriptor) costs no question to
    the ZeroMQ sockets beside it (`zmq.Poller` asks each of them twice per wait)."""
    router, dealer = pair
    assert dealer.recv() == b"pong"
    assert not dealer.poll(0)
    a, b = socket.socketpair()
    try:
        poller = readiness.Poller({router: zmq.POLLIN, dealer: zmq.POLLIN, a.fileno(): zmq.POLLIN})
        assert poller.poll(0) == {}  # (a new poller asks each socket once)
        asked = poller.asked
        for _ in range(10):
            b.send(b"x")
            assert poller.poll(1000) == {a.fileno(): zmq.POLLIN}
            a.recv(1)
        assert poller.asked == asked
    finally:
        a.close()
        b.close()


def test_descriptors_are_watched_and_answered_in_zeromqs_flags():
    """ZeroMQ's POLLOUT is 2, poll(2)'s is 4: a caller written for `zmq.Poller` must see the
    same flags (a writer waiting for room would otherwise never be told)."""
    a, b = socket.socketpair()
    try:
        poller = readiness.Poller({a.fileno(): zmq.POLLIN | zmq.POLLOUT})
        assert poller.poll(0) == {a.fileno(): zmq.POLLOUT}  # room to write, nothing to read
        b.send(b"x")
        assert poller.poll(1000) == {a.fileno(): zmq.POLLIN | zmq.POLLOUT}
    finally:
        a.close()
        b.close()


def test_a_zeromq_socket_is_watched_for_reading_only(pair):
    _, dealer = pair
    with pytest.raises(ValueError, match="reading only"):
        readiness.Poller({dealer: zmq.POLLIN | zmq.POLLOUT})


def test_a_descriptors_events_change_in_place_without_asking_any_socket(pair):
    """A serving loop's link that waits for room gets POLLOUT watched and then not, at every
    step that writes a big tensor: in place, never a new poller that asks every socket."""
    _, dealer = pair
    a, b = socket.socketpair()
    try:
        poller = readiness.Poller({dealer: zmq.POLLIN, a.fileno(): zmq.POLLIN})
        assert poller.poll(0) == {dealer: zmq.POLLIN}  # (a new poller asks its sockets once)
        dealer.recv()
        asked = poller.asked
        poller.set_events(a.fileno(), zmq.POLLIN | zmq.POLLOUT)
        assert poller.poll(0) == {a.fileno(): zmq.POLLOUT}
        poller.set_events(a.fileno(), zmq.POLLIN)
        assert poller.poll(0) == {}
        b.send(b"x")
        assert poller.poll(1000) == {a.fileno(): zmq.POLLIN}
        poller.set_events(a.fileno(), 0)  # not watched at all
        assert poller.poll(0) == {}
        poller.set_events(b.fileno(), zmq.POLLOUT)  # one it did not watch before
        assert poller.poll(0) == {b.fileno(): zmq.POLLOUT}
        assert poller.asked == asked
    finally:
        a.close()
        b.close()
