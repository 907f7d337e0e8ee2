"""Optimizers: TF 1.x's update formulas, slots and their placement, global step, errors."""

import numpy as np
import pytest

import nbdist as tf

W0 = np.array([1.0, -2.0, 0.5])
B0 = np.array(0.25)
TARGET = np.array([3.0, 1.0, -1.0])
SCALE = np.array([1.0, 0.5, 2.0])


pytestmark = pytest.mark.usefixtures("graph")


def _quadratic():
    """``loss = sum(SCALE * (w - TARGET)**2) * b**2``: float64 variables w (vector) and b (scalar)."""
    w = tf.Variable(W0, name="w")
    b = tf.Variable(B0, name="b")
    loss = tf.reduce_sum(SCALE * tf.square(w - TARGET)) * tf.square(b)
    return w, b, loss


def _grads(w, b):
    """Gradients of `_quadratic`'s loss, in numpy."""
    gw = 2.0 * SCALE * (w - TARGET) * b**2
    gb = 2.0 * b * np.sum(SCALE * (w - TARGET) ** 2)
    return gw, gb


def _run(train_op, fetches, steps):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(steps):
            sess.run(train_op)
        return sess.run(fetches)


def _assert_close(actual, expected):
    """Values (or lists of values of different shapes) equal to 1e-10."""
    if isinstance(expected, list):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            np.testing.assert_allclose(a, e, rtol=1e-10, atol=1e-10)
    else:
        np.testing.assert_allclose(actual, expected, rtol=1e-10, atol=1e-10)


# -- update formulas vs numpy ---------------------------------------------------------------------
def test_gradient_descent_matches_numpy():
    w, b, loss = _quadratic()
    train = tf.train.GradientDescentOptimizer(0.05).minimize(loss)
    wv, bv = W0.copy(), B0.copy()
    for _ in range(3):
        gw, gb = _grads(wv, bv)
        wv, bv = wv - 0.05 * gw, bv - 0.05 * gb
    _assert_close(_run(train, [w, b], 3), [wv, bv])


def test_gradient_descent_learning_rate_can_be_fed():
    w, _, loss = _quadratic()
    lr = tf.placeholder(tf.float64, [])
    train = tf.train.GradientDescentOptimizer(lr).minimize(loss, var_list=[w])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train, {lr: 0.0})
        _assert_close(sess.run(w), W0)
        sess.run(train, {lr: 0.1})
        _assert_close(sess.run(w), W0 - 0.1 * _grads(W0, B0)[0])


@pytest.mark.parametrize("nesterov", [False, True])
def test_momentum_matches_numpy(nesterov):
    w, b, loss = _quadratic()
    train = tf.train.MomentumOptimizer(0.05, 0.9, use_nesterov=nesterov).minimize(loss)
    params, accums = [W0.copy(), B0.copy()], [np.zeros(3), np.zeros(())]
    for _ in range(4):
        grads = _grads(*params)
        for i, g in enumerate(grads):
            accums[i] = accums[i] * 0.9 + g
            step = g * 0.05 + accums[i] * 0.9 * 0.05 if nesterov else 0.05 * accums[i]
            params[i] = params[i] - step
    _assert_close(_run(train, [w, b], 4), params)


def test_adam_matches_numpy():
    w, b, loss = _quadratic()
    train = tf.train.AdamOptimizer(0.1, beta1=0.8, beta2=0.99, epsilon=1e-3).minimize(loss)
    params, ms, vs = [W0.copy(), B0.copy()], [0.0, 0.0], [0.0, 0.0]
    for t in range(1, 6):
        grads = _grads(*params)
        lr_t = 0.1 * np.sqrt(1 - 0.99**t) / (1 - 0.8**t)
        for i, g in enumerate(grads):
            ms[i] = 0.8 * ms[i] + 0.2 * g
            vs[i] = 0.99 * vs[i] + 0.01 * g * g
            params[i] = params[i] - lr_t * ms[i] / (np.sqrt(vs[i]) + 1e-3)
    _assert_close(_run(train, [w, b], 5), params)


