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
import numbers

from nbdist.graph.graph import name_scope
from nbdist.ops import math_ops, random_ops
from nbdist.ops.constant_op import constant, convert_to_tensor

__all__ = [
    "cosine_decay",
    "cosine_decay_restarts",
    "exponential_decay",
    "inverse_time_decay",
    "linear_cosine_decay",
    "natural_exp_decay",
    "noisy_linear_cosine_decay",
    "piecewise_constant",
    "piecewise_constant_decay",
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


piecewise_constant_decay = piecewise_constant  # (TF's other name for it)


def cosine_decay_restarts(
    learning_rate, global_step, first_decay_steps, t_mul=2.0, m_mul=1.0, alpha=0.0, name=None
):
    """`tf.train.cosine_decay_restarts`: SGDR, cosine decays restarting from the top.

    The ``i``-th period lasts ``first_decay_steps * t_mul**i`` steps and starts at
    ``learning_rate * m_mul**i``; within a period, `cosine_decay`'s curve (down to
    ``alpha * learning_rate``). A Python `t_mul` picks TF's branch when the graph is built
    (TF builds a `tf.cond`); a tensor `t_mul` selects it with `tf.where`.
    """
    with name_scope(name, "SGDRDecay") as scope:
        learning_rate, step = _start("cosine_decay_restarts", learning_rate, global_step)
        dtype = learning_rate.dtype
        completed_fraction = step / math_ops.cast(first_decay_steps, dtype)
        if isinstance(t_mul, numbers.Real):
            i_restart, completed_fraction = _restart(completed_fraction, t_mul, t_mul != 1.0)
        else:
            t_mul = math_ops.cast(t_mul, dtype)
            plain = _restart(completed_fraction, t_mul, False)
            geometric = _restart(completed_fraction, t_mul, True)
            is_one = math_ops.equal(t_mul, 1.0)
            i_restart, completed_fraction = (math_ops.where(is_one, p, g) for p, g in zip(plain, geometric))
        m_fac = math_ops.pow(math_ops.cast(m_mul, dtype), i_restart)
        cosine_decayed = (
            0.5 * m_fac * (1.0 + math_ops.cos(constant(math.pi, dtype=dtype) * completed_fraction))
        )
        decayed = (1 - alpha) * cosine_decayed + alpha
        return math_ops.multiply(learning_rate, decayed, name=scope)


def _restart(completed_fraction, t_mul, geometric):
    """The number of the current period and the fraction of it completed (TF's `compute_step`)."""
    if geometric:
        i_restart = math_ops.floor(
            math_ops.log(1.0 - completed_fraction * (1.0 - t_mul)) / math_ops.log(t_mul)
        )
        sum_r = (1.0 - math_ops.pow(t_mul, i_restart)) / (1.0 - t_mul)
        return i_restart, (completed_fraction - sum_r) / math_ops.pow(t_mul, i_restart)
    i_restart = math_ops.floor(completed_fraction)
    return i_restart, completed_fraction - i_restart


def linear_cosine_decay(
    learning_rate, global_step, decay_steps, num_periods=0.5, alpha=0.0, beta=0.001, name=None
):
    """`tf.train.linear_cosine_decay`: a cosine (`num_periods` periods) times a linear decay.

    ``learning_rate * ((alpha + (decay_steps - s) / decay_steps) * 0.5 * (1 + cos(2 pi
    num_periods s / decay_steps)) + beta)`` with ``s = min(global_step, decay_steps)``.
    """
    with name_scope(name, "LinearCosineDecay") as scope:
        return _linear_cosine(
            "linear_cosine_decay", learning_rate, global_step, decay_steps, num_periods, alpha, beta, scope
        )


def noisy_linear_cosine_decay(
    learning_rate,
    global_step,
    decay_steps,
    initial_variance=1.0,
    variance_decay=0.55,
    num_periods=0.5,
    alpha=0.0,
    beta=0.001,
    name=None,
):
    """`tf.train.noisy_linear_cosine_decay`: `linear_cosine_decay` with Gaussian noise of variance
    ``initial_variance / (1 + s)**variance_decay`` added to the linear factor (a new draw at
    every run; seeded by the graph's seed, as `tf.random_normal`)."""
    with name_scope(name, "NoisyLinearCosineDecay") as scope:
        noise = (initial_variance, variance_decay)
        return _linear_cosine(
            "noisy_linear_cosine_decay",
            learning_rate,
            global_step,
            decay_steps,
            num_periods,
            alpha,
            beta,
            scope,
            noise,
        )


def _linear_cosine(
    what, learning_rate, global_step, decay_steps, num_periods, alpha, beta, scope, noise=None
):
    learning_rate, step = _start(what, learning_rate, global_step)
    dtype = learning_rate.dtype
    decay_steps = math_ops.cast(decay_steps, dtype)
    step = math_ops.minimum(step, decay_steps)
    linear_decayed = (decay_steps - step) / decay_steps
    if noise is not None:
        initial_variance, variance_decay = (math_ops.cast(x, dtype) for x in noise)
        std = math_ops.sqrt(initial_variance / math_ops.pow(1.0 + step, variance_decay))
        linear_decayed = linear_decayed + random_ops.random_normal([], stddev=std, dtype=dtype)
    fraction = 2.0 * math_ops.cast(num_periods, dtype) * (step / decay_steps)
    cosine_decayed = 0.5 * (1.0 + math_ops.cos(constant(math.pi, dtype=dtype) * fraction))
    linear_cosine_decayed = (math_ops.cast(alpha, dtype) + linear_decayed) * cosine_decayed + beta
    return math_ops.multiply(learning_rate, linear_cosine_decayed, name=scope)


def _boundary(b, x):
    if b.dtype == x.dtype:
        return b
    if b.dtype.name == "int32" and x.dtype.name == "int64":
        return math_ops.cast(b, x.dtype)
    raise ValueError(f"Boundaries ({b.dtype.name}) must have the same dtype as x ({x.dtype.name}).")
