"""Space <-> batch rearrangements: `space_to_batch_nd` (``SpaceToBatchND``) and
`batch_to_space_nd` (``BatchToSpaceND``), each the other's gradient; TF 1.x's 2-D
`space_to_batch` / `batch_to_space` over them; `required_space_to_batch_paddings` and
`tf.nn.with_space_to_batch` (an op run on the space-to-batch form of its input: how TF builds
dilated convolutions), as TF's Python builds them; `space_to_depth` (``SpaceToDepth``) and
`depth_to_space` (``DepthToSpace``), each the other's gradient, at tf.* and tf.nn.
"""

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import Tensor, get_default_graph
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops._shapes import int_tensor, invalid_argument, unknown_dims
from nbdist.ops.concat_slice_ops import concat, stack
from nbdist.ops.constant_op import constant, convert_to_tensor
from nbdist.ops.shape_ops import get_static_value, shape

__all__ = [
    "batch_to_space",
    "batch_to_space_nd",
    "depth_to_space",
    "required_space_to_batch_paddings",
    "space_to_batch",
    "space_to_batch_nd",
    "space_to_depth",
]


def _ints(value):
    return [int(v) for v in np.ravel(value)]


def _pairs(value, m, what):
    pairs = np.asarray(value).reshape(-1, 2) if np.size(value) else np.zeros((0, 2), np.int64)
    if len(pairs) != m:
        raise ValueError(
            f"{what} must have shape [{m}, 2] (one pair per block dimension), got {np.shape(value)}"
        )
    return [(int(a), int(b)) for a, b in pairs]


def _static_args(inputs, op_name, what):
    """``(block, pairs)`` when both are known while building (else None), checked."""
    x, block_t, pairs_t = inputs
    block, pairs = get_static_value(block_t), get_static_value(pairs_t)
    if block is None:
        return None, None
    block = _ints(block)
    if any(b < 1 for b in block):
        raise ValueError(f"{op_name}: block_shape must be positive, got {block}")
    if x.shape.ndims is not None and x.shape.ndims < len(block) + 1:
        raise ValueError(
            f"{op_name}: the input must have rank >= {len(block) + 1} (a batch and {len(block)} block "
            f"dimensions), got {x.shape}"
        )
    if pairs is None:
        return block, None
    pairs = _pairs(pairs, len(block), f"{op_name}: {what}")
    if any(a < 0 or b < 0 for a, b in pairs):
        raise ValueError(f"{op_name}: {what} must be non-negative, got {[list(p) for p in pairs]}")
    return block, pairs


# -- SpaceToBatchND ----------------------------------------------------------------------------------
@registry.shape("SpaceToBatchND")
def _space_to_batch_shape(inputs, attrs):
    x = inputs[0]
    block, pads = _static_args(inputs, "tf.space_to_batch_nd", "paddings")
    if x.shape.ndims is None or block is None:
        return unknown_dims(x.dtype, x.shape.ndims)
    dims, m = x.shape.as_list(), len(block)
    out = [None if dims[0] is None else dims[0] * int(np.prod(block))]
    for i, b in enumerate(block):
        d = dims[1 + i]
        if d is None or pads is None:
            out.append(None)
            continue
        padded = d + pads[i][0] + pads[i][1]
        if padded % b:
            raise ValueError(
                f"tf.space_to_batch_nd: padded_shape[{i}]={padded} is not divisible by block_shape[{i}]={b}"
            )
        out.append(padded // b)
    return [(x.dtype, TensorShape(out + dims[1 + m :]))]


def _space_to_batch(x, block, pads):
    m, batch = len(block), x.shape[0]
    padded = np.pad(x, [(0, 0), *pads] + [(0, 0)] * (x.ndim - 1 - m))
    split = [batch]
    for i, b in enumerate(block):
        split += [padded.shape[1 + i] // b, b]
    y = padded.reshape(split + list(x.shape[1 + m :]))
    perm = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)]
    perm += list(range(1 + 2 * m, y.ndim))
    return y.transpose(perm).reshape(
        [batch * int(np.prod(block))] + [y.shape[1 + 2 * i] for i in range(m)] + list(x.shape[1 + m :])
    )


