"""`tf.constant` / `convert_to_tensor` refuse Python values of another kind than the dtype asked
for, in TF's words (a number as a string, a string as a number), as real TF does."""

import pytest

import nbdist as tf

MISMATCHES = [
    ([1, 2], "string", r"Expected string, but got 1 of type 'int'\."),
    ([b"a", 1], "string", r"Expected string, but got 1 of type 'int'\."),
    (1.5, "string", r"Expected string, but got 1\.5 of type 'float'\."),
    ([True], "string", r"Expected string, but got True of type 'bool'\."),
    (["a"], "int32", r"Expected int32, but got a of type 'str'\."),
    ("x", "float32", r"Expected float32, but got x of type 'str'\."),
]


@pytest.mark.parametrize(("value", "dtype", "words"), MISMATCHES)
def test_a_value_of_another_kind_is_refused_as_in_tf(tf1, value, dtype, words):
    for lib in (tf, tf1):
        with lib.Graph().as_default(), pytest.raises(TypeError, match=words):
            lib.constant(value, getattr(lib, dtype))


def test_values_of_the_asked_kind_convert():
    with tf.Graph().as_default():
        assert tf.constant(["a", b"b"], tf.string).dtype == tf.string
        assert tf.convert_to_tensor([1, 2], tf.int64).dtype == tf.int64
        assert tf.constant([[1.0, 2]], tf.float64).shape.as_list() == [1, 2]
