"""`tf.linalg`'s matrix functions (expm, logm, sqrtm / `tf.matrix_square_root`), LU helpers
(lu_solve, lu_matrix_inverse, lu_reconstruct over `tf.linalg.lu`) and tridiagonal ops
(tridiagonal_solve, tridiagonal_matmul, eigh_tridiagonal) against tf.compat.v1, the same
program run under both libraries."""

import numpy as np
import pytest

import nbdist as tf

_RNG = np.random.default_rng(3232)
A = _RNG.standard_normal((2, 3, 3)) * 0.5
SPD = A @ np.swapaxes(A, -1, -2) + np.eye(3)
RHS = _RNG.standard_normal((2, 3, 2))
DIAGS = _RNG.standard_normal((2, 3, 4)) + np.array([0.0, 3.0, 0.0])[:, None]
TRI_RHS = _RNG.standard_normal((2, 4, 2))
NONSYMMETRIC = _RNG.standard_normal((2, 4, 4)) + 2 * np.eye(4)  # complex eigenvalue pairs too
ALPHA = np.array([1.0, 2.0, 3.0, 4.0])
BETA = np.array([0.5, -0.25, 0.75])


def _value(lib, build):
    with lib.Graph().as_default(), lib.Session() as sess:
        return sess.run(build(lib))


