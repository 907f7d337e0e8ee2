"""The wire format: the sole owner of how a message becomes ZeroMQ frames and back.

A message is ``[head, *tensor_frames]``, ``head`` = one byte *n*, then the *n*-byte
signature, then the header - so a message with no large tensor is a single ZeroMQ frame:

- the header is msgpack: ``{"v": PROTOCOL_VERSION, "type": "RunGraph", "id": 17, ...body}``.
  Every numpy array anywhere in the body is replaced by an ext reference
  ``(index, dtype, shape)`` and travels as its own raw frame, sent zero-copy and
  received with ``np.frombuffer`` (no copy, no pickle); arrays up to `INLINE_MAX_BYTES`
  travel inside the header. String tensors (``tf.string``) travel inside the header as
  lists of bytes.
- the signature is HMAC-SHA256 over the header and every tensor frame when the cluster
  has a key (empty otherwise: *n* = 0). It is checked *before* anything is decoded.
- ``"s": [epoch, seq, sent_ms]`` in a signed request's header is its *sender stamp*: each
  sending channel (one ZeroMQ socket, so its messages arrive in order) has a random 64-bit
  epoch and counts its messages. A `ReplayGuard` on the receiving side refuses a signed
  request whose stamp is missing, not newer than the last one of its epoch, older than
  `REPLAY_WINDOW_S`, or sent before the receiver started: a captured message replayed later
  is refused even though its signature is valid. (ZeroMQ routing ids change on reconnect,
  so they cannot be the sender's identity; the stamp is inside the signed header.)
- ``"to"`` in a signed request's header names its receiver: the task as the sender's cluster
  spec names it (``/job:ps/replica:0/task:0``), or the random incarnation a server reports
  in its ``Pong`` (a client that knows only an address asks first). A guard with `names`
  refuses a request addressed to anyone else, so a request recorded on its way to one task
  cannot be replayed to another (each keeps its own replay record). ``Ping``, ``Status`` and
  a link's ``Hello`` (`UNADDRESSED`) need no receiver: they change nothing.

Decoding never runs code from the message: msgpack yields only plain data, and array
frames are only ever reinterpreted as numbers. Sizes are bounded (`MAX_HEADER_BYTES`,
`MAX_FRAMES`, `MAX_TENSOR_BYTES`), and no frame is larger than `MAX_FRAME_BYTES` (64 MiB,
``$NBDIST_MAX_FRAME_BYTES``): a larger tensor travels as several frames, joined on arrival.
A server's ROUTER refuses a larger frame as soon as its size is announced (``ZMQ_MAXMSGSIZE``),
so a peer without the key cannot make a server hold gigabytes before the signature is
checked; the header's size is checked before the signature too. Malformed input raises
`WireError` (a ValueError); servers answer it with an error reply and keep serving.
"""

import collections
import functools
import hashlib
import hmac
import math
import os
import threading
import time

import msgpack
import numpy as np

from nbdist import errors
from nbdist.runtime.net import security, shm

