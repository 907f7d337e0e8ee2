"""`tf.matmul` of rank above 2 (TF's ``BatchMatMulV2``: batch dimensions broadcast, adjoint
flags) and the adjoint flags of rank 2, against real TF: values, static shapes, gradients, errors."""

import numpy as np
import pytest

import nbdist as tf

_RNG = np.random.default_rng(21)
A = _RNG.standard_normal((2, 3, 4))
B = _RNG.standard_normal((2, 4, 5))
M = _RNG.standard_normal((4, 5))
Z = _RNG.standard_normal((2, 3, 3)) + 1j * _RNG.standard_normal((2, 3, 3))
C = _RNG.standard_normal((3, 1, 2, 4))
D = _RNG.standard_normal((5, 4, 2))
E = _RNG.standard_normal((3, 1, 5, 4))

PROGRAMS = {
    "batched": lambda t: t.matmul(A, B),
    "broadcast_matrix": lambda t: t.matmul(A, M),
    "broadcast_batch": lambda t: t.matmul(C, D),
    "transpose_a": lambda t: t.matmul(np.swapaxes(A, -1, -2), B, transpose_a=True),
    "transpose_b": lambda t: t.matmul(A, np.swapaxes(B, -1, -2), transpose_b=True),
    "adjoint_complex": lambda t: t.matmul(Z, Z, adjoint_a=True),
    "transpose_complex": lambda t: t.matmul(Z, Z, transpose_b=True),
    "adjoint_rank2": lambda t: t.matmul(Z[0], Z[1], adjoint_b=True),
    "empty_batch": lambda t: t.matmul(np.zeros((0, 3, 4)), np.zeros((4, 2))),
    "int32": lambda t: t.matmul(np.arange(24, dtype=np.int32).reshape(2, 3, 4), np.ones((2, 4, 1), np.int32)),
}


def _run(lib, build):
    with lib.Graph().as_default():
        out = build(lib)
        with lib.Session() as sess:
            return sess.run(out), out.shape.as_list()


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_batched_matmul_matches_tensorflow(tf1, name):
    (ours, our_shape), (theirs, their_shape) = _run(tf, PROGRAMS[name]), _run(tf1, PROGRAMS[name])
    assert our_shape == their_shape
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


def test_batched_matmul_gradients_match_tensorflow(tf1):
    def build(t):
        a, m = t.constant(A), t.constant(M)
        b = t.constant(E)
        y = t.matmul(a, m) + t.reduce_sum(t.matmul(b, a, transpose_b=True))
        return t.gradients(t.reduce_sum(t.sin(y)), [a, m, b])

    ours, _ = _run(tf, lambda t: t.stack([t.reduce_sum(g) for g in build(t)]))
    theirs, _ = _run(tf1, lambda t: t.stack([t.reduce_sum(g) for g in build(t)]))
    np.testing.assert_allclose(ours, theirs, rtol=1e-10)


def test_mistakes_are_refused_as_tf(tf1):
    for lib in (tf, tf1):
        with lib.Graph().as_default():
            with pytest.raises(ValueError, match=r"Only one of `transpose_a` and `adjoint_a` can be True"):
                lib.matmul(A, B, transpose_a=True, adjoint_a=True)
            with pytest.raises(ValueError):
                lib.matmul(A, np.ones((2, 3, 5)))


def test_run_time_shape_errors_say_what_tf_says(tf1):
    for lib in (tf, tf1):
        with lib.Graph().as_default():
            a, b = lib.placeholder(lib.float32, None), lib.placeholder(lib.float32, None)
            product = lib.matmul(a, b, name="product")
            assert product.op.type == "BatchMatMulV2"  # TF's choice for unknown ranks
            with lib.Session() as sess:
                for x, y, words in (
                    ((2, 3), (2, 3), r"Matrix size-incompatible: In\[0\]: \[2,3\], In\[1\]: \[2,3\] 0 0"),
                    (
                        (2, 2, 3),
                        (3, 3, 1),
                        r"must have compatible batch dimensions: \[2,2,3\] vs\. \[3,3,1\]",
                    ),
                    ((3,), (3, 2), r"In\[0\] ndims must be >= 2: 1"),
                ):
                    with pytest.raises(lib.errors.InvalidArgumentError, match=words):
                        sess.run(product, {a: np.ones(x), b: np.ones(y)})
