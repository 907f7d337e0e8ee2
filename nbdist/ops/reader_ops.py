"""Readers: `tf.TextLineReader`, `FixedLengthRecordReader`, `TFRecordReader`, `WholeFileReader`,
`IdentityReader`.

A reader is a resource of kind ``"reader"`` in the task that holds it (its creator op,
``TextLineReaderV2`` ..., is placed like any op; ``ReaderReadV2`` and the reader's other ops
are colocated with it, and with the queue of work units they read from). A reader reads one
*work unit* (a filename) at a time: ``read(queue)`` returns the next record of the current
file as ``(key, value)``, and when the file is exhausted it dequeues the next filename.

Reading is a *blocking* op as a dequeue is: its ready function takes filenames from the
queue through the queue's own line of waiting dequeues (`QueueResource.serve_dequeue`) and
claims the record(s) its kernel returns, so a read waiting for a filename holds no thread
and two steps reading one reader never get one record twice. Once the filename queue is
closed and empty, a read raises the queue's `OutOfRangeError`, as TF's does.

As in TF: a text line's key is ``b"<file>:<line number>"`` counting from 1 (header lines
included), a fixed-length record's ``b"<file>:<record index>"`` from 0, a whole file's and an
identity reader's the work unit itself; a work unit counts as completed when a read finds it
exhausted (a whole file at once); ``read_up_to`` stops at the end of a work unit once it has
produced a record.
"""

import glob
import threading

import numpy as np

from nbdist import errors, file_errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import get_default_graph
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.queue_ops import QUEUE

__all__ = [
    "FixedLengthRecordReader",
    "IdentityReader",
    "ReaderBase",
    "TFRecordReader",
    "TextLineReader",
    "WholeFileReader",
    "matching_files",
    "read_file",
    "write_file",
]


def _text_lines(work, attrs):
    with open(work.decode(), "rb") as f:
        data = f.read()
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":  # a final newline ends the last line; it starts none
        lines.pop()
    skip = int(attrs.get("skip_header_lines") or 0)
    for number, line in enumerate(lines, start=1):
        if number > skip:
            yield b"%s:%d" % (work, number), line.removesuffix(b"\r"), False


def _fixed_length_records(work, attrs):
    with open(work.decode(), "rb") as f:
        data = f.read()
    record, header = int(attrs["record_bytes"]), int(attrs.get("header_bytes") or 0)
    hop = int(attrs.get("hop_bytes") or 0) or record
    limit = len(data) - int(attrs.get("footer_bytes") or 0)
    for index, start in enumerate(range(header, max(header, limit - record + 1), hop)):
        yield b"%s:%d" % (work, index), data[start : start + record], False


def _whole_file(work, attrs):
    with open(work.decode(), "rb") as f:
        yield work, f.read(), True  # the work unit ends with its one record


def _identity(work, attrs):
    yield work, work, True


def _tfrecords(work, attrs):
    """TFRecord's records; the key is ``file:offset`` of each record in the (decompressed)
    stream, as TF's TFRecordReader keys them."""
    from nbdist.platform import tf_record  # noqa: PLC0415 - the framing, shared with the event writer

    offset = 0
    for data in tf_record.tf_record_iterator(work.decode(), attrs.get("compression_type") or None):
        yield b"%s:%d" % (work, offset), data, False
        offset += tf_record.RECORD_OVERHEAD_BYTES + len(data)


_RECORDS = {
    "TextLineReaderV2": _text_lines,
    "FixedLengthRecordReaderV2": _fixed_length_records,
    "WholeFileReaderV2": _whole_file,
    "IdentityReaderV2": _identity,
    "TFRecordReaderV2": _tfrecords,
}


class _QueueClosedError(Exception):
    """The work queue is closed and empty: the read's kernel raises the queue's error."""