PROTOCOL_VERSION = 3  # 3: a shared-memory handle names its reader slot; 2: signature and header in one frame
MAX_HEADER_BYTES = 64 * 2**20
MAX_FRAMES = 65536
MAX_TENSOR_BYTES = 4 * 2**30
# The largest frame a message may have: a tensor frame, or the first one (signature and header).
MAX_FRAME_BYTES = max(2**20, int(os.environ.get("NBDIST_MAX_FRAME_BYTES", str(64 * 2**20))))
MAX_HEAD_FRAME_BYTES = 1 + 255 + MAX_HEADER_BYTES
KEY_ENV = security.KEY_ENV
_EXT_ARRAY = 1
_EXT_STRINGS = 2
_EXT_TUPLE = 3
_EXT_SHM = 4  # a tensor in a shared-memory segment: [name, nonce, dtype, shape, slot, shared] (net/shm.py)
_EXT_INLINE = 5  # a small array inside the header: [dtype, shape, bytes]
_EXT_CHUNKED = 6  # an array over several frames (larger than MAX_FRAME_BYTES): [first, count, dtype, shape]
# Arrays up to this size travel inside the header: a frame of their own costs more than the
# copy (a step's feeds, gradients and fetches are mostly this small).
INLINE_MAX_BYTES = 1024
_COPY_THRESHOLD = 65536  # smaller frames are copied: cheaper than zero-copy bookkeeping (pyzmq docs)
# A signed request older than this is refused (so a receiver need remember each sender's last
# stamp only this long); also the clock difference tolerated between hosts.
REPLAY_WINDOW_S = float(os.environ.get("NBDIST_REPLAY_WINDOW_S", "300"))
CLOCK_SKEW_S = float(os.environ.get("NBDIST_CLOCK_SKEW_S", "2"))
MAX_SENDERS = 65536  # sender epochs a guard remembers at once (the oldest beyond the window go first)
# Signed requests that need no receiver (``"to"``): they read or name, never change anything.
UNADDRESSED = frozenset({"Ping", "Status", "Hello"})
MISADDRESSED = "message refused: it is addressed to"  # how a guard's refusal of another's request starts


class WireError(ValueError):
    """A message that cannot be accepted: bad signature, version, framing or encoding."""

    def __init__(self, message, code="INVALID_ARGUMENT", request_id=0):
        super().__init__(message)
        self.code = code
        self.request_id = request_id


def default_key():
    """The cluster key: ``$NBDIST_CLUSTER_KEY`` (hex), else the file ``$NBDIST_CLUSTER_KEY_FILE``
    names (`nbdist.runtime.net.security`); None when neither is set."""
    return security.signing_key()


def new_key():
    return os.urandom(32)


def _sign(key, frames):
    if key is None:
        return b""
    if len(frames) == 1:  # one call into OpenSSL
        return hmac.digest(key, frames[0], "sha256")
    mac = hmac.new(key, digestmod=hashlib.sha256)
    for f in frames:
        mac.update(f)
    return mac.digest()


class SenderStamp:
    """The stamps of one ordered stream of requests (a channel): a random epoch and a counter."""

    __slots__ = ("epoch", "_seq", "_lock")

    def __init__(self):
        self.epoch = int.from_bytes(os.urandom(8), "big") >> 1  # msgpack-friendly (< 2**63)
        self._seq = 0
        self._lock = threading.Lock()

    def next(self):
        with self._lock:
            self._seq += 1
            return [self.epoch, self._seq, int(time.time() * 1000)]


