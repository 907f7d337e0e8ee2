"""The ops of `tf.TensorArray` (ops/tensor_array_ops.py): shapes, numpy kernels and gradients.

nbdist's TensorArray is a value: its *flow* tensor holds the whole array, a dense
``[size, *element_shape]`` array, and each op that writes returns a new flow (TF 1.x's
TensorArray is a resource its ops update; a `while_loop` body here may not update one). A flow
of rank 0 is an array not yet *allocated*: nothing was written and its element shape is not
known, so its size travels as the ops' `size` input. The first write allocates it (zeros
elsewhere: reading an index never written gives zeros, as TF's once the element shape is
known); ``dynamic_size`` arrays grow on a write past their end.

Gradients follow from the value: a write's value gets the written row of the new flow's
gradient and the old flow the rest (`TensorArrayFlowGrad` zeroes the row); a read or gather
scatters its gradient into zeros of the flow's shape (`TensorArrayGatherGrad`).
"""

import numpy as np

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops._shapes import tf_dims

_NOT_DEFINED = (
    "TensorArray {name}: Could not read from TensorArray index {index}.  Furthermore, the element "
    "shape is not fully defined: <unknown>.  It is possible you are working with a resizeable "
    "TensorArray and stop_gradients is not allowing the gradients to be written.  If you set the "
    "full element_shape property on the forward TensorArray, the proper all-zeros tensor will be "
    "returned instead of incurring this error."
)


def _error(node, message, cls=errors.InvalidArgumentError):
    return cls(node.name, None, message)


def _element_shape(flow_shape, attrs):
    """The static element shape: the array's (`element_shape` attr) merged with the flow's."""
    shape = _given_shape(attrs)
    if flow_shape.ndims and attrs.get("infer_shape", True):  # (else TF knows only the given shape)
        rest = flow_shape[1:]
        if shape.ndims is None:
            return rest
        return shape.merge_with(rest) if shape.is_compatible_with(rest) else shape
    return shape


def _given_shape(attrs):
    shape = attrs.get("element_shape")
    return TensorShape(None) if shape is None else shape


def _flow_shape(size, element_shape):
    if element_shape.ndims is None:
        return TensorShape(None)
    return TensorShape([size]).concatenate(element_shape)


# -- the array's first flow ----------------------------------------------------------------------
@registry.shape("TensorArrayNew")
def _new_shape(inputs, attrs):
    shape = attrs["element_shape"]
    flow = _flow_shape(attrs["size_static"], shape) if shape.is_fully_defined() else TensorShape(None)
    return [(attrs["dtype"], flow)]


@registry.kernel("TensorArrayNew")
def _new_kernel(ctx, node, size):
    shape, dtype = node.attr["element_shape"], node.attr["dtype"].np
    if int(size) < 0:
        raise _error(
            node,
            f"TensorArray {node.attr['tensor_array_name'] or node.name}: Size should be >= 0, "
            f"got {int(size)}",
        )
    if shape.is_fully_defined():
        return np.zeros((int(size), *shape.as_list()), dtype)
    return np.zeros((), dtype)  # not allocated until the first write


registry.no_gradient("TensorArrayNew")


# -- writes: a new flow ----------------------------------------------------------------------------
def _write_rows(node, flow, indices, rows, size, what):
    """`flow` with `rows` at `indices` (allocating or growing it); `what` says which op wrote."""
    attrs = node.attr
    name = attrs["tensor_array_name"]
    allocated = flow.ndim > 0
    n = flow.shape[0] if allocated else int(size)
    indices = np.asarray(indices, np.int64).reshape(-1)
    for i in indices:
        if i < 0 or (i >= n and not attrs["dynamic_size"]):
            if what == "scatter" and i >= 0:
                message = f"Max scatter index must be < array size ({int(indices.max())} vs. {n})"
            else:
                message = (
                    f"TensorArray {name}: Tried to write to index {int(i)} but array is not resizeable "
                    f"and size is: {n}"
                )
            raise _error(node, message)
    element = rows.shape[1:]
    if allocated and flow.shape[1:] != element:
        raise _error(
            node,
            f"TensorArray {name}: Could not write to TensorArray index {int(indices[0])} because the value "
            f"shape is {tf_dims(element)} which is incompatible with the TensorArray's inferred element "
            f"shape: {tf_dims(flow.shape[1:])} (consider setting infer_shape=False).",
            errors.InvalidArgumentError if attrs["infer_shape"] else errors.UnimplementedError,
        )
    grown = max(n, int(indices.max()) + 1) if indices.size else n
    if allocated and grown == n:
        out = flow.copy()  # (the old flow stays as it was: a loop's history may hold it)
    else:
        out = np.zeros((grown, *element), flow.dtype)
        if allocated:
            out[:n] = flow
    out[indices] = rows
    return out


