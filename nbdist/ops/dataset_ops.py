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
one tensor. The function given to `map`, `filter`, `flat_map` or `interleave` is traced once
into a `FuncGraph` (as TF 1.x traces it), kept in the spec as a `SubgraphDef`, and run per
element on the iterator's task; outer tensors it reads are captured (they become leaves).
File sources (`TextLineDataset`, `FixedLengthRecordDataset`, `TFRecordDataset`) take their
file names as a tensor, so an initializable iterator can be fed them.
"""

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.func_graph import FuncGraph
from nbdist.graph.graph import Tensor, get_default_graph
from nbdist.graph.graph_def import SubgraphDef
from nbdist.graph.tensor_shape import TensorShape, as_shape
from nbdist.ops import dataset_options, iterator_ops
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.element_spec import ElementSpec, flatten, map_structure, pack_as
from nbdist.ops.random_ops import get_seed
from nbdist.ops.while_ops import refuse_outer_resources

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

    def shard(self, num_shards, index):
        """Every `num_shards`-th element from the `index`-th: worker `index` of `num_shards`
        reads its own part (between-graph replication)."""
        return _UnaryDataset(
            self,
            "shard",
            {
                "num_shards": _scalar(num_shards, _dtypes.int64, "num_shards"),
                "index": _scalar(index, _dtypes.int64, "index"),
            },
        )

    def cache(self, filename=""):
        """Keeps the elements of the first complete pass in memory and replays them (a `filename`
        is accepted and not written: the cache lives in the iterator's task)."""
        return _UnaryDataset(self, "cache", {})

    def padded_batch(self, batch_size, padded_shapes, padding_values=None, drop_remainder=False):
        """Batches elements of different shapes, each component padded to `padded_shapes`
        (a dimension None: the longest in the batch) with `padding_values` (zeros, or b"")."""
        element = self.element_spec
        shapes = [as_shape(s) for s in _flatten_up_to(element.structure, padded_shapes, "padded_shapes")]
        if len(shapes) != len(element.dtypes):
            raise ValueError(
                f"padded_batch: padded_shapes has {len(shapes)} components, the element {len(element.dtypes)}"
            )
        if padding_values is None:
            pads = [b"" if t == _dtypes.string else 0 for t in element.dtypes]
        else:
            pads = _flatten_up_to(element.structure, padding_values, "padding_values")
        pads = [convert_to_tensor(p, dtype=t, name="padding_value") for p, t in zip(pads, element.dtypes)]
        static = batch_size if isinstance(batch_size, int) and drop_remainder else None
        out = _UnaryDataset(
            self,
            "padded_batch",
            {"batch_size": _scalar(batch_size, _dtypes.int64, "batch_size")},
            {"drop_remainder": bool(drop_remainder), "padded_shapes": [s.dims for s in shapes]},
        )
        out.element_spec = ElementSpec(
            element.structure, element.dtypes, [TensorShape([static, *(s.dims or [])]) for s in shapes]
        )
        out.pads = pads
        return out

    def concatenate(self, dataset):
        mine, theirs = self.element_spec, dataset.element_spec
        if mine.dtypes != theirs.dtypes:
            raise TypeError(
                f"concatenate: element types differ: {self.output_types} vs {dataset.output_types}"
            )
        shapes = [a if a == b else TensorShape(None) for a, b in zip(mine.shapes, theirs.shapes)]
        return _Combined("concatenate", [self, dataset], mine.structure, mine.dtypes, shapes)

    def map(self, map_func, num_parallel_calls=None):
        """``map_func`` applied to each element (its components as arguments when it is a tuple);
        `num_parallel_calls` is accepted (elements are mapped one at a time)."""
        return _FunctionDataset(self, "map", map_func)

    def filter(self, predicate):
        """The elements for which ``predicate`` (a scalar bool tensor) is true."""
        return _FunctionDataset(self, "filter", predicate)

    def flat_map(self, map_func):
        """The elements of the datasets ``map_func`` makes of each element, one after another."""
        return _FunctionDataset(self, "flat_map", map_func)

    def interleave(self, map_func, cycle_length=None, block_length=1, num_parallel_calls=None):
        """As `flat_map`, but `cycle_length` of the datasets at a time, `block_length` elements
        from each in turn (TF's order)."""
        cycle = -1 if cycle_length is None else cycle_length
        return _FunctionDataset(
            self,
            "interleave",
            map_func,
            {
                "cycle_length": _scalar(cycle, _dtypes.int64, "cycle_length"),
                "block_length": _scalar(block_length, _dtypes.int64, "block_length"),
            },
        )

    def apply(self, transformation_func):
        """``transformation_func(self)``: a function of datasets (a `tf.data.experimental` one)."""
        result = transformation_func(self)
        if not isinstance(result, Dataset):
            raise TypeError(f"Dataset.apply: the function must return a Dataset, got {result!r}")
        return result

    # -- options and size (ops/dataset_options.py) -------------------------------------------------
    def with_options(self, options):
        """This dataset with `options` (a `tf.data.Options`) merged into its own."""
        return dataset_options.with_options(self, options)

    def options(self):
        """The `tf.data.Options` of this dataset: its inputs' merged, then its own."""
        return dataset_options.options_of(self)

    def cardinality(self):
        """The number of elements, an int64 scalar tensor: `tf.data.INFINITE_CARDINALITY` (-1)
        for a repeated dataset, `tf.data.UNKNOWN_CARDINALITY` (-2) when only running it can tell."""
        return dataset_options.cardinality(self)

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


def _flatten_up_to(structure, value, what):
    """The parts of `value` at the leaves of the element `structure` (a shape such as ``[None]``
    is one leaf, not a structure)."""
    if isinstance(structure, dict):
        if not isinstance(value, dict) or set(value) != set(structure):
            raise ValueError(f"{what} must have the element's structure {structure!r}, got {value!r}")
        return [x for k in sorted(structure) for x in _flatten_up_to(structure[k], value[k], what)]
    if isinstance(structure, tuple):
        if not isinstance(value, (tuple, list)) or len(value) != len(structure):
            raise ValueError(f"{what} must have the element's structure {structure!r}, got {value!r}")
        return [x for s, v in zip(structure, value) for x in _flatten_up_to(s, v, what)]
    return [value]


def _tuples(structure):
    """`structure` with its lists as tuples (TF reads a list in a structure as a tuple)."""
    if isinstance(structure, list):
        return tuple(_tuples(x) for x in structure)
    if isinstance(structure, tuple) and not hasattr(structure, "_fields"):
        return tuple(_tuples(x) for x in structure)
    if isinstance(structure, dict):
        return {k: _tuples(v) for k, v in structure.items()}
    return structure


class _Traced:
    """A Python function of a dataset's elements, traced once into a `FuncGraph`."""

    def __init__(self, fn, element, what):
        if not callable(fn):
            raise TypeError(f"{what} needs a function, got {fn!r}")
        graph = FuncGraph(get_default_graph(), what)
        with graph.as_default():
            args = [
                graph.add_placeholder(t, s, f"args_{i}")
                for i, (t, s) in enumerate(zip(element.dtypes, element.shapes))
            ]
            packed = pack_as(element.structure, args)
            result = fn(*packed) if type(packed) is tuple else fn(packed)  # TF unpacks a plain tuple only
        self.graph, self.args, self.result, self.what = graph, args, result, what

    def tensors(self, values):
        """`values` (a structure of tensors or Python values) as tensors of the function's graph."""
        out = []
        with self.graph.as_default():
            for v in values:
                t = convert_to_tensor(v)
                out.append(self.graph.capture(t) if t.graph is not self.graph else t)
        return out

    def spec(self, outputs, leaves):
        """The function as plain data for the spec; its captures become `leaves`."""
        refuse_outer_resources(self.graph, self.what)
        captured = list(self.graph.captures)
        subgraph = SubgraphDef.of(
            self.graph, [*self.args, *(self.graph.captures[t] for t in captured)], outputs
        )
        return {"fn": subgraph.to_dict(), "captures": [_leaf(leaves, t) for t in captured]}


class _FunctionDataset(Dataset):
    """`map`, `filter`, `flat_map` and `interleave`: a traced function of each element."""

    def __init__(self, input_dataset, op, fn, tensor_args=None):
        what = f"function of Dataset.{op}"
        traced = _Traced(fn, input_dataset.element_spec, what)
        self._inner = None
        if op in ("flat_map", "interleave"):
            if not isinstance(traced.result, Dataset):
                raise TypeError(f"Dataset.{op}: the function must return a Dataset, got {traced.result!r}")
            self._inner = traced.result
            inner_leaves = []
            self._inner_spec = self._inner.to_spec(inner_leaves)
            outputs = traced.tensors(inner_leaves)
            element = self._inner.element_spec
            structure, dtypes, shapes = element.structure, element.dtypes, element.shapes
        elif op == "filter":
            (outputs,) = [traced.tensors(flatten(_tuples(traced.result)))]
            if (
                len(outputs) != 1
                or outputs[0].dtype != _dtypes.bool
                or outputs[0].shape.ndims not in (None, 0)
            ):
                raise ValueError(
                    f"Dataset.filter: the predicate must return one scalar bool tensor, got {traced.result!r}"
                )
            element = input_dataset.element_spec
            structure, dtypes, shapes = element.structure, element.dtypes, element.shapes
        else:
            result = _tuples(traced.result)
            if result is None:
                raise ValueError("Dataset.map: the function returned None; it must return tensors")
            outputs = traced.tensors(flatten(result))
            structure = map_structure(lambda _: None, result)
            dtypes, shapes = [t.dtype for t in outputs], [t.shape for t in outputs]
        super().__init__(structure, dtypes, shapes, [input_dataset])
        self._op, self._traced, self._outputs = op, traced, outputs
        self._tensor_args = dict(tensor_args or {})

    def to_spec(self, leaves):
        spec = {
            "op": self._op,
            "input": self._inputs[0].to_spec(leaves),
            **self._traced.spec(self._outputs, leaves),
        }
        if self._inner is not None:
            spec["inner"] = self._inner_spec
        spec.update({n: _leaf(leaves, t) for n, t in self._tensor_args.items()})
        return spec


class _FileDataset(Dataset):
    """`TextLineDataset`, `FixedLengthRecordDataset`, `TFRecordDataset`: records of files,
    string scalars, the files read in order (their names a string tensor, fed or constant)."""

    def __init__(self, op, filenames, compression_type=None, **sizes):
        super().__init__(None, [_dtypes.string], [TensorShape([])])
        names = convert_to_tensor(filenames, dtype=_dtypes.string, name="filenames")
        if names.shape.ndims not in (None, 0, 1):
            raise ValueError(
                f"{op}: filenames must be a scalar or a vector of strings, got shape {names.shape}"
            )
        self._op = op
        self._names = names
        self._plain = {"compression": _compression(compression_type)}
        self._sizes = {k: _scalar(v, _dtypes.int64, k) for k, v in sizes.items()}

    def to_spec(self, leaves):
        spec = {"op": self._op, "filenames": _leaf(leaves, self._names), **self._plain}
        spec.update({k: _leaf(leaves, t) for k, t in self._sizes.items()})
        return spec


def _compression(kind):
    kind = "" if kind is None else kind.decode() if isinstance(kind, bytes) else kind
    if isinstance(kind, Tensor):
        raise TypeError('compression_type must be a Python string ("", "GZIP" or "ZLIB")')
    if kind not in ("", "GZIP", "ZLIB"):
        raise ValueError(f'compression_type must be "", "GZIP" or "ZLIB", got {kind!r}')
    return kind


class TextLineDataset(_FileDataset):
    """`tf.data.TextLineDataset`: the lines of the files (without their line ends)."""

    def __init__(self, filenames, compression_type=None, buffer_size=None):
        super().__init__("text_lines", filenames, compression_type)


class FixedLengthRecordDataset(_FileDataset):
    """`tf.data.FixedLengthRecordDataset`: `record_bytes`-long records after a `header_bytes`
    header, before a `footer_bytes` footer, of each file."""

    def __init__(
        self,
        filenames,
        record_bytes,
        header_bytes=None,
        footer_bytes=None,
        buffer_size=None,
        compression_type=None,
    ):
        super().__init__(
            "fixed_length_records",
            filenames,
            compression_type,
            record_bytes=record_bytes,
            header_bytes=header_bytes or 0,
            footer_bytes=footer_bytes or 0,
        )


class TFRecordDataset(_FileDataset):
    """`tf.data.TFRecordDataset`: the records of TFRecord files (TF's framing, CRCs checked)."""

    def __init__(self, filenames, compression_type=None, buffer_size=None, num_parallel_reads=None):
        super().__init__("tfrecords", filenames, compression_type)


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
        if getattr(self, "pads", None) is not None:
            spec["padding_values"] = [_leaf(leaves, t) for t in self.pads]
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
