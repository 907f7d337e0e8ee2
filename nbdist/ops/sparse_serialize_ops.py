"""`tf.io.serialize_sparse`, `serialize_many_sparse` and `deserialize_many_sparse`: a
`SparseTensor` as three serialized ``TensorProto``s (indices, values, dense shape), TF's
``SerializeSparse`` / ``SerializeManySparse`` / ``DeserializeManySparse`` ops, byte for byte
what TF writes (each part as ``SerializeTensor`` writes it). TF's ``out_type=tf.variant`` is
left out: nbdist has no variant tensors. None of these ops has a gradient.
"""

import types

import numpy as np

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry, summary_protos
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.sparse_tensor import SparseTensor
from nbdist.ops.tensor_proto_ops import make_ndarray

__all__ = ["deserialize_many_sparse", "serialize_many_sparse", "serialize_sparse"]


def _varint(n):
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _serialized(array, dtype):
    """`array` as TF's ``Tensor::AsProtoTensorContent`` writes it: numbers as
    ``SerializeTensor`` does (its kernel, through the registry); strings packed into
    ``tensor_content`` as TF's ``EncodeStringList`` (every length as a varint, then the bytes)."""
    node = types.SimpleNamespace(attr={"T": dtype}, name="", op="SerializeTensor")
    array = np.asarray(array, dtype.np)
    if dtype != _dtypes.string:
        return registry.lookup("SerializeTensor").kernel(None, node, array).item()
    empty = registry.lookup("SerializeTensor").kernel(None, node, np.full(array.shape, b"", object)).item()
    proto = summary_protos.load().TensorProto.FromString(empty)
    del proto.string_val[:]
    items = [bytes(v) for v in array.ravel()]
    proto.tensor_content = b"".join(_varint(len(v)) for v in items) + b"".join(items)
    return proto.SerializeToString()


