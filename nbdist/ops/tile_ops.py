"""Ops that repeat elements into a bigger layout: `tile` (``Tile``), `broadcast_to`
(``BroadcastTo``), `broadcast_dynamic_shape` (``BroadcastArgs``) / `broadcast_static_shape`,
`roll` (``Roll``), `reverse_sequence` (``ReverseSequence``), and what TF's Python builds from
them: `repeat`, `meshgrid`, `linspace` / `lin_space`, `sequence_mask`.

Each op's shape function, kernel and gradient sit together; the built names' gradients are
those of the ops they are made of, as in TF.
"""

import builtins

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import get_default_graph
from nbdist.graph.tensor_shape import TensorShape, as_shape
from nbdist.ops import math_ops, registry
from nbdist.ops._shapes import (
    broadcast_shape,
    int_tensor,
    invalid_argument,
    normalize_axis,
    static_length,
    unknown_dims,
)
from nbdist.ops.broadcast_ops import sum_to_shape
from nbdist.ops.cast_select_ops import cast
from nbdist.ops.concat_slice_ops import concat, slice, stack  # noqa: A004 - TF's tf.slice
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.reduction_ops import gather, reduce_max, reduce_sum
from nbdist.ops.reshape_ops import expand_dims, reshape, transpose
from nbdist.ops.scan_ops import cumsum
from nbdist.ops.shape_ops import get_static_value, shape, size

__all__ = [
    "broadcast_dynamic_shape",
    "broadcast_static_shape",
    "broadcast_to",
    "lin_space",
    "linspace",
    "meshgrid",
    "repeat",
    "reverse_sequence",
    "roll",
    "sequence_mask",
    "tile",
]


def _scope(name, default):
    return get_default_graph().name_scope(name or default)


def _ints(value):
    return [int(v) for v in np.ravel(value)]


# -- Tile -------------------------------------------------------------------------------------------
@registry.shape("Tile")
def _tile_shape(inputs, attrs):
    x, multiples_t = inputs
    if multiples_t.shape.ndims not in (None, 1):
        raise ValueError(f"tf.tile: multiples must be a 1-D tensor, got shape {multiples_t.shape}")
    multiples = _partial_shape(multiples_t)
    ndims = x.shape.ndims if x.shape.ndims is not None else static_length(multiples_t)
    if multiples is None or x.shape.ndims is None:
        return unknown_dims(x.dtype, ndims)
    if len(multiples) != x.shape.ndims:
        raise ValueError(
            f"tf.tile: multiples {multiples} needs one entry per dimension of {x.name} "
            f"(shape {x.shape}, rank {x.shape.ndims}), got {len(multiples)}"
        )
    if any(m is not None and m < 0 for m in multiples):
        raise ValueError(f"tf.tile: multiples must be non-negative, got {multiples}")
    dims = [None if d is None or m is None else d * m for d, m in zip(x.shape, multiples)]
    return [(x.dtype, TensorShape(dims))]


@registry.kernel("Tile")
def _tile_kernel(ctx, node, x, multiples):
    x, multiples = np.asarray(x), _ints(multiples)
    if len(multiples) != x.ndim:
        raise invalid_argument(
            node,
            f"Tile: expected multiples argument to be a vector of length {x.ndim} "
            f"but got length {len(multiples)}",
        )
    for i, m in enumerate(multiples):
        if m < 0:
            raise invalid_argument(node, f"Tile: expected multiples[{i}] >= 0, but got {m}")
    return np.tile(x, multiples) if x.ndim else x.copy()


@registry.gradient("Tile")
def _tile_grad(op, grad):
    """TF's: the gradient reshaped to ``[m0, d0, m1, d1, ...]``, summed over the tiles' axes."""
    x, multiples = op.inputs
    split_shape = reshape(transpose(stack([multiples, shape(x, out_type=multiples.dtype)])), [-1])
    axes = math_ops.range(0, size(split_shape), 2)
    dx = reduce_sum(reshape(grad, split_shape), axes)
    dx.set_shape(x.shape)
    return [dx, None]


def tile(input, multiples, name=None):  # noqa: A002 - TF's argument name
    """`tf.tile`: `input` repeated ``multiples[i]`` times along each axis ``i``.

    Raises:
        ValueError: `multiples` has not one entry per dimension (when both are known).
        InvalidArgumentError: at run time, for that or a negative multiple.
    """
    x = convert_to_tensor(input, name="input")
    return registry.make_op("Tile", [x, int_tensor(multiples, "multiples")], name=name or "Tile").outputs[0]


