"""`tensor[...]` and `tf.strided_slice`: TF's `StridedSlice` op and its gradient `StridedSliceGrad`.

``x[1:3, 0]``, ``x[:, -1]``, ``x[..., tf.newaxis]``, ``x[::2]`` and ``x[i]`` with ``i`` an int
tensor are recorded as one `StridedSlice` whose begin, end and strides are int32 tensors and
whose five bit masks say, per index, what it was: a slice with no start (`begin_mask`) or
no stop (`end_mask`), ``...`` (`ellipsis_mask`), ``None`` (`new_axis_mask`) or a single
index that drops its axis (`shrink_axis_mask`). The kernel rebuilds the numpy index from
them, so slicing follows numpy's (= TF's) clamping rules; an out-of-range single index is an
`InvalidArgumentError`, as in TF.
"""

import numpy as np

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import Tensor, get_default_graph
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops.array_ops import get_static_value, shape
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.math_ops import cast

__all__ = ["strided_slice"]

_MASKS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")


def _numpy_index(begin, end, strides, attrs):
    """The numpy index (a tuple of slices, ints, ``...`` and ``None``) the op's inputs describe."""
    index = []
    for i, (b, e, s) in enumerate(zip(begin, end, strides)):
        bit = 1 << i
        if attrs["ellipsis_mask"] & bit:
            index.append(Ellipsis)
        elif attrs["new_axis_mask"] & bit:
            index.append(None)
        elif attrs["shrink_axis_mask"] & bit:
            index.append(int(b))
        else:
            start = None if attrs["begin_mask"] & bit else int(b)
            stop = None if attrs["end_mask"] & bit else int(e)
            index.append(slice(start, stop, int(s)))
    return tuple(index)


def _static_elements(t):
    """The values of a 1-D int tensor known while building, None for each unknown element."""
    value = get_static_value(t)
    if value is not None:
        return [int(v) for v in value]
    if t.op.type == "Pack":
        return [None if (v := get_static_value(i)) is None else int(v) for i in t.op.inputs]
    return None


def _input_axes(index, ndim):
    """For each entry of a numpy index, the input axis it consumes (None for ``...`` and ``None``)."""
    consuming = sum(1 for e in index if e is not None and e is not Ellipsis)
    axes, axis = [], 0
    for e in index:
        if e is None or e is Ellipsis:
            axes.append(None)
            axis += (ndim - consuming) if e is Ellipsis else 0
        else:
            axes.append(axis)
            axis += 1
    return axes


def _sliced_shape(x, begin, end, strides, attrs):
    """Static shape of the slice: numpy's shape of the index into zero-strided stand-in arrays whose
    unknown dimensions (and unknown bounds) take different values in each run; a dimension that
    differs between the runs is unknown."""
    dims = x.shape.as_list()
    runs = ((2**20 + 3, 0, 2**30), (2**20 + 7, 1, 1), (1, 0, 2**30))
    shapes = []
    for size, begin_guess, end_guess in runs:
        known = [size if d is None else d for d in dims]
        index = list(
            _numpy_index(
                [begin_guess if v is None else v for v in begin],
                [end_guess if v is None else v for v in end],
                strides,
                attrs,
            )
        )
        for k, axis in enumerate(_input_axes(index, len(dims))):
            if isinstance(index[k], int) and (begin[k] is None or dims[axis] is None):
                index[k] = 0  # a single index drops its axis whatever its value
        shapes.append(np.broadcast_to(np.empty((), np.int8), known)[tuple(index)].shape)
    return [d if all(s[i] == d for s in shapes) else None for i, d in enumerate(shapes[0])]


@registry.shape("StridedSlice")
def _strided_slice_shape(inputs, attrs):
    x, begin, end, strides = inputs
    begin, end, strides = (_static_elements(t) for t in (begin, end, strides))
    if x.shape.ndims is None or begin is None or end is None or strides is None or None in strides:
        return [(x.dtype, TensorShape(None))]
    if 0 in strides:
        raise ValueError(f"strided slice of {x.name}: strides must be non-zero, got {strides}")
    try:
        dims = _sliced_shape(x, begin, end, strides, attrs)
    except IndexError as e:
        raise ValueError(f"slice of {x.name} (shape {x.shape}) is out of bounds: {e}") from None
    return [(x.dtype, TensorShape(dims))]


def _invalid(node, x_shape, e):
    return errors.InvalidArgumentError(
        node.name, None, f"slice of a tensor of shape {list(x_shape)} is out of bounds: {e}"
    )


@registry.kernel("StridedSlice")
def _strided_slice_kernel(ctx, node, x, begin, end, strides):
    if 0 in list(strides):
        raise errors.InvalidArgumentError(node.name, None, f"strides must be non-zero, got {list(strides)}")
    x = np.asarray(x)
    try:
        return np.array(x[_numpy_index(begin, end, strides, node.attr)])
    except IndexError as e:
        raise _invalid(node, x.shape, e) from None


