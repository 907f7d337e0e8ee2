"""TF's other paths of nbdist's names - `tf.math`, `tf.linalg`, `tf.random`, `tf.initializers`,
`tf.io` - against real TensorFlow at the same paths: each name spelled as a program spells it
(``t.math.abs``), run in both libraries on the same inputs.
"""

import numpy as np
import pytest

import nbdist as tf

_RNG = np.random.default_rng(32)
POS = _RNG.uniform(0.5, 2.0, (3, 4))
X = _RNG.standard_normal((3, 4))
Y = _RNG.standard_normal((3, 4)) + 3.0
BOOL = X > 0
SQUARE = _RNG.standard_normal((2, 3, 3)) + 3 * np.eye(3)
UNIT = np.tanh(X) * 0.9  # in (-1, 1): asin, acos, atanh
HALVES = np.array([0.0, -0.0, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.7, -3.2])  # round's ties
SPECIAL = np.array([0.0, -1.5, np.inf, -np.inf, np.nan])
COMPLEX = X + 1j * Y[::-1]
SEG = np.array([[1.0, 0.0, 2.0], [3.0, 4.0, 0.0], [-1.0, 2.0, 5.0], [2.0, -2.0, 2.0]])  # zeros: prod


def _variants(f, x):
    """`f` over all axes, one axis, and the last axis with kept dims."""
    return f(x), f(x, axis=0), f(x, axis=-1, keepdims=True)


def _scans(f, x):
    """`f` (a scan) plain, exclusive, reversed, and both, along both axes."""
    return f(x), f(x, axis=1, exclusive=True), f(x, axis=-1, reverse=True), f(x, 0, True, True)


