"""Random ops: `random_normal`, `truncated_normal`, `random_uniform`, and TF's seeding rules.

Seeds follow TF 1.x (`get_seed`): `tf.set_random_seed(s)` sets the graph's seed; an op
with neither seed gets fresh randomness; with only the graph seed, the op seed is the
number of ops already in the graph, so the same program gives the same numbers. Each
random node keeps its generator in the task's resource manager (``ctx.resources``), so
successive runs draw new numbers and a new session starts the sequence again.
"""

import threading

import numpy as np

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import get_default_graph
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import math_ops, registry
from nbdist.ops._shapes import int_tensor
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.shape_ops import get_static_value

__all__ = [
    "get_seed",
    "random_normal",
    "random_shuffle",
    "random_uniform",
    "set_random_seed",
    "truncated_normal",
]

DEFAULT_GRAPH_SEED = 87654321  # TF's, used when only the op seed is set
_MAXINT32 = 2**31 - 1


def set_random_seed(seed):
    """`tf.set_random_seed`: the graph-level seed of the default graph (None clears it)."""
    get_default_graph().seed = None if seed is None else int(seed)


def get_seed(op_seed):
    """`tf.get_seed`: the ``(graph_seed, op_seed)`` pair a random op uses (TF's rule).

    Returns:
        ``(None, None)`` when neither seed is set (fresh randomness); otherwise two ints,
        the op seed defaulting to the number of ops in the graph so far.
    """
    graph_seed = get_default_graph().seed
    if graph_seed is not None:
        seeds = graph_seed, (get_default_graph().version if op_seed is None else op_seed)
    elif op_seed is not None:
        seeds = DEFAULT_GRAPH_SEED, op_seed
    else:
        return None, None
    seeds = tuple(int(s) % (_MAXINT32 + 1) for s in seeds)
    return (0, _MAXINT32) if seeds == (0, 0) else seeds


class RandomState:
    """One random node's generator: seeded from ``(seed, seed2)``, or from the OS when both are 0."""

    __slots__ = ("generator", "lock")

    def __init__(self, seed, seed2):
        entropy = None if seed == 0 and seed2 == 0 else [seed, seed2]
        self.generator = np.random.default_rng(entropy)
        self.lock = threading.Lock()


def _generator_kernel(draw):
    """A kernel drawing ``draw(generator, shape, node, *extra_inputs)`` from the node's generator."""

    def kernel(ctx, node, shape, *extra):
        dims = [int(d) for d in np.ravel(shape)]
        if np.ndim(shape) != 1 or any(d < 0 for d in dims):
            raise errors.InvalidArgumentError(
                node.name,
                None,
                f"{node.op}: shape must be a 1-D list of sizes >= 0, got {np.asarray(shape).tolist()}",
            )
        seed, seed2 = node.attr["seed"], node.attr["seed2"]
        state = ctx.resources.get_or_create(("", "rng", node.name), lambda: RandomState(seed, seed2))
        with state.lock:
            return draw(state.generator, dims, node, *extra)

    return kernel


def _draw_normal(gen, dims, node):
    return gen.standard_normal(dims).astype(node.attr["dtype"].np)


def _draw_truncated(gen, dims, node):
    values = gen.standard_normal(dims)
    bad = np.abs(values) > 2.0
    while bad.any():  # resample beyond two standard deviations, as TF
        values[bad] = gen.standard_normal(int(bad.sum()))
        bad = np.abs(values) > 2.0
    return values.astype(node.attr["dtype"].np)


def _draw_uniform(gen, dims, node):
    return gen.random(dims).astype(node.attr["dtype"].np)


def _draw_uniform_int(gen, dims, node, minval, maxval):
    if not minval < maxval:
        raise errors.InvalidArgumentError(node.name, None, f"Need minval < maxval: {minval} >= {maxval}")
    return gen.integers(minval, maxval, size=dims).astype(np.asarray(minval).dtype)


@registry.shape("RandomStandardNormal")
def _random_shape(inputs, attrs):
    shape_t = inputs[0]
    dims = get_static_value(shape_t)
    dtype = attrs.get("dtype") or inputs[1].dtype
    if dims is not None:
        return [(dtype, TensorShape([int(d) for d in np.ravel(dims)]))]
    n = shape_t.shape[0] if shape_t.shape.ndims == 1 else None
    return [(dtype, TensorShape(None if n is None else [None] * n))]


