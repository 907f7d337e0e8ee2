"""A bounded, seeded fuzz of a live server: malformed messages never kill it.

Every message gets an answer or is dropped, and afterwards the server still runs a real
step. Mutations: random frames, truncated and bit-flipped valid messages, valid headers
with wrongly typed fields for every request type, and (with a key) forged signatures.
"""

import itertools
import os
import time

import msgpack
import numpy as np
import pytest
import zmq

import nbdist as tf
from nbdist.notebook import event_stream as events
from nbdist.runtime.net import transport, wire
from nbdist.runtime.server_lib import Server
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
        if kind == 2:  # flip a byte of the signature or header
            head = bytearray(frames[0])
            head[rng.integers(len(head))] ^= 0xFF
            frames[0] = bytes(head)
        elif kind == 3 and len(frames) > 1:  # truncate a tensor frame
            frames[1] = bytes(frames[1])[:-1]
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
            # An error, or the reply of a request type the server serves.
            assert msg["type"] in {"Error", "Pong", *(f"{t}Response" for t in server.request_types())}, msg
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


# -- valid-looking signed messages, on every service of a task process (master, worker, Exec) ----------
def _rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))


def _signed_raw(key, head, *tensors):
    """Frames with a valid signature over hand-made header bytes (what no encoder would write)."""
    return [wire.join_head(wire._sign(key, [head, *tensors]), head), *tensors]


def _bad_requests(key, session, graph_handles):
    """``(frames, reply)``: signed, well-framed requests that are wrong inside; `reply` is True
    for an error reply, False for none (one-way requests), ``"any"`` for an answer."""
    stamp = wire.SenderStamp()
    ids = itertools.count(1)

    def msg(msg_type, body):  # signed, stamped and addressed to the task, as a real client's
        return wire.encode(msg_type, next(ids), body, key, stamp, to="/job:local/task:0")

    f32 = np.zeros(3, np.float32)
    bad_feeds = [
        [np.zeros(3, np.float64)],  # wrong dtype
        [np.zeros((2, 2), np.float32)],  # wrong shape
        [np.zeros((0, 10**9), np.float32)],  # a huge declared shape with no bytes
        [],  # missing
        [f32, f32],  # one too many
        ["x"],  # not a tensor
        [np.array([b"a", b"b", b"c"], dtype=object)],  # strings for a float tensor
        "not a list",
    ]
    for handle in graph_handles:
        for feeds in bad_feeds:
            yield msg("RunGraph", {"handle": handle, "step_id": 10**6, "feeds": feeds}), True
    for step_id in (-1, 2**63 - 1, "x", None):
        yield msg("RunGraph", {"handle": "/job:local/replica:0/task:0/graph:999", "step_id": step_id}), True
        yield msg("AbortStep", {"step_id": step_id}), False
        yield msg("SendTensor", {"step_id": step_id, "tensors": [["k;0", f32]]}), False
    yield msg("SendTensor", {"step_id": 1, "key": "k;0", "tensor": f32}), True  # the old form: no list
    yield msg("SendTensor", {"step_id": 1, "tensors": [["k;0"]]}), True
    for feeds in (
        {"x:0": np.zeros(3, np.float64)},
        {"x:0": np.zeros((1, 4), np.float32)},
        {"nope:0": f32},
        [f32],
    ):
        yield msg("RunStep", {"handle": session, "feeds": feeds, "fetches": ["y:0"], "targets": []}), True
    yield msg("RunStep", {"handle": session, "feeds": {}, "fetches": ["nope:0"], "targets": []}), True
    yield (
        msg("RunStep", {"handle": "/job:local/replica:0/task:0/session:999", "fetches": [], "targets": []}),
        True,
    )
    yield msg("ExtendSession", {"handle": session, "graph_def": {"node": []}, "version": 10**6}), True
    yield msg("CreateSession", {"graph_def": {"node": "x"}}), True
    yield msg("CreateSession", {"graph_def": {"node": [{"name": 1, "op": None}]}}), True
    yield msg("CloseSession", {"handle": 12}), "any"  # closing is idempotent: an unknown handle is closed
    yield msg("RegisterGraph", {"graph_def": {"node": "x"}, "feeds": [], "fetches": [], "targets": []}), True
    yield msg("Exec", {"exec_id": "e1", "code": 12}), True
    yield msg("ExecPoll", {"exec_id": "no-such-cell"}), True
    # Huge declared sizes: a tensor reference to 2**40 floats backed by 4 bytes, a msgpack array
    # header declaring 2**32-1 elements, a string declaring 4 GiB.
    head = msgpack.packb(
        {
            "v": wire.PROTOCOL_VERSION,
            "type": "SendTensor",
            "id": next(ids),
            "step_id": 1,
            "key": "k",
            "tensor": None,
        }
    )
    yield (
        _signed_raw(
            key,
            head.replace(b"\xc0", msgpack.packb(msgpack.ExtType(1, msgpack.packb([0, "<f4", [2**40]])))),
            b"\0" * 4,
        ),
        True,
    )
    version = bytes((wire.PROTOCOL_VERSION,))
    yield _signed_raw(key, b"\x83\xa1v" + version + b"\xa4type\xa7RunStep\xa2id\xdd\xff\xff\xff\xff"), True
    yield _signed_raw(key, b"\x81\xa4type\xdb\xff\xff\xff\xff"), True
    for dtype in ("|O", "<U4", "V8", "x"):  # not numeric: never reinterpreted as objects
        ext = msgpack.ExtType(1, msgpack.packb([0, dtype, [1]]))
        head = msgpack.packb(
            {"v": wire.PROTOCOL_VERSION, "type": "SendTensor", "id": next(ids), "tensor": ext}
        )
        yield _signed_raw(key, head, b"\0" * 8), True


