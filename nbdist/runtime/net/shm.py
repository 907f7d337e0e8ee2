"""Large tensors between two processes of one host, through POSIX shared memory.

A tensor of at least `SHM_MIN_BYTES` sent over a connection whose two ends are loopback
addresses is copied into a shared-memory segment of the sender's `SegmentPool`; the
message carries only a handle ``[name, nonce, dtype, shape, reader slot, shared]`` inside its (signed) header
(`nbdist.runtime.net.wire`). The receiver maps the segment once (mappings are cached), and
hands out a numpy view of it: no copy on receipt. When the last view of that
tensor is dropped, the receiver marks its reader slot free in the segment's header; once
every slot is free the sender may reuse it, so a pool segment's pages stay touched and a
transfer costs one memcpy. An array that can never change (read-only, owning its memory: a
variable's stored value), put as `unchanging`, takes another reader slot of the segment that
still holds it when it is sent again, without a copy (a ps that sends the same weights to
every worker of a step copies them once); its receivers get read-only views (``shared``),
since one receiver's writes would show in the others'.

Segments are files in ``/dev/shm`` (what ``shm_open`` creates on Linux) made with
``O_CREAT | O_EXCL | O_NOFOLLOW`` and mode 0600, mapped with `mmap`. Not
``multiprocessing.shared_memory``: on Python 3.11 its resource tracker unlinks a segment
when *any* attaching process exits (and warns), and opting out needs private API.

Segment layout: a 4096-byte header (``MAGIC``, the current nonce, `READERS` reader slots of
one byte each: 1 held, 0 free), then the tensor's bytes. A random 64-bit nonce, renewed on every use, ties a
handle to one use of a segment: a stale or forged handle does not match and is refused.

Names are ``nbdist-<uid>-<pid>.<process start time>-<n>``: a process unlinks its own
segments at exit, and `sweep_leftovers` (run when a server starts or stops and when a
`LocalCluster` stops) unlinks those of processes that are gone (killed by SIGKILL).
A segment left free for more than `IDLE_S` is unlinked by its pool (`tidy`). A receiver's
mapping holds the segment's pages (and a file descriptor) even once it is unlinked, so a
receiver unmaps a peer's segments when its channel to that peer is dropped (`forget_peer`)
and those whose sender is gone or has unlinked them (`tidy`: when a channel is dropped,
before mapping another segment, and every `TIDY_EVERY_S` on a serving loop).
Set ``$NBDIST_SHM=0`` to send every tensor in the socket instead, ``$NBDIST_SHM_MIN_BYTES`` to
move the bar.
"""

import atexit
import collections
import contextlib
import ctypes
import itertools
import math
import mmap
import os
import re
import stat
import struct
import threading
import time
import weakref

import numpy as np

# Smaller tensors ride in the socket frame (measured: docs/benchmarks.md, "Again, after five
# runtime changes": at 32 KiB a handle gains nothing, from 64 KiB it does; 256 KiB keeps the
# segments few). `$NBDIST_SHM_MIN_BYTES` sets another bar (how that was measured).
SHM_MIN_BYTES = int(os.environ.get("NBDIST_SHM_MIN_BYTES") or 2**18)
SHM_DIR = "/dev/shm"  # noqa: S108 - where POSIX shm lives; files are O_EXCL, 0600, owner-checked
# What one process's pool may hold at most; beyond it (receivers keep many views) tensors
# travel in the socket. $NBDIST_SHM_POOL_MB.
POOL_MAX_BYTES = int(float(os.environ.get("NBDIST_SHM_POOL_MB", "2048")) * 2**20)
MAPPINGS_MAX_BYTES = 4 * POOL_MAX_BYTES  # the peers' segments a receiver keeps mapped
IDLE_S = 30.0  # a pool segment free for longer is unlinked (its receivers unmap it at their `tidy`)
TIDY_EVERY_S = 10.0  # how often a serving loop runs `tidy`
MAGIC = b"nbdshm01"
_HEADER_BYTES = 4096
_NONCE_AT, _STATE_AT = 8, 16
READERS = 8  # reader slots per segment: the receivers one put of an unchanging array can serve
_ALL_FREE = bytes(READERS)
_FREE, _BUSY = 0, 1
_UID = os.geteuid()
_NAME = re.compile(rf"nbdist-{_UID}-(\d+)\.(\d+)-\d+")

_serials = itertools.count()  # of this process's segment names (any pool's: never reused)
# Counters, for the servers' Status and the tests: what went through shared memory.
stats = collections.Counter()


