"""`nbdist.runtime.protocol`: one dataclass per message, the header maps they encode to, and
docs/protocol.md's tables generated from them."""

import subprocess
import sys

import numpy as np
import pytest

import nbdist as tf
from nbdist.in_task.exec_service import ExecService
from nbdist.runtime import protocol
from nbdist.runtime.net import transport, wire
from nbdist.runtime.net.serving import Rpc
from nbdist.runtime.server_lib import Server
from procs import REPO, free_port

_REPLIES = {c.REPLY for c in protocol.MESSAGES if c.REPLY is not None}
REQUESTS = [c for c in protocol.MESSAGES if c.SERVICE != "client" and c not in _REPLIES]


def test_the_message_tables_in_docs_protocol_md_are_generated_from_protocol_py():
    result = subprocess.run(
        [sys.executable, "docs/gen_protocol.py", "--check"],
        check=False,
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_request_of_every_service_is_a_message_class():
    server = Server({"local": [f"localhost:{free_port()}"]}, start=False)  # never binds: no stop needed
    answered = {
        "master": set(server.master.rpc_table()),
        "worker": set(server.worker.rpc_table()),
        "server": set(server.rpc_table()) - {"Status"},  # (its reply is the status map itself)
        "exec": set(ExecService(server).rpc_table()),
    }
    defined = {service: {c.TYPE for c in REQUESTS if service == c.SERVICE} for service in answered}
    assert defined == answered
    for cls in REQUESTS:
        assert cls.REPLY is None or cls.REPLY.TYPE in (f"{cls.TYPE}Response", "Pong"), cls


def test_a_run_graph_request_encodes_to_todays_header_map_and_back():
    request = protocol.RunGraphRequest(
        handle="/job:ps/replica:0/task:0/graph:ab12cd34-1",
        step_id=2**40 + 7,
        timeout_s=30.0,
        feeds=[np.arange(6, dtype=np.float32).reshape(2, 3)],
        trace=False,
        session="/job:worker/replica:0/task:0/session:1",
        master="/job:worker/task:0",
    )
    body = request.body()
    assert list(body) == ["handle", "step_id", "timeout_s", "feeds", "trace", "session", "master"]
    key = wire.new_key()
    msg = wire.decode(wire.encode(request.TYPE, 5, body, key), key)
    assert msg["type"] == "RunGraph" and msg["id"] == 5
    back = protocol.RunGraphRequest.from_msg(msg)
    assert back.handle == request.handle and back.step_id == request.step_id and back.master == request.master
    np.testing.assert_array_equal(back.feeds[0], request.feeds[0])
    assert back.deliver_to is None and back.complete is None


def test_optional_fields_are_in_the_header_only_with_a_value():
    plain = protocol.RunGraphResponse(fetches=[1.0], stats=None)
    assert plain.body() == {"fetches": [1.0], "stats": None}
    delivered = protocol.RunGraphResponse(fetches=None, stats=None, delivered=False)
    assert delivered.body() == {"fetches": None, "stats": None, "delivered": False}


@pytest.mark.parametrize("cls", REQUESTS, ids=lambda c: c.TYPE)
def test_a_missing_required_field_is_a_key_error_naming_it(cls):
    required = [name for name, needed, *_ in cls._wire if needed]
    if not required:
        assert cls.from_msg({}) is not None  # every field has a default
        return
    with pytest.raises(KeyError, match=required[0]):
        cls.from_msg({})


def test_defaults_fill_what_an_older_client_leaves_out():
    step = protocol.RunStepRequest.from_msg({"handle": "h", "fetches": ["y:0"], "targets": []})
    assert step.feeds == {} and step.timeout_s is None and step.trace is False and step.completes is None
    other = protocol.RunStepRequest.from_msg({"handle": "h", "fetches": [], "targets": []})
    assert other.feeds is not step.feeds  # each its own


# -- the recipe for a new RPC, as a toy: a message pair, a service's handler, a caller -------------
@protocol.message("EchoResponse", "worker", listed=False)
class EchoResponse(protocol.Message):
    text: str = protocol.field("text")


@protocol.message("Echo", "worker", EchoResponse, listed=False)
class EchoRequest(protocol.Message):
    text: str = protocol.field("text")
    times: int = protocol.field("times", default=1)


class EchoService:
    def rpc_table(self):
        return {"Echo": Rpc(self._rpc_echo, inline=True)}

    def _rpc_echo(self, msg, responder):
        request = EchoRequest.from_msg(msg)
        return EchoResponse(request.text * request.times).as_answer()


def test_a_new_rpc_is_a_message_pair_a_handler_and_a_call():
    server = Server.create_local_server()
    try:
        server.add_service(EchoService())
        channel = transport.channel_to(server.address, "the toy server", wire.default_key())
        request = EchoRequest("ab", times=3)
        reply = EchoResponse.from_msg(channel.call(request.TYPE, request.body(), timeout_s=10.0))
        assert reply.text == "ababab"
        with pytest.raises(tf.errors.InvalidArgumentError, match="Echo request is missing field 'text'"):
            channel.call("Echo", {}, timeout_s=10.0)
    finally:
        server.stop()
