"""A client in the same process as a server (a tutorial's worker: its own server, and a
session on ``server.target``) skips the wire to it - TF's ``LocalMaster``.

`in_process_channel` hands the client's requests to the server's serving loop as they are
(`ServingLoop.accept`, posted to its I/O thread), and the handler's reply straight back.
Nothing else changes: the same handlers, inline rules and errors. A loop that stops
abandons the calls it holds (`ServingLoop.hold`), so no caller waits for a stopped server.
"""

import os
import threading
import time

import numpy as np

from nbdist import errors
from nbdist.runtime.net import serving, wire
from nbdist.runtime.net.serving import Responder

IN_PROCESS_ENV = "NBDIST_IN_PROCESS"  # "0": clients reach servers of their own process over the wire too


class _InProcessResponder(Responder):
    """Answers a request of `_InProcessCall`: the reply body goes back as it is."""

    __slots__ = ("_call",)
    in_process = True
    via = "in process"

    def __init__(self, loop, call):
        super().__init__(loop, None, 0)
        self._call = call

    def reply(self, reply_type, body):
        if not self._sent:
            self._sent = True
            self._call.answer(reply_type, body)


class _InProcessCall:
    """One request from a client of this process, until its reply (or the loop's end)."""

    def __init__(self, loop):
        self._loop = loop
        self._done = threading.Event()
        self.reply = None  # (reply_type, body)

    def answer(self, reply_type, body):
        self.reply = (reply_type, _detached(body))
        self._loop.release(self)
        self._done.set()

    def abandon(self, why):
        if not self._done.is_set():
            self.answer("Error", wire.error_body(errors.UnavailableError(None, None, why), self._loop.task))

    def wait(self, timeout_s):
        return self._done.wait(timeout_s)


class InProcessChannel:
    """A `transport.Channel` to a server of this process: same `call`, no wire.

    The request body is handed to the server's loop as a decoded message would be (its
    arrays are the caller's: a step never changes its feeds), and the reply comes back
    with its containers rebuilt and its arrays copied (`_detached`), as the wire would
    have copied them: a fetched value is the caller's own, never a variable's storage.
    """

    def __init__(self, loop, name):
        self._loop = loop
        self.address = loop.address
        self.name = name or loop.address

    def call(self, msg_type, body, timeout_s=None, connect_timeout_s=None, also=None):
        """As `transport.Channel.call`: the reply message, or the error reply raised. (`also`
        is for channels on a link; this one never is, so it is never given.)"""
        loop = self._loop
        call = _InProcessCall(loop)
        loop.hold(call)
        if loop.stopped:
            call.abandon(f"its server at {loop.address} was stopped")
        msg = {**body, "v": wire.PROTOCOL_VERSION, "type": msg_type, "id": 0}
        loop.post(lambda: loop.accept(msg, _InProcessResponder(loop, call)))
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while not call.wait(0.1 if deadline is None else max(0.0, min(0.1, deadline - time.monotonic()))):
            if deadline is not None and time.monotonic() >= deadline:
                loop.release(call)
                raise errors.DeadlineExceededError(
                    None,
                    None,
                    f"timed out after {timeout_s:.1f} s waiting for the reply to {msg_type} from "
                    f"{self.name} at {self.address} (in this process)",
                )
        reply_type, reply = call.reply
        reply.update(type=reply_type, id=0)
        if reply_type == "Error":
            wire.raise_error(reply)
        return reply


def in_process_channel(address, key=None, name=""):
    """An `InProcessChannel` to the server of this process at `address` (the same address
    string the server was started with), else None: a server of another process, one that
    would refuse this client over the wire (another cluster `key`, or CURVE keys the client
    lacks: it gets the wire's error), or ``$NBDIST_IN_PROCESS=0``."""
    loop = serving.serving_loop_at(address)
    if loop is None or not loop.admits_in_process(key) or os.environ.get(IN_PROCESS_ENV) == "0":
        return None
    return InProcessChannel(loop, name)


def _detached(obj):
    """`obj` with its containers rebuilt and its arrays copied: what a client may keep and
    change without touching the server's state (a variable's storage, a constant)."""
    if isinstance(obj, dict):
        return {k: _detached(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_detached(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_detached(v) for v in obj)
    if isinstance(obj, np.ndarray):
        return obj.copy()
    return obj