def test_adagrad_matches_numpy():
    w, b, loss = _quadratic()
    train = tf.train.AdagradOptimizer(0.3, initial_accumulator_value=0.2).minimize(loss)
    params, accums = [W0.copy(), B0.copy()], [np.full(3, 0.2), np.full((), 0.2)]
    for _ in range(4):
        grads = _grads(*params)
        for i, g in enumerate(grads):
            accums[i] = accums[i] + g * g
            params[i] = params[i] - 0.3 * g / np.sqrt(accums[i])
    _assert_close(_run(train, [w, b], 4), params)


def test_adagrad_needs_a_positive_initial_accumulator():
    with pytest.raises(ValueError, match=r"initial_accumulator_value must be positive: 0\.0"):
        tf.train.AdagradOptimizer(0.1, initial_accumulator_value=0.0)


@pytest.mark.parametrize("centered", [False, True])
def test_rmsprop_matches_numpy(centered):
    w, b, loss = _quadratic()
    opt = tf.train.RMSPropOptimizer(0.05, decay=0.8, momentum=0.5, epsilon=1e-6, centered=centered)
    train = opt.minimize(loss)
    params = [W0.copy(), B0.copy()]
    ms, mg, mom = [np.ones(3), np.ones(())], [np.zeros(3), np.zeros(())], [np.zeros(3), np.zeros(())]
    for _ in range(4):
        grads = _grads(*params)
        for i, g in enumerate(grads):
            ms[i] = ms[i] + (g * g - ms[i]) * 0.2
            mg[i] = mg[i] + (g - mg[i]) * 0.2
            denom = ms[i] - mg[i] ** 2 + 1e-6 if centered else ms[i] + 1e-6
            mom[i] = mom[i] * 0.5 + 0.05 * g / np.sqrt(denom)
            params[i] = params[i] - mom[i]
    _assert_close(_run(train, [w, b], 4), params)


