"""Flattening `Session.run` fetches and feeds, and rebuilding the same structure.

Fetches may be a tensor, op, variable, `IndexedSlices`, `SparseTensor` or name, or any
nesting of lists, tuples, namedtuples and dicts of them; results come back in the same
structure. Ops (targets) come back as ``None``, an `IndexedSlices` as an
`IndexedSlicesValue`, a `SparseTensor` as a `SparseTensorValue`.
"""

import collections

import numpy as np

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import Operation, Tensor, graph_element
from nbdist.ops.indexed_slices import IndexedSlices, IndexedSlicesValue
from nbdist.ops.session_ops import wrap_fetched_handle
from nbdist.ops.sparse_tensor import SparseTensor, SparseTensorValue


class FetchMapper:
    """Splits nested fetches into unique tensor names and target op names."""

    def __init__(self, graph, fetches):
        self.graph = graph
        self.tensors = []  # unique Tensors to fetch
        self.targets = []  # unique Operations to run
        self._index = {}
        self._structure = self._flatten(fetches)

    def _flatten(self, f):
        if isinstance(f, collections.defaultdict):
            return ("defaultdict", f.default_factory, [(k, self._flatten(v)) for k, v in f.items()])
        if isinstance(f, dict):
            return (type(f), [(k, self._flatten(v)) for k, v in f.items()])
        if isinstance(f, tuple) and hasattr(f, "_fields"):
            return ("namedtuple", type(f), [self._flatten(v) for v in f])
        if isinstance(f, (list, tuple)):
            return (type(f), [self._flatten(v) for v in f])
        if f is None:
            raise TypeError("Session.run: fetch argument None is not a tensor or op")
        if isinstance(f, IndexedSlices):  # comes back as an IndexedSlicesValue, as in TF
            parts = [f.values, f.indices] + ([] if f.dense_shape is None else [f.dense_shape])
            return ("indexed_slices", [self._flatten(t) for t in parts])
        if isinstance(f, SparseTensor):  # comes back as a SparseTensorValue, as in TF
            return ("sparse_tensor", [self._flatten(t) for t in (f.indices, f.values, f.dense_shape)])
        try:
            element = self.graph.as_graph_element(f)
        except KeyError as e:  # a name not in the graph: TF's Session.run says ValueError, for every form
            reason = e.args[0] if e.args else e
            raise ValueError(
                f'Argument `fetch` = {f} cannot be interpreted as a Tensor. ("{reason}")'
            ) from None
        except (TypeError, ValueError) as e:
            raise type(e)(f"Session.run: cannot interpret fetch {f!r}: {e}") from None
        if isinstance(element, Operation):
            if element not in self._index:
                self._index[element] = None
                self.targets.append(element)
            return ("op",)
        if element not in self._index:
            self._index[element] = len(self.tensors)
            self.tensors.append(element)
        if element.op.type == "GetSessionHandle":  # comes back as a TensorHandle, as in TF
            return ("session_handle", self._index[element], element)
        return ("tensor", self._index[element])

    def build(self, values, session=None):
        """The fetches' structure filled with `values` (`session`: the owner of fetched handles)."""
        return self._build(self._structure, values, session)

    def _build(self, s, values, session=None):
        kind = s[0]
        if kind == "op":
            return None
        if kind == "tensor":
            return _as_result(values[s[1]])
        if kind == "session_handle":
            return wrap_fetched_handle(_as_result(values[s[1]]), s[2], session)
        if kind == "indexed_slices":
            parts = [self._build(c, values, session) for c in s[1]]
            return IndexedSlicesValue(*parts, *([None] * (3 - len(parts))))
        if kind == "sparse_tensor":
            return SparseTensorValue(*[self._build(c, values, session) for c in s[1]])
        if kind == "defaultdict":
            return collections.defaultdict(s[1], ((k, self._build(c, values, session)) for k, c in s[2]))
        if kind == "namedtuple":
            return s[1](*[self._build(c, values, session) for c in s[2]])
        if isinstance(kind, type) and issubclass(kind, dict):
            return kind((k, self._build(c, values, session)) for k, c in s[1])
        return kind(self._build(c, values, session) for c in s[1])


