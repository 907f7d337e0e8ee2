"""Loopback addresses talk over ipc:// (nbdist.runtime.net.samehost), real server processes."""

import os
import signal
import stat

import pytest

import nbdist as tf
from nbdist.runtime.net import links, samehost, transport
from procs import ServerProcs, cluster_dict


def test_only_loopback_addresses_are_local():
    assert samehost.is_loopback("localhost:1234")
    assert samehost.is_loopback("127.0.0.5:1234")
    assert samehost.is_loopback("[::1]:1234")
    assert not samehost.is_loopback("10.1.2.3:1234")
    assert not samehost.is_loopback("no-such-host.invalid:1234")
    assert samehost.ipc_path("10.1.2.3:1234") is None


@pytest.mark.slow
def test_a_loopback_server_is_reached_over_ipc_and_its_socket_goes_with_it(fresh_graph, monkeypatch):
    procs = ServerProcs(cluster_dict(local=1))
    address = procs.address("local", 0)
    path = samehost.ipc_path(address)
    try:
        directory = os.stat(os.path.dirname(path))
        assert stat.S_IMODE(directory.st_mode) == 0o700 and directory.st_uid == os.geteuid()
        assert samehost.connect_endpoint(address, "tcp://x") == f"ipc://{path}"
        with tf.Session(procs.target("local", 0)) as sess:  # over ipc
            assert sess.run(tf.constant(2.0) * 3.0) == 6.0
        monkeypatch.setenv(links.LINKS_ENV, "0")  # (this channel's messages go over its DEALER)
        channel = transport.Channel(address, "/job:local/task:0")
        try:  # and TCP still serves everyone else
            channel.socket.disconnect(f"ipc://{path}")
            channel.socket.connect(transport.zmq_endpoint(address))
            assert channel.call("Ping", {}, timeout_s=10.0)["type"] == "Pong"
        finally:
            channel.close()
        procs.kill("local", 0, signal.SIGKILL)
        assert os.path.exists(path)  # a killed server cannot clean up...
        assert samehost.connect_endpoint(address, "tcp://x") == "tcp://x"  # ...but it refuses
    finally:
        procs.stop()
    procs = ServerProcs({"local": [address]})  # the same port again: rebinds its socket
    try:
        assert samehost.connect_endpoint(address, "tcp://x") == f"ipc://{path}"
    finally:
        procs.stop()
    assert not os.path.exists(path)  # (the directory too, unless another server uses it)


def test_picked_ports_are_distinct_bindable_and_outside_the_ephemeral_range():
    """An outgoing connection takes its local port from the ephemeral range, so a port picked
    there can be taken before the server binds it (a CI run lost a demo cluster to that)."""
    import socket

    lo, hi = samehost._ephemeral_range()
    ports = samehost.free_ports(20)
    assert len(set(ports)) == 20
    assert all(samehost.LOWEST_PICKED_PORT <= p <= 65535 and not lo <= p <= hi for p in ports)
    for port in ports:
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))
