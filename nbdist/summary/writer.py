"""`tf.summary.FileWriter` and `FileWriterCache`: TensorBoard's event files.

    writer = tf.summary.FileWriter(logdir, sess.graph)       # the graph goes in first
    writer.add_summary(sess.run(merged), global_step=step)   # the bytes a summary op made
    writer.close()

An event file is ``logdir/events.out.tfevents.<time>.<host>.<pid>.<n><suffix>``: TF's name
plus the process id and a per-process count, so two writers on one directory (two tasks
sharing a filesystem, a writer reopened in the same second) never truncate each other's
file. Records are TF's framing (length, masked CRC-32C, data, masked CRC-32C) of ``Event``
protobufs (tensorboardX's classes), written by `nbdist.platform.tf_record` — the module
behind `tf.python_io.TFRecordWriter` too — the first one the file version. Writes are
synchronous into the file's buffer; the buffer reaches the disk on `flush`, every
`max_queue` events, every `flush_secs` seconds (a background timer), on `close` and at the
process' exit — so `flush` really means every event added so far is on disk (tensorboardX's
own queued writer does not drain its queue on flush).

A full disk (ENOSPC, EDQUOT) does not stop training: the writer logs one warning, closes its
file and drops every later event until `reopen`. TF's writer thread logs the error and dies;
its events are lost too, and TF's next `flush` raises.
"""

import atexit
import contextlib
import errno
import itertools
import logging
import os
import socket
import threading
import time
import weakref

import numpy as np

from nbdist.graph.graph import get_default_graph
from nbdist.ops import summary_protos
from nbdist.platform import tf_record
from nbdist.summary.graph_proto import graph_def_proto
from nbdist.summary.run_metadata_proto import run_metadata_bytes

_log = logging.getLogger("nbdist")
_file_numbers = itertools.count()
_open_writers = weakref.WeakSet()  # flushed at exit: a process that ends never loses buffered events


@atexit.register
def _flush_open_writers():
    for writer in list(_open_writers):
        writer.flush()


