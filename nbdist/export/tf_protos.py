"""Real TensorFlow's protobufs read as nbdist's plain data: AttrValue, TensorProto, GraphDef.

TensorFlow's ``graph.as_graph_def()`` and a traced step's ``RunMetadata.partition_graphs``
are ``tensorflow.GraphDef`` protos; nbdist's GraphDef is plain data
(`nbdist.graph.graph_def`). The protos are read field by field (duck-typed: TensorFlow is
imported only to read the output types of op types nbdist does not know, which is the one
thing a NodeDef does not say).

    is_proto(obj, "tensorflow.GraphDef")
    drawable_graph_def(proto)   # every node, outputs as far as TF's op registry says (views)
"""

import re

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph_def import encode_attr
from nbdist.graph.tensor_shape import TensorShape

# TensorFlow's DataType enum (types.proto) -> nbdist dtype name; a ref type is the value + 100.
DTYPE_NAMES = {
    1: "float32",
    2: "float64",
    3: "int32",
    4: "uint8",
    5: "int16",
    6: "int8",
    7: "string",
    9: "int64",
    10: "bool",
    8: "complex64",
    17: "uint16",
    18: "complex128",
    19: "float16",
    22: "uint32",
    23: "uint64",
}
DTYPE_ENUMS = {name: enum for enum, name in DTYPE_NAMES.items()}
_REF_OFFSET = 100
# The TensorProto field holding the values of each dtype when ``tensor_content`` is empty.
_VALUE_FIELDS = {
    "float32": "float_val",
    "float64": "double_val",
    "int32": "int_val",
    "uint8": "int_val",
    "int16": "int_val",
    "int8": "int_val",
    "int64": "int64_val",
    "bool": "bool_val",
    "string": "string_val",
    "float16": "half_val",
}


class UnsupportedDTypeError(TypeError):
    """A TensorFlow dtype nbdist has no counterpart for (resource, variant, complex, ...)."""


def is_proto(obj, full_name):
    """True when `obj` is a protobuf message of type `full_name` (``"tensorflow.GraphDef"``)."""
    return getattr(getattr(obj, "DESCRIPTOR", None), "full_name", None) == full_name


def dtype_of_enum(enum, where=""):
    """The nbdist `DType` of a TensorFlow DataType enum value (a ref type reads as its base)."""
    name = DTYPE_NAMES.get(enum - _REF_OFFSET if enum > _REF_OFFSET else enum)
    if name is None:
        raise UnsupportedDTypeError(
            f"{where}TensorFlow dtype enum {enum} has no nbdist counterpart; nbdist has {sorted(DTYPE_ENUMS)}"
        )
    return _dtypes.as_dtype(name)


def shape_of_proto(shape):
    """A `TensorShape` of a ``TensorShapeProto`` (``-1`` dims are unknown)."""
    if shape.unknown_rank:
        return TensorShape(None)
    return TensorShape([None if d.size < 0 else d.size for d in shape.dim])


def array_of_tensor_proto(tensor, where=""):
    """The numpy array of a ``TensorProto`` (``tensor_content`` bytes, or the typed value list
    with its last value repeated to the full size, as TensorFlow reads it)."""
    dtype = dtype_of_enum(tensor.dtype, where)
    dims = [d.size for d in tensor.tensor_shape.dim]
    size = int(np.prod(dims, dtype=np.int64))
    if tensor.tensor_content:
        return np.frombuffer(tensor.tensor_content, dtype.np).reshape(dims).copy()
    values = list(getattr(tensor, _VALUE_FIELDS[dtype.name]))
    if dtype.name == "float16":  # half_val holds the float16 bit patterns as ints
        values = np.asarray(values, np.uint16).view(np.float16).tolist()
    if dtype.name == "string":
        array = np.empty(size, object)
        array[:] = (values + values[-1:] * (size - len(values)))[:size] if values else b""
        return array.reshape(dims)
    if len(values) < size:
        values = values + [values[-1] if values else 0] * (size - len(values))
    return np.asarray(values[:size] if size else values[:0], dtype.np).reshape(dims)


