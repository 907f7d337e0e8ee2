"""Array ops: placeholder, shapes, reshape, transpose, concat, slice, pad, stack, fills.

Shapes, permutations and axes are *input tensors* as in TF (usually constants), so the
gradients can use runtime shapes (`tf.shape`) and work when static dimensions are unknown.
`get_static_value` lets shape functions use them when they are known while building.
"""

import builtins

import numpy as np

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import Tensor, get_default_graph
from nbdist.graph.tensor_shape import TensorShape, as_shape
from nbdist.ops import math_ops, registry
from nbdist.ops._shapes import same_as_input
from nbdist.ops.constant_op import constant, convert_n, convert_to_tensor

__all__ = [
    "concat",
    "expand_dims",
    "fill",
    "get_static_value",
    "invert_permutation",
    "ones",
    "pad",
    "placeholder",
    "rank",
    "reshape",
    "shape",
    "size",
    "slice",
    "squeeze",
    "stack",
    "transpose",
    "unstack",
    "zeros",
]

_MAX_CONST_FILL = 1000  # zeros()/ones() above this many elements use a Fill op, as TF does


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


def _int_tensor(value, what, name=None):
    t = convert_to_tensor(value, dtype=_dtypes.int32, name=name) if not isinstance(value, Tensor) else value
    if not t.dtype.is_integer:
        raise TypeError(f"{what} must be an int32 or int64 tensor, got {t.dtype.name} ({t.name})")
    return t


def _unknown_dims(dtype, ndims):
    """The spec of an output whose dims are unknown (and its rank too when `ndims` is None)."""
    return [(dtype, TensorShape(None if ndims is None else [None] * ndims))]


def _length(vector):
    """The static length of a 1-D tensor, or None."""
    return vector.shape[0] if vector.shape.ndims == 1 else None


def _norm_axis(axis, ndims, what):
    if not -ndims <= axis < ndims:
        raise ValueError(f"{what}: axis {axis} is out of range for a tensor of rank {ndims}")
    return axis % ndims


def _invalid(node, message):
    return errors.InvalidArgumentError(node.name, None, message)


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


