"""The serving loop of a server: one ROUTER socket, one I/O thread, one handler pool.

The I/O thread receives every request. Work that never blocks and is quick (a ping,
a tensor pushed by a peer, a cached step, a small partition) runs right there, with
no thread hand-off; anything else goes to the pool, so an op that blocks never stalls
the server. The I/O thread is also an event loop for the master: it can watch more
sockets (`watch`), run timers (`call_later`) and callbacks posted from other threads
(`post`), so a step fanned out to several workers is driven without any thread waiting.
Replies from other threads reach the ROUTER through an inproc PUSH/PULL pair.

A client in the same process as a server skips the wire to it (`in_process`, TF's
``LocalMaster``): it finds the loop with `serving_loop_at` and hands it requests through
`accept`. The I/O thread's own channels to other servers are `peers.PeerChannels`.

Services (master, worker, per-task exec) declare their requests as tables of `Rpc`
entries; the server composes the tables onto one loop.
"""

import collections
import contextlib
import heapq
import itertools
import os
import threading
import time
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

import zmq

from nbdist.runtime import sched
from nbdist.runtime.net import binding, links, peers, readiness, samehost, security, shm, wire
from nbdist.runtime.net.transport import context

DEFERRED = ("deferred", None)  # a handler's answer when it will reply later via its Responder
# Poll flags as plain ints: `&` on pyzmq's enum costs microseconds, on every turn of the loop.
_POLLIN, _POLLOUT = int(zmq.POLLIN), int(zmq.POLLOUT)
# A link client's identity: this and a counter (never a ZeroMQ one: 5 bytes, or not starting with 0).
_LINK_IDENTITY = b"\x00link"
# The serving loops of this process, by address: what `serving_loop_at` finds.
_LOOPS = weakref.WeakValueDictionary()


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
        """How the request came: ``"link"`` or ``"zmq"`` (``"in process"``: `in_process`'s responder)."""
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
        task: name used in error replies (``/job:ps/replica:0/task:0``); a signed request
            may be addressed to it (or to `names`, or to the loop's `incarnation`).

    Raises:
        OSError: if the address cannot be bound (in use, or not this host's), naming it.
        ValueError: the host does not resolve.
    """

    def __init__(
        self, address, handle, key=None, inline=None, task="", max_threads=64, bind_host=None, names=()
    ):
        self.address = address
        port = address.rpartition(":")[2]
        self.bind_address = f"{binding.bracketed(bind_host)}:{port}" if bind_host else address
        self.task = task
        self._handle = handle
        self._key = key
        # Who this server is in a signed request's "to": its task (as given, and `names`: other
        # spellings of it) or its random incarnation, new at every start (`Pong` reports it).
        self.incarnation = os.urandom(8).hex()
        names = {self.incarnation, *(n for n in (task, *names) if n)}
        # A captured signed request is refused later on, and on any other server.
        self._replay_guard = wire.ReplayGuard(names=names if key is not None else None)
        self._inline = inline or (lambda msg: False)
        self.requests_served = 0
        self.malformed = 0
        ctx = context()
        self._router, self._curve_keys, self._cap = binding.bound_router(ctx, self.bind_address, task)
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
        self._waker = _Waker()  # other threads wake the loop for what they post
        self._watched = {}  # socket -> callback (I/O thread only)
        self._watched_changed = False
        self._readiness = None  # the I/O thread's `readiness.Poller` of what it watches
        self._at_exit = []  # callbacks run on the I/O thread when it stops
        self._timers = []  # heap of (when, seq, fn)
        self._timer_seq = itertools.count()
        self._cancelled = 0
        if self._local and shm.enabled():
            self.call_later(shm.TIDY_EVERY_S, self._tidy_shm)
        self.peers = peers.PeerChannels(self, key)
        self._at_exit.append(self.peers.close)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"nbdist-io-{address}", daemon=True)
        self._io_ident = None
        self.io_policy = None  # "batch" or "default", once the I/O thread runs (`sched.as_batch_thread`)
        self._held_calls = set()  # in-process calls not answered yet (`hold`)
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

    @property
    def stopped(self):
        """True once `stop` was called (from any thread)."""
        return self._stop.is_set()

    def admits_in_process(self, key):
        """Would a client of this process holding cluster key `key` (and this process's CURVE
        keys) be let in over the wire? Only then may it skip the wire (`in_process`)."""
        return key == self._key and self._curve_keys == security.curve_keys()

    def hold(self, call):
        """Keeps an in-process call until `release`: `stop` abandons the held ones
        (``call.abandon(why)``), so no caller waits for a stopped server."""
        self._held_calls.add(call)

    def release(self, call):
        self._held_calls.discard(call)

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
            if self._waker.fd in ready:
                self._waker.drain()
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
        if self._cap is not None:
            self._cap.close()
        self._router.close(linger=0)
        self._inbox.close(linger=0)
        self._waker.close()
        for fd in list(self._links):
            self._drop_link(fd)
        if self._link_listener is not None:
            self._link_listener.close()
            samehost.unlink_ipc(self._link_bound)
        samehost.unlink_ipc(self._ipc)

    def _poller(self):
        """A poller of every socket the loop reads, and of the links it has bytes to write to."""
        watched = (self._router, self._inbox, self._waker.fd, *self._watched, *self._links)
        flags = dict.fromkeys(watched, _POLLIN)
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
                if self._cap is not None and self._cap.refuse_link(len(self._links)):
                    link.close()  # past $NBDIST_MAX_CONNECTIONS, as the ROUTER's ZAP gate refuses
                    continue
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
                self._link_events_changed(link)
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
        self._link_events_changed(link)

    def _link_events_changed(self, link):
        """`link` began or stopped waiting for room: the poller watches its POLLOUT from now on
        (in place: a big tensor's write waits for room at every step, and a new poller would ask
        every ZeroMQ socket for its state); a closed link's descriptor needs a new poller."""
        if link.closed or self._readiness is None or self._watched_changed:
            self._watched_changed = True
            return
        fd = link.fileno()
        events = (_POLLIN if fd in self._links else 0) | (_POLLOUT if link in self._backlogged else 0)
        self._readiness.set_events(fd, events)

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
            if identity.startswith(_LINK_IDENTITY):  # a reply from the pool to a link's client
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

    def _tidy_shm(self):
        """Unlinks this process's idle shared-memory segments and unmaps peers' dead ones, every
        `shm.TIDY_EVERY_S` (a task that idles after a large transfer would hold them for good)."""
        shm.tidy()
        self.call_later(shm.TIDY_EVERY_S, self._tidy_shm)

    def at_exit(self, fn):
        """Runs `fn` on the I/O thread when the loop stops (to close what it owns)."""
        self._at_exit.append(fn)

    def post(self, fn):
        """Runs `fn` on the I/O thread soon (callable from any thread)."""
        self._posted.append(fn)
        if threading.get_ident() != self._io_ident:
            self._waker.wake()

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
        self.accept(msg, Responder(self, identity, msg.get("id", 0)))

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

    def accept(self, msg, responder):
        """Serves a decoded request: here if it is quick (`inline`), else on the pool (I/O
        thread only: a request from another thread comes through `post`)."""
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
        for call in list(self._held_calls):
            call.abandon(f"its server at {self.address} was stopped")
        if not self.on_io_thread:
            self.post(_noop)  # wake the loop now rather than at its next poll timeout
        self._thread.join(timeout_s)
        binding.wait_port_free(self.bind_address, timeout_s)
        self._pool.shutdown(wait=False, cancel_futures=True)
        with self._outbox_lock:
            for s in self._outbox_sockets:
                s.close(linger=0)
            self._outbox_sockets.clear()
        if self._local and shm.enabled():
            shm.sweep_leftovers()


class _Waker:
    """How other threads wake a serving loop: a descriptor it polls (an eventfd; a pipe where
    there is none). One system call at each end, where a ZeroMQ message to the loop's inbox
    cost the loop three questions to ZeroMQ (a ``poll()`` and a ``getpid()`` each) at every
    in-process step."""

    _ONE = (1).to_bytes(8, "little")  # what an eventfd adds (a pipe takes any bytes)

    def __init__(self):
        if hasattr(os, "eventfd"):
            self.fd = self._write_fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        else:
            self.fd, self._write_fd = os.pipe()
            os.set_blocking(self.fd, False)
            os.set_blocking(self._write_fd, False)
        self._lock = threading.Lock()  # (closed under it: a late wake never writes elsewhere)

    def wake(self):
        """(Any thread.) Never blocks: a full pipe means the loop is awake already."""
        with self._lock, contextlib.suppress(BlockingIOError, TypeError):  # (TypeError: closed)
            os.write(self._write_fd, self._ONE)

    def drain(self):
        """(The loop, before it runs what was posted: a later post wakes it again.)"""
        with contextlib.suppress(BlockingIOError):
            if self.fd == self._write_fd:  # an eventfd: one read takes its whole count
                os.read(self.fd, 8)
                return
            while os.read(self.fd, 4096):
                pass

    def close(self):
        with self._lock:
            for fd in {self.fd, self._write_fd}:
                os.close(fd)
            self._write_fd = None


def serving_loop_at(address):
    """The running serving loop of this process at `address` (the address string it was
    started with), or None."""
    loop = _LOOPS.get(address)
    return None if loop is None or loop.stopped else loop


def _noop():
    pass
