"""Array ops: placeholder, shapes, reshape, transpose, concat, stack, fills, argmax."""

import numpy as np

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import get_default_graph
from nbdist.graph.tensor_shape import TensorShape, as_shape
from nbdist.ops import registry
from nbdist.ops.constant_op import constant, convert_n, convert_to_tensor

# -- placeholder -----------------------------------------------------------------------------
registry.shape("Placeholder")(lambda inputs, attrs: [(attrs["dtype"], attrs["shape"])])
registry.no_gradient("Placeholder")


@registry.kernel("Placeholder")
def _placeholder_kernel(ctx, node):
    shape = node.attr["shape"]
    raise errors.InvalidArgumentError(
        node.name,
        None,
        f"You must feed a value for placeholder tensor {node.name!r} with dtype "
        f"{node.attr['dtype'].name} and shape {shape}: add it to feed_dict",
    )


def placeholder(dtype, shape=None, name=None):
    """`tf.placeholder`: a tensor whose value must be fed (dtype and shape checked then)."""
    attrs = {"dtype": _dtypes.as_dtype(dtype), "shape": as_shape(shape)}
    return registry.make_op("Placeholder", [], attrs, name=name, graph=get_default_graph()).outputs[0]


# -- stack ------------------------------------------------------------------------------------
@registry.shape("Pack")
def _pack_shape(inputs, attrs):
    shape = inputs[0].shape
    for t in inputs[1:]:
        if not shape.is_compatible_with(t.shape):
            raise ValueError(f"tf.stack: shapes {shape} and {t.shape} ({t.name}) differ")
        shape = shape.merge_with(t.shape)
    if shape.ndims is None:
        return [(inputs[0].dtype, TensorShape(None))]
    dims = shape.as_list()
    axis = attrs["axis"] % (len(dims) + 1)
    return [(inputs[0].dtype, TensorShape(dims[:axis] + [len(inputs)] + dims[axis:]))]


registry.kernel("Pack")(lambda ctx, node, *xs: np.stack(xs, axis=node.attr["axis"]))


@registry.gradient("Pack")
def _pack_grad(op, grad):
    return unstack(grad, num=len(op.inputs), axis=op.get_attr("axis"))


def stack(values, axis=0, name="stack"):
    values = convert_n(list(values))
    return registry.make_op("Pack", values, {"axis": int(axis), "N": len(values)}, name=name).outputs[0]


@registry.shape("Unpack")
def _unpack_shape(inputs, attrs):
    shape = inputs[0].shape
    if shape.ndims is None:
        return [(inputs[0].dtype, TensorShape(None))] * attrs["num"]
    dims = shape.as_list()
    del dims[attrs["axis"] % len(dims)]
    return [(inputs[0].dtype, TensorShape(dims))] * attrs["num"]


registry.kernel("Unpack")(
    lambda ctx, node, x: tuple(np.moveaxis(x, node.attr["axis"], 0)[: node.attr["num"]])
)


@registry.gradient("Unpack")
def _unpack_grad(op, *grads):
    return [stack(list(grads), axis=op.get_attr("axis"))]


def unstack(value, num=None, axis=0, name="unstack"):
    value = convert_to_tensor(value)
    if num is None:
        if value.shape.ndims is None or value.shape[axis] is None:
            raise ValueError(f"cannot infer num from shape {value.shape}; pass num=")
        num = value.shape[axis]
    return registry.make_op("Unpack", [value], {"num": int(num), "axis": int(axis)}, name=name).outputs


def constant_strings(values, name=None):
    return constant(np.array([v.encode() if isinstance(v, str) else v for v in values], dtype=object) if values else np.array([], dtype=object), dtype=_dtypes.string, name=name or "Const")