class ReplayGuard:
    """Refuses signed requests replayed from the past (see the module docstring).

    Args:
        started_s: when the receiver started (`time.time()`); requests stamped before it
            (less the tolerated clock skew) are replays of messages to an earlier incarnation.
        names: what the receiver answers to in a request's ``"to"`` (its task, spelled as
            clusters spell it, and its incarnation); None: ``"to"`` is not checked.
    """

    def __init__(self, started_s=None, names=None):
        self.started_s = time.time() if started_s is None else started_s
        self.names = None if names is None else frozenset(names)
        self._last = collections.OrderedDict()  # epoch -> (last seq, last sent_ms), oldest first
        self._lock = threading.Lock()
        self.refused = 0

    def check(self, stamp, request_id=0, to=None, msg_type=None):
        """Accepts `stamp` (the header's ``"s"``) of a request to `to` (its ``"to"``) or raises
        `WireError` (UNAUTHENTICATED)."""
        if self.names is not None and msg_type not in UNADDRESSED and to not in self.names:
            with self._lock:
                self.refused += 1
            raise WireError(
                f"{MISADDRESSED} {to!r}, but this is "
                f"{' / '.join(sorted(self.names))}: a request recorded on its way to another task is "
                "not accepted here (or the sender's cluster spec names another task at this address)",
                "UNAUTHENTICATED",
                request_id,
            )
        if not (isinstance(stamp, list) and len(stamp) == 3 and all(isinstance(x, int) for x in stamp)):
            self._refuse("a signed request without a valid sender stamp (nbdist too old?)", request_id)
        epoch, seq, sent_ms = stamp
        now = time.time()
        sent_s = sent_ms / 1000
        if sent_s < now - REPLAY_WINDOW_S:
            self._refuse(
                f"a request sent {now - sent_s:.0f} s ago (more than $NBDIST_REPLAY_WINDOW_S="
                f"{REPLAY_WINDOW_S:.0f} s): replayed, or the sender's clock is wrong",
                request_id,
            )
        if sent_s < self.started_s - CLOCK_SKEW_S:
            self._refuse("a request sent before this server started: a replay", request_id)
        with self._lock:
            last = self._last.get(epoch)
            if last is not None and seq <= last[0]:
                self.refused += 1
                raise WireError(
                    f"replayed message refused: sender {epoch:x} already sent #{seq} (last #{last[0]})",
                    "UNAUTHENTICATED",
                    request_id,
                )
            self._last[epoch] = (seq, sent_ms)
            self._last.move_to_end(epoch)
            while len(self._last) > MAX_SENDERS:  # forget the senders silent the longest...
                oldest, (_, oldest_ms) = next(iter(self._last.items()))
                if oldest_ms / 1000 >= now - REPLAY_WINDOW_S:
                    break  # ...but never one whose messages could still be replayed in time
                del self._last[oldest]

    def _refuse(self, what, request_id):
        with self._lock:
            self.refused += 1
        raise WireError(f"replayed message refused: {what}", "UNAUTHENTICATED", request_id)


class Frames(list):
    """An encoded message; `segments` are the shared-memory handles it carries."""

    segments = ()


def discard(frames):
    """Frees the shared-memory segments of encoded `frames` that will never be sent."""
    for name, nonce, slot in frames.segments:
        shm.pool().release(name, nonce, slot)


_packers = threading.local()


def _packers_of_this_thread():
    """This thread's two msgpack Packers: ``(header, plain)``.

    Made once per thread: ``msgpack.packb`` builds a Packer, and with it a 1 MiB buffer, on
    every call (docs/benchmarks.md, "Headers": about twice the cost of a reused Packer).
    The header packer's `default` hands each extension to the encoding in progress.
    """
    pair = getattr(_packers, "pair", None)
    if pair is None:
        header = msgpack.Packer(default=_extension, use_bin_type=True, strict_types=True, autoreset=True)
        pair = _packers.pair = (header, msgpack.Packer(use_bin_type=True, autoreset=True))
    return pair


def _extension(obj):
    return _packers.current.default(obj)


def _packb(obj):
    """``msgpack.packb(obj)`` with this thread's plain Packer (for an extension's payload)."""
    return _packers_of_this_thread()[1].pack(obj)


