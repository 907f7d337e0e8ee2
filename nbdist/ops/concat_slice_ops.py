"""Ops that join and cut tensors along axes: concat, stack, unstack, slice, pad.

Their gradients are each other (a concat's gradient slices, a slice's gradient pads, a
stack's gradient unstacks), so they live together.
"""

import builtins

import numpy as np

from nbdist.graph.graph import Tensor
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import math_ops, registry
from nbdist.ops._shapes import int_tensor, invalid_argument, normalize_axis, static_length, unknown_dims
from nbdist.ops.constant_op import convert_n, convert_to_tensor
from nbdist.ops.reshape_ops import reshape
from nbdist.ops.shape_ops import get_static_value, rank, shape

__all__ = ["concat", "pad", "slice", "split", "stack", "unstack"]


# -- concat ----------------------------------------------------------------------------------------
@registry.shape("ConcatV2")
def _concat_shape(inputs, attrs):
    *values, axis_t = inputs
    dtypes = sorted({v.dtype.name for v in values})
    if len(dtypes) > 1:
        raise TypeError(f"tf.concat: all values must have one dtype, got {dtypes}")
    axis = get_static_value(axis_t)
    ranks = {v.shape.ndims for v in values} - {None}
    if len(ranks) > 1:
        raise ValueError(f"tf.concat: values have different ranks {[str(v.shape) for v in values]}")
    if axis is None or not ranks:
        return unknown_dims(values[0].dtype, ranks.pop() if ranks else None)
    ndims = ranks.pop()
    axis = normalize_axis(int(axis), ndims, "tf.concat")
    known = [v.shape.as_list() for v in values if v.shape.ndims is not None]
    out = []
    for i in np.arange(ndims):
        col = [d[i] for d in known]
        if i == axis:
            out.append(None if None in col or len(known) < len(values) else sum(col))
            continue
        sizes = set(col) - {None}
        if len(sizes) > 1:
            raise ValueError(f"tf.concat: dimension {i} differs between values: {sorted(sizes)}")
        out.append(sizes.pop() if sizes else None)
    return [(values[0].dtype, TensorShape(out))]


@registry.kernel("ConcatV2")
def _concat_kernel(ctx, node, *args):
    *values, axis = args
    try:
        return np.concatenate(values, axis=int(axis))
    except (ValueError, np.exceptions.AxisError) as e:
        shapes = [list(np.shape(v)) for v in values]
        raise invalid_argument(
            node, f"ConcatOp: inputs of shapes {shapes} cannot be joined on axis {axis}: {e}"
        ) from None


@registry.gradient("ConcatV2")
def _concat_grad(op, grad):
    *values, axis = op.inputs
    shapes = [shape(v) for v in values]
    offsets = registry.make_op("ConcatOffset", [axis, *shapes], {"N": len(shapes)}).outputs
    return [slice(grad, o, s) for o, s in zip(offsets, shapes)] + [None]


registry.shape("ConcatOffset")(lambda inputs, attrs: [(t.dtype, t.shape) for t in inputs[1:]])
registry.no_gradient("ConcatOffset")


@registry.kernel("ConcatOffset")
def _concat_offset_kernel(ctx, node, axis, *shapes):
    axis = int(axis) % len(shapes[0])
    offsets, at = [], 0
    for s in shapes:
        o = np.zeros_like(s)
        o[axis] = at
        at += s[axis]
        offsets.append(o)
    return tuple(offsets)


def concat(values, axis, name="concat"):
    """`tf.concat`: joins tensors along an existing axis.

    Raises:
        ValueError: if ranks or the other dimensions are known to differ.
    """
    if not isinstance(values, (list, tuple)):
        values = [values]
    if len(values) == 1:
        return math_ops.identity(values[0], name=name)
    values = convert_n(list(values))
    axis = int_tensor(axis, "axis")
    return registry.make_op("ConcatV2", [*values, axis], {"N": len(values)}, name=name).outputs[0]


# -- slice and pad ---------------------------------------------------------------------------------
def _slice_dims(in_dims, begin, size):
    out = []
    for d, b, n in zip(in_dims, begin, size):
        if n == -1:
            out.append(None if d is None else d - b)
        else:
            out.append(n)
    return out


@registry.shape("Slice")
def _slice_shape(inputs, attrs):
    x, begin_t, size_t = inputs
    begin, sz = get_static_value(begin_t), get_static_value(size_t)
    fits = x.shape.ndims is None or (sz is not None and len(sz) == x.shape.ndims)
    if begin is None and sz is not None and fits and -1 not in sz.tolist():  # (a random offset, a known size)
        return [(x.dtype, TensorShape([int(n) for n in sz]))]
    if sz is None or begin is None or x.shape.ndims is None:
        return unknown_dims(x.dtype, x.shape.ndims if x.shape.ndims is not None else static_length(size_t))
    if not len(begin) == len(sz) == x.shape.ndims:
        raise ValueError(
            f"tf.slice: begin {begin.tolist()} and size {sz.tolist()} need one entry per axis of {x.shape}"
        )
    return [(x.dtype, TensorShape(_slice_dims(x.shape.as_list(), begin, sz)))]


