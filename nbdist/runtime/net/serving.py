"""The serving loop of a server: one ROUTER socket, one I/O thread, one handler pool.

The I/O thread receives every request. Work that never blocks and is quick (a ping,
a tensor pushed by a peer, a cached step, a small partition) runs right there, with
no thread hand-off; anything else goes to the pool, so an op that blocks never stalls
the server. The I/O thread is also an event loop for the master: it can watch more
sockets (`watch`), run timers (`call_later`) and callbacks posted from other threads
(`post`), so a step fanned out to several workers is driven without any thread waiting.
Replies from other threads reach the ROUTER through an inproc PUSH/PULL pair.

A client in the same process as a server (a tutorial's worker: its own server, and a
session on ``server.target``) skips the wire to it: `in_process_channel` hands its
requests to the loop as they are, and the handler's reply straight back - TF's
``LocalMaster``. Nothing else changes: the same handlers, inline rules and errors.

Services (master, worker, per-task exec) declare their requests as tables of `Rpc`
entries; the server composes the tables onto one loop. `PeerChannels` are the I/O
thread's own channels to other servers (requests whose replies call back on the loop,
socket monitors that fail what a lost peer still owes).
"""

import collections
import contextlib
import errno
import heapq
import itertools
import os
import threading
import time
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

import numpy as np
import zmq

from nbdist import errors
from nbdist.runtime import sched
from nbdist.runtime.net import links, readiness, samehost, security, shm, transport, wire
from nbdist.runtime.net.transport import context, zmq_endpoint

DEFERRED = ("deferred", None)  # a handler's answer when it will reply later via its Responder
_WAKE = b""
# Poll flags as plain ints: `&` on pyzmq's enum costs microseconds, on every turn of the loop.
_POLLIN, _POLLOUT = int(zmq.POLLIN), int(zmq.POLLOUT)
# A link client's identity: this and a counter (never a ZeroMQ one: 5 bytes, or not starting with 0).
_LINK_IDENTITY = b"\x00link"
# The serving loops of this process, by address: what `in_process_channel` reaches.
_LOOPS = weakref.WeakValueDictionary()
IN_PROCESS_ENV = "NBDIST_IN_PROCESS"  # "0": clients reach servers of their own process over the wire too


class Rpc(NamedTuple):
    """One request type a service handles.

    Attributes:
        handler: ``handler(msg, responder) -> (reply_type, body)``; ``(None, None)`` sends
            no reply (one-way requests); `DEFERRED` when it replies later via `responder`.
            A missing field (``KeyError``) becomes a malformed-request error.
        inline: True (or ``inline(msg) -> bool``) when it never blocks and is quick: it is
            handled on the I/O thread. Otherwise it runs on the handler pool.
    """

    handler: Callable
    inline: Any = False


class Responder:
    """Answers one request, from the I/O thread or from any other thread, once."""

    __slots__ = ("_loop", "identity", "request_id", "_sent")
    in_process = False  # the request came from a client of this process, not over the wire

    def __init__(self, loop, identity, request_id):
        self._loop = loop
        self.identity = identity
        self.request_id = request_id
        self._sent = False

    def reply(self, reply_type, body):
        if not self._sent:
            self._sent = True
            self._loop.send_reply(self.identity, reply_type, body, self.request_id)

    def fail(self, exc):
        self.reply("Error", wire.error_body(exc, self._loop.task))

    @property
    def via(self):
        """How the request came: ``"link"`` or ``"zmq"`` (``"in process"``: `_InProcessResponder`)."""
        return "link" if self.identity.startswith(_LINK_IDENTITY) else "zmq"