CASES = {
    "expm": lambda t: t.linalg.expm(t.constant(A)),
    "expm_unbatched_float32": lambda t: t.linalg.expm(t.constant(A[0], t.float32)),
    "expm_complex": lambda t: t.linalg.expm(t.constant(A[0] + 0.5j * A[1])),
    "logm": lambda t: t.linalg.logm(t.constant(SPD.astype(np.complex128))),
    "sqrtm": lambda t: t.linalg.sqrtm(t.constant(SPD)),
    "sqrtm_nonsymmetric": lambda t: t.linalg.sqrtm(t.constant(NONSYMMETRIC)),
    "sqrtm_complex": lambda t: t.linalg.sqrtm(t.constant(NONSYMMETRIC + 1j * NONSYMMETRIC[::-1])),
    "matrix_square_root": lambda t: t.matrix_square_root(t.constant(SPD[0], t.float32)),
    "lu_solve": lambda t: t.linalg.lu_solve(*t.linalg.lu(t.constant(A)), t.constant(RHS)),
    "lu_solve_broadcast": lambda t: t.linalg.lu_solve(*t.linalg.lu(t.constant(A)), t.constant(RHS[0])),
    "lu_matrix_inverse": lambda t: t.linalg.lu_matrix_inverse(*t.linalg.lu(t.constant(A))),
    "lu_reconstruct": lambda t: t.linalg.lu_reconstruct(*t.linalg.lu(t.constant(A))),
    "lu_reconstruct_unbatched": lambda t: t.linalg.lu_reconstruct(*t.linalg.lu(t.constant(A[1]))),
    "tridiagonal_solve": lambda t: t.linalg.tridiagonal_solve(t.constant(DIAGS), t.constant(TRI_RHS)),
    "tridiagonal_solve_vector": lambda t: t.linalg.tridiagonal_solve(
        t.constant(DIAGS), t.constant(TRI_RHS[..., 0]), partial_pivoting=False
    ),
    "tridiagonal_solve_matrix": lambda t: t.linalg.tridiagonal_solve(
        t.constant(SPD), t.constant(RHS), diagonals_format="matrix"
    ),
    "tridiagonal_solve_sequence": lambda t: t.linalg.tridiagonal_solve(
        [t.constant([1.0, 2.0]), t.constant([4.0, 5.0, 6.0]), t.constant([1.0, -1.0])],
        t.constant([[1.0, 2.0, 3.0], [0.0, 1.0, 0.0]]),
        diagonals_format="sequence",
        transpose_rhs=True,
    ),
    "tridiagonal_matmul": lambda t: t.linalg.tridiagonal_matmul(t.constant(DIAGS), t.constant(TRI_RHS)),
    "tridiagonal_matmul_matrix": lambda t: t.linalg.tridiagonal_matmul(
        t.constant(SPD), t.constant(RHS), diagonals_format="matrix"
    ),
    "tridiagonal_matmul_sequence": lambda t: t.linalg.tridiagonal_matmul(
        [t.constant(d) for d in DIAGS[0]], t.constant(TRI_RHS[0]), diagonals_format="sequence"
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_tensorflow(tf1, name):
    ours, theirs = _value(tf, CASES[name]), _value(tf1, CASES[name])
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, name
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5 if ours.dtype == np.float32 else 1e-10)


def _eigh_tridiagonal_selections(t):
    alpha, beta = t.constant(ALPHA), t.constant(BETA)
    return (
        t.linalg.eigh_tridiagonal(alpha, beta, eigvals_only=False),
        t.linalg.eigh_tridiagonal(alpha, beta, eigvals_only=False, select="i", select_range=[1, 2]),
    )


def test_eigh_tridiagonal_selections_match_tensorflow_vectors_up_to_sign(tf1):
    ours, theirs = (_value(lib, _eigh_tridiagonal_selections) for lib in (tf, tf1))
    for (e1, v1), (e2, v2) in zip(ours, theirs, strict=True):
        assert e1.shape == e2.shape and e1.dtype == e2.dtype and v1.shape == v2.shape
        np.testing.assert_allclose(e1, e2, atol=1e-10)
        np.testing.assert_allclose(np.abs(v1), np.abs(v2), atol=1e-6)


def test_eigh_tridiagonal_by_value_range_takes_the_eigenvalues_in_the_interval():
    dense = np.diag(ALPHA) + np.diag(BETA, 1) + np.diag(BETA, -1)
    everything = np.linalg.eigvalsh(dense)
    low, high = everything[:2].mean(), everything[2:].mean()  # around the 2nd and 3rd eigenvalues
    got = _value(
        tf,
        lambda t: t.linalg.eigh_tridiagonal(
            t.constant(ALPHA), t.constant(BETA), select="v", select_range=[low, high]
        ),
    )
    np.testing.assert_allclose(got, everything[1:3], atol=1e-12)


def test_eigh_tridiagonal_of_a_hermitian_matrix():
    beta = np.array([0.5 + 0.5j, 1j])
    alpha = np.array([1.0, 2.0, 3.0], np.complex128)
    e, v = _value(
        tf, lambda t: t.linalg.eigh_tridiagonal(t.constant(alpha), t.constant(beta), eigvals_only=False)
    )
    dense = np.diag(alpha) + np.diag(beta, 1) + np.diag(beta.conj(), -1)
    np.testing.assert_allclose(dense @ v, v * e, atol=1e-12)
    assert e.dtype == np.float64 and v.dtype == np.complex128


def test_static_shapes_match_tensorflow(tf1):
    shapes = {}
    for lib in (tf, tf1):
        with lib.Graph().as_default():
            t = lib
            shapes[lib] = [
                t.linalg.expm(t.constant(A)).shape.as_list(),
                t.linalg.lu_solve(*t.linalg.lu(t.constant(A)), t.constant(RHS)).shape.as_list(),
                t.linalg.tridiagonal_solve(t.constant(DIAGS), t.constant(TRI_RHS[..., 0])).shape.as_list(),
                t.linalg.eigh_tridiagonal(t.constant(ALPHA), t.constant(BETA)).shape.as_list(),
            ]
    assert shapes[tf] == shapes[tf1]


def test_logm_refuses_real_input_as_tensorflow(tf1):
    for lib in (tf, tf1):
        with lib.Graph().as_default(), pytest.raises(TypeError, match=r"float64.*complex64, complex128"):
            lib.linalg.logm(lib.constant(SPD))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"diagonals_format": "banded"}, "Unrecognized diagonals_format: banded"),
        ({"perturb_singular": True, "partial_pivoting": False}, "partial_pivoting must be True"),
    ],
)
def test_tridiagonal_solve_argument_errors_match_tensorflow(tf1, kwargs, match):
    for lib in (tf, tf1):
        with lib.Graph().as_default(), pytest.raises(ValueError, match=match):
            lib.linalg.tridiagonal_solve(lib.constant(DIAGS), lib.constant(TRI_RHS), **kwargs)