# -- BroadcastTo, BroadcastArgs ---------------------------------------------------------------------
def _broadcast_into(x_dims, target, where):
    """`target` (a list, None for unknown) checked against the dims `x_dims` broadcast into it."""
    if len(x_dims) > len(target):
        raise ValueError(f"{where}: cannot broadcast a tensor of rank {len(x_dims)} to rank {len(target)}")
    out = list(target)
    for i, d in enumerate(x_dims, start=len(target) - len(x_dims)):
        if d is None or d == 1:
            continue
        if out[i] is None:
            out[i] = d
        elif out[i] != d:
            raise ValueError(
                f"{where}: incompatible shapes: {list(x_dims)} cannot broadcast to {list(target)}"
            )
    return out


def _partial_shape(shape_t):
    """The dims a 1-D shape tensor is known to hold while building (None where unknown), as
    TF's ``constant_value_as_shape``: a constant, ``tf.shape(t)`` (t's static shape), or a
    stack of scalars; None when not even its length is known."""
    value = get_static_value(shape_t)
    if value is not None:
        return _ints(value)
    op = shape_t.op
    if op.type == "Shape" and op.inputs[0].shape.ndims is not None:
        return op.inputs[0].shape.as_list()
    if op.type == "Pack" and op.get_attr("axis") == 0 and all(t.shape.ndims == 0 for t in op.inputs):
        return [None if (v := get_static_value(t)) is None else int(v) for t in op.inputs]
    if op.type == "StridedSlice" and (whole := _partial_shape(op.inputs[0])) is not None:
        cut = _one_slice(op)
        if cut is not None:
            return whole[cut]
    n = static_length(shape_t)
    return None if n is None else [None] * n


def _one_slice(op):
    """The Python slice a StridedSlice op of a 1-D tensor takes (None if not one plain slice)."""
    if any(op.get_attr(m) for m in ("ellipsis_mask", "new_axis_mask", "shrink_axis_mask")):
        return None
    begin, end, strides = (get_static_value(t) for t in op.inputs[1:])
    if begin is None or end is None or strides is None or np.size(begin) != 1:
        return None
    start = None if op.get_attr("begin_mask") & 1 else int(np.ravel(begin)[0])
    stop = None if op.get_attr("end_mask") & 1 else int(np.ravel(end)[0])
    return builtins.slice(start, stop, int(np.ravel(strides)[0]))  # (slice is tf.slice here)


@registry.shape("BroadcastTo")
def _broadcast_to_shape(inputs, attrs):
    x, shape_t = inputs
    target = _partial_shape(shape_t)
    if target is None:
        return [(x.dtype, TensorShape(None))]
    if any(d is not None and d < 0 for d in target):
        raise ValueError(f"tf.broadcast_to: shape {target} has a negative dimension")
    if x.shape.ndims is None:
        return [(x.dtype, TensorShape(target))]
    return [(x.dtype, TensorShape(_broadcast_into(x.shape.as_list(), target, "tf.broadcast_to")))]


@registry.kernel("BroadcastTo")
def _broadcast_to_kernel(ctx, node, x, target):
    x, target = np.asarray(x), _ints(target)
    try:
        return np.broadcast_to(x, target).copy()
    except ValueError:
        raise invalid_argument(
            node, f"Unable to broadcast tensor of shape {list(x.shape)} to tensor of shape {target}"
        ) from None


registry.gradient("BroadcastTo")(lambda op, grad: [sum_to_shape(grad, op.inputs[0]), None])


def broadcast_to(input, shape, name=None):  # noqa: A002 - TF's argument name
    """`tf.broadcast_to`: `input` broadcast (numpy's rules) to `shape`.

    Raises:
        ValueError: the static shapes cannot broadcast.
        InvalidArgumentError: at run time, when the shapes cannot broadcast.
    """
    x = convert_to_tensor(input, name="input")
    return registry.make_op(
        "BroadcastTo", [x, int_tensor(shape, "shape")], name=name or "BroadcastTo"
    ).outputs[0]


