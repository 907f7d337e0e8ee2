"""`tf.data.Dataset`: input pipelines recorded as plain data, run by an iterator resource.

A `Dataset` records nothing in the graph by itself. When an iterator is made from it, the
pipeline becomes a *spec*: nested plain data (``{"op": "batch", "input": {...},
"batch_size": 2}``) whose tensors are *leaves*, referenced by position. The spec travels as
an attr of the iterator's ops in the GraphDef (msgpack, never pickle; leaf values are
inputs of ``MakeIterator``, or constants inlined in a one-shot iterator's attrs), and the
task that holds the iterator runs it with `elements` (here, on numpy arrays). See
`nbdist.ops.iterator_ops` for the iterator resource and its ops.

Elements are a tensor, a tuple or a dict of tensors (nested), as in TF; a Python list is
one tensor. `map`, `filter`, `flat_map`, `interleave` and `apply` take Python functions,
which would need tracing into the graph: they raise `NotImplementedError`.
"""

import numpy as np

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import Tensor
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.random_ops import get_seed

# -- element structures (a tensor, or tuples / dicts of them) -------------------------------------


def flatten(structure):
    """The leaves of a structure of tuples and dicts (dicts in sorted key order, as TF's nest)."""
    if isinstance(structure, dict):
        return [leaf for k in sorted(structure) for leaf in flatten(structure[k])]
    if isinstance(structure, tuple):
        return [leaf for item in structure for leaf in flatten(item)]
    return [structure]


def pack_as(structure, leaves):
    """`leaves` in the shape of `structure` (the inverse of `flatten`)."""
    it = iter(leaves)

    def build(s):
        if isinstance(s, dict):
            return {k: build(s[k]) for k in sorted(s)}
        if isinstance(s, tuple):
            items = [build(x) for x in s]
            return type(s)(*items) if hasattr(s, "_fields") else tuple(items)
        return next(it)

    return build(structure)


def _map_structure(fn, structure):
    return pack_as(structure, [fn(x) for x in flatten(structure)])


# -- the Dataset API ---------------------------------------------------------------------------------


class Dataset:
    """`tf.data.Dataset` (TF 1.x's `DatasetV1`): a pipeline of elements.

    Example::

        ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(100, seed=1).batch(32).repeat()
        features, labels = ds.make_one_shot_iterator().get_next()
    """

    def __init__(self, structure, dtypes, shapes, inputs=()):
        self._structure = structure  # element structure with None leaves
        self._dtypes = list(dtypes)
        self._shapes = [TensorShape(s) for s in shapes]
        self._inputs = list(inputs)

    # -- TF 1.x's properties -----------------------------------------------------------------------
    @property
    def output_types(self):
        return pack_as(self._structure, self._dtypes)

    @property
    def output_shapes(self):
        return pack_as(self._structure, self._shapes)

    @property
    def output_classes(self):
        return pack_as(self._structure, [Tensor] * len(self._dtypes))

    # -- sources ---------------------------------------------------------------------------------------
    @staticmethod
    def from_tensors(tensors):
        """One element: `tensors` (a tensor or a tuple / dict of them)."""
        return _TensorsDataset(tensors, sliced=False)

    @staticmethod
    def from_tensor_slices(tensors):
        """One element per row of `tensors` (every component must have the same first dimension)."""
        return _TensorsDataset(tensors, sliced=True)

    @staticmethod
    def range(*args):
        """`range(stop)`, `range(start, stop)` or `range(start, stop, step)`: int64 scalars."""
        if not 1 <= len(args) <= 3:
            raise ValueError(f"Dataset.range takes 1 to 3 arguments (start, stop, step), got {len(args)}")
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (*args, 1)[:3]
        return _RangeDataset(start, stop, step)

    @staticmethod
    def zip(datasets):
        """Elements of several datasets side by side (a tuple or dict of datasets)."""
        return _ZipDataset(datasets)

    # -- transformations ----------------------------------------------------------------------------
    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=None):
        """Shuffles with a buffer of `buffer_size` elements (TF's algorithm; not TF's random order)."""
        return _ShuffleDataset(
            self, buffer_size, seed, True if reshuffle_each_iteration is None else reshuffle_each_iteration
        )

    def batch(self, batch_size, drop_remainder=False):
        return _UnaryDataset(
            self,
            "batch",
            {"batch_size": _scalar(batch_size, _dtypes.int64, "batch_size")},
            {"drop_remainder": bool(drop_remainder)},
            batched=(batch_size, drop_remainder),
        )

    def repeat(self, count=None):
        """Repeats `count` times (None or -1: for ever)."""
        return _UnaryDataset(
            self, "repeat", {"count": _scalar(-1 if count is None else count, _dtypes.int64, "count")}
        )

    def take(self, count):
        return _UnaryDataset(self, "take", {"count": _scalar(count, _dtypes.int64, "count")})

    def skip(self, count):
        return _UnaryDataset(self, "skip", {"count": _scalar(count, _dtypes.int64, "count")})

    def prefetch(self, buffer_size):
        """Accepted; elements are produced when asked for (nothing runs ahead)."""
        return self

    def concatenate(self, dataset):
        if self._dtypes != dataset._dtypes:
            raise TypeError(
                f"concatenate: element types differ: {self.output_types} vs {dataset.output_types}"
            )
        shapes = [a if a == b else TensorShape(None) for a, b in zip(self._shapes, dataset._shapes)]
        return _Combined("concatenate", [self, dataset], self._structure, self._dtypes, shapes)

    def map(self, *args, **kwargs):
        raise _needs_tracing("map")

    def filter(self, *args, **kwargs):
        raise _needs_tracing("filter")

    def flat_map(self, *args, **kwargs):
        raise _needs_tracing("flat_map")

    def interleave(self, *args, **kwargs):
        raise _needs_tracing("interleave")

    def apply(self, *args, **kwargs):
        raise _needs_tracing("apply")

    # -- iterators (TF 1.x) ---------------------------------------------------------------------------
    def make_one_shot_iterator(self):
        """An iterator initialized on first use; the pipeline's tensors must be constants."""
        from nbdist.ops import iterator_ops  # noqa: PLC0415 - iterator_ops imports this module

        return iterator_ops.one_shot_iterator(self)

    def make_initializable_iterator(self, shared_name=None):
        """An iterator to initialize with ``sess.run(iterator.initializer)`` (feeds allowed)."""
        from nbdist.ops import iterator_ops  # noqa: PLC0415

        return iterator_ops.Iterator.from_dataset(self, shared_name)

    # -- the spec -----------------------------------------------------------------------------------------
    def to_spec(self, leaves):
        """This pipeline as plain data; appends its tensors to `leaves` (referenced by position)."""
        raise NotImplementedError

    def __repr__(self):
        return f"<{type(self).__name__} types: {self.output_types}, shapes: {self.output_shapes}>"