def _write_shape(inputs, attrs, element):
    size = None if attrs["dynamic_size"] else attrs["size_static"]
    flow = inputs[0].shape
    if not attrs["dynamic_size"] and flow.ndims:
        size = flow[0] if flow[0] is not None else size
    return [(inputs[0].dtype, _flow_shape(size, element))]


@registry.shape("TensorArrayWrite")
def _write_op_shape(inputs, attrs):
    return _write_shape(inputs, attrs, inputs[2].shape)


@registry.kernel("TensorArrayWrite")
def _write_kernel(ctx, node, flow, index, value, size):
    return _write_rows(node, flow, [index], np.asarray(value)[None], size, "write")


@registry.gradient("TensorArrayWrite")
def _write_grad(op, grad):
    flow, index = op.inputs[0], op.inputs[1]
    rows = _vector(index)
    value_grad = gather_rows(grad, rows, op.get_attr("tensor_array_name"), op.inputs[2].shape)
    return [flow_grad(grad, flow, rows), None, _first(value_grad), None]


@registry.shape("TensorArrayScatter")
def _scatter_shape(inputs, attrs):
    return _write_shape(inputs, attrs, inputs[2].shape[1:])


@registry.kernel("TensorArrayScatter")
def _scatter_kernel(ctx, node, flow, indices, value, size):
    value = np.asarray(value)
    indices = np.asarray(indices).reshape(-1)
    if value.ndim == 0 or value.shape[0] != indices.size:
        raise _error(
            node,
            f"Expected len(indices) == values.shape[0], but saw: {indices.size} vs. "
            f"{value.shape[0] if value.ndim else 0}",
        )
    return _write_rows(node, flow, indices, value, size, "scatter")


@registry.gradient("TensorArrayScatter")
def _scatter_grad(op, grad):
    flow, indices, value = op.inputs[0], op.inputs[1], op.inputs[2]
    name = op.get_attr("tensor_array_name")
    return [flow_grad(grad, flow, indices), None, gather_rows(grad, indices, name, value.shape[1:]), None]


@registry.shape("TensorArraySplit")
def _split_shape(inputs, attrs):
    return _write_shape(inputs, attrs, attrs["split_element_shape"])


@registry.kernel("TensorArraySplit")
def _split_kernel(ctx, node, flow, value, lengths, size):
    value, lengths = np.asarray(value), np.asarray(lengths, np.int64).reshape(-1)
    name = node.attr["tensor_array_name"]
    if value.ndim == 0:
        raise _error(
            node, f"TensorArray {name}: Expected value to be at least a vector, but received shape: []"
        )
    if int(lengths.sum()) != value.shape[0]:
        raise _error(
            node,
            f"Expected sum of lengths to be equal to values.shape[0], but sum of lengths is "
            f"{int(lengths.sum())} and value's shape is: {tf_dims(value.shape)}",
        )
    n = flow.shape[0] if flow.ndim else int(size)
    if not node.attr["dynamic_size"] and len(lengths) != n:
        raise _error(
            node,
            f"TensorArray's size is not equal to the size of lengths ({n} vs. {len(lengths)}), and the "
            "TensorArray is not marked as dynamically resizeable",
        )
    if len(lengths) and (lengths != lengths[0]).any():
        k = int(np.argmax(lengths != lengths[0]))
        raise _error(
            node,
            f"TensorArray {name}: Could not write to TensorArray index {k} because the value shape is "
            f"{tf_dims((int(lengths[k]), *value.shape[1:]))} which is incompatible with the TensorArray's "
            f"inferred element shape: {tf_dims((int(lengths[0]), *value.shape[1:]))} (nbdist's TensorArray "
            "holds elements of one shape: split into equal lengths).",
        )
    m = int(lengths[0]) if len(lengths) else 0
    rows = value.reshape((len(lengths), m, *value.shape[1:]))
    return _write_rows(node, flow, np.arange(len(lengths)), rows, size, "split")


