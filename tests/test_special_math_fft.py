"""The special functions (`tf.lgamma`, `tf.math.bessel_i0`, ...) and the Fourier transforms
(`tf.fft`, `tf.rfftnd`, ...) against real TensorFlow: each program is one lambda of the library,
run under both on the same inputs; their gradients against TF's too (finite differences are in
tests/test_gradients.py)."""

import numpy as np
import pytest

import nbdist as tf

_RNG = np.random.default_rng(7)
POS = np.array([0.1, 0.5, 1.0, 2.5, 7.0, 30.0])
X = np.array([-3.0, -0.7, 0.0, 0.3, 1.5, 12.0])
UNIT = np.array([-0.99, -0.5, 0.0, 0.25, 0.9, 0.999])
PROB = np.array([1e-6, 0.01, 0.3, 0.5, 0.8, 0.999])
C = (_RNG.standard_normal((3, 4, 5)) + 1j * _RNG.standard_normal((3, 4, 5))).astype(np.complex64)
R = _RNG.standard_normal((3, 4, 6))


def _c(t, value):
    return t.constant(value)


SPECIAL = {
    "lgamma": lambda t: t.lgamma(_c(t, np.concatenate([POS, -POS[:-1] - 0.5]))),
    "digamma": lambda t: t.digamma(_c(t, np.concatenate([POS, [-0.5, -2.5]]))),
    "polygamma": lambda t: t.polygamma(_c(t, np.array([0.0, 1.0, 2.0, 3.0, 1.0, 0.0])), _c(t, POS)),
    "igamma": lambda t: t.igamma(_c(t, POS), _c(t, POS[::-1])),
    "igammac": lambda t: t.igammac(_c(t, POS), _c(t, POS[::-1])),
    "betainc": lambda t: t.betainc(_c(t, POS), _c(t, POS[::-1]), _c(t, PROB)),
    "betainc_broadcast": lambda t: t.betainc(_c(t, np.float64(2.0)), _c(t, POS), _c(t, PROB)),
    "zeta": lambda t: t.zeta(_c(t, POS + 1.5), _c(t, POS)),
    "lbeta": lambda t: t.lbeta(_c(t, np.abs(R) + 0.1)),
    "lbeta_float32": lambda t: t.lbeta(_c(t, np.ones((2, 3), np.float32))),
    "lbeta_empty": lambda t: t.lbeta(_c(t, np.zeros((2, 0)))),
    "math.lgamma": lambda t: t.math.lgamma(_c(t, POS.astype(np.float32))),
    "math.digamma": lambda t: t.math.digamma(_c(t, POS)),
    "math.polygamma": lambda t: t.math.polygamma(_c(t, np.ones(6)), _c(t, POS)),
    "math.igamma": lambda t: t.math.igamma(_c(t, POS), _c(t, POS)),
    "math.igammac": lambda t: t.math.igammac(_c(t, POS), _c(t, POS)),
    "math.betainc": lambda t: t.math.betainc(_c(t, POS), _c(t, POS), _c(t, PROB)),
    "math.zeta": lambda t: t.math.zeta(_c(t, POS + 1.0), _c(t, POS)),
    "math.lbeta": lambda t: t.math.lbeta(_c(t, POS.reshape(2, 3))),
    "math.erfinv": lambda t: t.math.erfinv(_c(t, UNIT)),
    "math.erfcinv": lambda t: t.math.erfcinv(_c(t, UNIT + 1.0)),
    "math.ndtri": lambda t: t.math.ndtri(_c(t, PROB)),
    "math.bessel_i0": lambda t: t.math.bessel_i0(_c(t, X)),
    "math.bessel_i0e": lambda t: t.math.bessel_i0e(_c(t, X)),
    "math.bessel_i1": lambda t: t.math.bessel_i1(_c(t, X)),
    "math.bessel_i1e": lambda t: t.math.bessel_i1e(_c(t, X.astype(np.float32))),
    "math.sobol_sample": lambda t: t.math.sobol_sample(3, 9),
    "math.sobol_sample_skip": lambda t: t.math.sobol_sample(5, 4, skip=10, dtype=t.float64),
}

FFT = {
    "fft": lambda t: t.fft(_c(t, C)),
    "ifft": lambda t: t.ifft(_c(t, C.astype(np.complex128))),
    "fft2d": lambda t: t.fft2d(_c(t, C)),
    "ifft2d": lambda t: t.ifft2d(_c(t, C)),
    "fft3d": lambda t: t.fft3d(_c(t, C.astype(np.complex128))),
    "ifft3d": lambda t: t.ifft3d(_c(t, C)),
}

