"""`tf.register_tensor_conversion_function`, `tf.convert_to_tensor_or_indexed_slices`,
`tf.convert_to_tensor_or_sparse_tensor` and `tf.OpError`, each program under both libraries."""

import numpy as np
import pytest

import nbdist as tf


class Celsius:
    def __init__(self, degrees):
        self.degrees = degrees


def test_a_registered_type_converts_wherever_a_tensor_is_expected(tf1):
    for lib in (tf, tf1):
        lib.register_tensor_conversion_function(
            Celsius,
            lambda value, dtype=None, name=None, as_ref=False, t=lib: t.constant(value.degrees, dtype=dtype),
        )
        with lib.Graph().as_default(), lib.Session() as sess:
            assert sess.run(lib.add(Celsius(20.0), 1.5)) == 21.5
            assert sess.run(lib.reduce_sum(Celsius([1, 2, 3]))) == 6
        with pytest.raises(TypeError, match=r"Cannot register conversions for Python numeric types"):
            lib.register_tensor_conversion_function(float, lambda v, dtype=None, name=None, as_ref=False: v)


def test_indexed_slices_and_sparse_tensors_pass_through(tf1):
    for lib in (tf, tf1):
        with lib.Graph().as_default():
            x = lib.Variable(np.ones((4, 2), np.float32))
            (grad,) = lib.gradients(lib.reduce_sum(lib.gather(x, [0, 2])), [x])
            assert lib.convert_to_tensor_or_indexed_slices(grad) is grad
            dense = lib.convert_to_tensor_or_indexed_slices([1.0, 2.0], dtype=lib.float32)
            assert dense.dtype == lib.float32 and dense.shape.as_list() == [2]
            value = lib.SparseTensorValue([[0, 1]], [5.0], [2, 2])
            sparse = lib.convert_to_tensor_or_sparse_tensor(value)
            assert isinstance(sparse, lib.SparseTensor) and sparse.dtype == lib.float32
            assert lib.convert_to_tensor_or_sparse_tensor(sparse) is sparse
            with pytest.raises(
                RuntimeError, match=r"Sparse dtype mismatch\. Requested: int32,  Actual: float32"
            ):
                lib.convert_to_tensor_or_sparse_tensor(sparse, dtype=lib.int32)
            with lib.Session() as sess:
                np.testing.assert_array_equal(sess.run(lib.sparse_tensor_to_dense(sparse)), [[0, 5], [0, 0]])


def test_op_error_is_the_base_of_run_time_errors(tf1):
    for lib in (tf, tf1):
        assert issubclass(lib.errors.InvalidArgumentError, lib.OpError)
        with lib.Graph().as_default(), lib.Session() as sess, pytest.raises(lib.OpError):
            sess.run(lib.placeholder(lib.float32))