MATH = {
    "abs": lambda t: t.math.abs(t.constant(X)),
    "ceil": lambda t: t.math.ceil(t.constant(X)),
    "cos": lambda t: t.math.cos(t.constant(X)),
    "exp": lambda t: t.math.exp(t.constant(X)),
    "floor": lambda t: t.math.floor(t.constant(X)),
    "log": lambda t: t.math.log(t.constant(POS)),
    "log1p": lambda t: t.math.log1p(t.constant(POS)),
    "negative": lambda t: t.math.negative(t.constant(X)),
    "reciprocal": lambda t: t.math.reciprocal(t.constant(POS)),
    "sigmoid": lambda t: t.math.sigmoid(t.constant(X)),
    "sign": lambda t: t.math.sign(t.constant(X)),
    "sin": lambda t: t.math.sin(t.constant(X)),
    "softplus": lambda t: t.math.softplus(t.constant(X)),
    "softsign": lambda t: t.math.softsign(t.constant(X)),
    "sqrt": lambda t: t.math.sqrt(t.constant(POS)),
    "square": lambda t: t.math.square(t.constant(X)),
    "tanh": lambda t: t.math.tanh(t.constant(X)),
    "add": lambda t: t.math.add(t.constant(POS), t.constant(Y)),
    "divide": lambda t: t.math.divide(t.constant(POS), t.constant(Y)),
    "equal": lambda t: t.math.equal(t.constant(POS), t.constant(Y)),
    "floordiv": lambda t: t.math.floordiv(t.constant(POS), t.constant(Y)),
    "floormod": lambda t: t.math.floormod(t.constant(POS), t.constant(Y)),
    "greater": lambda t: t.math.greater(t.constant(POS), t.constant(Y)),
    "greater_equal": lambda t: t.math.greater_equal(t.constant(POS), t.constant(Y)),
    "less": lambda t: t.math.less(t.constant(POS), t.constant(Y)),
    "less_equal": lambda t: t.math.less_equal(t.constant(POS), t.constant(Y)),
    "maximum": lambda t: t.math.maximum(t.constant(POS), t.constant(Y)),
    "minimum": lambda t: t.math.minimum(t.constant(POS), t.constant(Y)),
    "mod": lambda t: t.math.mod(t.constant(POS), t.constant(Y)),
    "multiply": lambda t: t.math.multiply(t.constant(POS), t.constant(Y)),
    "not_equal": lambda t: t.math.not_equal(t.constant(POS), t.constant(Y)),
    "pow": lambda t: t.math.pow(t.constant(POS), t.constant(Y)),
    "squared_difference": lambda t: t.math.squared_difference(t.constant(POS), t.constant(Y)),
    "subtract": lambda t: t.math.subtract(t.constant(POS), t.constant(Y)),
    "truediv": lambda t: t.math.truediv(t.constant(POS), t.constant(Y)),
    "reduce_max": lambda t: t.math.reduce_max(t.constant(X), axis=1),
    "reduce_mean": lambda t: t.math.reduce_mean(t.constant(X), axis=1),
    "reduce_min": lambda t: t.math.reduce_min(t.constant(X), axis=1),
    "reduce_sum": lambda t: t.math.reduce_sum(t.constant(X), axis=1),
    "reduce_logsumexp": lambda t: t.math.reduce_logsumexp(t.constant(X), axis=1),
    "reduce_all": lambda t: t.math.reduce_all(t.constant(BOOL), axis=0),
    "reduce_any": lambda t: t.math.reduce_any(t.constant(BOOL), axis=0),
    "add_n": lambda t: t.math.add_n([t.constant(X), t.constant(Y), t.constant(POS)]),
    "argmax": lambda t: t.math.argmax(t.constant(X), axis=1),
    "argmin": lambda t: t.math.argmin(t.constant(X), axis=0),
    "in_top_k": lambda t: t.math.in_top_k(t.constant(X, t.float32), t.constant([0, 1, 2]), 2),
    "top_k": lambda t: t.math.top_k(t.constant(X), 2),
    "invert_permutation": lambda t: t.math.invert_permutation(t.constant([2, 0, 1])),
    "l2_normalize": lambda t: t.math.l2_normalize(t.constant(X), axis=1),
    "log_softmax": lambda t: t.math.log_softmax(t.constant(X)),
    "softmax": lambda t: t.math.softmax(t.constant(X)),
    "unsorted_segment_sum": lambda t: t.math.unsorted_segment_sum(t.constant(X), t.constant([0, 2, 0]), 3),
    "acos": lambda t: t.math.acos(t.constant(UNIT)),
    "acosh": lambda t: t.math.acosh(t.constant(POS + 1.0)),
    "asin": lambda t: t.math.asin(t.constant(UNIT)),
    "asinh": lambda t: t.math.asinh(t.constant(X)),
    "atan": lambda t: t.math.atan(t.constant(X)),
    "atanh": lambda t: t.math.atanh(t.constant(UNIT)),
    "cosh": lambda t: t.math.cosh(t.constant(X)),
    "sinh": lambda t: t.math.sinh(t.constant(X)),
    "tan": lambda t: t.math.tan(t.constant(X)),
    "erf": lambda t: t.math.erf(t.constant(X * 2.0)),
    "erfc": lambda t: t.math.erfc(t.constant(X * 2.0)),
    "expm1": lambda t: t.math.expm1(t.constant(X * 1e-3)),
    "rsqrt": lambda t: t.math.rsqrt(t.constant(POS)),
    "round": lambda t: (t.math.round(t.constant(HALVES)), t.math.round(t.constant([3, -2]))),
    "rint": lambda t: t.math.rint(t.constant(HALVES)),
    "is_finite": lambda t: t.math.is_finite(t.constant(SPECIAL)),
    "is_inf": lambda t: t.math.is_inf(t.constant(SPECIAL)),
    "is_nan": lambda t: t.math.is_nan(t.constant(SPECIAL)),
    "logical_and": lambda t: t.math.logical_and(t.constant(BOOL), t.constant(X < 0.5)),
    "logical_or": lambda t: t.math.logical_or(t.constant(BOOL), t.constant(X < 0.5)),
    "logical_not": lambda t: t.math.logical_not(t.constant(BOOL)),
    "logical_xor": lambda t: t.math.logical_xor(t.constant(BOOL), t.constant(X < 0.5)),
    "log_sigmoid": lambda t: t.math.log_sigmoid(t.constant(X * 100.0)),
    "atan2": lambda t: t.math.atan2(t.constant(X), t.constant(np.array([0.0, -1.0, 2.0, -0.0]))),
    "nextafter": lambda t: t.math.nextafter(t.constant([1.0, 0.0, -1.0]), t.constant([2.0, -1.0, -1.0])),
    "multiply_no_nan": lambda t: t.math.multiply_no_nan(
        t.constant([np.inf, np.nan, 2.0, 1.0]), t.constant([0.0, 0.0, 3.0, -1.0])
    ),
    "divide_no_nan": lambda t: t.math.divide_no_nan(
        t.constant([1.0, 0.0, -2.0]), t.constant([0.0, 0.0, 4.0])
    ),
    "reciprocal_no_nan": lambda t: t.math.reciprocal_no_nan(t.constant([0.0, 2.0, -4.0])),
    "xlogy": lambda t: t.math.xlogy(t.constant([0.0, 0.0, 1.0, 2.0]), t.constant([0.0, 3.0, 2.0, 0.0])),
    "xdivy": lambda t: t.math.xdivy(t.constant([0.0, 0.0, 1.0, 2.0]), t.constant([0.0, 3.0, 2.0, -4.0])),
    "xlog1py": lambda t: t.math.xlog1py(t.constant([0.0, 0.0, 1.0, 2.0]), t.constant([-1.0, 3.0, 2.0, 0.0])),
    "scalar_mul": lambda t: t.math.scalar_mul(2.5, t.constant(X)),
    "accumulate_n": lambda t: t.math.accumulate_n([t.constant(X), t.constant(Y), t.constant(POS)]),
    "polyval": lambda t: (
        t.math.polyval([2.0, -1.0, 0.5], t.constant(X, t.float32)),
        t.math.polyval([], t.constant(X, t.float32)),
    ),
    "cumsum": lambda t: _scans(t.math.cumsum, t.constant(X)),
    "cumprod": lambda t: _scans(t.math.cumprod, t.constant(X)),
    "cumulative_logsumexp": lambda t: _scans(t.math.cumulative_logsumexp, t.constant(X)),
    "reduce_prod": lambda t: _variants(t.math.reduce_prod, t.constant(SEG)),
    "reduce_variance": lambda t: _variants(t.math.reduce_variance, t.constant(X)),
    "reduce_std": lambda t: _variants(t.math.reduce_std, t.constant(X)),
    "reduce_euclidean_norm": lambda t: _variants(t.math.reduce_euclidean_norm, t.constant(X)),
    "count_nonzero": lambda t: _variants(t.math.count_nonzero, t.constant(SEG)),
    "zero_fraction": lambda t: (
        t.math.zero_fraction(t.constant(SEG)),
        t.math.zero_fraction(t.constant([1, 0])),
    ),
    "is_non_decreasing": lambda t: [
        t.math.is_non_decreasing(t.constant(v)) for v in ([1, 2, 2, 3], [3.0, 1.0], [], [[1, 2], [3, 3]])
    ],
    "is_strictly_increasing": lambda t: [
        t.math.is_strictly_increasing(t.constant(v)) for v in ([1, 2, 2, 3], [1.0, 3.0], [], [[1, 2], [3, 4]])
    ],
    "segment_sum": lambda t: t.math.segment_sum(t.constant(SEG), t.constant([0, 0, 1, 3])),
    "segment_mean": lambda t: t.math.segment_mean(t.constant(SEG), t.constant([0, 0, 1, 3])),
    "segment_max": lambda t: t.math.segment_max(t.constant(SEG), t.constant([0, 0, 1, 3])),
    "segment_min": lambda t: t.math.segment_min(t.constant(SEG), t.constant([0, 0, 1, 3])),
    "segment_prod": lambda t: t.math.segment_prod(t.constant(SEG), t.constant([0, 0, 1, 3])),
    "unsorted_segment_max": lambda t: t.math.unsorted_segment_max(
        t.constant(SEG), t.constant([1, -1, 1, 3]), 4
    ),
    "unsorted_segment_min": lambda t: t.math.unsorted_segment_min(
        t.constant(SEG), t.constant([1, -1, 1, 3]), 4
    ),
    "unsorted_segment_mean": lambda t: t.math.unsorted_segment_mean(
        t.constant(SEG), t.constant([1, -1, 1, 3]), 4
    ),
    "unsorted_segment_prod": lambda t: t.math.unsorted_segment_prod(
        t.constant(SEG), t.constant([1, -1, 1, 3]), 4
    ),
    "unsorted_segment_sqrt_n": lambda t: t.math.unsorted_segment_sqrt_n(
        t.constant(SEG.reshape(2, 2, 3)), t.constant([[1, -1], [1, 3]]), 4
    ),
    "bincount": lambda t: (
        t.math.bincount(t.constant([1, 1, 3, 0, 3, 3])),
        t.math.bincount(t.constant([[1, 1, 3], [0, 3, 3]]), minlength=6),
        t.math.bincount(t.constant([1, 1, 3, 0, 3, 3]), maxlength=2),
        t.math.bincount(t.constant([1, 1, 3]), weights=t.constant([0.5, 1.0, 2.0])),
        t.math.bincount(t.constant([], t.int32)),
    ),
    "confusion_matrix": lambda t: (
        t.math.confusion_matrix(t.constant([0, 1, 2, 1]), t.constant([0, 2, 2, 0])),
        t.math.confusion_matrix([0, 1, 1], [1, 1, 0], num_classes=4, weights=t.constant([1, 2, 3])),
    ),
    "real": lambda t: (t.math.real(t.constant(COMPLEX)), t.math.real(t.constant(X))),
    "imag": lambda t: (t.math.imag(t.constant(COMPLEX)), t.math.imag(t.constant(X))),
    "conj": lambda t: (t.math.conj(t.constant(COMPLEX)), t.math.conj(t.constant(X))),
    "angle": lambda t: (t.math.angle(t.constant(COMPLEX)), t.math.angle(t.constant(HALVES))),
}
LINALG = {
    "det": lambda t: t.linalg.det(t.constant(SQUARE)),
    "inv": lambda t: t.linalg.inv(t.constant(SQUARE)),
    "diag": lambda t: t.linalg.diag(t.constant(X)),
    "diag_part": lambda t: t.linalg.diag_part(t.constant(SQUARE)),
    "set_diag": lambda t: t.linalg.set_diag(t.constant(SQUARE), t.constant(X[:2, :3])),
    "trace": lambda t: t.linalg.trace(t.constant(SQUARE)),
    "transpose": lambda t: t.linalg.transpose(t.constant(SQUARE)),
    "matrix_transpose": lambda t: t.linalg.matrix_transpose(t.constant(SQUARE)),
    "matmul": lambda t: t.linalg.matmul(t.constant(X), t.constant(Y), transpose_b=True),
    "eye": lambda t: t.linalg.eye(3, dtype=t.float64),
    "global_norm": lambda t: t.linalg.global_norm([t.constant(X), t.constant(Y)]),
    "l2_normalize": lambda t: t.linalg.l2_normalize(t.constant(X), axis=0),
}
IO = {
    "decode_csv": lambda t: t.io.decode_csv(t.constant(["1,a", "2,b"]), [[0], [""]]),
    "decode_raw": lambda t: t.io.decode_raw(t.constant([b"\x01\x00\x02\x00"]), t.int16),
    "parse_single_example": lambda t: t.io.parse_single_example(
        t.constant(_example(t)), {"v": t.io.FixedLenFeature([2], t.float32), "s": t.io.VarLenFeature(t.int64)}
    )["v"],
    "parse_example": lambda t: t.io.parse_example(
        t.constant([_example(t)] * 2), {"v": t.io.FixedLenSequenceFeature([], t.float32, allow_missing=True)}
    )["v"],
}


