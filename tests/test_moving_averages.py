"""`tf.train.ExponentialMovingAverage`: values over several applies, names, placement and
`variables_to_restore`, compared with real TensorFlow on the same programs."""

import numpy as np
import pytest

import nbdist as tf

W0 = np.array([1.0, -2.0, 0.5], np.float32)


pytestmark = pytest.mark.usefixtures("graph")


def _run_both(tf1, program, steps=4):
    """`program(lib)` -> (step_op, fetches); runs `steps` steps in nbdist and in real TF."""
    results = []
    for lib in (tf, tf1):
        with lib.Graph().as_default():
            step_op, fetches = program(lib)
            with lib.Session() as sess:
                sess.run(lib.global_variables_initializer())
                history = []
                for _ in range(steps):
                    sess.run(step_op)
                    history.append(sess.run(fetches))
                results.append(history)
    return results


def _assert_same(ours, theirs):
    for a, b in zip(ours, theirs):
        if isinstance(a, (list, tuple)):
            _assert_same(a, b)
        else:
            np.testing.assert_allclose(a, b, rtol=1e-6)


def _trained_model(lib, num_updates, decay=0.9):
    w = lib.Variable(W0, name="w")
    b = lib.Variable(np.float32(0.5), name="b")
    step = lib.train.get_or_create_global_step()
    loss = lib.reduce_sum(lib.square(w * b - 1.0))
    train = lib.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    ema = lib.train.ExponentialMovingAverage(decay, num_updates=step if num_updates else None)
    with lib.control_dependencies([train]):
        train_with_averages = ema.apply([w, b])
    return ema, w, b, train_with_averages


@pytest.mark.parametrize("num_updates", [False, True], ids=["plain", "num_updates"])
def test_averages_after_each_training_step_match_tf(tf1, num_updates):
    def program(lib):
        ema, w, b, train = _trained_model(lib, num_updates)
        return train, [ema.average(w), ema.average(b), w, b]

    ours, theirs = _run_both(tf1, program)
    _assert_same(ours, theirs)
    assert not np.allclose(ours[-1][0], ours[-1][2])  # the average lags the variable


def test_averages_of_tensors_with_zero_debias_match_tf(tf1):
    def program(lib):
        counter = lib.Variable(np.float32(0.0), name="counter")
        bump = counter.assign_add(1.0)
        with lib.control_dependencies([bump]):
            x = lib.identity(lib.stack([counter * 2.0, counter * counter]), name="x")
        plain = lib.train.ExponentialMovingAverage(0.8, name="plain")
        debiased = lib.train.ExponentialMovingAverage(0.8, zero_debias=True, name="debiased")
        update = lib.group(plain.apply([x]), debiased.apply([x]))
        return update, [plain.average(x), debiased.average(x)]

    ours, theirs = _run_both(tf1, program)
    _assert_same(ours, theirs)


def test_names_collections_and_variables_to_restore_match_tf(tf1):
    found = []
    for lib in (tf, tf1):
        with lib.Graph().as_default():
            ema, w, _, _ = _trained_model(lib, True)
            other = lib.Variable(1.0, name="other", trainable=False)
            found.append(
                (
                    ema.average_name(w),
                    ema.average(w).op.name,
                    ema.average_name(other),
                    [v.op.name for v in lib.moving_average_variables()],
                    {k: v.op.name for k, v in ema.variables_to_restore().items()},
                    ema.average(other),
                    ema.average(w).trainable
                    if lib is tf
                    else ema.average(w) not in lib.trainable_variables(),
                )
            )
    assert found[0][:6] == found[1][:6]
    assert found[0][6] is False and found[1][6] is True


def test_shadow_variables_live_with_their_variable_on_the_ps():
    with tf.device(tf.train.replica_device_setter(ps_tasks=2)):
        w = tf.Variable(W0, name="w")
        b = tf.Variable(1.0, name="b")
        ema = tf.train.ExponentialMovingAverage(0.99)
        update = ema.apply([w, b])
    assert ema.average(w).op.colocation_groups() == ["loc:@w"]
    assert ema.average(b).op.colocation_groups() == ["loc:@b"]
    assigns = [op for op in tf.get_default_graph().get_operations() if op.type == "AssignSub"]
    assert sorted(op.colocation_groups() for op in assigns) == [["loc:@b"], ["loc:@w"]]
    assert update.type == "NoOp"


def test_apply_refuses_integers_and_repeats():
    ema = tf.train.ExponentialMovingAverage(0.9)
    with pytest.raises(TypeError, match="must be half, float, or double: n"):
        ema.apply([tf.Variable(1, name="n")])
    w = tf.Variable(W0)
    with pytest.raises(ValueError, match="listed twice"):
        ema.apply([w, w])


def test_sync_replicas_applies_the_averages_in_the_chiefs_sync_step(tf1):
    """One replica, the chief's sync op run by hand after each worker step (no threads; the local
    step is set to the global step first, so no gradient is stale): the averages follow the
    variables after each applied update, as in TF."""
    results = []
    for lib in (tf, tf1):
        with lib.Graph().as_default():
            w = lib.Variable(W0, name="w")
            b = lib.Variable(np.float32(0.5), name="b")
            step = lib.train.get_or_create_global_step()
            loss = lib.reduce_sum(lib.square(w * b - 1.0))
            ema = lib.train.ExponentialMovingAverage(0.9, num_updates=step)
            opt = lib.train.SyncReplicasOptimizer(
                lib.train.GradientDescentOptimizer(0.1), 1, variable_averages=ema, variables_to_average=[w, b]
            )
            train = opt.minimize(loss, global_step=step)
            (sync_op,) = opt.get_chief_queue_runner().enqueue_ops
            with lib.Session() as sess:
                sess.run(lib.global_variables_initializer())
                sess.run(lib.local_variables_initializer())
                sess.run([opt.chief_init_op, opt.get_init_tokens_op()])
                history = []
                for _ in range(4):
                    sess.run(opt.local_step_init_op)
                    sess.run(train)
                    sess.run(sync_op)
                    history.append(sess.run([ema.average(w), ema.average(b), w, step]))
                results.append(history)
    _assert_same(*results)
    assert results[0][-1][3] == 4
