"""Issue 32 §3's extras of `tf.linalg`, `tf.random` and `tf.initializers` against real TensorFlow
at the same paths (each name spelled ``t.linalg.<name>``): values where they are determined
(decompositions by what is convention-free: singular values, reconstructions), statistics and
TF's formulas where they are random; and TF 1.x's top-level twins."""

import numpy as np
import pytest

import nbdist as tf

_RNG = np.random.default_rng(3)
A = _RNG.standard_normal((2, 3, 3))
SPD = A @ np.swapaxes(A, -1, -2) + 3 * np.eye(3)
B = _RNG.standard_normal((2, 3, 2))
TALL = _RNG.standard_normal((5, 3))
WIDE = _RNG.standard_normal((2, 4))
V3 = _RNG.standard_normal((4, 3))
RANK2 = np.outer([1.0, 2.0, 3.0], [1.0, -1.0, 0.5]) + np.outer([0.0, 1.0, 1.0], [2.0, 0.0, 1.0])


def _reconstruct_svd(t):
    s, u, v = t.linalg.svd(t.constant(A[:, :, :2]))
    return t.linalg.einsum("...ik,...k,...jk->...ij", u, s, v)


def _reconstruct_qr(t):
    q, r = t.linalg.qr(t.constant(TALL), full_matrices=True)
    return t.linalg.einsum("ik,kj->ij", q, r), t.abs(r), t.linalg.einsum("ki,kj->ij", q, q)


def _reconstruct_eigh(t):
    e, v = t.linalg.eigh(t.constant(SPD))
    return e, t.linalg.einsum("...ik,...k,...jk->...ij", v, e, v)