class _Packer:
    """Turns the arrays, numpy scalars and tuples of a body into msgpack extensions.

    (A class, not a closure calling itself: that would be a reference cycle keeping the
    sent arrays - and shared-memory segments - alive until the next garbage collection.)
    """

    def __init__(self, use_shm, share=False):
        self.use_shm = use_shm
        self.share = share  # unchanging arrays may share a segment (read-only at the receiver)
        self.buffers = []  # arrays sent as raw frames
        self.segments = []  # (name, nonce, reader slot) of the arrays sent through shared memory

    def default(self, obj):
        if isinstance(obj, np.ndarray):
            if obj.dtype == object or obj.dtype.kind in "SU":
                flat = [x if isinstance(x, bytes) else str(x).encode() for x in obj.ravel().tolist()]
                return msgpack.ExtType(_EXT_STRINGS, _packb([list(obj.shape), flat]))
            arr = obj if obj.flags.c_contiguous else np.ascontiguousarray(obj).reshape(obj.shape)
            if self.use_shm and arr.nbytes >= shm.SHM_MIN_BYTES and shm.enabled():
                # (a variable's stored value is read-only and owns its memory: it never changes)
                unchanging = self.share and not arr.flags.writeable and arr.flags.owndata
                handle = shm.pool().put(arr, unchanging)
                if handle is not None:
                    self.segments.append((handle[0], handle[1], handle[4]))
                    return msgpack.ExtType(_EXT_SHM, _packb(handle))
            if arr.nbytes <= INLINE_MAX_BYTES:
                return msgpack.ExtType(_EXT_INLINE, _packb([arr.dtype.str, list(arr.shape), arr.tobytes()]))
            if arr.nbytes > MAX_FRAME_BYTES:
                return self._chunked(arr)
            self.buffers.append(arr)
            meta = [len(self.buffers) - 1, arr.dtype.str, list(arr.shape)]
            return msgpack.ExtType(_EXT_ARRAY, _packb(meta))
        if isinstance(obj, np.generic):
            return self.default(np.asarray(obj))
        if isinstance(obj, tuple):
            return msgpack.ExtType(_EXT_TUPLE, msgpack.packb(list(obj), default=self.default))
        if isinstance(obj, int):  # an int subclass (a shape's KnownDim, an IntEnum): its int
            return int(obj)
        raise TypeError(f"cannot send a {type(obj).__name__} over the wire: {obj!r}")

    def _chunked(self, arr):
        """`arr` as consecutive frames of at most `MAX_FRAME_BYTES` (views, no copy)."""
        flat = memoryview(arr.reshape(-1)).cast("B")
        first = len(self.buffers)
        self.buffers += [flat[i : i + MAX_FRAME_BYTES] for i in range(0, flat.nbytes, MAX_FRAME_BYTES)]
        meta = [first, len(self.buffers) - first, arr.dtype.str, list(arr.shape)]
        return msgpack.ExtType(_EXT_CHUNKED, _packb(meta))


def encode(msg_type, request_id, body, key=None, stamp=None, local=False, to=None):
    """Frames for one message: ``[signature, header, *tensor_buffers]``.

    Args:
        msg_type: e.g. ``"RunGraph"``; request_id: int matching reply to request.
        body: a dict of plain data; numpy arrays may appear at any depth.
        key: the cluster key (bytes) to sign with, or None.
        stamp: the `SenderStamp` of the sending channel: a signed request carries its next
            stamp (replies, matched to their request by id, need none).
        local: both ends are loopback addresses: tensors of at least `shm.SHM_MIN_BYTES`
            travel in shared memory (`nbdist.runtime.net.shm`), only their handles in the header.
        to: the receiver a signed request is addressed to (see the module docstring).
    """
    # (asks `shm.enabled` only for a large tensor: not per message). A step's tensors pushed to
    # another task (`SendTensor`) go to kernels, which never write their inputs: there, one
    # segment may serve every receiver of an unchanging array, as a read-only view.
    packer = _Packer(local, share=msg_type == "SendTensor")
    header = {"v": PROTOCOL_VERSION, "type": msg_type, "id": request_id, **body}
    if key is not None and stamp is not None:
        header["s"] = stamp.next()
        if to is not None:
            header["to"] = to
    header_packer = _packers_of_this_thread()[0]
    outer = getattr(_packers, "current", None)  # (a tuple's items are packed by a nested packb)
    _packers.current = packer
    try:
        head = header_packer.pack(header)
    except BaseException:
        for name, nonce, slot in packer.segments:
            shm.pool().release(name, nonce, slot)
        raise
    finally:
        _packers.current = outer
    buffers, segments = packer.buffers, packer.segments
    tensors = [
        (b if isinstance(b, memoryview) else memoryview(b).cast("B")) if b.nbytes else b"" for b in buffers
    ]
    out = Frames([join_head(_sign(key, [head, *tensors]), head), *tensors])
    if segments:
        out.segments = segments
    return out


def join_head(signature, header):
    """A message's first frame: the signature's length (one byte), the signature, the header."""
    return bytes((len(signature),)) + signature + header


