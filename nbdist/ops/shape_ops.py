"""Shape introspection ops: `tf.shape`, `tf.size`, `tf.rank`, and `tf.get_static_value`,
which lets shape functions use a shape, axis or permutation *tensor* when its value is known
while building (a constant, the shape of a fully defined tensor, a stack of known values).
"""

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import Tensor
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops.constant_op import convert_to_tensor

__all__ = ["get_static_value", "rank", "shape", "size"]


def get_static_value(tensor):
    """`tf.get_static_value`: the value of `tensor` if known while building, else None.

    Known: constants, and the `Shape`/`Size`/`Rank` of a tensor whose static shape is
    fully defined (or of known rank, for `Rank`), and `stack`s of known values.
    """
    if not isinstance(tensor, Tensor):
        return np.asarray(tensor)
    op = tensor.op
    if op.type == "Const":
        return op.get_attr("value")
    src = op.inputs[0].shape if op.inputs else None
    if op.type == "Rank" and src.ndims is not None:
        return np.asarray(src.ndims, np.int32)
    if op.type in ("Shape", "Size") and src.is_fully_defined():
        value = src.as_list() if op.type == "Shape" else src.num_elements()
        return np.asarray(value, op.get_attr("out_type").np)
    if op.type == "Pack":
        values = [get_static_value(t) for t in op.inputs]
        if all(v is not None for v in values):
            return np.stack(values, axis=op.get_attr("axis"))
    return None


# -- shape, size, rank -------------------------------------------------------------------------
@registry.shape("Shape")
def _shape_shape(inputs, attrs):
    return [(attrs["out_type"], TensorShape([inputs[0].shape.ndims]))]


registry.shape("Size")(lambda inputs, attrs: [(attrs["out_type"], TensorShape(()))])
registry.shape("Rank")(lambda inputs, attrs: [(_dtypes.int32, TensorShape(()))])
registry.kernel("Shape")(lambda ctx, node, x: np.asarray(np.shape(x), node.attr["out_type"].np))
registry.kernel("Size")(lambda ctx, node, x: np.asarray(np.size(x), node.attr["out_type"].np))
registry.kernel("Rank")(lambda ctx, node, x: np.asarray(np.ndim(x), np.int32))
for _t in ("Shape", "Size", "Rank"):
    registry.no_gradient(_t)


def shape(input, name=None, out_type=_dtypes.int32):  # noqa: A002 - TF's argument name
    """`tf.shape`: the runtime shape of `input` as a 1-D int tensor."""
    attrs = {"out_type": _dtypes.as_dtype(out_type)}
    return registry.make_op("Shape", [convert_to_tensor(input)], attrs, name=name).outputs[0]


def size(input, name=None, out_type=_dtypes.int32):  # noqa: A002 - TF's argument name
    """`tf.size`: the runtime number of elements of `input`."""
    attrs = {"out_type": _dtypes.as_dtype(out_type)}
    return registry.make_op("Size", [convert_to_tensor(input)], attrs, name=name).outputs[0]


def rank(input, name=None):  # noqa: A002 - TF's argument name
    """`tf.rank`: the runtime number of dimensions of `input` (an int32 scalar)."""
    return registry.make_op("Rank", [convert_to_tensor(input)], name=name).outputs[0]
