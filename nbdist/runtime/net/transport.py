"""ZeroMQ client plumbing: a `Channel` is one DEALER connected to a peer (and, to a server
of this host, a link beside it: `nbdist.runtime.net.links`).

A channel is owned by one thread (zmq sockets are not thread-safe; `channel_to()` keeps
one per thread and address). `call()` sends a request and waits for its reply with a
bound; a socket monitor tells when the peer is (dis)connected, so a dead task is
reported as `UnavailableError` (job, index, address, time waited) instead of a silent
wait. The serving side is `nbdist.runtime.net.serving`.
"""

import contextlib
import itertools
import logging
import os
import threading
import time

import zmq
from zmq.utils.monitor import parse_monitor_message

from nbdist import errors
from nbdist.runtime.net import links, liveness, samehost, security, shm, wire

_request_ids = itertools.count(1)
_local = threading.local()
# How long a peer may take to accept a connection before it is reported unavailable
# (a peer that drops an existing connection is reported at once). $NBDIST_CONNECT_TIMEOUT_S.
CONNECT_TIMEOUT_S = float(os.environ.get("NBDIST_CONNECT_TIMEOUT_S", "5"))
# A peer that stops answering ZeroMQ's own heartbeats (a SIGSTOPped process, a cut link: no
# socket event says so) has its connection dropped after HEARTBEAT_TIMEOUT_S, which reports it
# unavailable like a closed connection. $NBDIST_HEARTBEAT_S sets the interval (0: off).
HEARTBEAT_S = float(os.environ.get("NBDIST_HEARTBEAT_S", "1"))
HEARTBEAT_TIMEOUT_S = float(os.environ.get("NBDIST_HEARTBEAT_TIMEOUT_S", "5"))


def context():
    return zmq.Context.instance()


# A peer this process reached before whose port now refuses connections has no server any
# more (it died, or is restarting): reported after this grace instead of CONNECT_TIMEOUT_S.
# A peer never reached may simply not have started yet (TF programs start in any order).
REFUSED_GRACE_S = float(os.environ.get("NBDIST_REFUSED_GRACE_S", "0.5"))
_reached = set()  # addresses this process has been connected to
_IDLE_S = 0.1  # `channel_to` checks the connection of a channel idle this long
# A thread's cached channel whose peer has been gone this long (or never answered for
# NEVER_CONNECTED_S) is evicted when the thread opens another channel: a long-lived process (a
# notebook kernel, a test run) that starts and stops many clusters keeps sockets only for live
# peers. An evicted channel that a caller still holds closes when the caller lets it go.
GONE_S = 1.0
NEVER_CONNECTED_S = 60.0
# Reconnection attempts to a peer that is down back off up to this interval (ZeroMQ retries every
# 100 ms otherwise, forever): a restarted peer is found again within it.
RECONNECT_IVL_MAX_MS = 1000
_monitor_ids = itertools.count(1)
# A peer that accepts the TCP connection but completes no ZeroMQ handshake within PROBE_AFTER_S
# may be something else on that port (a web server waits for a request line; ZeroMQ would wait
# out its 30 s handshake timeout): a plain TCP probe then reads its first bytes
# once per channel (`liveness.probe_peer`).
PROBE_AFTER_S = 1.0
# A ZeroMQ handshake that fails because of CURVE: what to tell the user, by monitor event
# (`_handshake_failure` picks the events that can only mean a key problem).
_MECHANISM_MISMATCH = (
    "the ZeroMQ handshake failed: one side encrypts with CURVE and the other does not; give "
    f"every server and client the same ${security.CURVE_KEY_FILE_ENV} (or none)"
)
_KEY_REFUSED = (
    "the server refused this client's CURVE key: this process does not hold the cluster's "
    f"CURVE keypair (set ${security.CURVE_KEY_FILE_ENV} to the cluster's curve.key_secret)"
)
_CURVE_CLOSED = (
    "the connection closed during the CURVE handshake: the server's key is not the one this "
    f"process holds (${security.CURVE_KEY_FILE_ENV} names another cluster's keypair?), or that "
    "port is not an nbdist server"
)
_HANDSHAKE_FAILED = (
    zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
    | zmq.EVENT_HANDSHAKE_FAILED_AUTH
    | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL
)
_CHANNEL_EVENTS = (
    zmq.EVENT_CONNECTED
    | zmq.EVENT_DISCONNECTED
    | zmq.EVENT_CONNECT_RETRIED
    | zmq.EVENT_HANDSHAKE_SUCCEEDED
    | _HANDSHAKE_FAILED
)
LOST = (
    f"the connection was lost (its process exited, or stopped answering heartbeats for "
    f"{HEARTBEAT_TIMEOUT_S:g} s)"
)
# A peer this process never connected to (not started yet?): what an error about it says.
NEVER_REACHED = "no connection (never reached: has it started?)"
# A call that waits for a peer never reached beyond CONNECT_TIMEOUT_S (a session's deadline:
# tasks start in any order) logs what it waits for this often.
WAIT_LOG_EVERY_S = 5.0
_log = logging.getLogger("nbdist")