def _example(t):
    feature = {
        "v": t.train.Feature(float_list=t.train.FloatList(value=[1.5, -2.0])),
        "s": t.train.Feature(int64_list=t.train.Int64List(value=[7])),
    }
    return t.train.Example(features=t.train.Features(feature=feature)).SerializeToString()


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
    if theirs.dtype.kind in "OSU":
        assert ours.tolist() == theirs.tolist(), name
    else:
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-9, err_msg=name)


@pytest.mark.parametrize("name", sorted(MATH))
def test_tf_math_matches_tensorflow(tf1, name):
    _assert_same(_value(tf, MATH[name]), _value(tf1, MATH[name]), name)


@pytest.mark.parametrize("name", sorted(LINALG))
def test_tf_linalg_matches_tensorflow(tf1, name):
    _assert_same(_value(tf, LINALG[name]), _value(tf1, LINALG[name]), name)


@pytest.mark.parametrize("name", sorted(IO))
def test_tf_io_matches_tensorflow(tf1, name):
    _assert_same(_value(tf, IO[name]), _value(tf1, IO[name]), name)


def test_tf_io_files_and_queues(tf1, tmp_path):
    path = tmp_path / "data.bin"
    for lib in (tf, tf1):
        with lib.Graph().as_default(), lib.Session() as sess:
            sess.run(lib.io.write_file(str(path), lib.constant(b"payload")))
            assert sess.run(lib.io.read_file(str(path))) == b"payload"
            assert sess.run(lib.io.matching_files(str(tmp_path / "*.bin"))).tolist() == [str(path).encode()]
            q = lib.io.RandomShuffleQueue(4, 0, lib.int32, shapes=[[]], seed=1)
            assert isinstance(q, lib.io.QueueBase)
    with tf.io.TFRecordWriter(str(tmp_path / "r.tfrecord")) as writer:
        writer.write(b"x")
    assert list(tf1.io.tf_record_iterator(str(tmp_path / "r.tfrecord"))) == [b"x"]
    options = tf.io.TFRecordOptions(tf.io.TFRecordCompressionType.GZIP)
    assert tf.io.TFRecordOptions.get_compression_type_string(options) == "GZIP"
    assert tf.io.gfile.exists(str(path)) and tf.io.gfile.listdir(str(tmp_path)) == tf1.io.gfile.listdir(
        str(tmp_path)
    )
    with tf.Graph().as_default():
        names = tf.io.match_filenames_once(str(tmp_path / "*.bin"))
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            assert sess.run(names).tolist() == [str(path).encode()]


