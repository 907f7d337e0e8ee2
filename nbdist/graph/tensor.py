"""`Tensor`: one output of a recorded `Operation`, a symbolic handle with a dtype and a shape.

Operators such as ``a + b`` are installed on `Tensor` by `nbdist.ops` (the graph layer
imports no op); `Tensor.eval()` runs it in the default session.
"""

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.default_session import run_with_session
from nbdist.graph.tensor_shape import as_shape


class Tensor:
    """One output of an `Operation`: a symbolic handle with a dtype and a static shape."""

    __slots__ = ("_op", "_value_index", "_dtype", "_shape", "__weakref__")

    # Make numpy defer to Tensor's reflected operators (np_array + tensor).
    __array_priority__ = 100

    def __init__(self, op, value_index, dtype, shape):
        self._op = op
        self._value_index = value_index
        self._dtype = _dtypes.as_dtype(dtype)
        self._shape = as_shape(shape)

    @property
    def op(self):
        return self._op

    @property
    def value_index(self):
        return self._value_index

    @property
    def dtype(self):
        return self._dtype

    @property
    def graph(self):
        return self._op.graph

    @property
    def name(self):
        return f"{self._op.name}:{self._value_index}"

    @property
    def device(self):
        return self._op.device

    @property
    def shape(self):
        return self._shape

    def get_shape(self):
        return self._shape

    def set_shape(self, shape):
        self._shape = self._shape.merge_with(shape)

    def consumers(self):
        return [op for op in self.graph.get_operations() if self in op.inputs]

    def eval(self, feed_dict=None, session=None):
        """Runs this tensor in `session` (default: the default session)."""
        return run_with_session(session, self, feed_dict, "Tensor.eval()")

    def __repr__(self):
        return f"<nbdist.Tensor '{self.name}' shape={self._shape} dtype={self._dtype.name}>"

    __str__ = __repr__

    def __hash__(self):
        return id(self)

    def __eq__(self, other):  # TF 1.x: identity; use tf.equal for values
        return self is other

    def __bool__(self):
        raise TypeError(
            f"using a tf.Tensor ({self.name}) as a Python bool is not allowed: its value is "
            "only known when a Session runs it; use tf.cond-free logic or run it first"
        )

    def __iter__(self):
        raise TypeError(f"tensor {self.name} is not iterable while recording a graph")

    def __len__(self):
        raise TypeError(f"len() of a symbolic tensor ({self.name}) is not defined; use .shape")
