"""The messages of nbdist's services, one small dataclass per request and reply.

A message's fields are exactly the keys of the header map the wire carries (`body`; the
wire adds ``v``, ``type`` and ``id``), and `from_msg` reads one back from a decoded message:
a field without a default is required, and its absence is a `KeyError`, which the server
answers as a malformed request naming the field. An optional field (``optional=True``) is
left out of the header while it is None. Nothing here touches a socket: the services build
and read these, `nbdist.runtime.net` moves them.

docs/protocol.md's message tables are generated from these classes (``python
docs/gen_protocol.py``; `tests/test_protocol.py` fails when they are stale), so a field's
``shown`` text is what the table says of it.
"""

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

_REQUIRED = dataclasses.MISSING


def field(shown, default=_REQUIRED, optional=False, factory=None):
    """A message field. `shown`: how docs/protocol.md's table names it (``feeds [arrays]``);
    `default` (or a `factory` of it) when the header lacks it; `optional`: left out of the
    header while None."""
    metadata = {"shown": shown, "optional": optional, "factory": factory}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=metadata)
    if default is _REQUIRED and not optional:
        return dataclasses.field(metadata=metadata)
    return dataclasses.field(default=None if default is _REQUIRED else default, metadata=metadata)


class Message:
    """What every message class has: its wire type, its service and its reply class, and (made
    per class by `message`, `_compile`) ``body()``, the header map without ``v``, ``type`` and
    ``id``, and ``from_msg(msg)``, the message in a decoded header map (a `KeyError` names a
    missing required field)."""

    TYPE: ClassVar[str]
    SERVICE: ClassVar[str]  # "master", "worker", "server" or "client" (sent to a client)
    REPLY: ClassVar[Any] = None  # the reply's class; None: one-way, or itself a reply
    NOTE: ClassVar[str] = ""  # said of the body in docs/protocol.md's table
    _wire: ClassVar[tuple] = ()  # (name, required, default, factory, optional) per field (`message`)

    def as_answer(self):
        """A service handler's answer: ``(type, header map)``."""
        return self.TYPE, self.body()


def _compile(cls):
    """`cls.body` and `cls.from_msg` as straight-line code over its fields (what the loops over
    `_wire` did, at a third of the cost: each step encodes and decodes eight messages)."""
    namespace, body, args = {}, [], []
    for i, (name, required, default, factory, optional) in enumerate(cls._wire):
        if not optional:
            body.append(f"{name!r}: self.{name}")
        if required:
            args.append(f"msg[{name!r}]")
        elif factory is not None:
            namespace[f"_f{i}"] = factory
            args.append(f"(msg[{name!r}] if {name!r} in msg else _f{i}())")
        else:
            namespace[f"_d{i}"] = default
            args.append(f"get({name!r}, _d{i})")
    optional = [name for name, *_, is_optional in cls._wire if is_optional]
    source = [
        "def body(self):",
        f"    out = {{{', '.join(body)}}}",
        *[f"    if self.{n} is not None:\n        out[{n!r}] = self.{n}" for n in optional],
        "    return out",
        "def from_msg(cls, msg):",
        "    get = msg.get",
        f"    return cls({', '.join(args)})",
    ]
    exec("\n".join(source), namespace)  # noqa: S102 - our own field names, at import
    cls.body = namespace["body"]
    cls.from_msg = classmethod(namespace["from_msg"])


def message(type_, service, reply=None, note="", listed=True):
    """Class decorator: a slotted dataclass that is the `type_` message of `service` (`listed`:
    in `MESSAGES`, and so in docs/protocol.md's tables)."""

    def make(cls):
        cls = dataclass(slots=True)(cls)
        cls.TYPE, cls.SERVICE, cls.REPLY, cls.NOTE = type_, service, reply, note
        cls._wire = tuple(
            (
                f.name,
                f.default is _REQUIRED and f.default_factory is _REQUIRED,
                None if f.default is _REQUIRED else f.default,
                f.metadata["factory"],
                f.metadata["optional"],
            )
            for f in dataclasses.fields(cls)
        )
        _compile(cls)
        if listed:
            MESSAGES.append(cls)
        return cls

    return make


MESSAGES = []  # every message class, in the order of docs/protocol.md's tables


def shown_fields(cls):
    """docs/protocol.md's words for the body of `cls`: ``handle``, ``[deliver_to]``..."""
    parts = []
    for f in dataclasses.fields(cls):
        text = f"`{f.metadata['shown']}`"
        parts.append(f"[{text}]" if f.metadata["optional"] else text)
    return ", ".join(parts)


# -- the master service ------------------------------------------------------------------------------
@message("CreateSessionResponse", "master")
class CreateSessionResponse(Message):
    handle: str = field("handle")
    cluster: dict = field("cluster")


@message("CreateSession", "master", CreateSessionResponse, note="`config` holds `device_filters`")
class CreateSessionRequest(Message):
    graph_def: dict = field("graph_def")
    config: dict = field("config", default=None)


@message("ExtendSessionResponse", "master")
class ExtendSessionResponse(Message):
    pass


@message(
    "ExtendSession",
    "master",
    ExtendSessionResponse,
    note="`graph_def` holds only the new nodes; `version`: how many nodes the client sent before",
)
class ExtendSessionRequest(Message):
    handle: str = field("handle")
    graph_def: dict = field("graph_def")
    version: int = field("version")


@message("RunStepResponse", "master")
class RunStepResponse(Message):
    fetches: list = field("fetches [arrays or None]")
    meta: dict = field("meta")


