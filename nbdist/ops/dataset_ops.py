"""`tf.data.Dataset`: input pipelines recorded as plain data, run by an iterator resource.

A `Dataset` records nothing in the graph by itself. When an iterator is made from it, the
pipeline becomes a *spec*: nested plain data (``{"op": "batch", "input": {...},
"batch_size": 2}``) whose tensors are *leaves*, referenced by position. The spec travels as
an attr of the iterator's ops in the GraphDef (msgpack, never pickle; leaf values are
inputs of ``MakeIterator``, or constants inlined in a one-shot iterator's attrs), and the
task that holds the iterator runs it (`nbdist.ops.dataset_runner`, on numpy arrays). See
`nbdist.ops.iterator_ops` for the iterator resource and its ops, `nbdist.ops.element_spec`
for an element's structure, dtypes and shapes.

Elements are a tensor, a tuple or a dict of tensors (nested), as in TF; a Python list is
one tensor. `map`, `filter`, `flat_map`, `interleave` and `apply` take Python functions,
which would need tracing into the graph: they raise `NotImplementedError`.
"""

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import iterator_ops
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.element_spec import ElementSpec, flatten, map_structure, pack_as
from nbdist.ops.random_ops import get_seed

# -- the Dataset API ---------------------------------------------------------------------------------


class Dataset:
    """`tf.data.Dataset` (TF 1.x's `DatasetV1`): a pipeline of elements.

    Example::

        ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(100, seed=1).batch(32).repeat()
        features, labels = ds.make_one_shot_iterator().get_next()
    """

    def __init__(self, structure, dtypes, shapes, inputs=()):
        self.element_spec = ElementSpec(structure, dtypes, shapes)
        self._inputs = list(inputs)

    # -- TF 1.x's properties -----------------------------------------------------------------------
    @property
    def output_types(self):
        return self.element_spec.output_types

    @property
    def output_shapes(self):
        return self.element_spec.output_shapes

    @property
    def output_classes(self):
        return self.element_spec.output_classes

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
        mine, theirs = self.element_spec, dataset.element_spec
        if mine.dtypes != theirs.dtypes:
            raise TypeError(
                f"concatenate: element types differ: {self.output_types} vs {dataset.output_types}"
            )
        shapes = [a if a == b else TensorShape(None) for a, b in zip(mine.shapes, theirs.shapes)]
        return _Combined("concatenate", [self, dataset], mine.structure, mine.dtypes, shapes)

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
        return iterator_ops.one_shot_iterator(self)

    def make_initializable_iterator(self, shared_name=None):
        """An iterator to initialize with ``sess.run(iterator.initializer)`` (feeds allowed)."""
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
        structure = map_structure(lambda _: None, tensors)
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
        element = input_dataset.element_spec
        shapes = element.shapes
        if batched is not None:
            size, drop = batched
            static = size if isinstance(size, int) and drop else None
            shapes = [
                TensorShape(None) if s.ndims is None else TensorShape([static, *s.dims]) for s in shapes
            ]
        super().__init__(element.structure, element.dtypes, shapes, [input_dataset])
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
        specs = [d.element_spec for d in inner]
        structure = pack_as(map_structure(lambda _: None, datasets), [e.structure for e in specs])
        dtypes = [t for e in specs for t in e.dtypes]
        shapes = [s for e in specs for s in e.shapes]
        super().__init__("zip", inner, structure, dtypes, shapes)
