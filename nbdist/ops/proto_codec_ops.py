"""`tf.io.decode_proto` and `tf.io.encode_proto`: protocol-buffer fields as tensors and back
(TF's ``DecodeProtoV2`` / ``EncodeProto``), over protobuf's wire format.

    sizes, (steps, tags) = tf.io.decode_proto(events, "tensorflow.Event",
                                              ["step", "file_version"], [tf.int64, tf.string])

A message type is found as TF finds it: ``descriptor_source="local://"`` looks in the process'
protobuf classes (``tensorflow.X`` falls back to tensorboardX's same message ``tensorboardX.X``,
so TF's event and summary messages are there without TensorFlow); ``"bytes://<a serialized
FileDescriptorSet>"`` or the path of a file holding one gives the types of that set.

Fields are read from the wire as TF's kernel reads them: ``sizes[..., i]`` counts field i's
values on the wire, ``values[i]`` has ``max(1, largest count)`` values per message, padded with
the field's default. Each field's dtype is one of TF's for its type (int32 fields as int32 or
int64, float fields as float32 or float64, messages, strings and bytes as serialized strings).
"""

import collections
import contextlib
import os
import struct

import numpy as np

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops.constant_op import convert_to_tensor

__all__ = ["decode_proto", "encode_proto"]

DecodeProtoV2 = collections.namedtuple("DecodeProtoV2", ["sizes", "values"])


class _FD:
    """descriptor.proto's field types and label (the numbers FieldDescriptor has): protobuf's
    Python package loads only when a proto op runs."""

    TYPE_DOUBLE, TYPE_FLOAT, TYPE_INT64, TYPE_UINT64, TYPE_INT32, TYPE_FIXED64 = 1, 2, 3, 4, 5, 6
    TYPE_FIXED32, TYPE_BOOL, TYPE_STRING, TYPE_GROUP, TYPE_MESSAGE, TYPE_BYTES = 7, 8, 9, 10, 11, 12
    TYPE_UINT32, TYPE_ENUM, TYPE_SFIXED32, TYPE_SFIXED64, TYPE_SINT32, TYPE_SINT64 = 13, 14, 15, 16, 17, 18
    LABEL_REPEATED = 3


_VARINT, _FIXED64, _BYTES, _FIXED32 = 0, 1, 2, 5
# field type -> (its name, the dtypes TF allows for it)
_TYPES = {
    _FD.TYPE_DOUBLE: ("double", ("float64",)),
    _FD.TYPE_FLOAT: ("float", ("float32", "float64")),
    _FD.TYPE_INT64: ("int64", ("int64",)),
    _FD.TYPE_UINT64: ("uint64", ("uint64",)),
    _FD.TYPE_INT32: ("int32", ("int32", "int64")),
    _FD.TYPE_FIXED64: ("fixed64", ("uint64",)),
    _FD.TYPE_FIXED32: ("fixed32", ("uint32", "uint64")),
    _FD.TYPE_BOOL: ("bool", ("bool",)),
    _FD.TYPE_STRING: ("string", ("string",)),
    _FD.TYPE_GROUP: ("group", ("string",)),
    _FD.TYPE_MESSAGE: ("message", ("string",)),
    _FD.TYPE_BYTES: ("bytes", ("string",)),
    _FD.TYPE_UINT32: ("uint32", ("uint32", "uint64")),
    _FD.TYPE_ENUM: ("enum", ("int32",)),
    _FD.TYPE_SFIXED32: ("sfixed32", ("int32", "int64")),
    _FD.TYPE_SFIXED64: ("sfixed64", ("int64",)),
    _FD.TYPE_SINT32: ("sint32", ("int32", "int64")),
    _FD.TYPE_SINT64: ("sint64", ("int64",)),
}
_VARINTS = {_FD.TYPE_INT64, _FD.TYPE_UINT64, _FD.TYPE_INT32, _FD.TYPE_BOOL, _FD.TYPE_UINT32, _FD.TYPE_ENUM}
_ZIGZAG = {_FD.TYPE_SINT32, _FD.TYPE_SINT64}
_FIXED = {  # struct format of the fixed-width types
    _FD.TYPE_DOUBLE: "<d",
    _FD.TYPE_FLOAT: "<f",
    _FD.TYPE_FIXED64: "<Q",
    _FD.TYPE_SFIXED64: "<q",
    _FD.TYPE_FIXED32: "<I",
    _FD.TYPE_SFIXED32: "<i",
}
_LENGTH_DELIMITED = {_FD.TYPE_STRING, _FD.TYPE_BYTES, _FD.TYPE_MESSAGE, _FD.TYPE_GROUP}
_TF_NAMES = {"float32": "float", "float64": "double"}
_DT_NAMES = {"float32": "DT_FLOAT", "float64": "DT_DOUBLE"}


