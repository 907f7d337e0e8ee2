"""Where a step's fetched tensors go: every path, in one place.

TF's path, which any step can take: the client's ``RunStep`` -> the master's ``RunGraph`` to
each task -> each ``RunGraphResponse`` carries its task's fetches -> the master's
``RunStepResponse`` carries them all. Two shortcuts beside it, each kept because it pays
(figures in docs/architecture.md, "Fetch delivery"):

- **Direct**: a task whose fetches add up to `DIRECT_FETCH_MIN_BYTES` or more sends them
  straight to the client (``FetchedTensors``) and tells the master only that it did, so a
  large tensor crosses the network once, not twice. Smaller ones ride on the reply (one
  message less).
- **Completion**: a step whose end is one other task's run's end (it runs alone, or every
  other partition only feeds it: `partition.last_to_end`, an in-graph ps applying every
  worker's gradients), for a client that reads that task's link while it waits, is answered
  by that task: ``FetchedTensors`` with the master's reply meta (``complete``); the master
  sends no reply (one message less on the step's path).

Each side has its part here: the client names itself in its ``RunStep`` and takes what
comes (`ClientInbox`), the master says which task may take which shortcut and puts the
reply together (`StepFetches`), and a worker takes the shortcut or falls back to the reply
(`reply_run_graph`). With ``$NBDIST_FETCH_PATHS=relay`` a client asks for neither shortcut
(for A/B measurements of what they win).
"""

import contextlib
import itertools
import os
import threading
import time

import zmq

from nbdist import errors
from nbdist.runtime.net import links, shm, transport, wire
from nbdist.runtime.protocol import FetchedTensors, RunGraphResponse, RunStepResponse

# Fetched tensors at least this large go straight to the client; smaller ones ride on the
# RunGraph reply through the master (one message less per step).
DIRECT_FETCH_MIN_BYTES = 64 * 1024
PATHS_ENV = "NBDIST_FETCH_PATHS"  # "relay": the client asks for no shortcut
_RELAY_ONLY = os.environ.get(PATHS_ENV) == "relay"  # (read once: an A/B sets it per process)
# The workers send fetched tensors before they answer the master, so they are here by the
# time the master's reply is; this only bounds a pathological wait.
DELIVERY_TIMEOUT_S = 30.0


# -- the master: which task may take which shortcut; the reply -------------------------------------
class StepFetches:
    """The fetches of one step, as the master sees them.

    Args:
        request: the client's `RunStepRequest`.
        last_to_end: the task whose run ends the step and holds every fetch, or None.
        master_task: the master's own task (its partition's fetches are always in hand).
        new_partitioning: the step's plan was made for it (its reply carries the placement).
    """

    def __init__(self, request, last_to_end, master_task, new_partitioning):
        self.fetches = request.fetches
        self.client, self.run_id = request.deliver_to, request.run_id
        self.master_task = master_task
        completes = request.completes and self.client and not new_partitioning and not request.trace
        self.completed_by = last_to_end if completes and last_to_end != master_task else None
        self.completed = False  # the completing task answered the client: no reply from here
        self._values = {}  # fetch name -> value (None: delivered straight to the client)
        self._direct = {}  # task -> positions in `fetches` it delivered to the client

    def address(self, run_graph, task, part, meta):
        """Lets `task`'s `RunGraphRequest` take a shortcut: `deliver_to` when it produces
        fetches; `complete` (with the master's reply meta, ``meta()``) when it completes the step."""
        if (self.client and part.fetches and task != self.master_task) or task == self.completed_by:
            run_graph.deliver_to, run_graph.run_id = self.client, self.run_id
        if task == self.completed_by:
            order = [part.fetches.index(f) for f in self.fetches]  # the client's fetches in the part's
            run_graph.complete = {"order": order, "meta": meta()}

    def received(self, task, part, response):
        """`task`'s `RunGraphResponse`: its values, or word that the client has them."""
        if response.delivered:
            self._direct[task] = [self.fetches.index(n) for n in part.fetches]
            self.completed = bool(response.completed)
            values = [None] * len(part.fetches)
        else:
            values = response.fetches
        self._values.update(zip(part.fetches, values, strict=True))

    def reply(self, meta):
        """The `RunStepResponse` (None when the completing task answered the client)."""
        if self.completed:
            return None
        if self._direct:
            meta["direct"] = self._direct
        return RunStepResponse(fetches=[self._values[f] for f in self.fetches], meta=meta)


