"""Running a `tf.data` pipeline spec (`nbdist.ops.dataset_ops`) on numpy arrays, on the task
that holds its iterator (`nbdist.ops.iterator_ops`): sources (tensors, ranges, files), batch,
padded_batch, repeat, take, skip, shard, cache, shuffle, zip, concatenate and the traced
functions of map, filter, flat_map and interleave, as Python generators.
"""

import gzip
import itertools
import os
import zlib

import numpy as np

from nbdist import errors, file_errors
from nbdist.graph.graph_def import SubgraphDef


def elements(spec, leaves, node_name=None, run_function=None):
    """A Python iterator over the elements (tuples of numpy arrays) of a pipeline spec.

    Args:
        run_function: ``run(subgraph, values) -> outputs``: runs a traced function (the
            iterator kernel's `StepContext.function_runner`).

    Raises (while iterating):
        InvalidArgumentError: a bad argument (negative batch size, rows of different sizes,
            a batch of differently shaped elements), naming the iterator's node.
        NotFoundError (and the other file errors): a file that cannot be read, named.
        The error of an op of a traced function.
    """
    return _Runner(leaves, node_name, run_function).make(spec)()


class _Runner:
    def __init__(self, leaves, node_name, run_function=None):
        self.leaves = [np.asarray(v) for v in leaves]
        self.node_name = node_name
        self.run_function = run_function

    def scalar(self, spec, key):
        return int(self.leaves[spec[key]])

    def error(self, message):
        return errors.InvalidArgumentError(self.node_name, None, message)

    def make(self, spec):
        """A factory of fresh iterators over `spec`'s elements (repeat calls it once per epoch)."""
        return getattr(self, f"_make_{spec['op']}")(spec)

    def _make_tensors(self, spec):
        values = tuple(self.leaves[i] for i in spec["components"])
        return lambda: iter([values])

    def _make_tensor_slices(self, spec):
        values = [self.leaves[i] for i in spec["components"]]
        rows = {v.shape[0] for v in values}
        if len(rows) != 1:
            raise self.error(f"from_tensor_slices: components have different first dimensions {sorted(rows)}")
        n = rows.pop()
        return lambda: (tuple(v[i] for v in values) for i in range(n))

    def _make_range(self, spec):
        start, stop, step = (self.scalar(spec, k) for k in ("start", "stop", "step"))
        if step == 0:
            raise self.error("Dataset.range: step must not be 0")
        return lambda: ((np.int64(i),) for i in range(start, stop, step))

    def _make_zip(self, spec):
        makes = [self.make(s) for s in spec["inputs"]]
        return lambda: (tuple(c for e in parts for c in e) for parts in zip(*(m() for m in makes)))

    def _make_concatenate(self, spec):
        makes = [self.make(s) for s in spec["inputs"]]
        return lambda: (e for m in makes for e in m())

    def _make_take(self, spec):
        make, count = self.make(spec["input"]), self.scalar(spec, "count")
        return lambda: _take(make(), count)

    def _make_skip(self, spec):
        make, count = self.make(spec["input"]), self.scalar(spec, "count")
        return lambda: _skip(make(), count)

    def _make_repeat(self, spec):
        make, count = self.make(spec["input"]), self.scalar(spec, "count")
        return lambda: _repeat(make, count)

    def _make_batch(self, spec):
        make, size, drop = self.make(spec["input"]), self.scalar(spec, "batch_size"), spec["drop_remainder"]
        if size <= 0:
            raise self.error(f"batch_size must be greater than zero, got {size}")
        return lambda: self._batches(make(), size, drop)

    def _batches(self, it, size, drop):
        while True:
            chunk = list(_take(it, size))
            if not chunk or (drop and len(chunk) < size):
                return
            yield tuple(self._stack([e[i] for e in chunk], i) for i in range(len(chunk[0])))

    def _stack(self, values, component):
        first = values[0].shape
        for j, v in enumerate(values):
            if v.shape != first:
                raise self.error(
                    f"Cannot batch tensors with different shapes in component {component}. First element "
                    f"had shape {list(first)} and element {j} had shape {list(v.shape)}."
                )
        return np.stack(values)

    def _make_shuffle(self, spec):
        make, size = self.make(spec["input"]), self.scalar(spec, "buffer_size")
        if size <= 0:
            raise self.error(f"buffer_size must be greater than zero, got {size}")
        # Seeded: the same orders every run. Reshuffled: each epoch draws on from one generator
        # (a new order per epoch); otherwise every epoch starts the same generator again.
        seed = (
            [spec["seed"], spec["seed2"]]
            if spec["seed"] is not None
            else int(np.random.default_rng().integers(2**63))
        )
        if spec["reshuffle"]:
            rng = np.random.default_rng(seed)
            return lambda: _shuffle(make(), size, rng)
        return lambda: _shuffle(make(), size, np.random.default_rng(seed))

    # -- traced functions ----------------------------------------------------------------------
    def function(self, spec):
        """``call(element) -> outputs`` of the spec's traced function (its captures appended)."""
        subgraph = SubgraphDef.from_dict(spec["fn"])
        captures = [self.leaves[i] for i in spec["captures"]]
        run = self.run_function
        if run is None:
            raise self.error("this iterator cannot run the functions of its pipeline (no runner given)")
        return lambda element: run(subgraph, [*element, *captures])

    def _make_map(self, spec):
        make, call = self.make(spec["input"]), self.function(spec)
        return lambda: (tuple(call(e)) for e in make())

    def _make_filter(self, spec):
        make, call = self.make(spec["input"]), self.function(spec)
        return lambda: (e for e in make() if bool(call(e)[0]))

    def _inner(self, spec, call, element):
        """The elements of the dataset a flat_map / interleave function made of `element`."""
        return _Runner(call(element), self.node_name, self.run_function).make(spec["inner"])()

    def _make_flat_map(self, spec):
        make, call = self.make(spec["input"]), self.function(spec)
        return lambda: (e for outer in make() for e in self._inner(spec, call, outer))

    def _make_interleave(self, spec):
        make, call = self.make(spec["input"]), self.function(spec)
        cycle, block = self.scalar(spec, "cycle_length"), self.scalar(spec, "block_length")
        if cycle == -1:  # TF's AUTOTUNE: the cores this process may use
            cycle = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        if cycle <= 0 or block <= 0:
            raise self.error(
                f"interleave: cycle_length and block_length must be > 0, got {cycle} and {block}"
            )
        return lambda: _interleave(make(), lambda e: self._inner(spec, call, e), cycle, block)

    # -- shard, cache, padded_batch -------------------------------------------------------------------
    def _make_shard(self, spec):
        make, n, index = self.make(spec["input"]), self.scalar(spec, "num_shards"), self.scalar(spec, "index")
        if n <= 0 or not 0 <= index < n:
            raise self.error(f"shard: index must be in [0, num_shards), got index {index} of {n} shards")
        return lambda: itertools.islice(make(), index, None, n)

    def _make_cache(self, spec):
        make, kept = self.make(spec["input"]), []
        done = []

        def elements():
            if done:
                yield from kept
                return
            kept.clear()
            for e in make():
                kept.append(e)
                yield e
            done.append(True)

        return elements

    def _make_padded_batch(self, spec):
        make, size, drop = self.make(spec["input"]), self.scalar(spec, "batch_size"), spec["drop_remainder"]
        if size <= 0:
            raise self.error(f"batch_size must be greater than zero, got {size}")
        shapes, pads = spec["padded_shapes"], [self.leaves[i] for i in spec["padding_values"]]

        def batches():
            it = make()
            while True:
                chunk = list(_take(it, size))
                if not chunk or (drop and len(chunk) < size):
                    return
                yield tuple(
                    self._padded([e[i] for e in chunk], shapes[i], pads[i], i) for i in range(len(chunk[0]))
                )

        return batches

    def _padded(self, values, shape, pad, component):
        values = [np.asarray(v) for v in values]
        rank = values[0].ndim
        if rank == 0:
            return self._stack(values, component)
        if shape is not None and len(shape) != rank:
            raise self.error(f"padded_batch: component {component} has rank {rank}, its padded shape {shape}")
        longest = [max(v.shape[d] for v in values) for d in range(rank)]
        target = [longest[d] if shape is None or shape[d] is None else shape[d] for d in range(rank)]
        for v in values:
            if any(n > t for n, t in zip(v.shape, target)):
                raise self.error(
                    f"padded_batch: an element of shape {list(v.shape)} in component {component} does not "
                    f"fit the padded shape {target}"
                )
        out = np.full((len(values), *target), pad, dtype=values[0].dtype)
        for k, v in enumerate(values):
            out[(k, *(slice(0, n) for n in v.shape))] = v
        return out

    # -- files ---------------------------------------------------------------------------------------
    def filenames(self, spec):
        names = self.leaves[spec["filenames"]]
        return [
            n.decode() if isinstance(n, bytes) else str(n) for n in np.asarray(names, dtype=object).ravel()
        ]

    def opened(self, name, compression):
        try:
            if compression == "GZIP":
                return gzip.open(name, "rb")
            raw = open(name, "rb")  # noqa: SIM115 - closed by the generator that reads it
            return _ZlibReader(raw) if compression == "ZLIB" else raw
        except OSError as e:
            raise file_errors.from_os_error(e, self.node_name, None, f"reading {name}") from None

    def _make_text_lines(self, spec):
        names, compression = self.filenames(spec), spec["compression"]

        def lines():
            for name in names:
                with self.opened(name, compression) as f:
                    for line in f:
                        yield (np.array(line.rstrip(b"\n").rstrip(b"\r"), dtype=object),)

        return lines

    def _make_fixed_length_records(self, spec):
        names, compression = self.filenames(spec), spec["compression"]
        record, header, footer = (
            self.scalar(spec, k) for k in ("record_bytes", "header_bytes", "footer_bytes")
        )
        if record <= 0:
            raise self.error(f"FixedLengthRecordDataset: record_bytes must be > 0, got {record}")

        def records():
            for name in names:
                with self.opened(name, compression) as f:
                    data = f.read()
                body = data[header : len(data) - footer]
                for start in range(0, len(body) - record + 1, record):
                    yield (np.array(body[start : start + record], dtype=object),)

        return records

    def _make_tfrecords(self, spec):
        from nbdist.platform import tf_record  # noqa: PLC0415 - the TFRecord framing

        names, compression = self.filenames(spec), spec["compression"]

        def records():
            for name in names:
                for data in tf_record.tf_record_iterator(name, compression or None):
                    yield (np.array(data, dtype=object),)

        return records


