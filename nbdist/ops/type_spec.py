"""TF's type specs: what a value is without the value - `tf.TensorSpec`, `tf.SparseTensorSpec`,
`tf.IndexedSlicesSpec` (all `tf.TypeSpec`s) and `tf.type_spec_from_value`.

A spec is plain data (a shape, dtypes, a name): equal specs compare and hash equal, a spec is
compatible with a value or spec of its kind whose dtype is the same and whose shape is
compatible, and `most_specific_compatible_type` keeps the dimensions two specs agree on.
"""

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import Graph, Tensor
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.indexed_slices import IndexedSlices
from nbdist.ops.shape_ops import get_static_value
from nbdist.ops.sparse_tensor import SparseTensor, SparseTensorValue

__all__ = [
    "IndexedSlicesSpec",
    "NoneTensorSpec",
    "SparseTensorSpec",
    "TensorSpec",
    "TypeSpec",
    "type_spec_from_value",
]


def _shape(shape):
    try:
        return TensorShape(shape)
    except (TypeError, ValueError) as e:
        raise TypeError(
            f"Failed to convert {shape!r} to a shape: {e}. A shape should either be single dimension "
            "(e.g. 10), or an iterable of dimensions (e.g. [1, 10, None])."
        ) from None


def _common_shape(a, b):
    """The most specific shape compatible with both (unknown where they differ)."""
    if a.ndims is None or b.ndims is None or a.ndims != b.ndims:
        return TensorShape(None)
    return TensorShape([x if x == y else None for x, y in zip(a.dims, b.dims)])


class TypeSpec:
    """The base of TF's type specs (`TensorSpec`, `SparseTensorSpec`, `IndexedSlicesSpec`)."""

    __slots__ = ()
    value_type = None  # the class of the values the spec describes

    def _serialize(self):
        raise NotImplementedError

    def _dtype_and_shape_of(self, other):
        """``(dtype, shape)`` of a spec or value of this spec's kind, else None."""
        raise NotImplementedError

    def is_compatible_with(self, spec_or_value):
        """Whether `spec_or_value` (a spec or a value of this kind) has this dtype and a
        compatible shape."""
        other = self._dtype_and_shape_of(spec_or_value)
        return other is not None and other[0] == self._dtype and self._shape.is_compatible_with(other[1])

    def most_specific_compatible_type(self, other):
        """The most specific spec compatible with this one and `other`.

        Raises:
            ValueError: `other` is of another kind or dtype.
        """
        if type(other) is not type(self) or not self._same_dtypes(other):
            raise ValueError(f"No TypeSpec is compatible with both {self!r} and {other!r}")
        return self._with_shape(_common_shape(self._shape, other._shape), other)

    def _same_dtypes(self, other):
        raise NotImplementedError

    def _with_shape(self, shape, other):
        raise NotImplementedError

    def __eq__(self, other):
        return type(other) is type(self) and self._serialize() == other._serialize()

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash((type(self).__name__, self._serialize()))


class TensorSpec(TypeSpec):
    """`tf.TensorSpec(shape, dtype=tf.float32, name=None)`: a tensor's shape and dtype.

    Raises:
        TypeError: a shape or dtype that is none.
    """

    __slots__ = ("_shape", "_dtype", "_name")
    value_type = Tensor

    def __init__(self, shape, dtype=_dtypes.float32, name=None):
        self._shape = _shape(shape)
        self._dtype = _dtypes.as_dtype(dtype)
        self._name = name

    shape = property(lambda self: self._shape)
    dtype = property(lambda self: self._dtype)
    name = property(lambda self: self._name)

    @classmethod
    def from_spec(cls, spec, name=None):
        """A `TensorSpec` with `spec`'s shape and dtype (and `name`, else `spec`'s)."""
        return cls(spec.shape, spec.dtype, name or getattr(spec, "name", None))

    @classmethod
    def from_tensor(cls, tensor, name=None):
        """The spec of `tensor`, named `name` or after the tensor's op."""
        if not isinstance(tensor, Tensor):
            raise ValueError(f"`tensor` should be a tf.Tensor, got {tensor!r}")
        return cls(tensor.shape, tensor.dtype, name or tensor.op.name)

    def _serialize(self):
        return (self._shape, self._dtype, self._name)

    def _same_dtypes(self, other):
        return self._dtype == other._dtype

    def _with_shape(self, shape, other):
        return TensorSpec(shape, self._dtype, self._name if self._name == other._name else None)

    def _dtype_and_shape_of(self, other):
        if isinstance(other, (TensorSpec, Tensor)):
            return other.dtype, other.shape
        return None

    def __repr__(self):
        return f"TensorSpec(shape={self._shape}, dtype={self._dtype!r}, name={self._name!r})"