def split_head(frame):
    """``(signature, header)`` of a message's first frame (bytes-like), as views.

    Raises:
        WireError: the frame is shorter than the signature length it declares.
    """
    view = memoryview(frame)
    if view.nbytes == 0 or view.nbytes < 1 + view[0]:
        raise WireError(
            "a message's first frame must hold a signature length, the signature and a header "
            "(a peer running another nbdist version? run the same version on every task)"
        )
    n = view[0]
    return view[1 : 1 + n], view[1 + n :]


def decode(frames, key=None, guard=None, peer=""):
    """The message of `frames` as a dict (``type``, ``id`` and body), arrays rebuilt in place.

    `frames` are bytes or `zmq.Frame`s (received with ``copy=False``: arrays then view
    the frame's memory, no copy): ``[head, *tensor_frames]`` (see the module docstring).

    Args:
        frames: the message.
        key: the cluster key its signature must verify with (None: unsigned cluster).
        guard: a `ReplayGuard` (a server's requests): with a key, the message's sender
            stamp must be new to it.
        peer: who sent it (``/job:ps/task:0 at host:port``), named in errors.

    Raises:
        WireError: unsigned or badly signed (when `key` is set), replayed (with `guard`),
            wrong version, too many/too large frames, undecodable header, or a shared-memory
            handle that cannot be attached.
    """
    try:
        return _decode(frames, key, guard)
    except WireError as e:
        if peer:
            e.args = (f"{e} (from {peer})",)
        raise


def _decode(frames, key, guard):
    if not frames:
        raise WireError("a message needs at least 1 frame (signature and header), got 0")
    if len(frames) > MAX_FRAMES + 1:
        raise WireError(f"too many frames: {len(frames)} > {MAX_FRAMES}")
    buffers = [f.buffer if hasattr(f, "buffer") else memoryview(f) for f in frames]
    signature, head = split_head(buffers[0])
    tensors = buffers[1:]
    # Bounds first: what a peer without the key sent must not cost a pass of SHA-256 over it.
    if head.nbytes > MAX_HEADER_BYTES:
        raise WireError(f"header of {head.nbytes} bytes exceeds the {MAX_HEADER_BYTES}-byte bound")
    for i, t in enumerate(tensors):
        if t.nbytes > MAX_FRAME_BYTES:
            raise WireError(f"tensor frame {i} of {t.nbytes} bytes exceeds the {MAX_FRAME_BYTES}-byte bound")
    if key is not None:
        if not signature:
            raise WireError(
                "unsigned message refused: this cluster requires signed messages "
                f"(set ${security.KEY_FILE_ENV} to the cluster's key file, or ${KEY_ENV} to the key)",
                "UNAUTHENTICATED",
                _request_id_of(head),
            )
        if not hmac.compare_digest(bytes(signature), _sign(key, [head, *tensors])):
            raise WireError(
                "bad message signature: the sender does not hold this cluster's key",
                "UNAUTHENTICATED",
                _request_id_of(head),
            )
    unpacker = _Unpacker(tensors)
    try:
        msg = msgpack.unpackb(head, ext_hook=unpacker.ext_hook, raw=False, strict_map_key=False)
    except WireError:
        raise
    except Exception as e:  # noqa: BLE001 - msgpack raises many types on garbage; all mean "malformed"
        raise WireError(f"undecodable message header: {type(e).__name__}: {e}") from None
    if not isinstance(msg, dict) or "type" not in msg:
        raise WireError("message header must be a map with a 'type'")
    if msg.get("v") != PROTOCOL_VERSION:
        raise WireError(
            f"protocol version {msg.get('v')!r} is not supported (this side speaks "
            f"{PROTOCOL_VERSION}); run the same nbdist version on every task",
            request_id=msg.get("id", 0),
        )
    if len(unpacker.used) != len(tensors):
        raise WireError(f"{len(tensors) - len(unpacker.used)} tensor frames are not referenced by the header")
    if guard is not None and key is not None:
        request_id = msg.get("id", 0) if isinstance(msg.get("id"), int) else 0
        guard.check(msg.get("s"), request_id, msg.get("to"), msg["type"])
    return msg