def test_tridiagonal_solve_checks_three_diagonals_as_tensorflow(tf1):
    for lib in (tf, tf1):
        with lib.Graph().as_default(), pytest.raises(ValueError, match="Expected 3 diagonals got 2"):
            lib.linalg.tridiagonal_solve(lib.constant(DIAGS[:, :2]), lib.constant(TRI_RHS))


def test_sequence_with_wrong_lengths_is_refused_as_tensorflow(tf1):
    for lib in (tf, tf1):
        with (
            lib.Graph().as_default(),
            pytest.raises(ValueError, match="superdiagonal to be have length 3 or 2"),
        ):
            diags = [lib.constant([1.0]), lib.constant([4.0, 5.0, 6.0]), lib.constant([1.0, -1.0])]
            lib.linalg.tridiagonal_solve(diags, lib.constant([1.0, 2.0, 3.0]), diagonals_format="sequence")


def _gradients(t):
    a, rhs = t.constant(A), t.constant(RHS)
    spd, diags, tri_rhs = t.constant(SPD), t.constant(DIAGS), t.constant(TRI_RHS)
    lower_upper, perm = (t.stop_gradient(v) for v in t.linalg.lu(a))  # (Lu has no gradient, in TF either)
    weights = t.constant(np.arange(1.0, 19.0).reshape(2, 3, 3))
    losses = [
        t.reduce_sum(t.linalg.expm(a) * weights),
        t.reduce_sum(t.linalg.sqrtm(spd) * weights),
        t.reduce_sum(t.linalg.lu_solve(lower_upper, perm, rhs) * rhs),
        t.reduce_sum(t.linalg.lu_reconstruct(lower_upper, perm) * weights),
        t.reduce_sum(t.linalg.tridiagonal_solve(diags, tri_rhs) * tri_rhs),
        t.reduce_sum(t.linalg.tridiagonal_matmul(diags, tri_rhs) * tri_rhs),
    ]
    grads = [
        t.gradients(losses[0], a),
        t.gradients(losses[1], spd),
        t.gradients(losses[2], [lower_upper, rhs]),
    ]
    grads += [t.gradients(losses[3], lower_upper), t.gradients(losses[4], [diags, tri_rhs])]
    return [*grads, t.gradients(losses[5], [diags, tri_rhs])]


def test_gradients_match_tensorflow(tf1):
    for ours, theirs in zip(_value(tf, _gradients), _value(tf1, _gradients), strict=True):
        for a, b in zip(ours, theirs, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-8)


def test_empty_batches_match_tensorflow(tf1):
    def build(t):
        empty = t.constant(np.zeros((0, 2, 2)))
        return (
            t.linalg.expm(empty),
            t.linalg.sqrtm(empty),
            t.linalg.tridiagonal_matmul(t.constant(np.zeros((0, 3, 2))), t.constant(np.zeros((0, 2, 1)))),
        )

    for a, b in zip(_value(tf, build), _value(tf1, build), strict=True):
        assert a.shape == b.shape and a.dtype == b.dtype


def _singular_and_inverse_iteration_systems():
    rng = np.random.default_rng(7)
    alpha, beta = rng.standard_normal(5), rng.standard_normal(4)
    dense = np.diag(alpha) + np.diag(beta, 1) + np.diag(beta, -1)
    shifted = [
        np.stack([np.append(beta, 0), alpha - lam, np.insert(beta, 0, 0)])
        for lam in np.linalg.eigvalsh(dense)
    ]
    needs_pivoting = np.array([[1.0, 0, 0, 0, 0], [0, 1, 1, 1, 1], [0, 1, 1, 1, 1]])  # 0 pivot, not singular
    singular = np.array([[1.0, 0, 0, 0, 0], [1, 1, 1, 1, 1], [0, 1, 0, 0, 0]])
    return np.array([*shifted, needs_pivoting, singular, np.zeros((3, 5))]), rng.standard_normal((8, 5, 2))


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"partial_pivoting": False}, {"perturb_singular": True}],
    ids=["pivoting", "thomas", "perturb"],
)
def test_tridiagonal_solve_of_singular_systems_matches_tensorflow(tf1, kwargs):
    diags, rhs = _singular_and_inverse_iteration_systems()

    def build(t):
        return t.linalg.tridiagonal_solve(t.constant(diags), t.constant(rhs), **kwargs)

    ours, theirs = _value(tf, build), _value(tf1, build)
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
    finite = np.isfinite(theirs)
    np.testing.assert_allclose(
        ours[finite], theirs[finite], rtol=1e-9 if "perturb_singular" not in kwargs else 0
    )