def test_rmsprop_slots_start_as_tf_1x_starts_them():
    w, _, loss = _quadratic()
    opt = tf.train.RMSPropOptimizer(0.1, centered=True)
    opt.minimize(loss, var_list=[w])
    slots = [opt.get_slot(w, name) for name in ("rms", "mg", "momentum")]
    assert [s.op.name for s in slots] == ["w/RMSProp", "w/RMSProp_1", "w/RMSProp_2"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        rms, mg, mom = sess.run(slots)
    _assert_close([rms, mg, mom], [np.ones(3), np.zeros(3), np.zeros(3)])


def test_adam_beta_powers_are_multiplied_once_per_step():
    _, _, loss = _quadratic()
    opt = tf.train.AdamOptimizer(beta1=0.8, beta2=0.99)
    train = opt.minimize(loss)
    beta1_power, beta2_power = opt._get_beta_accumulators()
    _assert_close(_run(train, [beta1_power, beta2_power], 3), [0.8**4, 0.99**4])


def test_hyper_parameters_can_be_callables_and_tensors():
    w, _, loss = _quadratic()
    train = tf.train.MomentumOptimizer(lambda: 0.05, tf.constant(0.9, tf.float32)).minimize(
        loss, var_list=[w]
    )
    accum = _grads(W0, B0)[0]
    _assert_close(_run(train, w, 1), W0 - 0.05 * accum)


def test_hyper_parameters_take_the_variables_dtype(graph):
    w32 = tf.Variable(np.float32([1.0, 2.0]), name="w32")
    train = tf.train.AdamOptimizer(0.1).minimize(tf.reduce_sum(tf.square(w32)))
    (adam,) = [op for op in graph.get_operations() if op.type == "ApplyAdam"]
    assert {t.dtype for t in adam.inputs} == {tf.float32}
    assert _run(train, w32, 2).dtype == np.float32


# -- graph structure: names, slots, colocation ---------------------------------------------------
def test_update_ops_are_named_as_tf_names_them(graph):
    _, _, loss = _quadratic()
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    assert (train.name, train.type) == ("GradientDescent", "NoOp")
    applies = [op.name for op in graph.get_operations() if op.type == "ApplyGradientDescent"]
    assert applies == [
        "GradientDescent/update_w/ApplyGradientDescent",
        "GradientDescent/update_b/ApplyGradientDescent",
    ]


def test_minimize_name_names_the_train_op():
    _, _, loss = _quadratic()
    assert tf.train.AdamOptimizer().minimize(loss, name="train").name == "train"


def test_slots_are_named_as_tf_names_them():
    w, _, loss = _quadratic()
    momentum, adam = tf.train.MomentumOptimizer(0.1, 0.9), tf.train.AdamOptimizer()
    momentum.minimize(loss)
    adam.minimize(loss)
    assert momentum.get_slot_names() == ["momentum"]
    assert momentum.get_slot(w, "momentum").name == "w/Momentum:0"
    assert adam.get_slot_names() == ["m", "v"]
    assert (adam.get_slot(w, "m").name, adam.get_slot(w, "v").name) == ("w/Adam:0", "w/Adam_1:0")
    assert adam.get_slot(w, "momentum") is None


def test_slot_of_a_variable_without_static_shape_takes_its_runtime_shape():
    w = tf.Variable(W0, name="w", validate_shape=False)
    opt = tf.train.MomentumOptimizer(0.1, 0.9)
    train = opt.minimize(tf.reduce_sum(tf.square(w)))
    slot = opt.get_slot(w, "momentum")
    assert slot.shape.ndims is None
    _assert_close(_run(train, [w, slot], 1), [W0 - 0.1 * 2 * W0, 2 * W0])


def test_slots_are_not_trainable_and_are_global_variables():
    w, _, loss = _quadratic()
    opt = tf.train.MomentumOptimizer(0.1, 0.9)
    opt.minimize(loss)
    slot = opt.get_slot(w, "momentum")
    assert slot in tf.global_variables()
    assert slot not in tf.trainable_variables()


def test_slots_are_created_at_the_root_scope_without_control_dependencies(graph):
    w, _, loss = _quadratic()
    gate = tf.no_op(name="gate")
    with tf.name_scope("training"), tf.control_dependencies([gate]):
        opt = tf.train.MomentumOptimizer(0.1, 0.9)
        opt.minimize(loss)
    slot = opt.get_slot(w, "momentum")
    assert slot.op.name == "w/Momentum"
    assert slot.op.control_inputs == []


def test_variables_lists_slots_and_beta_powers_by_name():
    _, _, loss = _quadratic()
    opt = tf.train.AdamOptimizer()
    opt.minimize(loss)
    names = [v.op.name for v in opt.variables()]
    assert names == ["b/Adam", "b/Adam_1", "beta1_power", "beta2_power", "w/Adam", "w/Adam_1"]


def test_a_second_minimize_reuses_the_slots():
    w, _, loss = _quadratic()
    opt = tf.train.AdamOptimizer()
    opt.minimize(loss)
    m = opt.get_slot(w, "m")
    opt.minimize(loss)
    assert opt.get_slot(w, "m") is m
    assert len(opt.variables()) == 6


def _on_ps():
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(W0, name="w")
    with tf.device("/job:worker/task:0"):
        loss = tf.reduce_sum(tf.square(w - TARGET))
    return w, loss


@pytest.mark.parametrize(
    ("make", "slots"),
    [
        (lambda: tf.train.MomentumOptimizer(0.1, 0.9), ["momentum"]),
        (tf.train.AdamOptimizer, ["m", "v"]),
        (lambda: tf.train.AdagradOptimizer(0.1), ["accumulator"]),
        (lambda: tf.train.RMSPropOptimizer(0.1, centered=True), ["rms", "mg", "momentum"]),
    ],
)
def test_slots_live_on_the_variables_device(make, slots):
    w, loss = _on_ps()
    opt = make()
    with tf.device("/job:worker/task:0"):
        opt.minimize(loss)
    for name in slots:
        slot = opt.get_slot(w, name)
        assert slot.device == w.device == "/job:ps/task:0"
        assert slot.op.colocation_groups() == ["loc:@w"]


@pytest.mark.parametrize(
    "make",
    [
        lambda: tf.train.GradientDescentOptimizer(0.1),
        lambda: tf.train.MomentumOptimizer(0.1, 0.9),
        tf.train.AdamOptimizer,
        lambda: tf.train.AdagradOptimizer(0.1),
        lambda: tf.train.RMSPropOptimizer(0.1),
        lambda: tf.train.RMSPropOptimizer(0.1, centered=True),
    ],
)
def test_update_ops_are_colocated_with_their_variable(graph, make):
    w, loss = _on_ps()
    with tf.device("/job:worker/task:0"):
        make().minimize(loss)
    applies = [op for op in graph.get_operations() if op.type.startswith("Apply")]
    assert len(applies) == 1
    assert applies[0].device == w.device
    assert applies[0].colocation_groups() == ["loc:@w"]
    for t in applies[0].inputs[1:]:  # hyper-parameters are created with the update too
        if t.op.type == "Const":
            assert t.device == w.device


def test_adam_beta_powers_live_with_the_first_variable_by_name():
    with tf.device("/job:ps/task:1"):
        b = tf.Variable(B0, name="b")
    _, loss = _on_ps()
    opt = tf.train.AdamOptimizer()
    opt.minimize(loss * b)
    beta1_power, beta2_power = opt._get_beta_accumulators()
    assert beta1_power.device == beta2_power.device == b.device == "/job:ps/task:1"
    assert beta1_power.op.colocation_groups() == ["loc:@b"]


def test_train_op_is_added_to_the_train_op_collection():
    _, _, loss = _quadratic()
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    assert tf.get_collection(tf.GraphKeys.TRAIN_OP) == [train]


# -- global step -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "make",
    [
        lambda: tf.train.GradientDescentOptimizer(0.1),
        lambda: tf.train.MomentumOptimizer(0.1, 0.9),
        tf.train.AdamOptimizer,
    ],
)
def test_global_step_increments_once_per_step(make):
    _, _, loss = _quadratic()
    step = tf.train.get_or_create_global_step()
    train = make().minimize(loss, global_step=step)
    assert _run(train, step, 3) == 3