@registry.kernel("Slice")
def _slice_kernel(ctx, node, x, begin, sz):
    dims, where = np.shape(x), f"begin {begin.tolist()} + size {sz.tolist()}"
    if not len(begin) == len(sz) == len(dims):
        raise invalid_argument(node, f"Slice: {where} need {len(dims)} entries each")
    index = []
    for d, b, n in zip(dims, begin, _slice_dims(dims, begin, sz)):
        if b < 0 or n < 0 or b + n > d:
            raise invalid_argument(node, f"Slice: {where} is out of bounds for shape {list(dims)}")
        index.append(builtins.slice(int(b), int(b + n)))
    return x[tuple(index)]


@registry.gradient("Slice")
def _slice_grad(op, grad):
    x, begin, _ = op.inputs
    after = shape(x) - begin - shape(op.outputs[0])
    return [pad(grad, stack([begin, after], axis=1)), None, None]


def slice(input_, begin, size, name=None):  # noqa: A001 - TF's public name tf.slice
    """`tf.slice`: the block of `size` elements starting at `begin` (-1 in `size`: to the end)."""
    x = convert_to_tensor(input_)
    inputs = [x, int_tensor(begin, "begin"), int_tensor(size, "size")]
    return registry.make_op("Slice", inputs, name=name).outputs[0]


@registry.shape("Pad")
def _pad_shape(inputs, attrs):
    x, pads_t = inputs[:2]
    pads = get_static_value(pads_t)
    if pads is None or x.shape.ndims is None:
        return unknown_dims(x.dtype, x.shape.ndims if x.shape.ndims is not None else static_length(pads_t))
    if np.shape(pads) != (x.shape.ndims, 2):
        raise ValueError(
            f"tf.pad: paddings must have shape [{x.shape.ndims}, 2] for {x.shape}, got {np.shape(pads)}"
        )
    dims = [None if d is None else d + int(a) + int(b) for d, (a, b) in zip(x.shape, pads)]
    return [(x.dtype, TensorShape(dims))]


registry.shape("PadV2")(_pad_shape)


@registry.kernel("Pad")
def _pad_kernel(ctx, node, x, pads, value=0):
    if np.shape(pads) != (np.ndim(x), 2) or np.any(np.asarray(pads) < 0):
        raise invalid_argument(
            node, f"Pad: paddings must be non-negative with shape [{np.ndim(x)}, 2], got {pads.tolist()}"
        )
    return np.pad(x, np.asarray(pads, np.int64), constant_values=value)


registry.kernel("PadV2")(_pad_kernel)


@registry.gradient("Pad")
def _pad_grad(op, grad):
    x, pads = op.inputs[:2]
    before = reshape(slice(pads, [0, 0], stack([rank(x), 1])), [-1])
    return [slice(grad, before, shape(x)), None] + [None] * (len(op.inputs) - 2)


registry.gradient("PadV2")(_pad_grad)


def pad(tensor, paddings, mode="CONSTANT", name=None, constant_values=0):
    """`tf.pad` (``mode="CONSTANT"``): adds ``paddings[i] = [before, after]`` values on axis i.

    Raises:
        ValueError: for another mode (nbdist implements constant padding only).
    """
    if str(mode).upper() != "CONSTANT":
        raise ValueError(f"tf.pad: mode {mode!r} is not supported by nbdist; use mode='CONSTANT'")
    tensor = convert_to_tensor(tensor)
    inputs = [tensor, int_tensor(paddings, "paddings")]
    if isinstance(constant_values, Tensor) or constant_values != 0:
        inputs.append(convert_to_tensor(constant_values, dtype=tensor.dtype))
        return registry.make_op("PadV2", inputs, name=name).outputs[0]
    return registry.make_op("Pad", inputs, name=name).outputs[0]


# -- stack, unstack ----------------------------------------------------------------------------------
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
    axis = normalize_axis(attrs["axis"], len(dims) + 1, "tf.stack")
    return [(inputs[0].dtype, TensorShape([*dims[:axis], len(inputs), *dims[axis:]]))]


registry.kernel("Pack")(lambda ctx, node, *xs: np.stack(xs, axis=node.attr["axis"]))
registry.gradient("Pack")(lambda op, grad: unstack(grad, num=len(op.inputs), axis=op.get_attr("axis")))


