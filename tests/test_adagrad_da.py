"""`tf.train.AdagradDAOptimizer` against real TF: the same least-squares model trained five steps
with the global step incremented by `minimize`, with and without L1 / L2, gives the same weights,
slots (names and values) and global step; and TF's refusal of a bad accumulator value."""

import numpy as np
import pytest

import nbdist as tf

W0 = np.array([[1.0, -2.0], [0.5, 0.03]], np.float32)
X = np.array([[1.0, 2.0], [-1.0, 0.5], [0.3, -0.7]], np.float32)
Y = np.array([[0.5, -1.0], [2.0, 0.0], [-0.2, 0.4]], np.float32)

SETTINGS = {
    "plain": {},
    "l1": {"l1_regularization_strength": 0.3},
    "l1_l2": {"l1_regularization_strength": 0.05, "l2_regularization_strength": 0.2},
    "accumulator": {"initial_gradient_squared_accumulator_value": 0.5, "l2_regularization_strength": 0.1},
}


def _train(lib, settings, steps=5):
    with lib.Graph().as_default() as graph:
        step = lib.train.get_or_create_global_step()
        w = lib.Variable(W0, name="w")
        loss = lib.reduce_sum(lib.square(lib.matmul(X, w) - Y))
        opt = lib.train.AdagradDAOptimizer(0.5, step, **settings)
        train = opt.minimize(loss, global_step=step)
        slots = sorted(opt.get_slot_names())
        with lib.Session(graph=graph) as sess:
            sess.run(lib.global_variables_initializer())
            for _ in range(steps):
                sess.run(train)
            values = sess.run([w, step, *(opt.get_slot(w, s) for s in slots)])
        return values, [opt.get_slot(w, s).op.name for s in slots]


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_adagrad_da_matches_tensorflow(tf1, name):
    ours, our_names = _train(tf, SETTINGS[name])
    theirs, their_names = _train(tf1, SETTINGS[name])
    assert our_names == their_names
    for a, e in zip(ours, theirs):
        np.testing.assert_allclose(a, e, rtol=2e-6, atol=1e-7)
    assert ours[1] == 5 and not np.allclose(ours[0], W0)


def test_l1_makes_weights_exactly_zero():
    values, _ = _train(tf, {"l1_regularization_strength": 5.0}, steps=2)
    assert np.count_nonzero(values[0]) < values[0].size


def test_bad_accumulator_value_is_refused(tf1):
    for lib in (tf, tf1):
        with pytest.raises(ValueError, match=r"initial_gradient_squared_accumulator_value"):
            lib.train.AdagradDAOptimizer(0.1, None, initial_gradient_squared_accumulator_value=0.0)