class ReaderResource:
    """One reader's state: its current work unit, the records left in it, and its counts."""

    def __init__(self, name, device, attrs):
        self.name = name
        self.device = device
        self.records_of = _RECORDS[attrs["_reader_type"]]
        self.attrs = dict(attrs)
        self.lock = threading.Lock()
        self.reset()

    def reset(self):
        self.work = None  # the work unit in progress (bytes), or None
        self._records = None  # its remaining (key, value, last) records
        self.produced = 0
        self.completed = 0
        self.given_back = []  # records a failed step did not use: read again first

    def describe(self):
        work = "no work unit" if self.work is None else f"work unit {self.work.decode(errors='replace')!r}"
        return f"reader {self.name!r} on {self.device} ({work}, {self.produced} record(s) produced)"

    def _finish_work(self):
        self.work, self._records = None, None
        self.completed += 1

    def read(self, take_work, n, up_to):
        """Up to `n` records; returns ``(records, done)``: done is False when `take_work` must wait.

        ``take_work()`` returns the next work unit, None while the queue has none yet, or
        raises `_QueueClosedError`. A single read (``up_to`` False) stops at its first record;
        ``read_up_to`` stops too at the end of a work unit once it has produced one (TF's rule).
        """
        out = []
        while len(out) < n:
            if self.given_back:
                out.append(self.given_back.pop(0))
                continue
            if self.work is None:
                work = take_work()
                if work is None:
                    return out, False
                self.work, self._records = work, self.records_of(work, self.attrs)
            record = next(self._records, None)
            if record is None:
                self._finish_work()
                if out and up_to:
                    break
                continue
            key, value, last = record
            self.produced += 1
            out.append((key, value))
            if last:
                self._finish_work()
                if up_to:
                    break
        return out, True

    def give_back(self, records):
        with self.lock:
            self.given_back[:0] = records


READER = registry.resource_kind("reader", ReaderResource, attrs=("_reader_type",))


def _resource_shape(inputs, attrs):
    return [(_dtypes.string, TensorShape(()))]


def _creator_kernel(ctx, node):
    reader = ctx.resources.resource(READER, node)
    return np.array(reader.name.encode(), dtype=object)


for _creator in _RECORDS:
    registry.declare(_creator, creates="reader", stateful=True)
    registry.shape(_creator)(_resource_shape)
    registry.kernel(_creator)(_creator_kernel)
    registry.no_gradient(_creator)


# -- read, read_up_to ------------------------------------------------------------------------------
for _op in ("ReaderReadV2", "ReaderReadUpToV2"):
    registry.declare(_op, ref_inputs={0: "reader", 1: QUEUE}, stateful=True, blocking=True, parks=True)
    registry.no_gradient(_op)
registry.shape("ReaderReadV2")(lambda inputs, attrs: [(_dtypes.string, TensorShape(()))] * 2)
registry.shape("ReaderReadUpToV2")(lambda inputs, attrs: [(_dtypes.string, TensorShape([None]))] * 2)


def _serve(ctx, node, reader, queue, n, up_to):
    """The ready function of a read: reads (taking filenames as the queue serves them) and
    claims the records for the kernel; what it waits for while the queue has no filename."""
    if ctx.has_claim(node):
        return None
    waiting = []

    def take_work():
        with queue.lock:
            wait = queue.serve_dequeue(ctx, node, 1)
        if wait is not None:
            waiting.append(wait)
            return None
        element = ctx.pop_claim(node)
        if element is None:
            raise _QueueClosedError
        (work,) = element[0]
        return bytes(np.asarray(work).item())

    with reader.lock:
        try:
            records, done = reader.read(take_work, n, up_to)
        except _QueueClosedError:
            records, done = [], True
        except OSError as e:
            raise errors.NotFoundError(node.name, None, f"{reader.describe()}: {e}") from e
        if not done and not (up_to and records):
            reader.given_back[:0] = records
            return f"a work unit for {reader.describe()} from {waiting[0]}"
    ctx.claim(node, records, lambda: reader.give_back(records))
    return None


@registry.ready("ReaderReadV2")
def _read_ready(ctx, node, reader, queue):
    return _serve(ctx, node, reader, queue, 1, False)


@registry.ready("ReaderReadUpToV2")
def _read_up_to_ready(ctx, node, reader, queue, n):
    return _serve(ctx, node, reader, queue, int(n), True)


def _claimed(ctx, node, queue):
    records = ctx.pop_claim(node) or []
    ctx.resources.notify(queue)  # the queue's next dequeue in line may go now
    if not records:
        with queue.lock:
            queue.take(1, node)  # closed and empty: the queue's OutOfRangeError, as TF's
        raise errors.InternalError(node.name, None, f"{node.op} produced no record")  # not reached
    return records


@registry.kernel("ReaderReadV2")
def _read_kernel(ctx, node, reader, queue):
    ((key, value),) = _claimed(ctx, node, queue)
    return np.array(key, dtype=object), np.array(value, dtype=object)


@registry.kernel("ReaderReadUpToV2")
def _read_up_to_kernel(ctx, node, reader, queue, n):
    records = _claimed(ctx, node, queue)
    keys, values = np.empty(len(records), dtype=object), np.empty(len(records), dtype=object)
    keys[:], values[:] = [k for k, _ in records], [v for _, v in records]
    return keys, values