def test_dtype_errors_match_tensorflow(tf1):
    for lib in (tf, tf1):
        with lib.Graph().as_default():
            with pytest.raises(
                TypeError, match="Input 'rhs' of 'TridiagonalSolve' Op has type float32 that does not"
            ):
                lib.linalg.tridiagonal_solve(lib.constant(DIAGS), lib.constant(TRI_RHS, lib.float32))
            with pytest.raises(
                ValueError, match=r"tf.linalg.expm does not support matrices of type <dtype: 'int32'>"
            ):
                lib.linalg.expm(lib.constant([[1, 2], [3, 4]]))


def test_sqrtm_and_logm_without_a_principal_root_or_logarithm_are_nan_as_tensorflow(tf1):
    def build(t):
        negative, zero = t.constant(np.diag([-1.0, 4.0])), t.constant(np.zeros((2, 2)))
        return (
            t.linalg.sqrtm(negative),
            t.matrix_square_root(zero),
            t.linalg.sqrtm(t.constant(np.zeros((2, 0, 0)))),
        )

    for a, b in zip(_value(tf, build), _value(tf1, build), strict=True):
        assert a.shape == b.shape
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))


def test_eigh_tridiagonal_of_one_element_matches_tensorflow(tf1):
    def build(t):
        alpha, beta = t.constant([3.0]), t.constant(np.zeros(0, np.float32))
        return t.linalg.eigh_tridiagonal(alpha, beta), t.linalg.eigh_tridiagonal(
            alpha, beta, eigvals_only=False
        )

    for a, b in zip(_value(tf, build), _value(tf1, build), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    ("select", "select_range", "match"),
    [
        ("v", [2.0, 1.0], "Got empty interval in select_range"),
        ("i", [2, 1], "Got empty index range in select_range"),
    ],
)
def test_eigh_tridiagonal_empty_ranges_fail_as_tensorflow(tf1, select, select_range, match):
    for lib in (tf, tf1):
        with lib.Graph().as_default(), pytest.raises(lib.errors.InvalidArgumentError, match=match):
            # (a constant range fails as the graph is built; a fed one when run)
            lib.linalg.eigh_tridiagonal(
                lib.constant(ALPHA), lib.constant(BETA), select=select, select_range=select_range
            )
        if select == "v":
            continue  # (the run-time check is the same assert; TF builds this graph slowly)
        with lib.Graph().as_default(), lib.Session() as sess:
            fed = lib.placeholder(lib.int32 if select == "i" else lib.float64, [2])
            values = lib.linalg.eigh_tridiagonal(
                lib.constant(ALPHA), lib.constant(BETA), select=select, select_range=fed
            )
            with pytest.raises(lib.errors.InvalidArgumentError, match=match):
                sess.run(values, {fed: select_range})


def test_eigh_tridiagonal_argument_errors_match_tensorflow(tf1):
    for lib in (tf, tf1):
        with lib.Graph().as_default():
            with pytest.raises(ValueError, match="'alpha' and 'beta' must have the same type"):
                lib.linalg.eigh_tridiagonal(lib.constant(ALPHA), lib.constant(BETA, lib.float32))
            with pytest.raises(ValueError, match="'select must have a value in"):
                lib.linalg.eigh_tridiagonal(lib.constant(ALPHA), lib.constant(BETA), select="x")