@registry.gradient("TensorArraySplit")
def _split_grad(op, grad):
    from nbdist.ops.math_ops import range as _range  # noqa: PLC0415 - math ops build on this module's peers
    from nbdist.ops.reshape_ops import reshape  # noqa: PLC0415
    from nbdist.ops.shape_ops import shape  # noqa: PLC0415

    flow, value, lengths = op.inputs[0], op.inputs[1], op.inputs[2]
    rows = _range(0, shape(lengths, out_type=_dtypes.int32)[0])
    parts = gather_rows(grad, rows, op.get_attr("tensor_array_name"), TensorShape(None))
    return [flow_grad(grad, flow, rows), reshape(parts, shape(value)), None, None]


# -- reads ---------------------------------------------------------------------------------------
def _check_read(node, flow, indices):
    name = node.attr["tensor_array_name"]
    if flow.ndim == 0:
        raise _error(node, _NOT_DEFINED.format(name=name, index=int(indices[0])))
    for i in indices:
        if i < 0 or i >= flow.shape[0]:
            raise _error(node, f"Tried to read from index {int(i)} but array size is: {flow.shape[0]}")


@registry.shape("TensorArrayRead")
def _read_shape(inputs, attrs):
    return [(inputs[0].dtype, _element_shape(inputs[0].shape, attrs))]


@registry.kernel("TensorArrayRead")
def _read_kernel(ctx, node, flow, index):
    _check_read(node, flow, [int(index)])
    return np.array(flow[int(index)])


@registry.gradient("TensorArrayRead")
def _read_grad(op, grad):
    from nbdist.ops.reshape_ops import expand_dims  # noqa: PLC0415

    return [gather_grad(expand_dims(grad, 0), op.inputs[0], _vector(op.inputs[1])), None]


@registry.shape("TensorArrayGather")
def _gather_shape(inputs, attrs):
    element = _element_shape(inputs[0].shape, attrs)  # (TF's first dimension: unknown)
    return [(inputs[0].dtype, _flow_shape(None, element) if element.ndims is not None else TensorShape(None))]


@registry.kernel("TensorArrayGather")
def _gather_kernel(ctx, node, flow, indices):
    indices = np.asarray(indices, np.int64).reshape(-1)
    if indices.size == 0 and flow.ndim == 0:
        shape = _given_shape(node.attr)
        if not shape.is_fully_defined():
            raise _error(
                node,
                "TensorArray has size zero, but element shape "
                f"{'<unknown>' if shape.ndims is None else shape} "
                "is not fully defined. Currently only static shapes are supported when packing zero-size "
                "TensorArrays.",
                errors.UnimplementedError,
            )
        return np.zeros((0, *shape.as_list()), flow.dtype)
    if indices.size:
        _check_read(node, flow, indices)
    return np.array(flow[indices])


@registry.gradient("TensorArrayGather")
def _gather_grad(op, grad):
    return [gather_grad(grad, op.inputs[0], op.inputs[1]), None]


@registry.shape("TensorArrayConcat")
def _concat_shape(inputs, attrs):
    element = _element_shape(inputs[0].shape, attrs)
    if not element.ndims:
        return [(inputs[0].dtype, TensorShape(None))]
    n = inputs[0].shape[0] if inputs[0].shape.ndims else None
    if n is None and not attrs.get("dynamic_size", True):
        n = attrs.get("size_static")
    rows = n * element[0] if n is not None and element[0] is not None else None
    return [(inputs[0].dtype, TensorShape([rows]).concatenate(element[1:]))]


