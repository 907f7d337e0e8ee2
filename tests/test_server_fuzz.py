"""A bounded, seeded fuzz of a live server: malformed messages never kill it.

Every message gets an answer or is dropped, and afterwards the server still runs a real
step. Mutations: random frames, truncated and bit-flipped valid messages, valid headers
with wrongly typed fields for every request type, and (with a key) forged signatures.
"""

import os

import numpy as np
import pytest
import zmq

import nbdist as tf
from nbdist.runtime import transport, wire
from nbdist.runtime.server import Server
from procs import free_port

N_MESSAGES = 600
ODD_VALUES = [None, -1, 2**64 - 1, "x", b"\xff", [], {}, [1, "a"], {"a": 1}, 1.5, True, "../../etc/passwd"]


def _valid_messages(rng, key, request_types):
    types = sorted([*request_types, "Nope"])
    stamp = wire.SenderStamp()  # signed messages pass the replay guard and reach the handlers
    fields = [
        "handle",
        "graph_def",
        "feeds",
        "fetches",
        "targets",
        "step_id",
        "key",
        "tensor",
        "version",
        "timeout_s",
        "containers",
        "code",
        "exec_id",
        "offset",
        "wait_s",
        "config",
    ]
    for i in range(N_MESSAGES):
        kind = rng.integers(5)
        if kind == 0:  # random frames
            yield [
                bytes(rng.integers(0, 256, rng.integers(0, 64), dtype=np.uint8))
                for _ in range(rng.integers(1, 5))
            ]
            continue
        body = {f: ODD_VALUES[rng.integers(len(ODD_VALUES))] for f in rng.choice(fields, rng.integers(0, 6))}
        if kind == 1:
            body["tensor"] = np.zeros(int(rng.integers(0, 5)), np.float32)
        frames = wire.encode(str(rng.choice(types)), i + 1, body, key, stamp)
        if kind == 4 and rng.random() < 0.5:  # a replay of the message just sent
            yield [bytes(f) if isinstance(f, memoryview) else f for f in frames]
        if kind == 2:  # flip a byte of the header
            head = bytearray(frames[1])
            head[rng.integers(len(head))] ^= 0xFF
            frames[1] = bytes(head)
        elif kind == 3 and len(frames) > 2:  # truncate a tensor frame
            frames[2] = bytes(frames[2])[:-1]
        yield [bytes(f) if isinstance(f, memoryview) else f for f in frames]


@pytest.mark.parametrize("signed", [False, True])
def test_malformed_messages_never_kill_the_server(signed):
    key = wire.new_key() if signed else None
    rng = np.random.default_rng(1234)
    server = Server({"local": [f"localhost:{free_port()}"]}, cluster_key=key)
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    try:
        sock.connect(transport.zmq_endpoint(server.address))
        for frames in _valid_messages(
            rng, key if rng.random() < 0.9 else wire.new_key(), server.request_types()
        ):
            sock.send_multipart(frames)
        # Drain replies (bounded): every reply must itself be a well-formed, signed message.
        replies = 0
        while sock.poll(1000):
            msg = wire.decode(sock.recv_multipart(), key)
            assert msg["type"] in {
                "Error",
                "Pong",
                "StatusResponse",
                "ResetResponse",
                "CleanupAllResponse",
                "CloseSessionResponse",
                "CreateSessionResponse",
                "ExtendSessionResponse",
                "RegisterGraphResponse",
                "RunGraphResponse",
                "RunStepResponse",
                "ExecPollResponse",
            }, msg
            replies += 1
        assert replies > N_MESSAGES // 2
        tf.reset_default_graph()
        c = tf.constant(np.arange(3.0)) * 2.0
        channel = transport.Channel(server.address, "", key)
        try:
            assert channel.call("Ping", {}, timeout_s=5)["type"] == "Pong"
        finally:
            channel.close()
        saved = os.environ.get(wire.KEY_ENV)
        if key is not None:
            os.environ[wire.KEY_ENV] = key.hex()
        try:
            with tf.Session(server.target) as sess:
                np.testing.assert_array_equal(sess.run(c), [0.0, 2.0, 4.0])
        finally:
            if saved is None:
                os.environ.pop(wire.KEY_ENV, None)
            else:
                os.environ[wire.KEY_ENV] = saved
        assert server.status()["malformed_requests"] > 0
    finally:
        sock.close(linger=0)
        server.stop()
