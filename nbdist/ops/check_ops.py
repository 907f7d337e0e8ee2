"""TF 1.x's graph asserts (`tf.assert_equal`, `tf.assert_rank`, ..., TF's ``check_ops.py``).

Each builds what TF's Python builds: when both sides are known while building (constants,
the shape of a fully defined tensor) a failed check raises at once - `InvalidArgumentError`
for a value, `ValueError` for a rank, `TypeError` for a dtype - with TF's message; otherwise
it returns an `Assert` op (or a `NoOp` when the check passed statically) that fails the step
with TF's message and data. Run it before what depends on it::

    with tf.control_dependencies([tf.assert_positive(x)]):
        y = tf.log(x)
"""

import numpy as np

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import Tensor, name_scope
from nbdist.ops import math_ops, reduction_ops, shape_ops, state_ops
from nbdist.ops.concat_slice_ops import stack
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.control_flow_ops import Assert, no_op, with_dependencies
from nbdist.ops.sparse_tensor import SparseTensor
from nbdist.ops.unary_ops import abs as _abs

__all__ = [
    "assert_equal",
    "assert_greater",
    "assert_greater_equal",
    "assert_integer",
    "assert_less",
    "assert_less_equal",
    "assert_near",
    "assert_negative",
    "assert_non_negative",
    "assert_non_positive",
    "assert_none_equal",
    "assert_positive",
    "assert_proper_iterable",
    "assert_rank",
    "assert_rank_at_least",
    "assert_rank_in",
    "assert_same_float_dtype",
    "assert_scalar",
    "assert_type",
    "assert_variables_initialized",
    "is_numeric_tensor",
]

_NUMERIC = frozenset(
    _dtypes.as_dtype(t)
    for t in (
        "float16",
        "float32",
        "float64",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "complex64",
        "complex128",
    )
)


def _dtype_str(dtype):
    """A dtype as TF's ``str()`` prints it (``<dtype: 'float32'>``)."""
    return f"<dtype: '{dtype.name}'>"


def _tensor_str(t):
    """A tensor as TF's ``str()`` prints it (``Tensor("a:0", shape=(), dtype=float32)``)."""
    dims = t.shape.as_list() if t.shape.ndims is not None else None
    shape = "<unknown>" if dims is None else f"({', '.join(map(str, dims))}{',' if len(dims) == 1 else ''})"
    return f'Tensor("{t.name}", shape={shape}, dtype={t.dtype.name})'


def _message_prefix(message):
    return f"{message}.  " if message else ""


def _static_string(t):
    if not isinstance(t, Tensor):
        return str(t)
    value = shape_ops.get_static_value(t)
    return _tensor_str(t) if value is None else str(value)


def _assert_static(condition, data):
    """Raises TF's build-time `InvalidArgumentError`: the data, known values printed."""
    if not condition:
        raise errors.InvalidArgumentError(None, None, "\n".join(_static_string(d) for d in data))


def _binary_assert(sym, opname, op_func, static_func, x, y, data, summarize, message, name):
    with name_scope(name, opname, [x, y]):
        x = convert_to_tensor(x, name="x")
        y = convert_to_tensor(y, name="y")
        if data is None:
            data = [
                f"Condition x {sym} y did not hold element-wise:",
                f"x ({x.name}) = ",
                x,
                f"y ({y.name}) = ",
                y,
            ]
        if message is not None:
            data = [message, *data]
        condition = reduction_ops.reduce_all(op_func(x, y))
        x_static, y_static = shape_ops.get_static_value(x), shape_ops.get_static_value(y)
        if x_static is not None and y_static is not None:
            _assert_static(np.all(static_func(x_static, y_static)), data)
        return Assert(condition, data, summarize=summarize)


def assert_equal(x, y, data=None, summarize=None, message=None, name=None):
    """`tf.assert_equal`: `x == y` element-wise (broadcast); an op raising `InvalidArgumentError`.

    Raises:
        InvalidArgumentError: at once when `x` and `y` are known while building and differ.
    """
    with name_scope(name, "assert_equal", [x, y]):  # (TF opens it twice: its second is _1)
        if x is y:
            return no_op()
    return _binary_assert(
        "==", "assert_equal", math_ops.equal, np.equal, x, y, data, summarize, message, name
    )


