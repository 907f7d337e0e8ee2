"""TF's Python compositions of reductions: `reduce_variance`, `reduce_std`, `count_nonzero`,
`zero_fraction`, `is_non_decreasing` and `is_strictly_increasing` (no ops of their own: their
gradients are their parts').
"""

from nbdist.graph import dtypes as _dtypes
from nbdist.ops import math_ops
from nbdist.ops.concat_slice_ops import slice as _slice
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.reduction_ops import reduce_all, reduce_mean, reduce_sum
from nbdist.ops.reshape_ops import expand_dims, reshape
from nbdist.ops.shape_ops import size

__all__ = ["count_nonzero", "is_non_decreasing", "is_strictly_increasing"]  # (the rest: tf.math only)


def _alias(value, alias, name, alias_name):
    if alias is not None:
        if value is not None:
            raise ValueError(f"pass either {name} or {alias_name} (its TF1 alias), not both")
        return alias
    return value


def reduce_variance(input_tensor, axis=None, keepdims=False, name=None):
    """`tf.math.reduce_variance`: the mean squared deviation from the mean over `axis` (floats).

    Raises:
        TypeError: for an integer tensor (as TF).
    """
    x = convert_to_tensor(input_tensor)
    if not x.dtype.is_floating:
        raise TypeError(f"Input must be either real or complex; got {x.dtype.name} ({x.name})")
    means = reduce_mean(x, axis, keepdims=True)
    return reduce_mean(math_ops.square(x - means), axis, keepdims=keepdims, name=name)


def reduce_std(input_tensor, axis=None, keepdims=False, name=None):
    """`tf.math.reduce_std`: the square root of `reduce_variance` over `axis`."""
    return math_ops.sqrt(reduce_variance(input_tensor, axis, keepdims), name=name)


def count_nonzero(
    input_tensor=None,
    axis=None,
    keepdims=None,
    dtype=_dtypes.int64,
    name=None,
    reduction_indices=None,
    keep_dims=None,
    input=None,  # noqa: A002 - TF's alias of input_tensor
):
    """`tf.count_nonzero`: how many elements over `axis` are not 0 (not False, not ""), as `dtype`."""
    x = convert_to_tensor(_alias(input_tensor, input, "input_tensor", "input"))
    axis = _alias(axis, reduction_indices, "axis", "reduction_indices")
    keepdims = _alias(keepdims, keep_dims, "keepdims", "keep_dims")
    nonzero = math_ops.cast(math_ops.not_equal(x, math_ops.zeros_like(x)), _dtypes.int64)
    return math_ops.cast(reduce_sum(nonzero, axis, keepdims=keepdims), dtype, name=name)


def zero_fraction(value, name=None):
    """`tf.math.zero_fraction`: the fraction of `value`'s elements that are 0, as a float32 scalar."""
    x = convert_to_tensor(value)
    zeros = reduce_sum(math_ops.cast(math_ops.equal(x, math_ops.zeros_like(x)), _dtypes.float32))
    return math_ops.truediv(zeros, math_ops.cast(size(x), _dtypes.float32), name=name)


def _consecutive_differences(x, what):
    x = convert_to_tensor(x)
    if not (x.dtype.is_floating or x.dtype.is_integer):
        raise TypeError(f"{what}: expected x of a numeric dtype, got {x.dtype.name} ({x.name})")
    flat = reshape(x, [-1])
    n = size(flat)
    after = _slice(flat, expand_dims(math_ops.minimum(n, 1), 0), [-1])  # (empty for fewer than 2)
    return after - _slice(flat, [0], expand_dims(math_ops.maximum(n - 1, 0), 0))


def is_non_decreasing(x, name=None):
    """`tf.is_non_decreasing`: True if ``x[i] <= x[i + 1]`` over `x` read in row-major order."""
    diff = _consecutive_differences(x, "tf.is_non_decreasing")
    return reduce_all(math_ops.less_equal(math_ops.zeros_like(diff), diff), name=name)


def is_strictly_increasing(x, name=None):
    """`tf.is_strictly_increasing`: True if ``x[i] < x[i + 1]`` over `x` read in row-major order."""
    diff = _consecutive_differences(x, "tf.is_strictly_increasing")
    return reduce_all(math_ops.less(math_ops.zeros_like(diff), diff), name=name)
