"""Small linear algebra and the long tail's casts and dtypes, against real TensorFlow: values
and gradients of `trace`, `eye`, `diag` / `diag_part`, `matrix_diag` / `matrix_diag_part` /
`matrix_set_diag`, `matrix_transpose`, `matrix_inverse`, `matrix_determinant` (batched), the
`to_*` casts and TF's dtype spellings."""

import numpy as np
import pytest

import nbdist as tf

_RNG = np.random.default_rng(32)
A = _RNG.standard_normal((3, 3)) + 3 * np.eye(3)
BATCH = _RNG.standard_normal((2, 3, 3)) + 3 * np.eye(3)
V = _RNG.standard_normal(4)
T = _RNG.standard_normal((2, 3))


CASES = {
    "trace": (lambda t, x: t.trace(x), BATCH),
    "eye": (lambda t, x: t.eye(3, 4, batch_shape=[2], dtype=t.float64) * t.reduce_sum(x), V),
    "diag_vector": (lambda t, x: t.diag(x), V),
    "diag_matrix": (lambda t, x: t.diag(x), T),
    "diag_part": (lambda t, x: t.diag_part(x), A),
    "diag_part_rank4": (lambda t, x: t.diag_part(t.reshape(x, [2, 3, 2, 3])), _RNG.standard_normal(36)),
    "matrix_diag": (lambda t, x: t.matrix_diag(x), T),
    "matrix_diag_part": (lambda t, x: t.matrix_diag_part(x), _RNG.standard_normal((2, 3, 4))),
    "matrix_set_diag": (
        lambda t, x: t.matrix_set_diag(x, t.ones([2, 3], t.float64)),
        _RNG.standard_normal((2, 3, 4)),
    ),
    "matrix_transpose": (lambda t, x: t.matrix_transpose(x), _RNG.standard_normal((2, 3, 4))),
    "matrix_inverse": (lambda t, x: t.matrix_inverse(x), BATCH),
    "matrix_inverse_adjoint": (lambda t, x: t.matrix_inverse(x, adjoint=True), A),
    "matrix_determinant": (lambda t, x: t.matrix_determinant(x), BATCH),
}


def _run(lib, build, value):
    with lib.Graph().as_default():
        x = lib.placeholder(lib.float64, value.shape)
        y = build(lib, x)
        weights = lib.constant(
            np.linspace(0.5, 1.5, int(np.prod(y.shape.as_list()))).reshape(y.shape.as_list())
        )
        (g,) = lib.gradients(lib.reduce_sum(y * weights), [x])
        with lib.Session() as sess:
            return sess.run([y, g], {x: value})


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients_match_tensorflow(tf1, name):
    build, value = CASES[name]
    (y, g), (ty, tg) = _run(tf, build, value), _run(tf1, build, value)
    assert y.shape == ty.shape
    np.testing.assert_allclose(y, ty, rtol=1e-10, atol=1e-12)
    if tg is None:
        assert g is None
    else:
        np.testing.assert_allclose(g, tg, rtol=1e-8, atol=1e-10)


def test_a_singular_matrix_is_not_invertible_as_in_tf(graph):
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError, match="Input is not invertible"):
        sess.run(tf.matrix_inverse(tf.zeros([2, 2])))


@pytest.mark.parametrize(
    "name", ["to_double", "to_int32", "to_int64", "to_float", "to_complex64", "to_complex128"]
)
def test_to_casts_match_tensorflow(tf1, name):
    value = np.array([1.7, -2.2, 3.0], np.float32)
    got = []
    for lib in (tf, tf1):
        with lib.Graph().as_default(), lib.Session() as sess:
            got.append(sess.run(getattr(lib, name)(lib.constant(value))))
    assert got[0].dtype == got[1].dtype
    np.testing.assert_array_equal(got[0], got[1])


@pytest.mark.parametrize(
    "spelling",
    [
        "float",
        "double",
        "half",
        "float32",
        "int64",
        "uint16",
        "uint32",
        "uint64",
        "complex64",
        "complex128",
        np.float32,
        np.dtype("int32"),
        float,
        bool,
        np.complex128,
    ],
)
def test_dtype_spellings_name_the_same_type_as_tensorflow(tf1, spelling):
    assert tf.as_dtype(spelling).name == tf1.as_dtype(spelling).name
    with tf.Graph().as_default():
        assert tf.placeholder(spelling, [2]).dtype.name == tf1.as_dtype(spelling).name


def test_version_names_are_there(tf1):
    for name in (
        "VERSION",
        "GIT_VERSION",
        "COMPILER_VERSION",
        "GRAPH_DEF_VERSION",
        "__git_version__",
        "__compiler_version__",
    ):
        assert hasattr(tf1, name) and getattr(tf, name)
    assert tf.__git_version__ == tf.GIT_VERSION and tf.__compiler_version__ == tf.COMPILER_VERSION