class _Unpacker:
    """Rebuilds the msgpack extensions of a header: arrays over their frames, shared-memory
    handles, string tensors, tuples (a class for the same reason as `_Packer`)."""

    def __init__(self, tensors):
        self.tensors = tensors
        self.used = set()  # indices of the frames referenced so far

    def ext_hook(self, code, data):
        if code == _EXT_ARRAY:
            index, dtype, shape = msgpack.unpackb(data)
            return _array_from(self.tensors, index, dtype, shape, self.used)
        if code == _EXT_STRINGS:
            shape, flat = msgpack.unpackb(data)
            arr = np.empty(len(flat), dtype=object)
            arr[:] = flat
            return arr.reshape(tuple(shape))
        if code == _EXT_INLINE:
            return _inline_array(msgpack.unpackb(data))
        if code == _EXT_CHUNKED:
            return _chunked_array(self.tensors, msgpack.unpackb(data), self.used)
        if code == _EXT_SHM:
            return _shm_array(msgpack.unpackb(data))
        if code == _EXT_TUPLE:
            return tuple(msgpack.unpackb(data, ext_hook=self.ext_hook, raw=False, strict_map_key=False))
        raise WireError(f"unknown msgpack extension type {code}")


def _request_id_of(head):
    """The request id of a refused message, so its sender can match the error reply.

    Safe on unverified input: msgpack yields plain data (extensions stay opaque) and the
    header size is bounded; only an int ``id`` is taken from it.
    """
    if head.nbytes > MAX_HEADER_BYTES:
        return 0
    try:
        msg = msgpack.unpackb(head, raw=False, strict_map_key=False)
    except Exception:  # noqa: BLE001 - garbage: no id to answer to
        return 0
    request_id = msg.get("id") if isinstance(msg, dict) else None
    return request_id if isinstance(request_id, int) else 0


@functools.lru_cache(maxsize=64)
def _numeric_dtype(dtype):
    """The numpy dtype named by a header (cached: a hot path), numeric types only."""
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise WireError(f"bad tensor dtype {dtype!r}") from None
    if dt.kind not in "biufc" or dt.hasobject:
        raise WireError(f"tensor dtype {dtype!r} is not numeric")
    return dt


def _array_from(tensors, index, dtype, shape, used):
    if not isinstance(index, int) or not 0 <= index < len(tensors) or index in used:
        raise WireError(f"tensor reference {index!r} does not name an unused frame")
    if not isinstance(dtype, str):
        raise WireError(f"bad tensor dtype {dtype!r}")
    dt = _numeric_dtype(dtype)
    if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
        raise WireError(f"bad tensor shape {shape!r}")
    buf = tensors[index]
    expected = math.prod(shape) * dt.itemsize
    if expected != buf.nbytes or expected > MAX_TENSOR_BYTES:
        raise WireError(
            f"tensor frame {index} has {buf.nbytes} bytes, header says {expected} ({dtype}{shape})"
        )
    used.add(index)
    return np.frombuffer(buf, dtype=dt).reshape(tuple(shape))


def _chunked_array(tensors, meta, used):
    """One array from the consecutive frames `_Packer._chunked` made of it (one copy: joined)."""
    if not (isinstance(meta, list) and len(meta) == 4):
        raise WireError(f"bad chunked tensor {meta!r:.100}")
    first, count, dtype, shape = meta
    if not (isinstance(first, int) and isinstance(count, int) and count >= 1 and isinstance(dtype, str)):
        raise WireError(f"bad chunked tensor {meta!r:.100}")
    indices = range(first, first + count)
    if first < 0 or first + count > len(tensors) or any(i in used for i in indices):
        raise WireError(f"chunked tensor frames {first}..{first + count - 1} do not name unused frames")
    dt = _numeric_dtype(dtype)
    if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
        raise WireError(f"bad tensor shape {shape!r}")
    expected = math.prod(shape) * dt.itemsize
    got = sum(tensors[i].nbytes for i in indices)
    if expected != got or expected > MAX_TENSOR_BYTES:
        raise WireError(f"chunked tensor frames hold {got} bytes, header says {expected} ({dtype}{shape})")
    out = np.empty(expected, dtype=np.uint8)
    pos = 0
    for i in indices:
        n = tensors[i].nbytes
        out[pos : pos + n] = np.frombuffer(tensors[i], dtype=np.uint8)
        pos += n
        used.add(i)
    return out.view(dt).reshape(tuple(shape))


