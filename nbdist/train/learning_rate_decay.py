"""Learning-rate schedules at `tf.train.*` (TF 1.x's `learning_rate_decay`): each returns a
scalar Tensor of the global step, built from elementwise ops (TF's formulas, in the dtype of
`learning_rate`).

    global_step = tf.train.get_or_create_global_step()
    lr = tf.train.exponential_decay(0.1, global_step, decay_steps=1000, decay_rate=0.96, staircase=True)
    train_op = tf.train.GradientDescentOptimizer(lr).minimize(loss, global_step=global_step)

`piecewise_constant` is a chain of `tf.where` over the boundaries (TF builds a `tf.case`):
the same values, without control flow.
"""

import math

from nbdist.graph.graph import name_scope
from nbdist.ops import math_ops
from nbdist.ops.constant_op import constant, convert_to_tensor

__all__ = [
    "cosine_decay",
    "exponential_decay",
    "inverse_time_decay",
    "natural_exp_decay",
    "piecewise_constant",
    "polynomial_decay",
]


def _start(what, learning_rate, global_step):
    """The learning rate as a tensor, and the global step cast to its dtype.

    Raises:
        ValueError: without a global step (as TF 1.x).
    """
    if global_step is None:
        raise ValueError(f"global_step is required for {what}.")
    learning_rate = convert_to_tensor(learning_rate, name="learning_rate")
    return learning_rate, math_ops.cast(global_step, learning_rate.dtype)


def _exponential(what, learning_rate, global_step, decay_steps, decay_rate, staircase, scope):
    learning_rate, step = _start(what, learning_rate, global_step)
    dtype = learning_rate.dtype
    p = step / math_ops.cast(decay_steps, dtype)
    if staircase:
        p = math_ops.floor(p)
    return math_ops.multiply(learning_rate, math_ops.pow(math_ops.cast(decay_rate, dtype), p), name=scope)


def exponential_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False, name=None):
    """`tf.train.exponential_decay`: ``learning_rate * decay_rate ** (global_step / decay_steps)``.

    With ``staircase=True`` the exponent is floored: the rate drops every `decay_steps` steps.
    """
    with name_scope(name, "ExponentialDecay") as scope:
        return _exponential(
            "exponential_decay", learning_rate, global_step, decay_steps, decay_rate, staircase, scope
        )


def natural_exp_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False, name=None):
    """`tf.train.natural_exp_decay`: ``learning_rate * exp(-decay_rate * step / decay_steps)``.

    The quotient is floored with ``staircase=True``.
    """
    natural_rate = math_ops.exp(math_ops.negative(convert_to_tensor(decay_rate)))
    with name_scope(name, "ExponentialDecay") as scope:
        return _exponential(
            "natural_exp_decay", learning_rate, global_step, decay_steps, natural_rate, staircase, scope
        )


def inverse_time_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False, name=None):
    """`tf.train.inverse_time_decay`: ``learning_rate / (1 + decay_rate * step / decay_steps)``.

    The quotient is floored with ``staircase=True``.
    """
    with name_scope(name, "InverseTimeDecay") as scope:
        learning_rate, step = _start("inverse_time_decay", learning_rate, global_step)
        dtype = learning_rate.dtype
        p = step / math_ops.cast(decay_steps, dtype)
        if staircase:
            p = math_ops.floor(p)
        denom = math_ops.add(constant(1, dtype=dtype), math_ops.multiply(math_ops.cast(decay_rate, dtype), p))
        return math_ops.divide(learning_rate, denom, name=scope)


def polynomial_decay(
    learning_rate, global_step, decay_steps, end_learning_rate=0.0001, power=1.0, cycle=False, name=None
):
    """`tf.train.polynomial_decay`: from `learning_rate` to `end_learning_rate` in `decay_steps`.

    ``(learning_rate - end_learning_rate) * (1 - step / decay_steps) ** power + end_learning_rate``
    with the step capped at `decay_steps`; with ``cycle=True`` the decay restarts, `decay_steps`
    growing to the next multiple of itself above the step.
    """
    with name_scope(name, "PolynomialDecay") as scope:
        learning_rate, step = _start("polynomial_decay", learning_rate, global_step)
        dtype = learning_rate.dtype
        end_learning_rate = math_ops.cast(end_learning_rate, dtype)
        power = math_ops.cast(power, dtype)
        decay_steps_t = math_ops.cast(decay_steps, dtype)
        if cycle:
            multiplier = math_ops.where(
                math_ops.equal(step, 0.0),
                math_ops.ones_like(step),
                math_ops.ceil(step / math_ops.cast(decay_steps, dtype)),
            )
            decay_steps_t = math_ops.multiply(decay_steps_t, multiplier)
        else:
            step = math_ops.minimum(step, decay_steps_t)
        p = math_ops.divide(step, decay_steps_t)
        return math_ops.add(
            math_ops.multiply(learning_rate - end_learning_rate, math_ops.pow(1 - p, power)),
            end_learning_rate,
            name=scope,
        )


def cosine_decay(learning_rate, global_step, decay_steps, alpha=0.0, name=None):
    """`tf.train.cosine_decay`: a half cosine from `learning_rate` to ``alpha * learning_rate``.

    ``learning_rate * ((1 - alpha) * c + alpha)`` with
    ``c = 0.5 * (1 + cos(pi * min(global_step, decay_steps) / decay_steps))``.
    """
    with name_scope(name, "CosineDecay"):
        learning_rate, step = _start("cosine_decay", learning_rate, global_step)
        dtype = learning_rate.dtype
        decay_steps_t = math_ops.cast(decay_steps, dtype)
        completed_fraction = math_ops.minimum(step, decay_steps_t) / decay_steps_t
        cosine_decayed = 0.5 * (1.0 + math_ops.cos(constant(math.pi, dtype=dtype) * completed_fraction))
        decayed = (1 - alpha) * cosine_decayed + alpha
        return math_ops.multiply(learning_rate, decayed)


def piecewise_constant(x, boundaries, values, name=None):
    """`tf.train.piecewise_constant`: a step function of `x` through `values` at `boundaries`.

    ``values[0]`` for ``x <= boundaries[0]``, ``values[i]`` for ``boundaries[i-1] < x <=
    boundaries[i]``, ``values[-1]`` for ``x > boundaries[-1]``.

    Raises:
        ValueError: if ``len(values) != len(boundaries) + 1``, the boundaries' dtype is not `x`'s
            (int32 boundaries are cast for an int64 `x`, as TF), or the values' dtypes differ.
    """
    if len(boundaries) != len(values) - 1:
        raise ValueError("The length of boundaries should be 1 less than the length of values")
    with name_scope(name, "PiecewiseConstant") as scope:
        x = convert_to_tensor(x)
        boundaries = [_boundary(convert_to_tensor(b), x) for b in boundaries]
        values = [convert_to_tensor(v) for v in values]
        for v in values[1:]:
            if v.dtype != values[0].dtype:
                first, other = values[0].dtype.name, v.dtype.name
                raise ValueError(f"Values must have elements all with the same dtype ({first} vs {other}).")
        result = values[-1]
        for i in reversed(range(len(boundaries))):
            last = i == 0
            result = math_ops.where(
                math_ops.less_equal(x, boundaries[i]), values[i], result, name=scope if last else None
            )
        return result


def _boundary(b, x):
    if b.dtype == x.dtype:
        return b
    if b.dtype.name == "int32" and x.dtype.name == "int64":
        return math_ops.cast(b, x.dtype)
    raise ValueError(f"Boundaries ({b.dtype.name}) must have the same dtype as x ({x.dtype.name}).")
