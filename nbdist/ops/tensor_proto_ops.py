"""`tf.make_tensor_proto`, `tf.make_ndarray`, `tf.serialize_tensor`, `tf.parse_tensor`: arrays as
TF's ``TensorProto`` (tensorboardX's wire-compatible class, `summary_protos`), and back.

    proto = tf.make_tensor_proto([1.0, 2.0])          # dtype DT_FLOAT, tensor_content
    tf.make_ndarray(proto)                            # array([1., 2.], dtype=float32)
    s = tf.serialize_tensor(x)                        # a scalar string tensor: the proto's bytes
    y = tf.parse_tensor(s, tf.float32)                # x again (shape unknown until run)

`make_tensor_proto` writes what TF's does byte for byte: ``tensor_content`` for more than one
number of a dtype TF packs so, else the typed value list (a shorter list than the shape when a
scalar is given a larger `shape`: readers repeat the last value). ``SerializeTensor`` writes
what TF's kernel does: ``tensor_content`` for every number and bool dtype, ``string_val`` for
strings. uint32 and uint64 are left out (their value fields are not in the protobuf class).
"""

import numpy as np

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry, summary_protos
from nbdist.ops.constant_op import convert_to_tensor

__all__ = ["make_ndarray", "make_tensor_proto", "parse_tensor", "serialize_tensor"]

_ENUM_NAMES = {
    "float16": "DT_HALF",
    "float32": "DT_FLOAT",
    "float64": "DT_DOUBLE",
    "int8": "DT_INT8",
    "int16": "DT_INT16",
    "int32": "DT_INT32",
    "int64": "DT_INT64",
    "uint8": "DT_UINT8",
    "uint16": "DT_UINT16",
    "bool": "DT_BOOL",
    "string": "DT_STRING",
    "complex64": "DT_COMPLEX64",
    "complex128": "DT_COMPLEX128",
}
# The value list of each dtype (tensor.proto), and the dtypes TF packs as tensor_content.
_FIELDS = {
    "float16": "half_val",
    "float32": "float_val",
    "float64": "double_val",
    "int8": "int_val",
    "int16": "int_val",
    "int32": "int_val",
    "uint8": "int_val",
    "uint16": "int_val",
    "int64": "int64_val",
    "bool": "bool_val",
    "string": "string_val",
    "complex64": "scomplex_val",
    "complex128": "dcomplex_val",
}
_CONTENT_DTYPES = frozenset({"float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8"})


def _enum(dtype, pb):
    name = _ENUM_NAMES.get(dtype.name)
    if name is None:
        raise TypeError(
            f"{dtype.name} tensors cannot be written as a TensorProto by nbdist; it has {sorted(_ENUM_NAMES)}"
        )
    return getattr(pb.DataType, name)


def _dtype_of_enum(enum, pb):
    for name, enum_name in _ENUM_NAMES.items():
        if getattr(pb.DataType, enum_name) == enum:
            return _dtypes.as_dtype(name)
    raise TypeError(
        f"TensorProto dtype enum {enum} has no nbdist counterpart; nbdist reads {sorted(_ENUM_NAMES)}"
    )


def _as_array(values, dtype):
    """`values` as a numpy array of TF's dtype for them (Python floats -> float32, ints -> int32)."""
    flat = np.asarray(values, dtype=object).ravel() if not isinstance(values, np.ndarray) else None
    is_string = dtype is _dtypes.string or (
        dtype is None
        and (values.dtype.kind in "SUO" if flat is None else flat.size and isinstance(flat[0], (bytes, str)))
    )
    if is_string:
        array = np.array(values, dtype=object)
        out = np.empty(array.shape, object)
        out.ravel()[:] = [v.encode() if isinstance(v, str) else bytes(v) for v in array.ravel()]
        return out, _dtypes.string
    if dtype is not None:
        for v in flat if flat is not None else ():
            if isinstance(v, (bytes, str)) or (isinstance(v, float) and dtype.is_integer and v != int(v)):
                raise TypeError(f"Expected {dtype.name}, but got {v} of type '{type(v).__name__}'.")
        return np.array(values, dtype=dtype.np), dtype
    array = np.array(values)
    if flat is not None and not isinstance(values, np.generic):  # Python numbers: TF's defaults
        if array.dtype == np.float64:
            array = array.astype(np.float32)
        elif array.dtype == np.int64 and np.all(np.abs(array) < 2**31):
            array = array.astype(np.int32)
    return array, _dtypes.as_dtype(array.dtype)