# -- counts, reset ---------------------------------------------------------------------------------
def _declare(op_type, outputs, kernel):
    registry.declare(op_type, ref_inputs={0: "reader"}, stateful=True)
    registry.shape(op_type)(lambda inputs, attrs: outputs)
    registry.kernel(op_type)(kernel)
    registry.no_gradient(op_type)


def _count(field):
    def kernel(ctx, node, reader):
        with reader.lock:
            return np.int64(getattr(reader, field))

    return kernel


def _reset_kernel(ctx, node, reader):
    with reader.lock:
        reader.reset()


_SCALAR_INT64 = [(_dtypes.int64, TensorShape(()))]
_declare("ReaderNumRecordsProducedV2", _SCALAR_INT64, _count("produced"))
_declare("ReaderNumWorkUnitsCompletedV2", _SCALAR_INT64, _count("completed"))
_declare("ReaderResetV2", [], _reset_kernel)


# -- the Python classes ----------------------------------------------------------------------------
class ReaderBase:
    """`tf.ReaderBase`: a reader's ops, all colocated with it.

    Args:
        reader_ref: the creator op's output.
        supports_serialize: whether `serialize_state` is supported (never, in nbdist).
    """

    def __init__(self, reader_ref, supports_serialize=False):
        self._reader_ref = reader_ref
        self._supports_serialize = supports_serialize

    reader_ref = property(lambda self: self._reader_ref)
    supports_serialize = property(lambda self: self._supports_serialize)

    def _op(self, op_type, inputs=(), name=None):
        with self._reader_ref.graph.colocate_with(self._reader_ref.op):
            return registry.make_op(op_type, [self._reader_ref, *inputs], name=name)

    @staticmethod
    def _queue_ref(queue):
        return queue if not hasattr(queue, "queue_ref") else queue.queue_ref

    def read(self, queue, name=None):
        """The next record ``(key, value)``: scalar strings. Dequeues a filename from `queue`
        when the current one is exhausted; `OutOfRangeError` once `queue` is closed and empty."""
        key, value = self._op("ReaderReadV2", [self._queue_ref(queue)], name or "ReaderReadV2").outputs
        return key, value

    def read_up_to(self, queue, num_records, name=None):
        """Up to `num_records` records ``(keys, values)`` (1-D): fewer at the end of a work unit."""
        n = convert_to_tensor(num_records, dtype=_dtypes.int64)
        keys, values = self._op(
            "ReaderReadUpToV2", [self._queue_ref(queue), n], name or "ReaderReadUpToV2"
        ).outputs
        return keys, values

    def num_records_produced(self, name=None):
        return self._op("ReaderNumRecordsProducedV2", name=name or "ReaderNumRecordsProducedV2").outputs[0]

    def num_work_units_completed(self, name=None):
        return self._op(
            "ReaderNumWorkUnitsCompletedV2", name=name or "ReaderNumWorkUnitsCompletedV2"
        ).outputs[0]

    def reset(self, name=None):
        """Restores the reader to its initial state (no work unit, counts zero)."""
        return self._op("ReaderResetV2", name=name or "ReaderResetV2")

    def serialize_state(self, name=None):
        raise NotImplementedError(
            "Reader serialization is not supported by nbdist (nor by most of TF's readers)"
        )

    def restore_state(self, state, name=None):
        raise NotImplementedError(
            "Reader serialization is not supported by nbdist (nor by most of TF's readers)"
        )


def _make_reader(op_type, name, attrs):
    attrs = {
        **attrs,
        "_reader_type": op_type,  # (an internal attr, as TF's NodeDefs allow: which reader the kind makes)
        "container": get_default_graph().current_container(),
        "shared_name": "",
    }
    return registry.make_op(op_type, [], attrs, name=name or op_type).outputs[0]


class TextLineReader(ReaderBase):
    """`tf.TextLineReader(skip_header_lines=None)`: the lines of a file (without ``\\n`` / ``\\r\\n``)."""

    def __init__(self, skip_header_lines=None, name=None):
        attrs = {"skip_header_lines": int(skip_header_lines or 0)}
        super().__init__(_make_reader("TextLineReaderV2", name, attrs))


