"""`tf.random`'s stateless draws beyond normal/uniform, the seed tools (`fold_in`, `split`),
`tf.random.Generator` and the candidate samplers `all_candidate_sampler`, against real TF.

The numbers are nbdist's, not TF's Philox streams, so each program is run under both libraries
and what TF guarantees is compared: dtypes, static shapes, the same numbers for the same seed,
other numbers for another seed or run, the distribution's mean within a few standard errors,
TF's errors for bad parameters; and exact values where TF's are defined without randomness
(`create_rng_state`, `all_candidate_sampler`, `fold_in`'s second word).
"""

import numpy as np
import pytest

import nbdist as tf

SEED = [3, 9]


def _run(lib, build, runs=1, init=False):
    with lib.Graph().as_default():
        out = build(lib)
        with lib.Session() as sess:
            if init:
                sess.run(lib.global_variables_initializer())
            return [sess.run(out) for _ in range(runs)], out


DRAWS = {
    # name: (program, dtype, expected mean)
    "binomial": (
        lambda t: t.random.stateless_binomial([4000, 2], SEED, [5.0, 20.0], 0.25),
        "int32",
        [1.25, 5.0],
    ),
    "binomial_int64": (
        lambda t: t.random.stateless_binomial([3000], SEED, 8.0, 0.5, output_dtype=t.int64),
        "int64",
        4.0,
    ),
    "gamma": (lambda t: t.random.stateless_gamma([5000, 2], SEED, [0.5, 3.0]), "float32", [0.5, 3.0]),
    "gamma_beta": (
        lambda t: t.random.stateless_gamma([5000], SEED, 2.0, beta=4.0, dtype=t.float64),
        "float64",
        0.5,
    ),
    "poisson": (
        lambda t: t.random.stateless_poisson([5000, 3], SEED, [0.5, 4.0, 10.0]),
        "int32",
        [0.5, 4.0, 10.0],
    ),
    "poisson_float": (
        lambda t: t.random.stateless_poisson([4000], SEED, 2.0, dtype=t.float32),
        "float32",
        2.0,
    ),
    "truncated": (
        lambda t: t.random.stateless_parameterized_truncated_normal([6000], SEED, 1.0, 2.0, 0.0, 10.0),
        "float32",
        1.0 + 2.0 * 0.3520653268 / 0.6914624613,  # N(1, 2) on [0, 10]: mu + sigma * phi(-0.5) / Z
    ),
    "multinomial": (
        lambda t: t.random.stateless_multinomial(t.log([[0.2, 0.8], [0.9, 0.1]]), 3000, SEED),
        "int64",
        [[0.8], [0.1]],
    ),
    "categorical": (
        lambda t: t.random.stateless_categorical(t.log([[0.3, 0.3, 0.4]]), 4000, SEED, dtype=t.int32),
        "int32",
        [[1.1]],
    ),
}


@pytest.mark.parametrize("name", sorted(DRAWS))
def test_stateless_draws_have_tf_shapes_dtypes_and_distributions(tf1, name):
    build, dtype, mean = DRAWS[name]
    for lib in (tf, tf1):
        (value,), out = _run(lib, build)
        assert out.dtype.name == dtype, (lib.__name__, name)
        assert out.shape.as_list() == list(value.shape)
        axis = 1 if name in ("multinomial", "categorical") else 0
        got = value.mean(axis=axis, keepdims=axis == 1)
        spread = value.std(axis=axis, keepdims=axis == 1) / np.sqrt(value.shape[axis])
        np.testing.assert_array_less(np.abs(got - mean), 5 * spread + 1e-9, err_msg=f"{lib.__name__} {name}")
    (again,), _ = _run(tf, build)
    (first,), _ = _run(tf, build)
    np.testing.assert_array_equal(again, first)


def test_another_seed_gives_other_numbers():
    (a,), _ = _run(tf, lambda t: t.random.stateless_gamma([50], [1, 2], 2.0))
    (b,), _ = _run(tf, lambda t: t.random.stateless_gamma([50], [1, 3], 2.0))
    assert not np.array_equal(a, b)


def test_parameters_must_fit_the_shape_as_in_tf(tf1):
    for lib in (tf, tf1):
        with pytest.raises(lib.errors.InvalidArgumentError, match=r"(?i)shape.*must end with"):
            _run(lib, lambda t: t.random.stateless_binomial([2, 3], SEED, [[5.0], [10.0]], 0.5))


