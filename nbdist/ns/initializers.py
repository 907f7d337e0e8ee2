"""`tf.initializers`: TF 1.x's initializer names - the initializer classes under their short names
(`zeros` is `tf.zeros_initializer`) and the variables' initializer ops (`global_variables`)."""

from nbdist._facade import unsupported as _unsupported
from nbdist.ops.init_ops import constant_initializer as constant
from nbdist.ops.init_ops import glorot_normal_initializer as glorot_normal
from nbdist.ops.init_ops import glorot_uniform_initializer as glorot_uniform
from nbdist.ops.init_ops import he_normal, he_uniform, lecun_normal, lecun_uniform, tables_initializer
from nbdist.ops.init_ops import identity_initializer as identity
from nbdist.ops.init_ops import ones_initializer as ones
from nbdist.ops.init_ops import orthogonal_initializer as orthogonal
from nbdist.ops.init_ops import random_normal_initializer as random_normal
from nbdist.ops.init_ops import random_uniform_initializer as random_uniform
from nbdist.ops.init_ops import truncated_normal_initializer as truncated_normal
from nbdist.ops.init_ops import uniform_unit_scaling_initializer as uniform_unit_scaling
from nbdist.ops.init_ops import variance_scaling_initializer as variance_scaling
from nbdist.ops.init_ops import zeros_initializer as zeros
from nbdist.ops.state_ops import global_variables_initializer as global_variables
from nbdist.ops.state_ops import local_variables_initializer as local_variables
from nbdist.ops.state_ops import variables_initializer as variables

__all__ = [
    "constant",
    "global_variables",
    "glorot_normal",
    "glorot_uniform",
    "he_normal",
    "he_uniform",
    "identity",
    "lecun_normal",
    "lecun_uniform",
    "local_variables",
    "ones",
    "orthogonal",
    "random_normal",
    "random_uniform",
    "tables_initializer",
    "truncated_normal",
    "uniform_unit_scaling",
    "variables",
    "variance_scaling",
    "zeros",
]


def __getattr__(name):
    return _unsupported("tf.initializers", name)
