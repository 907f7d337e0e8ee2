"""How many connections a server admits at once: ``$NBDIST_MAX_CONNECTIONS`` per listener.

libzmq hands a multipart message over only once every frame is in memory, so each connection
may hold up to `wire.MAX_FRAME_BYTES` per frame before anything is checked; without a cap, a
thousand connections hold a thousand of those. A server's ROUTER therefore asks ZAP (RFC 27,
the handler in `security`) about every new connection, plain ones too (its ``zap_domain`` is
set); the handler counts the connections the ROUTER accepted and has not lost (its socket
monitor, read on the handler's thread when it decides) and refuses one beyond the cap: the
peer's handshake fails and it is disconnected before it can send a byte of a message. The
links listener (same-host Unix sockets) applies the same cap to the links it accepts.

A refused peer sees its connection fail (its client's connect timeout then names the server);
the server logs the refusal once per `LOG_EVERY_S`.
"""

import logging
import os
import threading
import time

import zmq
from zmq.utils.monitor import recv_monitor_message

from nbdist.runtime.net import security

MAX_CONNECTIONS_ENV = "NBDIST_MAX_CONNECTIONS"
DEFAULT_MAX_CONNECTIONS = 256  # a cluster's tasks, its clients and notebooks, many times over
LOG_EVERY_S = 10.0
_log = logging.getLogger("nbdist")


def max_connections():
    """The cap from ``$NBDIST_MAX_CONNECTIONS`` (0: no cap).

    Raises:
        ValueError: the variable is not a whole number >= 0, naming it.
    """
    raw = os.environ.get(MAX_CONNECTIONS_ENV, "")
    if not raw.strip():
        return DEFAULT_MAX_CONNECTIONS
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise ValueError(f"${MAX_CONNECTIONS_ENV}={raw!r}: give a whole number >= 0 (0: no cap)")
    return value


class ConnectionCap:
    """The connections one ROUTER holds, and the decision to admit one more (ZAP thread)."""

    def __init__(self, router, limit, task):
        self.limit = limit
        self.task = task
        self.refused = 0
        self._open = set()  # fds of the connections accepted and not lost
        self._lock = threading.Lock()
        self._last_log = 0.0
        self._router = router
        self._monitor = router.get_monitor_socket(zmq.EVENT_ACCEPTED | zmq.EVENT_DISCONNECTED)
        self.domain = f"nbdist-{id(self):x}".encode()

    def admit(self):
        """True to admit the connection being authenticated (it is counted already)."""
        with self._lock:
            if self._monitor is None:
                return True
            while self._monitor.poll(0):
                event = recv_monitor_message(self._monitor)
                if event["event"] == zmq.EVENT_ACCEPTED:
                    self._open.add(event["value"])
                else:
                    self._open.discard(event["value"])
            if len(self._open) <= self.limit:
                return True
            self.refused += 1
            now = time.monotonic()
            if now - self._last_log >= LOG_EVERY_S:
                self._last_log = now
                _log.warning(
                    "%s refused a connection: it holds %d, $%s=%d (%d refused so far)",
                    self.task or "a server",
                    len(self._open) - 1,
                    MAX_CONNECTIONS_ENV,
                    self.limit,
                    self.refused,
                )
            return False

    def refuse_link(self, open_links):
        """True when a new link would pass the cap (the links listener closes it)."""
        if open_links < self.limit:
            return False
        with self._lock:
            self.refused += 1
        return True

    def close(self):
        """Stops counting (on the router's thread, before the router closes)."""
        security.ungate(self.domain)
        with self._lock:
            if self._monitor is not None:
                self._router.disable_monitor()
                self._monitor.close(linger=0)
                self._monitor = None


def cap_connections(router, task):
    """Sets `router`'s ZAP domain (before it binds) and returns its `ConnectionCap`, or None when
    ``$NBDIST_MAX_CONNECTIONS`` is 0."""
    limit = max_connections()
    if limit == 0:
        return None
    cap = ConnectionCap(router, limit, task)
    router.zap_domain = cap.domain
    security.gate(router.context, cap.domain, cap.admit)
    return cap
