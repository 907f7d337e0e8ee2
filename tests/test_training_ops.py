"""The Apply* ops on their own: kernels, copy-on-write stores, static and runtime checks."""

import threading

import numpy as np
import pytest

import nbdist as tf
from nbdist.graph.graph_def import node_def_of
from nbdist.ops import registry, training_ops
from nbdist.ops.resources import VariableResource

pytestmark = pytest.mark.usefixtures("graph")


def _initialized(sess, *variables):
    sess.run(tf.variables_initializer(list(variables)))


def test_apply_gradient_descent_returns_and_stores_the_new_value():
    w = tf.Variable(np.array([1.0, 2.0]), name="w")
    update = training_ops.apply_gradient_descent(w, np.float64(0.5), np.array([2.0, -2.0]))
    with tf.Session() as sess:
        _initialized(sess, w)
        np.testing.assert_array_equal(sess.run(update), [0.0, 3.0])
        np.testing.assert_array_equal(sess.run(w), [0.0, 3.0])


def test_apply_momentum_updates_the_accumulator_slot():
    w = tf.Variable(np.array([1.0]), name="w")
    accum = tf.Variable(np.array([0.5]), name="accum")
    update = training_ops.apply_momentum(w, accum, np.float64(0.1), np.array([1.0]), np.float64(0.9))
    with tf.Session() as sess:
        _initialized(sess, w, accum)
        sess.run(update)
        np.testing.assert_allclose(sess.run([w, accum]), [[1.0 - 0.1 * 1.45], [1.45]], rtol=1e-12)


def test_apply_adam_updates_both_moments():
    w, m, v = (tf.Variable(np.array([x]), name=n) for x, n in ((1.0, "w"), (0.0, "m"), (0.0, "v")))
    hyper = [np.float64(x) for x in (0.9, 0.999, 0.1, 0.9, 0.999, 1e-8)]
    update = training_ops.apply_adam(w, m, v, *hyper, np.array([2.0]))
    with tf.Session() as sess:
        _initialized(sess, w, m, v)
        sess.run(update)
        w_val, m_val, v_val = sess.run([w, m, v])
    np.testing.assert_allclose(m_val, [0.2], rtol=1e-12)
    np.testing.assert_allclose(v_val, [0.004], rtol=1e-12)
    lr_t = 0.1 * np.sqrt(0.001) / 0.1
    np.testing.assert_allclose(w_val, 1.0 - lr_t * 0.2 / (np.sqrt(0.004) + 1e-8), rtol=1e-12)


@pytest.mark.parametrize(("update_slots", "accum_after"), [(True, 4.5), (False, 0.5)])
def test_apply_adagrad_updates_the_accumulator_unless_told_not_to(update_slots, accum_after):
    w, accum = tf.Variable(np.array([1.0]), name="w"), tf.Variable(np.array([0.5]), name="accum")
    update = training_ops.apply_adagrad(w, accum, np.float64(0.3), np.array([2.0]), update_slots=update_slots)
    with tf.Session() as sess:
        _initialized(sess, w, accum)
        sess.run(update)
        w_val, a_val = sess.run([w, accum])
    np.testing.assert_allclose(a_val, [accum_after], rtol=1e-12)
    np.testing.assert_allclose(w_val, [1.0 - 0.3 * 2.0 / np.sqrt(accum_after)], rtol=1e-12)


@pytest.mark.parametrize("centered", [False, True])
def test_apply_rms_prop_updates_its_slots(centered):
    w, ms, mom, mg = (
        tf.Variable(np.array([x]), name=n) for x, n in ((1.0, "w"), (1.0, "ms"), (0.5, "mom"), (0.5, "mg"))
    )
    hyper = [np.float64(x) for x in (0.1, 0.9, 0.5, 1e-6)]
    if centered:
        update = training_ops.apply_centered_rms_prop(w, mg, ms, mom, *hyper, np.array([2.0]))
    else:
        update = training_ops.apply_rms_prop(w, ms, mom, *hyper, np.array([2.0]))
    with tf.Session() as sess:
        _initialized(sess, w, ms, mom, mg)
        sess.run(update)
        w_val, ms_val, mom_val, mg_val = sess.run([w, ms, mom, mg])
    ms_want = 1.0 + (4.0 - 1.0) * 0.1
    mg_want = 0.5 + (2.0 - 0.5) * 0.1 if centered else 0.5
    denom = ms_want - mg_want**2 + 1e-6 if centered else ms_want + 1e-6
    mom_want = 0.5 * 0.5 + 0.1 * 2.0 / np.sqrt(denom)
    np.testing.assert_allclose(
        [ms_val, mg_val, mom_val, w_val], [[ms_want], [mg_want], [mom_want], [1.0 - mom_want]]
    )