def test_global_step_increment_runs_after_the_updates():
    _, _, loss = _quadratic()
    step = tf.train.get_or_create_global_step()
    train = tf.train.AdamOptimizer().minimize(loss, global_step=step)
    assert (train.name, train.type) == ("Adam", "AssignAdd")
    # After the updates, and after the read of the step that staleness is measured from.
    update, step_read = train.control_inputs
    assert update.name == "Adam/update"
    assert step_read.name == "Adam/step_at_start"
    assert {op.type for op in update.control_inputs} == {"ApplyAdam", "Assign"}


# -- compute_gradients / apply_gradients ---------------------------------------------------------------
def test_compute_gradients_pairs_each_trainable_variable_with_its_gradient():
    w, b, loss = _quadratic()
    unused = tf.Variable(1.0, name="unused")
    pairs = tf.train.GradientDescentOptimizer(0.1).compute_gradients(loss)
    assert [v for _, v in pairs] == [w, b, unused]
    assert pairs[2][0] is None
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _assert_close(sess.run([pairs[0][0], pairs[1][0]]), list(_grads(W0, B0)))


def test_apply_gradients_skips_variables_without_gradient(graph):
    w, _, loss = _quadratic()
    unused = tf.Variable(1.0, name="unused")
    opt = tf.train.GradientDescentOptimizer(0.1)
    train = opt.apply_gradients(opt.compute_gradients(loss, var_list=[w, unused]))
    assert [op.name for op in graph.get_operations() if op.type == "ApplyGradientDescent"] == [
        "GradientDescent/update_w/ApplyGradientDescent"
    ]
    assert _run(train, unused, 1) == 1.0


