"""Random ops: `random_normal`, `truncated_normal`, `random_uniform`, `multinomial`, `random_gamma`,
`random_poisson`, the stateless ones (`tf.random.stateless_*`), and TF's seeding rules.

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
    "multinomial",
    "random_gamma",
    "random_normal",
    "random_poisson",
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


# -- multinomial / categorical ---------------------------------------------------------------------
@registry.shape("Multinomial")
def _multinomial_shape(inputs, attrs):
    logits, num = inputs
    if logits.shape.ndims not in (None, 2):
        raise ValueError(
            f"tf.multinomial: logits must be [batch_size, num_classes], got shape {logits.shape}"
        )
    n = get_static_value(num)
    batch = logits.shape.dims[0] if logits.shape.ndims == 2 else None
    return [(attrs["output_dtype"], TensorShape([batch, None if n is None else int(n)]))]


registry.declare("Multinomial", stateful=True)
registry.no_gradient("Multinomial")


@registry.kernel("Multinomial")
def _multinomial_kernel(ctx, node, logits, num_samples):
    seed, seed2 = node.attr["seed"], node.attr["seed2"]
    state = ctx.resources.get_or_create(("", "rng", node.name), lambda: RandomState(seed, seed2))
    logits = np.asarray(logits, np.float64)
    if logits.ndim != 2 or (logits.shape[0] and not logits.shape[1]):
        raise errors.InvalidArgumentError(
            node.name, None, f"logits must be a non-empty matrix, got {logits.shape}"
        )
    top = np.max(logits, axis=1, keepdims=True)
    cdf = np.cumsum(np.exp(logits - np.where(np.isfinite(top), top, 0.0)), axis=1)
    with state.lock:
        u = state.generator.random((logits.shape[0], int(num_samples)))
    out = np.stack([np.searchsorted(row, draws * row[-1], side="right") for row, draws in zip(cdf, u)])
    return np.minimum(out.reshape(u.shape), logits.shape[1] - 1).astype(node.attr["output_dtype"].np)


def multinomial(logits, num_samples, seed=None, name=None, output_dtype=None):
    """`tf.multinomial`: `num_samples` class indices per row of ``[batch, classes]`` `logits`
    (unnormalised log-probabilities), ``[batch, num_samples]`` of `output_dtype` (int64)."""
    logits = convert_to_tensor(logits, name="logits")
    seed1, seed2 = get_seed(seed)
    dtype = _dtypes.as_dtype(output_dtype or _dtypes.int64)
    attrs = {"seed": seed1 or 0, "seed2": seed2 or 0, "output_dtype": dtype}
    inputs = [logits, int_tensor(num_samples, "num_samples", name="num_samples")]
    return registry.make_op("Multinomial", inputs, attrs, name=name or "multinomial").outputs[0]


def categorical(logits, num_samples, dtype=None, seed=None, name=None):
    """`tf.random.categorical`: `multinomial` with the dtype argument's name of TF 2."""
    return multinomial(logits, num_samples, seed=seed, name=name or "categorical", output_dtype=dtype)


# -- gamma / poisson: shape + the parameter's shape -----------------------------------------------
def _param_shape(inputs, attrs):
    dims, param = get_static_value(inputs[0]), inputs[1].shape
    dtype = attrs.get("dtype") or inputs[1].dtype
    if dims is None or param.ndims is None:
        return [(dtype, TensorShape(None))]
    return [(dtype, TensorShape([*(int(d) for d in np.ravel(dims)), *param.dims]))]


def _draw_gamma(gen, dims, node, alpha):
    return gen.standard_gamma(alpha, size=(*dims, *np.shape(alpha))).astype(np.asarray(alpha).dtype)


def _draw_poisson(gen, dims, node, rate):
    return gen.poisson(rate, size=(*dims, *np.shape(rate))).astype(node.attr["dtype"].np)


for _t, _draw in (("RandomGamma", _draw_gamma), ("RandomPoissonV2", _draw_poisson)):
    registry.declare(_t, stateful=True)
    registry.shape(_t)(_param_shape)
    registry.kernel(_t)(_generator_kernel(_draw))
    registry.no_gradient(_t)


def random_gamma(shape, alpha, beta=None, dtype=_dtypes.float32, seed=None, name=None):
    """`tf.random_gamma`: Gamma(alpha, beta) samples of shape ``shape + broadcast(alpha, beta)``
    (`beta` the rate: the samples are ``Gamma(alpha, 1) / beta``)."""
    dtype = _float_dtype(dtype, "tf.random_gamma")
    with get_default_graph().name_scope(name or "random_gamma"):
        alpha = convert_to_tensor(alpha, dtype=dtype, name="alpha")
        beta = convert_to_tensor(1.0 if beta is None else beta, dtype=dtype, name="beta")
        from nbdist.ops.cast_select_ops import zeros_like  # noqa: PLC0415

        alpha = alpha + zeros_like(beta)
        return _random_op("RandomGamma", shape, None, seed, (alpha,)) / beta