@registry.kernel("SpaceToBatchND")
def _space_to_batch_kernel(ctx, node, x, block, pads):
    x, block = np.asarray(x), _ints(block)
    if any(b < 1 for b in block):
        raise invalid_argument(node, f"SpaceToBatchND: block_shape must be positive, got {block}")
    pads = [tuple(p) for p in np.asarray(pads).reshape(-1, 2).tolist()]
    if len(pads) != len(block) or x.ndim < len(block) + 1:
        raise invalid_argument(
            node,
            f"SpaceToBatchND: input of shape {list(x.shape)}, block_shape {block} and paddings {pads} "
            "do not fit",
        )
    if any(a < 0 or b < 0 for a, b in pads):
        raise invalid_argument(
            node, f"SpaceToBatchND: paddings must be non-negative, got {[list(p) for p in pads]}"
        )
    for i, b in enumerate(block):
        padded = x.shape[1 + i] + pads[i][0] + pads[i][1]
        if padded % b:
            raise invalid_argument(
                node, f"SpaceToBatchND: padded_shape[{i}]={padded} is not divisible by block_shape[{i}]={b}"
            )
    return _space_to_batch(x, block, pads)


registry.gradient("SpaceToBatchND")(
    lambda op, grad: [batch_to_space_nd(grad, op.inputs[1], op.inputs[2]), None, None]
)


def space_to_batch_nd(input, block_shape, paddings, name=None):  # noqa: A002 - TF's argument name
    """`tf.space_to_batch_nd`: the spatial dimensions (after the batch one) zero-padded by
    `paddings` (``[M, 2]``) and cut into ``block_shape`` blocks (``[M]``), moved into the batch
    dimension: ``[batch * prod(block_shape), padded / block_shape..., rest...]``.

    Raises:
        ValueError: block_shape not positive, paddings negative, or a padded size not divisible.
        InvalidArgumentError: at run time, for those.
    """
    x = convert_to_tensor(input, name="input")
    inputs = [x, int_tensor(block_shape, "block_shape"), int_tensor(paddings, "paddings")]
    return registry.make_op("SpaceToBatchND", inputs, name=name or "SpaceToBatchND").outputs[0]