LINALG = {
    "adjoint": lambda t: t.linalg.adjoint(t.constant(A)),
    "band_part": lambda t: t.linalg.band_part(t.constant(A), 1, 0),
    "band_part_upper": lambda t: t.linalg.band_part(t.constant(A), -1, 1),
    "cholesky": lambda t: t.linalg.cholesky(t.constant(SPD)),
    "cholesky_solve": lambda t: t.linalg.cholesky_solve(t.linalg.cholesky(t.constant(SPD)), t.constant(B)),
    "cross": lambda t: t.linalg.cross(t.constant(V3), t.constant(V3[::-1])),
    "eigh": _reconstruct_eigh,
    "eigvalsh": lambda t: t.linalg.eigvalsh(t.constant(SPD)),
    "einsum": lambda t: t.linalg.einsum("bij,bjk->bik", t.constant(A), t.constant(B)),
    "einsum_implicit": lambda t: t.linalg.einsum("ij,jk", t.constant(TALL), t.constant(WIDE[:, :3].T)),
    "einsum_trace_free": lambda t: t.linalg.einsum("...ij->...j", t.constant(A)),
    "logdet": lambda t: t.linalg.logdet(t.constant(SPD)),
    "lstsq": lambda t: t.linalg.lstsq(t.constant(TALL), t.constant(TALL[:, :2] + 1.0)),
    "lstsq_wide_l2": lambda t: t.linalg.lstsq(t.constant(WIDE), t.constant(WIDE[:, :1]), l2_regularizer=0.1),
    "lu": lambda t: t.linalg.lu(t.constant(A)),
    "matrix_rank": lambda t: t.linalg.matrix_rank(t.constant(np.stack([RANK2, SPD[0]]))),
    "matvec": lambda t: t.linalg.matvec(t.constant(A), t.constant(B[..., 0])),
    "norm": lambda t: t.linalg.norm(t.constant(A)),
    "norm_axis": lambda t: t.linalg.norm(t.constant(A), ord=1, axis=-1, keepdims=True),
    "norm_p": lambda t: t.linalg.norm(t.constant(A), ord=3, axis=1),
    "norm_inf": lambda t: t.linalg.norm(t.constant(A), ord=np.inf, axis=0),
    "norm_matrix_1": lambda t: t.linalg.norm(t.constant(A), ord=1, axis=[-2, -1]),
    "norm_matrix_inf": lambda t: t.linalg.norm(t.constant(A), ord=np.inf, axis=[1, 2]),
    "norm_matrix_2": lambda t: t.linalg.norm(t.constant(A), ord=2, axis=[1, 2], keepdims=True),
    "norm_fro": lambda t: t.linalg.norm(t.constant(A), ord="fro", axis=[0, 2]),
    "normalize": lambda t: t.linalg.normalize(t.constant(A), axis=-1),
    "pinv": lambda t: t.linalg.pinv(t.constant(TALL)),
    "qr": _reconstruct_qr,
    "slogdet": lambda t: t.linalg.slogdet(t.constant(A)),
    "solve": lambda t: t.linalg.solve(t.constant(A), t.constant(B)),
    "solve_adjoint": lambda t: t.linalg.solve(t.constant(A), t.constant(B), adjoint=True),
    "svd": _reconstruct_svd,
    "svd_values": lambda t: t.linalg.svd(t.constant(A), compute_uv=False),
    "tensor_diag": lambda t: t.linalg.tensor_diag(t.constant(B[0])),
    "tensor_diag_part": lambda t: t.linalg.tensor_diag_part(t.constant(A[0])),
    "tensordot": lambda t: t.linalg.tensordot(t.constant(A), t.constant(B), [[0, 1], [0, 1]]),
    "tensordot_int": lambda t: t.linalg.tensordot(t.constant(TALL), t.constant(WIDE.T[:3]), 1),
    "triangular_solve": lambda t: t.linalg.triangular_solve(t.constant(SPD), t.constant(B)),
    "triangular_solve_upper": lambda t: t.linalg.triangular_solve(
        t.constant(SPD), t.constant(B), lower=False, adjoint=True
    ),
}
TOP_LEVEL = {
    "cholesky": lambda t: t.cholesky(t.constant(SPD)),
    "cholesky_solve": lambda t: t.cholesky_solve(t.cholesky(t.constant(SPD)), t.constant(B)),
    "cross": lambda t: t.cross(t.constant(V3), t.constant(V3 + 1.0)),
    "einsum": lambda t: t.einsum("ij,kj->ik", t.constant(TALL), t.constant(TALL)),
    "matrix_band_part": lambda t: t.matrix_band_part(t.constant(A), 0, 1),
    "matrix_solve": lambda t: t.matrix_solve(t.constant(A), t.constant(B)),
    "matrix_solve_ls": lambda t: t.matrix_solve_ls(t.constant(TALL), t.constant(TALL[:, :1])),
    "matrix_triangular_solve": lambda t: t.matrix_triangular_solve(t.constant(SPD), t.constant(B)),
    "norm": lambda t: t.norm(t.constant(A), axis=1),
    "qr": lambda t: t.abs(t.qr(t.constant(TALL))[1]),
    "self_adjoint_eigvals": lambda t: t.self_adjoint_eigvals(t.constant(SPD)),
    "self_adjoint_eig": lambda t: t.self_adjoint_eig(t.constant(SPD))[0],
    "svd": lambda t: t.svd(t.constant(A), compute_uv=False),
    "tensordot": lambda t: t.tensordot(t.constant(A), t.constant(B[0]), 1),
}
# Gradients against TF's (composites included: their gradients come from their parts).
GRADIENTS = {
    "cholesky": (
        lambda t, x: t.linalg.cholesky(t.matmul(x, x, transpose_b=True) + 3 * t.eye(3, dtype=t.float64))
    ),
    "logdet": (lambda t, x: t.linalg.logdet(t.matmul(x, x, transpose_b=True) + t.eye(3, dtype=t.float64))),
    "slogdet": (lambda t, x: t.linalg.slogdet(x)[1]),
    "solve": (lambda t, x: t.linalg.solve(x, t.constant(B[0]))),
    "triangular_solve": (
        lambda t, x: t.linalg.triangular_solve(x + 3 * t.eye(3, dtype=t.float64), x, lower=False)
    ),
    "norm": (lambda t, x: t.linalg.norm(x, axis=0)),
    "norm_matrix_1": (lambda t, x: t.linalg.norm(x, ord=1, axis=[0, 1])),
    "lstsq": (lambda t, x: t.linalg.lstsq(x, t.constant(B[0]), l2_regularizer=0.01)),
    "einsum": (lambda t, x: t.linalg.einsum("ij,jk,k->i", x, x, x[0])),
    "tensordot": (lambda t, x: t.linalg.tensordot(x, x, [[1], [0]])),
    "matvec": (lambda t, x: t.linalg.matvec(x, x[1], transpose_a=True)),
    "cross": (lambda t, x: t.linalg.cross(x, x[::-1])),
    "band_part": (lambda t, x: t.linalg.band_part(x, 0, 1)),
}


