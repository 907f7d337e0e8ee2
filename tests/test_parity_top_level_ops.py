"""Top-level `tf.*` ops that nbdist had but no test called (comparisons, logical ops, rounding,
casts, segment means, sparse helpers, `strided_slice`, ...), each spelled as a TF 1.x program
spells it (``t.less``) and run with both libraries on the same inputs: values, dtypes, static
shapes, and TF's errors for bad input.
"""

import numpy as np
import pytest

import nbdist as tf

_RNG = np.random.default_rng(320)
X = _RNG.standard_normal((3, 4))
Y = _RNG.standard_normal((3, 4))
ROW = _RNG.standard_normal(4)
INTS = np.array([[7, -7, 3, 0], [-3, 5, -9, 4]], np.int32)
DIVS = np.array([2, 3, -4, 5], np.int32)
HALVES = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.7, -3.2, 0.0])
SPECIAL = np.array([0.0, -1.5, np.inf, -np.inf, np.nan])
BOOLS_A = np.array([True, True, False, False])
BOOLS_B = np.array([True, False, True, False])
CUBE = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


def _parts(sp):
    """A SparseTensor's (or IndexedSlices') tensors, to fetch."""
    if hasattr(sp, "dense_shape") and hasattr(sp, "values") and hasattr(sp, "indices"):
        return (sp.indices, sp.values) + ((sp.dense_shape,) if sp.dense_shape is not None else ())
    raise TypeError(type(sp))


def _sparse(t, values=(1.0, 5.0, -2.0), shape=(3, 4)):
    return t.SparseTensor([[0, 1], [1, 3], [2, 0]], t.constant(np.array(values)), shape)