class _ZlibReader:
    """A file of one zlib stream, read as a file (TFRecord's ZLIB compression)."""

    def __init__(self, raw):
        self.raw, self.data = raw, None

    def read(self, n=-1):
        if self.data is None:
            self.data = zlib.decompress(self.raw.read())
            self.pos = 0
        end = len(self.data) if n < 0 else self.pos + n
        out, self.pos = self.data[self.pos : end], min(end, len(self.data))
        return out

    def __iter__(self):
        return iter(self.read().splitlines(keepends=True))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.raw.close()


def _interleave(outer, inner_of, cycle, block):
    """TF's interleave order (its InterleaveDatasetOp): `cycle` slots visited in turn, `block`
    elements from each; an empty slot opens the next outer element's dataset when visited, and
    an exhausted one empties its slot and passes the turn on."""
    slots, open_, index, produced, end_of_input = [None] * cycle, 0, 0, 0, False
    while not end_of_input or open_ > 0:
        it = slots[index]
        if it is not None:
            e = next(it, _END)
            if e is _END:
                slots[index], open_ = None, open_ - 1
                index, produced = (index + 1) % cycle, 0
                continue
            produced += 1
            if produced == block:
                index, produced = (index + 1) % cycle, 0
            yield e
        elif not end_of_input:
            e = next(outer, _END)
            if e is _END:
                end_of_input = True
            else:
                slots[index], open_ = inner_of(e), open_ + 1
        else:
            index, produced = (index + 1) % cycle, 0


_END = object()


def _take(it, count):
    if count < 0:
        yield from it
        return
    for _, e in zip(range(count), it):
        yield e


def _skip(it, count):
    if count < 0:
        return
    for _ in zip(range(count), it):
        pass
    yield from it


def _repeat(make, count):
    epoch = 0
    while count < 0 or epoch < count:
        empty = True
        for e in make():
            empty = False
            yield e
        epoch += 1
        if empty:  # an empty input repeated for ever is empty, not a hang
            return


def _shuffle(it, size, rng):
    """TF's shuffle: fill a buffer of `size`, emit a random slot and refill it from the input."""
    buffer = []
    for e in it:
        buffer.append(e)
        if len(buffer) == size:
            break
    for e in it:
        i = int(rng.integers(len(buffer)))
        yield buffer[i]
        buffer[i] = e
    while buffer:
        i = int(rng.integers(len(buffer)))
        buffer[i], buffer[-1] = buffer[-1], buffer[i]
        yield buffer.pop()
