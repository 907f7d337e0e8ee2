"""`tf.linalg.LinearOperator*`: each operator's methods (to_dense, matmul, matvec, solve,
solvevec, determinant, log_abs_determinant, diag_part, trace, add_to_tensor, shapes) equal
tf.compat.v1's on batched and unbatched operators, the same program run under both libraries."""

import numpy as np
import pytest

import nbdist as tf

_RNG = np.random.default_rng(3233)
M = _RNG.standard_normal((2, 3, 3)) + 3 * np.eye(3)
SPD = M @ np.swapaxes(M, -1, -2)
D = _RNG.uniform(0.5, 2.0, (2, 3))
X = _RNG.standard_normal((2, 3, 2))
V = _RNG.standard_normal((2, 3))
U = _RNG.standard_normal((2, 3, 1))


def _value(lib, build):
    with lib.Graph().as_default(), lib.Session() as sess:
        return sess.run(build(lib))


def _methods(op, t, square=True):
    out = {
        "dense": op.to_dense(),
        "matmul": op.matmul(t.constant(X)),
        "matmul_adjoint": op.matmul(t.constant(X), adjoint=True),
        "matmul_adjoint_arg": op.matmul(t.constant(np.swapaxes(X, -1, -2)), adjoint_arg=True),
        "matvec": op.matvec(t.constant(V)),
        "diag_part": op.diag_part(),
        "trace": op.trace(),
        "add_to_tensor": op.add_to_tensor(t.constant(M)),
        "shape": op.shape_tensor(),
    }
    if square:
        out.update(
            solve=op.solve(t.constant(X)),
            solve_adjoint=op.solve(t.constant(X), adjoint=True),
            solvevec=op.solvevec(t.constant(V)),
            det=op.determinant(),
            logdet=op.log_abs_determinant(),
        )
    return out


OPERATORS = {
    "full_matrix": lambda t: t.linalg.LinearOperatorFullMatrix(t.constant(M)),
    "full_matrix_unbatched": lambda t: t.linalg.LinearOperatorFullMatrix(t.constant(M[0])),
    "diag": lambda t: t.linalg.LinearOperatorDiag(t.constant(D)),
    "identity": lambda t: t.linalg.LinearOperatorIdentity(3, dtype=t.float64),
    "identity_batched": lambda t: t.linalg.LinearOperatorIdentity(3, batch_shape=[2], dtype=t.float64),
    "scaled_identity": lambda t: t.linalg.LinearOperatorScaledIdentity(3, t.constant([2.0, -0.5], t.float64)),
    "lower_triangular": lambda t: t.linalg.LinearOperatorLowerTriangular(t.constant(M)),
    "composition": lambda t: t.linalg.LinearOperatorComposition(
        [t.linalg.LinearOperatorFullMatrix(t.constant(M)), t.linalg.LinearOperatorDiag(t.constant(D[0]))]
    ),
    "adjoint": lambda t: t.linalg.LinearOperatorAdjoint(t.linalg.LinearOperatorFullMatrix(t.constant(M))),
    "inversion": lambda t: t.linalg.LinearOperatorInversion(t.linalg.LinearOperatorFullMatrix(t.constant(M))),
    "block_diag": lambda t: t.linalg.LinearOperatorBlockDiag(
        [
            t.linalg.LinearOperatorFullMatrix(t.constant(M[:, :2, :2])),
            t.linalg.LinearOperatorDiag(t.constant(D[0, :1])),
        ]
    ),
    "kronecker": lambda t: t.linalg.LinearOperatorKronecker(
        [
            t.linalg.LinearOperatorFullMatrix(t.constant(M[0, :1, :1] + 1.0)),
            t.linalg.LinearOperatorFullMatrix(t.constant(M)),
        ]
    ),
    "low_rank_update": lambda t: t.linalg.LinearOperatorLowRankUpdate(
        t.linalg.LinearOperatorDiag(t.constant(D)),
        t.constant(U),
        diag_update=t.constant([[2.0], [0.5]], t.float64),
    ),
}


