"""`tf.test.compute_gradient` and `tf.test.compute_gradient_error` (TF 1.x's gradient checker):
the Jacobian of `y` with respect to `x` from `tf.gradients` (theoretical) and from central
differences (numerical), run in the default session, as TF's.

    with tf.Session():
        x = tf.constant(x0)
        err = tf.test.compute_gradient_error(x, x0.shape, tf.tanh(x), x0.shape, x_init_value=x0)

Each Jacobian has one row per element of `x` and one column per element of `y`.
"""

import numpy as np

from nbdist.graph.default_session import get_default_session
from nbdist.ops.constant_op import constant
from nbdist.ops.gradients import gradients
from nbdist.ops.indexed_slices import IndexedSlices
from nbdist.ops.unary_ops import identity

__all__ = ["compute_gradient", "compute_gradient_error"]

_FLOATS = ("float16", "float32", "float64")


def _session():
    sess = get_default_session()
    if sess is None:
        raise ValueError(
            "tf.test.compute_gradient runs in the default session: call it inside `with tf.Session():`"
        )
    return sess


def _feeds(extra, new):
    return {**(extra or {}), **new}


def _theoretical(x, x_shape, x_data, dy, dy_shape, dx, extra):
    x_size, dy_size = int(np.prod(x_shape)), int(np.prod(dy_shape))
    row_size = int(np.prod(x_shape[1:]))  # (one row of a sparse gradient)
    jacobian = np.zeros((x_size, dy_size), dtype=x.dtype.np)
    dy_data = np.zeros(dy_shape, dtype=dy.dtype.np)
    flat = dy_data.reshape(-1)
    sess = _session()
    for col in range(dy_size):
        flat[col] = 1
        feed = _feeds(extra, {x: x_data, dy: dy_data})
        if isinstance(dx, IndexedSlices):
            indices, values = sess.run([dx.indices, dx.values], feed)
            for i, v in zip(indices, values):
                jacobian[i * row_size : (i + 1) * row_size, col] += v.ravel()
        else:
            jacobian[:, col] = sess.run(dx, feed).ravel()
        flat[col] = 0
    if not dy_size:
        backprop = sess.run(dx, _feeds(extra, {x: x_data, dy: dy_data}))
        if backprop.shape != x_data.shape:
            raise ValueError(f"Empty gradient has wrong shape: expected {x_data.shape}, got {backprop.shape}")
        if np.any(backprop):
            raise ValueError("Empty tensor with nonzero gradients")
    return jacobian


def _numerical(x, x_shape, x_data, y, y_shape, delta, extra):
    x_size, y_size = int(np.prod(x_shape)), int(np.prod(y_shape))
    x_data = np.asarray(x_data, dtype=x.dtype.np)
    scale = np.asarray(2 * delta, dtype=y.dtype.np)[()]
    jacobian = np.zeros((x_size, y_size), dtype=x.dtype.np)
    sess = _session()
    for row in range(x_size):
        x_pos, x_neg = x_data.copy(), x_data.copy()
        x_pos.reshape(-1)[row] += delta
        y_pos = sess.run(y, _feeds(extra, {x: x_pos}))
        x_neg.reshape(-1)[row] -= delta
        y_neg = sess.run(y, _feeds(extra, {x: x_neg}))
        jacobian[row, :] = ((y_pos - y_neg) / scale).ravel()
    return jacobian


def _dx_and_dy(x, y, y_shape):
    with x.graph.as_default():
        dy = constant(1.0, shape=y_shape, dtype=y.dtype)
        grad_ys = identity(dy)
    (dx,) = gradients(y, x, grad_ys)
    return dx, dy


def _one(x, x_shape, dx, y, y_shape, dy, x_init_value, delta, extra):
    for t, what in ((x, "x"), (y, "y")):
        if t.dtype.name not in _FLOATS:
            raise TypeError(f"tf.test.compute_gradient: {what} must be float16/32/64, got {t.dtype.name}")
    x_shape, y_shape = tuple(x_shape), tuple(y_shape)
    if x_init_value is not None:
        if tuple(np.shape(x_init_value)) != x_shape:
            raise ValueError(f"x_shape = {list(x_shape)}, init_data shape = {list(np.shape(x_init_value))}")
        x_data = x_init_value
    else:
        x_data = np.random.random_sample(x_shape).astype(x.dtype.np)
    jacobian_t = _theoretical(x, x_shape, x_data, dy, y_shape, dx, extra)
    jacobian_n = _numerical(x, x_shape, x_data, y, y_shape, delta, extra)
    return jacobian_t, jacobian_n


def compute_gradient(
    x, x_shape, y, y_shape, x_init_value=None, delta=1e-3, init_targets=None, extra_feed_dict=None
):
    """The theoretical and numerical Jacobians of `y` with respect to `x`.

    Args:
        x: a tensor (fed with `x_init_value`, or random values in [0, 1)), or a list of them.
        x_shape: its shape (a list of shapes for a list of x).
        y: a tensor; y_shape: its shape.
        x_init_value: the value of x (a list of values for a list of x).
        delta: the central difference's step.
        init_targets: ops run first (variable initializers).
        extra_feed_dict: more feeds for every run.

    Returns:
        ``(theoretical, numerical)``, each of shape ``[x size, y size]``, or a list of such pairs
        for a list of x.

    Raises:
        ValueError: no default session, or `x_init_value` not of `x_shape`.
        TypeError: an x or y that is not floating point.
    """
    if isinstance(x, list):
        pairs = [_dx_and_dy(xi, y, y_shape) for xi in x]
        inits = [None] * len(x) if x_init_value is None else x_init_value
    for init in init_targets or ():
        init.run()
    if isinstance(x, list):
        return [
            _one(xi, si, dxi, y, y_shape, dyi, vi, delta, extra_feed_dict)
            for xi, si, (dxi, dyi), vi in zip(x, x_shape, pairs, inits)
        ]
    dx, dy = _dx_and_dy(x, y, y_shape)
    return _one(x, x_shape, dx, y, y_shape, dy, x_init_value, delta, extra_feed_dict)


def compute_gradient_error(
    x, x_shape, y, y_shape, x_init_value=None, delta=1e-3, init_targets=None, extra_feed_dict=None
):
    """The largest absolute difference between the theoretical and numerical Jacobians of
    `compute_gradient` (over every x of a list)."""
    grad = compute_gradient(x, x_shape, y, y_shape, x_init_value, delta, init_targets, extra_feed_dict)
    if isinstance(grad, tuple):
        grad = [grad]
    error = 0
    for jacobian_t, jacobian_n in grad:
        if jacobian_t.size or jacobian_n.size:
            error = np.maximum(error, np.fabs(jacobian_t - jacobian_n).max())
    return error
