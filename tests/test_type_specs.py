"""TF's type specs against real TF: `tf.TensorSpec`, `tf.SparseTensorSpec`, `tf.IndexedSlicesSpec`,
`tf.TypeSpec` and `tf.type_spec_from_value` - reprs, equality, compatibility, the most specific
compatible spec and TF's errors, each case run under both libraries."""

import re

import numpy as np
import pytest

import nbdist as tf

SPEC = ([2, None], "float32", "x")


def _spec(t):
    return t.TensorSpec(SPEC[0], getattr(t, SPEC[1]), name=SPEC[2])


def _sparse(t):
    return t.SparseTensor(indices=[[0, 1]], values=[2.0], dense_shape=[3, 4])


CASES = {
    "repr": lambda t: repr(_spec(t)),
    "repr_scalar_int64": lambda t: repr(t.TensorSpec([], t.int64)),
    "repr_unknown_rank": lambda t: repr(t.TensorSpec(None)),
    "fields": lambda t: (str(_spec(t).shape), _spec(t).dtype.name, _spec(t).name, _spec(t).shape.as_list()),
    "equality": lambda t: (
        _spec(t) == t.TensorSpec([2, None], t.float32, "x"),
        _spec(t) == t.TensorSpec([2, None], t.float32),
        _spec(t) != t.TensorSpec([2, 3]),
        hash(_spec(t)) == hash(t.TensorSpec([2, None], t.float32, "x")),
        len({_spec(t), t.TensorSpec([2, None], t.float32, "x")}),
    ),
    "compatible": lambda t: (
        _spec(t).is_compatible_with(t.placeholder(t.float32, [2, 5])),
        _spec(t).is_compatible_with(t.placeholder(t.int32, [2, 5])),
        _spec(t).is_compatible_with(t.TensorSpec([2, 7])),
        _spec(t).is_compatible_with(t.TensorSpec([3, 7])),
        _spec(t).is_compatible_with(t.TensorSpec(None)),
        _spec(t).is_compatible_with(np.zeros((2, 4), np.float32)),  # not a spec or tensor
        _spec(t).is_compatible_with(t.SparseTensorSpec([2, 4])),
    ),
    "from_tensor": lambda t: repr(t.TensorSpec.from_tensor(t.placeholder(t.float32, [2, 5], name="p"))),
    "from_tensor_named": lambda t: repr(
        t.TensorSpec.from_tensor(t.placeholder(t.int8, [1], name="p"), name="q")
    ),
    "from_spec": lambda t: (
        repr(t.TensorSpec.from_spec(_spec(t), name="z")),
        repr(t.TensorSpec.from_spec(_spec(t))),
    ),
    "most_specific": lambda t: (
        repr(_spec(t).most_specific_compatible_type(t.TensorSpec([2, 4], t.float32, "x"))),
        repr(t.TensorSpec([2, 3]).most_specific_compatible_type(t.TensorSpec([2, 4]))),
        repr(t.TensorSpec([2, 3]).most_specific_compatible_type(t.TensorSpec([2, 3, 1]))),
    ),
    "is_type_spec": lambda t: (
        isinstance(_spec(t), t.TypeSpec),
        isinstance(t.SparseTensorSpec([2]), t.TypeSpec),
        isinstance(t.IndexedSlicesSpec(), t.TypeSpec),
    ),
    "value_types": lambda t: (
        t.TensorSpec([1]).value_type.__name__,
        t.SparseTensorSpec([1]).value_type.__name__,
        t.IndexedSlicesSpec().value_type.__name__,
    ),
    "from_tensor_value": lambda t: repr(t.type_spec_from_value(t.placeholder(t.float32, [2, 5]))),
    "from_numpy": lambda t: repr(t.type_spec_from_value(np.zeros((3,), np.int64))),
    "from_list": lambda t: repr(t.type_spec_from_value([1, 2])),
    "from_float": lambda t: repr(t.type_spec_from_value(1.5)),
    "from_string": lambda t: repr(t.type_spec_from_value("ab")),
    "from_nested_list": lambda t: repr(t.type_spec_from_value([[1.0, 2.0], [3.0, 4.0]])),
    "from_empty": lambda t: repr(t.type_spec_from_value(np.zeros((0, 2), np.float64))),
    "from_sparse": lambda t: repr(t.type_spec_from_value(_sparse(t))),
    "from_sparse_placeholder": lambda t: repr(
        t.type_spec_from_value(t.sparse_placeholder(t.int64, shape=[None, 4]))
    ),
    "sparse_specs": lambda t: (
        repr(t.SparseTensorSpec([2, None], t.int32)),
        repr(t.SparseTensorSpec()),
        str(t.SparseTensorSpec([2]).shape),
        t.SparseTensorSpec([2]).dtype.name,
    ),
    "sparse_from_value": lambda t: (
        repr(t.SparseTensorSpec.from_value(_sparse(t))),
        repr(t.SparseTensorSpec.from_value(t.SparseTensorValue([[0]], [1], [5]))),
    ),
    "sparse_compatible": lambda t: (
        t.SparseTensorSpec([3, None]).is_compatible_with(_sparse(t)),
        t.SparseTensorSpec([4, None]).is_compatible_with(_sparse(t)),
        t.SparseTensorSpec([3, 4]).is_compatible_with(t.SparseTensorSpec([None, 4])),
        t.SparseTensorSpec([3, 4]).is_compatible_with(t.TensorSpec([3, 4])),
        t.SparseTensorSpec([3, 4], t.int32).is_compatible_with(_sparse(t)),
    ),
    "sparse_equality": lambda t: (
        t.SparseTensorSpec([2]) == t.SparseTensorSpec([2]),
        t.SparseTensorSpec([2]) == t.SparseTensorSpec([2], t.int32),
        t.SparseTensorSpec([2]) == t.TensorSpec([2]),
    ),
    "sparse_most_specific": lambda t: repr(
        t.SparseTensorSpec([3, 4]).most_specific_compatible_type(t.SparseTensorSpec([5, 4]))
    ),
    "indexed_slices_specs": lambda t: (
        repr(t.IndexedSlicesSpec([5, 2], t.float32, t.int64, t.int64, [None])),
        repr(t.IndexedSlicesSpec()),
        repr(t.IndexedSlicesSpec([None, 3], t.float64, t.int32, None, [4])),
        t.IndexedSlicesSpec([5, 2]) == t.IndexedSlicesSpec([5, 2]),
        t.IndexedSlicesSpec([5, 2]) == t.IndexedSlicesSpec([5, 2], indices_dtype=t.int32),
    ),
    "none_spec": lambda t: (
        repr(t.NoneTensorSpec()),
        t.NoneTensorSpec() == t.NoneTensorSpec(),
        hash(t.NoneTensorSpec()) == hash(t.NoneTensorSpec()),
        isinstance(t.NoneTensorSpec(), t.TypeSpec),
        t.NoneTensorSpec().is_compatible_with(t.NoneTensorSpec()),
        t.NoneTensorSpec().is_compatible_with(None),
        t.NoneTensorSpec().is_compatible_with(t.TensorSpec([1])),
        t.TensorSpec([1]) == t.NoneTensorSpec(),
        repr(t.type_spec_from_value(None)),
        repr(t.NoneTensorSpec.from_value(None)),
    ),
}