def _strings_of(content, n):
    """The `n` strings of an ``EncodeStringList`` buffer."""
    lengths, pos = [], 0
    for _ in range(n):
        value = shift = 0
        while True:
            byte = content[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                break
        lengths.append(value)
    out = np.empty(n, dtype=object)
    for i, length in enumerate(lengths):
        out[i], pos = content[pos : pos + length], pos + length
    return out


def _triple(indices, values, shape, dtype):
    return [
        _serialized(indices, _dtypes.int64),
        _serialized(values, dtype),
        _serialized(shape, _dtypes.int64),
    ]


registry.shape("SerializeSparse")(lambda inputs, attrs: [(_dtypes.string, TensorShape([3]))])


registry.shape("SerializeManySparse")(lambda inputs, attrs: [(_dtypes.string, TensorShape([None, 3]))])


@registry.kernel("SerializeSparse")
def _serialize_sparse_kernel(ctx, node, indices, values, dense_shape):
    return np.array(_triple(indices, values, dense_shape, node.attr["T"]), dtype=object)


@registry.kernel("SerializeManySparse")
def _serialize_many_sparse_kernel(ctx, node, indices, values, dense_shape):
    if len(dense_shape) < 2:
        raise errors.InvalidArgumentError(
            node.name, None, f"Rank of input SparseTensor should be > 1, but saw rank: {len(dense_shape)}"
        )
    rows = int(dense_shape[0])
    out = np.empty((rows, 3), dtype=object)
    batch = indices[:, 0]
    if np.any(np.diff(batch) < 0):
        raise errors.InvalidArgumentError(
            node.name,
            None,
            f"{node.op}: the SparseTensor's indices must be ordered by their first (minibatch) index",
        )
    for b in range(rows):
        mine = batch == b
        out[b] = _triple(indices[mine, 1:], values[mine], dense_shape[1:], node.attr["T"])
    return out


for _type in ("SerializeSparse", "SerializeManySparse"):
    registry.no_gradient(_type)


def _sparse_parts(sp_input):
    if not isinstance(sp_input, SparseTensor):
        raise TypeError(f"Input must be a SparseTensor, got {type(sp_input).__name__}")
    return [sp_input.indices, sp_input.values, sp_input.dense_shape]


def _check_out_type(out_type):
    if _dtypes.as_dtype(out_type) != _dtypes.string:
        raise TypeError(
            f"nbdist serializes a SparseTensor to tf.string only (no variant), got out_type={out_type!r}"
        )


def serialize_sparse(sp_input, name=None, out_type=_dtypes.string):
    """`tf.io.serialize_sparse`: a `SparseTensor` as a ``[3]`` string vector, the serialized
    ``TensorProto``s of its indices, values and dense shape."""
    _check_out_type(out_type)
    parts = _sparse_parts(sp_input)
    attrs = {"T": parts[1].dtype, "out_type": _dtypes.string}
    return registry.make_op("SerializeSparse", parts, attrs, name=name or "SerializeSparse").outputs[0]


def serialize_many_sparse(sp_input, name=None, out_type=_dtypes.string):
    """`tf.io.serialize_many_sparse`: each row (first index) of a rank > 1 `SparseTensor` as
    `serialize_sparse` writes it, ``[rows, 3]``; the indices must be ordered by row.

    Raises (when run):
        InvalidArgumentError: the `SparseTensor` has rank 1, or indices out of row order.
    """
    _check_out_type(out_type)
    parts = _sparse_parts(sp_input)
    attrs = {"T": parts[1].dtype, "out_type": _dtypes.string}
    return registry.make_op("SerializeManySparse", parts, attrs, name=name or "SerializeManySparse").outputs[
        0
    ]


# -- DeserializeManySparse ---------------------------------------------------------------------
@registry.shape("DeserializeManySparse")
def _deserialize_shape(inputs, attrs):
    rank = attrs.get("rank")
    return [
        (_dtypes.int64, TensorShape([None, rank])),
        (attrs["dtype"], TensorShape([None])),
        (_dtypes.int64, TensorShape([rank])),
    ]


def _parse(node, data, want):
    pb = summary_protos.load()
    try:
        proto = pb.TensorProto.FromString(bytes(data))
        if (
            proto.tensor_content
            and proto.dtype == pb.TensorProto.FromString(_serialized([], _dtypes.string)).dtype
        ):
            dims = [d.size for d in proto.tensor_shape.dim]
            return _strings_of(proto.tensor_content, int(np.prod(dims))).reshape(dims)
        return np.asarray(make_ndarray(proto))
    except Exception:  # noqa: BLE001 - protobuf's DecodeError: not a TensorProto
        raise errors.InvalidArgumentError(
            node.name, None, f"Could not parse serialized_sparse as a {want}"
        ) from None


@registry.kernel("DeserializeManySparse")
def _deserialize_many_kernel(ctx, node, serialized):
    serialized = np.asarray(serialized, dtype=object)
    if serialized.ndim != 2 or serialized.shape[1] != 3:
        raise errors.InvalidArgumentError(
            node.name,
            None,
            f"Serialized sparse should be a matrix [N, 3], got shape {list(serialized.shape)}",
        )
    dtype = node.attr["dtype"]
    parts = []
    for b, (ind, val, shape) in enumerate(serialized):
        indices, values, dense_shape = (
            _parse(node, ind, "int64 matrix"),
            _parse(node, val, dtype.name),
            _parse(node, shape, "int64 vector"),
        )
        if values.dtype != dtype.np and not (dtype == _dtypes.string and values.dtype == object):
            raise errors.InvalidArgumentError(
                node.name,
                None,
                f"Requested SparseTensor of type {dtype.name} but "
                f"SparseTensor[{b}].values.dtype() == {values.dtype}",
            )
        rank = node.attr.get("rank")
        if rank is not None and rank >= 0 and len(dense_shape) + 1 != rank:
            raise errors.InvalidArgumentError(
                node.name,
                None,
                f"SparseTensor[{b}] has rank {len(dense_shape)}, the output's rank {rank} minus 1 was asked",
            )
        parts.append((indices.reshape(len(values), len(dense_shape)), values, dense_shape))
    if not parts:
        raise errors.InvalidArgumentError(
            node.name, None, "Serialized sparse should have at least one entry (N > 0)"
        )
    ranks = {len(p[2]) for p in parts}
    if len(ranks) != 1:
        raise errors.InvalidArgumentError(
            node.name, None, f"Inconsistent shape across SparseTensors: ranks {sorted(ranks)}"
        )
    indices = np.concatenate(
        [np.hstack([np.full((len(p[1]), 1), b, np.int64), p[0]]) for b, p in enumerate(parts)]
    )
    values = np.concatenate([p[1] for p in parts]).astype(dtype.np)
    shape = np.concatenate([[len(parts)], np.max([p[2] for p in parts], axis=0)]).astype(np.int64)
    return indices.astype(np.int64), values, shape


registry.no_gradient("DeserializeManySparse")


def deserialize_many_sparse(serialized_sparse, dtype, rank=None, name=None):
    """`tf.io.deserialize_many_sparse`: the `SparseTensor` of the rows of a ``[N, 3]`` matrix of
    serialized `SparseTensor`s (`serialize_many_sparse`'s), stacked on a new first dimension
    whose other sizes are the largest of the rows'. `rank` (the output's, optional) fixes the
    static shape."""
    serialized = convert_to_tensor(serialized_sparse, dtype=_dtypes.string, name="serialized_sparse")
    attrs = {"dtype": _dtypes.as_dtype(dtype)}
    if rank is not None:
        attrs["rank"] = int(rank)
    op = registry.make_op("DeserializeManySparse", [serialized], attrs, name=name or "DeserializeManySparse")
    return SparseTensor(*op.outputs)