def _as_result(value):
    """0-d arrays come back as numpy scalars (``np.float32``, ``bytes``), as in TF."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return value[()]
    return value


_SIMPLE_FETCHES = (Tensor, Operation, str)


def fetch_key(fetches):
    """A hashable key for `fetches` made only of tensors, ops and names (alone, or in one
    list, tuple or dict), else None: a session maps such fetches once (`FetchMapper` per
    key), as a training loop runs the same ones at every step."""
    kind = type(fetches)
    if kind is list or kind is tuple:
        if all(isinstance(f, _SIMPLE_FETCHES) for f in fetches):
            return (kind, tuple(fetches))
        return None
    if kind is dict:
        try:
            if all(isinstance(f, _SIMPLE_FETCHES) for f in fetches.values()):
                return (dict, tuple(fetches.items()))
        except TypeError:  # an unhashable key
            return None
        return None
    return fetches if isinstance(fetches, _SIMPLE_FETCHES) else None


class FeedError(errors.InvalidArgumentError, ValueError):
    """A bad feed: InvalidArgumentError (TF's class) that is also a ValueError."""


class FeedCache:
    """What a session learns once about its feeds: the tensor each key names, and the array
    shapes found compatible with each tensor's static shape (a training loop feeds the same
    placeholders with the same shapes at every step)."""

    MAX_ENTRIES = 4096  # a program feeding ever new shapes starts over past this

    def __init__(self):
        self.tensors = {}  # feed key (a Tensor or a name) -> Tensor
        self.shapes = set()  # (Tensor, shape tuple) already checked

    def trim(self):
        if len(self.tensors) + len(self.shapes) > self.MAX_ENTRIES:
            self.tensors.clear()
            self.shapes.clear()


def normalize_feeds(graph, feed_dict, cache=None):
    """``{Tensor: np.ndarray}`` checked against each tensor's dtype and static shape.

    Args:
        cache: the session's `FeedCache` (None: resolve and check everything).

    Raises:
        FeedError: naming the tensor and both shapes (or dtypes).
    """
    out = {}
    cache = FeedCache() if cache is None else cache
    cache.trim()
    for key, value in _sparse_feeds(feed_dict or {}):
        cacheable = isinstance(key, (Tensor, str))
        tensor = cache.tensors.get(key) if cacheable else None
        if tensor is None:
            tensor = _feed_tensor(graph, key)
            if cacheable:
                cache.tensors[key] = tensor
        out[tensor] = _check_feed(tensor, value, cache.shapes)
    return out


def _sparse_feeds(feed_dict):
    """`feed_dict`'s items, a `SparseTensor` key's value (a `SparseTensorValue`, or an
    ``(indices, values, dense_shape)`` triple) fed to its three tensors, as TF's."""
    for key, value in feed_dict.items():
        parts = [getattr(key, attr, None) for attr in ("indices", "values", "dense_shape")]
        if isinstance(key, Tensor) or not all(isinstance(p, Tensor) for p in parts):
            yield key, value
            continue
        if not isinstance(value, (tuple, list)) or len(value) != 3:
            raise TypeError(
                f"feed_dict key {key!r} is a SparseTensor: feed it a tf.SparseTensorValue (or an "
                f"(indices, values, dense_shape) tuple), not {type(value).__name__}"
            )
        yield from zip(parts, value, strict=True)


def _feed_tensor(graph, key):
    key = graph_element(key)
    try:
        return graph.as_graph_element(key, allow_operation=False)
    except (TypeError, KeyError, ValueError) as e:
        raise TypeError(f"feed_dict key {key!r} is not a tensor of the session's graph: {e}") from None


def _check_feed(tensor, value, checked_shapes):
    dtype = tensor.dtype
    if isinstance(value, Tensor):
        raise TypeError(
            f"the value of a feed cannot be a tf.Tensor ({value.name}); feed numpy arrays, "
            "numbers, strings or lists"
        )
    try:
        if dtype is _dtypes.string:
            arr = np.asarray(value, dtype=object)
        else:
            arr = np.asarray(value)
            if arr.dtype.kind in "OSU":
                raise ValueError("not numeric")
            if arr.dtype.kind == "f" and dtype.is_integer:
                raise ValueError(f"float values for an {dtype.name} tensor")
            arr = arr.astype(dtype.np, copy=False)
    except (TypeError, ValueError) as e:
        raise FeedError(
            tensor.op.name,
            None,
            f"cannot feed {type(value).__name__} value to tensor {tensor.name!r} of dtype {dtype.name}: {e}",
        ) from None
    if (tensor, arr.shape) in checked_shapes:
        return arr
    if not tensor.shape.is_compatible_with(arr.shape):
        raise FeedError(
            tensor.op.name,
            None,
            f"Cannot feed value of shape {arr.shape} for tensor {tensor.name!r}, which has "
            f"shape {tensor.shape}",
        )
    checked_shapes.add((tensor, arr.shape))
    return arr