# TF's CPU build has no kernels for the N-d forms (FFTND, IFFTND, RFFTND, IRFFTND run on GPUs
# only): they are checked against numpy's transforms, which are their definition.
FFT_ND = {
    "fftnd": (lambda: tf.fftnd(C, [4, 3], [0, -1]), np.fft.fftn(C, [4, 3], [0, -1]), "complex64"),
    "ifftnd": (lambda: tf.ifftnd(C, [6], [1]), np.fft.ifftn(C, [6], [1]), "complex64"),
    "rfftnd": (
        lambda: tf.rfftnd(R.astype(np.float32), [4, 5], [1, 2]),
        np.fft.rfftn(R, [4, 5], [1, 2]),
        "complex64",
    ),
    "rfftnd_complex128": (
        lambda: tf.rfftnd(R, [6], [-1], Tcomplex=tf.complex128),
        np.fft.rfftn(R, [6], [-1]),
        "complex128",
    ),
    "irfftnd": (lambda: tf.irfftnd(C, [4, 8], [1, 2]), np.fft.irfftn(C, [4, 8], [1, 2]), "float32"),
    "irfftnd_odd": (
        lambda: tf.irfftnd(C.astype(np.complex128), [7], [-1], Treal=tf.float64),
        np.fft.irfftn(C, [7], [-1]),
        "float64",
    ),
}


def _value(lib, build):
    with lib.Graph().as_default():
        out = build(lib)
        with lib.Session() as sess:
            return sess.run(out), out.dtype.name


@pytest.mark.parametrize("name", sorted(SPECIAL))
def test_special_functions_match_tensorflow(tf1, name):
    (ours, our_dtype), (theirs, their_dtype) = _value(tf, SPECIAL[name]), _value(tf1, SPECIAL[name])
    assert our_dtype == their_dtype
    rtol = 2e-5 if our_dtype == "float32" else 1e-9
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("name", sorted(FFT))
def test_fourier_transforms_match_tensorflow(tf1, name):
    (ours, our_dtype), (theirs, their_dtype) = _value(tf, FFT[name]), _value(tf1, FFT[name])
    assert our_dtype == their_dtype and ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-4, err_msg=name)


@pytest.mark.parametrize("name", sorted(FFT_ND))
def test_nd_fourier_transforms_match_numpy(name):
    build, expected, dtype = FFT_ND[name]
    with tf.Graph().as_default():
        out = build()
        assert out.dtype.name == dtype
        with tf.Session() as sess:
            value = sess.run(out)
    assert value.shape == expected.shape
    np.testing.assert_allclose(value, expected, rtol=1e-4, atol=1e-4, err_msg=name)


GRADIENTS = {
    "fft": lambda t, x: t.real(t.fft(t.complex(x, 0.5 * x))),
    "ifft2d": lambda t, x: t.imag(t.ifft2d(t.complex(x, x * x))),
    "igamma": lambda t, x: t.igamma(x * x + 0.5, t.abs(x) + 0.2),
    "betainc": lambda t, x: t.betainc(2.0 + 0 * x, 3.0 + 0 * x, t.sigmoid(x)),
    "zeta": lambda t, x: t.zeta(3.0 + 0 * x, t.abs(x) + 0.5),
    "bessel_i1e": lambda t, x: t.math.bessel_i1e(x),
}


@pytest.mark.parametrize("name", sorted(GRADIENTS))
def test_gradients_match_tensorflow(tf1, name):
    def build(t):
        x = t.constant(R)
        y = GRADIENTS[name](t, x)
        return t.gradients(t.reduce_sum(t.sin(y) + y * y), x)[0]

    ours, _ = _value(tf, build)
    theirs, _ = _value(tf1, build)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-8, err_msg=name)


def test_bad_fft_arguments_say_what_is_wrong():
    with pytest.raises(TypeError, match=r"FFT takes complex64 or complex128 input, got float32"):
        tf.fft(tf.constant([1.0, 2.0]))
    with (
        pytest.raises(tf.errors.InvalidArgumentError, match=r"axes \[3\] must lie in \[-2, 2\)"),
        tf.Session() as sess,
    ):
        sess.run(tf.fftnd(tf.constant(C[0]), [4], [3]))
    with pytest.raises(TypeError, match=r"float16/32/64"):
        tf.lgamma(tf.constant([1, 2]))