@registry.kernel("TensorArrayConcat")
def _concat_kernel(ctx, node, flow, size):
    if flow.ndim == 0:
        shape = _given_shape(node.attr)
        if int(size) == 0 and shape.is_fully_defined() and shape.ndims:
            return np.zeros((0, *shape.as_list()[1:]), flow.dtype)
        _check_read(node, flow, [0])
    if flow.ndim == 1:
        raise _error(node, "Concat saw a scalar shape at index 0 but requires at least vectors.")
    return flow.reshape((-1, *flow.shape[2:]))


@registry.gradient("TensorArrayConcat")
def _concat_grad(op, grad):
    from nbdist.ops.reshape_ops import reshape  # noqa: PLC0415
    from nbdist.ops.shape_ops import shape  # noqa: PLC0415

    return [reshape(grad, shape(op.inputs[0])), None]


@registry.shape("TensorArraySize")
def _size_shape(inputs, attrs):
    return [(_dtypes.int32, TensorShape([]))]


@registry.kernel("TensorArraySize")
def _size_kernel(ctx, node, flow, size):
    return np.int32(flow.shape[0] if flow.ndim else size)


registry.no_gradient("TensorArraySize")


# -- the gradients' own ops ----------------------------------------------------------------------
@registry.shape("TensorArrayFlowGrad")
def _flow_grad_shape(inputs, attrs):
    return [(inputs[1].dtype, inputs[1].shape)]


@registry.kernel("TensorArrayFlowGrad")
def _flow_grad_kernel(ctx, node, grad, flow, indices):
    """The old flow's part of a write's gradient: `grad` cut to the old size, written rows zero."""
    if flow.ndim == 0:
        return np.zeros((), flow.dtype)
    out = np.array(grad[: flow.shape[0]])
    indices = np.asarray(indices, np.int64).reshape(-1)
    out[indices[indices < flow.shape[0]]] = 0
    return out


registry.no_gradient("TensorArrayFlowGrad")


@registry.shape("TensorArrayGatherGrad")
def _gather_grad_shape(inputs, attrs):
    return [(inputs[1].dtype, inputs[1].shape)]


@registry.kernel("TensorArrayGatherGrad")
def _gather_grad_kernel(ctx, node, grad, flow, indices):
    """A read's or gather's gradient as the flow's: `grad`'s rows added into zeros at `indices`."""
    out = np.zeros(flow.shape, flow.dtype)
    if flow.ndim:
        np.add.at(out, np.asarray(indices, np.int64).reshape(-1), grad)
    return out


registry.no_gradient("TensorArrayGatherGrad")


# -- builders --------------------------------------------------------------------------------------
def _vector(index):
    from nbdist.ops.reshape_ops import reshape  # noqa: PLC0415

    return reshape(index, [1])


def _first(rows):
    from nbdist.ops.reshape_ops import squeeze  # noqa: PLC0415

    return squeeze(rows, [0])


def flow_grad(grad, flow, indices):
    """The gradient of a write's old `flow`: `grad` without the written rows."""
    return registry.make_op("TensorArrayFlowGrad", [grad, flow, indices]).outputs[0]


def gather_grad(grad, flow, indices):
    """The gradient of the `flow` a gather read: `grad`'s rows scattered into zeros."""
    return registry.make_op("TensorArrayGatherGrad", [grad, flow, indices]).outputs[0]


def gather_rows(flow, indices, tensor_array_name, element_shape, name="TensorArrayGather"):
    """The rows `indices` of `flow` (a ``TensorArrayGather``)."""
    attrs = {"tensor_array_name": tensor_array_name, "element_shape": element_shape}
    return registry.make_op("TensorArrayGather", [flow, indices], attrs, name=name).outputs[0]


__all__ = []  # the ops are built by ops/tensor_array_ops.py's TensorArray