def attr_of_proto(value, where=""):
    """An ``AttrValue`` as nbdist attr data: DType, TensorShape, numpy array, str, int, ... ."""
    kind = value.WhichOneof("value")
    if kind == "s":
        return value.s.decode("utf-8", "backslashreplace")
    if kind in ("i", "f", "b"):
        return getattr(value, kind)
    if kind == "type":
        return dtype_of_enum(value.type, where)
    if kind == "shape":
        return shape_of_proto(value.shape)
    if kind == "tensor":
        return array_of_tensor_proto(value.tensor, where)
    if kind == "list":
        lst = value.list
        for field, read in (
            ("s", lambda v: v.decode("utf-8", "backslashreplace")),
            ("i", int),
            ("f", float),
            ("b", bool),
            ("type", lambda v: dtype_of_enum(v, where)),
            ("shape", shape_of_proto),
            ("tensor", lambda v: array_of_tensor_proto(v, where)),
        ):
            if len(getattr(lst, field)):
                return [read(v) for v in getattr(lst, field)]
        return []
    if kind is None:
        return None
    raise TypeError(f"{where}attr of kind {kind!r} (a function or placeholder) is not supported by nbdist")


def input_name(name):
    """TensorFlow's ``"x"`` is nbdist's ``"x:0"``; ``"x:1"`` and ``"^x"`` are the same in both."""
    return name if name.startswith("^") or ":" in name else f"{name}:0"


def decoded_attrs(node):
    """``{name: value}`` of a NodeDef proto's attrs, decoded; an attr nbdist cannot read is
    left out when private (``_``-prefixed, TensorFlow's annotations) and an error otherwise."""
    out = {}
    for key, value in node.attr.items():
        try:
            out[key] = attr_of_proto(value, f"node {node.name!r} ({node.op}) attr {key!r}: ")
        except TypeError:
            if not key.startswith("_"):
                raise
    return out


def output_dtypes(node, attrs):
    """The output dtypes of a NodeDef proto, read from TensorFlow's op registry (None for an op
    type TensorFlow does not know, or a dtype nbdist has no counterpart for)."""
    from tensorflow.python.framework import op_def_registry  # noqa: PLC0415 - only with TF protos

    op_def = op_def_registry.get(node.op)
    if op_def is None:
        return None
    out = []
    for arg in op_def.output_arg:
        if arg.type_list_attr:
            types = attrs.get(arg.type_list_attr) or []
        else:
            one = (
                attrs.get(arg.type_attr)
                if arg.type_attr
                else DTYPE_NAMES.get(arg.type % _REF_OFFSET if arg.type > _REF_OFFSET else arg.type)
            )
            types = [one] * (int(attrs.get(arg.number_attr, 1)) if arg.number_attr else 1)
        if any(t is None for t in types):
            return None
        out.extend(_dtypes.as_dtype(t) for t in types)
    return out


def drawable_graph_def(proto):
    """A GraphDef proto as an nbdist GraphDef dict for the views: every node, its inputs,
    device and readable attrs; outputs typed from TensorFlow's op registry, shaped from
    ``_output_shapes`` (``add_shapes=True``) or a ``shape`` attr, else of unknown shape.

    Nodes the views cannot type (an op type only the TF runtime knows) get outputs of
    unknown dtype and shape, counted from their consumers, so that bytes read as unknown.
    """
    used = {}
    for node in proto.node:
        for name in node.input:
            if not name.startswith("^"):
                op, _, index = input_name(name).rpartition(":")
                used[op] = max(used.get(op, 0), int(index) + 1)
    nodes = []
    for node in proto.node:
        attrs = {
            k: v for k, v in decoded_attrs(node).items() if not isinstance(v, np.ndarray) or v.size <= 16
        }
        shapes = attrs.pop("_output_shapes", None) or []
        try:
            types = output_dtypes(node, attrs)
        except (TypeError, ValueError):  # a dtype nbdist has no counterpart for
            types = None
        count = max(len(types) if types is not None else 0, used.get(node.name, 0))
        outputs = []
        for i in range(count):
            dtype = types[i] if types is not None and i < len(types) else _dtypes.string
            shape = shapes[i] if i < len(shapes) else attrs.get("shape") if count == 1 else None
            outputs.append([dtype.name, getattr(shape, "dims", None)])
        attrs = {k: encode_attr(v) for k, v in attrs.items() if not k.startswith("_") or k == "_class"}
        if node.op in ("_Send", "_Recv") and "tensor_name" in attrs:
            attrs["key"] = rendezvous_key(attrs)
            attrs.setdefault("tensor_type", attrs.get("T"))
        nodes.append(
            {
                "name": node.name,
                "op": node.op,
                "input": [input_name(i) for i in node.input],
                "device": node.device,
                "attr": attrs,
                "output": outputs,
            }
        )
    return {"versions": {"producer": 1}, "node": nodes}


def rendezvous_key(attrs):
    """The rendezvous key TensorFlow pairs a ``_Send`` with its ``_Recv`` by (both carry its parts)."""
    incarnation = attrs.get("send_device_incarnation", 0) % (1 << 64)
    return f"{attrs.get('send_device')};{incarnation:016x};{attrs.get('recv_device')};{attrs['tensor_name']}"


