"""`tf.strings` and TF 1.x's top-level string names against real TensorFlow: each name spelled
as a program spells it (``t.strings.join``, ``t.string_join``), run in both libraries on the
same inputs."""

import numpy as np
import pytest

import nbdist as tf

WORDS = [[b"Hello", b" World "], [b"\tab c\n", b"caf\xc3\xa9"]]
LINES = ["a b,,c", " x  y", ""]

CASES = {
    "strings.join": lambda t: t.strings.join([t.constant(WORDS), "-", t.constant(WORDS)], separator="+"),
    "string_join": lambda t: t.string_join(["x", t.constant(["a", "b"])], separator=":"),
    "strings.reduce_join": lambda t: t.strings.reduce_join(t.constant(WORDS), axis=1, separator=","),
    "reduce_join-all": lambda t: t.reduce_join(t.constant(WORDS)),
    "reduce_join-keepdims": lambda t: t.reduce_join(t.constant(WORDS), axis=0, keep_dims=True),
    "strings.length": lambda t: t.strings.length(t.constant(WORDS)),
    "strings.length-utf8": lambda t: t.strings.length(t.constant(WORDS), unit="UTF8_CHAR"),
    "strings.lower": lambda t: t.strings.lower(t.constant(WORDS)),
    "strings.upper": lambda t: t.strings.upper(t.constant(WORDS)),
    "strings.strip": lambda t: t.strings.strip(t.constant(WORDS)),
    "string_strip": lambda t: t.string_strip(t.constant(WORDS)),
    "strings.substr": lambda t: t.strings.substr(t.constant(WORDS), 1, 3),
    "strings.substr-negative": lambda t: t.strings.substr(t.constant(WORDS), -3, 2),
    "strings.substr-utf8": lambda t: t.strings.substr(t.constant(WORDS), 2, 2, unit="UTF8_CHAR"),
    "substr-broadcast": lambda t: t.substr(
        t.constant(["abcdef", "xyz"]), t.constant([0, 1]), t.constant([2, 9])
    ),
    "strings.regex_replace": lambda t: t.strings.regex_replace(t.constant(WORDS), "[aeiou]", "<\\0>"),
    "regex_replace-groups": lambda t: t.regex_replace(
        t.constant(LINES), r"(\w) (\w)", r"\2_\1", replace_global=False
    ),
    "strings.regex_full_match": lambda t: t.strings.regex_full_match(
        t.constant(WORDS), r"(?i)h\w+|\s*\w+\s*"
    ),
    "strings.to_number": lambda t: t.strings.to_number(t.constant(["1.5", "-2e3", "7"])),
    "strings.to_number-int64": lambda t: t.strings.to_number(t.constant(["12", "-9"]), out_type=t.int64),
    "string_to_number": lambda t: t.string_to_number(t.constant(["0.25"]), out_type=t.float64),
    "strings.as_string": lambda t: t.strings.as_string(t.constant([1.5, -2.0, 1234567.0])),
    "as_string-precision": lambda t: t.as_string(t.constant([1.5, 3.14159]), precision=2, width=8, fill="0"),
    "as_string-shortest": lambda t: t.as_string(t.constant([1.5, 1234567.0]), shortest=True),
    "as_string-scientific": lambda t: t.as_string(t.constant([1.5, 0.001]), scientific=True, precision=3),
    "as_string-int": lambda t: t.as_string(t.constant([3, -12], t.int64), width=4),
    "as_string-bool": lambda t: t.as_string(t.constant([True, False])),
    "strings.format": lambda t: t.strings.format("x={} y={}", [t.constant([1.5, 2.0]), t.constant("ab")]),
    "strings.format-summarize": lambda t: t.strings.format(
        "{}", t.constant(np.arange(12).reshape(2, 6)), summarize=2
    ),
    "strings.split": lambda t: t.strings.split(t.constant(LINES)),
    "strings.split-sep": lambda t: t.strings.split(t.constant(LINES), sep=",", maxsplit=1),
    "string_split": lambda t: t.string_split(t.constant(LINES), sep=" ,"),
    "string_split-keep-empty": lambda t: t.string_split(t.constant(LINES), sep=",", skip_empty=False),
    "string_split-bytes": lambda t: t.string_split(t.constant(["ab", "c"]), sep=""),
    "strings.unsorted_segment_join": lambda t: t.strings.unsorted_segment_join(
        t.constant(["a", "b", "c", "d"]), t.constant([1, 0, 1, 1]), 3, separator="|"
    ),
}


def _value(lib, build):
    with lib.Graph().as_default(), lib.Session() as sess:
        return sess.run(build(lib))


def _assert_same(ours, theirs, name):
    if hasattr(theirs, "_fields"):
        for a, b in zip(ours, theirs, strict=True):
            _assert_same(a, b, name)
        return
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.shape == theirs.shape, name
    assert ours.dtype == theirs.dtype or theirs.dtype.kind in "OS", name
    assert ours.tolist() == theirs.tolist(), name


@pytest.mark.parametrize("name", sorted(CASES))
def test_string_op_matches_tensorflow(tf1, name):
    _assert_same(_value(tf, CASES[name]), _value(tf1, CASES[name]), name)


def test_string_ops_have_no_gradient():
    with tf.Graph().as_default():
        x = tf.constant([1.0, 2.0])
        assert tf.gradients(tf.strings.to_number(tf.strings.as_string(x)), x) == [None]


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: tf.strings.to_number(tf.constant(["1x"])), "could not correctly convert string: 1x"),
        (lambda: tf.strings.substr(tf.constant(["ab"]), 3, 1), "pos 3 out of range"),
        (
            lambda: tf.string_join(
                [tf.placeholder_with_default(["a", "b"], None), tf.constant(["a", "b", "c"])]
            ),
            "shapes do not match",
        ),
    ],
)
def test_bad_values_raise_invalid_argument(build, match):
    with (
        tf.Graph().as_default(),
        tf.Session() as sess,
        pytest.raises(tf.errors.InvalidArgumentError, match=match),
    ):
        sess.run(build())


def test_api_misuse_raises_as_tf():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Fill argument not supported"):
            tf.as_string(tf.constant([1.0]), fill="x")
        with pytest.raises(ValueError, match="not broadcast-compatible"):
            tf.string_join([tf.constant(["a", "b"]), tf.constant(["a", "b", "c"])])
        with pytest.raises(ValueError, match="precision not supported"):
            tf.as_string(tf.constant([1]), precision=2)
        with pytest.raises(ValueError, match="unit must be one of"):
            tf.strings.length(tf.constant(["a"]), unit="WORD")
        with pytest.raises(ValueError, match="returns a SparseTensor"):
            tf.strings.split(tf.constant(["a"]), result_type="RaggedTensor")
        with pytest.raises(AttributeError, match=r"tf\.strings\.bytes_split is not supported"):
            tf.strings.bytes_split  # noqa: B018