@pytest.mark.slow
def test_signed_but_wrong_requests_get_error_replies_and_change_nothing():
    """Right header and signature, wrong contents: each gets an error reply (or, one-way, is
    dropped); the variable is unchanged, the task serves real clients, its RSS stays bounded."""
    cluster = tf.LocalCluster(local=1)  # a task process with the master, worker and Exec services
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    try:
        graph = tf.Graph()
        with graph.as_default(), tf.device("/job:local/task:0"):
            x = tf.placeholder(tf.float32, [3], name="x")
            v = tf.Variable(np.ones(3, np.float32), name="v")
            y = tf.assign_add(v, x, name="y")
        sess = tf.Session(cluster.target("local"), graph=graph)
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(y, {x: np.ones(3, np.float32)}), [2, 2, 2])
        session_handle = sess._backend._handle
        graph_handles = ["/job:local/replica:0/task:0/graph:2"]  # y's partition (1: the initializer)
        pid = cluster.pids[("local", 0)]
        rss_before = _rss_bytes(pid)
        sock.connect(transport.zmq_endpoint(cluster.cluster_spec.task_address("local", 0)))
        tried = 0
        for _ in range(3):
            for frames, expects_reply in _bad_requests(cluster.key, session_handle, graph_handles):
                tried += 1
                sock.send_multipart([bytes(f) for f in frames])
                if not expects_reply:
                    continue
                assert sock.poll(10_000), f"no reply to {frames[1][:80]!r}"
                reply = wire.decode(sock.recv_multipart(), cluster.key)
                assert reply["type"] == "Error" or expects_reply == "any", (frames[1][:200], reply)
                assert reply.get("code") != tf.errors.INTERNAL, reply  # a TF class that says what was wrong
        assert tried > 100
        assert not sock.poll(200)  # one-way requests got no answer
        # Nothing ran: the variable is what the real client left; the task still serves it.
        np.testing.assert_array_equal(sess.run(v), [2, 2, 2])
        np.testing.assert_array_equal(sess.run(y, {x: np.ones(3, np.float32)}), [3, 3, 3])
        sess.close()
        assert _rss_bytes(pid) - rss_before < 64 * 2**20
    finally:
        sock.close(linger=0)
        cluster.stop()


def test_the_event_stream_drops_malformed_events_and_keeps_collecting():
    """The notebook's event port: garbage, unsigned, forged, replayed, and signed non-events
    are dropped (counted); a real task's events still arrive."""
    key = wire.new_key()
    rng = np.random.default_rng(99)
    stream = events.EventStream(key, collect=True)
    push = zmq.Context.instance().socket(zmq.PUSH)
    push.setsockopt(zmq.LINGER, 0)
    push.connect(stream.address)
    stamp = wire.SenderStamp()
    sent = 0
    try:
        for i in range(300):
            kind = i % 6
            if kind == 0:
                frames = [bytes(rng.integers(0, 256, rng.integers(0, 64), dtype=np.uint8)) for _ in range(2)]
            elif kind == 1:
                frames = wire.encode("Event", 0, {"event": {"kind": "metric"}}, None)  # unsigned
            elif kind == 2:
                frames = wire.encode(
                    "Event", 0, {"event": {"kind": "metric"}}, wire.new_key(), stamp
                )  # forged
            elif kind == 3:
                frames = wire.encode("Event", 0, {"event": ODD_VALUES[i % len(ODD_VALUES)]}, key, stamp)
            elif kind == 4:
                frames = wire.encode("Event", 0, {"event": {"kind": "nope", "task": 1}}, key, stamp)
            else:
                frames = wire.encode("Event", 0, {"event": {"kind": "metric", "step": 1}}, key, stamp)
                push.send_multipart([bytes(f) for f in frames])
                sent += 1  # the original is accepted once; this replay of it is not
            push.send_multipart([bytes(f) for f in frames])
            sent += 1
        publisher = events.Publisher(stream.address, "/job:worker/task:0", key)
        try:
            publisher.publish({"kind": "metric", "step": 7, "time": 0.0, "metrics": {"loss": 1.0}})
            deadline = time.monotonic() + 10
            while not [e for e in stream.history("metric") if e.get("step") == 7]:
                assert time.monotonic() < deadline, "a real event did not arrive after the garbage"
                time.sleep(0.02)
        finally:
            publisher.close()
        # (The real event came on another connection: the garbage before it may still be in
        # the collector's queue on a loaded machine. Wait until every message was judged.)
        deadline = time.monotonic() + 10
        while len(stream.history("metric")) - 1 + stream.rejected < sent and time.monotonic() < deadline:
            time.sleep(0.02)
        accepted = [e for e in stream.history("metric") if e.get("step") == 1]
        assert len(accepted) == 50  # each kind-5 event once: its replay was dropped
        assert stream.rejected == sent - 50
        assert stream.collecting
    finally:
        push.close(linger=0)
        stream.close()