def _needs_tracing(method):
    return NotImplementedError(
        f"tf.data.Dataset.{method} is not supported by nbdist: it runs a Python function, which would "
        "have to be traced into the graph. Prepare the data with numpy (or graph ops) before "
        "from_tensor_slices; docs/api.md lists what tf.data supports"
    )


def _scalar(value, dtype, what):
    t = convert_to_tensor(value, dtype=dtype, name=what)
    if t.shape.ndims not in (None, 0):
        raise ValueError(f"{what} must be a scalar, got shape {t.shape}")
    return t


def _leaf(leaves, tensor):
    leaves.append(tensor)
    return len(leaves) - 1


class _TensorsDataset(Dataset):
    def __init__(self, tensors, sliced):
        structure = _map_structure(lambda _: None, tensors)
        components = [convert_to_tensor(t, name="component") for t in flatten(tensors)]
        shapes = [t.shape for t in components]
        if sliced:
            for t in components:
                if t.shape.ndims == 0:
                    raise ValueError(
                        f"from_tensor_slices: component {t.name} is a scalar; it has no rows to slice"
                    )
            rows = {t.shape.dims[0] for t in components if t.shape.ndims} - {None}
            if len(rows) > 1:
                raise ValueError(
                    f"from_tensor_slices: components have different first dimensions {sorted(rows)}"
                )
            shapes = [TensorShape(None) if s.ndims is None else TensorShape(s.dims[1:]) for s in shapes]
        super().__init__(structure, [t.dtype for t in components], shapes)
        self._components = components
        self._sliced = sliced

    def to_spec(self, leaves):
        op = "tensor_slices" if self._sliced else "tensors"
        return {"op": op, "components": [_leaf(leaves, t) for t in self._components]}


class _RangeDataset(Dataset):
    def __init__(self, start, stop, step):
        super().__init__(None, [_dtypes.int64], [TensorShape([])])
        self._args = [
            _scalar(v, _dtypes.int64, n) for v, n in ((start, "start"), (stop, "stop"), (step, "step"))
        ]

    def to_spec(self, leaves):
        return {"op": "range", **{n: _leaf(leaves, t) for n, t in zip(("start", "stop", "step"), self._args)}}


class _UnaryDataset(Dataset):
    def __init__(self, input_dataset, op, tensor_args, plain_args=None, batched=None):
        shapes = input_dataset._shapes
        if batched is not None:
            size, drop = batched
            static = size if isinstance(size, int) and drop else None
            shapes = [
                TensorShape(None) if s.ndims is None else TensorShape([static, *s.dims]) for s in shapes
            ]
        super().__init__(input_dataset._structure, input_dataset._dtypes, shapes, [input_dataset])
        self._op = op
        self._tensor_args = tensor_args
        self._plain_args = dict(plain_args or {})

    def to_spec(self, leaves):
        spec = {"op": self._op, "input": self._inputs[0].to_spec(leaves), **self._plain_args}
        spec.update({n: _leaf(leaves, t) for n, t in self._tensor_args.items()})
        return spec


class _ShuffleDataset(_UnaryDataset):
    def __init__(self, input_dataset, buffer_size, seed, reshuffle):
        super().__init__(
            input_dataset, "shuffle", {"buffer_size": _scalar(buffer_size, _dtypes.int64, "buffer_size")}
        )
        graph_seed, op_seed = get_seed(seed)
        self._plain_args = {"seed": graph_seed, "seed2": op_seed, "reshuffle": bool(reshuffle)}


class _Combined(Dataset):
    def __init__(self, op, datasets, structure, dtypes, shapes):
        super().__init__(structure, dtypes, shapes, datasets)
        self._op = op

    def to_spec(self, leaves):
        return {"op": self._op, "inputs": [d.to_spec(leaves) for d in self._inputs]}


class _ZipDataset(_Combined):
    def __init__(self, datasets):
        inner = flatten(datasets)
        if not inner or not all(isinstance(d, Dataset) for d in inner):
            raise TypeError(f"Dataset.zip takes a tuple or dict of datasets, got {datasets!r}")
        structure = pack_as(_map_structure(lambda _: None, datasets), [d._structure for d in inner])
        dtypes = [t for d in inner for t in d._dtypes]
        shapes = [s for d in inner for s in d._shapes]
        super().__init__("zip", inner, structure, dtypes, shapes)


# -- running a spec (on the task that holds the iterator) ----------------------------------------------


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
