"""Helpers shared by the op modules: static shapes (broadcasting, unknown dims, axes), integer
shape tensors and kernels' argument errors."""

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import Tensor
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops.constant_op import convert_to_tensor


def broadcast_shape(a, b):
    """The numpy-broadcast of two static shapes (unknown where it cannot be told).

    Raises:
        ValueError: if the known dimensions cannot broadcast.
    """
    if a.ndims is None or b.ndims is None:
        return TensorShape(None)
    da, db = a.as_list(), b.as_list()
    n = max(len(da), len(db))
    da = [1] * (n - len(da)) + da
    db = [1] * (n - len(db)) + db
    out = []
    for x, y in zip(da, db):
        if x == 1:
            out.append(y)
        elif y == 1:
            out.append(x)
        elif x is None or y is None:
            out.append(x if y is None else y)
        elif x == y:
            out.append(x)
        else:
            raise ValueError(f"shapes {a} and {b} are not broadcast-compatible")
    return TensorShape(out)


def same_as_input(inputs, attrs):
    """Shape function: one output like the first input."""
    return [(inputs[0].dtype, inputs[0].shape)]


def int_tensor(value, what, name=None):
    """`value` as an integer tensor (a Python value becomes an int32 constant).

    Raises:
        TypeError: naming `what` if the tensor is not of an integer dtype.
    """
    t = convert_to_tensor(value, dtype=_dtypes.int32, name=name) if not isinstance(value, Tensor) else value
    if not t.dtype.is_integer:
        raise TypeError(f"{what} must be an int32 or int64 tensor, got {t.dtype.name} ({t.name})")
    return t


def unknown_dims(dtype, ndims):
    """The spec of an output whose dims are unknown (and its rank too when `ndims` is None)."""
    return [(dtype, TensorShape(None if ndims is None else [None] * ndims))]


def static_length(vector):
    """The static length of a 1-D tensor, or None."""
    return vector.shape[0] if vector.shape.ndims == 1 else None


def normalize_axis(axis, ndims, what):
    """`axis` in ``[0, ndims)`` (negative counts from the end).

    Raises:
        ValueError: naming `what` if `axis` is out of range.
    """
    if not -ndims <= axis < ndims:
        raise ValueError(f"{what}: axis {axis} is out of range for a tensor of rank {ndims}")
    return axis % ndims


def tf_dims(shape):
    """A shape as TF's kernels spell it in their errors: ``[2,3]``."""
    return "[" + ",".join(str(d) for d in shape) + "]"


def invalid_argument(node, message):
    """The `InvalidArgumentError` a kernel raises for bad input values of `node`."""
    return errors.InvalidArgumentError(node.name, None, message)