def assert_none_equal(x, y, data=None, summarize=None, message=None, name=None):
    """`tf.assert_none_equal`: `x != y` element-wise."""
    return _binary_assert(
        "!=", "assert_none_equal", math_ops.not_equal, np.not_equal, x, y, data, summarize, message, name
    )


def assert_less(x, y, data=None, summarize=None, message=None, name=None):
    """`tf.assert_less`: `x < y` element-wise."""
    return _binary_assert("<", "assert_less", math_ops.less, np.less, x, y, data, summarize, message, name)


def assert_less_equal(x, y, data=None, summarize=None, message=None, name=None):
    """`tf.assert_less_equal`: `x <= y` element-wise."""
    return _binary_assert(
        "<=", "assert_less_equal", math_ops.less_equal, np.less_equal, x, y, data, summarize, message, name
    )


def assert_greater(x, y, data=None, summarize=None, message=None, name=None):
    """`tf.assert_greater`: `x > y` element-wise."""
    return _binary_assert(
        ">", "assert_greater", math_ops.greater, np.greater, x, y, data, summarize, message, name
    )


def assert_greater_equal(x, y, data=None, summarize=None, message=None, name=None):
    """`tf.assert_greater_equal`: `x >= y` element-wise."""
    return _binary_assert(
        ">=",
        "assert_greater_equal",
        math_ops.greater_equal,
        np.greater_equal,
        x,
        y,
        data,
        summarize,
        message,
        name,
    )


def _sign_assert(x, data, summarize, message, name, opname, condition, compare):
    """`x` against 0 (``compare(x, zero)`` must hold), with TF's default data."""
    message = _message_prefix(message)
    with name_scope(name, opname, [x]):
        x = convert_to_tensor(x, name="x")
        if data is None:
            # (TF's assert_non_positive joins its two strings: the same message here.)
            lines = [f"Condition {condition} did not hold element-wise:", f"x ({x.name}) = "]
            lines = ["".join(lines)] if opname == "assert_non_positive" else lines
            data = [message, *lines, x]
        zero = convert_to_tensor(0, dtype=x.dtype)
        return compare(x, zero, data=data, summarize=summarize)


def assert_negative(x, data=None, summarize=None, message=None, name=None):
    """`tf.assert_negative`: `x < 0` element-wise."""
    return _sign_assert(x, data, summarize, message, name, "assert_negative", "x < 0", assert_less)


def assert_positive(x, data=None, summarize=None, message=None, name=None):
    """`tf.assert_positive`: `x > 0` element-wise."""
    compare = lambda x, zero, **kw: assert_less(zero, x, **kw)  # noqa: E731 - TF's order: 0 < x
    return _sign_assert(x, data, summarize, message, name, "assert_positive", "x > 0", compare)


def assert_non_negative(x, data=None, summarize=None, message=None, name=None):
    """`tf.assert_non_negative`: `x >= 0` element-wise."""
    compare = lambda x, zero, **kw: assert_less_equal(zero, x, **kw)  # noqa: E731 - TF's order: 0 <= x
    return _sign_assert(x, data, summarize, message, name, "assert_non_negative", "x >= 0", compare)


def assert_non_positive(x, data=None, summarize=None, message=None, name=None):
    """`tf.assert_non_positive`: `x <= 0` element-wise."""
    return _sign_assert(x, data, summarize, message, name, "assert_non_positive", "x <= 0", assert_less_equal)


def assert_near(x, y, rtol=None, atol=None, data=None, summarize=None, message=None, name=None):
    """`tf.assert_near`: ``|x - y| < atol + rtol * |y|`` element-wise (default tolerances
    ``10 * eps`` of the dtype). No build-time check, as in TF."""
    message = _message_prefix(message)
    with name_scope(name, "assert_near", [x, y]):
        x = convert_to_tensor(x, name="x")
        y = convert_to_tensor(y, name="y", dtype=x.dtype)
        dtype = x.dtype.real_dtype if x.dtype.is_complex else x.dtype
        eps = np.finfo(dtype.np).eps
        rtol = convert_to_tensor(10 * eps if rtol is None else rtol, name="rtol", dtype=dtype)
        atol = convert_to_tensor(10 * eps if atol is None else atol, name="atol", dtype=dtype)
        if data is None:
            data = [
                message,
                f"x and y not equal to tolerance rtol = {_tensor_str(rtol)}, atol = {_tensor_str(atol)}",
                f"x ({x.name}) = ",
                x,
                f"y ({y.name}) = ",
                y,
            ]
        tol = atol + rtol * _abs(y)
        condition = reduction_ops.reduce_all(math_ops.less(_abs(x - y), tol))
        return Assert(condition, data, summarize=summarize)


