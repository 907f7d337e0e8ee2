"""Fractional pooling (`tf.nn`): fractional_max_pool, fractional_avg_pool.

TF's ops `FractionalMaxPool` / `FractionalAvgPool` (``pooling_ratio``, ``pseudo_random``,
``overlapping``, ``deterministic``, ``seed``, ``seed2``) return the pooled value and the row and
column pooling sequences (cumulative window boundaries, int64); their gradients are
`FractionalMaxPoolGrad` (each window's gradient to its first maximum, row-major, as TF) and
`FractionalAvgPoolGrad` (spread evenly over the window), neither differentiable, as in TF.

The sequences follow TF's rules (``GeneratePoolingSequence``): an even split when the ratio
divides the size; else ``k = size // out`` steps with ``size % out`` of them one longer,
shuffled (random), or ``ceil(alpha * (i + u))`` for one uniform ``u`` (pseudo random). The
draws are numpy's, not TF's Philox stream: for the same seed the regions differ from TF's; given
the same sequences the values are TF's.
"""

import math

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops._shapes import invalid_argument
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.shape_ops import shape as shape_of

__all__ = ["fractional_avg_pool", "fractional_max_pool"]


def _out_dims(dims, ratio):
    return [None if d is None else math.floor(d / r) for d, r in zip(dims, ratio)]


def _shape(inputs, attrs):
    (x,) = inputs
    if x.shape.ndims not in (None, 4):
        raise ValueError(f"fractional pooling needs a 4-D input (NHWC), {x.name} has shape {x.shape}")
    dims = x.shape.as_list() if x.shape.ndims else [None] * 4
    out = _out_dims(dims, attrs["pooling_ratio"])
    rows, cols = (None if d is None else d + 1 for d in out[1:3])
    return [
        (x.dtype, TensorShape(out)),
        (_dtypes.int64, TensorShape([rows])),
        (_dtypes.int64, TensorShape([cols])),
    ]


