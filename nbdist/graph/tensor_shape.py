"""`TensorShape`: a static shape whose rank or dimensions may be unknown (``None``)."""


class TensorShape:
    """A static shape as TF records it.

    Args:
        dims: ``None`` for unknown rank, else an iterable of ints or ``None`` for
            unknown dimensions; a single int is a 1-D shape (TF's rule:
            ``get_variable("b", shape=50)``). Another `TensorShape` is copied.
    """

    __slots__ = ("_dims",)

    def __init__(self, dims):
        if isinstance(dims, TensorShape):
            dims = dims._dims
        if dims is None:
            self._dims = None
        elif not hasattr(dims, "__iter__"):
            self._dims = (_as_dim(dims),)
        else:
            self._dims = tuple(None if d is None else _as_dim(d) for d in dims)

    @property
    def dims(self):
        return None if self._dims is None else list(self._dims)

    @property
    def ndims(self):
        return None if self._dims is None else len(self._dims)

    rank = ndims

    def as_list(self):
        if self._dims is None:
            raise ValueError("as_list() is not defined on an unknown TensorShape")
        return list(self._dims)

    def is_fully_defined(self):
        return self._dims is not None and None not in self._dims

    def num_elements(self):
        if not self.is_fully_defined():
            return None
        n = 1
        for d in self._dims:
            n *= d
        return n

    def is_compatible_with(self, other):
        if type(other) is tuple:  # (a numpy shape, checked on every fed value: no TensorShape made)
            dims = self._dims
            return dims is None or (
                len(dims) == len(other) and all(a is None or b is None or a == b for a, b in zip(dims, other))
            )
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return True
        if len(self._dims) != len(other._dims):
            return False
        return all(a is None or b is None or a == b for a, b in zip(self._dims, other._dims))

    def merge_with(self, other):
        other = as_shape(other)
        if not self.is_compatible_with(other):
            raise ValueError(f"shapes {self} and {other} are not compatible")
        if self._dims is None:
            return other
        if other._dims is None:
            return self
        return TensorShape(a if a is not None else b for a, b in zip(self._dims, other._dims))

    def concatenate(self, other):
        """This shape's dims followed by `other`'s (unknown rank if either is)."""
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return TensorShape(None)
        return TensorShape([*self._dims, *other._dims])

    def __len__(self):
        if self._dims is None:
            raise ValueError("cannot take the length of a shape of unknown rank")
        return len(self._dims)

    def __iter__(self):
        if self._dims is None:
            raise ValueError("cannot iterate over a shape of unknown rank")
        return iter(self._dims)

    def __getitem__(self, key):
        if self._dims is None:
            return None if not isinstance(key, slice) else TensorShape(None)
        if isinstance(key, slice):
            return TensorShape(self._dims[key])
        d = self._dims[key]
        return None if d is None else KnownDim(d)

    def __eq__(self, other):
        try:
            other = as_shape(other)
        except (TypeError, ValueError):
            return NotImplemented
        return self._dims == other._dims

    def __hash__(self):
        return hash(self._dims)

    def __repr__(self):
        return f"TensorShape({self.dims})"

    def __str__(self):
        if self._dims is None:
            return "<unknown>"
        return (
            "("
            + ", ".join("?" if d is None else str(d) for d in self._dims)
            + (",)" if len(self._dims) == 1 else ")")
        )


class KnownDim(int):
    """A known dimension as indexing a `TensorShape` gives it: an int (TF 2's data model), which
    also has TF 1.x's ``.value``, so the TF 1.x idiom ``x.get_shape()[-1].value`` works. An
    unknown dimension is None, as in TF 2 (``tf.dimension_value`` reads both kinds)."""

    __slots__ = ()

    @property
    def value(self):
        return int(self)

    __repr__ = int.__repr__


def _as_dim(d):
    if hasattr(d, "value"):  # a TF1 Dimension-like object
        d = d.value
    if d is None:
        return None
    d = int(d)
    if d < -1:
        raise ValueError(f"a dimension must be >= 0 or None, got {d}")
    return None if d == -1 else d


def as_shape(shape):
    """Normalises a `TensorShape`, list/tuple of dims or ``None`` to a `TensorShape`."""
    if isinstance(shape, TensorShape):
        return shape
    if isinstance(shape, int):
        return TensorShape([shape])
    return TensorShape(shape)


def unknown_shape():
    return TensorShape(None)


def scalar():
    return TensorShape(())