def set_heartbeats(socket):
    """Makes `socket` ping its peers and drop a connection whose peer stops answering."""
    if HEARTBEAT_S > 0:
        socket.setsockopt(zmq.HEARTBEAT_IVL, int(HEARTBEAT_S * 1000))
        socket.setsockopt(zmq.HEARTBEAT_TIMEOUT, int(HEARTBEAT_TIMEOUT_S * 1000))
        socket.setsockopt(zmq.HEARTBEAT_TTL, int(HEARTBEAT_TIMEOUT_S * 1000))


def zmq_endpoint(address):
    """``tcp://ip:port`` for a ``host:port`` address (names resolved; IPv6 in brackets).

    Raises:
        ValueError: the address does not resolve.
    """
    ip, port = samehost.resolve(address)
    return f"tcp://[{ip}]:{port}" if ":" in ip else f"tcp://{ip}:{port}"


def _names_a_task(name):
    return isinstance(name, str) and name.startswith("/job:") and "/task:" in name and " " not in name


class Channel:
    """A request/reply connection from the calling thread to one peer.

    Args:
        address: ``host:port`` of the peer.
        name: how to name the peer in errors, e.g. ``/job:ps/task:0``; a task's name is also
            the receiver of its signed requests (``"to"``, `wire`).
        key: the cluster key to sign with (None: unsigned).
        to: the receiver to address signed requests to; default: `name` when it names a
            task, else the server's incarnation, asked with a ``Ping`` before the first request.
    """

    def __init__(self, address, name="", key=None, identity=None, to=None):
        self.address = address
        self.name = name or address
        self.key = key
        self.to = to if to is not None else (name if _names_a_task(name) else None)
        self._to_learned = False  # `to` is the incarnation a Ping reported (a restart changes it)
        self.stamp = wire.SenderStamp()  # this socket's requests arrive in order: one counter
        self.socket = context().socket(zmq.DEALER)
        self.socket.setsockopt(zmq.LINGER, 0)
        if identity is not None:  # lets the peer's ROUTER address messages to this client
            self.socket.setsockopt(zmq.ROUTING_ID, identity)
        self.socket.setsockopt(zmq.IPV6, 1)
        set_heartbeats(self.socket)
        self.socket.setsockopt(zmq.RECONNECT_IVL_MAX, RECONNECT_IVL_MAX_MS)
        self.encrypted = security.secure_client(self.socket) is not None
        self.monitor = _monitor(self.socket, _CHANNEL_EVENTS)
        self.connected = False
        self.connected_at = None  # when the current TCP connection was made
        self.ever_handshaken = False  # some connection of this channel completed its handshake
        self.probed = False  # the peer was probed (`not_nbdist`)
        self.silent = False  # ... and sent nothing (a stopped process, or a silent stranger)
        self.handshake_failure = None  # why the last handshake failed (until one succeeds)
        self.closed_in_handshake_at = None  # the peer closed before a handshake completed
        self.disconnected_at = None
        self.seen_up_at = None  # the last time its events said it was connected
        self.refused_since = None  # first refused attempt since the last connection
        self.created_at = self.handed_at = time.monotonic()  # (handed_at: `channel_to`)
        self.local = samehost.is_loopback(address)  # large tensors go through shared memory
        endpoint = samehost.connect_endpoint(address, zmq_endpoint(address))
        # A socket file of its server that refuses: it existed, and is gone (`existed`).
        self.leftover_socket = liveness.leftover_socket(address) if endpoint.startswith("tcp") else None
        self.socket.connect(endpoint)
        # Messages go over a link when the server has one. The DEALER stays connected beside
        # it: its heartbeats and events tell whether the peer lives. A channel with an
        # `identity` (the server writes to it unasked: fetched tensors) names it on the link
        # first (``Hello``): such messages then come over the link too, else over the DEALER.
        self.link = None
        if self.local and not self.encrypted and links.enabled():
            self.link = links.connect(links.path_of(address), peer=f"{self.name} at {address}")
            if self.link is not None and identity is not None:
                self.send("Hello", {"identity": identity})

    def close(self):
        if self.link is not None:
            self.link.close()
        if self.socket.closed:
            return
        with contextlib.suppress(zmq.ZMQError):
            self.socket.disable_monitor()
        self.monitor.close(linger=0)
        self.socket.close(linger=0)

    def __del__(self):  # a thread's channels die with the thread: close their sockets
        try:  # noqa: SIM105 - at interpreter exit module globals (contextlib) may be None
            self.close()
        except Exception:  # noqa: BLE001, S110 - never raise from a finalizer
            pass

    def gone(self, now):
        """True when the peer has been unreachable long enough to let this channel go."""
        self.poll_events()
        if self.connected:
            return False
        if self.disconnected_at is not None:
            return now - self.disconnected_at > GONE_S
        return now - self.created_at > NEVER_CONNECTED_S

    def poll_events(self):
        """Drains connection events; updates `connected`."""
        while self.monitor.poll(0):
            message = parse_monitor_message(self.monitor.recv_multipart())
            event = message["event"]
            if event & _HANDSHAKE_FAILED:
                self.handshake_failure = self._handshake_failure(event, message["value"])
                if self.closed_in_handshake_at is None:
                    self.closed_in_handshake_at = time.monotonic()
            elif event == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                self.handshake_failure = self.closed_in_handshake_at = None
                self.ever_handshaken = True
            elif event == zmq.EVENT_CONNECTED:
                self.connected, self.disconnected_at, self.refused_since = True, None, None
                self.connected_at = time.monotonic()
                _reached.add(self.address)
            elif event == zmq.EVENT_DISCONNECTED:
                self.connected, self.disconnected_at = False, time.monotonic()
            elif event == zmq.EVENT_CONNECT_RETRIED and self.refused_since is None:
                self.refused_since = time.monotonic()
        if self.connected:
            self.seen_up_at = time.monotonic()

    def send(self, msg_type, body, request_id=None):
        if self.key is not None and self.to is None and msg_type not in wire.UNADDRESSED:
            self._learn_receiver()
        request_id = request_id or next(_request_ids)
        frames = wire.encode(msg_type, request_id, body, self.key, self.stamp, self.local, self.to)
        self.send_encoded(frames)
        return request_id

    def _learn_receiver(self, timeout_s=None, connect_timeout_s=None):
        """Addresses this channel's signed requests to the server's incarnation, which a ``Ping``
        (that needs no receiver) reports."""
        bound_s = CONNECT_TIMEOUT_S + HEARTBEAT_TIMEOUT_S
        timeout_s = bound_s if timeout_s is None else timeout_s
        pong = self.call("Ping", {}, timeout_s=timeout_s, connect_timeout_s=connect_timeout_s)
        self.to, self._to_learned = pong["incarnation"], True

    def send_encoded(self, frames):
        """Sends encoded `frames` on this channel's path: its link while it has one, else its
        DEALER. Frees their shared-memory segments if they could not be sent."""
        try:
            if self.on_link:
                try:
                    self.link.write(frames, CONNECT_TIMEOUT_S)
                    return
                except links.LinkClosedError:
                    pass  # its peer closed it: ZeroMQ from now on (`check_alive` tells if the peer lives)
            self._send_frames(frames)
        except BaseException:
            wire.discard(frames)
            raise

    @property
    def on_link(self):
        """True while this channel's messages go over its link."""
        return self.link is not None and not self.link.closed

    def _send_frames(self, frames):
        """Sends `frames`, never blocking for good: a DEALER whose peer's pipe is gone (its
        CURVE handshake failed) or full (1,000 messages queued for a peer that is down) would
        block in ``send``. Waits for room instead, bounded by `CONNECT_TIMEOUT_S`, and raises
        what `check_alive` finds (the refused handshake, the lost or never made connection)."""
        started = time.monotonic()
        while True:
            try:
                wire.send_frames(self.socket, frames, flags=zmq.DONTWAIT)
                return
            except zmq.Again:
                self.check_alive(started, CONNECT_TIMEOUT_S)
                if time.monotonic() - started > CONNECT_TIMEOUT_S:
                    raise self.unavailable(time.monotonic() - started, "no room to queue a message") from None
                self.socket.poll(50, zmq.POLLOUT)

    def unavailable(self, waited_s, what):
        """`UnavailableError` naming the peer, `what` happened and, unless None, `waited_s`."""
        after = "" if waited_s is None else f" after {waited_s:.1f} s"
        return errors.UnavailableError(
            None,
            None,
            f"{self.name} at {self.address} is unavailable: {what}{after}; "
            "is its server running? (check the task's process / %dtf_cluster status)",
        )

    def lost(self):
        """True when the connection is down: it was lost, or refused, and not made again since (a
        new call makes it again: the peer may have restarted)."""
        self.poll_events()
        return not self.connected and (self.disconnected_at is not None or self.refused_since is not None)

    def lost_error(self):
        """`UnavailableError` for a lost connection, with the real time: when it was last seen
        connected (one wording whether that was before or after the call started, so that the
        same fault reads the same every time)."""
        now = time.monotonic()
        seen = (
            ""
            if self.seen_up_at is None
            else f"; it was last seen connected {now - self.seen_up_at:.1f} s ago"
        )
        return self.unavailable(None, LOST + seen)

    def existed(self):
        """The evidence that the peer existed (`liveness`), or None (never reached)."""
        exited = liveness.process_exit(self.address)
        if exited is not None:
            return exited
        if self.address in _reached:
            return "it was reachable before"
        if self.leftover_socket is not None:
            return f"a Unix socket its server left at {self.leftover_socket} refuses connections"
        return None

    def _handshake_failure(self, event, value):
        """Why a failed handshake failed when a key is the cause, else None (an ordinary
        connection problem: a peer that closes at once is reported as unavailable)."""
        if event == zmq.EVENT_HANDSHAKE_FAILED_AUTH:
            return _KEY_REFUSED
        if (
            event == zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
            and value == zmq.PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH
        ):
            return _MECHANISM_MISMATCH
        if event == zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL and self.encrypted:
            return _CURVE_CLOSED
        return None

    def handshake_error(self):
        """`UnauthenticatedError` when the last handshake with the peer failed, else None."""
        if self.handshake_failure is None:
            return None
        return errors.UnauthenticatedError(
            None, None, f"{self.name} at {self.address} refused the connection: {self.handshake_failure}"
        )

    def refused(self, started):
        """`UnavailableError` if a peer known to have existed (`existed`) is gone: its process
        exited, or it has refused connections for longer than `REFUSED_GRACE_S` (on one host
        that shows at once); else None."""
        if self.connected:
            return None
        exited = liveness.process_exit(self.address)
        if exited is not None:  # (certain: no grace)
            return self.unavailable(time.monotonic() - started, f"its server is gone: {exited}")
        if self.refused_since is None or time.monotonic() - self.refused_since <= REFUSED_GRACE_S:
            return None
        evidence = self.existed()
        if evidence is None:
            return None
        return self.unavailable(
            time.monotonic() - started, f"connection refused ({evidence}: its server is gone)"
        )

    def not_nbdist(self, started, closed=False):
        """`UnavailableError` if a probe (`liveness.probe_peer`) finds that the peer is not a ZeroMQ peer,
        else None. Probes once per channel, only a peer that never completed a handshake with it:
        one that has kept an accepted connection waiting for `PROBE_AFTER_S`, or (`closed`) one
        that closed it. A stopped or busy server is left to the usual bounds."""
        if self.ever_handshaken or self.probed:
            return None
        if not closed and (not self.connected or time.monotonic() - self.connected_at < PROBE_AFTER_S):
            return None
        self.probed = True
        kind, detail = liveness.probe_peer(self.address)
        self.silent = kind == "silent"
        if kind != "other":
            return None
        return errors.UnavailableError(
            None,
            None,
            f"{self.name} at {self.address} is unavailable: something answers there but is not an "
            f"nbdist server ({detail}) after {time.monotonic() - started:.1f} s; check the address "
            "and port (the session target, the cluster spec) and what listens there",
        )

    def check_alive(self, started, connect_timeout_s):
        """Raises `UnavailableError` if the peer dropped, never connected in time, or is not a
        ZeroMQ peer at all."""
        self.poll_events()
        if self.handshake_failure is not None:
            raise self.handshake_error()
        stranger = self.not_nbdist(started)
        if stranger is not None:
            raise stranger
        now = time.monotonic()
        # A peer that closed in the middle of the handshake may be a CURVE server (its mechanism
        # mismatch shows on the next attempt, reconnecting at once): wait that long for it.
        in_handshake = self.closed_in_handshake_at is not None
        if (
            self.disconnected_at is not None
            and not self.connected
            and not (in_handshake and now - self.closed_in_handshake_at <= REFUSED_GRACE_S)
        ):
            raise self.not_nbdist(started, closed=True) or self.lost_error()
        refused = self.refused(started)
        if refused is not None:
            raise refused
        if not self.connected and now - max(started, self.created_at) > connect_timeout_s:
            what = "no connection" if self.existed() is not None else NEVER_REACHED
            if self.silent:
                what = (
                    "no ZeroMQ handshake (the port accepts connections but nothing answers there: "
                    "a stopped process, or not an nbdist server)"
                )
            raise self.unavailable(now - started, what)

    def recv_reply(self, request_id, deadline, connect_timeout_s, what, also=None):
        """Waits for the reply to `request_id`; returns the decoded message.

        `also` (only while this channel is on its link): other links to read while waiting,
        one of which may bring what answers the request instead - an object with ``links``
        and ``answer(link) -> message or None`` (a worker that completes a client's step
        itself: `nbdist.runtime.remote`).

        Raises:
            UnavailableError: the peer is down or unreachable.
            DeadlineExceededError: no reply by `deadline` (naming `what`).
            The remote error's class, if the reply is an error.
        """
        started = time.monotonic()
        log_at = started + WAIT_LOG_EVERY_S if connect_timeout_s > CONNECT_TIMEOUT_S else None
        # A connected link reports its peer's exit itself (the link closes): the connection's
        # events are read after a wait that brought nothing (a silent peer), not before the first.
        check = not (self.connected and self.on_link)
        while True:
            if check:
                self.check_alive(started, connect_timeout_s)
            check = True
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                never = "" if self.connected or self.existed() is not None else f" ({NEVER_REACHED})"
                raise errors.DeadlineExceededError(
                    None,
                    None,
                    f"timed out after {now - started:.1f} s waiting for {what} from {self.name} "
                    f"at {self.address}{never}",
                )
            if log_at is not None and now >= log_at and not self.connected:
                log_at = now + WAIT_LOG_EVERY_S
                left = "" if deadline is None else f", {deadline - now:.0f} s left of its deadline"
                _log.info(
                    "Waiting for %s at %s: %s for %.0f s%s",
                    self.name,
                    self.address,
                    NEVER_REACHED,
                    now - started,
                    left,
                )
            wait_ms = 100 if deadline is None else max(1, min(100, int((deadline - now) * 1000)))
            frames, answer = self._next_reply(wait_ms, started, also)
            if answer is not None:
                return answer
            if frames is None:
                continue
            msg = wire.decode(frames, self.key, peer=f"{self.name} at {self.address}")
            unmatched_error = msg["type"] == "Error" and msg.get("id") == 0  # undecodable request
            if msg.get("id") != request_id and not unmatched_error:
                continue  # a late reply to an earlier call that gave up
            if msg["type"] == "Error":
                wire.raise_error(msg)
            return msg

    def _next_reply(self, wait_ms, started, also=None):
        """``(frames, None)``: the next message from the peer within `wait_ms` (frames None if
        none came); or ``(None, message)``: what one of `also`'s links brought to answer it.

        Raises:
            UnavailableError: the link closed: a reply it owed will never come.
        """
        if not self.on_link:
            return (self.socket.recv_multipart(copy=False) if self.socket.poll(wait_ms) else None), None
        try:
            if also is None:
                return (self.link.take() if self.link.wait_readable(wait_ms) else None), None
            for link in links.wait_any([self.link, *also.links], wait_ms):
                if link is not self.link:
                    answer = also.answer(link)
                    if answer is not None:
                        return None, answer
                else:
                    frames = link.take()
                    if frames is not None:
                        return frames, None
            return None, None
        except (links.LinkClosedError, links.LinkError):
            raise self.unavailable(time.monotonic() - started, LOST) from None

    def call(self, msg_type, body, timeout_s=None, connect_timeout_s=None, also=None):
        """Sends a request and returns its reply (see `recv_reply`, which raises its errors)."""
        if connect_timeout_s is None:
            connect_timeout_s = CONNECT_TIMEOUT_S
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        if self.key is not None and self.to is None and msg_type not in wire.UNADDRESSED:
            self._learn_receiver(timeout_s, connect_timeout_s)  # (within this call's bounds)
        request_id = self.send(msg_type, body)
        what = f"the reply to {msg_type}"
        try:
            return self.recv_reply(request_id, deadline, connect_timeout_s, what, also)
        except errors.UnauthenticatedError as e:
            if not (self._to_learned and wire.MISADDRESSED in e.message):
                raise
        # The server at this address restarted since its incarnation was learned: the refused
        # request did not run. Learn the new one and send it once more.
        self.to, self._to_learned = None, False
        request_id = self.send(msg_type, body)
        return self.recv_reply(request_id, deadline, connect_timeout_s, what, also)