class ServingLoop:
    """Binds `address` and serves until `stop()`.

    Args:
        address: ``host:port`` of this server in its cluster: it binds there.
        bind_host: bind this interface address instead of `address`'s host, on the same port
            (``0.0.0.0`` or ``::`` for every interface; a pod's own IP where the name of its
            cluster entry does not resolve yet).
        handle: ``handle(msg, responder) -> (reply_type, body)``, or `DEFERRED` when it
            will call ``responder.reply`` itself; ``(None, None)`` sends nothing.
            Exceptions become ``Error`` replies.
        key: the cluster key (None: accept unsigned messages).
        inline: ``inline(msg) -> bool``: handle on the I/O thread (never blocks, quick).
        task: name used in error replies (``/job:ps/replica:0/task:0``).

    Raises:
        OSError: if the address cannot be bound (in use, or not this host's), naming it.
        ValueError: the host does not resolve.
    """

    def __init__(self, address, handle, key=None, inline=None, task="", max_threads=64, bind_host=None):
        self.address = address
        port = address.rpartition(":")[2]
        self.bind_address = f"{_bracketed(bind_host)}:{port}" if bind_host else address
        self.task = task
        self._handle = handle
        self._key = key
        self._replay_guard = wire.ReplayGuard()  # a captured signed request is refused later on
        self._inline = inline or (lambda msg: False)
        self.requests_served = 0
        self.malformed = 0
        ctx = context()
        self._router, self._curve_keys = _bound_router(ctx, self.bind_address, task)
        self._ipc = samehost.bind_ipc(self._router, address)  # same-host clients connect there
        self._local = samehost.is_loopback(address)  # every peer is on this host: shared memory
        # Clients of this host may also reach it on a link (`nbdist.runtime.net.links`).
        self._link_listener, self._link_bound = self._listen_links()
        self._links = {}  # fd -> (identity, Link): the links clients opened here
        self._link_of = {}  # identity -> fd
        self._link_ids = itertools.count(1)
        self._backlogged = set()  # links (any, of this thread) whose writes wait for room: POLLOUT
        if self._local and shm.enabled():
            shm.sweep_leftovers()  # segments of tasks killed before (SIGKILL leaves them)
        self._inbox_address = f"inproc://nbdist-inbox-{id(self)}"
        self._inbox = ctx.socket(zmq.PULL)
        self._inbox.bind(self._inbox_address)
        self._pool = ThreadPoolExecutor(max_threads, thread_name_prefix=f"nbdist-{task or address}")
        self._outboxes = threading.local()
        self._outbox_sockets = []
        self._outbox_lock = threading.Lock()
        self._posted = collections.deque()
        self._watched = {}  # socket -> callback (I/O thread only)
        self._watched_changed = False
        self._readiness = None  # the I/O thread's `readiness.Poller` of what it watches
        self._at_exit = []  # callbacks run on the I/O thread when it stops
        self._timers = []  # heap of (when, seq, fn)
        self._timer_seq = itertools.count()
        self._cancelled = 0
        self.peers = PeerChannels(self, key)
        self._at_exit.append(self.peers.close)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"nbdist-io-{address}", daemon=True)
        self._io_ident = None
        self.io_policy = None  # "batch" or "default", once the I/O thread runs (`sched.as_batch_thread`)
        self._in_process_calls = set()  # `_InProcessCall`s not answered yet
        self._thread.start()
        _LOOPS[address] = self

    def _listen_links(self):
        if not (self._local and self._curve_keys is None and links.enabled()):
            return None, None
        listener = links.listen(links.path_of(self.address))
        if listener is None:
            return None, None
        path = listener.getsockname()
        return listener, (path, os.stat(path).st_ino)

    @property
    def link_clients(self):
        """How many clients' links are open here (read from any thread: a snapshot)."""
        return len(self._links)

    @property
    def encrypted(self):
        """True when the ROUTER is a CURVE server (the process has CURVE keys)."""
        return self._curve_keys is not None

    # -- the event loop (I/O thread) -----------------------------------------------------------
    def _run(self):
        self._io_ident = threading.get_ident()
        self.io_policy = sched.as_batch_thread()
        links.set_flusher(self._want_write)
        while not self._stop.is_set():
            if self._readiness is None or self._watched_changed:
                self._readiness, self._watched_changed = self._poller(), False
            try:
                ready = self._readiness.poll(self._poll_timeout_ms())
            except zmq.ZMQError:
                break
            if self._inbox in ready:
                self._drain_inbox()
            while self._posted:
                self.guard(self._posted.popleft())
            if self._router in ready:
                while self._router.poll(0):
                    self._dispatch(self._router.recv_multipart(copy=False))
            if self._links or self._backlogged or self._link_listener is not None:
                self._serve_links(ready)
            for sock, callback in list(self._watched.items()):
                if ready.get(sock, 0) & _POLLIN:
                    self.guard(callback)
            self._run_due_timers()
        for fn in self._at_exit:
            self.guard(fn)
        self._router.close(linger=0)
        self._inbox.close(linger=0)
        for fd in list(self._links):
            self._drop_link(fd)
        if self._link_listener is not None:
            self._link_listener.close()
            samehost.unlink_ipc(self._link_bound)
        samehost.unlink_ipc(self._ipc)

    def _poller(self):
        """A poller of every socket the loop reads, and of the links it has bytes to write to."""
        flags = dict.fromkeys((self._router, self._inbox, *self._watched, *self._links), _POLLIN)
        if self._link_listener is not None:
            flags[self._link_listener.fileno()] = _POLLIN
        self._backlogged = {link for link in self._backlogged if not link.closed}  # (closed by their owner)
        for link in self._backlogged:
            flags[link.fileno()] = flags.get(link.fileno(), 0) | _POLLOUT
        return readiness.Poller(flags)

    def touched(self, sock):
        """The I/O thread sent on `sock`, a socket it watches (`readiness.Poller.touched`)."""
        if self._readiness is not None:
            self._readiness.touched(sock)

    # -- links (I/O thread) --------------------------------------------------------------------------
    def _serve_links(self, ready):
        """Accepts new links, writes what waited for room, serves the requests that arrived."""
        if self._link_listener is not None and self._link_listener.fileno() in ready:
            for link in links.accept(self._link_listener, peer=f"a client of {self.task or self.address}"):
                identity = _LINK_IDENTITY + next(self._link_ids).to_bytes(8, "big")
                self._links[link.fileno()] = (identity, link)
                self._link_of[identity] = link.fileno()
                self._watched_changed = True
        for link in [link for link in self._backlogged if ready.get(link.fileno(), 0) & _POLLOUT]:
            try:
                drained = link.closed or link.send_some()
            except links.LinkClosedError:
                drained = True
            if drained:
                self._backlogged.discard(link)
                self._watched_changed = True
        for fd in [fd for fd in self._links if ready.get(fd, 0) & _POLLIN]:
            self._read_link(fd)

    def _read_link(self, fd):
        identity, link = self._links[fd]
        try:
            messages = link.take_all()
        except links.LinkClosedError:
            messages = []
        except links.LinkError as e:
            self.malformed += 1
            print(f"nbdist: {self.task or self.address} closed a link: {e}", flush=True)
            messages = []
        if link.closed:  # forgotten before anything runs that could open a socket with its fd number
            self._drop_link(fd)
        for frames in messages:
            self._dispatch([identity, *frames])

    def _drop_link(self, fd):
        _, link = self._links.pop(fd)
        for identity in [i for i, f in self._link_of.items() if f == fd]:  # its own, and a Hello's
            del self._link_of[identity]
        self._backlogged.discard(link)
        link.close()
        self._watched_changed = True

    def _want_write(self, link):
        """`links.set_flusher`: `link` has bytes its socket did not take; send them at POLLOUT."""
        self._backlogged.add(link)
        self._watched_changed = True

    def _poll_timeout_ms(self):
        if self._posted:  # posted from this thread (no wake-up was sent): run them at once
            return 0
        if not self._timers:
            return 100
        return max(0, min(100, int((self._timers[0][0] - time.monotonic()) * 1000) + 1))

    def _drain_inbox(self):
        while self._inbox.poll(0):
            frames = self._inbox.recv_multipart(copy=False)
            identity = frames[0].bytes
            if len(frames) == 1 and identity == _WAKE:
                while self._posted:
                    self.guard(self._posted.popleft())
            elif identity.startswith(_LINK_IDENTITY):  # a reply from the pool to a link's client
                self.send_to(identity, frames[1:])
            else:
                self.touched(self._router)
                with contextlib.suppress(zmq.ZMQError):  # the requester left: nobody to answer
                    self._router.send_multipart(frames, copy=False, flags=zmq.DONTWAIT)

    def _run_due_timers(self):
        now = time.monotonic()
        while self._timers and self._timers[0][0] <= now:
            _, _, fn = heapq.heappop(self._timers)
            if fn is _noop:
                self._cancelled = max(0, self._cancelled - 1)
            else:
                self.guard(fn)

    def guard(self, fn):
        """Runs `fn`, printing (never raising) its error: a bug in one callback must not stop the
        server, nor reach whoever happened to trigger it."""
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - a bug in one callback must not stop the server
            import traceback  # noqa: PLC0415

            traceback.print_exc()
            print(f"nbdist: error in the serving loop of {self.task}: {e!r}", flush=True)

    # -- API for handlers on the I/O thread --------------------------------------------------------
    def watch(self, socket, callback):
        """Calls `callback()` on the I/O thread whenever `socket` is readable."""
        self._watched[socket] = callback
        self._watched_changed = True

    def unwatch(self, socket):
        if self._watched.pop(socket, None) is not None:
            self._watched_changed = True

    def call_later(self, delay_s, fn):
        """Runs `fn` on the I/O thread after `delay_s`; returns a handle for `cancel`."""
        entry = [time.monotonic() + delay_s, next(self._timer_seq), fn]
        heapq.heappush(self._timers, entry)
        return entry

    def cancel(self, entry):
        """Cancels a timer. Cancelled entries are dropped in bulk once they are the majority,
        so a loop that starts and cancels a deadline per step does not grow its heap."""
        if entry[2] is _noop:
            return
        entry[2] = _noop
        self._cancelled += 1
        if self._cancelled > 64 and self._cancelled * 2 > len(self._timers):
            self._timers = [e for e in self._timers if e[2] is not _noop]
            heapq.heapify(self._timers)
            self._cancelled = 0

    def at_exit(self, fn):
        """Runs `fn` on the I/O thread when the loop stops (to close what it owns)."""
        self._at_exit.append(fn)

    def post(self, fn):
        """Runs `fn` on the I/O thread soon (callable from any thread)."""
        self._posted.append(fn)
        if threading.get_ident() != self._io_ident:
            # Never block: if the wake-up cannot be queued, the loop still runs posted
            # callbacks at its next turn (at most one poll timeout later).
            with contextlib.suppress(zmq.Again, zmq.ZMQError):
                self._outbox().send(_WAKE, zmq.DONTWAIT)

    def submit(self, fn, *args):
        """Runs `fn(*args)` on the handler pool."""
        return self._pool.submit(fn, *args)

    @property
    def on_io_thread(self):
        return threading.get_ident() == self._io_ident

    # -- requests and replies ------------------------------------------------------------------------
    def _dispatch(self, frames):
        identity, payload = frames[0], frames[1:]
        try:
            msg = wire.decode(payload, self._key, self._replay_guard)
        except wire.WireError as e:
            self.malformed += 1
            self.send_reply(identity, "Error", wire.error_body(e, self.task), e.request_id)
            return
        if msg["type"] == "Hello":
            self._hello(identity, msg)
            return
        self._accept(msg, Responder(self, identity, msg.get("id", 0)))

    def _hello(self, identity, msg):
        """A link's client names the routing id its DEALER has here (``Hello {identity}``, one-way):
        messages `send_to` that id take its link from now on. A name that could be a ZeroMQ
        generated id or another link's (a leading zero byte), or a Hello not from a link, is
        counted malformed and ignored."""
        name = msg.get("identity")
        fd = self._link_of.get(identity) if isinstance(identity, bytes) else None
        if fd is None or not isinstance(name, bytes) or not 0 < len(name) <= 255 or name[0] == 0:
            self.malformed += 1
            return
        self._link_of[name] = fd

    def _accept(self, msg, responder):
        """Serves a decoded request: here if it is quick (`inline`), else on the pool."""
        self.requests_served += 1
        if self._inline(msg):
            self._serve(msg, responder)
        else:
            self._pool.submit(self._serve, msg, responder)

    def _serve(self, msg, responder):
        try:
            result = self._handle(msg, responder)
        except Exception as e:  # noqa: BLE001 - every failure becomes an error reply
            responder.fail(e)
            return
        if result is not DEFERRED and result[0] is not None:
            responder.reply(*result)

    def _encode_reply(self, reply_type, body, request_id):
        try:
            return wire.encode(reply_type, request_id, body, self._key, local=self._local)
        except (TypeError, ValueError) as e:
            return wire.encode("Error", request_id, wire.error_body(e, self.task), self._key)

    def send_reply(self, identity, reply_type, body, request_id):
        """Sends a reply from any thread (directly on the I/O thread, else via the inbox)."""
        if self._stop.is_set():
            return
        frames = self._encode_reply(reply_type, body, request_id)
        if self.on_io_thread:
            self.send_to(identity, frames)
            return
        try:
            wire.send_frames(self._outbox(), frames, prefix=[identity])
        except zmq.Again:  # only when the loop stopped meanwhile
            wire.discard(frames)

    def send_to(self, identity, frames, link_only=False):
        """Sends encoded `frames` to the peer `identity` (I/O thread only): over its link when
        it has one here (it said ``Hello``), else through the ROUTER (not with `link_only`).

        Returns False when that peer is not connected (or its queue is full): the message
        is dropped, and the caller may take another path.
        """
        fd = self._link_of.get(identity)
        if fd is not None:
            try:
                self._links[fd][1].write(frames)
            except links.LinkClosedError:
                wire.discard(frames)
                self._drop_link(fd)
                return False
            return True
        if link_only:
            wire.discard(frames)
            return False
        self.touched(self._router)
        try:
            wire.send_frames(self._router, frames, prefix=[identity], flags=zmq.DONTWAIT)
        except zmq.ZMQError:  # EHOSTUNREACH (ROUTER_MANDATORY) or EAGAIN
            wire.discard(frames)  # never sent: its shared-memory segments are free again
            return False
        return True

    def encode(self, msg_type, body):
        """Frames of a message signed with this server's key (for `send_to`)."""
        return self._encode_reply(msg_type, body, 0)

    def _outbox(self):
        sock = getattr(self._outboxes, "socket", None)
        if sock is None:
            sock = context().socket(zmq.PUSH)
            sock.setsockopt(zmq.LINGER, 0)
            sock.setsockopt(zmq.SNDTIMEO, 2000)  # a stopped loop must not hang a pool thread
            sock.connect(self._inbox_address)
            self._outboxes.socket = sock
            with self._outbox_lock:
                self._outbox_sockets.append(sock)
        return sock

    def stop(self, timeout_s=5.0):
        """Stops serving and frees the port before returning."""
        if self._stop.is_set():
            return
        self._stop.set()
        if _LOOPS.get(self.address) is self:
            del _LOOPS[self.address]
        for call in list(self._in_process_calls):
            call.abandon(f"its server at {self.address} was stopped")
        if not self.on_io_thread:
            self.post(_noop)  # wake the loop now rather than at its next poll timeout
        self._thread.join(timeout_s)
        _wait_port_free(self.bind_address, timeout_s)
        self._pool.shutdown(wait=False, cancel_futures=True)
        with self._outbox_lock:
            for s in self._outbox_sockets:
                s.close(linger=0)
            self._outbox_sockets.clear()
        if self._local and shm.enabled():
            shm.sweep_leftovers()