def _shape_proto(dims, pb):
    return pb.TensorShapeProto(dim=[pb.TensorShapeProto.Dim(size=int(d)) for d in dims])


def _append_values(proto, array, dtype):
    field = getattr(proto, _FIELDS[dtype.name])
    flat = array.ravel()
    if dtype.name == "float16":
        field.extend(flat.view(np.uint16).astype(np.int32).tolist())
    elif dtype.is_complex:
        field.extend(np.stack([flat.real, flat.imag], axis=-1).ravel().tolist())
    else:
        field.extend(flat.tolist())


def make_tensor_proto(values, dtype=None, shape=None, verify_shape=False, allow_broadcast=False):
    """`tf.make_tensor_proto`: a ``TensorProto`` of `values` (a TensorProto is returned as is).

    Args:
        values: a number, string, nested list or numpy array.
        dtype: the tensor's dtype (default: TF's for the values).
        shape: the tensor's shape (default: the values'); a single value fills a larger shape.
        verify_shape: the values' shape must equal `shape`.
        allow_broadcast: one value, or as many as `shape` has, in any shape.

    Raises:
        TypeError: values not of `dtype`, or of another shape than `shape` when verified.
        ValueError: more values than `shape` holds, or ragged nested lists.
    """
    pb = summary_protos.load()
    if isinstance(values, pb.TensorProto):
        return values
    dtype = None if dtype is None else _dtypes.as_dtype(dtype)
    if shape is not None and int(np.prod(shape, dtype=np.int64)) == 0:
        array, dtype = _as_array(np.empty([int(d) for d in shape], (dtype or _dtypes.float32).np), dtype)
    else:
        array, dtype = _as_array(values, dtype)
    if shape is None:
        shape, same_size = list(array.shape), True
    else:
        shape = [int(d) for d in shape]
        size = int(np.prod(shape, dtype=np.int64))
        same_size = size == array.size
        if allow_broadcast:
            if array.shape not in ((1,), ()) and array.size != size:
                raise TypeError(f"Expected Tensor's shape: {tuple(shape)}, but got {array.shape}.")
        else:
            if verify_shape and array.shape != tuple(shape):
                raise TypeError(f"Expected Tensor's shape: {tuple(shape)}, but got {array.shape}.")
            if array.size > size:
                raise ValueError(f"Too many elements provided. Takes at most {size}, but got {array.size}.")
    proto = pb.TensorProto(dtype=_enum(dtype, pb), tensor_shape=_shape_proto(shape, pb))
    if same_size and dtype.name in _CONTENT_DTYPES and array.size > 1:
        proto.tensor_content = np.ascontiguousarray(array, array.dtype.newbyteorder("<")).tobytes()
    else:
        _append_values(proto, array, dtype)
    return proto


def make_ndarray(tensor):
    """`tf.make_ndarray`: the numpy array of a ``TensorProto`` (a shorter value list than the
    shape repeats its last value, as TF reads it).

    Raises:
        TypeError: a dtype nbdist has no counterpart for.
    """
    pb = summary_protos.load()
    if not isinstance(tensor, pb.TensorProto):  # real TensorFlow's class: the same bytes
        tensor = pb.TensorProto.FromString(tensor.SerializeToString())
    tf_dtype = _dtype_of_enum(tensor.dtype, pb)
    shape = [d.size for d in tensor.tensor_shape.dim]
    size = int(np.prod(shape, dtype=np.int64))
    if tensor.tensor_content:
        array = np.frombuffer(tensor.tensor_content, tf_dtype.np.newbyteorder("<")).astype(tf_dtype.np)
    else:
        values = list(getattr(tensor, _FIELDS[tf_dtype.name]))
        if tf_dtype.name == "string":
            array = np.empty(len(values), object)
            array[:] = values
        elif tf_dtype.name == "float16":
            array = np.asarray(values, np.int32).astype(np.uint16).view(np.float16)
        elif tf_dtype.is_complex:
            pairs = np.asarray(values, tf_dtype.real_dtype.np).reshape(-1, 2)
            array = (pairs[:, 0] + 1j * pairs[:, 1]).astype(tf_dtype.np)
        else:
            array = np.asarray(values, tf_dtype.np)
        if 0 < array.size < size:
            array = np.concatenate([array, np.repeat(array[-1:], size - array.size)])
        elif array.size == 0 and size:
            array = np.zeros(size, tf_dtype.np) if tf_dtype.name != "string" else np.full(size, b"", object)
    return array[:size].reshape(shape)


