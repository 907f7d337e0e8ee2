"""A cross-process event timeline of an nbdist job: `probe_job.py --timeline` puts this folder
first on the tasks' ``PYTHONPATH``, so Python imports it at start-up in every task.

It does nothing unless ``$NBDIST_TIMELINE_DIR`` is set. Then it wraps the runtime's hops - a
client's `run_step`, the master's `RunStep` and each reply it gets, a worker's `RunGraph` and
`SendTensor`, a parked run's advances, the rendezvous' flushes, the wire's encodes, the link
writes and the serving loop's wake-ups - and, once the file ``start`` appears in that folder
(it holds a wall-clock time and a duration), records ``(perf_counter_ns, thread, event)`` for
that long, then writes ``<pid>.json``. ``perf_counter`` is ``CLOCK_MONOTONIC``: one clock for
every process of the host, so their events merge into one timeline. A probe whose function
is gone is named in the file's ``missing`` (the tool reaches into the runtime's internals).

A measuring tool, not part of nbdist: the wrappers cost a few microseconds per event.
"""

import functools
import json
import os
import sys
import threading
import time

DIR = os.environ.get("NBDIST_TIMELINE_DIR")
_events = []
_window = [None, None]  # [from, until] wall-clock seconds, once `start` is read
_missing = []
_dumped = threading.Lock()  # held for good by whoever writes the file first
_now_ns = time.perf_counter_ns


def _note(what):
    start, until = _window
    if start is None:
        return
    now = time.time()
    if now < start:
        return
    if now > until:
        _window[0] = None
        _dump()
        return
    _events.append((_now_ns(), threading.current_thread().name, what))


def _dump():
    if not _dumped.acquire(blocking=False):
        return
    with open(os.path.join(DIR, f"{os.getpid()}.json"), "w") as f:
        json.dump({"argv": sys.argv, "events": _events, "missing": _missing}, f)


def _wrap(owner, name, label, detail=None, ends=False):
    fn = getattr(owner, name, None)
    if fn is None:
        _missing.append(f"{getattr(owner, '__name__', owner)}.{name}")
        return

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        _note(f"{label}>{detail(*args, **kwargs) if detail else ''}")
        try:
            return fn(*args, **kwargs)
        finally:
            if ends:
                _note(f"{label}<")

    setattr(owner, name, wrapper)


def _short(task):
    parts = task.split("/")  # /job:ps/replica:0/task:0 -> ps:0
    return parts[1].removeprefix("job:") + ":" + parts[-1].removeprefix("task:")


def _install():
    from nbdist.runtime import fetch_delivery, master, remote, rendezvous, worker
    from nbdist.runtime.net import links, readiness, shm, wire

    _wrap(remote.RemoteBackend, "run_step", "client.run", ends=True)
    _wrap(master.MasterService, "run_step", "master.RunStep")
    _wrap(master._Step, "_task_done", "master.reply", lambda step, task, *a: " from " + _short(task))
    _wrap(master._Step, "_finish", "master.finish")
    _wrap(worker.WorkerService, "_rpc_run_graph", "worker.RunGraph")
    _wrap(worker.WorkerService, "_rpc_send_tensor", "worker.SendTensor")
    _wrap(
        worker._ParkedRun,
        "advance",
        "run.advance",
        lambda run, *a, **k: f" step {run.ctx.step_id % 10000}",
        ends=True,
    )
    _wrap(
        rendezvous.Rendezvous,
        "flush",
        "rendezvous.flush",
        lambda r, ctx, *a, **k: " to " + ",".join(map(_short, ctx.outbox or {})),
    )
    _wrap(rendezvous.Rendezvous, "put_all", "rendezvous.put_all")
    _wrap(wire, "encode", "wire.encode", lambda msg_type, *a, **k: " " + msg_type, ends=True)
    _wrap(shm.SegmentPool, "put", "shm.put", ends=True)
    _wrap(links.Link, "write", "link.write", ends=True)
    _wrap(links.Link, "take_all", "link.read", ends=True)
    _wrap(wire, "decode", "wire.decode", ends=True)
    reply = getattr(fetch_delivery, "reply_run_graph", None)
    if reply is not None and getattr(worker, "reply_run_graph", None) is reply:
        _wrap(worker, "reply_run_graph", "worker.reply")
    else:
        _missing.append("worker.reply_run_graph")
    poll = getattr(readiness.Poller, "poll", None)
    if poll is None:
        _missing.append("readiness.Poller.poll")
        return

    def polled(self, timeout_ms):
        ready = poll(self, timeout_ms)
        if ready and threading.current_thread().name.startswith("nbdist-io"):
            _note("loop.woke")
        return ready

    readiness.Poller.poll = polled


def _await_start():
    path = os.path.join(DIR, "start")
    while not os.path.exists(path):
        time.sleep(0.05)
    with open(path) as f:  # (whole: probe_job renames it into place)
        start, seconds = map(float, f.read().split())
    _window[1] = start + seconds
    _window[0] = start
    time.sleep(max(0.0, _window[1] - time.time()) + 0.5)
    _window[0] = None  # no event came after the window to write the file: write it now
    _dump()


if DIR:
    try:
        _install()
    except ImportError as e:  # nbdist not importable in this process: record nothing
        _missing.append(f"nbdist ({e})")
    threading.Thread(target=_await_start, name="timeline-start", daemon=True).start()