def test_stateless_gamma_gradient_is_the_implicit_reparameterization(tf1):
    """d sample / d alpha at a fixed uniform draw: checked by finite differences of the draw."""

    def draw_and_gradient(lib, alpha):
        def build(t):
            a = t.constant(alpha)
            sample = t.random.stateless_gamma([2, 6], SEED, a, dtype=t.float64)
            return [sample, t.gradients(t.reduce_sum(sample), a)[0]]

        (value,), _ = _run(lib, build)
        return value

    alpha = np.array([0.7, 1.0, 2.5, 5.0, 9.0, 30.0])
    _, grad = draw_and_gradient(tf, alpha)
    numeric = (draw_and_gradient(tf, alpha + 1e-6)[0] - draw_and_gradient(tf, alpha - 1e-6)[0]) / 2e-6
    np.testing.assert_allclose(grad, numeric.sum(axis=0), rtol=1e-4)
    assert draw_and_gradient(tf1, alpha)[1].shape == grad.shape


def test_fold_in_and_split_make_seeds_as_tf(tf1):
    for lib in (tf1, tf):
        (folded,), f = _run(lib, lambda t: t.random.fold_in([1, 2], 7))
        (parts,), s = _run(lib, lambda t: t.random.split(t.constant([1, 2], t.int64), 3))
        assert f.dtype.name == "int32" and folded[1] == 7 and folded.shape == (2,)
        assert s.dtype.name == "int64" and parts.shape == (3, 2) and len({tuple(p) for p in parts}) == 3
    (other,), _ = _run(tf, lambda t: t.random.fold_in([1, 2], 8))
    (same,), _ = _run(tf, lambda t: t.random.fold_in([1, 2], 7))
    assert other[0] == same[0] and list(same) == list(folded)


def test_create_rng_state_equals_tfs(tf1):
    for seed, alg in ((1234, "philox"), (2**70 + 5, 1), (7, "threefry"), (-3, tf.random.Algorithm.PHILOX)):
        (ours,), _ = _run(tf, lambda t, s=seed, a=alg: t.random.create_rng_state(s, a))
        tf_alg = tf1.random.Algorithm(alg.value) if isinstance(alg, tf.random.Algorithm) else alg
        (theirs,), _ = _run(tf1, lambda t, s=seed, a=tf_alg: t.random.create_rng_state(s, a))
        np.testing.assert_array_equal(ours, theirs)
    assert [a.value for a in tf.random.Algorithm] == [a.value for a in tf1.random.Algorithm]


def test_generator_draws_change_per_run_and_repeat_per_seed(tf1):
    def build(t):
        g = t.random.Generator.from_seed(5)
        return [g.normal([3]), g.uniform([2], 1, 5, dtype=t.int32), g.state]

    for lib in (tf, tf1):
        runs, out = _run(lib, build, runs=2, init=True)
        assert not np.array_equal(runs[0][0], runs[1][0])
        assert runs[0][1].dtype == np.int32 and np.all((runs[0][1] >= 1) & (runs[0][1] < 5))
        assert runs[1][2][0] > runs[0][2][0]  # each run advances the counter
        assert out[0].shape.as_list() == [3]
    runs, _ = _run(tf, build, runs=2, init=True)
    assert runs[1][2][0] - runs[0][2][0] == 2  # nbdist's: one per draw
    again, _ = _run(tf, build, runs=2, init=True)
    np.testing.assert_array_equal(again[1][0], runs[1][0])


def test_generator_make_seeds_and_global_generator(tf1):
    def build(t):
        g = t.random.Generator.from_seed(1, alg="philox")
        t.random.set_global_generator(g)
        assert t.random.get_global_generator() is g and g.algorithm == 1
        return g.make_seeds(3)

    for lib in (tf, tf1):
        (value,), out = _run(lib, build, init=True)
        assert value.shape == (2, 3) and out.dtype.name == "int64"
    with tf.Graph().as_default():
        assert isinstance(tf.random.get_global_generator(), tf.random.Generator)


def test_generator_split_reset_and_skip():
    """(TF's `Generator.split` raises NotImplementedError in a TF 1.x graph; nbdist's works.)"""
    with tf.Graph().as_default():
        g = tf.random.Generator.from_seed(3)
        children = g.split(2)
        draws = [c.normal([2]) for c in children]
        draw, skip, reset = g.normal([1]), g.skip(10), g.reset_from_seed(3)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            first = sess.run(draw)
            sess.run([skip, reset])
            np.testing.assert_array_equal(sess.run(draw), first)
            a, b = sess.run(draws)
            assert not np.array_equal(a, b)


def test_all_candidate_sampler_equals_tfs(tf1):
    def build(t):
        classes = t.constant([[1, 2], [0, 2]], t.int64)
        return list(t.random.all_candidate_sampler(classes, 2, 5, True)) + list(
            t.nn.all_candidate_sampler(classes, 2, 3, False)
        )

    (ours,), _ = _run(tf, build)
    (theirs,), _ = _run(tf1, build)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a, b)
    for lib in (tf, tf1):
        with pytest.raises(
            lib.errors.InvalidArgumentError, match=r"`true_candidate` out of range \[0, 5\), received 7"
        ):
            _run(
                lib,
                lambda t: t.random.uniform_candidate_sampler(t.constant([[1, 7]], t.int64), 2, 3, True, 5),
            )
