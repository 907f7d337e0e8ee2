"""Same-host connections: loopback addresses talk over ``ipc://`` (Unix sockets).

Measured here (`benchmarks/bench_ipc.py`): a ZeroMQ round trip over ``ipc://`` takes
~0.77x of TCP loopback's time, a 64 MiB message ~0.68x. So a server whose address is a
loopback one (127.0.0.0/8, ::1, ``localhost``) binds, beside ``tcp://ip:port``, a Unix
socket at a path derived from that ip and port and from its network namespace (whose
loopback it is), in a per-user directory of mode 0700;
a channel to a loopback address connects there when a server listens on it, else over
TCP (a server not started yet, or one bound to another interface). The user still sees
``host:port``. Local is decided from the addresses, not "same machine": two network
namespaces share the filesystem but not their loopback.

Both ends being loopback also lets large tensors go through shared memory
(`nbdist.runtime.net.shm`).
"""

import contextlib
import functools
import ipaddress
import os
import random
import socket
import stat
import tempfile

import zmq

# Ports picked for local clusters come from here up to the ephemeral range (see `free_ports`):
# above the ports services commonly use (8888, 6006, 5000...).
LOWEST_PICKED_PORT = 20000


def free_ports(n, host="127.0.0.1"):
    """`n` distinct TCP ports that `host` can bind now, picked outside the ephemeral range.

    A port got by binding port 0 comes from the kernel's ephemeral range, where every outgoing
    connection also takes its local port: between the pick and a server's bind, some
    connection may take it ("Address already in use"; seen in CI). Outside that range only
    another listener can. Falls back to port 0 if no port outside it is free.
    """
    lo, hi = _ephemeral_range()
    pool = [p for p in range(LOWEST_PICKED_PORT, 65536) if not lo <= p <= hi]
    rng = random.SystemRandom()
    held, ports = [], []
    try:
        for _ in range(64 + 8 * n):
            if len(ports) == n or not pool:
                break
            port = rng.choice(pool)
            probe = socket.socket()
            try:
                probe.bind((host, port))
            except OSError:
                probe.close()
                continue
            held.append(probe)  # (held until all are found: no port is picked twice)
            ports.append(port)
        while len(ports) < n:
            probe = socket.socket()
            probe.bind((host, 0))
            held.append(probe)
            ports.append(probe.getsockname()[1])
        return ports
    finally:
        for probe in held:
            probe.close()


def _ephemeral_range():
    """The kernel's ephemeral port range (Linux's default where it cannot be read)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo, hi = (int(x) for x in f.read().split())
        return lo, hi
    except (OSError, ValueError):
        return 32768, 60999


def _ipc_dir():
    return os.path.join(tempfile.gettempdir(), f"nbdist-ipc-{os.geteuid()}")


def resolve(address):
    """``(ip, port)`` of a ``host:port`` address (names resolved now, IPv4 preferred).

    Raises:
        ValueError: it does not resolve (naming the address and why).
    """
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    try:
        infos = socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)
    except (socket.gaierror, ValueError, UnicodeError) as e:
        raise ValueError(f"cannot resolve address {address!r}: {e}") from None
    ip = next((i[4][0] for i in infos if i[0] == socket.AF_INET), infos[0][4][0])
    return ip, int(port)


@functools.lru_cache(maxsize=256)
def _resolved(address):
    """`resolve`, or None; remembered (whether an address is loopback does not change)."""
    try:
        return resolve(address)
    except ValueError:
        return None


def is_loopback(address):
    """True when `address` (``host:port``) is a loopback address of this host."""
    resolved = _resolved(address)
    return resolved is not None and ipaddress.ip_address(resolved[0].split("%")[0]).is_loopback


def _private_dir():
    """The per-user directory of the ipc sockets (mode 0700, owned by this user), or None."""
    directory = _ipc_dir()
    with contextlib.suppress(FileExistsError):
        os.mkdir(directory, 0o700)
    try:
        st = os.lstat(directory)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
        return None  # someone else's, or opened up: do not put sockets there
    return directory


def ipc_path(address, suffix=""):
    """The Unix-socket path of a loopback `address` (for ZeroMQ's ``ipc://``; with a `suffix`,
    another socket of the same server: ``".link"``, `nbdist.runtime.net.links`), or None (not
    loopback, or no private directory here)."""
    if not is_loopback(address) or (not suffix and not zmq.has("ipc")):
        return None
    directory = _private_dir()
    if directory is None:
        return None
    ip, port = _resolved(address)
    return os.path.join(directory, f"{ip.replace(':', '_')}-{port}{_netns()}{suffix}")


@functools.lru_cache(maxsize=1)
def _netns():
    """``-<inode>`` of this process's network namespace ("" where it cannot be read).

    In a socket's name: two namespaces share the filesystem but each has its own loopback,
    so 127.0.0.1:PORT in one and in another are two servers, and must be two sockets."""
    try:
        return f"-{os.stat('/proc/self/ns/net').st_ino}"
    except OSError:
        return ""


def listening(path):
    """True when a server accepts connections at the Unix socket `path` (a socket file left
    by a killed server refuses them)."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
    except OSError:
        return False
    finally:
        probe.close()
    return True


def connect_endpoint(address, tcp_endpoint):
    """``ipc://path`` when a server listens on `address`'s Unix socket, else `tcp_endpoint`."""
    path = ipc_path(address)
    if path is None or not os.path.exists(path) or not listening(path):
        return tcp_endpoint
    return f"ipc://{path}"


def bind_ipc(sock, address):
    """Also binds `sock` on `address`'s Unix socket when it is a loopback address.

    Returns ``(path, inode)`` to pass to `unlink_ipc` when the server stops, or None."""
    for _ in range(2):  # twice: another server may remove the directory as it empties
        path = ipc_path(address)
        if path is None:
            return None
        try:
            sock.bind(f"ipc://{path}")  # replaces a file left by a killed server of this port
            return path, os.stat(path).st_ino
        except (zmq.ZMQError, OSError):
            pass
    return None  # TCP still serves every client


def unlink_ipc(bound):
    """Removes the socket file of `bind_ipc` (unless another server has bound it since), and
    the directory once it is empty."""
    if bound is None:
        return
    path, inode = bound
    with contextlib.suppress(OSError):
        if os.stat(path).st_ino == inode:
            os.unlink(path)
    sweep_stale()


def sweep_stale():
    """Removes the socket files of killed servers (nothing listens there), then the
    directory once it is empty (the last server of this user leaves nothing)."""
    directory = _ipc_dir()
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        path = os.path.join(directory, name)
        with contextlib.suppress(OSError):
            if stat.S_ISSOCK(os.lstat(path).st_mode) and not listening(path):
                os.unlink(path)
    with contextlib.suppress(OSError):
        os.rmdir(directory)