# -- reshape -----------------------------------------------------------------------------------
def _reshape_dims(dims, total):
    """`dims` with its one -1 resolved against `total` elements (None when unknown)."""
    if sum(d == -1 for d in dims) > 1 or any(d < -1 for d in dims):
        raise ValueError(f"shape {dims} may hold at most one -1 and no other negative size")
    known = int(np.prod([d for d in dims if d != -1]))
    if -1 in dims:
        if total is None:
            return [None if d == -1 else d for d in dims]
        if known == 0 or total % known:
            raise ValueError(f"cannot reshape a tensor with {total} elements to shape {dims}")
        return [total // known if d == -1 else d for d in dims]
    if total is not None and total != known:
        raise ValueError(f"cannot reshape a tensor with {total} elements to shape {dims} ({known} elements)")
    return dims


@registry.shape("Reshape")
def _reshape_shape(inputs, attrs):
    x, dims_t = inputs
    dims = get_static_value(dims_t)
    if dims is None:
        return _unknown_dims(x.dtype, _length(dims_t))
    dims = [int(d) for d in np.ravel(dims)]
    try:
        return [(x.dtype, TensorShape(_reshape_dims(dims, x.shape.num_elements())))]
    except ValueError as e:
        raise ValueError(f"tf.reshape({x.name}): {e}") from None


@registry.kernel("Reshape")
def _reshape_kernel(ctx, node, x, dims):
    dims = [int(d) for d in np.ravel(dims)]
    try:
        return np.reshape(x, _reshape_dims(dims, np.size(x)))
    except ValueError as e:
        raise _invalid(node, f"Input to reshape has shape {list(np.shape(x))}: {e}") from None


registry.gradient("Reshape")(lambda op, grad: [reshape(grad, shape(op.inputs[0])), None])


def reshape(tensor, shape, name=None):
    """`tf.reshape`: the same elements in a new shape; one dimension may be -1 (inferred).

    Raises:
        ValueError: if the element counts are known and differ.
    """
    tensor = convert_to_tensor(tensor)
    return registry.make_op("Reshape", [tensor, _int_tensor(shape, "shape")], name=name).outputs[0]


# -- transpose -----------------------------------------------------------------------------------
@registry.shape("Transpose")
def _transpose_shape(inputs, attrs):
    x, perm_t = inputs
    perm = get_static_value(perm_t)
    if perm is None or x.shape.ndims is None:
        return _unknown_dims(x.dtype, x.shape.ndims if x.shape.ndims is not None else _length(perm_t))
    perm = [int(p) for p in perm]
    if sorted(perm) != list(np.arange(x.shape.ndims)):
        raise ValueError(
            f"tf.transpose: perm {perm} is not a permutation of the {x.shape.ndims} axes of {x.name}"
        )
    return [(x.dtype, TensorShape([x.shape[p] for p in perm]))]


@registry.kernel("Transpose")
def _transpose_kernel(ctx, node, x, perm):
    if sorted(int(p) for p in perm) != list(np.arange(np.ndim(x))):
        raise _invalid(
            node, f"transpose expects a permutation of range({np.ndim(x)}), got {np.asarray(perm).tolist()}"
        )
    return np.transpose(x, [int(p) for p in perm])


registry.gradient("Transpose")(lambda op, grad: [transpose(grad, invert_permutation(op.inputs[1])), None])
registry.shape("InvertPermutation")(same_as_input)
registry.kernel("InvertPermutation")(lambda ctx, node, p: np.argsort(p).astype(p.dtype))
registry.no_gradient("InvertPermutation")


def invert_permutation(x, name=None):
    """`tf.invert_permutation`: ``y[x[i]] = i``."""
    return registry.make_op("InvertPermutation", [_int_tensor(x, "x")], name=name).outputs[0]


def transpose(a, perm=None, name="transpose", conjugate=False):
    """`tf.transpose`: permutes the axes of `a` (reverses them when `perm` is None)."""
    a = convert_to_tensor(a)
    if perm is None:
        if a.shape.ndims is not None:
            perm = np.arange(a.shape.ndims - 1, -1, -1, dtype=np.int32)
        else:
            r = rank(a)
            perm = (r - 1) - math_ops.range(0, r, 1)
    return registry.make_op("Transpose", [a, _int_tensor(perm, "perm")], name=name).outputs[0]


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
        return _unknown_dims(values[0].dtype, ranks.pop() if ranks else None)
    ndims = ranks.pop()
    axis = _norm_axis(int(axis), ndims, "tf.concat")
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
        raise _invalid(
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
    axis = _int_tensor(axis, "axis")
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
    if sz is None or begin is None or x.shape.ndims is None:
        return _unknown_dims(x.dtype, x.shape.ndims if x.shape.ndims is not None else _length(size_t))
    if not len(begin) == len(sz) == x.shape.ndims:
        raise ValueError(
            f"tf.slice: begin {begin.tolist()} and size {sz.tolist()} need one entry per axis of {x.shape}"
        )
    return [(x.dtype, TensorShape(_slice_dims(x.shape.as_list(), begin, sz)))]


@registry.kernel("Slice")
def _slice_kernel(ctx, node, x, begin, sz):
    dims, where = np.shape(x), f"begin {begin.tolist()} + size {sz.tolist()}"
    if not len(begin) == len(sz) == len(dims):
        raise _invalid(node, f"Slice: {where} need {len(dims)} entries each")
    index = []
    for d, b, n in zip(dims, begin, _slice_dims(dims, begin, sz)):
        if b < 0 or n < 0 or b + n > d:
            raise _invalid(node, f"Slice: {where} is out of bounds for shape {list(dims)}")
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
    inputs = [x, _int_tensor(begin, "begin"), _int_tensor(size, "size")]
    return registry.make_op("Slice", inputs, name=name).outputs[0]


@registry.shape("Pad")
def _pad_shape(inputs, attrs):
    x, pads_t = inputs[:2]
    pads = get_static_value(pads_t)
    if pads is None or x.shape.ndims is None:
        return _unknown_dims(x.dtype, x.shape.ndims if x.shape.ndims is not None else _length(pads_t))
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
        raise _invalid(
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
    inputs = [tensor, _int_tensor(paddings, "paddings")]
    if isinstance(constant_values, Tensor) or constant_values != 0:
        inputs.append(convert_to_tensor(constant_values, dtype=tensor.dtype))
        return registry.make_op("PadV2", inputs, name=name).outputs[0]
    return registry.make_op("Pad", inputs, name=name).outputs[0]


# -- fill, zeros, ones -----------------------------------------------------------------------------
@registry.shape("Fill")
def _fill_shape(inputs, attrs):
    dims_t, value = inputs
    if value.shape.ndims not in (None, 0):
        raise ValueError(f"tf.fill: value must be a scalar, got shape {value.shape}")
    dims = get_static_value(dims_t)
    if dims is None:
        return _unknown_dims(value.dtype, _length(dims_t))
    return [(value.dtype, TensorShape([int(d) for d in dims]))]


@registry.kernel("Fill")
def _fill_kernel(ctx, node, dims, value):
    if np.any(np.asarray(dims) < 0):
        raise _invalid(node, f"Fill: dims must be non-negative, got {np.asarray(dims).tolist()}")
    return np.full([int(d) for d in dims], value, dtype=np.asarray(value).dtype)


registry.gradient("Fill")(lambda op, grad: [None, math_ops.sum_to_shape(grad, op.inputs[1])])


def fill(dims, value, name=None):
    """`tf.fill`: a tensor of shape `dims` with every element `value`."""
    return registry.make_op("Fill", [_int_tensor(dims, "dims"), convert_to_tensor(value)], name=name).outputs[
        0
    ]


def _filled(shape, dtype, value, name):
    dtype = _dtypes.as_dtype(dtype)
    if isinstance(shape, Tensor):
        return fill(shape, constant(value, dtype=dtype), name=name)
    dims = as_shape(shape)
    if not dims.is_fully_defined():
        raise ValueError(f"shape {dims} must be fully defined; pass a shape tensor (tf.shape(x)) instead")
    dims = dims.as_list()
    if int(np.prod(dims)) <= _MAX_CONST_FILL:
        return constant(np.full(dims, value, dtype.np), dtype=dtype, name=name)
    return fill(dims, constant(value, dtype=dtype), name=name)


def zeros(shape, dtype=_dtypes.float32, name=None):
    """`tf.zeros`: a tensor of `shape` (a list or a 1-D int tensor) filled with zeros."""
    return _filled(shape, dtype, 0, name or "zeros")


def ones(shape, dtype=_dtypes.float32, name=None):
    """`tf.ones`: a tensor of `shape` (a list or a 1-D int tensor) filled with ones."""
    return _filled(shape, dtype, 1, name or "ones")


# -- expand_dims, squeeze --------------------------------------------------------------------------
@registry.shape("ExpandDims")
def _expand_dims_shape(inputs, attrs):
    x, axis_t = inputs
    axis = get_static_value(axis_t)
    if x.shape.ndims is None:
        return [(x.dtype, TensorShape(None))]
    if axis is None:
        return _unknown_dims(x.dtype, x.shape.ndims + 1)
    dims, axis = x.shape.as_list(), int(axis)
    if not -len(dims) - 1 <= axis <= len(dims):
        raise ValueError(
            f"tf.expand_dims: axis {axis} is out of range for a tensor of rank {len(dims)} "
            f"(expected {-len(dims) - 1} <= axis <= {len(dims)})"
        )
    axis %= len(dims) + 1
    return [(x.dtype, TensorShape([*dims[:axis], 1, *dims[axis:]]))]


@registry.kernel("ExpandDims")
def _expand_dims_kernel(ctx, node, x, axis):
    if not -np.ndim(x) - 1 <= int(axis) <= np.ndim(x):
        raise _invalid(
            node, f"ExpandDims: axis {int(axis)} is out of range for a tensor of rank {np.ndim(x)}"
        )
    return np.expand_dims(x, int(axis))


registry.gradient("ExpandDims")(lambda op, grad: [reshape(grad, shape(op.inputs[0])), None])


def expand_dims(input, axis=None, name=None, dim=None):  # noqa: A002 - TF's argument name
    """`tf.expand_dims`: inserts a dimension of size 1 at `axis` (``dim`` is TF1's alias)."""
    if dim is not None:
        if axis is not None:
            raise ValueError("tf.expand_dims: pass either axis or dim, not both")
        axis = dim
    if axis is None:
        raise ValueError("tf.expand_dims: axis is required")
    inputs = [convert_to_tensor(input), _int_tensor(axis, "axis")]
    return registry.make_op("ExpandDims", inputs, name=name).outputs[0]


@registry.shape("Squeeze")
def _squeeze_shape(inputs, attrs):
    x, axes = inputs[0], attrs["squeeze_dims"]
    if x.shape.ndims is None:
        return [(x.dtype, TensorShape(None))]
    dims = x.shape.as_list()
    if not axes:
        if None in dims:
            return [(x.dtype, TensorShape(None))]
        return [(x.dtype, TensorShape([d for d in dims if d != 1]))]
    axes = {_norm_axis(a, len(dims), "tf.squeeze") for a in axes}
    for a in sorted(axes):
        if dims[a] not in (None, 1):
            raise ValueError(
                f"tf.squeeze: cannot squeeze dim[{a}] of {x.name}: expected a size of 1, got {dims[a]}"
            )
    return [(x.dtype, TensorShape([d for i, d in enumerate(dims) if i not in axes]))]


@registry.kernel("Squeeze")
def _squeeze_kernel(ctx, node, x):
    axes = tuple(a % max(np.ndim(x), 1) for a in node.attr["squeeze_dims"])
    for a in axes:
        if np.shape(x)[a] != 1:
            raise _invalid(
                node, f"Squeeze: cannot squeeze dim[{a}] of shape {list(np.shape(x))}: it is not 1"
            )
    return np.squeeze(x, axis=axes or None)


registry.gradient("Squeeze")(lambda op, grad: [reshape(grad, shape(op.inputs[0]))])


def squeeze(input, axis=None, name=None, squeeze_dims=None):  # noqa: A002 - TF's argument name
    """`tf.squeeze`: removes dimensions of size 1 (all of them, or those in `axis`)."""
    if squeeze_dims is not None:
        if axis is not None:
            raise ValueError("tf.squeeze: pass either axis or squeeze_dims, not both")
        axis = squeeze_dims
    axes = [] if axis is None else [int(a) for a in np.atleast_1d(axis)]
    return registry.make_op("Squeeze", [convert_to_tensor(input)], {"squeeze_dims": axes}, name=name).outputs[
        0
    ]


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
    axis = _norm_axis(attrs["axis"], len(dims) + 1, "tf.stack")
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
    del dims[_norm_axis(attrs["axis"], len(dims), "tf.unstack")]
    return [(inputs[0].dtype, TensorShape(dims))] * attrs["num"]


@registry.kernel("Unpack")
def _unpack_kernel(ctx, node, x):
    parts = np.moveaxis(x, node.attr["axis"], 0)
    if len(parts) != node.attr["num"]:
        raise _invalid(
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


def constant_strings(values, name=None):
    """A 1-D string constant (`str` items are UTF-8 encoded)."""
    array = np.array([v.encode() if isinstance(v, str) else v for v in values], dtype=object)
    return constant(array, dtype=_dtypes.string, name=name or "Const")
