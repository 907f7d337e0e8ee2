"""Finite-difference gradient checks for nbdist ops (float64, central differences).

`check_gradients(fn, inputs)` builds ``y = fn(*placeholders)`` in a fresh graph, asks
`tf.gradients` for the vector-Jacobian product with a random ``grad_ys`` and compares it,
element by element, with central differences of ``sum(y * grad_ys)`` computed by running
the forward graph in a local `tf.Session`. A failure names the op and prints both values.
"""

import warnings

import numpy as np

import nbdist as tf


def _dense(grad):
    """A sparse gradient (IndexedSlices) is checked through its dense form; densifying one of
    unknown shape on purpose here, TF's memory warning about it is not wanted."""
    if not isinstance(grad, tf.IndexedSlices):
        return grad
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Converting sparse IndexedSlices", UserWarning)
        return tf.convert_to_tensor(grad)


def _run(sess, fetch, placeholders, values):
    return sess.run(fetch, feed_dict=dict(zip(placeholders, values)))


def check_gradients(fn, inputs, *, static_shapes=True, eps=1e-6, rtol=1e-5, atol=1e-7, seed=0):
    """Checks `tf.gradients` of ``fn(*inputs)`` against central differences.

    Args:
        fn: builds the output tensor from float64 placeholders, one per input.
        inputs: float64 arrays, the point at which to check.
        static_shapes: give the placeholders the inputs' shapes; False uses unknown
            shapes, so gradients must work from runtime shapes.
        eps: the finite-difference step.

    Returns:
        The op types in the checked graph's forward part (for coverage bookkeeping).

    Raises:
        AssertionError: naming the op and input, with the analytic and numeric gradients.
    """
    rng = np.random.default_rng(seed)
    inputs = [np.asarray(x, dtype=np.float64) for x in inputs]
    with tf.Graph().as_default() as graph:
        xs = [
            tf.placeholder(tf.float64, x.shape if static_shapes else None, name=f"x{i}")
            for i, x in enumerate(inputs)
        ]
        y = _dense(fn(*xs))
        forward_types = {op.type for op in graph.get_operations()}
        dy = tf.placeholder(tf.float64, name="dy")
        grads = [_dense(g) for g in tf.gradients(y, xs, grad_ys=dy)]
        with tf.Session() as sess:
            y_value = _run(sess, y, xs, inputs)
            weights = rng.standard_normal(np.shape(y_value))
            analytic = [None if g is None else _run(sess, g, [*xs, dy], [*inputs, weights]) for g in grads]
            for i, x in enumerate(inputs):
                numeric = _numeric_gradient(sess, y, xs, inputs, i, weights, eps)
                label = f"{y.op.type} ({y.op.name}) wrt input {i}"
                if analytic[i] is None:
                    assert not np.any(numeric), f"{label}: tf.gradients gave None, numeric is\n{numeric}"
                    continue
                assert np.shape(analytic[i]) == x.shape, (
                    f"{label}: gradient shape {np.shape(analytic[i])} != input shape {x.shape}"
                )
                if not np.allclose(analytic[i], numeric, rtol=rtol, atol=atol):
                    raise AssertionError(
                        f"gradient check failed for {label}\nanalytic:\n{analytic[i]}\nnumeric:\n{numeric}\n"
                        f"max abs difference: {np.max(np.abs(analytic[i] - numeric))}"
                    )
    return forward_types


def _numeric_gradient(sess, y, xs, inputs, i, weights, eps):
    out = np.zeros_like(inputs[i])
    for index in np.ndindex(inputs[i].shape):
        values = [x.copy() for x in inputs]
        values[i][index] += eps
        plus = np.sum(_run(sess, y, xs, values) * weights)
        values[i][index] -= 2 * eps
        minus = np.sum(_run(sess, y, xs, values) * weights)
        out[index] = (plus - minus) / (2 * eps)
    return out
