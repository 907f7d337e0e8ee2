"""A cluster's secrets: the signing key and the CURVE keypair, read from private files.

Two independent protections, each configured per process by an environment variable (the
server's ``--key-file`` / ``--curve-key-file`` set the same variables):

- **Signing** (`nbdist.runtime.net.wire`): HMAC-SHA256 over every message with the cluster key.
  ``$NBDIST_CLUSTER_KEY`` holds it as hex, or ``$NBDIST_CLUSTER_KEY_FILE`` names a file
  holding it (hex, mode 0600). A file keeps the secret off command lines, which every user
  of the machine can read in ``/proc/*/cmdline``.
- **Encryption**: ``$NBDIST_CURVE_KEY_FILE`` names the cluster's CURVE keypair (a ZeroMQ
  certificate with its secret key, mode 0600). Every server socket is then a CURVE server
  whose only accepted client key is the cluster's public key (checked by a ZAP handler in
  this process), and every channel a CURVE client: traffic between hosts is encrypted, and
  a peer without the keypair cannot even complete the handshake.

Every member of the cluster holds the same files (`nbdist keys new DIR` makes them). A key
file that group or others can read is refused, as ssh refuses such a private key.
"""

import functools
import os
import stat
import threading
from pathlib import Path
from typing import NamedTuple

import zmq
import zmq.utils.z85

KEY_ENV = "NBDIST_CLUSTER_KEY"
KEY_FILE_ENV = "NBDIST_CLUSTER_KEY_FILE"
CURVE_KEY_FILE_ENV = "NBDIST_CURVE_KEY_FILE"
SIGNING_KEY_NAME = "cluster.key"  # the files `nbdist keys new DIR` writes
CURVE_KEY_NAME = "curve.key_secret"


class KeyFileError(ValueError):
    """A key file that cannot be used: missing, unreadable, open to others, or malformed."""


def read_private_file(path, what):
    """The bytes of `path`, which must be a regular file no one but its owner can access.

    Raises:
        KeyFileError: it is missing or unreadable, not a regular file, or has any group/other
            permission bit (with the ``chmod 600`` that fixes it).
    """
    path = os.path.expanduser(str(path))
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise KeyFileError(f"{what} {path!r} is not a regular file")
            if st.st_mode & 0o077:
                raise KeyFileError(
                    f"{what} {path!r} is accessible by group or others (mode "
                    f"{stat.S_IMODE(st.st_mode):04o}): a cluster secret must be private to its "
                    f"owner; run `chmod 600 {path}`"
                )
            return f.read()
    except OSError as e:
        raise KeyFileError(f"cannot read {what} {path!r}: {e.strerror}") from None


def signing_key():
    """The cluster key: ``$NBDIST_CLUSTER_KEY`` (hex), else ``$NBDIST_CLUSTER_KEY_FILE``'s; None
    when neither is set (messages are then unsigned).

    Raises:
        ValueError: the variable is not hex, or the file cannot be used (`KeyFileError`).
    """
    text = os.environ.get(KEY_ENV)
    if text:
        try:
            return bytes.fromhex(text)
        except ValueError:
            raise ValueError(
                f"${KEY_ENV} must be a hex string, got {len(text)} chars that are not hex"
            ) from None
    path = os.environ.get(KEY_FILE_ENV)
    if not path:
        return None
    return _signing_key_from_file(path, _file_stamp(path))


def _file_stamp(path):
    """What makes a cached read of `path` stale: its identity and modification time."""
    try:
        st = os.stat(os.path.expanduser(path))
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_mode