def stack(values, axis=0, name="stack"):
    """`tf.stack`: joins same-shaped tensors along a new axis."""
    values = convert_n(list(values))
    return registry.make_op("Pack", values, {"axis": int(axis), "N": len(values)}, name=name).outputs[0]


@registry.shape("Unpack")
def _unpack_shape(inputs, attrs):
    shape = inputs[0].shape
    if shape.ndims is None:
        return [(inputs[0].dtype, TensorShape(None))] * attrs["num"]
    dims = shape.as_list()
    del dims[normalize_axis(attrs["axis"], len(dims), "tf.unstack")]
    return [(inputs[0].dtype, TensorShape(dims))] * attrs["num"]


@registry.kernel("Unpack")
def _unpack_kernel(ctx, node, x):
    parts = np.moveaxis(x, node.attr["axis"], 0)
    if len(parts) != node.attr["num"]:
        raise invalid_argument(
            node, f"Unpack: expected {node.attr['num']} values on axis {node.attr['axis']}, got {len(parts)}"
        )
    return tuple(parts)


registry.gradient("Unpack")(lambda op, *grads: [stack(list(grads), axis=op.get_attr("axis"))])


def unstack(value, num=None, axis=0, name="unstack"):
    """`tf.unstack`: the list of slices of `value` along `axis`.

    Raises:
        ValueError: if `num` is None and the size of `axis` is not known statically.
    """
    value = convert_to_tensor(value)
    if num is None:
        if value.shape.ndims is None or value.shape[axis] is None:
            raise ValueError(f"cannot infer num from shape {value.shape}; pass num=")
        num = value.shape[axis]
    return registry.make_op("Unpack", [value], {"num": int(num), "axis": int(axis)}, name=name).outputs


# -- split -------------------------------------------------------------------------------------------
@registry.shape("SplitV")
def _split_shape(inputs, attrs):
    value, sizes = inputs[0], attrs["sizes"]
    if value.shape.ndims is None:
        return [(value.dtype, TensorShape(None))] * len(sizes)
    dims = value.shape.as_list()
    axis = normalize_axis(attrs["axis"], len(dims), "tf.split")
    out = []
    for size in sizes:
        part = list(dims)
        part[axis] = size
        out.append((value.dtype, TensorShape(part)))
    return out


@registry.kernel("SplitV")
def _split_kernel(ctx, node, value):
    sizes, axis = node.attr["sizes"], node.attr["axis"]
    if sum(sizes) != value.shape[axis]:
        raise invalid_argument(
            node,
            f"Determined shape must either match input shape along split_dim exactly if fully "
            f"specified, or be less than the size of the input along split_dim if not fully "
            f"specified. Got: {sum(sizes)} for dimension {axis} of size {value.shape[axis]}",
        )
    parts = np.split(value, np.cumsum(sizes)[:-1], axis=axis)
    return parts[0] if len(parts) == 1 else tuple(parts)  # (a kernel gives its one output itself)


registry.gradient("SplitV")(lambda op, *grads: [concat(list(grads), op.get_attr("axis"))])


def split(value, num_or_size_splits, axis=0, num=None, name="split"):
    """`tf.split`: `value` cut along `axis` into `num_or_size_splits` equal parts, or into parts of
    the given sizes (one of them may be -1: the rest). The sizes and the axis are Python values
    (nbdist needs the parts' count, as TF does, and their sizes when the graph is built)."""
    value = convert_to_tensor(value)
    axis = int(get_static_value(convert_to_tensor(axis)) if not isinstance(axis, int) else axis)
    dims = value.shape.as_list() if value.shape.ndims is not None else None
    length = None if dims is None else dims[normalize_axis(axis, len(dims), "tf.split")]
    if isinstance(num_or_size_splits, (int, np.integer)):
        count = int(num_or_size_splits)
        if length is None:
            raise ValueError(
                f"tf.split: the size of dimension {axis} of {value.name} must be known to split it"
            )
        if count <= 0 or length % count:
            raise ValueError(
                f"Dimension {axis} in both shapes must be equal, but are {length} and "
                f"{count * (length // max(count, 1))}: {length} does not split into {count} equal parts"
            )
        sizes = [length // count] * count
    else:
        sizes = [int(s) for s in np.asarray(get_static_value(convert_to_tensor(num_or_size_splits))).ravel()]
        if sizes.count(-1) > 1:
            raise ValueError("tf.split: at most one size may be -1")
        if -1 in sizes:
            if length is None:
                raise ValueError(f"tf.split: a size -1 needs the size of dimension {axis} of {value.name}")
            sizes[sizes.index(-1)] = length - (sum(sizes) + 1)
    attrs = {"sizes": sizes, "axis": axis, "num_split": len(sizes)}
    return registry.make_op("SplitV", [value], attrs, name=name).outputs