def _value(lib, build):
    with lib.Graph().as_default(), lib.Session() as sess:
        return sess.run(build(lib))


def _assert_same(ours, theirs, name):
    if isinstance(theirs, (tuple, list)) or hasattr(theirs, "_fields"):
        for a, b in zip(ours, theirs, strict=True):
            _assert_same(a, b, name)
        return
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.shape == theirs.shape, name
    np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-9, err_msg=name)


@pytest.mark.parametrize("name", sorted(LINALG))
def test_tf_linalg_extras_match_tensorflow(tf1, name):
    _assert_same(_value(tf, LINALG[name]), _value(tf1, LINALG[name]), name)


@pytest.mark.parametrize("name", sorted(TOP_LEVEL))
def test_top_level_twins_match_tensorflow(tf1, name):
    _assert_same(_value(tf, TOP_LEVEL[name]), _value(tf1, TOP_LEVEL[name]), name)


def _gradient(lib, build, value):
    with lib.Graph().as_default():
        x = lib.placeholder(lib.float64, value.shape)
        y = build(lib, x)
        weights = lib.constant(
            np.linspace(0.5, 1.5, int(np.prod(y.shape.as_list()))).reshape(y.shape.as_list())
        )
        (g,) = lib.gradients(lib.reduce_sum(y * weights), [x])
        with lib.Session() as sess:
            return sess.run([y, g], {x: value})


@pytest.mark.parametrize("name", sorted(GRADIENTS))
def test_linalg_gradients_match_tensorflow(tf1, name):
    value = _RNG.standard_normal((3, 3)) + 2 * np.eye(3)
    (y, g), (ty, tg) = _gradient(tf, GRADIENTS[name], value), _gradient(tf1, GRADIENTS[name], value)
    np.testing.assert_allclose(y, ty, rtol=1e-9, atol=1e-10, err_msg=name)
    np.testing.assert_allclose(g, tg, rtol=1e-7, atol=1e-9, err_msg=name)


def test_linalg_errors_name_what_was_wrong():
    with tf.Graph().as_default(), tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Cholesky decomposition was not successful"):
            sess.run(tf.linalg.cholesky(tf.constant(-np.eye(2))))
        with pytest.raises(ValueError, match=r"the last dimension of .* must be 3"):
            tf.linalg.cross(tf.constant(np.ones((2, 2))), tf.constant(np.ones((2, 2))))
        with pytest.raises(ValueError, match="'ord' must be a supported matrix norm"):
            tf.linalg.norm(tf.constant(A), ord=3, axis=[1, 2])