def random_poisson(lam, shape, dtype=_dtypes.float32, seed=None, name=None):
    """`tf.random_poisson`: Poisson(lam) samples of shape ``shape + lam.shape``, as `dtype`."""
    with get_default_graph().name_scope(name or "random_poisson"):
        lam = convert_to_tensor(lam, name="lam")
        if not lam.dtype.is_floating:
            lam = convert_to_tensor(lam, dtype=_dtypes.float32)
        return _random_op("RandomPoissonV2", shape, _dtypes.as_dtype(dtype), seed, (lam,))


# -- stateless: the values are a function of the seed pair ---------------------------------------
def _stateless_kernel(draw):
    def kernel(ctx, node, shape, seed, *extra):
        seed = np.ravel(seed)
        if seed.shape != (2,):
            raise errors.InvalidArgumentError(
                node.name, None, f"seed must have shape [2], got {list(seed.shape)}"
            )
        gen = np.random.default_rng([int(s) % 2**64 for s in seed])
        return draw(gen, [int(d) for d in np.ravel(shape)], node, *extra)

    return kernel


for _t, _draw in (
    ("StatelessRandomNormal", _draw_normal),
    ("StatelessTruncatedNormal", _draw_truncated),
    ("StatelessRandomUniform", _draw_uniform),
    ("StatelessRandomUniformInt", _draw_uniform_int),
):
    registry.shape(_t)(_random_shape)
    registry.kernel(_t)(_stateless_kernel(_draw))
    registry.no_gradient(_t)


def _stateless_op(op_type, shape, seed, dtype, extra=()):
    seed = int_tensor(seed, "seed", name="seed")
    inputs = [int_tensor(shape, "shape", name="shape"), seed, *extra]
    return registry.make_op(op_type, inputs, {"dtype": dtype}, name=op_type).outputs[0]


def stateless_random_uniform(shape, seed, minval=0, maxval=None, dtype=_dtypes.float32, name=None, alg=None):
    """`tf.random.stateless_uniform`: uniform samples in ``[minval, maxval)``, the same for the
    same `seed` (an int pair); nbdist's numbers, not TF's."""
    dtype = _dtypes.as_dtype(dtype)
    if dtype.is_integer and maxval is None:
        raise ValueError(f"tf.random.stateless_uniform: must specify maxval for integer dtype {dtype.name}")
    with get_default_graph().name_scope(name or "stateless_random_uniform") as scope:
        minval = convert_to_tensor(minval, dtype=dtype, name="min")
        maxval = convert_to_tensor(1 if maxval is None else maxval, dtype=dtype, name="max")
        if dtype.is_integer:
            return _stateless_op("StatelessRandomUniformInt", shape, seed, dtype, (minval, maxval))
        rnd = _stateless_op("StatelessRandomUniform", shape, seed, dtype)
        return math_ops.add(rnd * (maxval - minval), minval, name=scope)


def _stateless_scaled(op_type, shape, seed, mean, stddev, dtype, name):
    dtype = _float_dtype(dtype, f"tf.random.{name}")
    with get_default_graph().name_scope(name) as scope:
        mean = convert_to_tensor(mean, dtype=dtype, name="mean")
        stddev = convert_to_tensor(stddev, dtype=dtype, name="stddev")
        return math_ops.add(_stateless_op(op_type, shape, seed, dtype) * stddev, mean, name=scope)


def stateless_random_normal(shape, seed, mean=0.0, stddev=1.0, dtype=_dtypes.float32, name=None, alg=None):
    """`tf.random.stateless_normal`: normal samples, the same for the same `seed` pair."""
    return _stateless_scaled(
        "StatelessRandomNormal", shape, seed, mean, stddev, dtype, name or "stateless_normal"
    )


def stateless_truncated_normal(shape, seed, mean=0.0, stddev=1.0, dtype=_dtypes.float32, name=None, alg=None):
    """`tf.random.stateless_truncated_normal`: normal samples within two `stddev` of `mean`, the
    same for the same `seed` pair."""
    return _stateless_scaled(
        "StatelessTruncatedNormal", shape, seed, mean, stddev, dtype, name or "stateless_truncated_normal"
    )
