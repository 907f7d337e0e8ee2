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


def _facts(op):
    hints = (op.is_square, op.is_self_adjoint, op.is_non_singular, op.is_positive_definite)
    return (op.shape.as_list(), op.batch_shape.as_list(), op.domain_dimension, op.range_dimension, *hints)


@pytest.mark.parametrize("table", ["OPERATORS", "STRUCTURED"])
def test_static_shapes_names_and_hints_match_tensorflow(tf1, table):
    def facts(t):
        with t.Graph().as_default():
            ops = [globals()[table][k](t) for k in sorted(globals()[table])]
            return [(*_facts(op), op.name, op.dtype.name) for op in ops]

    assert facts(tf) == facts(tf1)


def test_shape_tensors_match_tensorflow(tf1):
    def build(t):
        op = t.linalg.LinearOperatorFullMatrix(t.constant(M[..., :2]))
        return (
            op.shape_tensor(),
            op.batch_shape_tensor(),
            op.domain_dimension_tensor(),
            op.range_dimension_tensor(),
            op.tensor_rank_tensor(),
        )

    for a, b in zip(_value(tf, build), _value(tf1, build), strict=True):
        np.testing.assert_array_equal(a, b)


def test_operator_algebra_matches_tensorflow(tf1):
    def build(t):
        a = t.linalg.LinearOperatorFullMatrix(t.constant(M))
        d = t.linalg.LinearOperatorDiag(t.constant(D))
        return (
            (a @ d).to_dense(),
            a.matmul(d, adjoint=True, adjoint_arg=True).to_dense(),
            a.solve(d).to_dense(),
            a.H.to_dense(),
            a.inverse().solve(t.constant(X)),
            a.adjoint().solvevec(t.constant(V)),
            a.matvec(t.constant(V), adjoint=True),
        )

    for a, b in zip(_value(tf, build), _value(tf1, build), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-10)


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


TRIDIAG = _RNG.standard_normal((2, 3, 3)) + np.array([0.0, 4.0, 0.0])[:, None]
SPECTRUM = _RNG.uniform(1.0, 2.0, (2, 3))  # real, positive: a real symmetric circulant
STRUCTURED = {
    "permutation": lambda t: t.linalg.LinearOperatorPermutation(
        t.constant([[2, 0, 1], [1, 2, 0]]), dtype=t.float64
    ),
    "householder": lambda t: t.linalg.LinearOperatorHouseholder(t.constant(V)),
    "toeplitz": lambda t: t.linalg.LinearOperatorToeplitz(t.constant(V), t.constant(D)),
    "tridiag_compact": lambda t: t.linalg.LinearOperatorTridiag(t.constant(TRIDIAG)),
    "tridiag_matrix": lambda t: t.linalg.LinearOperatorTridiag(t.constant(M), diagonals_format="matrix"),
    "tridiag_sequence": lambda t: t.linalg.LinearOperatorTridiag(
        [t.constant(TRIDIAG[:, i]) for i in range(3)], diagonals_format="sequence"
    ),
    "block_lower_triangular": lambda t: t.linalg.LinearOperatorBlockLowerTriangular(
        [
            [t.linalg.LinearOperatorFullMatrix(t.constant(M[:, :2, :2]))],
            [
                t.linalg.LinearOperatorFullMatrix(t.constant(M[0, 2:, :2])),
                t.linalg.LinearOperatorDiag(t.constant(D[0, :1])),
            ],
        ]
    ),
    "circulant": lambda t: t.linalg.LinearOperatorCirculant(
        t.constant(SPECTRUM), input_output_dtype=t.float64
    ),
    "circulant_complex": lambda t: t.linalg.LinearOperatorCirculant(
        t.constant(SPECTRUM[0] + 0.5j * D[0]), input_output_dtype=t.complex128
    ),
}


def _complex_methods(op, t):
    x = t.constant(X + 0.25j * X[::-1])
    return {
        "dense": op.to_dense(),
        "matmul": op.matmul(x),
        "matmul_adjoint": op.matmul(x, adjoint=True),
        "solve": op.solve(x),
        "det": op.determinant(),
        "logdet": op.log_abs_determinant(),
        "trace": op.trace(),
        "diag_part": op.diag_part(),
    }


@pytest.mark.parametrize("name", sorted(STRUCTURED))
def test_structured_operator_methods_match_tensorflow(tf1, name):
    methods = _complex_methods if name.endswith("complex") else _methods
    ours = _value(tf, lambda t: methods(STRUCTURED[name](t), t))
    theirs = _value(tf1, lambda t: methods(STRUCTURED[name](t), t))
    for key, value in theirs.items():
        assert np.shape(ours[key]) == np.shape(value), key
        assert np.asarray(ours[key]).dtype == np.asarray(value).dtype, key
        np.testing.assert_allclose(ours[key], value, rtol=1e-8, atol=1e-10, err_msg=key)


@pytest.mark.parametrize("depth", [2, 3])
def test_block_circulant_operators_match_tensorflow(tf1, depth):
    spectrum = _RNG.uniform(1.0, 2.0, (2, 2, 3) if depth == 2 else (2, 1, 3))
    rhs = _RNG.standard_normal((6, 2))

    def build(t):
        cls = t.linalg.LinearOperatorCirculant2D if depth == 2 else t.linalg.LinearOperatorCirculant3D
        op = cls(t.constant(spectrum), input_output_dtype=t.float64)
        return (
            op.to_dense(),
            op.matmul(t.constant(rhs)),
            op.solve(t.constant(rhs)),
            op.determinant(),
            op.eigvals(),
        )

    for a, b in zip(_value(tf, build), _value(tf1, build), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-10)


