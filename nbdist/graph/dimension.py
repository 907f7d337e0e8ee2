"""`Dimension`: TF 1.x's value of one dimension of a shape, known (an int >= 0) or not (None).

nbdist's `TensorShape` holds plain ints and None (TF 2's data model, which TF 1.x programs meet
through ``tf.compat.dimension_value``); `Dimension` is TF 1.x's class for the programs that build
or compare dimensions themselves. `TensorShape` takes Dimensions as dims (their ``value``).
Unknown values propagate: ``Dimension(None) + 1`` is ``Dimension(None)``, and a comparison with
an unknown side is None.
"""

import operator

from nbdist.graph.tensor_shape import TensorShape


class Dimension:
    """One dimension's value: an int >= 0, or None when unknown.

    Raises:
        TypeError: a value that is not an int, None or an object with ``__index__``.
        ValueError: a negative value.
    """

    __slots__ = ("_value",)

    def __init__(self, value):
        if isinstance(value, Dimension):
            value = value._value
        elif value is not None and not isinstance(value, int):
            try:
                value = int(value.__index__())
            except AttributeError:
                raise TypeError(
                    "Dimension value must be integer or None or have an __index__ method, "
                    f"got value {value!r} with type {type(value)!r}"
                ) from None
        if value is not None and value < 0:
            raise ValueError(f"Dimension {value} must be >= 0")
        self._value = value

    @property
    def value(self):
        return self._value

    def __repr__(self):
        return f"Dimension({self._value!r})"

    def __str__(self):
        return "?" if self._value is None else str(self._value)

    def __bool__(self):
        return bool(self._value)

    def __int__(self):
        return self._value

    def __index__(self):
        return self._value

    def __hash__(self):
        return hash(self._value)

    def __reduce__(self):
        return (Dimension, (self._value,))

    def is_compatible_with(self, other):
        """Whether the two can be one dimension: equal, or either unknown."""
        other = as_dimension(other)
        return self._value is None or other.value is None or self._value == other.value

    def assert_is_compatible_with(self, other):
        """Raises ValueError unless `is_compatible_with(other)`."""
        if not self.is_compatible_with(other):
            raise ValueError(f"Dimensions {self} and {other} are not compatible")

    def merge_with(self, other):
        """The known one of two compatible dimensions (unknown if both are).

        Raises:
            ValueError: both are known and differ.
        """
        other = as_dimension(other)
        self.assert_is_compatible_with(other)
        return Dimension(other.value if self._value is None else self._value)

    def _combine(self, other, fn, swap=False):
        try:
            other = as_dimension(other)
        except (TypeError, ValueError):
            return NotImplemented
        if self._value is None or other.value is None:
            return Dimension(None)
        a, b = (other.value, self._value) if swap else (self._value, other.value)
        return Dimension(fn(a, b))

    def _compare(self, other, fn):
        try:
            other = as_dimension(other)
        except (TypeError, ValueError):
            return NotImplemented
        if self._value is None or other.value is None:
            return None
        return fn(self._value, other.value)

    def __add__(self, other):
        return self._combine(other, operator.add)

    def __radd__(self, other):
        return self._combine(other, operator.add, swap=True)

    def __sub__(self, other):
        return self._combine(other, operator.sub)

    def __rsub__(self, other):
        return self._combine(other, operator.sub, swap=True)

    def __mul__(self, other):
        return self._combine(other, operator.mul)

    def __rmul__(self, other):
        return self._combine(other, operator.mul, swap=True)

    def __floordiv__(self, other):
        return self._combine(other, operator.floordiv)

    def __rfloordiv__(self, other):
        return self._combine(other, operator.floordiv, swap=True)

    def __mod__(self, other):
        return self._combine(other, operator.mod)

    def __rmod__(self, other):
        return self._combine(other, operator.mod, swap=True)

    def __truediv__(self, other):
        raise TypeError(
            f"unsupported operand type(s) for /: 'Dimension' and '{type(other).__name__}', "
            "please use // instead"
        )

    def __rtruediv__(self, other):
        raise TypeError(
            f"unsupported operand type(s) for /: '{type(other).__name__}' and 'Dimension', "
            "please use // instead"
        )

    def __eq__(self, other):
        return self._compare(other, operator.eq)

    def __ne__(self, other):
        return self._compare(other, operator.ne)

    def __lt__(self, other):
        return self._compare(other, operator.lt)

    def __le__(self, other):
        return self._compare(other, operator.le)

    def __gt__(self, other):
        return self._compare(other, operator.gt)

    def __ge__(self, other):
        return self._compare(other, operator.ge)


def as_dimension(value):
    """`value` as a `Dimension` (a Dimension is returned as is)."""
    return value if isinstance(value, Dimension) else Dimension(value)


def dimension_value(dimension):
    """`tf.dimension_value`: a dimension's value as an int or None (ints and None pass through),
    for code that runs with shapes of Dimensions and of ints alike."""
    return dimension.value if isinstance(dimension, Dimension) else dimension


def dimension_at_index(shape, index):
    """`tf.dimension_at_index`: the `Dimension` at `index` of a `TensorShape` (unknown for a
    shape of unknown rank).

    Raises:
        TypeError: `shape` is not a `TensorShape`.
    """
    if not isinstance(shape, TensorShape):
        raise TypeError(f"tf.dimension_at_index: shape must be a TensorShape, got {type(shape).__name__}")
    if shape.rank is None:
        return Dimension(None)
    return Dimension(shape[index])