@pytest.mark.parametrize("name", sorted(OPERATORS))
def test_operator_methods_match_tensorflow(tf1, name):
    ours = _value(tf, lambda t: _methods(OPERATORS[name](t), t))
    theirs = _value(tf1, lambda t: _methods(OPERATORS[name](t), t))
    for key, value in theirs.items():
        assert np.shape(ours[key]) == np.shape(value), key
        np.testing.assert_allclose(ours[key], value, rtol=1e-8, atol=1e-10, err_msg=key)


def test_zeros_operator_matches_tensorflow(tf1):
    def build(t):
        op = t.linalg.LinearOperatorZeros(3, batch_shape=[2], dtype=t.float64)
        return op.to_dense(), op.matmul(t.constant(X)), op.determinant(), op.diag_part(), op.shape_tensor()

    for a, b in zip(_value(tf, build), _value(tf1, build), strict=True):
        np.testing.assert_array_equal(a, b)


def test_static_shapes_and_hints_match_tensorflow(tf1):
    def facts(t):
        with t.Graph().as_default():
            ops = [OPERATORS[k](t) for k in sorted(OPERATORS)]
            return [
                (
                    op.shape.as_list(),
                    op.batch_shape.as_list(),
                    op.domain_dimension,
                    op.range_dimension,
                    op.is_square,
                )
                for op in ops
            ]

    ours, theirs = facts(tf), facts(tf1)
    assert [(*o[:4], o[4]) for o in ours] == [(*_ints(th[:4]), th[4]) for th in theirs]


def _ints(values):
    shape, batch, dom, rng = values
    return shape, batch, int(dom), int(rng)


def test_products_inverse_adjoint_and_cholesky_match_tensorflow(tf1):
    def build(t):
        a = t.linalg.LinearOperatorFullMatrix(
            t.constant(SPD), is_self_adjoint=True, is_positive_definite=True
        )
        d = t.linalg.LinearOperatorDiag(t.constant(D), is_positive_definite=True)
        return (
            a.matmul(d).to_dense(),
            a.inverse().to_dense(),
            t.linalg.LinearOperatorFullMatrix(t.constant(M)).adjoint().to_dense(),
            a.cholesky().to_dense(),
            d.cholesky().to_dense(),
            a.eigvals(),
            d.eigvals(),
        )

    for a, b in zip(_value(tf, build), _value(tf1, build), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-10)


def test_assertions_pass_and_fail_as_tensorflow(tf1):
    for lib in (tf, tf1):
        with lib.Graph().as_default(), lib.Session() as sess:
            a = lib.linalg.LinearOperatorFullMatrix(lib.constant(SPD))
            sess.run([a.assert_non_singular(), a.assert_self_adjoint()])
            with pytest.raises(lib.errors.InvalidArgumentError, match="not equal to its adjoint"):
                sess.run(lib.linalg.LinearOperatorFullMatrix(lib.constant(M)).assert_self_adjoint())


def test_hints_that_rule_a_method_out_raise_as_tensorflow(tf1):
    for lib in (tf, tf1):
        with lib.Graph().as_default():
            singular = lib.linalg.LinearOperatorFullMatrix(lib.constant(M), is_non_singular=False)
            with pytest.raises(ValueError, match="singular matrix"):
                singular.inverse()
            with pytest.raises(ValueError, match="always self adjoint"):
                lib.linalg.LinearOperatorDiag(lib.constant(D), is_self_adjoint=False)
            with pytest.raises(
                ValueError, match=r"is_square=True, but got num_rows\(3\) != num_columns\(2\)"
            ):
                lib.linalg.LinearOperatorZeros(3, 2)
            with pytest.raises(NotImplementedError, match="self-adjoint"):
                lib.linalg.LinearOperatorFullMatrix(lib.constant(M)).eigvals()