class FixedLengthRecordReader(ReaderBase):
    """`tf.FixedLengthRecordReader`: records of `record_bytes` bytes after `header_bytes`, before
    `footer_bytes`, each `hop_bytes` after the previous one (default: `record_bytes`)."""

    def __init__(
        self, record_bytes, header_bytes=None, footer_bytes=None, hop_bytes=None, name=None, encoding=None
    ):
        if encoding:
            raise NotImplementedError(
                "FixedLengthRecordReader(encoding=...) (compressed files) is not supported by nbdist"
            )
        attrs = {
            "record_bytes": int(record_bytes),
            "header_bytes": int(header_bytes or 0),
            "footer_bytes": int(footer_bytes or 0),
            "hop_bytes": int(hop_bytes or 0),
            "encoding": "",
        }
        super().__init__(_make_reader("FixedLengthRecordReaderV2", name, attrs))


class WholeFileReader(ReaderBase):
    """`tf.WholeFileReader`: one record per file, key the filename, value its contents."""

    def __init__(self, name=None):
        super().__init__(_make_reader("WholeFileReaderV2", name, {}))


class TFRecordReader(ReaderBase):
    """`tf.TFRecordReader(options=None)`: the records of TFRecord files (TF's framing, CRCs
    checked; `options` a `tf.python_io.TFRecordOptions` for GZIP / ZLIB files)."""

    def __init__(self, name=None, options=None):
        from nbdist.platform import tf_record  # noqa: PLC0415

        kind = tf_record.TFRecordOptions.get_compression_type_string(options)
        super().__init__(_make_reader("TFRecordReaderV2", name, {"compression_type": kind}))


class IdentityReader(ReaderBase):
    """`tf.IdentityReader`: one record per work unit, key and value the work unit itself."""

    def __init__(self, name=None):
        super().__init__(_make_reader("IdentityReaderV2", name, {}))


# -- tf.io.matching_files --------------------------------------------------------------------------
registry.declare("MatchingFiles", stateful=True)
registry.shape("MatchingFiles")(lambda inputs, attrs: [(_dtypes.string, TensorShape([None]))])
registry.no_gradient("MatchingFiles")


@registry.kernel("MatchingFiles")
def _matching_files_kernel(ctx, node, pattern):
    patterns = [
        p.decode() if isinstance(p, bytes) else str(p) for p in np.asarray(pattern, dtype=object).reshape(-1)
    ]
    found = sorted({f for p in patterns for f in glob.glob(p)})
    out = np.empty(len(found), dtype=object)
    out[:] = [f.encode() for f in found]
    return out


def matching_files(pattern, name=None):
    """`tf.matching_files`: the files matching a glob pattern (or a 1-D tensor of them), sorted."""
    pattern = convert_to_tensor(pattern, dtype=_dtypes.string, name="pattern")
    return registry.make_op("MatchingFiles", [pattern], name=name or "MatchingFiles").outputs[0]


# -- tf.read_file / tf.write_file -------------------------------------------------------------------
registry.declare("ReadFile", stateful=True)
registry.shape("ReadFile")(lambda inputs, attrs: [(_dtypes.string, TensorShape([]))])
registry.no_gradient("ReadFile")
registry.declare("WriteFile", stateful=True)
registry.shape("WriteFile")(lambda inputs, attrs: [])
registry.no_gradient("WriteFile")


def _path(value):
    value = np.asarray(value, dtype=object).item()
    return value.decode() if isinstance(value, bytes) else str(value)


@registry.kernel("ReadFile")
def _read_file_kernel(ctx, node, filename):
    path = _path(filename)
    try:
        with open(path, "rb") as f:
            return np.array(f.read(), dtype=object)
    except OSError as e:
        raise file_errors.from_os_error(e, node.name, None, f"cannot read {path!r}") from None


@registry.kernel("WriteFile")
def _write_file_kernel(ctx, node, filename, contents):
    path = _path(filename)
    data = np.asarray(contents, dtype=object).item()
    try:
        with open(path, "wb") as f:
            f.write(data if isinstance(data, bytes) else str(data).encode())
    except OSError as e:
        raise file_errors.from_os_error(e, node.name, None, f"cannot write {path!r}") from None


def read_file(filename, name=None):
    """`tf.read_file` (`tf.io.read_file`): the bytes of the file `filename`, on the task running it."""
    filename = convert_to_tensor(filename, dtype=_dtypes.string, name="filename")
    return registry.make_op("ReadFile", [filename], name=name or "ReadFile").outputs[0]


def write_file(filename, contents, name=None):
    """`tf.write_file` (`tf.io.write_file`): an op writing the string `contents` to `filename`."""
    inputs = [
        convert_to_tensor(filename, dtype=_dtypes.string, name="filename"),
        convert_to_tensor(contents, dtype=_dtypes.string, name="contents"),
    ]
    return registry.make_op("WriteFile", inputs, name=name or "WriteFile")
