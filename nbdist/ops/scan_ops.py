"""Scans along one axis: `tf.cumsum`, `tf.cumprod` and `tf.math.cumulative_logsumexp`, each
with TF's ``exclusive`` (the first result is the operation's identity: 0, 1, -inf) and
``reverse`` (from the end) attributes; the shape, the numpy kernel (a ufunc's ``accumulate``)
and the gradient (a scan the other way, as TF's math_grad.py) side by side.
"""

import numpy as np

from nbdist.ops import math_ops, registry
from nbdist.ops._shapes import int_tensor, invalid_argument, same_as_input
from nbdist.ops.constant_op import convert_to_tensor

__all__ = ["cumprod", "cumsum"]  # (cumulative_logsumexp is at tf.math only)

# op type -> (ufunc whose accumulate is the scan, the identity an exclusive scan starts with)
_SCANS = {
    "Cumsum": (np.add, 0),
    "Cumprod": (np.multiply, 1),
    "CumulativeLogsumexp": (np.logaddexp, -np.inf),
}


def _scan_kernel(op_type):
    ufunc, identity = _SCANS[op_type]

    def kernel(ctx, node, x, axis):
        x = np.asarray(x)
        axis = int(axis)
        if not -x.ndim <= axis < max(x.ndim, 1):
            raise invalid_argument(
                node, f"{op_type}: axis {axis} is out of range for an input of rank {x.ndim}"
            )
        if x.ndim == 0:
            return x.copy()
        if node.attr["reverse"]:
            x = np.flip(x, axis)
        out = ufunc.accumulate(x, axis=axis, dtype=x.dtype)
        if node.attr["exclusive"]:
            out = np.roll(out, 1, axis=axis)
            first = [slice(None)] * x.ndim
            first[axis] = slice(0, 1)
            out[tuple(first)] = identity
        return np.flip(out, axis) if node.attr["reverse"] else out

    return kernel


for _t in _SCANS:
    registry.shape(_t)(same_as_input)
    registry.kernel(_t)(_scan_kernel(_t))


def _scan(op_type, x, axis, exclusive, reverse, name):
    x = convert_to_tensor(x)
    attrs = {"exclusive": bool(exclusive), "reverse": bool(reverse)}
    return registry.make_op(op_type, [x, int_tensor(axis, "axis")], attrs, name=name).outputs[0]


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None):
    """`tf.cumsum`: the running sum of `x` along `axis`.

    ``exclusive=True`` leaves each element out of its own sum (the first is 0); ``reverse=True``
    sums from the end: ``cumsum([a, b, c], exclusive=True, reverse=True)`` is ``[b + c, c, 0]``.
    """
    return _scan("Cumsum", x, axis, exclusive, reverse, name)


def cumprod(x, axis=0, exclusive=False, reverse=False, name=None):
    """`tf.cumprod`: the running product of `x` along `axis` (``exclusive``, ``reverse`` as `cumsum`)."""
    return _scan("Cumprod", x, axis, exclusive, reverse, name)


def cumulative_logsumexp(x, axis=0, exclusive=False, reverse=False, name=None):
    """`tf.math.cumulative_logsumexp`: ``log(cumsum(exp(x)))`` along `axis`, without overflow."""
    return _scan("CumulativeLogsumexp", x, axis, exclusive, reverse, name)


def _flags(op):
    return op.get_attr("exclusive"), op.get_attr("reverse")


@registry.gradient("Cumsum")
def _cumsum_grad(op, grad):
    exclusive, reverse = _flags(op)
    return [cumsum(grad, op.inputs[1], exclusive=exclusive, reverse=not reverse), None]


@registry.gradient("Cumprod")
def _cumprod_grad(op, grad):
    x, axis = op.inputs
    exclusive, reverse = _flags(op)
    out = cumsum(op.outputs[0] * grad, axis, exclusive=exclusive, reverse=not reverse)
    return [math_ops.div_no_nan(out, x), None]


@registry.gradient("CumulativeLogsumexp")
def _cumulative_logsumexp_grad(op, grad):
    """TF's: the gradient's positive and negative parts scanned in log space, the other way."""
    x, axis = op.inputs
    result = op.outputs[0]
    exclusive, reverse = _flags(op)
    lowest = math_ops.zeros_like(grad) + np.finfo(grad.dtype.np).min
    log_pos = math_ops.where(grad > 0.0, math_ops.log(grad), lowest)  # (log of the others: unused NaN)
    log_neg = math_ops.where(grad < 0.0, math_ops.log(-grad), lowest)

    def part(log_grad):
        scanned = cumulative_logsumexp(log_grad - result, axis, exclusive=exclusive, reverse=not reverse)
        return math_ops.exp(scanned + x)

    return [part(log_pos) - part(log_neg), None]
