"""`tf.constant` and `convert_to_tensor`: turning Python values into graph tensors."""

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import Tensor, get_default_graph
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry

_CONVERSIONS = []  # (type, fn(value, dtype, name) -> Tensor), e.g. Variable


def register_tensor_conversion_function(base_type, conversion_func):
    """Lets objects of `base_type` (e.g. `Variable`) be used where a Tensor is expected."""
    _CONVERSIONS.append((base_type, conversion_func))


def _to_numpy(value, dtype):
    if dtype is not None:
        dtype = _dtypes.as_dtype(dtype)
    if (
        dtype is _dtypes.string
        or isinstance(value, (bytes, str))
        or (isinstance(value, (list, tuple, np.ndarray)) and _is_string_like(value))
    ):
        arr = np.array(value, dtype=object)
        if dtype is not None:
            _check_elements(arr, (bytes, str) if dtype is _dtypes.string else _NUMBERS, dtype.name)
        arr = (
            np.vectorize(lambda s: s.encode() if isinstance(s, str) else s, otypes=[object])(arr)
            if arr.size
            else arr
        )
        return arr, _dtypes.string
    arr = np.asarray(value)
    if dtype is None and arr.dtype == object:  # (TF's error: not a number, bool or string)
        raise TypeError(
            f"Failed to convert elements of {value!r} to Tensor: they are not numbers, bools or "
            "strings; convert them first (a tf.Dimension: tf.dimension_value(d))"
        )
    if dtype is None:
        # TF's defaults: Python floats -> float32, Python ints -> int32 (int64 when one does not fit).
        if (
            arr.dtype == np.float64
            and not isinstance(value, np.ndarray)
            and not isinstance(value, np.floating)
        ):
            arr = arr.astype(np.float32)
        elif (
            arr.dtype == np.int64
            and not isinstance(value, np.ndarray)
            and not isinstance(value, np.integer)
            and (arr.size == 0 or (arr.min() >= -(2**31) and arr.max() < 2**31))
        ):
            arr = arr.astype(np.int32)
        dtype = _dtypes.dtype_of_value(arr)
    else:
        if arr.dtype.kind in "OUS":  # (TF's error: a str where a number or bool is expected)
            _check_elements(np.array(value, dtype=object), _NUMBERS, dtype.name)
        cast = arr.astype(dtype.np)
        if arr.dtype.kind == "f" and dtype.is_integer and not np.array_equal(cast, arr):
            raise TypeError(f"expected {dtype.name}, got {value!r} of type float (would truncate)")
        arr = cast
    return arr, dtype


_NUMBERS = (bool, int, float, complex, np.generic)


def _check_elements(arr, types, expected):
    """TF's TypeError for the first element of `arr` that is not one of `types`."""
    for element in arr.ravel():
        if not isinstance(element, types) or (expected == "string" and isinstance(element, bool)):
            raise TypeError(f"Expected {expected}, but got {element} of type '{type(element).__name__}'.")
        if expected != "string" and isinstance(element, (bytes, str)):
            raise TypeError(f"Expected {expected}, but got {element} of type '{type(element).__name__}'.")


def _is_string_like(value):
    flat = np.asarray(value, dtype=object).ravel()
    return flat.size > 0 and isinstance(flat[0], (bytes, str))


@registry.shape("Const")
def _const_shape(inputs, attrs):
    return [(attrs["dtype"], TensorShape(attrs["value"].shape))]


@registry.kernel("Const")
def _const_kernel(ctx, node):
    return node.attr["value"]


registry.no_gradient("Const")


def constant(value, dtype=None, shape=None, name="Const", verify_shape=False):
    """`tf.constant`: a tensor whose value is recorded in the graph.

    Args:
        value: a number, bytes/str, nested list or numpy array.
        dtype: the element type (default inferred; Python floats -> float32).
        shape: optional shape; a scalar value is broadcast to it.
    """
    arr, dt = _to_numpy(value, dtype)
    if shape is not None:
        shape = tuple(shape)
        if arr.shape != shape:
            if verify_shape or (arr.size not in (1, int(np.prod(shape)))):
                raise TypeError(f"tf.constant: value of shape {arr.shape} does not fit shape {shape}")
            arr = np.broadcast_to(arr, shape).copy() if arr.size == 1 else arr.reshape(shape)
    arr.setflags(write=False)
    op = registry.make_op("Const", [], {"value": arr, "dtype": dt}, name=name, graph=get_default_graph())
    return op.outputs[0]