def _dt(dtype):
    return _DT_NAMES.get(dtype.name, f"DT_{dtype.name.upper()}")


# -- the wire format ---------------------------------------------------------------------------------
def _read_varint(data, pos):
    value = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def wire_fields(data):
    """``[(field number, wire type, value)]`` of one message's bytes: bytes for a
    length-delimited field, the raw bytes of a fixed-width one, an int for a varint.

    Raises:
        ValueError: bytes that are not a message.
    """
    out, pos = [], 0
    while pos < len(data):
        key, pos = _read_varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == _VARINT:
            value, pos = _read_varint(data, pos)
        elif wire in (_FIXED64, _FIXED32):
            width = 8 if wire == _FIXED64 else 4
            value, pos = bytes(data[pos : pos + width]), pos + width
        elif wire == _BYTES:
            size, pos = _read_varint(data, pos)
            value, pos = bytes(data[pos : pos + size]), pos + size
        else:
            raise ValueError(f"wire type {wire} of field {number}")
        if pos > len(data) or number == 0:
            raise ValueError("truncated message")
        out.append((number, wire, value))
    return out


def _varint_bytes(value):
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | 0x80 if value else byte)
        if not value:
            return bytes(out)


def _signed(value, bits=64):
    return value - (1 << bits) if value >> (bits - 1) else value


def _scalar_of_varint(field_type, raw):
    if field_type in _ZIGZAG:
        return (raw >> 1) ^ -(raw & 1)
    if field_type in (_FD.TYPE_INT64, _FD.TYPE_INT32, _FD.TYPE_ENUM):
        return _signed(raw)
    if field_type == _FD.TYPE_UINT32:
        return raw & 0xFFFFFFFF
    return raw


def _values_of(field, wire, value):
    """The values one wire record holds for `field` (a packed record holds several)."""
    ftype = field.type
    if ftype in _LENGTH_DELIMITED:
        return [value]
    if wire == _BYTES:  # packed
        if ftype in _FIXED:
            fmt = _FIXED[ftype]
            return [v[0] for v in struct.iter_unpack(fmt, value)]
        out, pos = [], 0
        while pos < len(value):
            raw, pos = _read_varint(value, pos)
            out.append(_scalar_of_varint(ftype, raw))
        return out
    if ftype in _FIXED:
        return [struct.unpack(_FIXED[ftype], value)[0]]
    return [_scalar_of_varint(ftype, value)]


def _encoded(field, values):
    """The wire bytes of `values` of `field` (packed when the field is)."""
    ftype, number = field.type, field.number
    if ftype in _LENGTH_DELIMITED:
        tag = _varint_bytes(number << 3 | _BYTES)
        return b"".join(tag + _varint_bytes(len(v)) + v for v in values)
    if ftype in _FIXED:
        items = [struct.pack(_FIXED[ftype], v) for v in values]
        wire = _FIXED64 if struct.calcsize(_FIXED[ftype]) == 8 else _FIXED32
    else:
        if ftype in _ZIGZAG:
            values = [(v << 1) ^ (v >> 63) for v in values]
        items = [_varint_bytes(int(v)) for v in values]
        wire = _VARINT
    if _is_repeated(field) and _is_packed(field):
        payload = b"".join(items)
        return _varint_bytes(number << 3 | _BYTES) + _varint_bytes(len(payload)) + payload
    tag = _varint_bytes(number << 3 | wire)
    return b"".join(tag + item for item in items)


def _is_repeated(field):
    repeated = getattr(field, "is_repeated", None)  # protobuf >= 6; `label` before
    return repeated if isinstance(repeated, bool) else field.label == _FD.LABEL_REPEATED


def _is_packed(field):
    packed = getattr(field, "is_packed", None)
    return packed if isinstance(packed, bool) else field.GetOptions().packed


