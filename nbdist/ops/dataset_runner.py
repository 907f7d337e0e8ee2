"""Running a `tf.data` pipeline spec (`nbdist.ops.dataset_ops`) on numpy arrays, on the task
that holds its iterator (`nbdist.ops.iterator_ops`): sources, batch, repeat, take, skip,
shuffle, zip and concatenate as Python generators.
"""

import numpy as np

from nbdist import errors


def elements(spec, leaves, node_name=None):
    """A Python iterator over the elements (tuples of numpy arrays) of a pipeline spec.

    Raises (while iterating):
        InvalidArgumentError: a bad argument (negative batch size, rows of different sizes,
            a batch of differently shaped elements), naming the iterator's node.
    """
    return _Runner(leaves, node_name).make(spec)()


class _Runner:
    def __init__(self, leaves, node_name):
        self.leaves = [np.asarray(v) for v in leaves]
        self.node_name = node_name

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
