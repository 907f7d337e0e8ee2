"""Binding a server's ROUTER socket: the address it binds, the errors that say why it could
not (in use, not this host's, does not resolve) and how to fix it, and waiting until a
stopped server's port can be bound again."""

import errno
import socket
import time

import zmq

from nbdist.runtime.net import admission, security, transport, wire
from nbdist.runtime.net.transport import zmq_endpoint


def bound_router(ctx, bind_address, task):
    """The server's ROUTER socket bound at `bind_address` (a CURVE server when the process has
    CURVE keys), the CURVE keys it encrypts with (None: plain ZeroMQ) and the cap on its
    connections (`admission.ConnectionCap`, None without one).

    Raises:
        OSError: the address is in use, or not this host's (naming it and the fix).
    """
    router = ctx.socket(zmq.ROUTER)
    router.setsockopt(zmq.LINGER, 0)
    router.setsockopt(zmq.IPV6, 1)
    # A frame announced larger than any nbdist sends ends the connection before it is read.
    router.setsockopt(zmq.MAXMSGSIZE, max(wire.MAX_FRAME_BYTES, wire.MAX_HEAD_FRAME_BYTES))
    transport.set_heartbeats(router)  # clients that stop answering are dropped
    # Sending to an identity that is not connected raises (instead of a silent drop), so
    # a worker knows whether it could deliver fetched tensors straight to a client.
    router.setsockopt(zmq.ROUTER_MANDATORY, 1)
    cap = None
    try:
        keys = security.secure_server(router)
        cap = admission.cap_connections(router, task)
        router.bind(_bind_endpoint(bind_address, task))
    except zmq.ZMQError as e:
        _close(router, cap)
        raise OSError(e.errno, _bind_error(e, task, bind_address)) from None
    except BaseException:
        _close(router, cap)
        raise
    return router, keys, cap


def _close(router, cap):
    if cap is not None:
        cap.close()
    router.close(linger=0)


def bracketed(host):
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


def wait_port_free(address, timeout_s):
    """Returns once `address` can be bound again (zmq closes sockets asynchronously)."""
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