# -- message types ---------------------------------------------------------------------------------
def _descriptor(message_type, descriptor_source):
    """The `Descriptor` of `message_type`; `InvalidArgumentError` naming it when there is none."""
    from google.protobuf import descriptor_pb2, descriptor_pool  # noqa: PLC0415 - on first use

    if isinstance(descriptor_source, bytes):  # "bytes://..." holds binary data: keep it bytes
        if not descriptor_source.startswith(b"bytes://"):
            descriptor_source = os.fsdecode(descriptor_source)
    elif descriptor_source.startswith("bytes://"):
        descriptor_source = descriptor_source.encode("latin-1")
    if descriptor_source in ("local://", b"local://"):
        pool = descriptor_pool.Default()
        names = [message_type]
        if message_type.startswith("tensorflow."):
            from nbdist.ops import summary_protos  # noqa: PLC0415 - registers tensorboardX's messages

            with contextlib.suppress(ImportError):  # then only the process' own classes
                summary_protos.load()
            names.append("tensorboardX." + message_type[len("tensorflow.") :])
    else:
        if isinstance(descriptor_source, bytes):
            data = descriptor_source[len(b"bytes://") :]
        else:
            if not os.path.exists(descriptor_source):
                raise errors.NotFoundError(None, None, f"{descriptor_source}; No such file or directory")
            with open(descriptor_source, "rb") as f:
                data = f.read()
        pool = descriptor_pool.DescriptorPool()
        for file_proto in descriptor_pb2.FileDescriptorSet.FromString(data).file:
            pool.Add(file_proto)
        names = [message_type]
    for name in names:
        try:
            return pool.FindMessageTypeByName(name)
        except KeyError:
            continue
    raise errors.InvalidArgumentError(None, None, f"No descriptor found for message type {message_type}")


def _fields(descriptor, message_type, field_names, dtypes):
    fields = []
    for name, dtype in zip(field_names, dtypes):
        field = descriptor.fields_by_name.get(name)
        if field is None:
            raise errors.InvalidArgumentError(
                None, None, f"Unknown field: {name} in message type {message_type}"
            )
        type_name, allowed = _TYPES[field.type]
        if dtype is not None and dtype.name not in allowed:
            raise errors.InvalidArgumentError(
                None, None, f"Unexpected output type for {field.full_name}: {type_name} to {_dt(dtype)}"
            )
        fields.append(field)
    return fields


def _default(field):
    if field.type in (_FD.TYPE_MESSAGE, _FD.TYPE_GROUP):
        return b""
    value = field.default_value
    if isinstance(value, list):  # a repeated field's
        value = b"" if field.type in _LENGTH_DELIMITED else 0
    return value.encode() if isinstance(value, str) else value


# -- DecodeProtoV2 ----------------------------------------------------------------------------------
registry.no_gradient("DecodeProtoV2")


@registry.shape("DecodeProtoV2")
def _decode_shape(inputs, attrs):
    batch = inputs[0].shape
    dims = None if batch.dims is None else list(batch.dims)
    n = len(attrs["field_names"])
    sizes = TensorShape(None if dims is None else [*dims, n])
    values = TensorShape(None if dims is None else [*dims, None])
    return [(_dtypes.int32, sizes)] + [(d, values) for d in attrs["output_types"]]


def _message_bytes(buf, descriptor, message_format):
    buf = buf.encode() if isinstance(buf, str) else bytes(buf)
    if message_format == "text":
        from google.protobuf import message_factory, text_format  # noqa: PLC0415 - on first use

        message = message_factory.GetMessageClass(descriptor)()
        try:
            text_format.Parse(buf.decode(), message)
        except text_format.ParseError as e:
            raise errors.DataLossError(None, None, f"Unable to parse text proto: {e}") from None
        return message.SerializeToString()
    return buf


@registry.kernel("DecodeProtoV2")
def _decode_kernel(ctx, node, bufs):
    attrs = node.attr
    message_type = attrs["message_type"]
    descriptor = _descriptor(message_type, attrs["descriptor_source"])
    fields = _fields(descriptor, message_type, attrs["field_names"], attrs["output_types"])
    bufs = np.asarray(bufs, dtype=object)
    if bufs.size == 0:
        raise errors.InvalidArgumentError(None, None, "Bufs argument must contain at least one value")
    by_number = {f.number: i for i, f in enumerate(fields)}
    found = [[[] for _ in fields] for _ in range(bufs.size)]
    for m, buf in enumerate(bufs.ravel()):
        try:
            records = wire_fields(_message_bytes(buf, descriptor, attrs["message_format"]))
            for number, wire, value in records:
                if number in by_number:
                    i = by_number[number]
                    found[m][i].extend(_values_of(fields[i], wire, value))
        except (ValueError, struct.error):
            raise errors.DataLossError(None, None, "CountFields: Failed to consume entire buffer") from None
    sizes = np.array([[len(v) for v in message] for message in found], np.int32).reshape(
        *bufs.shape, len(fields)
    )
    outputs = [sizes]
    for i, (field, dtype) in enumerate(zip(fields, attrs["output_types"])):
        width = max([1] + [len(message[i]) for message in found])
        column = np.empty((bufs.size, width), dtype=object if dtype is _dtypes.string else dtype.np)
        column[:] = _default(field)
        for m, message in enumerate(found):
            if message[i]:
                column[m, : len(message[i])] = message[i]
        outputs.append(column.reshape(*bufs.shape, width))
    return tuple(outputs)


