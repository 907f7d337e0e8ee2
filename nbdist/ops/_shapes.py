"""Static shape helpers shared by the op modules (broadcasting, unknown dims)."""

from nbdist.graph.tensor_shape import TensorShape


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