class ShmError(ValueError):
    """A handle that cannot be attached (stale, forged, or the segment is gone)."""


def enabled():
    """True when shared memory may be used: ``$NBDIST_SHM`` is not 0 and /dev/shm is writable."""
    return os.environ.get("NBDIST_SHM", "1") != "0" and _dev_shm_usable()


_usable = None


def _dev_shm_usable():
    global _usable
    if _usable is None:
        _usable = (
            os.path.isdir(SHM_DIR)
            and os.access(SHM_DIR, os.W_OK | os.X_OK)
            and _start_time(os.getpid()) is not None  # names need it, to tell leftovers apart
        )
    return _usable


def _start_time(pid):
    """A process's start time (clock ticks since boot), or None when it does not exist."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read()
    except OSError:
        return None
    return int(text[text.rindex(b")") + 2 :].split()[19])  # field 22 of proc(5)


class _Segment:
    __slots__ = ("name", "mm", "capacity", "nonce", "free_since", "source")

    def __init__(self, name, mm, capacity):
        self.name, self.mm, self.capacity, self.nonce = name, mm, capacity, 0
        self.free_since = None  # when a `unlink_idle` first saw it free (None: in use since)
        self.source = None  # a weak reference to the unchanging array it holds, if it holds one

    @property
    def free(self):
        return self.mm[_STATE_AT : _STATE_AT + READERS] == _ALL_FREE

    def take_slot(self):
        """A free reader slot, marked held; None when every slot is held."""
        slot = self.mm.find(b"\0", _STATE_AT, _STATE_AT + READERS)
        if slot < 0:
            return None
        self.mm[slot] = _BUSY
        return slot - _STATE_AT


class SegmentPool:
    """This process's segments for tensors it sends (thread-safe).

    A segment is busy from `put` until its receiver drops the tensor's last view; busy
    ones are never written. Sizes are powers of two (>= `SHM_MIN_BYTES`), so a segment
    serves any tensor from half its size up.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._segments = []
        self._nbytes = 0
        self._prefix = f"nbdist-{_UID}-{os.getpid()}.{_start_time(os.getpid())}-"

    def put(self, array, unchanging=False):
        """Copies `array` (C-contiguous, numeric) into a free segment; returns its handle
        ``[name, nonce, dtype, shape, reader slot, shared]``, or None when the pool is full
        (send it in the socket). An `unchanging` array (the caller knows it is never written:
        read-only and owning its memory) that a segment still holds takes another reader slot
        of it instead: no copy; its handles say `shared` (the receivers' views are read-only)."""
        shared = self._shared(array) if unchanging else None
        if shared is not None:
            stats["shared"] += 1
            segment, slot = shared
        else:
            segment = self._acquire(array.nbytes)
            if segment is None:
                stats["fallback"] += 1
                return None
            dst = np.frombuffer(segment.mm, np.uint8, array.nbytes, _HEADER_BYTES)
            np.copyto(dst, array.reshape(-1).view(np.uint8))
            if unchanging:
                segment.source = weakref.ref(array)
            slot = 0
        stats["sent"] += 1
        stats["sent_bytes"] += array.nbytes
        return [segment.name, segment.nonce, array.dtype.str, list(array.shape), slot, unchanging]

    def _shared(self, array):
        """``(segment, reader slot)`` of a segment that holds `array` and has a free slot."""
        with self._lock:
            for seg in self._segments:
                if seg.source is not None and seg.source() is array:
                    slot = seg.take_slot()
                    if slot is not None:
                        seg.free_since = None
                        return seg, slot
        return None

    def release(self, name, nonce, slot=0):
        """Frees a reader slot again (a message that carried its handle was never sent)."""
        with self._lock:
            for seg in self._segments:
                if seg.name == name and seg.nonce == nonce:
                    seg.mm[_STATE_AT + slot] = _FREE

    def _acquire(self, nbytes):
        capacity = max(SHM_MIN_BYTES, 1 << (nbytes - 1).bit_length())
        with self._lock:
            segment = next((s for s in self._segments if s.capacity == capacity and s.free), None)
            if segment is None:
                if self._nbytes + capacity > POOL_MAX_BYTES:
                    return None
                segment = self._create(capacity)
                if segment is None:
                    return None
            segment.nonce = int.from_bytes(os.urandom(8), "big") >> 1
            segment.free_since = None
            segment.source = None
            struct.pack_into("<Q", segment.mm, _NONCE_AT, segment.nonce)
            segment.mm[_STATE_AT] = _BUSY  # (reader slot 0)
            return segment

    def _create(self, capacity):
        name = f"{self._prefix}{next(_serials)}"
        path = os.path.join(SHM_DIR, name)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except OSError:
            return None
        try:
            os.ftruncate(fd, _HEADER_BYTES + capacity)
            mm = mmap.mmap(fd, _HEADER_BYTES + capacity)
        except OSError:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(path)
            return None
        os.close(fd)
        mm[: len(MAGIC)] = MAGIC
        segment = _Segment(name, mm, capacity)
        self._segments.append(segment)
        self._nbytes += capacity
        return segment

    def unlink_idle(self, now=None, idle_s=IDLE_S):
        """Unlinks the segments seen free for more than `idle_s` (since an earlier call saw them
        free and none was put in them); returns their names. Their pages go once no receiver
        maps them (receivers unmap unlinked segments at their `tidy`)."""
        now = time.monotonic() if now is None else now
        idle = []
        with self._lock:
            for seg in self._segments:
                if not seg.free:
                    seg.free_since = None
                elif seg.free_since is None:
                    seg.free_since = now
                elif now - seg.free_since > idle_s:
                    idle.append(seg)
            for seg in idle:
                self._segments.remove(seg)
                self._nbytes -= seg.capacity
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(SHM_DIR, seg.name))
                with contextlib.suppress(BufferError):  # (a view still exported: it unmaps when dropped)
                    seg.mm.close()
        return [seg.name for seg in idle]

    def close(self):
        """Unlinks every segment (at exit); receivers' views stay valid until dropped."""
        with self._lock:
            for seg in self._segments:
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(SHM_DIR, seg.name))
            self._segments.clear()
            self._nbytes = 0

    def names(self):
        with self._lock:
            return [s.name for s in self._segments]