@registry.shape("BroadcastArgs")
def _broadcast_args_shape(inputs, attrs):
    s0, s1 = inputs
    if s0.dtype != s1.dtype:
        raise TypeError(f"tf.broadcast_dynamic_shape: shapes of dtypes {s0.dtype.name} and {s1.dtype.name}")
    n0, n1 = static_length(s0), static_length(s1)
    return [(s0.dtype, TensorShape([None if n0 is None or n1 is None else max(n0, n1)]))]


@registry.kernel("BroadcastArgs")
def _broadcast_args_kernel(ctx, node, s0, s1):
    try:
        out = np.broadcast_shapes(tuple(_ints(s0)), tuple(_ints(s1)))
    except ValueError:
        raise invalid_argument(
            node, f"Incompatible shapes: {_ints(s0)} vs. {_ints(s1)}: they cannot broadcast"
        ) from None
    return np.asarray(out, np.asarray(s0).dtype)


registry.no_gradient("BroadcastArgs")


def broadcast_dynamic_shape(shape_x, shape_y):
    """`tf.broadcast_dynamic_shape`: the broadcast of two 1-D shape tensors, as a 1-D tensor."""
    sx, sy = int_tensor(shape_x, "shape_x"), int_tensor(shape_y, "shape_y")
    return registry.make_op("BroadcastArgs", [sx, sy], name="BroadcastArgs").outputs[0]


def broadcast_static_shape(shape_x, shape_y):
    """`tf.broadcast_static_shape`: the broadcast of two `TensorShape`s (unknown where it
    cannot be told).

    Raises:
        ValueError: the known dimensions cannot broadcast.
    """
    shape_x, shape_y = as_shape(shape_x), as_shape(shape_y)
    try:
        return broadcast_shape(shape_x, shape_y)
    except ValueError:
        raise ValueError(
            f"Incompatible shapes for broadcasting. Two shapes are {shape_x} and {shape_y}"
        ) from None


# -- Roll -------------------------------------------------------------------------------------------
@registry.shape("Roll")
def _roll_shape(inputs, attrs):
    x, shift, axis = inputs
    for t in (shift, axis):
        if t.shape.ndims not in (None, 0, 1):
            raise ValueError(
                f"tf.roll: shift and axis must be scalars or 1-D, got {t.name} of shape {t.shape}"
            )
    if not shift.shape.is_compatible_with(axis.shape):
        raise ValueError(
            f"tf.roll: shift (shape {shift.shape}) and axis (shape {axis.shape}) must be the same size"
        )
    return [(x.dtype, x.shape)]


@registry.kernel("Roll")
def _roll_kernel(ctx, node, x, shift, axis):
    x, shift, axis = np.asarray(x), np.asarray(shift), np.asarray(axis)
    if shift.ndim > 1 or axis.ndim > 1:
        raise invalid_argument(node, "Roll: shift and axis must be scalars or 1-D vectors")
    if shift.shape != axis.shape:
        raise invalid_argument(
            node,
            f"Roll: shift and axis must have the same size, got shift {shift.tolist()}, axis {axis.tolist()}",
        )
    for a in _ints(axis):
        if not -x.ndim <= a < x.ndim:
            raise invalid_argument(node, f"Roll: axis {a} is out of range for a tensor of rank {x.ndim}")
    if x.ndim == 0:
        return x.copy()
    return np.roll(x, tuple(_ints(shift)), tuple(_ints(axis)))


registry.gradient("Roll")(lambda op, grad: [roll(grad, -op.inputs[1], op.inputs[2]), None, None])


def roll(input, shift, axis, name=None):  # noqa: A002 - TF's argument name
    """`tf.roll`: the elements shifted by `shift` along `axis` (each a scalar or 1-D, the same
    size; a negative axis counts from the end), wrapping around.

    Raises:
        InvalidArgumentError: at run time, for shift and axis of different sizes or an axis out
            of range.
    """
    x = convert_to_tensor(input, name="input")
    inputs = [x, int_tensor(shift, "shift"), int_tensor(axis, "axis")]
    return registry.make_op("Roll", inputs, name=name or "Roll").outputs[0]