def test_tf_random_draws_have_the_asked_shapes_and_ranges(tf1):
    for lib in (tf, tf1):
        with lib.Graph().as_default(), lib.Session() as sess:
            lib.random.set_random_seed(3)
            normal, uniform, truncated, shuffled = sess.run(
                [
                    lib.random.normal([500], mean=2.0, stddev=0.5),
                    lib.random.uniform([500], minval=-1.0, maxval=1.0),
                    lib.random.truncated_normal([500], stddev=1.0),
                    lib.random.shuffle(lib.range(10)),
                ]
            )
            assert abs(normal.mean() - 2.0) < 0.1 and abs(normal.std() - 0.5) < 0.1
            assert uniform.min() >= -1.0 and uniform.max() < 1.0
            assert np.abs(truncated).max() <= 2.0
            assert sorted(shuffled.tolist()) == list(range(10))
            assert lib.random.get_seed(7)[1] == 7


def test_tf_initializers_are_the_initializer_classes_and_ops(tf1):
    for lib in (tf, tf1):
        with lib.Graph().as_default(), lib.Session() as sess:
            made = {
                "zeros": lib.get_variable("a", [2], initializer=lib.initializers.zeros()),
                "ones": lib.get_variable("b", [2], initializer=lib.initializers.ones()),
                "constant": lib.get_variable("c", [2], initializer=lib.initializers.constant(3.0)),
                "random_normal": lib.get_variable(
                    "d", [400], initializer=lib.initializers.random_normal(0, 0.1, seed=1)
                ),
                "random_uniform": lib.get_variable(
                    "e", [400], initializer=lib.initializers.random_uniform(-1, 1, seed=1)
                ),
                "truncated_normal": lib.get_variable(
                    "f", [400], initializer=lib.initializers.truncated_normal(0, 1, seed=1)
                ),
                "glorot_uniform": lib.get_variable(
                    "g", [20, 20], initializer=lib.initializers.glorot_uniform(seed=1)
                ),
                "glorot_normal": lib.get_variable(
                    "h", [20, 20], initializer=lib.initializers.glorot_normal(seed=1)
                ),
                "variance_scaling": lib.get_variable(
                    "i", [20, 20], initializer=lib.initializers.variance_scaling(2.0, seed=1)
                ),
            }
            local = lib.Variable(5.0, collections=[lib.GraphKeys.LOCAL_VARIABLES])
            sess.run([lib.initializers.global_variables(), lib.initializers.local_variables()])
            sess.run(lib.initializers.variables([made["zeros"]]))
            values = sess.run(made)
            assert sess.run(local) == 5.0
            np.testing.assert_array_equal(values["zeros"], [0, 0])
            np.testing.assert_array_equal(values["ones"], [1, 1])
            np.testing.assert_array_equal(values["constant"], [3, 3])
            assert abs(values["random_normal"].std() - 0.1) < 0.02
            assert np.abs(values["random_uniform"]).max() <= 1.0
            assert np.abs(values["truncated_normal"]).max() <= 2.0
            limit = np.sqrt(6 / 40)
            assert np.abs(values["glorot_uniform"]).max() <= limit
            assert 0.5 * np.sqrt(2 / 40) < values["glorot_normal"].std() < 1.5 * np.sqrt(2 / 40)
            assert 0.5 * np.sqrt(2 / 20) < values["variance_scaling"].std() < 1.5 * np.sqrt(2 / 20)


def test_tf2_switches_are_no_ops_for_tf1_programs(tf1):
    for lib in (tf, tf1):
        lib.disable_v2_behavior()
        lib.disable_eager_execution()
        lib.disable_resource_variables()
        lib.disable_control_flow_v2()
        lib.disable_tensor_equality()
        lib.disable_v2_tensorshape()
        assert lib.executing_eagerly() is False
