"""`tf.debugging`: TF 1.x's other path of the graph asserts, `check_numerics` and the value
tests (ops/check_ops.py, logging_ops.py, control_flow_ops.py's `Assert`, unary_ops' ``is_*``);
`assert_all_finite` is `tf.verify_tensor_all_finite`."""

from nbdist._facade import unsupported as _unsupported
from nbdist.ops.check_ops import (
    assert_equal,
    assert_greater,
    assert_greater_equal,
    assert_integer,
    assert_less,
    assert_less_equal,
    assert_near,
    assert_negative,
    assert_non_negative,
    assert_non_positive,
    assert_none_equal,
    assert_positive,
    assert_proper_iterable,
    assert_rank,
    assert_rank_at_least,
    assert_rank_in,
    assert_same_float_dtype,
    assert_scalar,
    assert_type,
    is_numeric_tensor,
)
from nbdist.ops.control_flow_ops import Assert
from nbdist.ops.logging_ops import check_numerics
from nbdist.ops.logging_ops import verify_tensor_all_finite as assert_all_finite
from nbdist.ops.statistics_ops import is_non_decreasing, is_strictly_increasing
from nbdist.ops.unary_ops import is_finite, is_inf, is_nan

__all__ = [
    "Assert",
    "assert_all_finite",
    "assert_equal",
    "assert_greater",
    "assert_greater_equal",
    "assert_integer",
    "assert_less",
    "assert_less_equal",
    "assert_near",
    "assert_negative",
    "assert_non_negative",
    "assert_non_positive",
    "assert_none_equal",
    "assert_positive",
    "assert_proper_iterable",
    "assert_rank",
    "assert_rank_at_least",
    "assert_rank_in",
    "assert_same_float_dtype",
    "assert_scalar",
    "assert_type",
    "check_numerics",
    "is_finite",
    "is_inf",
    "is_nan",
    "is_non_decreasing",
    "is_numeric_tensor",
    "is_strictly_increasing",
]


def __getattr__(name):
    return _unsupported("tf.debugging", name)
