"""`tf.data.Options` / `ThreadingOptions`, `Dataset.with_options` / `options`, and
`Dataset.cardinality` with its constants `tf.data.INFINITE_CARDINALITY` / `UNKNOWN_CARDINALITY`
(and `tf.data.AUTOTUNE`, which `num_parallel_calls` and `prefetch` accept).

Options are TF's typed records: an unknown property or a value of the wrong type is refused in
TF's words, `merge` lets the later options' set values win, and a dataset's options are those
of its inputs merged with its own (they travel down the pipeline, as TF's). nbdist makes
elements one at a time on the iterator's task, deterministically, so the options change nothing
in how it runs; they are kept for the programs that set and read them.

`cardinality()` is the `DatasetCardinality` op: the number of elements, computed when it runs
from the pipeline's spec and its tensors' values (a fed `from_tensor_slices` is counted), with
TF 1.x's rules: -1 (infinite) for `repeat()`, -2 (unknown) after `map` (TF 1.x's map does
not preserve cardinality), `filter`, `flat_map`, `interleave` or a file source.
"""

import copy

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry

AUTOTUNE = -1
INFINITE_CARDINALITY = -1
UNKNOWN_CARDINALITY = -2

__all__ = ["AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "Options", "ThreadingOptions"]


class _OptionsRecord:
    """A record of typed properties, each None until set (TF's `OptionsBase`)."""

    _PROPERTIES = {}  # name: (type or a record class, docstring)

    def __init__(self):
        object.__setattr__(self, "_option_values", {})

    def __getattr__(self, name):
        properties = type(self)._PROPERTIES
        if name not in properties:
            raise AttributeError(f"{type(self).__name__} has no property {name!r}")
        kind = properties[name][0]
        values = self.__dict__["_option_values"]
        if name not in values and isinstance(kind, type) and issubclass(kind, _OptionsRecord):
            values[name] = kind()  # nested records exist from the start, as TF's
        return values.get(name)

    def __setattr__(self, name, value):
        properties = type(self)._PROPERTIES
        if name not in properties:
            raise AttributeError(f"Cannot set the property {name} on {type(self).__name__}.")
        kind = properties[name][0]
        if value is not None and kind is not None and not isinstance(value, kind):
            raise TypeError(f'Property "{name}" must be of type {kind}, got: {value!r} (type: {type(value)})')
        self._option_values[name] = value

    def __eq__(self, other):
        return type(self) is type(other) and self._set() == other._set()

    def __hash__(self):
        return id(self)

    def _set(self):
        """The properties set, nested records by their own set properties."""
        out = {}
        for name, value in self._option_values.items():
            value = value._set() if isinstance(value, _OptionsRecord) else value
            if value not in (None, {}):
                out[name] = value
        return out

    def merge(self, options):
        """A new record: this one's values, then `options`' set values over them."""
        merged = copy.deepcopy(self)
        for name, value in options._option_values.items():
            if isinstance(value, _OptionsRecord):
                merged._option_values[name] = getattr(merged, name).merge(value)
            elif value is not None:
                merged._option_values[name] = value
        return merged

    def __repr__(self):
        return f"{type(self).__name__}({self._set()})"


class ThreadingOptions(_OptionsRecord):
    """`tf.data.ThreadingOptions`: the threads a pipeline may use (recorded; nbdist's pipelines
    run on the iterator's task, one element at a time)."""

    _PROPERTIES = {
        "max_intra_op_parallelism": (int, "the largest intra-op parallelism of the pipeline's ops"),
        "private_threadpool_size": (int, "the size of a private thread pool for the pipeline"),
    }


class OptimizationOptions(_OptionsRecord):
    """`Options().experimental_optimization`: the graph rewrites TF may apply (recorded)."""

    _PROPERTIES = dict.fromkeys(
        (
            "apply_default_optimizations",
            "filter_fusion",
            "map_and_batch_fusion",
            "map_and_filter_fusion",
            "map_fusion",
            "map_parallelization",
            "noop_elimination",
            "parallel_batch",
            "shuffle_and_repeat_fusion",
        ),
        (bool, "a tf.data graph rewrite"),
    )


class Options(_OptionsRecord):
    """`tf.data.Options`: settings of a pipeline, given with `Dataset.with_options`."""

    _PROPERTIES = {
        "dataset_name": (str, "a name for the dataset"),
        "deterministic": (bool, "whether elements come in a deterministic order (nbdist's always do)"),
        "experimental_deterministic": (bool, "the older name of deterministic"),
        "experimental_external_state_policy": (None, "what to do with external state when saving"),
        "experimental_optimization": (OptimizationOptions, "graph rewrites"),
        "experimental_slack": (bool, "whether to add slack to the final prefetch"),
        "threading": (ThreadingOptions, "thread pools"),
    }


def with_options(dataset, options):
    """`Dataset.with_options`: a dataset like `dataset` whose own options are `options` merged in."""
    if not isinstance(options, Options):
        raise TypeError(f"with_options takes a tf.data.Options, got {options!r}")
    out = copy.copy(dataset)
    out._own_options = dataset_own_options(dataset).merge(options)
    return out


def dataset_own_options(dataset):
    return getattr(dataset, "_own_options", None) or Options()


def options_of(dataset):
    """`Dataset.options`: its inputs' options merged, then its own."""
    merged = Options()
    for source in getattr(dataset, "_inputs", ()):
        if hasattr(source, "element_spec"):
            merged = merged.merge(options_of(source))
    return merged.merge(dataset_own_options(dataset))


# -- cardinality ---------------------------------------------------------------------------------
def _count(spec, leaves):
    op, scalar = spec["op"], (lambda key: int(np.asarray(leaves[spec[key]])))
    if op == "tensors":
        return 1
    if op == "tensor_slices":
        return int(np.shape(leaves[spec["components"][0]])[0])
    if op == "range":
        return len(range(scalar("start"), scalar("stop"), scalar("step") or 1))
    if op in ("zip", "concatenate"):
        counts = [_count(s, leaves) for s in spec["inputs"]]
        if UNKNOWN_CARDINALITY in counts:
            return UNKNOWN_CARDINALITY
        finite = [c for c in counts if c >= 0]
        if op == "concatenate":
            return INFINITE_CARDINALITY if len(finite) < len(counts) else sum(finite)
        return min(finite) if finite else INFINITE_CARDINALITY
    if op in ("map", "filter", "flat_map", "interleave", "text_lines", "fixed_length_records", "tfrecords"):
        return UNKNOWN_CARDINALITY
    n = _count(spec["input"], leaves)
    if op == "repeat":
        count = scalar("count")
        if count < 0:
            return 0 if n == 0 else INFINITE_CARDINALITY
        return 0 if count == 0 else (n if n < 0 else n * count)
    if op == "take":
        count = scalar("count")
        if count < 0:
            return n
        return count if n == INFINITE_CARDINALITY else (n if n < 0 else min(n, count))
    if n < 0:
        return n
    if op == "skip":
        count = scalar("count")
        return 0 if count < 0 else max(0, n - count)
    if op in ("batch", "padded_batch"):
        size = scalar("batch_size")
        return n // size if spec["drop_remainder"] else -(-n // size)
    if op == "shard":
        shards, index = scalar("num_shards"), scalar("index")
        return n // shards + (index < n % shards)
    return n  # shuffle, map, cache: one element out per element in


registry.shape("DatasetCardinality")(lambda inputs, attrs: [(_dtypes.int64, TensorShape([]))])
registry.kernel("DatasetCardinality")(
    lambda ctx, node, *leaves: np.int64(_count(node.attr["dataset"], leaves))
)
registry.no_gradient("DatasetCardinality")


def cardinality(dataset, name=None):
    """`Dataset.cardinality()`: an int64 scalar tensor, the number of elements (-1 infinite, -2
    unknown)."""
    leaves = []
    spec = dataset.to_spec(leaves)
    return registry.make_op(
        "DatasetCardinality", leaves, {"dataset": spec}, name=name or "cardinality"
    ).outputs[0]
