"""`tf.random`: TF's random names (`normal`, `uniform`, `shuffle`, `categorical`, the stateless
and candidate-sampling ones, ...) over ops/random_ops.py and ops/candidate_sampling_ops.py."""

from nbdist._facade import unsupported as _unsupported
from nbdist.ops.candidate_sampling_ops import (
    fixed_unigram_candidate_sampler,
    log_uniform_candidate_sampler,
    uniform_candidate_sampler,
)
from nbdist.ops.random_ops import (
    categorical,
    get_seed,
    multinomial,
    set_random_seed,
    stateless_truncated_normal,
    truncated_normal,
)
from nbdist.ops.random_ops import random_gamma as gamma
from nbdist.ops.random_ops import random_normal as normal
from nbdist.ops.random_ops import random_poisson as poisson
from nbdist.ops.random_ops import random_shuffle as shuffle
from nbdist.ops.random_ops import random_uniform as uniform
from nbdist.ops.random_ops import stateless_random_normal as stateless_normal
from nbdist.ops.random_ops import stateless_random_uniform as stateless_uniform

__all__ = [
    "categorical",
    "fixed_unigram_candidate_sampler",
    "gamma",
    "get_seed",
    "log_uniform_candidate_sampler",
    "multinomial",
    "normal",
    "poisson",
    "set_random_seed",
    "shuffle",
    "stateless_normal",
    "stateless_truncated_normal",
    "stateless_uniform",
    "truncated_normal",
    "uniform",
    "uniform_candidate_sampler",
]


def __getattr__(name):
    return _unsupported("tf.random", name)
