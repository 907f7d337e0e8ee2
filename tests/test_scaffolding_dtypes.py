"""TF's other dtypes against real TF: the quantized integers (`tf.qint8` ... `tf.QUANTIZED_DTYPES`),
`tf.resource` and `tf.variant` as placeholder types, and `tf.bfloat16` / `tf.to_bfloat16` where
the ml_dtypes package gives numpy a bfloat16."""

import numpy as np
import pytest

import nbdist as tf

QUANTIZED = ["qint8", "quint8", "qint16", "quint16", "qint32"]
_FACTS = ("name", "is_quantized", "is_integer", "is_floating", "is_unsigned", "size", "as_datatype_enum")


def _facts(dtype):
    return [getattr(dtype, f) for f in _FACTS]


def test_quantized_dtypes_have_tf_facts(tf1):
    pairs = [
        (tf.qint8, tf1.qint8),
        (tf.quint8, tf1.quint8),
        (tf.qint16, tf1.qint16),
        (tf.quint16, tf1.quint16),
        (tf.qint32, tf1.qint32),
    ]
    for ours, theirs in pairs:
        assert _facts(ours) == _facts(theirs)
        for lib_dtype in (ours, theirs):
            with pytest.raises(TypeError, match=r"Cannot find minimum value of .* with quantized type"):
                lib_dtype.min  # noqa: B018 - the property raises
        assert tf.as_dtype(ours.name) is ours
        assert tf.as_dtype(theirs.as_numpy_dtype) is ours  # TF's structured numpy spelling
    assert {d.name for d in tf.QUANTIZED_DTYPES} == {
        d.name for d in tf1.QUANTIZED_DTYPES if not d.name.endswith("_ref")
    }
    assert not tf.int8.is_quantized and tf.int8.is_integer  # plain integers are not quantized


@pytest.mark.parametrize("name", QUANTIZED)
def test_a_quantized_placeholder_carries_its_integers_as_tf(tf1, name):
    width = getattr(tf, name).np
    values = np.array([[0, 7], [np.iinfo(width).max, np.iinfo(width).min]], dtype=width)
    results = []
    for lib in (tf, tf1):
        with lib.Graph().as_default():
            p = lib.placeholder(getattr(lib, name), [None, 2], name="q")
            out = lib.identity(p, name="out")
            assert (p.dtype.name, p.shape.as_list(), out.dtype.name) == (name, [None, 2], name)
            with lib.Session() as sess:
                results.append(sess.run(out, {p: values}))
    np.testing.assert_array_equal(results[0], results[1])
    assert results[0].dtype == results[1].dtype == width


@pytest.mark.parametrize("name", ["resource", "variant"])
def test_resource_and_variant_placeholders(tf1, name):
    ours, theirs = getattr(tf, name), getattr(tf1, name)
    assert [ours.name, ours.size, ours.as_datatype_enum] == [
        theirs.name,
        theirs.size,
        theirs.as_datatype_enum,
    ]
    assert not (ours.is_floating or ours.is_integer or ours.is_quantized)
    for lib in (tf, tf1):
        with lib.Graph().as_default():
            p = lib.placeholder(getattr(lib, name), name="h")
            assert (p.dtype.name, p.op.type, p.name) == (name, "Placeholder", "h:0")
    assert tf.as_dtype(name) is ours


def test_bfloat16_dtype_facts(tf1):
    pytest.importorskip("ml_dtypes")
    assert _facts(tf.bfloat16) == _facts(tf1.bfloat16)
    assert (tf.bfloat16.min, tf.bfloat16.max) == (tf1.bfloat16.min, tf1.bfloat16.max)
    assert tf.as_dtype(tf1.bfloat16.as_numpy_dtype) is tf.as_dtype("bfloat16") is tf.bfloat16


def _bfloat16_values(lib):
    x = np.array([1.0, 3.14159, -2.5e-3, 65504.0, 1e30], np.float32)
    with lib.Graph().as_default():
        p = lib.placeholder(lib.bfloat16, [5])
        fed = lib.identity(p)
        cast = lib.to_bfloat16(lib.constant(x))
        named = lib.to_bfloat16(lib.constant([1, 2, 300]), name="ints")
        summed = lib.add(cast, lib.to_bfloat16(lib.constant(np.ones(5, np.float32))))
        facts = [
            cast.op.type,
            cast.op.name,
            named.name,
            cast.dtype.name,
            summed.dtype.name,
            cast.shape.as_list(),
        ]
        with lib.Session() as sess:
            return facts, sess.run([fed, cast, named, summed], {p: x})


def test_to_bfloat16_and_bfloat16_placeholders_as_tf(tf1):
    pytest.importorskip("ml_dtypes")
    ours, theirs = _bfloat16_values(tf), _bfloat16_values(tf1)
    assert ours[0] == theirs[0] == ["Cast", "ToBFloat16", "ints:0", "bfloat16", "bfloat16", [5]]
    for a, b in zip(ours[1], theirs[1]):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a.astype(np.float32), b.astype(np.float32))
