"""Links: a server's messages to and from a process of the same host over a raw Unix socket.

ZeroMQ moves every message through its own I/O thread at both ends, so one message wakes
three threads: the sender's ZeroMQ thread, the receiver's, then the receiving Python thread,
and a wake-up that crosses to another CPU is the dearest thing a small message costs
(docs/benchmarks.md, "Transport first", has the round trips of both paths). A link is a Unix
stream socket that the sender writes and the receiver's serving loop polls directly: one
wake-up per message.

A link is only a faster path beside a ZeroMQ connection, never instead of one. It carries
the same wire-encoded messages (signed, stamped, replay-checked: `nbdist.runtime.net.wire`),
and the ZeroMQ connection to the same server stays up beside it: its heartbeats and socket
events alone say whether the peer is alive, so a dead or silent peer is reported exactly as
before. A client's `transport.Channel` takes a link when it is made, if the server listens
on one, and keeps it (a replay guard wants one sender's requests in order: a stream never
switches path while the peer lives). Links are for loopback addresses (the socket lives in
the same per-user directory of mode 0700 as ZeroMQ's ``ipc://`` sockets), never with CURVE
encryption (a link is not encrypted), and off with ``$NBDIST_LINKS=0``.

Framing: a little-endian u32 frame count, one u64 length per frame, then the frames. Counts
and sizes are bounded as the wire bounds them; a peer that breaks the framing has its link
closed (never the server).
"""

import collections
import os
import select
import socket
import struct
import threading
import time

from nbdist.runtime.net import samehost, wire

LINKS_ENV = "NBDIST_LINKS"  # "0": every message goes over ZeroMQ
_COUNT = struct.Struct("<I")
_ONE_FRAME = struct.Struct("<IQ")  # the head of a message of one frame (most messages)
_SMALL = 64 * 1024  # a one-frame message up to this size is written as one buffer
_LENGTHS = [struct.Struct(f"<{n}Q") for n in range(9)]  # the lengths of n frames, for small n
_MAX_IOV = 512  # parts per sendmsg (the kernel's IOV_MAX is 1024)
_RECV_CHUNK = 256 * 1024
# A link whose reader stops reading (a client thread that left) holds at most this much for it;
# writes beyond are refused, as ZeroMQ drops messages past its high-water mark.
MAX_BACKLOG_BYTES = 256 * 2**20
_MAX_MESSAGE_BYTES = wire.MAX_TENSOR_BYTES + wire.MAX_HEADER_BYTES
_MAX_FRAME_BYTES = max(wire.MAX_FRAME_BYTES, wire.MAX_HEAD_FRAME_BYTES)  # as a server's ROUTER bounds one
_readers = threading.local()  # .scratch: see `_scratch`; .waiter: see `wait_any`
_writers = threading.local()  # .flusher: the serving loop of this thread (it drains backlogs)


class LinkClosedError(ConnectionError):
    """The link's peer closed it (or the link was closed here)."""


class LinkError(ValueError):
    """The bytes on a link do not frame a message (not an nbdist peer, or a broken one)."""


def enabled():
    return os.environ.get(LINKS_ENV) != "0"


def set_flusher(flusher):
    """Makes `flusher(link)` this thread's way to finish a write that did not fit in the
    socket: a serving loop's I/O thread registers the link for POLLOUT instead of blocking
    (two loops blocked writing to each other would never read)."""
    _writers.flusher = flusher