def decode_proto(
    bytes,  # noqa: A002 - TF's argument name
    message_type,
    field_names,
    output_types,
    descriptor_source="local://",
    message_format="binary",
    sanitize=False,
    name=None,
):
    """`tf.io.decode_proto`: fields of serialized protocol buffers as tensors.

    Args:
        bytes: a string tensor of serialized messages (any shape: the batch shape).
        message_type: the full name of the message type (``"tensorflow.Event"``).
        field_names: the fields to read.
        output_types: one dtype per field, of those TF allows for its type.
        descriptor_source: ``"local://"``, ``"bytes://<FileDescriptorSet>"`` or a file path.
        message_format: ``"binary"`` or ``"text"``.
        sanitize: accepted (TF's fuzzing aid).

    Returns:
        ``(sizes, values)``: int32 ``[*batch, len(field_names)]`` counts and one
        ``[*batch, max count]`` tensor per field. Running it fails with `InvalidArgumentError`
        for an unknown type or field or a dtype the field cannot have, and `DataLossError` for
        bytes that are not a message.
    """
    bufs = convert_to_tensor(bytes, dtype=_dtypes.string)
    attrs = {
        "message_type": message_type,
        "field_names": list(field_names),
        "output_types": [_dtypes.as_dtype(t) for t in output_types],
        "descriptor_source": descriptor_source,
        "message_format": message_format,
        "sanitize": bool(sanitize),
    }
    op = registry.make_op("DecodeProtoV2", [bufs], attrs, name=name or "DecodeProtoV2")
    return DecodeProtoV2(op.outputs[0], list(op.outputs[1:]))


# -- EncodeProto ----------------------------------------------------------------------------------
registry.no_gradient("EncodeProto")


@registry.shape("EncodeProto")
def _encode_shape(inputs, attrs):
    sizes = inputs[0].shape
    return [(_dtypes.string, TensorShape(None if sizes.dims is None else list(sizes.dims)[:-1]))]


@registry.kernel("EncodeProto")
def _encode_kernel(ctx, node, sizes, *values):
    attrs = node.attr
    message_type = attrs["message_type"]
    descriptor = _descriptor(message_type, attrs["descriptor_source"])
    fields = _fields(descriptor, message_type, attrs["field_names"], [None] * len(values))
    for field, dtype in zip(fields, attrs["Tinput_types"]):
        if dtype.name not in _TYPES[field.type][1]:
            raise errors.InvalidArgumentError(
                None,
                None,
                f"Incompatible type for field {field.name}.  Saw dtype: "
                f"{_TF_NAMES.get(dtype.name, dtype.name)} but field type is: {_TYPES[field.type][0]}",
            )
    sizes = np.asarray(sizes)
    batch = sizes.shape[:-1]
    flat_sizes = sizes.reshape(-1, len(fields))
    flat_values = [np.asarray(v).reshape(flat_sizes.shape[0], -1) for v in values]
    order = sorted(range(len(fields)), key=lambda i: fields[i].number)
    out = np.empty(flat_sizes.shape[0], object)
    for m in range(flat_sizes.shape[0]):
        parts = []
        for i in order:
            count = int(flat_sizes[m, i])
            if count > flat_values[i].shape[1]:
                raise errors.InvalidArgumentError(
                    None,
                    None,
                    "Size to write must not be larger than value tensor; but saw: "
                    f"{count} > {flat_values[i].shape[1]} at message {m} field {i}",
                )
            items = flat_values[i][m, :count].tolist()
            if fields[i].type in _LENGTH_DELIMITED:
                items = [v.encode() if isinstance(v, str) else bytes(v) for v in items]
            parts.append(_encoded(fields[i], items) if items else b"")
        out[m] = b"".join(parts)
    return out.reshape(batch)


def encode_proto(sizes, values, field_names, message_type, descriptor_source="local://", name=None):
    """`tf.io.encode_proto`: serialized protocol buffers from field tensors (`decode_proto`'s
    inverse): ``sizes[..., i]`` values of ``values[i]`` are written to field i, fields in the
    order of their numbers, repeated numbers packed where the field is.

    Returns:
        A string tensor of shape ``sizes.shape[:-1]``. Running it fails with
        `InvalidArgumentError` for a dtype the field cannot take or a size past its values.
    """
    sizes = convert_to_tensor(sizes, dtype=_dtypes.int32)
    values = [convert_to_tensor(v) for v in values]
    attrs = {
        "field_names": list(field_names),
        "message_type": message_type,
        "descriptor_source": descriptor_source,
        "Tinput_types": [v.dtype for v in values],
    }
    return registry.make_op("EncodeProto", [sizes, *values], attrs, name=name or "EncodeProto").outputs[0]