def test_tf_random_extras_draw_the_asked_shapes_ranges_and_frequencies(tf1):
    probs = np.array([0.1, 0.2, 0.7])
    for lib in (tf, tf1):
        with lib.Graph().as_default(), lib.Session() as sess:
            lib.set_random_seed(5)
            logits = lib.constant(np.log(np.stack([probs, probs[::-1]])))
            drawn = sess.run(
                {
                    "categorical": lib.random.categorical(logits, 3000),
                    "multinomial": lib.multinomial(logits, 10, output_dtype=lib.int32),
                    "gamma": lib.random.gamma([4000], [2.0, 5.0], beta=[1.0, 2.0]),
                    "random_gamma": lib.random_gamma([3], 1.5, dtype=lib.float64),
                    "poisson": lib.random.poisson([3.0, 0.5], [4000]),
                    "random_poisson": lib.random_poisson(2.0, [3, 2], dtype=lib.int32),
                }
            )
            cat = drawn["categorical"]
            assert cat.shape == (2, 3000) and cat.dtype == np.int64 and set(np.unique(cat)) <= {0, 1, 2}
            np.testing.assert_allclose(np.bincount(cat[0], minlength=3) / 3000, probs, atol=0.04)
            np.testing.assert_allclose(np.bincount(cat[1], minlength=3) / 3000, probs[::-1], atol=0.04)
            assert drawn["multinomial"].shape == (2, 10) and drawn["multinomial"].dtype == np.int32
            assert drawn["gamma"].shape == (4000, 2) and (drawn["gamma"] > 0).all()
            np.testing.assert_allclose(drawn["gamma"].mean(0), [2.0, 2.5], rtol=0.08)
            assert drawn["random_gamma"].shape == (3,) and drawn["random_gamma"].dtype == np.float64
            assert drawn["poisson"].shape == (4000, 2) and drawn["poisson"].dtype == np.float32
            np.testing.assert_allclose(drawn["poisson"].mean(0), [3.0, 0.5], rtol=0.08)
            assert drawn["random_poisson"].shape == (3, 2) and drawn["random_poisson"].dtype == np.int32


def test_stateless_draws_are_a_function_of_the_seed(tf1):
    for lib in (tf, tf1):
        with lib.Graph().as_default(), lib.Session() as sess:
            same = [lib.random.stateless_uniform([400], seed=[1, 2]) for _ in range(2)]
            other = lib.random.stateless_uniform([400], seed=[1, 3])
            normal = lib.random.stateless_normal([2000], seed=[7, 8], mean=1.0, stddev=2.0, dtype=lib.float64)
            trunc = lib.random.stateless_truncated_normal([2000], seed=[7, 8], stddev=0.5)
            ints = lib.random.stateless_uniform([300], seed=[4, 4], minval=-3, maxval=3, dtype=lib.int32)
            (a, b, c, n, tn, i), (a2, *_) = sess.run([*same, other, normal, trunc, ints]), sess.run(same)
            np.testing.assert_array_equal(a, b)
            np.testing.assert_array_equal(a, a2)
            assert not np.array_equal(a, c) and a.min() >= 0 and a.max() < 1
            assert n.dtype == np.float64 and abs(n.mean() - 1.0) < 0.15 and abs(n.std() - 2.0) < 0.15
            assert np.abs(tn).max() <= 1.0 and tn.shape == (2000,)
            assert i.dtype == np.int32 and set(np.unique(i)) == set(range(-3, 3))