# -- a worker: the shortcut, or the reply -------------------------------------------------------------
def reply_run_graph(loop, responder, request, task, values, stats, on_completed, carried=None):
    """Answers `request` (a `RunGraphRequest`) with the partition's fetched `values`, and the
    tensors its end sent the master's task (`carried`, ``[[key, tensor], ...]``, or None).

    Large fetches go straight to the client that asked for them (``deliver_to``); a completing
    run (``complete``) answers the client on its link, whatever its size. The master learns
    only that they were delivered; when the client cannot be reached they ride on the reply
    as on TF's path. Calls ``on_completed()`` when this run answered the client's step.
    """
    client, complete = request.deliver_to, request.complete
    if not client or (
        complete is None and sum(getattr(v, "nbytes", 0) for v in values) < DIRECT_FETCH_MIN_BYTES
    ):  # small: riding on the reply costs less
        responder.reply(RunGraphResponse.TYPE, RunGraphResponse(values, stats, tensors=carried).body())
        return
    tensors = FetchedTensors(run_id=request.run_id, task=task, fetches=values, complete=complete)
    frames = loop.encode(tensors.TYPE, tensors.body())

    def deliver():  # I/O thread: the ROUTER and the links are its own
        delivered = loop.send_to(client, frames, link_only=complete is not None)
        completed = True if delivered and complete is not None else None
        if completed:
            on_completed()
        response = RunGraphResponse(None if delivered else values, stats, delivered, completed, carried)
        responder.reply(response.TYPE, response.body())

    if loop.on_io_thread:
        deliver()
    else:
        loop.post(deliver)