_pool = None
_pool_lock = threading.Lock()


def pool():
    """This process's `SegmentPool` (made on first use; a forked child makes its own)."""
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                sweep_leftovers()
                _pool = SegmentPool()
                atexit.register(_pool.close)
    return _pool


def close_pool():
    """Unlinks this process's segments now (a process about to ``os._exit`` skips atexit)."""
    if _pool is not None:
        _pool.close()


def tidy():
    """Unmaps the cached mappings of segments whose sender is gone or has unlinked them, and
    unlinks this process's pool segments idle for more than `IDLE_S`. Cheap (a stat per mapped
    segment, a read of /proc per sender): run when a channel is dropped and periodically."""
    _mappings.forget_gone()
    if _pool is not None:
        _pool.unlink_idle()


def forget_peer(pid):
    """A channel to process `pid` was dropped (0: its process is not known): unmaps the cached
    mappings of that process's segments, then `tidy`. Views still held stay valid (each keeps
    its mapping until dropped); a later handle maps its segment again."""
    if pid:
        _mappings.forget(lambda name, owner: owner[0] == pid)
    tidy()


def mapped_names():
    """The names of the peers' segments this process keeps mapped (for tests and status)."""
    return _mappings.names()


def _after_fork():
    global _pool, _mappings
    _pool = None
    _mappings = _Mappings()
    stats.clear()


