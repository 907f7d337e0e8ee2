"""More of `tf.random`'s stateless draws: `stateless_binomial`, `stateless_gamma`,
`stateless_poisson`, `stateless_parameterized_truncated_normal`, `stateless_categorical` /
`stateless_multinomial`, and the seed tools `fold_in` and `split`.

As the other stateless ops (ops/random_ops.py), the values are a function of the seed pair:
the same seed gives the same numbers, in every session and on every task; they are nbdist's
numbers (numpy's generator seeded with the pair), not TF's Philox streams. Parameters broadcast
as TF's: their broadcast shape must be the trailing part of `shape` ("shape must end with the
parameters' broadcast shape", as TF says).

`stateless_gamma` draws by inverting the Gamma CDF of a uniform draw, so a sample is a smooth
function of `alpha` and its gradient is TF's implicit reparameterization (`RandomGammaGrad`:
``-dP(alpha, x)/dalpha / dP(alpha, x)/dx``), checked here by finite differences.
"""

import numpy as np

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import get_default_graph
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops._shapes import int_tensor
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.shape_ops import get_static_value
from nbdist.ops.special_math_ops import igamma_grad_a

__all__ = [
    "fold_in",
    "split",
    "stateless_binomial",
    "stateless_categorical",
    "stateless_gamma",
    "stateless_multinomial",
    "stateless_parameterized_truncated_normal",
    "stateless_poisson",
]


def _generator(node, seed):
    seed = np.ravel(seed)
    if seed.shape != (2,):
        raise errors.InvalidArgumentError(
            node.name, None, f"{node.op}: seed must have shape [2], got {list(seed.shape)}"
        )
    return np.random.default_rng([int(s) % 2**64 for s in seed])


def _dims(node, shape):
    dims = [int(d) for d in np.ravel(shape)]
    if np.ndim(shape) != 1 or any(d < 0 for d in dims):
        raise errors.InvalidArgumentError(
            node.name,
            None,
            f"{node.op}: shape must be a 1-D list of sizes >= 0, got {np.asarray(shape).tolist()}",
        )
    return dims


def _broadcast_params(node, dims, *params):
    """`params` broadcast to `dims`, whose trailing part must be their broadcast shape (TF's rule)."""
    try:
        joint = np.broadcast_shapes(*(np.shape(p) for p in params))
    except ValueError as e:
        raise errors.InvalidArgumentError(
            node.name, None, f"{node.op}: parameters do not broadcast: {e}"
        ) from None
    if len(joint) > len(dims) or tuple(dims[len(dims) - len(joint) :]) != tuple(joint):
        raise errors.InvalidArgumentError(
            node.name,
            None,
            f"{node.op}: shape {dims} must end with the parameters' broadcast shape {list(joint)}",
        )
    return [np.broadcast_to(p, dims) for p in params]


def _shape_spec(inputs, attrs, dtype):
    dims = get_static_value(inputs[0])
    if dims is not None:
        return [(dtype, TensorShape([int(d) for d in np.ravel(dims)]))]
    n = inputs[0].shape[0] if inputs[0].shape.ndims == 1 else None
    return [(dtype, TensorShape(None if n is None else [None] * n))]


def _op(op_type, dtype_of, kernel):
    registry.shape(op_type)(lambda inputs, attrs: _shape_spec(inputs, attrs, dtype_of(inputs, attrs)))
    registry.kernel(op_type)(kernel)


# -- binomial, poisson, truncated normal ---------------------------------------------------------
def _binomial_kernel(ctx, node, shape, seed, counts, probs):
    dims = _dims(node, shape)
    counts, probs = _broadcast_params(node, dims, counts, probs)
    if np.any(probs < 0) or np.any(probs > 1) or np.any(counts < 0):
        raise errors.InvalidArgumentError(
            node.name, None, f"{node.op}: probs must be in [0, 1] and counts >= 0"
        )
    values = _generator(node, seed).binomial(np.round(counts).astype(np.int64), probs)
    return values.astype(node.attr["dtype"].np)


def _poisson_kernel(ctx, node, shape, seed, lam):
    dims = _dims(node, shape)
    (lam,) = _broadcast_params(node, dims, lam)
    if np.any(lam < 0):
        raise errors.InvalidArgumentError(node.name, None, f"{node.op}: lam must be >= 0")
    return _generator(node, seed).poisson(lam).astype(node.attr["dtype"].np)


def _truncated_kernel(ctx, node, shape, seed, means, stddevs, minvals, maxvals):
    import scipy.stats  # noqa: PLC0415 - loads on first use, as special_math_ops

    dims = _dims(node, shape)
    means, stddevs, minvals, maxvals = _broadcast_params(node, dims, means, stddevs, minvals, maxvals)
    if np.any(minvals >= maxvals) or np.any(stddevs <= 0):
        raise errors.InvalidArgumentError(
            node.name, None, f"{node.op}: every minval must be below its maxval and every stddev positive"
        )
    dtype = np.asarray(means).dtype
    a, b = (minvals - means) / stddevs, (maxvals - means) / stddevs
    u = _generator(node, seed).random(dims)
    z = scipy.stats.truncnorm.ppf(u, a, b)
    return (means + stddevs * z).astype(dtype)