OPS = {
    "accumulate_n": lambda t: t.accumulate_n([t.constant(X), t.constant(Y), t.constant(X)]),
    "accumulate_n_shape": lambda t: t.accumulate_n([t.constant(X)], shape=[3, 4], tensor_dtype=t.float64),
    "bincount": lambda t: t.bincount(t.constant([1, 1, 4, 0, 1], t.int32)),
    "bincount_weights": lambda t: t.bincount(
        t.constant([1, 1, 4, 0]), weights=t.constant([0.5, 1.0, 2.0, 3.0]), minlength=7, dtype=t.float32
    ),
    "bincount_maxlength": lambda t: t.bincount(t.constant([1, 1, 4, 0, 3]), maxlength=3),
    "bincount_empty": lambda t: t.bincount(t.constant([], t.int32)),
    "confusion_matrix": lambda t: t.confusion_matrix([1, 2, 4, 0, 2], [2, 2, 4, 1, 2]),
    "confusion_matrix_weights": lambda t: t.confusion_matrix(
        [1, 2, 0], [1, 0, 0], num_classes=4, weights=[1.5, 2.0, 3.0], dtype=t.float32
    ),
    "count_nonzero": lambda t: t.count_nonzero(t.constant(INTS)),
    "count_nonzero_axis": lambda t: t.count_nonzero(t.constant(INTS), axis=-1, keepdims=True, dtype=t.int32),
    "count_nonzero_bool": lambda t: t.count_nonzero(t.constant(BOOLS_A)),
    "count_nonzero_strings": lambda t: t.count_nonzero(t.constant([b"a", b"", b"bc"])),
    "decode_raw": lambda t: t.decode_raw(t.constant([b"\x01\x02\x03\x04", b"\xff\x00\x10\x20"]), t.int16),
    "decode_raw_big_endian": lambda t: t.decode_raw(
        t.constant(b"\x01\x02\x03\x04"), t.uint16, little_endian=False
    ),
    "decode_raw_uint8": lambda t: t.decode_raw(t.constant(b"abc"), t.uint8),
    "greater_equal": lambda t: t.greater_equal(t.constant(X), t.constant(ROW)),
    "greater_equal_int": lambda t: t.greater_equal(t.constant(INTS), 3),
    "less": lambda t: t.less(t.constant(X), t.constant(Y)),
    "less_int": lambda t: t.less(t.constant(INTS), t.constant(DIVS)),
    "less_equal": lambda t: t.less_equal(t.constant(X), t.constant(ROW)),
    "less_equal_empty": lambda t: t.less_equal(t.zeros([0, 4]), t.constant(ROW, t.float32)),
    "is_finite": lambda t: t.is_finite(t.constant(SPECIAL)),
    "is_inf": lambda t: t.is_inf(t.constant(SPECIAL, t.float32)),
    "is_nan": lambda t: t.is_nan(t.constant(SPECIAL)),
    "is_non_decreasing": lambda t: (
        t.is_non_decreasing(t.constant([1, 2, 2, 5])),
        t.is_non_decreasing(t.constant([[1.0, 2.0], [1.5, 3.0]])),
        t.is_non_decreasing(t.constant([], t.float32)),
        t.is_non_decreasing(t.constant(4)),
    ),
    "is_strictly_increasing": lambda t: (
        t.is_strictly_increasing(t.constant([1, 2, 2, 5])),
        t.is_strictly_increasing(t.constant([[1.0, 2.0], [2.5, 3.0]])),
        t.is_strictly_increasing(t.constant([], t.int64)),
    ),
    "log_sigmoid": lambda t: t.log_sigmoid(t.constant(np.concatenate([X.ravel(), [-800.0, 800.0]]))),
    "logical_and": lambda t: t.logical_and(t.constant(BOOLS_A), t.constant(BOOLS_B)),
    "logical_or": lambda t: t.logical_or(t.constant(BOOLS_A), t.constant(BOOLS_B)),
    "logical_xor": lambda t: t.logical_xor(t.constant(BOOLS_A), t.constant(BOOLS_B)),
    "logical_not": lambda t: t.logical_not(t.constant([[True], [False]])),
    "logical_and_broadcast": lambda t: t.logical_and(t.constant([[True], [False]]), t.constant(BOOLS_B)),
    "mod": lambda t: t.mod(t.constant(X), t.constant(Y)),
    "mod_int": lambda t: t.mod(t.constant(INTS), t.constant(DIVS)),
    "reverse_v2": lambda t: t.reverse_v2(t.constant(CUBE), [-1, 0]),
    "reverse_v2_none": lambda t: t.reverse_v2(t.constant(CUBE), t.constant([], t.int32)),
    "rint": lambda t: t.rint(t.constant(HALVES)),
    "round": lambda t: t.round(t.constant(HALVES, t.float32)),
    "round_int": lambda t: t.round(t.constant(INTS)),
    "scalar_mul": lambda t: t.scalar_mul(2.5, t.constant(X)),
    "scalar_mul_tensor": lambda t: t.scalar_mul(t.constant(-3), t.constant(INTS)),
    "sign": lambda t: t.sign(t.constant(SPECIAL[:4])),
    "sign_int": lambda t: t.sign(t.constant(INTS)),
    "strided_slice": lambda t: t.strided_slice(t.constant(CUBE), [0, 2, -1], [2, 0, 0], [1, -1, -2]),
    "strided_slice_masks": lambda t: t.strided_slice(
        t.constant(CUBE), [1, 0, 1], [2, 0, 3], [1, 1, 1], begin_mask=2, end_mask=2, shrink_axis_mask=1
    ),
    "strided_slice_ellipsis": lambda t: t.strided_slice(
        t.constant(CUBE), [0, 1], [0, 3], [1, 1], ellipsis_mask=1, new_axis_mask=0
    ),
    "strided_slice_new_axis": lambda t: t.strided_slice(
        t.constant(CUBE), [0, 1], [0, 2], [1, 1], new_axis_mask=1
    ),
    "to_float": lambda t: t.to_float(t.constant(INTS)),
    "to_double": lambda t: t.to_double(t.constant(INTS)),
    "to_int32": lambda t: t.to_int32(t.constant(HALVES * 3)),
    "to_int64": lambda t: t.to_int64(t.constant(HALVES * 3)),
    "to_complex64": lambda t: t.to_complex64(t.constant(X)),
    "to_complex128": lambda t: t.to_complex128(t.constant(INTS, t.float32)),
    "tuple": lambda t: t.tuple([t.constant(X), t.constant(INTS)]),
    "unsorted_segment_mean": lambda t: t.unsorted_segment_mean(t.constant(X), [2, 0, 2], 4),
    "unsorted_segment_mean_int_ids": lambda t: t.unsorted_segment_mean(
        t.constant(np.arange(8.0)), t.constant([0, -1, 0, 3, 3, 3, -1, 0], t.int64), 5
    ),
    "unsorted_segment_sqrt_n": lambda t: t.unsorted_segment_sqrt_n(t.constant(X), [1, 1, 1], 3),
    "unsorted_segment_sqrt_n_2d_ids": lambda t: t.unsorted_segment_sqrt_n(
        t.constant(X), [[0, 1, 1, 0]] * 3, 2
    ),
    "sparse_tensor_to_dense": lambda t: t.sparse_tensor_to_dense(_sparse(t)),
    "sparse_tensor_to_dense_default": lambda t: t.sparse_tensor_to_dense(_sparse(t), default_value=-1.0),
    "sparse_tensor_to_dense_strings": lambda t: t.sparse_tensor_to_dense(
        t.SparseTensor([[0], [2]], t.constant([b"a", b"b"]), [3])
    ),
    "sparse_reset_shape": lambda t: t.sparse_reset_shape(_sparse(t), [5, 6]).dense_shape,
    "sparse_reset_shape_tight": lambda t: _parts(t.sparse_reset_shape(_sparse(t))),
    "sparse_reduce_max_sparse": lambda t: _parts(t.sparse_reduce_max_sparse(_sparse(t), axis=1)),
    "sparse_reduce_max_sparse_all": lambda t: _parts(
        t.sparse_reduce_max_sparse(_sparse(t), axis=[-1, 0], keepdims=True)
    ),
    "sparse_mask": lambda t: _parts(
        t.sparse_mask(t.IndexedSlices(t.constant(X), t.constant([4, 7, 9])), t.constant([7, 4]))
    ),
}