class Link:
    """One end of a link: framed writes (never lost, in order) and reads of whole messages.

    A link has one writer thread (a client channel's owner, or a server's I/O thread) and one
    reader thread, as ZeroMQ sockets do.

    Args:
        sock: a connected Unix stream socket (made non-blocking here).
        peer: how to name the other end in errors.
    """

    def __init__(self, sock, peer=""):
        sock.setblocking(False)
        self.sock = sock
        self._fd = sock.fileno()  # (kept after close: the loop that polled it forgets it by this)
        self.peer = peer
        self.closed = False
        self._out = collections.deque()  # memoryviews not sent yet, in order
        self._backlog = 0  # their bytes
        self._in = bytearray()
        self._ready = collections.deque()  # messages read but not taken yet
        self._poll = None  # (made on the first wait_readable)
        self.peer_pid = 0  # the server's process, on a client's end (`connect`): its shm segments

    def fileno(self):
        return self._fd

    def close(self):
        if not self.closed:
            self.closed = True
            self._out.clear()
            self._backlog = 0
            self.sock.close()

    # -- writing ------------------------------------------------------------------------------------
    def write(self, frames, timeout_s=5.0):
        """Queues one message (`frames`: bytes-likes or zmq Frames) and sends what the socket
        takes now. What it does not take is sent by this thread's serving loop (see
        `set_flusher`) or, on any other thread, here: waiting for room up to `timeout_s`.

        Raises:
            LinkClosedError: the link is closed, its peer went away, or it never made room.
        """
        if self.closed:
            raise LinkClosedError(f"the link to {self.peer} is closed")
        if len(frames) == 1 and not self._out and type(frames[0]) is bytes and len(frames[0]) <= _SMALL:
            # A small message (one frame, a header) with nothing queued before it: one buffer,
            # one send (a copy of a few hundred bytes costs less than building a gather list).
            data = _ONE_FRAME.pack(1, len(frames[0])) + frames[0]
            try:
                sent = self.sock.send(data)
            except BlockingIOError:
                sent = 0
            except OSError as e:
                self.close()
                raise LinkClosedError(f"the link to {self.peer} broke: {e.strerror or e}") from None
            if sent == len(data):
                return
            self._out.append(memoryview(data)[sent:])
            self._backlog += len(data) - sent
        else:
            buffers = [memoryview(f.buffer if hasattr(f, "buffer") else f).cast("B") for f in frames]
            head = _COUNT.pack(len(buffers)) + struct.pack(f"<{len(buffers)}Q", *(b.nbytes for b in buffers))
            size = len(head) + sum(b.nbytes for b in buffers)
            if self._backlog + size > MAX_BACKLOG_BYTES:  # its reader is stuck: give the link up
                backlog = self._backlog
                self.close()
                raise LinkClosedError(f"the link to {self.peer} held {backlog} bytes its peer did not read")
            self._out.append(memoryview(head))
            self._out.extend(b for b in buffers if b.nbytes)
            self._backlog += size
            self.send_some()
            if not self._out:
                return
        flusher = getattr(_writers, "flusher", None)
        if flusher is not None:
            flusher(self)
            return
        self._drain(timeout_s)

    def send_some(self):
        """Sends queued bytes until the socket is full; True when nothing is left."""
        out = self._out
        while out:
            parts = [out[i] for i in range(min(len(out), _MAX_IOV))]
            try:
                sent = self.sock.sendmsg(parts)
            except BlockingIOError:
                return False
            except OSError as e:
                self.close()
                raise LinkClosedError(f"the link to {self.peer} broke: {e.strerror or e}") from None
            self._backlog -= sent
            while sent:
                first = out[0]
                if sent >= first.nbytes:
                    sent -= first.nbytes
                    out.popleft()
                else:
                    out[0] = first[sent:]
                    sent = 0
        return True

    def _drain(self, timeout_s):
        deadline = time.monotonic() + timeout_s
        poller = select.poll()
        poller.register(self.sock, select.POLLOUT)
        while not self.send_some():
            left = deadline - time.monotonic()
            if left <= 0:
                self.close()
                raise LinkClosedError(f"the link to {self.peer} made no room for {timeout_s:.1f} s")
            poller.poll(min(left, 0.1) * 1000)

    # -- reading ------------------------------------------------------------------------------------
    def wait_readable(self, timeout_ms):
        """True when a message is waiting or bytes can be read within `timeout_ms`."""
        if self._ready:
            return True
        if self._poll is None:  # (poll, not select: a busy process may hold fds beyond 1024)
            self._poll = select.poll()
            self._poll.register(self._fd, select.POLLIN)
        return bool(self._poll.poll(timeout_ms))

    def take(self):
        """The next whole message (a list of frames), or None when none has arrived yet.

        Raises:
            LinkClosedError: the peer closed the link (nothing more will come).
            LinkError: the peer's bytes do not frame a message (the link is closed).
        """
        if not self._ready:
            self._read()
        return self._ready.popleft() if self._ready else None

    def take_all(self):
        """Every whole message that has arrived, reading the socket once (a serving loop's
        turn: a client that never stops writing cannot keep the loop to itself); [] if none.
        After the peer closed the link, its last whole messages come with `closed` set.

        Raises:
            LinkClosedError: the link was closed before, or closed with nothing left to hand out.
            LinkError: the peer's bytes do not frame a message (the link is closed).
        """
        self._read()
        messages = list(self._ready)
        self._ready.clear()
        return messages

    def _read(self):
        if self.closed:
            raise LinkClosedError(f"the link to {self.peer} is closed")
        scratch = _scratch()
        while True:
            try:
                n = self.sock.recv_into(scratch)
            except BlockingIOError:
                break
            except OSError as e:
                self.close()
                raise LinkClosedError(f"the link to {self.peer} broke: {e.strerror or e}") from None
            if not n:
                self._parse()
                self.close()
                if self._ready:
                    return  # hand out what arrived whole; the next read says closed
                raise LinkClosedError(f"{self.peer} closed the link")
            if not self._in and n < _RECV_CHUNK:  # (the usual turn: whole messages, read at once)
                with scratch[:n] as got:
                    used = self._parse_from(got)
                    self._in += got[used:]
                return
            self._in += scratch[:n]
            if n < _RECV_CHUNK:
                break
        self._parse()

    def _parse(self):
        pos = 0
        try:
            pos = self._parse_from(self._in)
        finally:
            del self._in[:pos]

    def _parse_from(self, buf):
        """Moves the whole messages at the start of `buf` to `_ready`; returns the bytes they took."""
        pos, size = 0, len(buf)
        with memoryview(buf) as view:
            while size - pos >= _COUNT.size:
                (n,) = _COUNT.unpack_from(view, pos)
                if not 1 <= n <= wire.MAX_FRAMES + 1:
                    raise self._broken(f"a message of {n} frames")
                start = pos + _COUNT.size + 8 * n
                if size < start:
                    break
                lengths = (_LENGTHS[n] if n < len(_LENGTHS) else struct.Struct(f"<{n}Q")).unpack_from(
                    view, pos + _COUNT.size
                )
                total = sum(lengths)
                if total > _MAX_MESSAGE_BYTES or max(lengths) > _MAX_FRAME_BYTES:
                    raise self._broken(f"a message of {total} bytes (frames of up to {max(lengths)})")
                if size - start < total:
                    break
                frames = []
                for length in lengths:
                    frames.append(view[start : start + length].tobytes())
                    start += length
                self._ready.append(frames)
                pos = start
        return pos

    def _broken(self, what):
        self.close()
        return LinkError(f"{what} on the link from {self.peer}: not an nbdist peer of this version")