class _InProcessResponder(Responder):
    """Answers a request of `_InProcessCall`: the reply body goes back as it is."""

    __slots__ = ("_call",)
    in_process = True
    via = "in process"

    def __init__(self, loop, call):
        super().__init__(loop, None, 0)
        self._call = call

    def reply(self, reply_type, body):
        if not self._sent:
            self._sent = True
            self._call.answer(reply_type, body)


class _InProcessCall:
    """One request from a client of this process, until its reply (or the loop's end)."""

    def __init__(self, loop):
        self._loop = loop
        self._done = threading.Event()
        self.reply = None  # (reply_type, body)

    def answer(self, reply_type, body):
        self.reply = (reply_type, _detached(body))
        self._loop._in_process_calls.discard(self)
        self._done.set()

    def abandon(self, why):
        if not self._done.is_set():
            self.answer("Error", wire.error_body(errors.UnavailableError(None, None, why), self._loop.task))

    def wait(self, timeout_s):
        return self._done.wait(timeout_s)


class InProcessChannel:
    """A `transport.Channel` to a server of this process: same `call`, no wire.

    The request body is handed to the server's loop as a decoded message would be (its
    arrays are the caller's: a step never changes its feeds), and the reply comes back
    with its containers rebuilt and its arrays copied (`_detached`), as the wire would
    have copied them: a fetched value is the caller's own, never a variable's storage.
    """

    def __init__(self, loop, name):
        self._loop = loop
        self.address = loop.address
        self.name = name or loop.address

    def call(self, msg_type, body, timeout_s=None, connect_timeout_s=None, also=None):
        """As `transport.Channel.call`: the reply message, or the error reply raised. (`also`
        is for channels on a link; this one never is, so it is never given.)"""
        loop = self._loop
        call = _InProcessCall(loop)
        loop._in_process_calls.add(call)
        if loop._stop.is_set():
            call.abandon(f"its server at {loop.address} was stopped")
        msg = {**body, "v": wire.PROTOCOL_VERSION, "type": msg_type, "id": 0}
        loop.post(lambda: loop._accept(msg, _InProcessResponder(loop, call)))
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while not call.wait(0.1 if deadline is None else max(0.0, min(0.1, deadline - time.monotonic()))):
            if deadline is not None and time.monotonic() >= deadline:
                loop._in_process_calls.discard(call)
                raise errors.DeadlineExceededError(
                    None,
                    None,
                    f"timed out after {timeout_s:.1f} s waiting for the reply to {msg_type} from "
                    f"{self.name} at {self.address} (in this process)",
                )
        reply_type, reply = call.reply
        reply.update(type=reply_type, id=0)
        if reply_type == "Error":
            wire.raise_error(reply)
        return reply