def test_householder_and_permutation_facts_match_tensorflow(tf1):
    def build(t):
        h = t.linalg.LinearOperatorHouseholder(t.constant(V))
        p = t.linalg.LinearOperatorPermutation(t.constant([2, 0, 1]), dtype=t.float64)
        c = t.linalg.LinearOperatorCirculant(t.constant(SPECTRUM), input_output_dtype=t.float64)
        return h.eigvals(), p.adjoint().to_dense(), p.inverse().to_dense(), c.convolution_kernel()

    for a, b in zip(_value(tf, build), _value(tf1, build), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-10)


def test_structured_operator_argument_errors_match_tensorflow(tf1):
    for lib in (tf, tf1):
        with lib.Graph().as_default():
            with pytest.raises(ValueError, match="unique integers from 0 to 2"):
                lib.linalg.LinearOperatorPermutation(lib.constant([0, 0, 1]))
            with pytest.raises(ValueError, match="always self adjoint"):
                lib.linalg.LinearOperatorHouseholder(lib.constant(V), is_self_adjoint=False)
            with pytest.raises(ValueError, match="mismatched dimensions"):
                lib.linalg.LinearOperatorToeplitz(lib.constant(V), lib.constant(D[:, :2]))
            with pytest.raises(ValueError, match="must be one of compact, matrix, or sequence"):
                lib.linalg.LinearOperatorTridiag(lib.constant(TRIDIAG), diagonals_format="banded")
            with pytest.raises(ValueError, match=r"`operators\[1\]` must contain `2` blocks"):
                lib.linalg.LinearOperatorBlockLowerTriangular(
                    [[lib.linalg.LinearOperatorIdentity(2)], [lib.linalg.LinearOperatorIdentity(2)]]
                )


def _reversal_operator(t):
    class Reversal(t.linalg.LinearOperator):
        """A user's operator: reverses the rows (only `_shape`, `_shape_tensor`, `_matmul` given)."""

        def __init__(self, n):
            self._n = n
            super().__init__(dtype=t.float64, is_self_adjoint=True, is_non_singular=True, name="Reversal")

        def _shape(self):
            return t.TensorShape([self._n, self._n])

        def _shape_tensor(self):
            return t.constant([self._n, self._n])

        def _matmul(self, x, adjoint=False, adjoint_arg=False):
            return t.reverse(t.linalg.adjoint(x) if adjoint_arg else x, [-2])

    return Reversal(3)


def test_a_users_subclass_gets_the_defaults_of_tensorflow(tf1):
    def build(t):
        op = _reversal_operator(t)
        return (
            op.to_dense(),
            op.matmul(t.constant(X[0]), adjoint=True),
            op.solve(t.constant(X[0])),
            op.determinant(),
            op.log_abs_determinant(),
            op.trace(),
            op.diag_part(),
            op.eigvals(),
            op.cond(),
        )

    for a, b in zip(_value(tf, build), _value(tf1, build), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-10)


def test_condition_numbers_match_tensorflow(tf1):
    def build(t):
        spd = t.linalg.LinearOperatorFullMatrix(t.constant(SPD), is_self_adjoint=True)
        return spd.cond(), t.linalg.LinearOperatorFullMatrix(t.constant(M)).cond()

    for a, b in zip(_value(tf, build), _value(tf1, build), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-8)


def test_arguments_of_the_wrong_dtype_or_size_are_refused_as_tensorflow(tf1):
    for lib in (tf, tf1):
        with lib.Graph().as_default():
            op = lib.linalg.LinearOperatorFullMatrix(lib.constant(M))
            with pytest.raises(
                TypeError,
                match=r"Expected argument to have dtype <dtype: 'float64'>\.  Found: <dtype: 'float32'>",
            ):
                op.matmul(lib.constant(X, lib.float32))
            with pytest.raises(ValueError, match="Dimensions 3 and 2 are not compatible"):
                op.matmul(lib.constant(X), adjoint_arg=True)
            with pytest.raises(ValueError, match="Dimensions 3 and 2 are not compatible"):
                op.solvevec(lib.constant(V[:, :2]))


def test_operators_of_unknown_batch_size_match_tensorflow(tf1):
    def build(t):
        m, d = t.placeholder(t.float64, [None, 3, 3]), t.placeholder(t.float64, [None, 3])
        ops = [
            t.linalg.LinearOperatorFullMatrix(m),
            t.linalg.LinearOperatorComposition(
                [t.linalg.LinearOperatorFullMatrix(m), t.linalg.LinearOperatorDiag(d)]
            ),
            t.linalg.LinearOperatorBlockDiag(
                [t.linalg.LinearOperatorFullMatrix(m), t.linalg.LinearOperatorDiag(d)]
            ),
            t.linalg.LinearOperatorHouseholder(d),
            t.linalg.LinearOperatorCirculant(d, input_output_dtype=t.float64),
        ]
        return [(op.to_dense(), op.determinant(), op.shape_tensor()) for op in ops], {m: M, d: D}

    results = []
    for lib in (tf, tf1):
        with lib.Graph().as_default(), lib.Session() as sess:
            fetches, feed = build(lib)
            results.append(sess.run(fetches, feed))
    for ours, theirs in zip(*results, strict=True):
        for a, b in zip(ours, theirs, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-10)