SAMPLERS = {
    "uniform_candidate_sampler": (lambda t, c, u: t.random.uniform_candidate_sampler(c, 2, 8, u, 20, seed=3)),
    "log_uniform_candidate_sampler": (
        lambda t, c, u: t.random.log_uniform_candidate_sampler(c, 2, 8, u, 20, seed=3)
    ),
    "fixed_unigram_candidate_sampler": (
        lambda t, c, u: t.random.fixed_unigram_candidate_sampler(
            c, 2, 8, u, 20, distortion=0.75, num_reserved_ids=2, unigrams=list(range(1, 19)), seed=3
        )
    ),
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_candidate_samplers_follow_tensorflows_expected_counts(tf1, name):
    true_classes = np.array([[0, 5], [19, 3], [2, 2]], np.int64)
    results = {}
    for lib in (tf, tf1):
        with lib.Graph().as_default(), lib.Session() as sess:
            results[lib] = sess.run(
                [SAMPLERS[name](lib, lib.constant(true_classes), unique) for unique in (False, True)]
            )
    (ours, ours_unique), (theirs, theirs_unique) = results[tf], results[tf1]
    _assert_same(ours[1], theirs[1], name)  # num_sampled * P(k): no randomness in it
    assert ours[0].shape == (8,) and ours[0].min() >= 0 and ours[0].max() < 20
    sampled, true_count, sampled_count = ours_unique
    assert len(set(sampled.tolist())) == 8 and true_count.shape == (3, 2) and sampled_count.shape == (8,)
    for counts in (ours_unique, theirs_unique):  # 1 - (1 - P(k)) ** tries, one `tries` for all
        p = np.asarray(ours[1], np.float64) / 8
        drawable = p > 0
        tries = np.log1p(-counts[1][drawable].astype(np.float64)) / np.log1p(-p[drawable])
        np.testing.assert_allclose(tries, np.round(tries.mean()), rtol=1e-3)
    if name == "fixed_unigram_candidate_sampler":
        assert sampled.min() >= 2  # the reserved ids are never drawn


def test_tf_initializers_extras_draw_tensorflows_distributions(tf1):
    for lib in (tf, tf1):
        inits = lib.initializers
        with lib.Graph().as_default(), lib.Session() as sess:
            made = {
                "he_normal": lib.get_variable("a", [200, 50], initializer=inits.he_normal(seed=1)),
                "he_uniform": lib.get_variable("b", [200, 50], initializer=inits.he_uniform(seed=1)),
                "lecun_normal": lib.get_variable("c", [200, 50], initializer=inits.lecun_normal(seed=1)),
                "lecun_uniform": lib.get_variable("d", [200, 50], initializer=inits.lecun_uniform(seed=1)),
                "orthogonal": lib.get_variable("e", [20, 8], initializer=inits.orthogonal(gain=2.0, seed=1)),
                "orthogonal_wide": lib.get_variable(
                    "f", [2, 3, 10], initializer=lib.orthogonal_initializer(seed=2)
                ),
                "identity": lib.get_variable("g", [3, 4], initializer=inits.identity(gain=0.5)),
                "uniform_unit_scaling": lib.get_variable(
                    "h", [30, 40], initializer=inits.uniform_unit_scaling(factor=2.0, seed=1)
                ),
                "unit_scaling_top": lib.get_variable(
                    "i", [3], initializer=lib.uniform_unit_scaling_initializer(seed=1)
                ),
            }
            sess.run(
                [lib.global_variables_initializer(), inits.tables_initializer(), lib.tables_initializer()]
            )
            values = sess.run(made)
            assert abs(values["he_normal"].std() - np.sqrt(2 / 200)) < 0.01
            assert abs(values["lecun_normal"].std() - np.sqrt(1 / 200)) < 0.01
            assert (
                np.abs(values["he_uniform"]).max()
                <= np.sqrt(6 / 200)
                < 1.05 * np.abs(values["he_uniform"]).max()
            )
            assert np.abs(values["lecun_uniform"]).max() <= np.sqrt(3 / 200)
            np.testing.assert_allclose(
                values["orthogonal"].T @ values["orthogonal"], 4 * np.eye(8), atol=1e-5
            )
            wide = values["orthogonal_wide"].reshape(6, 10)
            np.testing.assert_allclose(wide @ wide.T, np.eye(6), atol=1e-5)
            np.testing.assert_array_equal(values["identity"], 0.5 * np.eye(3, 4))
            assert np.abs(values["uniform_unit_scaling"]).max() <= 2 * np.sqrt(3 / 30)
            assert np.abs(values["unit_scaling_top"]).max() <= np.sqrt(3)