# -- ranks ------------------------------------------------------------------------------------
def _rank_condition(x, ranks, static_condition, dynamic_condition, data, summarize):
    """An `Assert` of `x`'s rank against `ranks` (scalar int32 tensors), or a `NoOp` when it
    holds statically; ``ValueError("Static rank condition failed", rank, ranks)`` when not."""
    for r in ranks:
        assert_type(r, _dtypes.int32)
    static = [shape_ops.get_static_value(r) for r in ranks]
    if all(s is not None for s in static):
        if any(s.ndim != 0 for s in static):
            raise ValueError("Rank must be a scalar.")
        x_rank = x.shape.ndims
        if x_rank is not None:
            if not static_condition(x_rank, static):
                raise ValueError("Static rank condition failed", x_rank, static)
            return no_op(name="static_checks_determined_all_ok")
    condition = dynamic_condition(shape_ops.rank(x), ranks)
    for r, s in zip(ranks, static):
        if s is None:  # assert_rank(x, [n]) instead of assert_rank(x, n) fails
            check = assert_rank(r, 0, data=["Rank must be a scalar. Received rank: ", r])
            condition = with_dependencies([check], condition)
    return Assert(condition, data, summarize=summarize)


def _rank_assert(x, ranks, data, summarize, message, name, opname, phrase, static_condition, dynamic):
    with name_scope(name, opname, [x]):
        if not isinstance(x, SparseTensor):
            x = convert_to_tensor(x, name="x")
        ranks = [convert_to_tensor(r, name="rank") for r in ranks]
        message = _message_prefix(message)
        x_name = "" if isinstance(x, SparseTensor) else x.name
        if data is None:
            data = [
                message,
                f"Tensor {x_name} must have {phrase}",
                *ranks,
                "Received shape: ",
                shape_ops.shape(x),
            ]
        try:
            return _rank_condition(x, ranks, static_condition, dynamic, data, summarize)
        except ValueError as e:
            if e.args[0] != "Static rank condition failed":
                raise
            wanted = e.args[2]
            wanted = f"{int(wanted[0])}" if opname != "assert_rank_in" else str(tuple(int(r) for r in wanted))
            raise ValueError(
                f"{message}Tensor {x_name} must have {phrase} {wanted}.  "
                f"Received rank {e.args[1]}, shape {x.shape}"
            ) from None


def assert_rank(x, rank, data=None, summarize=None, message=None, name=None):
    """`tf.assert_rank`: `x` has rank `rank`.

    Raises:
        ValueError: at once when `x`'s static rank is known and differs.
    """
    return _rank_assert(
        x,
        [rank],
        data,
        summarize,
        message,
        name,
        "assert_rank",
        "rank",
        lambda actual, given: actual == given[0],
        lambda actual, given: math_ops.equal(actual, given[0]),
    )


def assert_rank_at_least(x, rank, data=None, summarize=None, message=None, name=None):
    """`tf.assert_rank_at_least`: `x` has rank `rank` or more."""
    return _rank_assert(
        x,
        [rank],
        data,
        summarize,
        message,
        name,
        "assert_rank_at_least",
        "rank at least",
        lambda actual, given: actual >= given[0],
        lambda actual, given: math_ops.greater_equal(actual, given[0]),
    )


def _dynamic_rank_in(actual, given):
    if not given:
        return convert_to_tensor(False)
    result = math_ops.equal(given[0], actual)
    for r in given[1:]:
        result = math_ops.logical_or(result, math_ops.equal(r, actual))
    return result


def assert_rank_in(x, ranks, data=None, summarize=None, message=None, name=None):
    """`tf.assert_rank_in`: `x`'s rank is one of `ranks`."""
    return _rank_assert(
        x,
        list(ranks),
        data,
        summarize,
        message,
        name,
        "assert_rank_in",
        "rank in",
        lambda actual, given: actual in given,
        _dynamic_rank_in,
    )