@message(
    "RunStep",
    "master",
    RunStepResponse,
    note="with `completes`, the reply may be the worker's `FetchedTensors {..., complete}`",
)
class RunStepRequest(Message):
    handle: str = field("handle")
    fetches: list = field("fetches [names]")
    targets: list = field("targets [op names]")
    feeds: dict = field("feeds {tensor name: array}", factory=dict)
    timeout_s: float = field("timeout_s", default=None)
    trace: bool = field("trace", default=False)
    deliver_to: bytes = field("deliver_to", default=None)
    run_id: int = field("run_id", default=None)
    completes: bool = field("completes", optional=True)


@message("CloseSessionResponse", "master")
class CloseSessionResponse(Message):
    pass


@message("CloseSession", "master", CloseSessionResponse)
class CloseSessionRequest(Message):
    handle: str = field("handle")


@message("ResetResponse", "master")
class ResetResponse(Message):
    pass


@message("Reset", "master", ResetResponse, note="no `containers`: every container")
class ResetRequest(Message):
    containers: list = field("containers", default=None)
    timeout_s: float = field("timeout_s", default=None)


# -- the worker service ------------------------------------------------------------------------------
@message("RegisterGraphResponse", "worker")
class RegisterGraphResponse(Message):
    handle: str = field("handle")


@message("RegisterGraph", "worker", RegisterGraphResponse, note="`graph_def`: one partition")
class RegisterGraphRequest(Message):
    graph_def: dict = field("graph_def")
    feeds: list = field("feeds")
    fetches: list = field("fetches")
    targets: list = field("targets")


@message("RunGraphResponse", "worker")
class RunGraphResponse(Message):
    fetches: list = field("fetches [arrays] or None")
    stats: dict = field("stats", default=None)
    delivered: bool = field("delivered", optional=True)
    completed: bool = field("completed", optional=True)
    tensors: list = field("tensors [[key, tensor], ...]", optional=True)


@message(
    "RunGraph",
    "worker",
    RunGraphResponse,
    note="with `deliver_to`, the fetches may go first to the client as `FetchedTensors`; the "
    "reply's `tensors` are what the partition sent the master's task as it ended (they ride on "
    "the reply instead of a `SendTensor`)",
)
class RunGraphRequest(Message):
    handle: str = field("handle")
    step_id: int = field("step_id")
    timeout_s: float = field("timeout_s", default=None)
    feeds: list = field("feeds [arrays]", factory=list)
    trace: bool = field("trace", default=False)
    session: str = field("session", default="")
    master: str = field("master", default="")
    deliver_to: bytes = field("deliver_to", optional=True)
    run_id: int = field("run_id", optional=True)
    complete: dict = field("complete", optional=True)


@message("DeregisterGraphResponse", "worker")
class DeregisterGraphResponse(Message):
    pass


@message(
    "DeregisterGraph", "worker", DeregisterGraphResponse, note="sent by the master when the session closes"
)
class DeregisterGraphRequest(Message):
    handle: str = field("handle")


@message("AbortStep", "worker")
class AbortStep(Message):
    step_id: int = field("step_id")
    message: str = field("message", default="aborted")


@message(
    "SendTensor",
    "worker",
    note="every tensor a partition's run queued for that task since it last paused",
)
class SendTensor(Message):
    step_id: int = field("step_id")
    tensors: list = field("tensors [[key, tensor], ...]")


@message("CleanupAllResponse", "worker")
class CleanupAllResponse(Message):
    pass


@message(
    "CleanupAll",
    "worker",
    CleanupAllResponse,
    note="no `containers`: every container; `session`: only that closed session's own resources",
)
class CleanupAllRequest(Message):
    containers: list = field("containers", default=None)
    session: str = field("session", default=None)


# -- to a client ---------------------------------------------------------------------------------------
@message(
    "FetchedTensors",
    "client",
    note="a worker to the client named by `deliver_to`; with `complete`, the step's reply",
)
class FetchedTensors(Message):
    run_id: int = field("run_id")
    task: str = field("task")
    fetches: list = field("fetches [arrays]")
    complete: dict = field("complete", optional=True)


# -- the server itself and the per-task Exec service -------------------------------------------------
@message("Pong", "server")
class Pong(Message):
    task: str = field("task")
    pid: int = field("pid")
    incarnation: str = field("incarnation")


@message("Ping", "server", Pong, note="needs no `to`: a client that knows only an address asks first")
class Ping(Message):
    pass


@message("ExecResponse", "exec")
class ExecResponse(Message):
    exec_id: str = field("exec_id")


@message("Exec", "exec", ExecResponse, note="a `%%dtf_worker` cell, run on the task's main thread")
class ExecRequest(Message):
    exec_id: str = field("exec_id")
    code: str = field("code")


@message("ExecPollResponse", "exec")
class ExecPollResponse(Message):
    output: list = field("output [[stream, text], ...]")
    offset: int = field("offset")
    state: str = field("state")
    result: Any = field("result", optional=True)
    error: Any = field("error", optional=True)


@message(
    "ExecPoll", "exec", ExecPollResponse, note="a long poll: waits up to `wait_s` (at most 5 s) for output"
)
class ExecPoll(Message):
    exec_id: str = field("exec_id")
    offset: int = field("offset", default=0)
    wait_s: float = field("wait_s", default=None)


@message("ExecInterruptResponse", "exec")
class ExecInterruptResponse(Message):
    state: str = field("state")


@message("ExecInterrupt", "exec", ExecInterruptResponse, note="a `KeyboardInterrupt` in the running cell")
class ExecInterrupt(Message):
    exec_id: str = field("exec_id")