class SparseTensorSpec(TypeSpec):
    """`tf.SparseTensorSpec(shape=None, dtype=tf.float32)`: a `SparseTensor`'s dense shape and dtype."""

    __slots__ = ("_shape", "_dtype")
    value_type = SparseTensor

    def __init__(self, shape=None, dtype=_dtypes.float32):
        self._shape = _shape(shape)
        self._dtype = _dtypes.as_dtype(dtype)

    shape = property(lambda self: self._shape)
    dtype = property(lambda self: self._dtype)

    @classmethod
    def from_value(cls, value):
        """The spec of a `SparseTensor` or `SparseTensorValue`."""
        if isinstance(value, SparseTensor):
            return cls(value.shape, value.dtype)
        if isinstance(value, SparseTensorValue):
            return cls(TensorShape([int(d) for d in np.asarray(value.dense_shape)]), _dtype_of(value.values))
        raise TypeError(f"Expected SparseTensor or SparseTensorValue, got {value!r}")

    def _serialize(self):
        return (self._shape, self._dtype)

    def _same_dtypes(self, other):
        return self._dtype == other._dtype

    def _with_shape(self, shape, other):
        return SparseTensorSpec(shape, self._dtype)

    def _dtype_and_shape_of(self, other):
        if isinstance(other, (SparseTensorSpec, SparseTensor)):
            return other.dtype, other.shape
        if isinstance(other, SparseTensorValue):
            spec = SparseTensorSpec.from_value(other)
            return spec.dtype, spec.shape
        return None

    def __repr__(self):
        return f"SparseTensorSpec({self._shape!r}, {self._dtype!r})"


class IndexedSlicesSpec(TypeSpec):
    """`tf.IndexedSlicesSpec`: an `IndexedSlices`' dense shape, dtypes and indices' shape."""

    __slots__ = ("_shape", "_dtype", "_indices_dtype", "_dense_shape_dtype", "_indices_shape")
    value_type = IndexedSlices

    def __init__(
        self,
        shape=None,
        dtype=_dtypes.float32,
        indices_dtype=_dtypes.int64,
        dense_shape_dtype=None,
        indices_shape=None,
    ):
        self._shape = _shape(shape)
        self._dtype = _dtypes.as_dtype(dtype)
        self._indices_dtype = _dtypes.as_dtype(indices_dtype)
        self._dense_shape_dtype = None if dense_shape_dtype is None else _dtypes.as_dtype(dense_shape_dtype)
        indices_shape = _shape(indices_shape)
        if indices_shape.ndims not in (None, 1):
            raise ValueError(f"Shape {indices_shape} must have rank 1: an IndexedSlicesSpec's indices_shape")
        self._indices_shape = TensorShape([None]) if indices_shape.ndims is None else indices_shape

    def _serialize(self):
        return (self._shape, self._dtype, self._indices_dtype, self._dense_shape_dtype, self._indices_shape)

    def _same_dtypes(self, other):
        return (self._dtype, self._indices_dtype, self._dense_shape_dtype) == (
            other._dtype,
            other._indices_dtype,
            other._dense_shape_dtype,
        )

    def _with_shape(self, shape, other):
        indices = _common_shape(self._indices_shape, other._indices_shape)
        return IndexedSlicesSpec(shape, self._dtype, self._indices_dtype, self._dense_shape_dtype, indices)

    def _dtype_and_shape_of(self, other):
        if isinstance(other, IndexedSlicesSpec):
            return other._dtype, other._shape
        if isinstance(other, IndexedSlices):
            return other.dtype, _slices_shape(other)
        return None

    def __repr__(self):
        return (
            f"IndexedSlicesSpec({self._shape!r}, {self._dtype!r}, {self._indices_dtype!r}, "
            f"{self._dense_shape_dtype!r}, {self._indices_shape!r})"
        )


class NoneTensorSpec(TypeSpec):
    """`tf.NoneTensorSpec()`: the spec of ``None`` (an absent optional value)."""

    __slots__ = ()
    value_type = type(None)

    @classmethod
    def from_value(cls, value):
        return cls()

    def _serialize(self):
        return ()

    def is_compatible_with(self, spec_or_value):
        return spec_or_value is None or isinstance(spec_or_value, NoneTensorSpec)

    def most_specific_compatible_type(self, other):
        if not isinstance(other, NoneTensorSpec):
            raise ValueError(f"No TypeSpec is compatible with both {self!r} and {other!r}")
        return self

    def __repr__(self):
        return "NoneTensorSpec()"


def _slices_shape(slices):
    if slices.dense_shape is None:
        return TensorShape(None)
    known = get_static_value(slices.dense_shape)
    return slices.values.shape if known is None else TensorShape([int(d) for d in known])


def _dtype_of(value):
    """The dtype TF gives a Python or numpy value (Python ints int32, floats float32)."""
    if isinstance(value, Tensor):
        return value.dtype
    with Graph().as_default():  # a scratch graph: no constant lands in the program's graph
        return convert_to_tensor(value).dtype


def type_spec_from_value(value):
    """`tf.type_spec_from_value`: the `TypeSpec` of a tensor, `SparseTensor`, `IndexedSlices`,
    numpy array, None, or Python value convertible to a tensor (TF's dtypes: 1 is int32, 1.5
    float32).

    Raises:
        TypeError: a value that converts to no tensor.
    """
    if value is None:
        return NoneTensorSpec()
    if isinstance(value, Tensor):
        return TensorSpec(value.shape, value.dtype)
    if isinstance(value, (SparseTensor, SparseTensorValue)):
        return SparseTensorSpec.from_value(value)
    if isinstance(value, IndexedSlices):
        dense_dtype = None if value.dense_shape is None else value.dense_shape.dtype
        return IndexedSlicesSpec(
            _slices_shape(value), value.dtype, value.indices.dtype, dense_dtype, value.indices.shape
        )
    if isinstance(value, np.ndarray):
        return TensorSpec(value.shape, _dtypes.as_dtype(value.dtype))
    try:
        with Graph().as_default():
            tensor = convert_to_tensor(value)
    except (TypeError, ValueError):
        raise TypeError(
            f"Could not build a TypeSpec for {value!r} of unsupported type {type(value)}."
        ) from None
    return TensorSpec(tensor.shape, tensor.dtype)