class FileWriter:
    """Writes ``Summary`` protobufs, session logs and the graph to an event file in `logdir`.

    Args:
        logdir: the directory (created if missing).
        graph: an nbdist `Graph` (or GraphDef) to write first, as TF does.
        max_queue: events written before the buffer is flushed to disk.
        flush_secs: seconds between background flushes.
        graph_def: TF's deprecated spelling of `graph`.
        filename_suffix: appended to the event file's name.
        session: not supported (TF's writing through graph ops); must be None.

    Raises:
        ImportError: tensorboardX (a dependency) is missing from this environment (naming it).
        ValueError: a `session` is given.
    """

    def __init__(
        self,
        logdir,
        graph=None,
        max_queue=10,
        flush_secs=120,
        graph_def=None,
        filename_suffix=None,
        session=None,
    ):
        if session is not None:
            raise ValueError(
                "FileWriter(session=...) writes through TF 2's summary ops, which nbdist does not have; "
                "omit session= (the writer writes the event file itself)"
            )
        self._pb = summary_protos.load()
        self._logdir = str(logdir)
        self._max_queue = max(1, int(max_queue))
        self._flush_secs = flush_secs
        self._filename_suffix = filename_suffix or ""
        self._lock = threading.RLock()
        self._seen_summary_tags = set()
        self._session_run_tags = set()
        self._writer = None
        self._open()
        _open_writers.add(self)
        if graph is not None or graph_def is not None:
            self.add_graph(graph, graph_def=graph_def)

    # -- the file ------------------------------------------------------------------------------------
    def _open(self):
        os.makedirs(self._logdir, exist_ok=True)
        name = (
            f"events.out.tfevents.{int(time.time())}.{socket.gethostname()}"
            f".{os.getpid()}.{next(_file_numbers)}{self._filename_suffix}"
        )
        with self._lock:
            self._writer = tf_record.TFRecordWriter(os.path.join(self._logdir, name))
            self._unflushed = 0
            self._closed = False
            self._disk_full = False
            self._stop_flusher = threading.Event()
            self._write(self._pb.Event(wall_time=time.time(), file_version="brain.Event:2"))
            self._flush_locked()  # the file exists (with its version record) from now on
        if self._flush_secs:
            threading.Thread(
                target=self._flush_periodically,
                args=(self._stop_flusher,),
                daemon=True,
                name="nbdist-summary-flush",
            ).start()

    def _flush_periodically(self, stop):
        while not stop.wait(self._flush_secs):
            self.flush()

    @property
    def path(self):
        """The event file being written (nbdist's addition; TF has no such property)."""
        return self._writer.path

    def get_logdir(self):
        return self._logdir

    # -- adding events ------------------------------------------------------------------------------
    def add_event(self, event):
        """Writes an ``Event`` protobuf (dropped after `close`, as in TF)."""
        with self._lock:
            if self._closed or self._disk_full:
                return
            try:
                self._write(event)
            except OSError as e:
                self._drop_events_if_disk_full(e)
                return
            self._unflushed += 1
            if self._unflushed >= self._max_queue:
                self._flush_locked()

    def _write(self, event):
        if not isinstance(event, self._pb.Event):
            raise TypeError(f"add_event() takes an Event protobuf, got {type(event).__name__}")
        self._writer.write(event.SerializeToString())

    def _add_event(self, event, step):
        event.wall_time = time.time()
        if step is not None:
            event.step = int(step)
        self.add_event(event)

    def add_summary(self, summary, global_step=None):
        """Writes a summary: the bytes a summary op produced (what ``sess.run`` returns) or a
        ``Summary`` protobuf. Plugin metadata is kept only the first time a tag is seen."""
        summary = self._as_summary(summary)
        for value in summary.value:
            if not value.HasField("metadata"):
                continue
            if value.tag in self._seen_summary_tags:
                value.ClearField("metadata")
            else:
                self._seen_summary_tags.add(value.tag)
        self._add_event(self._pb.Event(summary=summary), global_step)

    def _as_summary(self, summary):
        if isinstance(summary, np.ndarray) and summary.size == 1:
            summary = summary.item()
        if isinstance(summary, (bytes, np.bytes_)):
            parsed = self._pb.Summary()
            parsed.ParseFromString(bytes(summary))
            return parsed
        if isinstance(summary, self._pb.Summary):
            copy = self._pb.Summary()
            copy.CopyFrom(summary)
            return copy
        if hasattr(summary, "SerializeToString"):  # another library's Summary class (real TF's)
            parsed = self._pb.Summary()
            parsed.ParseFromString(summary.SerializeToString())
            return parsed
        raise TypeError(
            f"add_summary() takes a serialized Summary (a summary op's value) or a Summary protobuf, "
            f"got {type(summary).__name__}"
        )

    def add_session_log(self, session_log, global_step=None):
        """Writes a ``SessionLog`` (START, STOP, CHECKPOINT) event."""
        self._add_event(self._pb.Event(session_log=session_log), global_step)

    def add_run_metadata(self, run_metadata, tag, global_step=None):
        """Writes a traced step's `tf.RunMetadata` (``Session.run(..., options=
        tf.RunOptions(trace_level=FULL_TRACE), run_metadata=md)``) as TF's ``TaggedRunMetadata``
        event: its op spans per device and partition graphs (`run_metadata_proto`).

        Raises:
            ValueError: `tag` was used before on this writer (TF's message).
        """
        if tag in self._session_run_tags:
            raise ValueError("The provided tag was already used for this event type")
        self._session_run_tags.add(tag)
        tagged = self._pb.TaggedRunMetadata(tag=tag, run_metadata=run_metadata_bytes(run_metadata))
        self._add_event(self._pb.Event(tagged_run_metadata=tagged), global_step)

    def add_graph(self, graph, global_step=None, graph_def=None):
        """Writes the graph as TF's ``GraphDef`` protobuf: nodes with their requested devices,
        attrs and output shapes (TensorBoard's graph tab).

        Raises:
            ValueError: both `graph` and `graph_def` are given.
            TypeError: `graph` is neither a `Graph` nor a GraphDef.
        """
        if graph is not None and graph_def is not None:
            raise ValueError("Please pass only graph, or graph_def (deprecated), but not both.")
        proto = graph_def_proto(graph if graph is not None else graph_def)
        self._add_event(self._pb.Event(graph_def=proto.SerializeToString()), global_step)

    # -- flushing and closing ----------------------------------------------------------------------------
    def _flush_locked(self):
        try:
            self._writer.flush()
        except OSError as e:
            self._drop_events_if_disk_full(e)
        self._unflushed = 0

    def _drop_events_if_disk_full(self, error):
        """On ENOSPC/EDQUOT: one warning, the file closed, later events dropped; else re-raises."""
        if error.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise error
        _log.warning(
            "No space left for events in %s (%s): this writer drops its events from now on and "
            "training goes on; free space, then call reopen() to write a new event file.",
            self.path,
            error.strerror,
        )
        self._disk_full = True
        with contextlib.suppress(OSError):  # the buffered bytes cannot reach the disk either
            self._writer.close()

    def flush(self):
        """Every event added so far is on disk when this returns (dropped on a full disk)."""
        with self._lock:
            if not self._closed and not self._disk_full:
                self._flush_locked()

    def close(self):
        """Flushes and closes the file; later events are dropped until `reopen`."""
        with self._lock:
            if self._closed:
                return
            self._stop_flusher.set()
            if self._disk_full:
                self._closed = True
                return
            try:
                self._writer.close()
            except OSError as e:
                self._drop_events_if_disk_full(e)
            self._closed = True

    def reopen(self):
        """After `close` (or a full disk): writes further events to a new event file in the
        same directory."""
        with self._lock:
            if self._closed or self._disk_full:
                self._stop_flusher.set()
                self._open()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def __repr__(self):
        state = "closed" if self._closed else "open"
        return f"<nbdist FileWriter {self.path} ({state})>"