def test_gate_graph_computes_the_same_gradients():
    w, _, loss = _quadratic()
    ((grad, _),) = tf.train.GradientDescentOptimizer(0.1).compute_gradients(
        loss, var_list=[w], gate_gradients=tf.train.Optimizer.GATE_GRAPH
    )
    _assert_close(_run(tf.no_op(), grad, 0), _grads(W0, B0)[0])


def test_minimize_without_any_gradient_names_the_variables():
    tf.Variable(1.0, name="w")
    loss = tf.constant(2.0) * 3.0
    with pytest.raises(ValueError, match=r"No gradients provided for any variable.*w:0"):
        tf.train.GradientDescentOptimizer(0.1).minimize(loss)


def test_apply_gradients_without_any_gradient_names_the_variables():
    w = tf.Variable(1.0, name="w")
    with pytest.raises(ValueError, match=r"No gradients provided for any variable: .*w:0"):
        tf.train.GradientDescentOptimizer(0.1).apply_gradients([(None, w)])


def test_minimize_without_variables_says_so():
    with pytest.raises(ValueError, match="No variables to optimize"):
        tf.train.GradientDescentOptimizer(0.1).minimize(tf.constant(1.0))


def test_integer_loss_is_rejected():
    tf.Variable(1.0)
    with pytest.raises(ValueError, match=r"Invalid type tf.int32 for Const:0, expected: \['float16'"):
        tf.train.GradientDescentOptimizer(0.1).minimize(tf.constant(1))


def test_var_list_must_hold_variables():
    _, _, loss = _quadratic()
    with pytest.raises(TypeError, match="Trying to optimize unsupported type"):
        tf.train.GradientDescentOptimizer(0.1).minimize(loss, var_list=[loss])


def test_gate_gradients_must_be_a_gate():
    _, _, loss = _quadratic()
    with pytest.raises(ValueError, match="gate_gradients must be GATE_NONE, GATE_OP or GATE_GRAPH, got 7"):
        tf.train.GradientDescentOptimizer(0.1).compute_gradients(loss, gate_gradients=7)


def test_optimizer_needs_a_name():
    with pytest.raises(ValueError, match="Must specify the optimizer name"):
        tf.train.GradientDescentOptimizer(0.1, name="")


def test_optimizer_subclass_must_define_apply_dense():
    class NoUpdate(tf.train.Optimizer):
        pass

    with pytest.raises(TypeError, match="_apply_dense"):
        NoUpdate(False, "NoUpdate")


# -- initializers with optimizer state ---------------------------------------------------------------
def test_report_uninitialized_variables_lists_slots_until_initialized():
    _, _, loss = _quadratic()
    tf.train.AdamOptimizer().minimize(loss)
    report = tf.report_uninitialized_variables()
    with tf.Session() as sess:
        assert sorted(sess.run(report)) == sorted(
            [b"w", b"b", b"beta1_power", b"beta2_power", b"w/Adam", b"w/Adam_1", b"b/Adam", b"b/Adam_1"]
        )
        sess.run(tf.global_variables_initializer())
        assert list(sess.run(report)) == []


def test_variables_initializer_initializes_only_the_optimizers_state():
    w, _, loss = _quadratic()
    opt = tf.train.MomentumOptimizer(0.1, 0.9)
    opt.minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.variables_initializer(opt.variables()))
        assert sorted(sess.run(tf.report_uninitialized_variables())) == [b"b", b"w"]
        _assert_close(sess.run(opt.get_slot(w, "momentum")), np.zeros(3))


def test_training_before_initialization_names_the_variable():
    _, _, loss = _quadratic()
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    with (
        tf.Session() as sess,
        pytest.raises(tf.errors.FailedPreconditionError, match=r"uninitialized value [wb]"),
    ):
        sess.run(train)