# -- the client: naming itself, and taking what comes -------------------------------------------------
class ClientInbox:
    """This thread's connections to the workers, which deliver fetched tensors here: over a
    link to a worker of this host once it has read this inbox's ``Hello``, else to the DEALER."""

    def __init__(self):
        self.identity = b"nbdist-client-" + os.urandom(8).hex().encode()
        self.channels = {}  # address -> Channel
        self._run_ids = itertools.count(1)
        self._arrived = {}  # address -> FetchedTensors of the run being waited for, read early
        self._users = {}  # id of an open session's backend -> the addresses it connected to

    def connect(self, addresses, key, user):
        addresses = list(addresses)
        self._users[id(user)] = addresses
        if any(a not in self.channels for a in addresses):
            transport.evict_gone(self.channels, keep=addresses)
        for address in addresses:
            if address not in self.channels:
                self.channels[address] = transport.Channel(address, address, key, identity=self.identity)

    def release(self, user):
        """`user`'s session closed: closes the connections no other open session of this thread
        uses (a link to a worker holds a socket until closed, even after the worker is gone), and
        unmaps the shared-memory segments those workers delivered fetches in."""
        if self._users.pop(id(user), None) is None:
            return
        needed = {a for addresses in self._users.values() for a in addresses}
        for address in [a for a in self.channels if a not in needed]:
            channel = self.channels.pop(address)
            channel.close()
            self._arrived.pop(address, None)
            shm.forget_peer(links.peer_pid(channel.link))  # its fetches in shared memory

    def address_step(self, request, master_channel, workers):
        """Names this inbox in `request` (a `RunStepRequest`) so that workers may deliver here;
        returns what `Channel.call` reads beside the master's link while the step runs (``also``),
        or None.

        A step may be completed by a worker (``completes``) only when this thread can read the
        links to the master and to every worker while it waits, and the step is not traced (the
        master assembles a trace)."""
        if _RELAY_ONLY:
            return None
        request.deliver_to, request.run_id = self.identity, next(self._run_ids)
        if request.trace or not getattr(master_channel, "on_link", False) or not self._on_links(workers):
            return None
        request.completes = True
        self._arrived.clear()
        return _Completion(self, request.run_id, {self.channels[a].link: a for a in workers})

    def step_reply(self, reply, request, address_of):
        """The step's ``(fetched values, meta)`` from the master's reply, or from the
        ``FetchedTensors`` of the task that completed it, with what workers delivered here.

        Raises:
            DeadlineExceededError: delivered tensors did not arrive within `DELIVERY_TIMEOUT_S`.
        """
        if reply["type"] == FetchedTensors.TYPE:  # completed by the worker: the master's meta with it
            complete = reply["complete"]
            fetched = reply["fetches"]
            return [fetched[i] for i in complete["order"]], complete["meta"]
        response = RunStepResponse.from_msg(reply)
        meta = response.meta or {}
        if meta.get("direct"):
            self._collect(request.run_id, meta["direct"], response.fetches, address_of)
        return response.fetches, meta

    def _on_links(self, addresses):
        channels = self.channels
        return all(a in channels and channels[a].on_link for a in addresses)

    def read(self, address, run_id, dealer=True):
        """Keeps what the worker at `address` delivered for `run_id` on its link (and on the
        DEALER, unless not `dealer`): drops late deliveries of runs that gave up, and whatever
        does not decode (not from this cluster)."""
        channel = self.channels[address]
        messages = []
        while dealer and channel.socket.poll(0):
            messages.append(channel.socket.recv_multipart(copy=False))
        if channel.on_link:
            with contextlib.suppress(links.LinkClosedError, links.LinkError):  # (the worker falls back)
                messages += channel.link.take_all()
        for frames in messages:
            try:
                msg = wire.decode(frames, channel.key, peer=f"the worker at {address}")
            except wire.WireError:
                continue
            if msg.get("type") == FetchedTensors.TYPE and msg.get("run_id") == run_id:
                self._arrived[address] = msg

    def take_completion(self, address):
        """The completing ``FetchedTensors`` that arrived from `address`, or None."""
        msg = self._arrived.get(address)
        if msg is None or not isinstance(msg.get("complete"), dict):
            return None  # (a large fetch delivered early: `_collect` takes it)
        del self._arrived[address]
        return msg

    def _collect(self, run_id, direct, values, address_of):
        """Fills ``values`` at the positions each task in `direct` delivers for `run_id`."""
        waiting = {address_of[task]: (task, positions) for task, positions in direct.items()}
        deadline = time.monotonic() + DELIVERY_TIMEOUT_S
        while True:
            for address in [a for a in waiting if a in self._arrived]:
                _, positions = waiting.pop(address)
                for position, value in zip(positions, self._arrived.pop(address)["fetches"], strict=True):
                    values[position] = value
            if not waiting:
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise errors.DeadlineExceededError(
                    None,
                    None,
                    f"the fetched tensors of {sorted(t for t, _ in waiting.values())} did not arrive "
                    f"within {DELIVERY_TIMEOUT_S:.0f} s after the step finished",
                )
            poller = zmq.Poller()
            for address in waiting:
                channel = self.channels[address]
                poller.register(channel.socket, zmq.POLLIN)
                if channel.on_link:
                    poller.register(channel.link.fileno(), zmq.POLLIN)
            poller.poll(min(100, int(remaining * 1000) + 1))
            for address in waiting:
                self.read(address, run_id)


class _Completion:
    """The `Channel.call` ``also`` of one step: a worker that ran the step's only partition
    sends its fetches here with the master's reply meta (``complete``), instead of the master."""

    def __init__(self, inbox, run_id, address_of_link):
        self._inbox = inbox
        self._run_id = run_id
        self._address_of_link = address_of_link

    @property
    def links(self):
        return list(self._address_of_link)

    def answer(self, link):
        address = self._address_of_link[link]
        self._inbox.read(address, self._run_id, dealer=False)  # (a completing run comes on the link)
        return self._inbox.take_completion(address)


_inboxes = threading.local()


def client_inbox():
    """This thread's `ClientInbox` (made on first use)."""
    inbox = getattr(_inboxes, "inbox", None)
    if inbox is None:
        inbox = _inboxes.inbox = ClientInbox()
    return inbox
