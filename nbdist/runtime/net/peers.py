"""A serving loop's own channels to other servers: requests whose replies call back on
its I/O thread, and socket monitors that fail what a lost peer still owes.

The master fans a step out through them, and a worker sends tensors to its peers' `_Recv`s.
"""

import time

from nbdist import errors
from nbdist.runtime.net import links, transport, wire


class PeerChannels:
    """The I/O thread's channels to other servers, one `transport.Channel` per peer.

    `request` sends and returns at once; the reply calls ``on_reply(msg)`` (or
    ``on_error(exc)`` for an error reply) on the I/O thread. Each channel's socket monitor
    is watched by the loop: a peer that drops its connection fails every request it
    still owes at once, one that never connects fails them after
    ``transport.CONNECT_TIMEOUT_S``. Everything here runs on the I/O thread.

    Args:
        loop: the `ServingLoop` whose thread owns the channels.
        key: the cluster key to sign with.
    """

    def __init__(self, loop, key=None):
        self._loop = loop
        self._key = key
        self._channels = {}  # address -> Channel
        self._inflight = {}  # (address, request id) -> (on_reply, on_error, sent at)
        self._watchers = {}  # address -> [(on_lost(why), on_back())]

    def channel(self, address, name, redial=False):
        """The channel to `address` (made and watched on first use; with `redial`, made again
        when its connection was lost: the peer may have restarted)."""
        channel = self._channels.get(address)
        if redial and channel is not None and channel.lost():
            self._loop.unwatch(channel.socket)
            if channel.link is not None and not channel.link.closed:
                self._loop.unwatch(channel.link.fileno())
            self._loop.unwatch(channel.monitor)
            channel.close()
            channel = self._channels[address] = None
        if channel is None:
            channel = self._channels[address] = transport.Channel(address, name, self._key)
            self._loop.watch(channel.socket, lambda: self._on_reply(address, channel))
            if channel.link is not None:
                self._loop.watch(channel.link.fileno(), lambda: self._on_link_reply(address, channel))
            self._loop.watch(channel.monitor, lambda: self._on_connection_event(address, channel))
        return channel

    def watch(self, address, name, on_lost, on_back):
        """Calls ``on_lost(why)`` whenever the connection to the peer at `address` is lost (it
        dropped, or a peer reached before refuses connections), ``on_back()`` when it is made
        again. Heartbeats make a silent peer count as lost too."""
        self._watchers.setdefault(address, []).append((on_lost, on_back))
        self.channel(address, name)

    def request(self, address, name, msg_type, body, on_reply, on_error, redial=False):
        """Sends a request; returns its id, or None after calling `on_error` (peer lost).

        With `redial` (a session's first step there), a lost connection is made again first,
        as a new session's would be; else the request fails at once."""
        channel = self.channel(address, name, redial)
        if not channel.on_link:  # (a link's peer that goes away closes it: no event to wait for)
            channel.poll_events()
        if channel.handshake_failure is not None:
            on_error(channel.handshake_error())
            return None
        if channel.disconnected_at is not None and not channel.connected:
            on_error(channel.lost_error())
            return None
        try:
            request_id = channel.send(msg_type, body)
        finally:
            self._touched(channel)
        self._inflight[(address, request_id)] = (on_reply, on_error, time.monotonic())
        if not channel.connected:
            since = time.monotonic()
            self._loop.call_later(transport.CONNECT_TIMEOUT_S, lambda: self._check_connected(address, since))
        return request_id

    def via(self, address):
        """How requests to `address` go now: ``"link"`` or ``"zmq"`` (a trace shows it)."""
        channel = self._channels.get(address)
        return "link" if channel is not None and channel.on_link else "zmq"

    def send(self, address, name, msg_type, body):
        """Sends a one-way message (no reply is expected)."""
        channel = self.channel(address, name)
        try:
            channel.send(msg_type, body)
        finally:
            self._touched(channel)

    def _touched(self, channel):
        if not channel.on_link:  # it went through the DEALER the loop watches
            self._loop.touched(channel.socket)

    def forget(self, address, request_id):
        """Drops the callbacks of a request whose answer no longer matters."""
        self._inflight.pop((address, request_id), None)

    def close(self):
        for channel in self._channels.values():
            channel.close()
        self._channels.clear()
        self._inflight.clear()

    def _on_reply(self, address, channel):
        while channel.socket.poll(0):
            self._deliver(address, channel.socket.recv_multipart(copy=False))

    def _on_link_reply(self, address, channel):
        link = channel.link
        try:
            messages = link.take_all()
        except (links.LinkClosedError, links.LinkError):
            messages = []
        if link.closed:
            self._loop.unwatch(link.fileno())  # (before any callback opens a socket with its fd number)
        for frames in messages:
            self._deliver(address, frames)
        if link.closed:
            # What was asked over the link will not be answered: fail it now. (The channel's
            # next requests go over ZeroMQ, whose socket is watched too.)
            self._fail_requests(address, lambda _sent: channel.lost_error())

    def _deliver(self, address, frames):
        try:
            msg = wire.decode(frames, self._key)
        except wire.WireError:
            return  # not from a server of this cluster: nothing is waiting for it
        callbacks = self._inflight.pop((address, msg.get("id")), None)
        if callbacks is None:
            return
        on_reply, on_error, _ = callbacks
        if msg["type"] == "Error":
            try:
                wire.raise_error(msg)
            except errors.OpError as e:
                on_error(e)
        else:
            on_reply(msg)

    def _on_connection_event(self, address, channel):
        was_connected = channel.connected
        channel.poll_events()
        if channel.handshake_failure is not None:
            self._fail(address, channel.handshake_error())
            return
        if channel.connected and not was_connected:
            for _, on_back in self._watchers.get(address, ()):
                on_back()
        if not channel.connected and channel.disconnected_at is not None:
            self._fail(address, lambda _sent: channel.lost_error())
        elif channel.refused_since is not None:
            since = channel.refused_since
            self._loop.call_later(
                transport.REFUSED_GRACE_S + 0.01, lambda: self._check_refused(address, since)
            )

    def _fail_requests(self, address, error):
        """Fails what `address` owes with `error`, or ``error(sent at)`` (the time waited)."""
        for key in [k for k in self._inflight if k[0] == address]:
            callbacks = self._inflight.pop(key, None)
            if callbacks is not None:
                callbacks[1](error(callbacks[2]) if callable(error) else error)

    def _check_refused(self, address, since):
        channel = self._channels.get(address)
        if channel is not None:
            channel.poll_events()
            error = channel.refused(since)
            if error is not None:
                self._fail(address, error, lost_since=since)

    def _check_connected(self, address, since):
        channel = self._channels.get(address)
        if channel is None:
            return
        channel.poll_events()
        if not channel.connected:
            what = "no connection" if channel.existed() is not None else transport.NEVER_REACHED
            self._fail(address, channel.unavailable(time.monotonic() - since, what))

    def _fail(self, address, error, lost_since=None):
        """Fails the requests `address` owes; tells its watchers it is lost."""
        self._fail_requests(address, error)
        channel = self._channels.get(address)
        if channel is not None and not channel.connected:
            why = transport.LOST if lost_since is None else f"connection refused ({channel.existed()})"
            for on_lost, _ in self._watchers.get(address, ()):
                on_lost(why)