# -- BatchToSpaceND ----------------------------------------------------------------------------------
@registry.shape("BatchToSpaceND")
def _batch_to_space_shape(inputs, attrs):
    x = inputs[0]
    block, crops = _static_args(inputs, "tf.batch_to_space_nd", "crops")
    if x.shape.ndims is None or block is None:
        return unknown_dims(x.dtype, x.shape.ndims)
    dims, m, n = x.shape.as_list(), len(block), int(np.prod(block))
    if dims[0] is not None and dims[0] % n:
        raise ValueError(
            f"tf.batch_to_space_nd: the input's batch dimension ({dims[0]}) is not divisible by the "
            f"product of the block sizes ({n})"
        )
    out = [None if dims[0] is None else dims[0] // n]
    for i, b in enumerate(block):
        d = dims[1 + i]
        size = None if d is None or crops is None else d * b - crops[i][0] - crops[i][1]
        if size is not None and size < 0:
            raise ValueError(
                f"tf.batch_to_space_nd: crops {crops[i]} exceed the size {d * b} of dimension {1 + i}"
            )
        out.append(size)
    return [(x.dtype, TensorShape(out + dims[1 + m :]))]


def _batch_to_space(x, block, crops):
    m, n = len(block), int(np.prod(block))
    batch, spatial, rest = x.shape[0] // n, list(x.shape[1 : 1 + m]), list(x.shape[1 + m :])
    y = x.reshape([*block, batch, *spatial, *rest])
    perm = [m]
    for i in range(m):
        perm += [m + 1 + i, i]
    perm += list(range(2 * m + 1, y.ndim))
    y = y.transpose(perm).reshape([batch] + [d * b for d, b in zip(spatial, block)] + rest)
    index = (slice(None), *(slice(a, y.shape[1 + i] - b) for i, (a, b) in enumerate(crops)))
    return y[index]


@registry.kernel("BatchToSpaceND")
def _batch_to_space_kernel(ctx, node, x, block, crops):
    x, block = np.asarray(x), _ints(block)
    if any(b < 1 for b in block):
        raise invalid_argument(node, f"BatchToSpaceND: block_shape must be positive, got {block}")
    crops = [tuple(c) for c in np.asarray(crops).reshape(-1, 2).tolist()]
    if len(crops) != len(block) or x.ndim < len(block) + 1:
        raise invalid_argument(
            node,
            f"BatchToSpaceND: input of shape {list(x.shape)}, block_shape {block} and crops {crops} "
            "do not fit",
        )
    if any(a < 0 or b < 0 for a, b in crops):
        raise invalid_argument(
            node, f"BatchToSpaceND: crops must be non-negative, got {[list(c) for c in crops]}"
        )
    n = int(np.prod(block))
    if x.shape[0] % n:
        raise invalid_argument(
            node,
            f"BatchToSpaceND: input batch dimension ({x.shape[0]}) is not divisible by product of "
            f"block sizes ({n})",
        )
    for i, (b, (start, end)) in enumerate(zip(block, crops)):
        if start + end > x.shape[1 + i] * b:
            raise invalid_argument(
                node,
                f"BatchToSpaceND: cropped size must be non-negative: start {start}, end {end}, "
                f"size {x.shape[1 + i] * b}",
            )
    return _batch_to_space(x, block, crops)


registry.gradient("BatchToSpaceND")(
    lambda op, grad: [space_to_batch_nd(grad, op.inputs[1], op.inputs[2]), None, None]
)


def batch_to_space_nd(input, block_shape, crops, name=None):  # noqa: A002 - TF's argument name
    """`tf.batch_to_space_nd`: the inverse of `space_to_batch_nd`: the batch dimension's blocks
    moved back into the spatial dimensions, then cropped by `crops` (``[M, 2]``).

    Raises:
        ValueError: block_shape not positive, crops negative or too big, or a batch size not
            divisible by ``prod(block_shape)``.
        InvalidArgumentError: at run time, for those.
    """
    x = convert_to_tensor(input, name="input")
    inputs = [x, int_tensor(block_shape, "block_shape"), int_tensor(crops, "crops")]
    return registry.make_op("BatchToSpaceND", inputs, name=name or "BatchToSpaceND").outputs[0]


# -- SpaceToDepth, DepthToSpace (NHWC) ------------------------------------------------------------------
def _depth_attrs(op_name, block_size, data_format):
    if data_format != "NHWC":
        raise ValueError(
            f"tf.{op_name}: data_format {data_format!r} is not supported: TensorFlow's CPU kernel "
            "(and nbdist) take NHWC; transpose the input to NHWC first"
        )
    block_size = int(block_size)
    if block_size < 2:
        raise ValueError(f"tf.{op_name}: block_size must be at least 2, got {block_size}")
    return {"block_size": block_size, "data_format": data_format}


def _depth_dims(x, op_name):
    if x.shape.ndims not in (None, 4):
        raise ValueError(f"tf.{op_name}: the input must be 4-D [batch, height, width, depth], got {x.shape}")
    return [None] * 4 if x.shape.ndims is None else x.shape.as_list()


@registry.shape("SpaceToDepth")
def _space_to_depth_shape(inputs, attrs):
    x, bs = inputs[0], attrs["block_size"]
    b, h, w, c = _depth_dims(x, "space_to_depth")
    for d in (h, w):
        if d is not None and d % bs:
            raise ValueError(f"tf.space_to_depth: dimension size must be evenly divisible by {bs} but is {d}")
    out = [
        b,
        None if h is None else h // bs,
        None if w is None else w // bs,
        None if c is None else c * bs * bs,
    ]
    return [(x.dtype, TensorShape(out))]


@registry.kernel("SpaceToDepth")
def _space_to_depth_kernel(ctx, node, x):
    x, bs = np.asarray(x), node.attr["block_size"]
    if x.ndim != 4:
        raise invalid_argument(node, f"SpaceToDepth: input must be 4-D, got shape {list(x.shape)}")
    b, h, w, c = x.shape
    if h % bs or w % bs:
        raise invalid_argument(
            node, f"SpaceToDepth: image width {w} and height {h} should be divisible by block_size: {bs}"
        )
    y = x.reshape(b, h // bs, bs, w // bs, bs, c).transpose(0, 1, 3, 2, 4, 5)
    return y.reshape(b, h // bs, w // bs, bs * bs * c)


registry.gradient("SpaceToDepth")(lambda op, grad: [depth_to_space(grad, op.get_attr("block_size"))])


def space_to_depth(input, block_size, name=None, data_format="NHWC"):  # noqa: A002 - TF's argument name
    """`tf.space_to_depth` (`tf.nn.space_to_depth`): each ``block_size x block_size`` block of
    pixels becomes ``block_size**2`` times the channels (NHWC).

    Raises:
        ValueError: not NHWC, block_size below 2, or height / width not divisible by it.
    """
    attrs = _depth_attrs("space_to_depth", block_size, data_format)
    x = convert_to_tensor(input, name="input")
    return registry.make_op("SpaceToDepth", [x], attrs, name=name or "SpaceToDepth").outputs[0]


@registry.shape("DepthToSpace")
def _depth_to_space_shape(inputs, attrs):
    x, bs = inputs[0], attrs["block_size"]
    b, h, w, c = _depth_dims(x, "depth_to_space")
    if c is not None and c % (bs * bs):
        raise ValueError(
            f"tf.depth_to_space: dimension size must be evenly divisible by {bs * bs} but is {c}"
        )
    out = [
        b,
        None if h is None else h * bs,
        None if w is None else w * bs,
        None if c is None else c // (bs * bs),
    ]
    return [(x.dtype, TensorShape(out))]


@registry.kernel("DepthToSpace")
def _depth_to_space_kernel(ctx, node, x):
    x, bs = np.asarray(x), node.attr["block_size"]
    if x.ndim != 4:
        raise invalid_argument(node, f"DepthToSpace: input must be 4-D, got shape {list(x.shape)}")
    b, h, w, c = x.shape
    if c % (bs * bs):
        raise invalid_argument(
            node, f"DepthToSpace: input depth dimension {c} should be divisible by: {bs * bs}"
        )
    y = x.reshape(b, h, w, bs, bs, c // (bs * bs)).transpose(0, 1, 3, 2, 4, 5)
    return y.reshape(b, h * bs, w * bs, c // (bs * bs))


registry.gradient("DepthToSpace")(lambda op, grad: [space_to_depth(grad, op.get_attr("block_size"))])


def depth_to_space(input, block_size, name=None, data_format="NHWC"):  # noqa: A002 - TF's argument name
    """`tf.depth_to_space` (`tf.nn.depth_to_space`): the channels become ``block_size x
    block_size`` blocks of pixels (NHWC); the inverse of `space_to_depth`.

    Raises:
        ValueError: not NHWC, block_size below 2, or the depth not divisible by its square.
    """
    attrs = _depth_attrs("depth_to_space", block_size, data_format)
    x = convert_to_tensor(input, name="input")
    return registry.make_op("DepthToSpace", [x], attrs, name=name or "DepthToSpace").outputs[0]


# -- TF 1.x's 2-D forms -------------------------------------------------------------------------------
def _block_size(block_size, block_shape):
    if block_size is not None and block_shape is not None and block_size != block_shape:
        raise ValueError("Cannot specify both 'block_shape' and 'block_size'.")
    size = block_shape if block_shape is not None else block_size
    if size is None:
        raise TypeError("block_size (or block_shape) is required")
    return np.array([size, size], dtype=np.int64)


def _rank_4(result, what):
    if result.shape.ndims not in (None, 4):
        raise ValueError(f"{what}: the input must be 4-D [batch, height, width, depth], got {result.shape}")
    result.set_shape([None] * 4)
    return result


def space_to_batch(input, paddings, block_size=None, name=None, block_shape=None):  # noqa: A002 - TF's
    """`tf.space_to_batch` (`tf.nn.space_to_batch`): `space_to_batch_nd` of a 4-D input with a
    square ``block_size x block_size`` block (``block_shape``: the newer name)."""
    block = _block_size(block_size, block_shape)
    return _rank_4(space_to_batch_nd(input, block, paddings, name=name), "tf.space_to_batch")


def batch_to_space(input, crops, block_size, name=None, block_shape=None):  # noqa: A002 - TF's
    """`tf.batch_to_space`: `batch_to_space_nd` of a 4-D input with a square block."""
    block = _block_size(block_size, block_shape)
    return _rank_4(batch_to_space_nd(input, block, crops, name=name), "tf.batch_to_space")


# -- required_space_to_batch_paddings, with_space_to_batch ---------------------------------------------
def required_space_to_batch_paddings(input_shape, block_shape, base_paddings=None, name=None):
    """`tf.required_space_to_batch_paddings`: ``(paddings, crops)``, each ``[M, 2]`` int32: the
    least padding beyond `base_paddings` that makes ``input_shape + paddings`` divisible by
    `block_shape`, and the crops that undo the extra part.

    Raises:
        ValueError: `block_shape` is not a 1-D tensor of known length, or the shapes disagree.
    """
    with get_default_graph().name_scope(name or "required_space_to_batch_paddings"):
        input_shape = convert_to_tensor(input_shape, _dtypes.int32, name="input_shape")
        block_shape = convert_to_tensor(block_shape, _dtypes.int32, name="block_shape")
        if block_shape.shape.ndims != 1 or not block_shape.shape.is_fully_defined():
            raise ValueError(
                f"block_shape must be a 1-D tensor of known length, got shape {block_shape.shape}"
            )
        m = block_shape.shape[0]
        if m == 0:
            return constant(np.zeros([0, 2], np.int32)), constant(np.zeros([0, 2], np.int32))
        if not input_shape.shape.is_compatible_with([m]):
            raise ValueError(
                f"input_shape of shape {input_shape.shape} does not fit block_shape's {m} dimensions"
            )
        if base_paddings is None:
            base_paddings = constant(np.zeros([m, 2], np.int32))
        base_paddings = convert_to_tensor(base_paddings, _dtypes.int32, name="base_paddings")
        if not base_paddings.shape.is_compatible_with([m, 2]):
            raise ValueError(f"base_paddings must have shape [{m}, 2], got {base_paddings.shape}")
        known = [get_static_value(t) for t in (block_shape, input_shape, base_paddings)]
        if all(v is not None for v in known):
            block_shape, input_shape, base_paddings = (np.asarray(v, np.int32) for v in known)
        pad_start, orig_pad_end = base_paddings[:, 0], base_paddings[:, 1]
        full = input_shape + pad_start + orig_pad_end
        extra = (block_shape - full % block_shape) % block_shape
        pad_end = orig_pad_end + extra
        paddings = stack([stack([pad_start[i], pad_end[i]]) for i in range(m)], name="paddings")
        crops = stack([stack([np.int32(0), extra[i]]) for i in range(m)], name="crops")
        return paddings, crops


def _adjust(orig, fill_value, spatial_dims):
    """TF's ``_with_space_to_batch_adjust``: `orig`'s rows placed at ``spatial_dims - 1``,
    `fill_value` rows between (numpy when `orig` is known)."""
    known = get_static_value(orig) if isinstance(orig, Tensor) else np.asarray(orig)
    value = known if known is not None else orig
    fill_dims = list(np.shape(known)[1:]) if known is not None else orig.shape.as_list()[1:]
    dtype = np.asarray(known).dtype if known is not None else orig.dtype.np
    parts, prev, i = [], 0, 0
    while i < len(spatial_dims):
        start_i, start = i, spatial_dims[i]
        if start > 1:
            parts.append(np.full([start - 1 - prev, *fill_dims], fill_value, dtype=dtype))
        while i + 1 < len(spatial_dims) and spatial_dims[i + 1] == spatial_dims[i] + 1:
            i += 1
        parts.append(value[start_i : i + 1])
        prev = spatial_dims[i]
        i += 1
    if known is not None:
        return np.concatenate(parts)
    return concat([convert_to_tensor(p, orig.dtype) if isinstance(p, np.ndarray) else p for p in parts], 0)


def _base_paddings(filter_shape, n, rate):
    """TF's: ``(filter - 1) * rate`` split between start and end (the start half rounded down)."""
    extra = (filter_shape[:n] - 1) * rate
    start = extra // 2
    end = extra - start
    return stack([stack([start[i], end[i]]) for i in range(n)])


def _spatial_dims(spatial_dims, n, data_format):
    start = 2 if data_format is not None and data_format.startswith("NC") else 1
    dims = list(range(start, n + start)) if spatial_dims is None else [int(d) for d in spatial_dims]
    if dims != sorted(set(dims)) or any(d < 1 for d in dims):
        raise ValueError(
            "`spatial_dims` must be a monotonically increasing sequence of positive integers. "
            f"Received: spatial_dims={dims}"
        )
    return dims


def with_space_to_batch(
    input,  # noqa: A002 - TF's argument name
    dilation_rate,
    padding,
    op,
    filter_shape=None,
    spatial_dims=None,
    data_format=None,
):
    """`tf.nn.with_space_to_batch`: ``op(input, num_spatial_dims, padding)`` computed as TF
    computes dilated convolutions: `op` with ``"VALID"`` padding on the space-to-batch form of
    `input` (block `dilation_rate`, padded for `padding` and the filter), turned back with
    batch-to-space. A rate of all ones calls `op` on `input` directly.

    Raises:
        ValueError: `dilation_rate` not 1-D of known length or not positive, `spatial_dims` not
            increasing, the input's rank too small, `padding` unknown, or ``"SAME"`` without
            `filter_shape`.
    """
    x = convert_to_tensor(input, name="input")
    rate = convert_to_tensor(dilation_rate, _dtypes.int32, name="dilation_rate")
    if rate.shape.ndims != 1 or not rate.shape.is_fully_defined():
        raise ValueError(
            f"`dilation_rate` must be 1-D of known length. Received: dilation_rate of shape {rate.shape}"
        )
    n = rate.shape[0]
    dims = _spatial_dims(spatial_dims, n, data_format)
    rank = dims[-1] if data_format is not None and data_format.startswith("NC") else dims[-1] + 1
    if x.shape.ndims is not None and x.shape.ndims < rank:
        raise ValueError(f"`input.shape.rank` must be at least {rank}. Received: input.shape={x.shape}")
    known_rate = get_static_value(rate)
    if known_rate is not None:
        if np.any(known_rate < 1):
            raise ValueError(
                f"`dilation_rate` must be positive. Received: dilation_rate={known_rate.tolist()}"
            )
        if np.all(known_rate == 1):
            return op(x, n, padding)
    rate_value = known_rate if known_rate is not None else rate
    if padding == "SAME":
        if filter_shape is None:
            raise ValueError("`filter_shape` must be specified for `padding='SAME'`")
        filter_shape = convert_to_tensor(filter_shape, name="filter_shape")
        known_filter = get_static_value(filter_shape)
        base = _base_paddings(known_filter if known_filter is not None else filter_shape, n, rate_value)
    elif padding == "VALID":
        base = np.zeros([n, 2], np.int32)
    else:
        raise ValueError(f"`padding` must be one of 'SAME' or 'VALID'. Received: padding={padding!r}")
    static = x.shape.as_list() if x.shape.ndims is not None else None
    if static is not None and None not in [static[i] for i in dims]:
        spatial = [static[i] for i in dims]
    else:
        spatial = stack([shape(x)[i] for i in dims])
    paddings, crops = required_space_to_batch_paddings(spatial, rate, base_paddings=base)
    block = _adjust(rate, 1, dims)
    converted = space_to_batch_nd(x, block, _adjust(paddings, 0, dims))
    result = op(converted, n, "VALID")
    return batch_to_space_nd(result, block, _adjust(crops, 0, dims))