# TensorFlow's label of a tensor its receiving task fetched (node "RecvTensor", label "[48B]
# [3.49Mb/s] edge_4_w/read from /job:ps/replica:0/task:0/device:CPU:0 to ..."), and of an op
# ("name = Op(...)").
_RECV_LABEL = re.compile(r"\[(\d+)B\].*?\] (\S+) from (\S+)")
_OP_LABEL = re.compile(r"\S+ = ([\w>]+)\(")
_SKIPPED_NODES = ("_SOURCE", "_SINK")


def trace_event(md):
    """A real TensorFlow ``RunMetadata`` (traced with ``FULL_TRACE``) as nbdist's ``trace`` event:
    the form `nbdist.notebook.event_stream.report_trace` sends, which every view draws.

    TensorFlow records no spans for ``_Send``/``_Recv`` kernels: the receiving task records
    each tensor it fetched as a ``RecvTensor`` span (bytes, from which device). That span
    becomes the ``_Recv``'s span; the ``_Send``'s span runs from the end of the op that made
    the tensor (when the sender could have sent it) to the start of the fetch; the partition
    graphs' rendezvous keys pair them. TensorFlow's RunMetadata has no service calls.
    """
    parts = [drawable_graph_def(pg) for pg in md.partition_graphs]
    op_of, pair_of, send_input = {}, {}, {}
    for part in parts:
        for node in part["node"]:
            op_of[(node["device"], node["name"])] = node["op"]
            if node["op"] in ("_Send", "_Recv") and "key" in node["attr"]:
                side = pair_of.setdefault((node["attr"]["tensor_name"], node["attr"]["recv_device"]), {})
                side[node["op"]] = (node["device"], node["name"], node["attr"]["key"])
            if node["op"] == "_Send" and node["input"]:
                send_input[node["name"]] = node["input"][0].rpartition(":")[0]
    stats, fetched, ends = {}, [], {}

    def entry(device):
        return stats.setdefault(device, {"device": device, "node_stats": [], "transfers": []})

    for dev in md.step_stats.dev_stats:
        for ns in dev.node_stats:
            if ns.node_name in _SKIPPED_NODES:
                continue
            start_s = ns.all_start_micros / 1e6
            end_s = start_s + max(ns.all_end_rel_micros, ns.op_end_rel_micros) / 1e6
            recv = _RECV_LABEL.match(ns.timeline_label) if ns.node_name == "RecvTensor" else None
            if recv is not None:
                fetched.append((dev.device, int(recv.group(1)), recv.group(2), start_s, end_s))
                continue
            label = _OP_LABEL.match(ns.timeline_label)
            op = op_of.get((dev.device, ns.node_name)) or (label.group(1) if label else ns.node_name)
            entry(dev.device)["node_stats"].append(
                {"node_name": ns.node_name, "op": op, "start_s": start_s, "end_s": end_s}
            )
            ends[(dev.device, ns.node_name)] = end_s
    for device, nbytes, tensor_name, start_s, end_s in fetched:
        side = pair_of.get((tensor_name, device), {})
        if "_Recv" not in side:  # not an edge between two partitions of this step
            continue
        recv_device, recv_name, key = side["_Recv"]
        _add_side(entry(recv_device), recv_name, "_Recv", key, nbytes, start_s, end_s, end_s)
        if "_Send" in side:
            send_device, send_name, _ = side["_Send"]
            ready_s = min(ends.get((send_device, send_input.get(send_name)), start_s), start_s)
            _add_side(entry(send_device), send_name, "_Send", key, nbytes, ready_s, start_s, start_s)
    return {
        "kind": "trace",
        "source": "tensorflow",
        "partition_graphs": parts,
        "dev_stats": list(stats.values()),
        "service_calls": [],
    }


def _add_side(entry, node_name, op, key, nbytes, start_s, end_s, time_s):
    """One side of a transfer: the span of its ``_Send``/``_Recv`` and its transfer record."""
    entry["node_stats"].append({"node_name": node_name, "op": op, "start_s": start_s, "end_s": end_s})
    entry["transfers"].append(
        {"node_name": node_name, "op": op, "key": key, "bytes": nbytes, "time_s": time_s}
    )


def as_nbdist(obj):
    """`obj` itself, or a real TensorFlow ``RunMetadata`` / ``GraphDef`` proto as what the views
    draw: a ``trace`` event / a GraphDef dict."""
    if is_proto(obj, "tensorflow.RunMetadata"):
        return trace_event(obj)
    if is_proto(obj, "tensorflow.GraphDef"):
        return drawable_graph_def(obj)
    return obj
