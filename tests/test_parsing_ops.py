"""`tf.decode_csv`: types, defaults, quoting, selection, TF's errors, and parity with real TensorFlow."""

import numpy as np
import pytest

import nbdist as tf

pytestmark = pytest.mark.usefixtures("graph")


def _decode(records, defaults, **kwargs):
    columns = tf.decode_csv(records, defaults, **kwargs)
    with tf.Session() as sess:
        return sess.run(columns)


def test_columns_take_their_defaults_dtype_and_the_records_shape():
    ints, floats, strings = _decode(["1,2.5,abc", "4,,x"], [[0], [1.0], [""]])
    np.testing.assert_array_equal(ints, np.array([1, 4], np.int32))
    np.testing.assert_array_equal(floats, np.array([2.5, 1.0], np.float32))
    assert list(strings) == [b"abc", b"x"]
    assert (ints.dtype, floats.dtype) == (np.int32, np.float32)


def test_int64_float64_defaults_and_2d_records():
    a, b = _decode([["1,2"], ["3,4"]], [tf.constant([0], tf.int64), tf.constant([0.0], tf.float64)])
    assert a.dtype == np.int64 and b.dtype == np.float64 and a.shape == (2, 1)
    np.testing.assert_array_equal(b, [[2.0], [4.0]])


def test_a_scalar_record_gives_scalars():
    a, b = _decode("5,6", [[0], [0.0]])
    assert a == 5 and b == 6.0 and np.ndim(a) == 0


def test_the_records_can_be_fed():
    lines = tf.placeholder(tf.string, [None])
    x, y = tf.decode_csv(lines, [[0.0], [0]])
    with tf.Session() as sess:
        xs, ys = sess.run([x, y], {lines: ["0.5,1", "1.5,0"]})
    np.testing.assert_array_equal(xs, [0.5, 1.5])
    np.testing.assert_array_equal(ys, [1, 0])


def test_quoted_fields_hold_delimiters_and_doubled_quotes():
    _, s, _ = _decode(['1,"a,b",3', '2,"say ""hi""",4'], [[0], [""], [0]])
    assert list(s) == [b"a,b", b'say "hi"']


def test_without_quote_delim_quotes_are_plain_characters():
    a, b = _decode(['"x",y'], [[""], [""]], use_quote_delim=False)
    assert list(a) == [b'"x"'] and list(b) == [b"y"]


def test_other_delimiter_na_value_and_select_cols():
    assert [list(c) for c in _decode(["1;2"], [[0], [0]], field_delim=";")] == [[1], [2]]
    a, b = _decode(["1,NA", "NA,3"], [[7], [8]], na_value="NA")
    assert list(a) == [1, 7] and list(b) == [8, 3]
    a, b = _decode(["1,2,3,4"], [[0], [0]], select_cols=[1, 3])
    assert list(a) == [2] and list(b) == [4]


def test_numbers_may_have_spaces_and_special_floats():
    a, b, c = _decode([" 1, 2.5e1 ,inf"], [[0], [0.0], [0.0]])
    assert a[0] == 1 and b[0] == 25.0 and np.isinf(c[0])


@pytest.mark.parametrize(
    ("records", "defaults", "kwargs", "message"),
    [
        (
            ["1,,abc"],
            [[0], lambda: tf.constant([], tf.float32), [""]],
            {},
            "Field 1 is required but missing in record 0!",
        ),
        (["1,2"], [[0], [1.0], [""]], {}, "Expect 3 fields but have 2 in record 0"),
        (["1,2,3,4"], [[0], [1.0], [""]], {}, "Expect 3 fields but have 4 in record 0"),
        (["x,2"], [[0], [1.0]], {}, "Field 0 in record 0 is not a valid int32: x"),
        (["1.5,2"], [[0], [1.0]], {}, "Field 0 in record 0 is not a valid int32: 1.5"),
        (["99999999999"], [[0]], {}, "Field 0 in record 0 is not a valid int32: 99999999999"),
        (["1,1_0"], [[0], [1.0]], {}, "Field 1 in record 0 is not a valid float32: 1_0"),
        (['1,"ab"c,3'], [[0], [""], [0]], {}, "Quote inside a string has to be escaped by another quote"),
        (['1,a"b,3'], [[0], [""], [0]], {}, "Unquoted fields cannot have quotes/CRLFs inside"),
        ([""], [[0]], {}, "Expect 1 fields but have 0 in record 0"),
        (["1,2"], [[0], [0]], {"field_delim": ";;"}, "field_delim should be only 1 char"),
    ],
)
def test_parse_errors_are_tensorflows(records, defaults, kwargs, message):
    defaults = [d() if callable(d) else d for d in defaults]
    with pytest.raises(tf.errors.InvalidArgumentError, match=message.replace("(", r"\(")) as info:
        _decode(records, defaults, **kwargs)
    assert "DecodeCSV" in str(info.value)


def test_unsupported_default_dtype_and_bad_select_cols_are_refused():
    with pytest.raises(TypeError, match=r"record_defaults\[0\] has dtype bool"):
        tf.decode_csv(["1"], [[True]])
    with pytest.raises(ValueError, match="Length of select_cols and record_defaults do not match"):
        tf.decode_csv(["1,2"], [[0]], select_cols=[0, 1])
    with pytest.raises(ValueError, match="strictly increasing"):
        tf.decode_csv(["1,2"], [[0], [0]], select_cols=[1, 0])


def test_decode_csv_has_no_gradient():
    line = tf.constant(["1.5"])
    (x,) = tf.decode_csv(line, [[0.0]])
    assert tf.gradients(x, [line]) == [None]


# -- parity with real TensorFlow -----------------------------------------------------------------------
RECORDS = ["1,2.5,abc,7", '4,,"x,""y""",8', " 5 ,1e-3,,9", "NA,-2,z,1"]


def _program(t):
    lines = t.constant(RECORDS)
    cols = t.decode_csv(lines, [[0], [1.0], ["d"], t.constant([0], t.int64)], na_value="NA")
    selected = t.decode_csv(lines, [[0.0], t.constant([0], t.int64)], select_cols=[1, 3], na_value="NA")
    return [c.name for c in cols + selected], cols + selected


@pytest.mark.tf
def test_decode_csv_matches_tensorflow(tf1_graph_mode):
    tf1 = tf1_graph_mode
    with tf1.Graph().as_default():
        names_tf, fetches = _program(tf1)
        with tf1.Session() as sess:
            theirs = sess.run(fetches)
    names, fetches = _program(tf)
    with tf.Session() as sess:
        ours = sess.run(fetches)
    assert names == names_tf
    for a, b in zip(ours, theirs):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