@registry.gradient("StridedSlice")
def _strided_slice_grad(op, grad):
    x, begin, end, strides = op.inputs
    attrs = {m: op.get_attr(m) for m in _MASKS}
    dx = registry.make_op("StridedSliceGrad", [shape(x), begin, end, strides, grad], attrs).outputs[0]
    return [dx, None, None, None]


@registry.shape("StridedSliceGrad")
def _strided_slice_grad_shape(inputs, attrs):
    dims = get_static_value(inputs[0])
    return [(inputs[4].dtype, TensorShape(None if dims is None else [int(d) for d in dims]))]


@registry.kernel("StridedSliceGrad")
def _strided_slice_grad_kernel(ctx, node, x_shape, begin, end, strides, dy):
    dx = np.zeros([int(d) for d in x_shape], dtype=np.asarray(dy).dtype)
    dx[_numpy_index(begin, end, strides, node.attr)] = dy
    return dx


@registry.gradient("StridedSliceGrad")
def _strided_slice_grad_grad(op, grad):
    _, begin, end, strides, _ = op.inputs
    attrs = {m: op.get_attr(m) for m in _MASKS}
    return [
        None,
        None,
        None,
        None,
        registry.make_op("StridedSlice", [grad, begin, end, strides], attrs).outputs[0],
    ]


def strided_slice(
    input_,
    begin,
    end,
    strides=None,
    begin_mask=0,
    end_mask=0,
    ellipsis_mask=0,
    new_axis_mask=0,
    shrink_axis_mask=0,
    var=None,
    name=None,
):
    """`tf.strided_slice`: the slice ``input_[begin:end:strides]`` per axis, with TF's bit masks.

    Prefer indexing (``x[1:, 0]``), which builds this op. `var` is accepted for TF's signature.

    Raises:
        ValueError: if begin, end and strides differ in length, a stride is statically zero,
            or a constant index is out of bounds.
    """
    begin, end = convert_to_tensor(begin, _dtypes.int32), convert_to_tensor(end, _dtypes.int32)
    strides = convert_to_tensor(
        np.ones(begin.shape.as_list(), np.int32) if strides is None else strides, _dtypes.int32
    )
    if not (begin.shape.is_compatible_with(end.shape) and begin.shape.is_compatible_with(strides.shape)):
        raise ValueError(
            f"strided_slice: begin {begin.shape}, end {end.shape} and strides {strides.shape} differ"
        )
    attrs = dict(zip(_MASKS, (begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask)))
    return registry.make_op(
        "StridedSlice", [convert_to_tensor(input_), begin, end, strides], attrs, name=name or "strided_slice"
    ).outputs[0]


def _index_tensor(value):
    """An index or slice bound: a Python int, or a scalar int tensor (cast to int32)."""
    if isinstance(value, Tensor):
        if not value.dtype.is_integer:
            raise TypeError(f"tensor index {value.name} must be an integer, got {value.dtype.name}")
        return value if value.dtype == _dtypes.int32 else cast(value, _dtypes.int32)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(
            f"only integers, slices (`:`), ellipsis (`...`), tf.newaxis (`None`) and scalar int tensors "
            f"are valid indices, got {value!r}"
        )
    return int(value)


def getitem(tensor, slice_spec):
    """``tensor[slice_spec]`` (TF's ``_slice_helper``): one `StridedSlice` op named ``strided_slice``."""
    if not isinstance(slice_spec, tuple):
        slice_spec = (slice_spec,)
    begin, end, strides = [], [], []
    masks = dict.fromkeys(_MASKS, 0)
    for i, s in enumerate(slice_spec):
        bit = 1 << i
        if isinstance(s, slice):
            for bound, values, mask in ((s.start, begin, "begin_mask"), (s.stop, end, "end_mask")):
                values.append(0 if bound is None else _index_tensor(bound))
                masks[mask] |= bit if bound is None else 0
            strides.append(1 if s.step is None else _index_tensor(s.step))
        elif s is Ellipsis or s is None:
            begin.append(0), end.append(0), strides.append(1)
            masks["ellipsis_mask" if s is Ellipsis else "new_axis_mask"] |= bit
        else:
            index = _index_tensor(s)
            begin.append(index), end.append(index + 1), strides.append(1)
            masks["shrink_axis_mask"] |= bit
    with get_default_graph().name_scope("strided_slice") as scope:
        packed = [
            convert_to_tensor(v, _dtypes.int32, name=n)
            for v, n in ((begin, "stack"), (end, "stack_1"), (strides, "stack_2"))
        ]
        return strided_slice(tensor, *packed, **masks, name=scope)


Tensor.__getitem__ = getitem