# -- SerializeTensor / ParseTensor ---------------------------------------------------------------------
registry.no_gradient("SerializeTensor")
registry.no_gradient("ParseTensor")


@registry.shape("SerializeTensor")
def _serialize_shape(inputs, attrs):
    return [(_dtypes.string, TensorShape(()))]


@registry.kernel("SerializeTensor")
def _serialize_kernel(ctx, node, tensor):
    pb = summary_protos.load()
    dtype = node.attr["T"]
    array = np.asarray(tensor)
    proto = pb.TensorProto(dtype=_enum(dtype, pb), tensor_shape=_shape_proto(array.shape, pb))
    if dtype is _dtypes.string:
        proto.string_val.extend(v.encode() if isinstance(v, str) else bytes(v) for v in array.ravel())
    elif array.size:
        proto.tensor_content = np.ascontiguousarray(array, dtype.np.newbyteorder("<")).tobytes()
    return np.array(proto.SerializeToString(), dtype=object)


def serialize_tensor(tensor, name=None):
    """`tf.io.serialize_tensor`: a scalar string tensor holding `tensor` as a ``TensorProto``."""
    tensor = convert_to_tensor(tensor)
    _enum(tensor.dtype, summary_protos.load())
    return registry.make_op(
        "SerializeTensor", [tensor], {"T": tensor.dtype}, name=name or "SerializeTensor"
    ).outputs[0]


@registry.shape("ParseTensor")
def _parse_shape(inputs, attrs):
    return [(attrs["out_type"], TensorShape(None))]


@registry.kernel("ParseTensor")
def _parse_kernel(ctx, node, serialized):
    pb = summary_protos.load()
    data = serialized.item() if isinstance(serialized, np.ndarray) else serialized
    data = data.encode() if isinstance(data, str) else bytes(data)
    try:
        proto = pb.TensorProto.FromString(data)
    except Exception:  # noqa: BLE001 - protobuf's DecodeError: not a TensorProto
        raise errors.InvalidArgumentError(None, None, "Could not parse `serialized` as TensorProto") from None
    want = node.attr["out_type"]
    try:
        got = _dtype_of_enum(proto.dtype, pb)
    except TypeError as e:
        raise errors.InvalidArgumentError(None, None, str(e)) from None
    if got is not want:
        raise errors.InvalidArgumentError(
            None,
            None,
            f"Type mismatch between parsed tensor ({_TF_NAMES.get(got.name, got.name)}) and "
            f"dtype ({_TF_NAMES.get(want.name, want.name)})",
        )
    return make_ndarray(proto)


_TF_NAMES = {"float32": "float", "float64": "double", "float16": "half"}


def parse_tensor(serialized, out_type, name=None):
    """`tf.io.parse_tensor`: the tensor a serialized ``TensorProto`` (scalar string) holds.

    Running it fails with `InvalidArgumentError` when the bytes are not a TensorProto or hold
    another dtype than `out_type`.
    """
    serialized = convert_to_tensor(serialized, dtype=_dtypes.string)
    out_type = _dtypes.as_dtype(out_type)
    return registry.make_op(
        "ParseTensor", [serialized], {"out_type": out_type}, name=name or "ParseTensor"
    ).outputs[0]