def _inline_array(meta):
    if not (isinstance(meta, list) and len(meta) == 3):
        raise WireError(f"bad inline tensor {meta!r:.100}")
    dtype, shape, data = meta
    if not isinstance(dtype, str) or not isinstance(data, bytes):
        raise WireError(f"bad inline tensor dtype {dtype!r}")
    dt = _numeric_dtype(dtype)
    if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
        raise WireError(f"bad tensor shape {shape!r}")
    if math.prod(shape) * dt.itemsize != len(data):
        raise WireError(f"inline tensor has {len(data)} bytes, its header says {dtype}{shape}")
    return np.frombuffer(bytearray(data), dtype=dt).reshape(tuple(shape))  # writable, as a frame's


def _shm_array(handle):
    if not (isinstance(handle, list) and len(handle) == 6):
        raise WireError(f"bad shared-memory handle {handle!r}")
    name, nonce, dtype, shape, slot, shared = handle
    if not (
        isinstance(name, str)
        and isinstance(nonce, int)
        and isinstance(dtype, str)
        and isinstance(slot, int)
        and isinstance(shared, bool)
    ):
        raise WireError(f"bad shared-memory handle {handle!r}")
    dt = _numeric_dtype(dtype)
    if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
        raise WireError(f"bad tensor shape {shape!r}")
    if math.prod(shape) * dt.itemsize > MAX_TENSOR_BYTES:
        raise WireError(f"shared-memory tensor {dtype}{shape} exceeds the {MAX_TENSOR_BYTES}-byte bound")
    try:
        return shm.attach(name, nonce, dt, tuple(shape), slot, shared)
    except shm.ShmError as e:
        raise WireError(str(e)) from None


def error_body(exc, task=""):
    """The body of an ``Error`` reply for an exception (OpError or WireError or other)."""
    if isinstance(exc, errors.OpError):
        code, message, node = exc.error_code, exc.message, exc.node_def
        node = node if isinstance(node, str) else getattr(node, "name", "")
    elif isinstance(exc, WireError):
        code = errors.UNAUTHENTICATED if exc.code == "UNAUTHENTICATED" else errors.INVALID_ARGUMENT
        message, node = str(exc), ""
    else:
        code, message, node = errors.INTERNAL, f"{type(exc).__name__}: {exc}", ""
    tb = getattr(exc, "remote_traceback", None) or ""
    return {"code": int(code), "message": message, "node": node or "", "task": task, "traceback": tb}


def raise_error(body):
    """Re-raises an ``Error`` reply as its TF class, prefixed by the remote task."""
    cls = errors.exception_type_from_error_code(body.get("code", errors.UNKNOWN))
    message = body.get("message", "")
    task = body.get("task", "")
    if task and not message.startswith("["):
        message = f"[{task}] {message}"
    raise cls(body.get("node") or None, None, message, body.get("traceback") or None)


def send_frames(socket, frames, prefix=(), flags=0):
    """Sends `frames` (after `prefix`, e.g. a ROUTER identity), large ones zero-copy.

    `flags` are added to every part (e.g. ``zmq.DONTWAIT``)."""
    parts = [*prefix, *frames]
    flags = int(flags)  # plain ints: or-ing pyzmq's Flag enums costs microseconds a part
    more = flags | 2  # zmq.SNDMORE
    last = len(parts) - 1
    for i, part in enumerate(parts):
        nbytes = part.nbytes if isinstance(part, memoryview) else len(part)
        socket.send(part, flags if i == last else more, copy=nbytes < _COPY_THRESHOLD)