class _Mappings:
    """The peers' segments this process has mapped (least recently used dropped first)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._maps = collections.OrderedDict()  # name -> mmap
        self._nbytes = 0

    def get(self, name):
        with self._lock:
            mm = self._maps.get(name)
            if mm is not None:
                self._maps.move_to_end(name)
                return mm
        self.forget_gone()  # a new segment: a moment to let go of dead ones
        mm = _map_peer_segment(name)
        with self._lock:
            if name in self._maps:  # another thread mapped it meanwhile
                return self._maps[name]
            self._maps[name] = mm
            self._nbytes += len(mm)
            while self._nbytes > MAPPINGS_MAX_BYTES and len(self._maps) > 1:
                _, old = self._maps.popitem(last=False)  # unmapped once its views are gone
                self._nbytes -= len(old)
        return mm

    def forget(self, drop):
        """Drops the mappings whose ``drop(name, (pid, start time))`` is true: each is unmapped
        (its descriptor closed) once no view of it is left."""
        with self._lock:
            names = [n for n in self._maps if drop(n, _owner(n))]
            for name in names:
                self._nbytes -= len(self._maps.pop(name))
        return names

    def forget_gone(self):
        """Drops the mappings of segments whose sender exited or that it unlinked (idle)."""
        alive = {}

        def gone(name, owner):
            if owner not in alive:
                alive[owner] = _start_time(owner[0]) == owner[1]
            return not alive[owner] or not os.path.exists(os.path.join(SHM_DIR, name))

        with self._lock:
            if not self._maps:
                return []
        return self.forget(gone)

    def names(self):
        with self._lock:
            return list(self._maps)


def _owner(name):
    """``(pid, start time)`` of the process that made segment `name` (a name `_NAME` matched)."""
    match = _NAME.fullmatch(name)
    return int(match.group(1)), int(match.group(2))


_mappings = _Mappings()
os.register_at_fork(after_in_child=_after_fork)


def _map_peer_segment(name):
    if not _NAME.fullmatch(name):
        raise ShmError(f"shared-memory segment name {name!r} is not one of this user's nbdist segments")
    try:
        fd = os.open(os.path.join(SHM_DIR, name), os.O_RDWR | os.O_NOFOLLOW)
    except OSError as e:
        raise ShmError(
            f"shared-memory segment {name!r} cannot be opened ({e.strerror}): its sender exited, or "
            "the two tasks use loopback addresses but do not share /dev/shm (set $NBDIST_SHM=0)"
        ) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != _UID or st.st_mode & 0o077:
            raise ShmError(f"shared-memory segment {name!r} is not a private (0600) file of this user")
        if st.st_size <= _HEADER_BYTES:
            raise ShmError(f"shared-memory segment {name!r} is truncated ({st.st_size} bytes)")
        flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)  # no page fault per page later
        mm = mmap.mmap(fd, st.st_size, flags=flags)
    finally:
        os.close(fd)
    if mm[: len(MAGIC)] != MAGIC:
        raise ShmError(f"shared-memory segment {name!r} is not an nbdist segment")
    return mm


def attach(name, nonce, dtype, shape, slot=0, shared=False):
    """The tensor a handle names: a view of the sender's segment (read-only when `shared`:
    other receivers may view the same bytes).

    The handle's reader slot is marked free (once every slot is, the sender may reuse the
    segment) when the last view of the returned array is dropped.

    Raises:
        ShmError: the segment is gone, not this user's, too small, or the handle is stale
            (its nonce is not the segment's current one, or its reader slot is not held).
    """
    if not (isinstance(slot, int) and 0 <= slot < READERS):
        raise ShmError(
            f"shared-memory handle for {name!r} names reader slot {slot!r}, not one of 0..{READERS - 1}"
        )
    mm = _mappings.get(name)
    nbytes = math.prod(shape) * dtype.itemsize  # (ints: `wire` checked the handle; numpy's prod costs 5 us)
    (current,) = struct.unpack_from("<Q", mm, _NONCE_AT)
    if current != nonce or mm[_STATE_AT + slot] != _BUSY:
        raise ShmError(f"stale shared-memory handle for segment {name!r}: the segment was reused or freed")
    if _HEADER_BYTES + nbytes > len(mm):
        raise ShmError(f"shared-memory handle for {name!r} claims {nbytes} bytes, the segment holds fewer")
    holder = (ctypes.c_char * max(nbytes, 1)).from_buffer(mm, _HEADER_BYTES)
    weakref.finalize(holder, _mark_free, mm, nonce, _STATE_AT + slot)
    # Writable, as an array received in a frame is: until it is dropped the segment is
    # this receiver's alone (the sender writes it again only once it is marked free).
    array = np.frombuffer(holder, dtype, nbytes // dtype.itemsize).reshape(shape)
    if shared:
        array.flags.writeable = False
    stats["received"] += 1
    stats["received_bytes"] += nbytes
    return array


def _mark_free(mm, nonce, at):
    with contextlib.suppress(ValueError):  # the mapping was closed
        if struct.unpack_from("<Q", mm, _NONCE_AT)[0] == nonce:
            mm[at] = _FREE


def sweep_leftovers():
    """Unlinks this user's segments left by processes that no longer exist (SIGKILLed tasks).

    Returns the names removed."""
    removed = []
    try:
        names = os.listdir(SHM_DIR)
    except OSError:
        return removed
    for name in names:
        match = _NAME.fullmatch(name)
        if match is None:
            continue
        pid, started = int(match.group(1)), int(match.group(2))
        if _start_time(pid) == started:
            continue  # its process still runs (the start time rules out a reused pid)
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(SHM_DIR, name))
            removed.append(name)
    return removed


def segments_of(pid):
    """The names in /dev/shm of segments created by process `pid` (for tests and status)."""
    try:
        names = os.listdir(SHM_DIR)
    except OSError:
        return []
    return sorted(n for n in names if (m := _NAME.fullmatch(n)) and int(m.group(1)) == pid)
