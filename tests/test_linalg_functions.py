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
        t.linalg.eigh_tridiagonal(alpha, beta, select="v", select_range=[1.5, 10.0]),
        t.linalg.eigh_tridiagonal(alpha, beta, eigvals_only=False, select="i", select_range=[1, 2]),
    )


def test_eigh_tridiagonal_selections_match_tensorflow_vectors_up_to_sign(tf1):
    ((e1, v1), ev1, (ei1, vi1)), ((e2, v2), ev2, (ei2, vi2)) = (
        _value(lib, _eigh_tridiagonal_selections) for lib in (tf, tf1)
    )
    for ours, theirs in ((e1, e2), (ev1, ev2), (ei1, ei2)):
        assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
        np.testing.assert_allclose(ours, theirs, atol=1e-10)
    for ours, theirs in ((v1, v2), (vi1, vi2)):
        assert ours.shape == theirs.shape
        np.testing.assert_allclose(np.abs(ours), np.abs(theirs), atol=1e-6)


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