_op("StatelessRandomBinomial", lambda inputs, attrs: attrs["dtype"], _binomial_kernel)
_op("StatelessRandomPoisson", lambda inputs, attrs: attrs["dtype"], _poisson_kernel)
_op("StatelessParameterizedTruncatedNormal", lambda inputs, attrs: inputs[2].dtype, _truncated_kernel)
for _t in ("StatelessRandomBinomial", "StatelessRandomPoisson", "StatelessParameterizedTruncatedNormal"):
    registry.no_gradient(_t)


def _seed(seed):
    return int_tensor(seed, "seed", name="seed")


def stateless_binomial(shape, seed, counts, probs, output_dtype=_dtypes.int32, name=None):
    """`tf.random.stateless_binomial`: Binomial(counts, probs) samples of shape `shape`."""
    with get_default_graph().name_scope(name or "stateless_random_binomial"):
        probs = convert_to_tensor(probs, name="probs")
        counts = convert_to_tensor(counts, dtype=probs.dtype, name="counts")
        inputs = [int_tensor(shape, "shape", name="shape"), _seed(seed), counts, probs]
        attrs = {"dtype": _dtypes.as_dtype(output_dtype)}
        return registry.make_op("StatelessRandomBinomial", inputs, attrs).outputs[0]


def stateless_poisson(shape, seed, lam, dtype=_dtypes.int32, name=None):
    """`tf.random.stateless_poisson`: Poisson(lam) samples of shape `shape`, as `dtype`."""
    with get_default_graph().name_scope(name or "stateless_random_poisson"):
        lam = convert_to_tensor(lam, name="lam")
        if not lam.dtype.is_floating:
            lam = convert_to_tensor(lam, dtype=_dtypes.float32)
        inputs = [int_tensor(shape, "shape", name="shape"), _seed(seed), lam]
        return registry.make_op("StatelessRandomPoisson", inputs, {"dtype": _dtypes.as_dtype(dtype)}).outputs[
            0
        ]


def stateless_parameterized_truncated_normal(
    shape, seed, means=0.0, stddevs=1.0, minvals=-2.0, maxvals=2.0, name=None
):
    """`tf.random.stateless_parameterized_truncated_normal`: normal samples of the given means
    and stddevs, truncated to ``[minvals, maxvals]``."""
    with get_default_graph().name_scope(name or "stateless_parameterized_truncated_normal"):
        means = convert_to_tensor(means, name="means")
        params = [convert_to_tensor(v, dtype=means.dtype) for v in (stddevs, minvals, maxvals)]
        inputs = [int_tensor(shape, "shape", name="shape"), _seed(seed), means, *params]
        return registry.make_op("StatelessParameterizedTruncatedNormal", inputs).outputs[0]


# -- gamma, with TF's implicit reparameterization gradient ----------------------------------------
def _gamma_kernel(ctx, node, shape, seed, alpha):
    import scipy.special  # noqa: PLC0415

    dims = _dims(node, shape)
    (alpha,) = _broadcast_params(node, dims, alpha)
    if np.any(alpha <= 0):
        raise errors.InvalidArgumentError(node.name, None, f"{node.op}: alpha must be positive")
    u = _generator(node, seed).random(dims)
    return scipy.special.gammaincinv(alpha, u).astype(np.asarray(alpha).dtype)


_op("StatelessRandomGammaV2", lambda inputs, attrs: inputs[2].dtype, _gamma_kernel)


@registry.gradient("StatelessRandomGammaV2")
def _stateless_gamma_grad(op, grad):
    from nbdist.ops.broadcast_ops import sum_to_shape  # noqa: PLC0415 - only when differentiated

    alpha, sample = op.inputs[2], op.outputs[0]
    partial_alpha = registry.make_op("RandomGammaGrad", [alpha + 0 * sample, sample]).outputs[0]
    return [None, None, sum_to_shape(grad * partial_alpha, alpha)]


@registry.kernel("RandomGammaGrad")
def _random_gamma_grad_kernel(ctx, node, alpha, sample):
    """d sample / d alpha at a fixed uniform draw: ``-dP/dalpha / dP/dx`` (P the Gamma CDF)."""
    import scipy.special  # noqa: PLC0415

    a, x = np.broadcast_arrays(np.asarray(alpha, np.float64), np.asarray(sample, np.float64))
    dp_da = igamma_grad_a(a, x)
    dp_dx = np.exp(-x + (a - 1.0) * np.log(x) - scipy.special.gammaln(a))
    return (-dp_da / dp_dx).astype(np.asarray(alpha).dtype)


registry.shape("RandomGammaGrad")(lambda inputs, attrs: [(inputs[0].dtype, inputs[0].shape)])
registry.no_gradient("RandomGammaGrad")


