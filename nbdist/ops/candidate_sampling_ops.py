"""Candidate samplers (`tf.random.all_candidate_sampler`, `uniform_candidate_sampler`,
`log_uniform_candidate_sampler`, `fixed_unigram_candidate_sampler`): `num_sampled` classes
drawn from a distribution over ``[0, range_max)``, with TF's expected counts - ``num_sampled *
P(k)``, or with ``unique=True`` ``1 - (1 - P(k)) ** num_tries`` (the draws it took to find
`num_sampled` distinct classes). Seeded as the other random ops (nbdist's numbers, not TF's)."""

import math

import numpy as np

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.random_ops import RandomState, get_seed


def _uniform(attrs):
    n = attrs["range_max"]
    return (lambda gen, size: gen.integers(0, n, size)), (lambda k: np.full(np.shape(k), 1.0 / n))


def _log_uniform(attrs):
    log_range = math.log(attrs["range_max"] + 1)

    def draw(gen, size):
        values = np.floor(np.exp(gen.random(size) * log_range)).astype(np.int64) - 1
        return np.clip(values, 0, attrs["range_max"] - 1)

    return draw, (lambda k: (np.log(k + 2.0) - np.log(k + 1.0)) / log_range)


def _unigram(attrs):
    weights = np.concatenate([np.zeros(attrs["num_reserved_ids"]), np.asarray(attrs["unigrams"], np.float64)])
    p = weights ** attrs["distortion"]
    p /= p.sum()
    return (lambda gen, size: gen.choice(len(p), size=size, p=p)), (lambda k: p[np.asarray(k, np.int64)])


def _all(attrs):
    """Every class of ``[0, num_sampled)``, in order: TF's AllCandidateSampler (for tests)."""
    n = attrs["num_sampled"]
    return (lambda gen, size: np.arange(size, dtype=np.int64) % n), (lambda k: np.full(np.shape(k), 1.0 / n))


_SAMPLERS = {
    "AllCandidateSampler": _all,
    "UniformCandidateSampler": _uniform,
    "LogUniformCandidateSampler": _log_uniform,
    "FixedUnigramCandidateSampler": _unigram,
}


def _sampler_shape(inputs, attrs):
    batch = inputs[0].shape.dims[0] if inputs[0].shape.ndims == 2 else None
    n = attrs["num_sampled"]
    return [
        (_dtypes.int64, TensorShape([n])),
        (_dtypes.float32, TensorShape([batch, attrs["num_true"]])),
        (_dtypes.float32, TensorShape([n])),
    ]


def _sampler_kernel(ctx, node, true_classes):
    attrs = node.attr
    true_classes = np.asarray(true_classes)
    outside = true_classes[(true_classes < 0) | (true_classes >= attrs["range_max"])]
    if outside.size:
        raise errors.InvalidArgumentError(
            node.name,
            None,
            f"`true_candidate` out of range [0, {attrs['range_max']}), received {int(outside[0])}",
        )
    draw, prob = _SAMPLERS[node.op](attrs)
    n, seed, seed2 = attrs["num_sampled"], attrs["seed"], attrs["seed2"]
    state = ctx.resources.get_or_create(("", "rng", node.name), lambda: RandomState(seed, seed2))
    with state.lock:
        if not attrs["unique"]:
            sampled, tries = draw(state.generator, n), n
        else:
            seen, tries = {}, 0
            while len(seen) < n:
                for k in draw(state.generator, 2 * n):
                    tries += 1
                    seen.setdefault(int(k), None)
                    if len(seen) == n:
                        break
            sampled = np.fromiter(seen, np.int64, n)

    def expected(k):
        p = prob(k)
        count = p * n if tries == n else -np.expm1(tries * np.log1p(-p))
        return count.astype(np.float32)

    return sampled.astype(np.int64), expected(np.asarray(true_classes)), expected(sampled)


for _t in _SAMPLERS:
    registry.declare(_t, stateful=True)
    registry.shape(_t)(_sampler_shape)
    registry.kernel(_t)(_sampler_kernel)
    registry.no_gradient(_t)


def _sample(op_type, true_classes, num_true, num_sampled, unique, range_max, seed, name, **extra):
    if unique and num_sampled > range_max:
        raise ValueError(
            f"{name}: unique sampling needs num_sampled <= range_max, got {num_sampled} > {range_max}"
        )
    seed1, seed2 = get_seed(seed)
    attrs = {
        "num_true": int(num_true),
        "num_sampled": int(num_sampled),
        "unique": bool(unique),
        "range_max": int(range_max),
        "seed": seed1 or 0,
        "seed2": seed2 or 0,
        **extra,
    }
    true_classes = convert_to_tensor(true_classes, dtype=_dtypes.int64, name="true_classes")
    return tuple(registry.make_op(op_type, [true_classes], attrs, name=name).outputs)


def all_candidate_sampler(true_classes, num_true, num_sampled, unique, seed=None, name=None):
    """`tf.random.all_candidate_sampler`: every class ``0 .. num_sampled - 1`` as the sample, each
    expected count 1 (a sampler for tests, as TF's)."""
    return _sample(
        "AllCandidateSampler", true_classes, num_true, num_sampled, unique, num_sampled, seed, name
    )


def uniform_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max, seed=None, name=None):
    """`tf.random.uniform_candidate_sampler`: ``(sampled_candidates, true_expected_count,
    sampled_expected_count)``, the classes drawn uniformly from ``[0, range_max)``."""
    return _sample(
        "UniformCandidateSampler", true_classes, num_true, num_sampled, unique, range_max, seed, name
    )


def log_uniform_candidate_sampler(
    true_classes, num_true, num_sampled, unique, range_max, seed=None, name=None
):
    """`tf.random.log_uniform_candidate_sampler`: classes drawn by Zipf's law,
    ``P(k) = (log(k + 2) - log(k + 1)) / log(range_max + 1)`` (frequent classes first)."""
    return _sample(
        "LogUniformCandidateSampler", true_classes, num_true, num_sampled, unique, range_max, seed, name
    )


def fixed_unigram_candidate_sampler(
    true_classes,
    num_true,
    num_sampled,
    unique,
    range_max,
    vocab_file="",
    distortion=1.0,
    num_reserved_ids=0,
    num_shards=1,
    shard=0,
    unigrams=(),
    seed=None,
    name=None,
):
    """`tf.random.fixed_unigram_candidate_sampler`: classes drawn with probabilities
    ``unigrams ** distortion`` (normalised), after `num_reserved_ids` never-drawn ids.

    Raises:
        NotImplementedError: a `vocab_file` or sharding (nbdist takes `unigrams` only).
        ValueError: `range_max` other than ``num_reserved_ids + len(unigrams)``.
    """
    if vocab_file or num_shards != 1:
        raise NotImplementedError("fixed_unigram_candidate_sampler: nbdist takes unigrams=, unsharded")
    if len(unigrams) + num_reserved_ids != range_max:
        raise ValueError(
            f"fixed_unigram_candidate_sampler: range_max {range_max} must be num_reserved_ids + "
            f"len(unigrams) = {num_reserved_ids + len(unigrams)}"
        )
    return _sample(
        "FixedUnigramCandidateSampler",
        true_classes,
        num_true,
        num_sampled,
        unique,
        range_max,
        seed,
        name,
        distortion=float(distortion),
        num_reserved_ids=int(num_reserved_ids),
        unigrams=[float(u) for u in unigrams],
    )