def test_apply_op_is_colocated_with_its_variable():
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(np.array([1.0]), name="w")
    with tf.device("/job:worker/task:0"):
        update = training_ops.apply_gradient_descent(w, np.float64(0.1), np.array([1.0]))
    assert update.device == "/job:ps/task:0"
    assert update.op.colocation_groups() == ["loc:@w"]


def test_a_fetched_value_does_not_change_when_the_variable_is_updated():
    w = tf.Variable(np.array([1.0, 2.0]), name="w")
    update = training_ops.apply_gradient_descent(w, np.float64(1.0), np.array([1.0, 1.0]))
    with tf.Session() as sess:
        _initialized(sess, w)
        before = sess.run(w)
        after_first = sess.run(update)
        sess.run(update)
    np.testing.assert_array_equal(before, [1.0, 2.0])
    np.testing.assert_array_equal(after_first, [0.0, 1.0])


def test_concurrent_updates_are_not_lost():
    w = tf.Variable(np.zeros(1000), name="w")
    update = training_ops.apply_gradient_descent(w, np.float64(1.0), -np.ones(1000))
    with tf.Session() as sess:
        _initialized(sess, w)
        threads = [
            threading.Thread(target=lambda: [sess.run(update.op) for _ in range(25)]) for _ in range(4)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        np.testing.assert_array_equal(sess.run(w), np.full(1000, 100.0))


def test_hyper_parameter_of_another_dtype_is_a_type_error():
    w = tf.Variable(np.array([1.0]), name="w")
    with pytest.raises(
        TypeError, match=r"input 'alpha' .* has dtype float32, but the variable 'w' is float64"
    ):
        training_ops.apply_gradient_descent(w, tf.constant(0.1, tf.float32), np.array([1.0]))


def test_hyper_parameter_must_be_a_scalar():
    w = tf.Variable(np.array([1.0]), name="w")
    with pytest.raises(ValueError, match=r"'alpha' must be a scalar, got .* of shape \(1,\)"):
        training_ops.apply_gradient_descent(w, np.array([0.1]), np.array([1.0]))


def test_gradient_of_another_shape_is_a_value_error():
    w = tf.Variable(np.array([1.0, 2.0]), name="w")
    with pytest.raises(
        ValueError, match=r"'delta' .* has shape \(3,\), but the variable 'w' has shape \(2,\)"
    ):
        training_ops.apply_gradient_descent(w, np.float64(0.1), np.ones(3))


def test_gradient_of_another_shape_at_run_time_names_the_node():
    w = tf.Variable(np.array([1.0, 2.0]), name="w")
    grad = tf.placeholder(tf.float64)
    update = training_ops.apply_gradient_descent(w, np.float64(0.1), grad, name="step")
    with tf.Session() as sess:
        _initialized(sess, w)
        with pytest.raises(
            tf.errors.InvalidArgumentError,
            match=r"(?s)delta has shape \[3\], but the variable w has shape \[2\].*\[\[node step",
        ):
            sess.run(update, {grad: np.ones(3)})


def test_uninitialized_slot_names_the_slot():
    w = tf.Variable(np.array([1.0]), name="w")
    accum = tf.Variable(np.array([0.0]), name="accum")
    update = training_ops.apply_momentum(w, accum, np.float64(0.1), np.array([1.0]), np.float64(0.9))
    with tf.Session() as sess:
        _initialized(sess, w)
        with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized value accum"):
            sess.run(update)


def test_the_same_variable_twice_is_refused():
    w = tf.Variable(np.array([1.0]), name="w")
    update = training_ops.apply_momentum(w, w, np.float64(0.1), np.array([1.0]), np.float64(0.9))
    with tf.Session() as sess:
        _initialized(sess, w)
        with pytest.raises(tf.errors.InvalidArgumentError, match="got the same variable twice"):
            sess.run(update)


def test_apply_needs_a_variable():
    with pytest.raises(TypeError, match=r"ApplyGradientDescent updates a tf\.Variable, got"):
        training_ops.apply_gradient_descent(tf.constant([1.0]), 0.1, [1.0])


def test_apply_ops_have_no_gradient():
    w = tf.Variable(np.array([1.0]), name="w")
    update = training_ops.apply_gradient_descent(w, np.float64(0.1), np.array([1.0]))
    x = tf.constant(np.array([2.0]))
    assert tf.gradients(update * x, [x])[0] is not None
    assert tf.gradients(update * x, [w])[0] is None


# -- the dense updates compute TF's formulas in TF's order, in the variable's dtype ------------------
def _tf_formulas(op, w, slots, lr, grad, momentum=None, powers=None, betas=None, epsilon=None):
    """What TF's CPU kernels compute (Eigen, in T), as plain numpy: the new var and slots."""
    if op == "gd":
        return w - grad * lr, []
    if op in ("momentum", "nesterov"):
        accum = slots[0] * momentum + grad
        step = grad * lr + accum * momentum * lr if op == "nesterov" else accum * lr
        return w - step, [accum]
    (beta1_power, beta2_power), (beta1, beta2) = powers, betas
    alpha = lr * np.sqrt(1 - beta2_power) / (1 - beta1_power)
    m = slots[0] + (grad - slots[0]) * (1 - beta1)
    v = slots[1] + (np.square(grad) - slots[1]) * (1 - beta2)
    return w - m * alpha / (np.sqrt(v) + epsilon), [m, v]


@pytest.mark.parametrize("op", ["gd", "momentum", "nesterov", "adam"])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("shape", [(), (3, 4)])
def test_dense_update_is_tfs_formula_bit_for_bit_in_the_variables_dtype(op, dtype, shape):
    rng = np.random.default_rng(7)
    w, a, b, grad = (rng.standard_normal(shape).astype(dtype) for _ in range(4))
    b = np.abs(b)  # (Adam's second moment)
    s = [np.asarray(x, dtype) for x in (0.01, 0.9, 0.9**3, 0.999**3, 0.9, 0.999, 1e-7)]
    lr, momentum, powers, betas, epsilon = s[0], s[1], s[2:4], s[4:6], s[6]
    var = tf.Variable(w, name="w")
    slots = [tf.Variable(x, name=f"slot{i}") for i, x in enumerate((a, b)[: 2 if op == "adam" else 1])]
    if op == "gd":
        slots, update = [], training_ops.apply_gradient_descent(var, lr, grad)
    elif op == "adam":
        update = training_ops.apply_adam(var, *slots, *powers, lr, *betas, epsilon, grad)
    else:
        update = training_ops.apply_momentum(var, slots[0], lr, grad, momentum, use_nesterov=op == "nesterov")
    with tf.Session() as sess:
        _initialized(sess, var, *slots)
        result = sess.run(update)
        stored = sess.run([var, *slots])
    want_w, want_slots = _tf_formulas(op, w, (a, b), lr, grad, momentum, powers, betas, epsilon)
    for got, want in zip([result, *stored], [want_w, want_w, *want_slots], strict=True):
        assert np.asarray(got).dtype == dtype and np.shape(got) == shape
        np.testing.assert_array_equal(got, want)


def test_an_update_swaps_in_new_arrays_and_leaves_the_ones_readers_hold_alone():
    # A reader (a fetch, a tensor on the wire, another step) holds the stored array itself.
    w, m, v = (tf.Variable(np.float32([1.0, 2.0]), name=n) for n in ("w", "m", "v"))
    hyper = [np.float32(x) for x in (0.9, 0.999, 0.1, 0.9, 0.999, 1e-8)]
    update = training_ops.apply_adam(w, m, v, *hyper, np.float32([1.0, -1.0]))
    resources = [VariableResource(n, "") for n in ("w", "m", "v")]
    for r, x in zip(resources, ([1.0, 2.0], [0.5, 0.5], [0.25, 0.25])):
        r.value = np.float32(x)
    held = [r.value for r in resources]
    kernel = registry.lookup("ApplyAdam").kernel
    out = kernel(None, node_def_of(update.op), *resources, *map(np.asarray, hyper), np.float32([1.0, -1.0]))
    assert out is resources[0].value
    for r, old, x in zip(resources, held, ([1.0, 2.0], [0.5, 0.5], [0.25, 0.25])):
        assert r.value is not old and not r.value.flags.writeable
        np.testing.assert_array_equal(old, np.float32(x))


def test_adam_refuses_the_same_slot_twice():
    w, m = tf.Variable(np.array([1.0]), name="w"), tf.Variable(np.array([0.0]), name="m")
    hyper = [np.float64(x) for x in (0.9, 0.999, 0.1, 0.9, 0.999, 1e-8)]
    update = training_ops.apply_adam(w, m, m, *hyper, np.array([1.0]))
    with tf.Session() as sess:
        _initialized(sess, w, m)
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"ApplyAdam got the same variable twice"):
            sess.run(update)
