"""What this process knows of a peer that does not answer: did it exist, is it gone, what answers there?

A peer never reached may simply not have started yet (TF programs start in any order), so a
channel gives it `transport.CONNECT_TIMEOUT_S` or the session's own deadline. A peer known to
have existed whose connection is refused is gone, and is named dead at once, with the
evidence (issue 36 §8):

- its process exited: a task process this process started (`LocalCluster` registers each
  one with `note_process`);
- this process reached it before (`transport`'s own record);
- its server's Unix socket (`samehost.ipc_path`) is still there and refuses connections: a
  server bound it, and nothing listens there any more.

And what answers at an address that accepts connections but completes no ZeroMQ handshake
(`probe_peer`): a stopped process, or something that is not an nbdist server.
"""

import contextlib
import os
import signal
import socket
import threading

from nbdist.runtime.net import samehost

# A probe waits at most this long for each of its two reads (`probe_peer`).
PROBE_WAIT_S = 0.5
# ZMTP's greeting signature (0xFF, 8 bytes of padding, 0x7F): what any ZeroMQ peer, an nbdist
# server included, sends first on a connection without waiting for the other side.
_ZMTP_SIGNATURE = b"\xff" + bytes(7) + b"\x01\x7f"
_lock = threading.Lock()
_processes = {}  # address -> the Popen of the task process this process started there


def note_process(address, proc):
    """Registers `proc` (a `subprocess.Popen`), the task process at `address` that this process
    started (`LocalCluster`), replacing any earlier one there."""
    with _lock:
        _processes[address] = proc


def forget_process(address, proc):
    """Unregisters `proc` (unless another process was registered at `address` since)."""
    with _lock:
        if _processes.get(address) is proc:
            del _processes[address]


def process_exit(address):
    """What became of the task process at `address` that this process started, if it exited:
    ``"its process, pid 4242 (started by this process), exited with code -9 (killed by SIGKILL)"``."""
    with _lock:
        proc = _processes.get(address)
    code = None if proc is None else proc.poll()
    if code is None:
        return None
    how = f"exited with code {code}"
    if code < 0:
        with contextlib.suppress(ValueError):
            how += f" (killed by {signal.Signals(-code).name})"
    return f"its process, pid {proc.pid} (started by this process), {how}"


def leftover_socket(address):
    """The path of `address`'s Unix socket when the file is there but refuses connections (its
    server is gone), else None."""
    path = samehost.ipc_path(address)
    if path is None or not os.path.exists(path) or samehost.listening(path):
        return None
    return path


def probe_peer(address, wait_s=PROBE_WAIT_S):
    """What answers at `address`, found over a plain TCP connection.

    Sends ZMTP's greeting signature and reads what comes back: a ZeroMQ peer sends its own
    signature first. If nothing comes within `wait_s`, ends its side of the connection (a web
    server answers a request only when it has one: it then sends its error) and reads again.

    Returns:
        ``(kind, detail)``: ``("zeromq", None)`` for a ZeroMQ signature; ``("other", "it sent
        b'HTTP/1.0 400 ...'")`` or ``("other", "it closed the connection without a ZeroMQ
        greeting")`` for something else; ``("silent", None)`` when nothing came (a stopped
        process); ``("unreachable", None)`` when the probe could not connect.
    """
    try:
        ip, port = samehost.resolve(address)
        with socket.create_connection((ip, port), timeout=wait_s) as conn:
            conn.sendall(_ZMTP_SIGNATURE)
            data = _read_some(conn, wait_s)
            if data is None:
                conn.shutdown(socket.SHUT_WR)
                data = _read_some(conn, wait_s)
    except (OSError, ValueError):
        return "unreachable", None
    if data is None:
        return "silent", None
    if not data:
        return "other", "it closed the connection without a ZeroMQ greeting"
    if data[:1] == b"\xff" and (len(data) < 10 or data[9:10] == b"\x7f"):
        return "zeromq", None  # (the rest of its greeting may still be on the way)
    shown = data[:40] + (b"..." if len(data) > 40 else b"")
    return "other", f"it sent {shown!r}"


def _read_some(conn, wait_s):
    """Up to 64 bytes from `conn` (``b""``: it closed), or None if none came within `wait_s`."""
    conn.settimeout(wait_s)
    try:
        return conn.recv(64)
    except TimeoutError:
        return None
    except OSError:  # reset by the peer: it closed too
        return b""