for _t, _draw in (
    ("RandomStandardNormal", _draw_normal),
    ("TruncatedNormal", _draw_truncated),
    ("RandomUniform", _draw_uniform),
    ("RandomUniformInt", _draw_uniform_int),
):
    registry.declare(_t, stateful=True)
    registry.shape(_t)(_random_shape)
    registry.kernel(_t)(_generator_kernel(_draw))
    registry.no_gradient(_t)


def _random_op(op_type, shape, dtype, seed, extra=(), name=None):
    seed1, seed2 = get_seed(seed)
    attrs = {"seed": seed1 or 0, "seed2": seed2 or 0}
    if dtype is not None:
        attrs["dtype"] = dtype
    inputs = [int_tensor(shape, "shape", name="shape"), *extra]
    return registry.make_op(op_type, inputs, attrs, name=name).outputs[0]


def _float_dtype(dtype, fn):
    dtype = _dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise ValueError(f"{fn}: dtype must be a floating point type, got {dtype.name}")
    return dtype


def random_normal(shape, mean=0.0, stddev=1.0, dtype=_dtypes.float32, seed=None, name=None):
    """`tf.random_normal`: samples of a normal distribution, ``mean + stddev * N(0, 1)``.

    Args:
        shape: a list of ints or a 1-D int tensor.
        seed: the op seed (see `tf.set_random_seed` for the rules).
    """
    dtype = _float_dtype(dtype, "tf.random_normal")
    with get_default_graph().name_scope(name or "random_normal") as scope:
        mean = convert_to_tensor(mean, dtype=dtype, name="mean")
        stddev = convert_to_tensor(stddev, dtype=dtype, name="stddev")
        rnd = _random_op("RandomStandardNormal", shape, dtype, seed)
        return math_ops.add(rnd * stddev, mean, name=scope)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=_dtypes.float32, seed=None, name=None):
    """`tf.truncated_normal`: normal samples, those beyond two `stddev` from `mean` redrawn."""
    dtype = _float_dtype(dtype, "tf.truncated_normal")
    with get_default_graph().name_scope(name or "truncated_normal") as scope:
        mean = convert_to_tensor(mean, dtype=dtype, name="mean")
        stddev = convert_to_tensor(stddev, dtype=dtype, name="stddev")
        rnd = _random_op("TruncatedNormal", shape, dtype, seed)
        return math_ops.add(rnd * stddev, mean, name=scope)


def random_uniform(shape, minval=0, maxval=None, dtype=_dtypes.float32, seed=None, name=None):
    """`tf.random_uniform`: uniform samples in ``[minval, maxval)``.

    Floats default to ``maxval=1``; integer dtypes need `maxval`.

    Raises:
        ValueError: for an integer dtype without `maxval`.
    """
    dtype = _dtypes.as_dtype(dtype)
    if not (dtype.is_floating or dtype in (_dtypes.int32, _dtypes.int64)):
        raise ValueError(f"tf.random_uniform: dtype must be float, int32 or int64, got {dtype.name}")
    if dtype.is_integer and maxval is None:
        raise ValueError(f"tf.random_uniform: must specify maxval for integer dtype {dtype.name}")
    with get_default_graph().name_scope(name or "random_uniform") as scope:
        minval = convert_to_tensor(minval, dtype=dtype, name="min")
        maxval = convert_to_tensor(1 if maxval is None else maxval, dtype=dtype, name="max")
        if dtype.is_integer:
            return _random_op("RandomUniformInt", shape, None, seed, (minval, maxval), name=scope)
        rnd = _random_op("RandomUniform", shape, dtype, seed)
        return math_ops.add(rnd * (maxval - minval), minval, name=scope)


registry.declare("RandomShuffle", stateful=True)
registry.shape("RandomShuffle")(lambda inputs, attrs: [(inputs[0].dtype, inputs[0].shape)])
registry.no_gradient("RandomShuffle")


@registry.kernel("RandomShuffle")
def _random_shuffle_kernel(ctx, node, value):
    seed, seed2 = node.attr["seed"], node.attr["seed2"]
    state = ctx.resources.get_or_create(("", "rng", node.name), lambda: RandomState(seed, seed2))
    value = np.asarray(value)
    if value.ndim == 0:
        return value
    with state.lock:
        return value[state.generator.permutation(value.shape[0])]


def random_shuffle(value, seed=None, name=None):
    """`tf.random_shuffle`: `value` with its first dimension permuted (seeded as TF's ops, by
    `get_seed`; the orders are numpy's, reproducible, not TF's)."""
    value = convert_to_tensor(value, name="value")
    seed1, seed2 = get_seed(seed)
    attrs = {"seed": seed1 or 0, "seed2": seed2 or 0}
    return registry.make_op("RandomShuffle", [value], attrs, name=name).outputs[0]