def convert_to_tensor(value, dtype=None, name=None, preferred_dtype=None):
    """Returns `value` as a Tensor: Tensors pass through, variables convert, others become constants.

    Raises:
        ValueError: if a Tensor's dtype differs from the requested one.
    """
    for base, fn in _CONVERSIONS:
        if isinstance(value, base):
            value = fn(value, dtype, name)
            break
    if isinstance(value, (list, tuple)) and _holds_tensors(value):
        return _autopack(value, dtype and _dtypes.as_dtype(dtype), name or "packed")
    if isinstance(value, Tensor):
        if dtype is not None and value.dtype != _dtypes.as_dtype(dtype):
            raise ValueError(
                f"tensor {value.name} has dtype {value.dtype.name}, but {_dtypes.as_dtype(dtype).name} "
                "was requested; insert tf.cast() to convert"
            )
        return value
    if dtype is None and preferred_dtype is not None:
        try:
            return constant(value, dtype=preferred_dtype, name=name or "Const")
        except (TypeError, ValueError):
            pass
    return constant(value, dtype=dtype, name=name or "Const")


def _is_tensor_like(value):
    return isinstance(value, Tensor) or any(isinstance(value, base) for base, _ in _CONVERSIONS)


def _holds_tensors(values):
    return any(_is_tensor_like(v) or (isinstance(v, (list, tuple)) and _holds_tensors(v)) for v in values)


def _autopack(values, dtype, name):
    """A (nested) list holding tensors, as one tensor: TF's auto-packing (``tf.reduce_sum([a, b])``).

    Each level becomes a `Pack` op (in name scope `name`, nested levels in scopes ``0``,
    ``1``, ...); plain values beside the tensors become constants of the tensors' dtype.

    Raises:
        TypeError: if the tensors' dtypes differ (or differ from `dtype`).
    """
    if dtype is None:
        dtype = _first_tensor_dtype(values)
    with get_default_graph().name_scope(name) as scope:
        elems = []
        for i, v in enumerate(values):
            if _is_tensor_like(v):
                v = convert_to_tensor(v)
                if v.dtype != dtype:
                    raise TypeError(
                        f"Cannot convert a list containing a tensor of dtype {v.dtype.name} ({v.name}) "
                        f"to {dtype.name} (Tensor is: {v.name}); tf.cast the elements to one dtype"
                    )
            elif isinstance(v, (list, tuple)) and _holds_tensors(v):
                v = _autopack(v, dtype, str(i))
            else:
                v = constant(v, dtype=dtype, name=str(i))
            elems.append(v)
        return registry.make_op("Pack", elems, {"axis": 0, "N": len(elems)}, name=scope).outputs[0]


def _first_tensor_dtype(values):
    for v in values:
        if _is_tensor_like(v):
            return convert_to_tensor(v).dtype
        if isinstance(v, (list, tuple)) and _holds_tensors(v):
            return _first_tensor_dtype(v)
    return None


def convert_n(values, dtype=None):
    """Converts several values; bare Python numbers take the dtype of the first Tensor
    (or variable), else of the first numpy array, as TF does (``tf.pow(x64, 1.5)``)."""
    if dtype is None:
        for v in values:
            if isinstance(v, Tensor) or any(isinstance(v, b) for b, _ in _CONVERSIONS):
                dtype = convert_to_tensor(v).dtype
                break
    if dtype is None:
        for v in values:
            if isinstance(v, (np.ndarray, np.generic)) and v.dtype.kind in "biuf":
                dtype = _dtypes.as_dtype(v.dtype)
                break
    return [convert_to_tensor(v, preferred_dtype=dtype) if not isinstance(v, Tensor) else v for v in values]
