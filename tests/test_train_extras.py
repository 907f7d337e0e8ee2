"""tf.train breadth (issue 32) against real TensorFlow: Adadelta, FTRL and the proximal
optimizers, more learning-rate schedules, hooks and loops, checkpoint readers, write_graph and
summary_iterator."""

import numpy as np
import pytest

import nbdist as tf

W0 = np.array([[1.0, -2.0], [0.5, 0.03]], np.float32)
X = np.array([[1.0, 2.0], [-1.0, 0.5], [0.3, -0.7]], np.float32)
Y = np.array([[0.5, -1.0], [2.0, 0.0], [-0.2, 0.4]], np.float32)

# name -> fn(lib): the optimizer
OPTIMIZERS = {
    "adadelta": lambda t: t.train.AdadeltaOptimizer(1.0, rho=0.9, epsilon=1e-6),
    "adadelta_defaults": lambda t: t.train.AdadeltaOptimizer(),
    "ftrl": lambda t: t.train.FtrlOptimizer(0.3),
    "ftrl_l1_l2": lambda t: t.train.FtrlOptimizer(
        0.3, l1_regularization_strength=0.05, l2_regularization_strength=0.1
    ),
    "ftrl_power": lambda t: t.train.FtrlOptimizer(
        0.3, learning_rate_power=-0.3, initial_accumulator_value=0.5, l1_regularization_strength=0.01
    ),
    "ftrl_shrinkage_beta": lambda t: t.train.FtrlOptimizer(
        0.3, l1_regularization_strength=0.01, l2_shrinkage_regularization_strength=0.2, beta=0.5
    ),
    "proximal_gd": lambda t: t.train.ProximalGradientDescentOptimizer(0.05),
    "proximal_gd_l1_l2": lambda t: t.train.ProximalGradientDescentOptimizer(
        0.05, l1_regularization_strength=0.2, l2_regularization_strength=0.1
    ),
    "proximal_adagrad": lambda t: t.train.ProximalAdagradOptimizer(0.2),
    "proximal_adagrad_l1_l2": lambda t: t.train.ProximalAdagradOptimizer(
        0.2, l1_regularization_strength=0.1, l2_regularization_strength=0.05
    ),
}


def _train(lib, make_optimizer, steps=5):
    """Variables (and slots) after `steps` steps on a small least-squares model."""
    with lib.Graph().as_default() as graph:
        w = lib.Variable(W0, name="w")
        b = lib.Variable(np.float32(0.1), name="b")
        loss = lib.reduce_sum(lib.square(lib.matmul(X, w) + b - Y))
        opt = make_optimizer(lib)
        train = opt.minimize(loss)
        slots = sorted(opt.get_slot_names())
        with lib.Session(graph=graph) as sess:
            sess.run(lib.global_variables_initializer())
            for _ in range(steps):
                sess.run(train)
            values = sess.run([w, b] + [opt.get_slot(v, s) for s in slots for v in (w, b)])
            names = [opt.get_slot(v, s).op.name for s in slots for v in (w, b)]
            return values, slots, names


@pytest.mark.tf
@pytest.mark.parametrize("name", OPTIMIZERS)
def test_optimizer_matches_tensorflow(tf1, name):
    ours, our_slots, our_names = _train(tf, OPTIMIZERS[name])
    theirs, their_slots, their_names = _train(tf1, OPTIMIZERS[name])
    assert (our_slots, our_names) == (their_slots, their_names)
    for a, e in zip(ours, theirs):
        np.testing.assert_allclose(a, e, rtol=2e-6, atol=1e-7)
    assert not np.allclose(ours[0], W0)  # (it trained)


def test_l1_zeroes_weights(graph):
    w = tf.Variable([0.01, -0.02, 3.0], name="w")
    train = tf.train.ProximalGradientDescentOptimizer(0.1, l1_regularization_strength=1.0).minimize(
        tf.reduce_sum(w * 0.0)
    )
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        np.testing.assert_allclose(sess.run(w), [0.0, 0.0, 2.9], rtol=1e-6)


def test_bad_hyper_parameters_are_refused():
    with pytest.raises(ValueError, match="initial_accumulator_value"):
        tf.train.ProximalAdagradOptimizer(0.1, initial_accumulator_value=0.0)
    with pytest.raises(ValueError, match="learning_rate_power"):
        tf.train.FtrlOptimizer(0.1, learning_rate_power=0.5)
    with pytest.raises(ValueError, match="l1_regularization_strength"):
        tf.train.FtrlOptimizer(0.1, l1_regularization_strength=-1.0)