# -- ReverseSequence ---------------------------------------------------------------------------------
@registry.shape("ReverseSequence")
def _reverse_sequence_shape(inputs, attrs):
    x, lengths = inputs
    if lengths.shape.ndims not in (None, 1):
        raise ValueError(f"tf.reverse_sequence: seq_lengths must be 1-D, got shape {lengths.shape}")
    if x.shape.ndims is None:
        return [(x.dtype, x.shape)]
    dims, batch = x.shape.as_list(), attrs["batch_dim"]
    n = static_length(lengths)
    if None not in (dims[batch], n) and dims[batch] != n:
        raise ValueError(
            f"tf.reverse_sequence: seq_lengths has {n} entries but {x.name} has {dims[batch]} "
            f"along batch_axis {batch}"
        )
    dims[batch] = dims[batch] if dims[batch] is not None else n
    return [(x.dtype, TensorShape(dims))]


@registry.kernel("ReverseSequence")
def _reverse_sequence_kernel(ctx, node, x, lengths):
    x, lengths = np.asarray(x), _ints(lengths)
    seq, batch = node.attr["seq_dim"], node.attr["batch_dim"]
    for what, dim in (("seq_dim", seq), ("batch_dim", batch)):
        if not 0 <= dim < x.ndim:
            raise invalid_argument(
                node, f"ReverseSequence: {what} {dim} is out of range for input rank {x.ndim}"
            )
    if seq == batch:
        raise invalid_argument(node, f"ReverseSequence: batch_dim == seq_dim == {seq}")
    if len(lengths) != x.shape[batch]:
        raise invalid_argument(
            node,
            f"ReverseSequence: length of seq_lengths ({len(lengths)}) != "
            f"input.dims({batch}) ({x.shape[batch]})",
        )
    out = x.copy()
    source, target = np.moveaxis(x, (batch, seq), (0, 1)), np.moveaxis(out, (batch, seq), (0, 1))
    for b, n in enumerate(lengths):
        if not 0 <= n <= x.shape[seq]:
            raise invalid_argument(
                node, f"ReverseSequence: seq_lens({b}) = {n} is not in [0, input.dim({seq}) = {x.shape[seq]}]"
            )
        target[b, :n] = source[b, :n][::-1]
    return out


@registry.gradient("ReverseSequence")
def _reverse_sequence_grad(op, grad):
    lengths = op.inputs[1]
    return [
        reverse_sequence(grad, lengths, seq_axis=op.get_attr("seq_dim"), batch_axis=op.get_attr("batch_dim")),
        None,
    ]


def _alias(value, old, name, old_name):
    if value is not None and old is not None and value != old:
        raise ValueError(f"cannot specify both '{name}' and '{old_name}'")
    return value if value is not None else old


def reverse_sequence(
    input,  # noqa: A002 - TF's argument name
    seq_lengths,
    seq_axis=None,
    batch_axis=None,
    name=None,
    seq_dim=None,
    batch_dim=None,
):
    """`tf.reverse_sequence`: for each ``b``, the first ``seq_lengths[b]`` elements of slice
    ``b`` of `batch_axis` reversed along `seq_axis` (``seq_dim`` / ``batch_dim``: TF1's names).

    Raises:
        ValueError: both a name and its alias, or axes out of range (negative ones too, as TF's).
        InvalidArgumentError: at run time, for a length above the sequence axis' size.
    """
    seq_axis = _alias(seq_axis, seq_dim, "seq_axis", "seq_dim")
    batch_axis = _alias(batch_axis, batch_dim, "batch_axis", "batch_dim")
    if seq_axis is None:
        raise TypeError("tf.reverse_sequence: seq_axis (or seq_dim) is required")
    x = convert_to_tensor(input, name="input")
    lengths = int_tensor(seq_lengths, "seq_lengths")
    seq, batch = int(seq_axis), 0 if batch_axis is None else int(batch_axis)
    for what, axis in (("seq_dim", seq), ("batch_dim", batch)):
        if axis < 0 or (x.shape.ndims is not None and axis >= x.shape.ndims):
            raise ValueError(
                f"tf.reverse_sequence: {what} must be >= 0 and < the input's rank {x.shape.ndims}, got {axis}"
            )
    if seq == batch:
        raise ValueError(f"tf.reverse_sequence: seq_axis and batch_axis are both {seq}")
    attrs = {"seq_dim": seq, "batch_dim": batch}
    return registry.make_op("ReverseSequence", [x, lengths], attrs, name=name or "ReverseSequence").outputs[0]