def in_process_channel(address, key=None, name=""):
    """An `InProcessChannel` to the server of this process at `address` (the same address
    string the server was started with), else None: a server of another process, one that
    would refuse this client over the wire (another cluster `key`, or CURVE keys the client
    lacks: it gets the wire's error), or ``$NBDIST_IN_PROCESS=0``."""
    loop = _LOOPS.get(address)
    if (
        loop is None
        or loop._stop.is_set()
        or loop._key != key
        or loop._curve_keys != security.curve_keys()
        or os.environ.get(IN_PROCESS_ENV) == "0"
    ):
        return None
    return InProcessChannel(loop, name)


def _detached(obj):
    """`obj` with its containers rebuilt and its arrays copied: what a client may keep and
    change without touching the server's state (a variable's storage, a constant)."""
    if isinstance(obj, dict):
        return {k: _detached(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_detached(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_detached(v) for v in obj)
    if isinstance(obj, np.ndarray):
        return obj.copy()
    return obj


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
        self._inflight = {}  # (address, request id) -> (on_reply, on_error)
        self._watchers = {}  # address -> [(on_lost(why), on_back())]

    def channel(self, address, name):
        """The channel to `address` (made and watched on first use)."""
        channel = self._channels.get(address)
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

    def request(self, address, name, msg_type, body, on_reply, on_error):
        """Sends a request; returns its id, or None after calling `on_error` (peer lost)."""
        channel = self.channel(address, name)
        if not channel.on_link:  # (a link's peer that goes away closes it: no event to wait for)
            channel.poll_events()
        if channel.handshake_failure is not None:
            on_error(channel.handshake_error())
            return None
        if channel.disconnected_at is not None and not channel.connected:
            on_error(channel.unavailable(time.monotonic() - channel.disconnected_at, transport.LOST))
            return None
        try:
            request_id = channel.send(msg_type, body)
        finally:
            self._touched(channel)
        self._inflight[(address, request_id)] = (on_reply, on_error)
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
            self._fail_requests(address, channel.unavailable(0.0, transport.LOST))

    def _deliver(self, address, frames):
        try:
            msg = wire.decode(frames, self._key)
        except wire.WireError:
            return  # not from a server of this cluster: nothing is waiting for it
        callbacks = self._inflight.pop((address, msg.get("id")), None)
        if callbacks is None:
            return
        on_reply, on_error = callbacks
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
            self._fail(address, channel.unavailable(0.0, transport.LOST))
        elif channel.refused_since is not None:
            since = channel.refused_since
            self._loop.call_later(
                transport.REFUSED_GRACE_S + 0.01, lambda: self._check_refused(address, since)
            )

    def _fail_requests(self, address, error):
        for key in [k for k in self._inflight if k[0] == address]:
            callbacks = self._inflight.pop(key, None)
            if callbacks is not None:
                callbacks[1](error)

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
            self._fail(address, channel.unavailable(time.monotonic() - since, "no connection"))

    def _fail(self, address, error, lost_since=None):
        """Fails the requests `address` owes; tells its watchers it is lost."""
        self._fail_requests(address, error)
        channel = self._channels.get(address)
        if channel is not None and not channel.connected:
            why = transport.LOST if lost_since is None else "connection refused (its server is gone)"
            for on_lost, _ in self._watchers.get(address, ()):
                on_lost(why)


def _noop():
    pass


def _bound_router(ctx, bind_address, task):
    """The server's ROUTER socket bound at `bind_address` (a CURVE server when the process has
    CURVE keys), and the CURVE keys it encrypts with (None: plain ZeroMQ).

    Raises:
        OSError: the address is in use, or not this host's (naming it and the fix).
    """
    router = ctx.socket(zmq.ROUTER)
    router.setsockopt(zmq.LINGER, 0)
    router.setsockopt(zmq.IPV6, 1)
    router.setsockopt(zmq.MAXMSGSIZE, wire.MAX_TENSOR_BYTES)
    transport.set_heartbeats(router)  # clients that stop answering are dropped
    # Sending to an identity that is not connected raises (instead of a silent drop), so
    # a worker knows whether it could deliver fetched tensors straight to a client.
    router.setsockopt(zmq.ROUTER_MANDATORY, 1)
    try:
        keys = security.secure_server(router)
        router.bind(_bind_endpoint(bind_address, task))
    except zmq.ZMQError as e:
        router.close(linger=0)
        raise OSError(e.errno, _bind_error(e, task, bind_address)) from None
    except BaseException:
        router.close(linger=0)
        raise
    return router, keys


def _bracketed(host):
    return f"[{host.strip('[]')}]" if ":" in host else host


def _bind_endpoint(address, task):
    """``tcp://ip:port`` to bind for `address`; a host that does not resolve says how to fix it."""
    try:
        return zmq_endpoint(address)
    except ValueError as e:
        raise ValueError(
            f"cannot start server {task}: {e}; a server binds the host of its own cluster entry, which "
            "must resolve on this machine (or give `--bind IP`, e.g. this machine's or pod's own IP)"
        ) from None


def _bind_error(e, task, address):
    if e.errno == errno.EADDRNOTAVAIL:
        return (
            f"cannot start server {task} at {address}: {e.strerror}: that host is not an address of "
            "this machine (or of this network namespace); run the task on the host its cluster entry "
            "names, or bind another interface with `--bind IP` (`--bind 0.0.0.0` for all of them)"
        )
    return (
        f"cannot start server {task} at {address}: {e.strerror}; another server (or program) holds "
        "that port: stop it (server.stop() / %dtf_cluster stop) or choose another port"
    )


def _wait_port_free(address, timeout_s):
    """Returns once `address` can be bound again (zmq closes sockets asynchronously)."""
    import socket  # noqa: PLC0415

    endpoint = zmq_endpoint(address)[len("tcp://") :]
    host, _, port = endpoint.rpartition(":")
    host = host.strip("[]")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    deadline = time.monotonic() + timeout_s
    while True:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((host, int(port)))
                return
            except OSError:
                if time.monotonic() > deadline:
                    return
        time.sleep(0.005)