def _sequence(size, out, rng, pseudo_random):
    """TF's ``GeneratePoolingSequence``: the cumulative boundaries ``[0, ..., size]``."""
    if size % out == 0:
        diff = np.full(out, size // out)
    elif pseudo_random:
        alpha, k = size / out, size // out
        max_u = min((k + 2) / alpha - 1, (size + 1 - k) / alpha - (out - 1))
        u = rng.random_sample() * max_u
        cum = np.array([1, *(math.ceil(alpha * (i + u)) for i in range(1, out)), size + 1])
        diff = np.diff(cum)
    else:
        diff = np.full(out, size // out)
        diff[: size % out] += 1
        rng.shuffle(diff)
    return np.concatenate([[0], np.cumsum(diff)]).astype(np.int64)


def _windows(seq, size, overlapping):
    """Each output's inclusive ``(start, end)`` over one dimension."""
    ends = seq[1:] if overlapping else seq[1:] - 1
    return list(zip(seq[:-1], np.minimum(ends, size - 1)))


def _sequences(node, x):
    a = node.attr
    ratio = a["pooling_ratio"]
    if not a["deterministic"] and (a["seed"] or a["seed2"]):
        raise invalid_argument(node, "Both seed and seed2 should be 0 if deterministic is false.")
    for i in range(4):
        if x.shape[i] < ratio[i]:
            raise invalid_argument(
                node,
                f"Pooling ratio is higher than input dimension size for dimension {i}. Input dim size: "
                f"{x.shape[i]} pooling ratio: {ratio[i]:g}",
            )
    out = _out_dims(list(x.shape), ratio)
    if a["deterministic"]:
        rng = np.random.RandomState([a["seed"] & 0xFFFFFFFF, a["seed2"] & 0xFFFFFFFF, 0x46504F4C])
    else:
        rng = np.random.RandomState()
    rows = _sequence(x.shape[1], out[1], rng, a["pseudo_random"])
    cols = _sequence(x.shape[2], out[2], rng, a["pseudo_random"])
    return rows, cols


def _pool(x, rows, cols, overlapping, reduce):
    h, w = x.shape[1:3]
    return np.stack(
        [
            np.stack([reduce(x[:, r0 : r1 + 1, c0 : c1 + 1]) for c0, c1 in _windows(cols, w, overlapping)], 1)
            for r0, r1 in _windows(rows, h, overlapping)
        ],
        1,
    )


@registry.kernel("FractionalMaxPool")
def _max_kernel(ctx, node, x):
    rows, cols = _sequences(node, x)
    out = _pool(x, rows, cols, node.attr["overlapping"], lambda v: v.max(axis=(1, 2)))
    return out.astype(x.dtype, copy=False), rows, cols


@registry.kernel("FractionalAvgPool")
def _avg_kernel(ctx, node, x):
    rows, cols = _sequences(node, x)
    out = _pool(x, rows, cols, node.attr["overlapping"], lambda v: v.mean(axis=(1, 2)))
    return out.astype(x.dtype, copy=False), rows, cols


@registry.kernel("FractionalMaxPoolGrad")
def _max_grad_kernel(ctx, node, x, y, grad, rows, cols):
    dx = np.zeros_like(x)
    n, h, w, c = x.shape
    batch, channel = np.arange(n)[:, None], np.arange(c)[None, :]
    for i, (r0, r1) in enumerate(_windows(rows, h, node.attr["overlapping"])):
        for j, (c0, c1) in enumerate(_windows(cols, w, node.attr["overlapping"])):
            window = x[:, r0 : r1 + 1, c0 : c1 + 1].reshape(n, -1, c)
            first = window.argmax(axis=1)  # (n, c): the first maximum, row-major
            width = c1 - c0 + 1
            np.add.at(dx, (batch, r0 + first // width, c0 + first % width, channel), grad[:, i, j])
    return dx


@registry.kernel("FractionalAvgPoolGrad")
def _avg_grad_kernel(ctx, node, sizes, grad, rows, cols):
    n, h, w, c = (int(v) for v in sizes)
    dx = np.zeros((n, h, w, c), grad.dtype)
    for i, (r0, r1) in enumerate(_windows(rows, h, node.attr["overlapping"])):
        for j, (c0, c1) in enumerate(_windows(cols, w, node.attr["overlapping"])):
            count = (r1 - r0 + 1) * (c1 - c0 + 1)
            dx[:, r0 : r1 + 1, c0 : c1 + 1] += (grad[:, i, j] / count)[:, None, None, :]
    return dx


registry.shape("FractionalMaxPool")(_shape)
registry.shape("FractionalAvgPool")(_shape)
registry.shape("FractionalMaxPoolGrad")(lambda inputs, attrs: [(inputs[0].dtype, inputs[0].shape)])
registry.shape("FractionalAvgPoolGrad")(lambda inputs, attrs: [(inputs[1].dtype, TensorShape([None] * 4))])


@registry.gradient("FractionalMaxPool")
def _fractional_max_pool_grad(op, grad, unused_rows_grad, unused_cols_grad):
    x, (y, rows, cols) = op.inputs[0], op.outputs
    attrs = {"overlapping": op.get_attr("overlapping")}
    return [registry.make_op("FractionalMaxPoolGrad", [x, y, grad, rows, cols], attrs).outputs[0]]


@registry.gradient("FractionalAvgPool")
def _fractional_avg_pool_grad(op, grad, unused_rows_grad, unused_cols_grad):
    x, (_, rows, cols) = op.inputs[0], op.outputs
    attrs = {"overlapping": op.get_attr("overlapping")}
    dx = registry.make_op(
        "FractionalAvgPoolGrad", [shape_of(x, out_type=_dtypes.int64), grad, rows, cols], attrs
    )
    dx.outputs[0].set_shape(x.shape)
    return [dx.outputs[0]]


def _options(pseudo_random, overlapping, deterministic, seed, seed2):
    return {
        "pseudo_random": bool(pseudo_random),
        "overlapping": bool(overlapping),
        "deterministic": bool(deterministic),
        "seed": int(seed),
        "seed2": int(seed2),
    }


def _fractional(op_type, tf_name, value, pooling_ratio, options, name):
    ratio = [float(r) for r in pooling_ratio]
    if len(ratio) != 4:
        raise ValueError(
            f"Attr 'pooling_ratio' of '{op_type}' Op passed list of length {len(ratio)} less than minimum 4."
        )
    if min(ratio) < 1:
        raise ValueError(f"pooling_ratio cannot be smaller than 1, got: {min(ratio):g}")
    if ratio[0] != 1 or ratio[3] != 1:
        raise ValueError(
            f"{tf_name}: pooling is not yet supported on the batch nor channel dimension; pooling_ratio "
            f"{pooling_ratio!r} must start and end with 1.0"
        )
    attrs = {"pooling_ratio": ratio, **options}
    op = registry.make_op(op_type, [convert_to_tensor(value)], attrs, name=name)
    return tuple(op.outputs)


def fractional_max_pool(
    value,
    pooling_ratio,
    pseudo_random=False,
    overlapping=False,
    deterministic=False,
    seed=0,
    seed2=0,
    name=None,
):
    """`tf.nn.fractional_max_pool` (TF 1.x): max pooling over windows of random, non-integer
    average size ``pooling_ratio`` (Graham, 2015).

    Args:
        value: ``[batch, height, width, channels]``.
        pooling_ratio: 4 floats >= 1, the first and last 1.0.
        pseudo_random: the pseudo random sequence instead of a random one.
        overlapping: windows share their boundary row and column.
        deterministic: the same regions on every run (from `seed`, `seed2`); otherwise both
            seeds must be 0.

    Returns:
        ``(output, row_pooling_sequence, col_pooling_sequence)``.
    """
    options = _options(pseudo_random, overlapping, deterministic, seed, seed2)
    return _fractional("FractionalMaxPool", "tf.nn.fractional_max_pool", value, pooling_ratio, options, name)


def fractional_avg_pool(
    value,
    pooling_ratio,
    pseudo_random=False,
    overlapping=False,
    deterministic=False,
    seed=0,
    seed2=0,
    name=None,
):
    """`tf.nn.fractional_avg_pool` (TF 1.x): `fractional_max_pool`'s windows, averaged."""
    options = _options(pseudo_random, overlapping, deterministic, seed, seed2)
    return _fractional("FractionalAvgPool", "tf.nn.fractional_avg_pool", value, pooling_ratio, options, name)