# -- built from the ops above, as TF's Python builds them -------------------------------------------
def sequence_mask(lengths, maxlen=None, dtype=_dtypes.bool, name=None):
    """`tf.sequence_mask`: ``mask[i..., j] = j < lengths[i...]``, with ``maxlen`` columns
    (default: the largest length).

    Raises:
        ValueError: `maxlen` is not a scalar.
    """
    with _scope(name, "SequenceMask"):
        lengths = convert_to_tensor(lengths, name="lengths")
        if maxlen is None:
            maxlen = math_ops.maximum(convert_to_tensor(0, dtype=lengths.dtype), reduce_max(lengths))
        else:
            maxlen = convert_to_tensor(maxlen, name="maxlen")
        if maxlen.shape.ndims not in (None, 0):
            raise ValueError(
                "Argument `maxlen` must be scalar for sequence_mask, "
                f"received `maxlen` of shape {maxlen.shape}"
            )
        row = math_ops.range(0, maxlen, 1, dtype=maxlen.dtype)
        result = row < cast(expand_dims(lengths, -1), maxlen.dtype)
        known = get_static_value(lengths)  # (TF's shape inference evaluates a constant's maximum)
        if known is not None and result.shape.ndims is not None and result.shape[-1] is None:
            result.set_shape([*lengths.shape.as_list(), max(0, int(np.max(known, initial=0)))])
        dtype = _dtypes.as_dtype(dtype) if dtype is not None else None
        return result if dtype is None or dtype == _dtypes.bool else cast(result, dtype)


def meshgrid(*args, **kwargs):
    """`tf.meshgrid`: N coordinate arrays from N 1-D tensors (``indexing="xy"``: Cartesian, the
    first two axes swapped; ``"ij"``: matrix indexing).

    Raises:
        TypeError: an unknown keyword argument.
        ValueError: `indexing` is not ``"xy"`` or ``"ij"``.
    """
    indexing = kwargs.pop("indexing", "xy")
    name = kwargs.pop("name", "meshgrid")
    if kwargs:
        raise TypeError(f"Invalid keyword argument(s): {' '.join(sorted(kwargs))}")
    if indexing not in ("xy", "ij"):
        raise ValueError(f"Argument `indexing` parameter must be either 'xy' or 'ij', got '{indexing}'")
    with _scope(name, "meshgrid"):
        ndim = len(args)
        ones = (1,) * ndim
        args = [convert_to_tensor(x) for x in args]
        output = [
            reshape(stack(x) if isinstance(x, list) else x, (*ones[:i], -1, *ones[i + 1 :]))
            for i, x in enumerate(args)
        ]
        shapes = [size(x) for x in args]
        if indexing == "xy" and ndim > 1:
            output[0] = reshape(output[0], (1, -1) + (1,) * (ndim - 2))
            output[1] = reshape(output[1], (-1, 1) + (1,) * (ndim - 2))
            shapes[0], shapes[1] = shapes[1], shapes[0]
        if not args:
            return []
        mult = registry.make_op("Fill", [stack(shapes), convert_to_tensor(1, dtype=args[0].dtype)]).outputs[0]
        return [x * mult for x in output]


def linspace(start, stop, num, name=None, axis=0):
    """`tf.linspace` (`tf.lin_space`): `num` evenly spaced values from `start` to `stop`
    (both included) along a new axis `axis`; `start` and `stop` broadcast against each other.

    Raises:
        ValueError: `axis` is out of range for the result's rank.
    """
    with _scope(name, "linspace"):
        start = convert_to_tensor(start, name="start")
        stop = convert_to_tensor(stop, name="stop", dtype=start.dtype)
        num_int = int_tensor(num, "num", name="num")
        if start.shape.is_fully_defined() and stop.shape.is_fully_defined():
            target = broadcast_static_shape(start.shape, stop.shape)
            start, stop = broadcast_to(start, target.as_list()), broadcast_to(stop, target.as_list())
        else:
            target = broadcast_dynamic_shape(shape(start), shape(stop))
            start, stop = broadcast_to(start, target), broadcast_to(stop, target)
        if start.shape.ndims is None:
            raise ValueError("tf.linspace: start and stop need a known rank")
        ndims = start.shape.ndims + 1
        axis = normalize_axis(int(axis), ndims, "tf.linspace")
        first, last = expand_dims(start, axis), expand_dims(stop, axis)
        n_steps = math_ops.maximum(num_int - 1, 1)
        delta = (last - first) / cast(n_steps, last.dtype)
        first, last = cast(first, delta.dtype), cast(last, delta.dtype)
        range_end = math_ops.where(num_int >= 0, n_steps, -1)
        steps = cast(math_ops.range(1, range_end, dtype=_dtypes.int64), delta.dtype)
        steps = reshape(steps, [1] * axis + [-1] + [1] * (ndims - axis - 1))
        joined = concat([first, first + delta * steps, last], axis)
        count = reshape(cast(num_int, _dtypes.int32), [1])
        sizes = concat(
            [
                convert_to_tensor([-1] * axis, _dtypes.int32),
                count,
                convert_to_tensor([-1] * (ndims - axis - 1), _dtypes.int32),
            ],
            0,
        )
        out = slice(joined, np.zeros(ndims, np.int32), sizes)
        dims = first.shape.as_list()
        known = get_static_value(num_int)
        if known is not None and int(known) < 0:
            raise ValueError(f"tf.linspace: num must be non-negative, got {int(known)}")
        dims[axis] = None if known is None else int(known)
        out.set_shape(dims)
        return out