def _monitor(socket, events):
    """A PAIR socket receiving `socket`'s connection `events`.

    Not pyzmq's `get_monitor_socket`: libzmq's monitor blocks on a full event pipe while holding
    the socket's monitor lock, inside the context's I/O thread - so a channel to a dead peer that
    nobody polls (2,000 reconnection events later) would freeze every socket of the process. Here
    the pipe has no high-water mark (RCVHWM 0 on the receiving end; events are few, the reconnect
    interval backs off, and gone channels are evicted) and the endpoint name is unique (pyzmq's is
    derived from a file descriptor number, which the OS reuses).
    """
    address = f"inproc://nbdist-monitor-{os.getpid()}-{next(_monitor_ids)}"
    socket.monitor(address, events)
    receiver = socket.context.socket(zmq.PAIR)
    receiver.setsockopt(zmq.RCVHWM, 0)
    receiver.setsockopt(zmq.LINGER, 0)
    receiver.connect(address)
    return receiver


def evict_gone(cache, keep=()):
    """Drops from `cache` (key -> Channel) the channels whose peers are gone (see `GONE_S`),
    except those under the keys in `keep`, and unmaps those peers' shared memory."""
    now = time.monotonic()
    # (A snapshot: asking a channel runs Python that may collect garbage, and a collected
    # Session's close drops its channel from this same cache.)
    for k in [k for k, ch in list(cache.items()) if k not in keep and ch.gone(now)]:
        ch = cache.pop(k, None)
        if ch is not None:
            shm.forget_peer(links.peer_pid(ch.link))


def channel_to(address, name="", key=None):
    """This thread's cached `Channel` to `address` (re-created after the peer restarts)."""
    cache = getattr(_local, "channels", None)
    if cache is None:
        cache = _local.channels = {}
    ch = cache.get((address, key))
    now = time.monotonic()
    # A channel whose connection is down is made again (the peer may have restarted). Asked only
    # of a channel idle for a while: a loop of steps costs no event poll for it.
    if ch is not None and now - ch.handed_at > _IDLE_S and ch.lost():
        drop_channel(address, key)
        ch = None
    if ch is None:
        evict_gone(cache)
        ch = cache[(address, key)] = Channel(address, name, key)
    elif name and ch.name == ch.address:
        ch.name = name
    ch.handed_at = now
    return ch


def drop_channel(address, key=None):
    """Closes this thread's channel to `address` (after an error, to start clean)."""
    cache = getattr(_local, "channels", {})
    ch = cache.pop((address, key), None)
    if ch is not None:
        ch.close()
        shm.forget_peer(links.peer_pid(ch.link))
