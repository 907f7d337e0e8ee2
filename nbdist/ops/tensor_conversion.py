"""TF 1.x's conversion names beside `tf.convert_to_tensor`: `tf.register_tensor_conversion_function`
(a user type usable wherever a tensor is expected), `tf.convert_to_tensor_or_indexed_slices`
and `tf.convert_to_tensor_or_sparse_tensor`."""

import numbers

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.ops import constant_op
from nbdist.ops.indexed_slices import IndexedSlices
from nbdist.ops.sparse_tensor import SparseTensor, SparseTensorValue

__all__ = [
    "convert_to_tensor_or_indexed_slices",
    "convert_to_tensor_or_sparse_tensor",
    "register_tensor_conversion_function",
]


def register_tensor_conversion_function(base_type, conversion_func, priority=100):
    """`tf.register_tensor_conversion_function`: objects of `base_type` (a class or a tuple of
    classes) convert with ``conversion_func(value, dtype=None, name=None, as_ref=False)``
    wherever nbdist expects a tensor. (`priority` is accepted; the first registration that
    matches is used.)

    Raises:
        TypeError: `base_type` is not a class, or is one of Python's or numpy's number or array
            types (TF refuses them too), or `conversion_func` is not callable.
    """
    types = base_type if isinstance(base_type, tuple) else (base_type,)
    if not all(isinstance(t, type) for t in types):
        raise TypeError("base_type must be a type or a tuple of types.")
    if any(issubclass(t, (numbers.Number, np.generic, np.ndarray)) for t in types):
        raise TypeError("Cannot register conversions for Python numeric types and NumPy scalars and arrays.")
    if not callable(conversion_func):
        raise TypeError("conversion_func must be callable.")
    constant_op.register_tensor_conversion_function(
        base_type, lambda value, dtype, name: conversion_func(value, dtype=dtype, name=name, as_ref=False)
    )


def convert_to_tensor_or_indexed_slices(value, dtype=None, name=None):
    """`tf.convert_to_tensor_or_indexed_slices`: an `IndexedSlices` as it is, anything else
    through `convert_to_tensor`.

    Raises:
        ValueError: an `IndexedSlices` of another dtype than `dtype`.
    """
    if isinstance(value, IndexedSlices):
        if dtype is not None and not _dtypes.as_dtype(dtype).is_compatible_with(value.dtype):
            raise ValueError(
                f"Tensor conversion requested dtype {_dtypes.as_dtype(dtype).name} for Tensor with dtype "
                f"{value.dtype.name}: {value!r}"
            )
        return value
    return constant_op.convert_to_tensor(value, dtype=dtype, name=name)


def convert_to_tensor_or_sparse_tensor(value, dtype=None, name=None):
    """`tf.convert_to_tensor_or_sparse_tensor`: a `SparseTensor` as it is, a `SparseTensorValue`
    as a `SparseTensor`, anything else through `convert_to_tensor`.

    Raises:
        RuntimeError: a sparse value of another dtype than `dtype` (TF's error).
    """
    if isinstance(value, SparseTensorValue):
        value = SparseTensor(value.indices, value.values, value.dense_shape)
    if isinstance(value, SparseTensor):
        wanted = None if dtype is None else _dtypes.as_dtype(dtype)
        if wanted is not None and not wanted.is_compatible_with(value.dtype):
            actual = value.dtype.name
            raise RuntimeError(f"Sparse dtype mismatch. Requested: {wanted.name},  Actual: {actual}")
        return value
    return constant_op.convert_to_tensor(value, dtype=dtype, name=name)