def _normalised(value):
    """TF 1.x prints a shape's dimensions as Dimension(n) (nbdist's shapes are plain, as TF 2's)."""
    return re.sub(r"Dimension\((\w+)\)", r"\1", repr(value))


@pytest.mark.parametrize("case", sorted(CASES))
def test_type_specs_as_tf(tf1, case):
    results = []
    for lib in (tf, tf1):
        with lib.Graph().as_default():
            results.append(_normalised(CASES[case](lib)))
    assert results[0] == results[1]


@pytest.mark.parametrize(
    ("build", "error", "match"),
    [
        (lambda t: t.TensorSpec([2], "nope"), TypeError, "nope"),
        (lambda t: t.TensorSpec("ab"), TypeError, r"Failed to convert '+ab'+ to a shape"),
        (
            lambda t: t.TensorSpec([2, 3]).most_specific_compatible_type(t.TensorSpec([2, 4], t.int32)),
            ValueError,
            r"No TypeSpec is compatible with both TensorSpec\(shape=\(2, 3\), dtype=tf.float32, name=None\) "
            r"and TensorSpec\(shape=\(2, 4\), dtype=tf.int32, name=None\)",
        ),
        (
            lambda t: t.TensorSpec([2]).most_specific_compatible_type(t.SparseTensorSpec([2])),
            ValueError,
            "No TypeSpec is compatible with both",
        ),
        (
            lambda t: t.NoneTensorSpec().most_specific_compatible_type(t.TensorSpec([2])),
            ValueError,
            "No TypeSpec is compatible with both",
        ),
    ],
)
def test_type_spec_errors_as_tf(tf1, build, error, match):
    for lib in (tf, tf1):
        with lib.Graph().as_default(), pytest.raises(error, match=match):
            build(lib)


def test_type_spec_from_value_leaves_the_graph_alone():
    with tf.Graph().as_default() as g:
        assert repr(tf.type_spec_from_value([1, 2])) == "TensorSpec(shape=(2,), dtype=tf.int32, name=None)"
        assert g.get_operations() == []