def stateless_gamma(shape, seed, alpha, beta=None, dtype=_dtypes.float32, name=None):
    """`tf.random.stateless_gamma`: Gamma(alpha, beta) samples of shape `shape` (`beta` the
    rate), differentiable in `alpha` and `beta`."""
    dtype = _dtypes.as_dtype(dtype)
    with get_default_graph().name_scope(name or "stateless_random_gamma"):
        alpha = convert_to_tensor(alpha, dtype=dtype, name="alpha")
        shape = int_tensor(shape, "shape", name="shape")
        if beta is not None:
            from nbdist.ops.broadcast_ops import broadcast_to_like  # noqa: PLC0415

            beta = convert_to_tensor(beta, dtype=dtype, name="beta")
            alpha = broadcast_to_like(alpha, alpha + beta)
        sample = registry.make_op("StatelessRandomGammaV2", [shape, _seed(seed), alpha]).outputs[0]
        return sample if beta is None else sample / beta


# -- categorical ---------------------------------------------------------------------------------
@registry.shape("StatelessMultinomial")
def _multinomial_shape(inputs, attrs):
    logits = inputs[0]
    n = get_static_value(inputs[1])
    batch = logits.shape.dims[0] if logits.shape.ndims == 2 else None
    return [(attrs["output_dtype"], TensorShape([batch, None if n is None else int(n)]))]


@registry.kernel("StatelessMultinomial")
def _multinomial_kernel(ctx, node, logits, num_samples, seed):
    logits = np.asarray(logits, np.float64)
    if logits.ndim != 2 or (logits.shape[0] and not logits.shape[1]):
        raise errors.InvalidArgumentError(
            node.name, None, f"{node.op}: logits must be a non-empty matrix, got {logits.shape}"
        )
    top = np.max(logits, axis=1, keepdims=True) if logits.size else np.zeros((logits.shape[0], 1))
    cdf = np.cumsum(np.exp(logits - np.where(np.isfinite(top), top, 0.0)), axis=1)
    u = _generator(node, seed).random((logits.shape[0], int(num_samples)))
    out = [np.searchsorted(row, draws * row[-1], side="right") for row, draws in zip(cdf, u)]
    out = np.minimum(np.reshape(out, u.shape), max(logits.shape[1] - 1, 0))
    return out.astype(node.attr["output_dtype"].np)


registry.no_gradient("StatelessMultinomial")


def stateless_multinomial(logits, num_samples, seed, output_dtype=_dtypes.int64, name=None):
    """`tf.random.stateless_multinomial`: `num_samples` class indices per row of ``[batch,
    classes]`` `logits`, the same for the same `seed` pair."""
    with get_default_graph().name_scope(name or "stateless_multinomial"):
        logits = convert_to_tensor(logits, name="logits")
        if logits.shape.ndims not in (None, 2):
            raise ValueError(f"logits must be [batch_size, num_classes], got shape {logits.shape}")
        inputs = [logits, int_tensor(num_samples, "num_samples", name="num_samples"), _seed(seed)]
        attrs = {"output_dtype": _dtypes.as_dtype(output_dtype)}
        return registry.make_op("StatelessMultinomial", inputs, attrs).outputs[0]


def stateless_categorical(logits, num_samples, seed, dtype=_dtypes.int64, name=None):
    """`tf.random.stateless_categorical`: `stateless_multinomial` with TF 2's argument name."""
    return stateless_multinomial(logits, num_samples, seed, dtype, name or "stateless_categorical")


# -- fold_in, split: new seeds from a seed ----------------------------------------------------------
@registry.kernel("StatelessRandomUniformFullInt")
def _full_int_kernel(ctx, node, shape, seed):
    dtype = np.dtype(node.attr["dtype"].np)
    info = np.iinfo(dtype)
    return _generator(node, seed).integers(
        info.min, info.max, size=_dims(node, shape), dtype=dtype, endpoint=True
    )


_op("StatelessRandomUniformFullInt", lambda inputs, attrs: attrs["dtype"], _full_int_kernel)
registry.no_gradient("StatelessRandomUniformFullInt")


def _full_int(shape, seed, dtype):
    inputs = [int_tensor(shape, "shape", name="shape"), _seed(seed)]
    return registry.make_op("StatelessRandomUniformFullInt", inputs, {"dtype": dtype}).outputs[0]


def split(seed, num=2, alg="auto_select"):
    """`tf.random.split`: `num` new seeds (a ``[num, 2]`` tensor) made from `seed`, as TF's:
    full-range integers drawn with `seed`, in its dtype."""
    seed = _seed(seed)
    with get_default_graph().name_scope("split"):
        return _full_int([num, 2], seed, seed.dtype)


def fold_in(seed, data, alg="auto_select"):
    """`tf.random.fold_in`: a new seed from `seed` and an integer `data` (a step, a worker's
    index): ``[draw(seed), data]``, as TF's."""
    from nbdist.ops.concat_slice_ops import stack  # noqa: PLC0415

    data = convert_to_tensor(data)
    if not data.dtype.is_integer:
        raise TypeError(f"tf.random.fold_in: data must be an integer, got {data.dtype.name}")
    with get_default_graph().name_scope("fold_in"):
        return stack([_full_int([], seed, data.dtype), data])