class FileWriterCache:
    """One `FileWriter` per directory, shared by the hooks that write there (TF's cache).

    A new writer is created with the default graph, so the graph is written first.
    """

    _cache = {}
    _lock = threading.RLock()

    @staticmethod
    def get(logdir):
        """The `FileWriter` for `logdir` (created on first use)."""
        with FileWriterCache._lock:
            writer = FileWriterCache._cache.get(logdir)
            if writer is None:
                writer = FileWriterCache._cache[logdir] = FileWriter(logdir, graph=get_default_graph())
            return writer

    @staticmethod
    def clear():
        """Closes and forgets every cached writer."""
        with FileWriterCache._lock:
            for writer in FileWriterCache._cache.values():
                writer.close()
            FileWriterCache._cache = {}


_warned_dirs = set()


def default_writer(logdir):
    """The cached writer the standard hooks and the Supervisor write to, as TF's do — or None
    when tensorboardX is missing from this environment (logged once per directory), so
    training without summaries never needs it.
    """
    if not summary_protos.available():
        if logdir not in _warned_dirs:
            _warned_dirs.add(logdir)
            _log.info(
                "No event file is written to %s (the graph, global_step/sec): tensorboardX, one of "
                "nbdist's dependencies, is missing from this environment (%s).",
                logdir,
                summary_protos.INSTALL_HINT,
            )
        return None
    return FileWriterCache.get(logdir)


def scalar_summary(tag, value):
    """A ``Summary`` protobuf holding one scalar (what the step counters write)."""
    pb = summary_protos.load()
    return pb.Summary(value=[pb.Summary.Value(tag=tag, simple_value=float(value))])


def session_log(status):
    """A ``SessionLog`` protobuf: `status` is ``"START"``, ``"STOP"`` or ``"CHECKPOINT"``."""
    pb = summary_protos.load()
    return pb.SessionLog(status=getattr(pb.SessionLog, status))
