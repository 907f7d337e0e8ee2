"""`DType`s: TF's element types over numpy, and every accepted way of naming one."""

import numpy as np
import pytest

import nbdist as tf
from nbdist.graph.dtypes import dtype_of_value


@pytest.mark.parametrize(
    ("name", "np_dtype"),
    [
        ("float16", np.float16),
        ("float32", np.float32),
        ("float64", np.float64),
        ("int8", np.int8),
        ("int16", np.int16),
        ("int32", np.int32),
        ("int64", np.int64),
        ("uint8", np.uint8),
        ("bool", np.bool_),
    ],
)
def test_each_dtype_wraps_its_numpy_dtype(name, np_dtype):
    dtype = getattr(tf, name)
    assert dtype.name == name
    assert dtype.np == np.dtype(np_dtype)
    assert dtype.as_numpy_dtype is np_dtype


def test_string_holds_bytes_in_object_arrays():
    assert tf.string.np == np.dtype(object)
    assert tf.string.size == 0


def test_aliases_are_the_same_objects():
    assert tf.half is tf.float16
    assert tf.double is tf.float64


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (tf.float32, tf.float32),
        ("float32", tf.float32),
        ("half", tf.float16),
        ("double", tf.float64),
        (np.float32, tf.float32),
        (np.dtype("int64"), tf.int64),
        (np.bool_, tf.bool),
        (bool, tf.bool),
        (np.dtype("S3"), tf.string),
        (np.dtype("U3"), tf.string),
        (np.dtype(object), tf.string),
    ],
)
def test_as_dtype_normalizes_every_form(value, expected):
    assert tf.as_dtype(value) is expected


def test_python_float_type_is_float32_as_in_tf():
    assert tf.as_dtype(float) is tf.float32


def test_unknown_dtype_name_lists_the_known_ones():
    with pytest.raises(TypeError, match="unknown dtype name 'float33'; expected one of"):
        tf.as_dtype("float33")


def test_unsupported_numpy_dtype_is_a_type_error():
    with pytest.raises(TypeError, match=r"dtype datetime64.* is not supported"):
        tf.as_dtype(np.dtype("datetime64[s]"))


def test_unconvertible_value_is_a_type_error():
    with pytest.raises(TypeError, match=r"cannot convert .* to a dtype"):
        tf.as_dtype(object())


def test_dtype_equals_its_other_forms():
    assert tf.float32 == "float32"
    assert tf.float32 == np.float32
    assert tf.float32 != tf.float64
    assert tf.float32 != "not a dtype"


def test_dtypes_hash_by_name():
    assert len({tf.float32, tf.as_dtype("float32"), tf.float64}) == 2


def test_dtype_kind_predicates():
    assert tf.float16.is_floating
    assert not tf.int32.is_floating
    assert tf.uint8.is_integer
    assert tf.bool.is_bool
    assert not tf.string.is_integer


def test_size_is_bytes_per_element():
    assert (tf.float64.size, tf.int32.size, tf.uint8.size) == (8, 4, 1)


def test_base_dtype_is_itself():
    assert tf.int64.base_dtype is tf.int64


def test_repr_reads_like_tf():
    assert repr(tf.float32) == "tf.float32"


def test_dtype_of_value():
    assert dtype_of_value(np.zeros(2, np.int16)) is tf.int16
    assert dtype_of_value(np.array([b"a"])) is tf.string
    assert dtype_of_value(np.array(["a"])) is tf.string