@functools.lru_cache(maxsize=8)
def _signing_key_from_file(path, _stamp):
    data = read_private_file(path, f"cluster key file (${KEY_FILE_ENV})").strip()
    try:
        key = bytes.fromhex(data.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        raise KeyFileError(
            f"cluster key file {path!r} must hold the key as hex (as `nbdist keys new` writes it)"
        ) from None
    if len(key) < 16:
        raise KeyFileError(f"cluster key file {path!r} holds {len(key)} bytes; use at least 16 (32 is usual)")
    return key


class CurveKeys(NamedTuple):
    """The cluster's CURVE keypair (Z85 text, as ZeroMQ takes it) and the file it came from."""

    public: bytes
    secret: bytes
    path: str


def curve_keys():
    """The CURVE keypair named by ``$NBDIST_CURVE_KEY_FILE``, or None (no encryption).

    Raises:
        KeyFileError: the file cannot be used, or ZeroMQ was built without CURVE.
    """
    path = os.environ.get(CURVE_KEY_FILE_ENV)
    if not path:
        return None
    return _curve_keys_from_file(path, _file_stamp(path))


@functools.lru_cache(maxsize=8)
def _curve_keys_from_file(path, _stamp):
    if not zmq.has("curve"):
        raise KeyFileError(
            f"${CURVE_KEY_FILE_ENV} is set but this ZeroMQ (libzmq {zmq.zmq_version()}) has no CURVE "
            "support: install a pyzmq built with libsodium, or unset it"
        )
    fields = {}
    for line in read_private_file(path, f"CURVE key file (${CURVE_KEY_FILE_ENV})").splitlines():
        name, sep, value = line.strip().partition(b"=")
        if sep:
            fields[name.strip()] = value.strip(b" \t'\"")
    public, secret = fields.get(b"public-key"), fields.get(b"secret-key")
    if not public or not secret or len(public) != 40 or len(secret) != 40:
        raise KeyFileError(
            f"CURVE key file {path!r} must hold a 40-character public-key and secret-key "
            "(a ZeroMQ certificate with its secret, as `nbdist keys new` writes it)"
        )
    if zmq.curve_public(secret) != public:
        raise KeyFileError(f"CURVE key file {path!r}: its public-key does not belong to its secret-key")
    return CurveKeys(public, secret, os.path.abspath(os.path.expanduser(path)))


# -- sockets ---------------------------------------------------------------------------------------
def secure_server(socket):
    """Makes a server socket a CURVE server when the process has CURVE keys (before it binds).

    Returns the keys used, or None (plain ZeroMQ)."""
    keys = curve_keys()
    if keys is None:
        return None
    _start_authenticator(socket.context, keys.public)
    socket.curve_secretkey = keys.secret
    socket.curve_publickey = keys.public
    socket.curve_server = True
    return keys


def secure_client(socket):
    """Makes a client socket a CURVE client of the cluster's servers when the process has
    CURVE keys (before it connects). Returns the keys used, or None (plain ZeroMQ)."""
    keys = curve_keys()
    if keys is None:
        return None
    socket.curve_secretkey = keys.secret
    socket.curve_publickey = keys.public
    socket.curve_serverkey = keys.public  # every server of the cluster has the cluster's keypair
    return keys


_ZAP_ENDPOINT = "inproc://zeromq.zap.01"  # where libzmq asks (RFC 27: ZAP)
_zap_lock = threading.Lock()
_zap_handlers = {}  # context -> the set of admitted CURVE public keys (binary, 32 bytes)
_gates = {}  # ZAP domain -> admit(): False refuses the connection (`admission.ConnectionCap`)


def gate(context, domain, admit):
    """Asks ``admit()`` about every connection to a socket of ZAP `domain` (its ``zap_domain``):
    False refuses it. Starts the context's ZAP handler if it has none."""
    _gates[domain] = admit
    _start_authenticator(context, None)


def ungate(domain):
    _gates.pop(domain, None)


def _start_authenticator(context, public_key):
    """Runs one ZAP handler per context (a daemon thread) that admits `public_key` (if given) and
    asks the domain's gate (`gate`) about every connection.

    Without a ZAP handler a CURVE server admits any client that knows its (public) key; with
    it, only holders of the cluster's secret key complete the handshake. Connections without
    CURVE (NULL mechanism: other sockets of this process) are admitted unless a gate refuses.
    """
    with _zap_lock:
        admitted = _zap_handlers.get(context)
        if admitted is None:
            socket = context.socket(zmq.REP)
            socket.setsockopt(zmq.LINGER, 0)
            try:
                socket.bind(_ZAP_ENDPOINT)
            except zmq.ZMQError as e:
                socket.close()
                raise RuntimeError(
                    f"cannot serve CURVE authentication: {_ZAP_ENDPOINT} is taken ({e.strerror}); "
                    "another ZAP handler (zmq.auth) runs in this process"
                ) from None
            admitted = _zap_handlers[context] = set()
            threading.Thread(
                target=_serve_zap, args=(socket, admitted), daemon=True, name="nbdist-zap"
            ).start()
        if public_key is not None:
            admitted.add(zmq.utils.z85.decode(public_key))


def _serve_zap(socket, admitted):
    """Answers ZAP requests forever: ``[version, id, domain, address, identity, mechanism,
    *credentials]`` -> ``[version, id, status, text, user id, metadata]``."""
    while True:
        try:
            frames = socket.recv_multipart()
        except zmq.ZMQError:  # the context is terminating
            return
        version, request_id, domain, mechanism = frames[0], frames[1], frames[2], frames[5]
        credentials = frames[6:]
        admit = _gates.get(domain)
        if admit is not None and not _asked(admit):
            status, text = b"400", b"too many connections"
        elif mechanism == b"NULL" or (mechanism == b"CURVE" and credentials and credentials[0] in admitted):
            status, text = b"200", b"OK"
        else:
            status, text = b"400", b"not a key of this cluster"
        socket.send_multipart([version, request_id, status, text, b"", b""])


def _asked(admit):
    try:
        return admit()
    except Exception:  # noqa: BLE001 - a gate that fails admits (the cap is a bound, not a lock)
        return True


# -- making keys -----------------------------------------------------------------------------------
def write_private_file(path, data):
    """Writes `data` to a new file of mode 0600 (never one that exists: FileExistsError)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def new_cluster_keys(directory):
    """Writes a cluster's secrets into `directory` (made with mode 0700 if missing): the signing
    key (`SIGNING_KEY_NAME`, hex) and the CURVE keypair (`CURVE_KEY_NAME`), each mode 0600.

    Returns ``{"signing": path, "curve": path}``.

    Raises:
        FileExistsError: a key file is already there (keys are never overwritten).
    """
    directory = Path(directory).expanduser()
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    signing, curve = directory / SIGNING_KEY_NAME, directory / CURVE_KEY_NAME
    for path in (signing, curve):
        if path.exists():
            raise FileExistsError(
                f"{path} exists: keys are never overwritten (delete it first, or use another DIR)"
            )
    write_private_file(signing, os.urandom(32).hex().encode() + b"\n")
    paths = {"signing": str(signing)}
    if zmq.has("curve"):
        public, secret = zmq.curve_keypair()
        write_private_file(
            curve,
            b"#   nbdist cluster CURVE keypair: every server and client of the cluster holds it.\n"
            b"#   Keep it secret (mode 0600).\n"
            b"metadata\ncurve\n"
            + b'    public-key = "'
            + public
            + b'"\n'
            + b'    secret-key = "'
            + secret
            + b'"\n',
        )
        paths["curve"] = str(curve)
    return paths
