"""`tf.random`: TF's random names (`normal`, `uniform`, `shuffle`, `categorical`, the stateless
and candidate-sampling ones, ...) over ops/random_ops.py and ops/candidate_sampling_ops.py."""

from nbdist._facade import unsupported as _unsupported
from nbdist.ops.candidate_sampling_ops import (
    all_candidate_sampler,
    fixed_unigram_candidate_sampler,
    log_uniform_candidate_sampler,
    uniform_candidate_sampler,
)
from nbdist.ops.random_generator import (
    Algorithm,
    Generator,
    create_rng_state,
    get_global_generator,
    set_global_generator,
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
from nbdist.ops.stateless_random_ops import (
    fold_in,
    split,
    stateless_binomial,
    stateless_categorical,
    stateless_gamma,
    stateless_multinomial,
    stateless_parameterized_truncated_normal,
    stateless_poisson,
)

__all__ = [
    "Algorithm",
    "Generator",
    "all_candidate_sampler",
    "categorical",
    "create_rng_state",
    "fixed_unigram_candidate_sampler",
    "fold_in",
    "gamma",
    "get_global_generator",
    "get_seed",
    "log_uniform_candidate_sampler",
    "multinomial",
    "normal",
    "poisson",
    "set_global_generator",
    "set_random_seed",
    "shuffle",
    "split",
    "stateless_binomial",
    "stateless_categorical",
    "stateless_gamma",
    "stateless_multinomial",
    "stateless_normal",
    "stateless_parameterized_truncated_normal",
    "stateless_poisson",
    "stateless_truncated_normal",
    "stateless_uniform",
    "truncated_normal",
    "uniform",
    "uniform_candidate_sampler",
]


def __getattr__(name):
    return _unsupported("tf.random", name)