def _value(lib, build):
    with lib.Graph().as_default(), lib.Session() as sess:
        return sess.run(build(lib))


def _assert_same(ours, theirs, name):
    if isinstance(theirs, (tuple, list)):
        assert len(ours) == len(theirs), name
        for a, b in zip(ours, theirs, strict=True):
            _assert_same(a, b, name)
        return
    if hasattr(theirs, "_fields"):  # a SparseTensorValue
        _assert_same(tuple(ours), tuple(theirs), name)
        return
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert (ours.shape, ours.dtype) == (theirs.shape, theirs.dtype), name
    if theirs.dtype.kind in "OSUb":
        assert ours.tolist() == theirs.tolist(), name
    else:
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-12, err_msg=name)


def _static(lib, build):
    with lib.Graph().as_default():
        out = build(lib)
    out = out if isinstance(out, (tuple, list)) else [out]
    return [(o.dtype.name, o.shape.as_list() if o.shape.ndims is not None else None) for o in out]


@pytest.mark.parametrize("name", sorted(OPS))
def test_top_level_op_matches_tensorflow(tf1, name):
    _assert_same(_value(tf, OPS[name]), _value(tf1, OPS[name]), name)


STATIC = {
    "less": lambda t: t.less(t.placeholder(t.float32, [None, 4]), t.placeholder(t.float32, [3, 1])),
    "logical_not": lambda t: t.logical_not(t.placeholder(t.bool, [2, None])),
    "mod": lambda t: t.mod(t.placeholder(t.int64, [5]), t.constant(3, t.int64)),
    "rint": lambda t: t.rint(t.placeholder(t.float32)),
    "round": lambda t: t.round(t.placeholder(t.float64, [None])),
    "log_sigmoid": lambda t: t.log_sigmoid(t.placeholder(t.float32, [2, None])),
    "count_nonzero": lambda t: t.count_nonzero(t.placeholder(t.float32, [None, 3]), axis=1, keepdims=True),
    "decode_raw": lambda t: t.decode_raw(t.placeholder(t.string, [2, None]), t.float32),
    "reverse_v2": lambda t: t.reverse_v2(t.placeholder(t.int32, [None, 3]), [1]),
    "strided_slice": lambda t: t.strided_slice(
        t.placeholder(t.float32, [None, 6]), [0, 1], [0, 5], [1, 2], begin_mask=1, end_mask=1
    ),
    "to_float": lambda t: t.to_float(t.placeholder(t.int32, [None, 2])),
    "to_complex64": lambda t: t.to_complex64(t.placeholder(t.float32, [3])),
    "sign": lambda t: t.sign(t.placeholder(t.int8, [None])),
    "unsorted_segment_mean": lambda t: t.unsorted_segment_mean(
        t.placeholder(t.float32, [None, 5]), t.placeholder(t.int32, [None]), 4
    ),
    "unsorted_segment_sqrt_n": lambda t: t.unsorted_segment_sqrt_n(
        t.placeholder(t.float64, [4, 2, 5]), t.placeholder(t.int32, [4, 2]), 3
    ),
    "is_finite": lambda t: t.is_finite(t.placeholder(t.float32, [None, 2])),
    "bincount": lambda t: t.bincount(t.placeholder(t.int32, [None])),
    "confusion_matrix": lambda t: t.confusion_matrix(
        t.placeholder(t.int32, [None]), t.placeholder(t.int32, [None]), 3
    ),
    "accumulate_n": lambda t: t.accumulate_n(
        [t.placeholder(t.float32, [None, 2]), t.placeholder(t.float32, [3, None])]
    ),
    "scalar_mul": lambda t: t.scalar_mul(2.0, t.placeholder(t.float32, [None, 2])),
    "tuple": lambda t: t.tuple([t.placeholder(t.float32, [None, 2]), t.placeholder(t.int32)]),
}


