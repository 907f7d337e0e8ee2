"""Waiting for ZeroMQ sockets and plain file descriptors at once, with few system calls.

`zmq.Poller` asks every ZeroMQ socket for its state (``ZMQ_EVENTS``) twice per wait - before
and after its ``poll()`` - and each question is a ``poll()`` and a ``getpid()`` system call
inside libzmq. A serving loop watching a ROUTER, its inbox and a DEALER and a monitor per peer
made 16 ``poll()`` calls per step while its messages came over links (Unix sockets) that
ZeroMQ never touched.

`Poller` waits on file descriptors only: a ZeroMQ socket by its ``ZMQ_FD``, which becomes
readable when the socket's state may have changed. That descriptor is edge-triggered: a
``send`` on the socket may consume the signal of a message that arrived meanwhile, so the
socket is readable with its descriptor silent. The caller says so with `touched` after each
send; such sockets (and every socket after a quiet wait or a change of the watched set) are
asked for their state before the next wait. A receive loop that stops when ``poll(0)`` says
nothing is left leaves the socket consistent (its descriptor signals the next message).
"""

import select

import zmq

_ZMQ_POLLIN, _ZMQ_POLLOUT, _ZMQ_POLLERR = int(zmq.POLLIN), int(zmq.POLLOUT), int(zmq.POLLERR)


def _select_events(events):
    """``select.poll`` flags for ZeroMQ's (they differ: ZeroMQ's POLLOUT is 2, poll(2)'s is 4)."""
    return (select.POLLIN if events & _ZMQ_POLLIN else 0) | (select.POLLOUT if events & _ZMQ_POLLOUT else 0)


def _zmq_events(revents):
    """ZeroMQ's flags for what ``select.poll`` reported, as `zmq.Poller` reports them."""
    return (
        (_ZMQ_POLLIN if revents & select.POLLIN else 0)
        | (_ZMQ_POLLOUT if revents & select.POLLOUT else 0)
        | (_ZMQ_POLLERR if revents & ~(select.POLLIN | select.POLLOUT) else 0)
    )


class Poller:
    """Waits until one of `flags`' sockets or descriptors is ready.

    Args:
        flags: ``{socket_or_fd: events}`` in ZeroMQ's flags, as `zmq.Poller` takes them (and
            `poll` answers in them too); a ZeroMQ socket may only be watched for reading.
    """

    def __init__(self, flags):
        self._poll = select.poll()
        self._sockets = {}  # ZMQ_FD -> socket
        self._plain = {}  # plain descriptor -> events watched
        for sock, events in flags.items():
            if isinstance(sock, zmq.Socket):
                if events != _ZMQ_POLLIN:
                    raise ValueError("readiness.Poller watches ZeroMQ sockets for reading only")
                fd = sock.getsockopt(zmq.FD)
                self._sockets[fd] = sock
                self._poll.register(fd, select.POLLIN)
            else:
                self._poll.register(sock, _select_events(events))
                self._plain[sock] = events
        self._to_ask = set(self._sockets.values())  # a new poller knows nothing yet: ask all
        self.asked = 0  # how many times a socket was asked for its state (tests, profiles)

    def set_events(self, fd, events):
        """Watches plain descriptor `fd` for `events` (ZeroMQ's flags) from now on; 0: not at all.
        (A serving loop's link that waits for room to write: no new poller, and no socket is
        asked for its state, as a rebuilt poller would ask them all.)"""
        if events == self._plain.get(fd, 0):
            return
        if not events:
            del self._plain[fd]
            self._poll.unregister(fd)
            return
        if fd in self._plain:
            self._poll.modify(fd, _select_events(events))
        else:
            self._poll.register(fd, _select_events(events))
        self._plain[fd] = events

    def touched(self, sock):
        """`sock` was sent on (its descriptor's signal may be gone): ask before the next wait."""
        self._to_ask.add(sock)

    def poll(self, timeout_ms):
        """``{socket_or_fd: events}`` of what is ready, waiting up to `timeout_ms` for it."""
        ready = {}
        if self._to_ask:
            for sock in self._to_ask:
                self._ask(sock, ready)
            self._to_ask.clear()
            if ready:
                timeout_ms = 0
        events = self._poll.poll(timeout_ms)
        if not events and timeout_ms:  # a quiet wait: ask every socket (a missed edge costs one wait)
            for sock in self._sockets.values():
                self._ask(sock, ready)
        for fd, ev in events:
            sock = self._sockets.get(fd)
            if sock is None:
                ready[fd] = _zmq_events(ev)
            else:
                self._ask(sock, ready)
        return ready

    def _ask(self, sock, ready):
        self.asked += 1
        if sock.closed:
            return
        if sock.getsockopt(zmq.EVENTS) & _ZMQ_POLLIN:
            ready[sock] = _ZMQ_POLLIN