lin_space = linspace


def repeat(input, repeats, axis=None, name=None):  # noqa: A002 - TF's argument name
    """`tf.repeat`: each element of `input` repeated `repeats` times along `axis` (a scalar, or
    one count per element of that axis); `axis=None` repeats the flattened input.

    Raises:
        TypeError: `axis` is not an int.
        ValueError: `repeats` is more than 1-D or its length does not fit the axis.
    """
    with _scope(name, "Repeat"):
        data = convert_to_tensor(input, name="data")
        if axis is None:
            data, axis = reshape(data, [-1]), 0
        if not isinstance(axis, (int, np.integer)):
            raise TypeError(
                f"Argument `axis` must be an int. Received `axis` = {axis} of type {type(axis).__name__}"
            )
        repeats = int_tensor(repeats, "repeats", name="repeats")
        known = get_static_value(repeats)
        if known is not None and np.any(np.asarray(known) < 0):
            raise ValueError(f"tf.repeat: repeats must be non-negative, got {np.asarray(known).tolist()}")
        repeats = cast(repeats, _dtypes.int32)
        if repeats.shape.ndims not in (None, 0, 1):
            raise ValueError(f"tf.repeat: repeats must be a scalar or 1-D, got shape {repeats.shape}")
        if data.shape.ndims is None:
            raise ValueError("tf.repeat: the input needs a known rank")
        if data.shape.ndims == 0:
            data = reshape(data, [1])
        ndims = data.shape.ndims
        axis = normalize_axis(int(axis), ndims, "tf.repeat")
        if repeats.shape.num_elements() == 1:
            return _repeat_each(data, reshape(repeats, []), axis, known)
        length = data.shape[axis]
        if repeats.shape.ndims == 1 and None not in (length, repeats.shape[0]) and length != repeats.shape[0]:
            raise ValueError(f"Dimensions {length} and {repeats.shape[0]} are not compatible")
        counts = broadcast_to(repeats, stack([shape(data)[axis]]))
        ends = cumsum(counts)
        positions = math_ops.range(0, reduce_sum(counts), 1)
        index = reduce_sum(cast(expand_dims(ends, 0) <= expand_dims(positions, 1), _dtypes.int32), axis=1)
        if axis == 0:
            return gather(data, index)
        perm = [axis, *(i for i in range(ndims) if i != axis)]
        moved = gather(transpose(data, perm), index)  # (nbdist's gather takes axis 0)
        return transpose(moved, list(np.argsort(perm)))


def _repeat_each(data, count, axis, known):
    """`data` with each slice along `axis` repeated `count` (a scalar tensor, `known` its static
    value or None) times."""
    ndims = data.shape.ndims
    one = convert_to_tensor(1, _dtypes.int32)
    tiled = tile(
        expand_dims(data, axis + 1), stack([one] * (axis + 1) + [count] + [one] * (ndims - axis - 1))
    )
    dims = shape(data)
    out = reshape(tiled, concat([dims[:axis], reshape(count * dims[axis], [1]), dims[axis + 1 :]], 0))
    static = data.shape.as_list()
    static[axis] = None if known is None or static[axis] is None else int(np.ravel(known)[0]) * static[axis]
    out.set_shape(static)
    return out