# -- static (dtype, shape) checks ------------------------------------------------------------
def assert_integer(x, message=None, name=None):
    """`tf.assert_integer`: a `NoOp` if `x` has an integer dtype.

    Raises:
        TypeError: otherwise (known while building).
    """
    with name_scope(name, "assert_integer", [x]):
        x = convert_to_tensor(x, name="x")
        if not x.dtype.is_integer:
            raise TypeError(
                f'{_message_prefix(message)}Expected "x" to be integer type.  '
                f"Found: {x.name} of dtype {_dtype_str(x.dtype)}"
            )
        return no_op("statically_determined_was_integer")


def assert_type(tensor, tf_type, message=None, name=None):
    """`tf.assert_type`: a `NoOp` if `tensor` (or a `SparseTensor`) has dtype `tf_type`.

    Raises:
        TypeError: otherwise, naming the tensor and both dtypes.
    """
    tf_type = _dtypes.as_dtype(tf_type)
    with name_scope(name, "assert_type", [tensor]):
        if not isinstance(tensor, SparseTensor):
            tensor = convert_to_tensor(tensor, name="tensor")
        if tensor.dtype != tf_type:
            tensor_name = getattr(tensor, "name", "tensor")
            raise TypeError(
                f"{_message_prefix(message)}{tensor_name} must be of type {tf_type!r}; got {tensor.dtype!r}"
            )
        return no_op("statically_determined_correct_type")


def assert_scalar(tensor, name=None, message=None):
    """`tf.assert_scalar`: `tensor` itself (converted) if its static shape is a scalar's.

    Raises:
        ValueError: a non-scalar or unknown shape.
    """
    with name_scope(name, "assert_scalar", [tensor]) as scope:
        tensor = convert_to_tensor(tensor, name=scope)
        if tensor.shape.ndims != 0:
            raise ValueError(
                f"{_message_prefix(message)}Expected scalar shape for {tensor.name}, "
                f"saw shape: {tensor.shape}."
            )
        return tensor


def assert_proper_iterable(values):
    """`tf.assert_proper_iterable`: `values` is an iterable other than a tensor, array or string.

    Raises:
        TypeError: a `Tensor`, `SparseTensor`, `np.ndarray`, bytes or str, or no iterable.
    """
    if isinstance(values, (Tensor, SparseTensor, np.ndarray, bytes, str)):
        raise TypeError(f'Expected argument "values" to be a "proper" iterable.  Found: {type(values)}')
    if not hasattr(values, "__iter__"):
        raise TypeError(f'Expected argument "values" to be iterable.  Found: {type(values)}')


def assert_same_float_dtype(tensors=None, dtype=None):
    """`tf.assert_same_float_dtype`: the one float dtype of `tensors` (and `dtype`), else float32.

    Raises:
        ValueError: tensors of different dtypes, or a non-float one.
    """
    if tensors:
        dtype = _same_base_type(tensors, dtype and _dtypes.as_dtype(dtype))
    if not dtype:
        return _dtypes.float32
    dtype = _dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise ValueError(f"Expected floating point type, got {_dtype_str(dtype)}.")
    return dtype


def _same_base_type(items, expected):
    first_name = None
    for item in items:
        if item is None:
            continue
        item_type = item.dtype.base_dtype
        if not expected:
            expected, first_name = item_type, getattr(item, "name", str(item))
        elif expected != item_type:
            as_first = f" as {first_name}" if first_name else ""
            raise ValueError(
                f"{getattr(item, 'name', str(item))}, type={_dtype_str(item_type)}, must be of the same "
                f"type ({_dtype_str(expected)}){as_first}."
            )
    return expected


def assert_variables_initialized(var_list=None):
    """`tf.assert_variables_initialized`: an op that fails with `FailedPreconditionError` when
    one of `var_list` (default: the global and local variables) is uninitialized; None when
    there are none. It reads each variable (a `Rank` of it), as TF's does."""
    if var_list is None:
        var_list = state_ops.global_variables() + state_ops.local_variables()
    if not var_list:
        return None
    ranks = [shape_ops.rank(v.value() if hasattr(v, "value") else v) for v in var_list]
    return ranks[0] if len(ranks) == 1 else stack(ranks)


def is_numeric_tensor(tensor):
    """`tf.is_numeric_tensor`: a `Tensor` whose dtype is a number type (not bool or string)."""
    return isinstance(tensor, Tensor) and tensor.dtype in _NUMERIC