@pytest.mark.parametrize("name", sorted(STATIC))
def test_top_level_op_static_dtype_and_shape_match_tensorflow(tf1, name):
    assert _static(tf, STATIC[name]) == _static(tf1, STATIC[name]), name


BAD = {
    "less_mismatched_dtypes": lambda t: t.less(t.constant([1.0]), t.constant([1])),
    "less_unbroadcastable": lambda t: t.less(t.constant(X), t.constant([1.0, 2.0])),
    "logical_and_not_bool": lambda t: t.logical_and(t.constant([1.0]), t.constant([True])),
    "accumulate_n_empty": lambda t: t.accumulate_n([]),
    "accumulate_n_mixed_shapes": lambda t: t.accumulate_n([t.constant(X), t.constant(ROW[:3])]),
    "reverse_v2_axis_out_of_range": lambda t: t.reverse_v2(t.constant(CUBE), [3]),
    "strided_slice_zero_stride": lambda t: t.strided_slice(t.constant(CUBE), [0], [1], [0]),
    "is_nan_of_int": lambda t: t.is_nan(t.constant([1, 2])),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_top_level_op_rejects_what_tensorflow_rejects(tf1, name):
    errors = []
    for lib in (tf1, tf):
        with lib.Graph().as_default(), pytest.raises((TypeError, ValueError)) as info:
            BAD[name](lib)
        errors.append(info.type)
    assert issubclass(errors[1], errors[0]) or issubclass(errors[0], errors[1]), (name, errors)


RUN_ERRORS = {
    "decode_raw_ragged": (
        lambda t: t.decode_raw(t.constant([b"abc", b"ab"]), t.int16),
        "InvalidArgumentError",
        "DecodeRaw",
    ),
    "unsorted_segment_mean_id_too_large": (
        lambda t: t.unsorted_segment_mean(t.constant([1.0, 2.0]), t.constant([0, 5]), 3),
        "InvalidArgumentError",
        "5",
    ),
    "strided_slice_index_out_of_range": (
        lambda t: t.strided_slice(t.constant(np.arange(3)), [5], [6], [1], shrink_axis_mask=1),
        "InvalidArgumentError",
        "out of bounds",
    ),
}


@pytest.mark.parametrize("name", sorted(RUN_ERRORS))
def test_top_level_op_fails_at_run_time_as_tensorflow(tf1, name):
    build, error, match = RUN_ERRORS[name]
    for lib in (tf1, tf):
        with pytest.raises((getattr(lib.errors, error), ValueError), match=match):
            _value(lib, build)
