"""A ``.meta`` file that real TensorFlow wrote (a binary ``MetaGraphDef`` protobuf), read as far
as nbdist can: its GraphDef (through `nbdist.export.from_tf`) and its collections of node names,
bytes and numbers.

A TF meta graph with a saver is out of scope: TF's save and restore ops and its checkpoints are
not nbdist's (`tf.train.Saver` writes nbdist's own format), so such a file is refused with a
message saying so, as is a text-format (``as_text=True``) file and a graph with an op nbdist does
not have. The protobuf is walked field by field (the wire format: varint keys, length-delimited
messages), nothing in it is executed.
"""

import struct

_VARINT, _FIXED64, _BYTES, _FIXED32 = 0, 1, 2, 5
# MetaGraphDef's fields, and CollectionDef's kinds (meta_graph.proto).
_META_INFO, _GRAPH_DEF, _SAVER_DEF, _COLLECTION_DEF = 1, 2, 3, 4
_KINDS = {1: "node_list", 2: "bytes_list", 3: "int64_list", 4: "float_list"}
_SAVER_OPS = frozenset({"SaveV2", "RestoreV2", "Save", "Restore", "SaveSlices", "RestoreSlice"})


def _varint(data, pos):
    value, shift = 0, 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def fields(data):
    """``[(field number, wire type, value)]`` of one message's bytes (bytes for a
    length-delimited field, an int for the others)."""
    out, pos = [], 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == _VARINT:
            value, pos = _varint(data, pos)
        elif wire == _FIXED64:
            value, pos = int.from_bytes(data[pos : pos + 8], "little"), pos + 8
        elif wire == _FIXED32:
            value, pos = int.from_bytes(data[pos : pos + 4], "little"), pos + 4
        elif wire == _BYTES:
            size, pos = _varint(data, pos)
            value, pos = bytes(data[pos : pos + size]), pos + size
        else:
            raise ValueError(f"wire type {wire} of field {number}")
        if pos > len(data) or number == 0:
            raise ValueError("truncated message")
        out.append((number, wire, value))
    return out


def _collection(data):
    """``{kind: [values]}`` of a ``CollectionDef``'s bytes, or None for ``any_list`` (protos)."""
    for number, _, value in fields(data):
        kind = _KINDS.get(number)
        if kind is None:
            return None
        values = []
        for _, wire, item in fields(value):
            if kind == "node_list":
                values.append(item.decode())
            elif kind == "bytes_list":
                values.append(item)
            elif kind == "int64_list":
                values.extend(_packed_int64(item) if wire == _BYTES else [item - (item >> 63 << 64)])
            else:
                raw = item if wire == _BYTES else item.to_bytes(4, "little")
                values.extend(struct.unpack(f"<{len(raw) // 4}f", raw))
        return {kind: values}
    return {"node_list": []}


def _packed_int64(data):
    out, pos = [], 0
    while pos < len(data):
        value, pos = _varint(data, pos)
        out.append(value - (value >> 63 << 64))
    return out


def meta_graph_of_tf_bytes(data, filename):
    """nbdist's meta graph dict of a binary TensorFlow ``MetaGraphDef`` (see the module docstring).

    Raises:
        ValueError: text format, not a MetaGraphDef, a graph with TF's saver in it, or a node
            whose op type nbdist does not have (`UnsupportedOpError`, a ValueError).
    """
    from nbdist.export.from_tf import graph_def_of_proto  # noqa: PLC0415 - the TF reader, on use
    from nbdist.ops import summary_protos  # noqa: PLC0415 - GraphDef's protobuf class

    where = f"{filename} is a TensorFlow meta graph"
    if data.lstrip().startswith((b"meta_info_def", b"graph_def", b"collection_def", b"saver_def")):
        raise ValueError(
            f"{where} in text format (as_text=True), which nbdist does not read; re-export it from "
            "TensorFlow with as_text=False"
        )
    try:
        parts = fields(data)
    except ValueError as e:
        raise ValueError(
            f"{filename} is neither nbdist's meta graph nor a TensorFlow MetaGraphDef ({e})"
        ) from None
    graphs = [v for n, w, v in parts if n == _GRAPH_DEF and w == _BYTES]
    if not graphs:
        raise ValueError(
            f"{filename} is neither nbdist's meta graph nor a TensorFlow MetaGraphDef (no graph_def)"
        )
    proto = summary_protos.load().GraphDef.FromString(graphs[-1])
    saver_ops = sorted({n.name for n in proto.node if n.op in _SAVER_OPS})
    if saver_ops or any(n == _SAVER_DEF for n, _, _ in parts):
        raise ValueError(
            f"{where} with a tf.train.Saver in it (ops {saver_ops[:3]}): TensorFlow's save/restore ops "
            "and checkpoints are out of nbdist's scope. Build the model with nbdist and restore an "
            "nbdist checkpoint, or export the graph without a saver (tf.io.write_graph of "
            "as_graph_def()) and read it with tf.import_graph_def"
        )
    try:
        graph_def = graph_def_of_proto(proto)
    except ValueError as e:
        raise type(e)(f"{where} that nbdist cannot import: {e}") from None
    collections = {}
    for number, _, entry in parts:
        if number != _COLLECTION_DEF:
            continue
        kv = {n: v for n, _, v in fields(entry)}
        collection = _collection(kv.get(2, b""))
        if collection is not None:
            collections[kv.get(1, b"").decode()] = collection
    tags = [
        v.decode() for n, _, v in fields(next((v for n, _, v in parts if n == _META_INFO), b"")) if n == 4
    ]
    return {
        "meta_info_def": {"tags": tags, "tensorflow_version": "TensorFlow"},
        "graph_def": graph_def,
        "saver_def": None,
        "collection_def": collections,
    }