def wait_any(links, timeout_ms):
    """The open links of `links` that hold a message or have bytes to read, waiting up to
    `timeout_ms` for one ([] if none): one thread reading several links at once."""
    links = [link for link in links if not link.closed]
    ready = [link for link in links if link._ready]
    if ready or not links:
        return ready
    fds = tuple(link._fd for link in links)
    cached = getattr(_readers, "waiter", None)  # (fds, poll): a thread waits on the same ones again
    if cached is None or cached[0] != fds:
        poll = select.poll()
        for fd in fds:
            poll.register(fd, select.POLLIN)
        cached = _readers.waiter = (fds, poll)
    readable = {fd for fd, _ in cached[1].poll(timeout_ms)}
    return [link for link in links if link._fd in readable]


def _scratch():
    """This thread's receive buffer. Bytes are received into it, then appended to a link's
    input: `sock.recv(n)` would allocate n bytes per call, and at 256 KiB that is an mmap and
    a munmap per message."""
    buf = getattr(_readers, "scratch", None)
    if buf is None:
        buf = _readers.scratch = memoryview(bytearray(_RECV_CHUNK))
    return buf


def path_of(address):
    """The link socket of the server at `address` (None: not a loopback address)."""
    return samehost.ipc_path(address, ".link")


def connect(path, peer=""):
    """A `Link` to the server listening at `path`, or None (no link there: use ZeroMQ)."""
    if path is None or not os.path.exists(path):
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(1.0)  # a full backlog makes a Unix connect wait
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        return None
    link = Link(sock, peer)
    link.peer_pid = _peer_pid(sock)
    return link


def peer_pid(link):
    """The process at the other end of a client's `link` (0: no link, or not known)."""
    return 0 if link is None else link.peer_pid


def _peer_pid(sock):
    """The pid of the process that listens at the other end of Unix socket `sock` (0: unknown)."""
    try:
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except (OSError, AttributeError):  # (not Linux)
        return 0
    return struct.unpack("3i", creds)[0]


def listen(path):
    """A non-blocking listening Unix socket at `path`, or None (the path is another live
    server's, or cannot be made). A socket file left by a killed server is replaced."""
    if path is None:
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    for _ in range(2):
        try:
            sock.bind(path)
            break
        except OSError:
            if samehost.listening(path) or not _remove(path):
                sock.close()
                return None
    else:
        sock.close()
        return None
    sock.listen(64)
    sock.setblocking(False)
    return sock


def _remove(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


def accept(listener, peer=""):
    """Every `Link` a client opened on `listener` since the last call."""
    links = []
    while True:
        try:
            sock, _ = listener.accept()
        except (BlockingIOError, InterruptedError):
            return links
        except OSError:
            return links  # (out of file descriptors: the client retries over ZeroMQ's path)
        links.append(Link(sock, peer))
