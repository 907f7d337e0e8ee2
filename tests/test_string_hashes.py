"""String hashing against real TensorFlow: `tf.strings.to_hash_bucket*`, the top-level
`tf.string_to_hash_bucket*` and `tf.fingerprint` give TF's values for strings of every length
class of the hashes (empty, 1-3, 4-7, 8-16, 17-32, 33-64, over 64 and many blocks), unicode
and arbitrary bytes; nbdist's hashes (ops/hash_functions.py) are TF's bit for bit."""

import numpy as np
import pytest

import nbdist as tf

_RNG = np.random.default_rng(32)
_LENGTHS = [0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 48, 63, 64, 65, 100, 127, 128, 129, 200, 1000]
STRINGS = np.array(
    [bytes(_RNG.integers(0, 256, n, dtype=np.uint8)) for n in _LENGTHS]
    + ["", "a", "hello", "héllo wörld", "日本語のテキスト", "🙂" * 20, "x" * 70, "The quick brown fox"],
    dtype=object,
)
GRID = STRINGS[:24].reshape(4, 6)
FLOATS = _RNG.standard_normal((3, 5, 2))
BIG = 2**63 - 1  # nearly all of the hash's bits


def _value(lib, build):
    with lib.Graph().as_default(), lib.Session() as sess:
        return sess.run(build(lib))


CASES = {
    "to_hash_bucket": lambda t: [
        t.strings.to_hash_bucket(STRINGS, BIG),
        t.strings.to_hash_bucket(GRID, 10),
        t.strings.to_hash_bucket(input=["a", "b"], num_buckets=3),
    ],
    "to_hash_bucket_fast": lambda t: [
        t.strings.to_hash_bucket_fast(STRINGS, BIG),
        t.strings.to_hash_bucket_fast(GRID, 7),
    ],
    "to_hash_bucket_strong": lambda t: [
        t.strings.to_hash_bucket_strong(STRINGS, BIG, [1, 2]),
        t.strings.to_hash_bucket_strong(GRID, 1000, [-5, 2**62]),
    ],
    "string_to_hash_bucket": lambda t: [
        t.string_to_hash_bucket(STRINGS, BIG),
        t.string_to_hash_bucket(t.constant("scalar"), 5),
    ],
    "string_to_hash_bucket_fast": lambda t: t.string_to_hash_bucket_fast(GRID, BIG),
    "string_to_hash_bucket_strong": lambda t: t.string_to_hash_bucket_strong(STRINGS, BIG, [7, 11]),
    "fingerprint": lambda t: [
        t.fingerprint(STRINGS),
        t.fingerprint(GRID),  # rows of many strings: their fingerprints fingerprinted
        t.fingerprint(GRID[:, :1]),
        t.fingerprint(np.arange(24, dtype=np.int32).reshape(4, 6)),
        t.fingerprint(FLOATS),
        t.fingerprint(np.array([True, False])),
        t.fingerprint(np.zeros((2, 0), np.float32)),
        t.fingerprint(np.arange(30, dtype=np.uint8).reshape(1, 30), method="farmhash64"),
    ],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_hash_matches_tensorflow(tf1, name):
    ours, theirs = _value(tf, CASES[name]), _value(tf1, CASES[name])
    for a, b in zip(
        ours if isinstance(ours, list) else [ours], theirs if isinstance(theirs, list) else [theirs]
    ):
        assert (a.dtype, a.shape) == (b.dtype, b.shape)
        np.testing.assert_array_equal(a, b)


def test_static_shapes_are_tensorflows(tf1):
    def shapes(t):
        with t.Graph().as_default():
            x = t.placeholder(t.string, [None, 3])
            return [
                t.strings.to_hash_bucket_fast(x, 4).shape.as_list(),
                t.fingerprint(x).shape.as_list(),
                t.fingerprint(t.zeros([5, 2])).shape.as_list(),
            ]

    assert shapes(tf) == shapes(tf1) == [[None, 3], [None, 8], [5, 8]]


@pytest.mark.parametrize("lib_name", ["nbdist", "tensorflow"])
def test_bad_arguments_raise_as_in_tensorflow(tf1, lib_name):
    t = tf if lib_name == "nbdist" else tf1
    with t.Graph().as_default(), t.Session() as sess:
        with pytest.raises(ValueError, match="num_buckets"):
            t.strings.to_hash_bucket_fast(["a"], 0)
        with pytest.raises(TypeError, match="Expected string passed to parameter 'input'"):
            t.strings.to_hash_bucket_fast([1, 2], 3)
        with pytest.raises(ValueError, match="Shape must be at least rank 1 but is rank 0"):
            t.fingerprint("abc")
        with pytest.raises(ValueError, match=r"Unsupported method: .?md5"):
            t.fingerprint([1, 2], method="md5")
        with pytest.raises(t.errors.InvalidArgumentError, match="`data` should have at least one dimension"):
            sess.run(t.fingerprint(t.placeholder_with_default(np.int32(3), None)))
        with pytest.raises(t.errors.InvalidArgumentError, match="Key must have 2 elements"):
            sess.run(t.strings.to_hash_bucket_strong(["a"], 3, [1, 2, 3]))
