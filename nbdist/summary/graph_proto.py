"""nbdist's GraphDef (plain data) as TF's ``GraphDef`` protobuf, for TensorBoard's graph tab.

Each node keeps its name, op type, inputs (TF's form: ``x`` for output 0, ``x:1``,
``^ctrl``) and *requested* device, so TensorBoard can colour the graph by device. Attrs are
mapped where TF has the same kind of value: dtypes, shapes, numbers, strings, bools and
lists of them; a constant's value is kept whole when small (up to `CONST_CONTENT_BYTES`),
else as dtype and shape only. Each node's output dtypes and shapes become TF's
``_output_shapes`` attr (what ``as_graph_def(add_shapes=True)`` adds), which TensorBoard
shows on the edges.
"""

import numbers

import numpy as np

from nbdist.graph.graph import Graph
from nbdist.graph.graph_def import graph_to_graph_def
from nbdist.ops import summary_protos

CONST_CONTENT_BYTES = 4096  # larger constants are written as dtype + shape only


def graph_def_proto(graph):
    """TF's ``GraphDef`` protobuf of `graph`.

    Args:
        graph: an nbdist `Graph`, a GraphDef dict (`graph_to_graph_def`'s form), or a
            ``GraphDef`` protobuf (returned as is).

    Raises:
        TypeError: anything else.
        ImportError: tensorboardX (a dependency) is missing from this environment.
    """
    pb = summary_protos.load()
    if isinstance(graph, pb.GraphDef):
        return graph
    if isinstance(graph, Graph):
        graph = graph_to_graph_def(graph)
    if not isinstance(graph, dict) or "node" not in graph:
        raise TypeError(
            f"The passed graph must be an instance of `Graph` or a GraphDef (dict or protobuf), got {graph!r}"
        )
    proto = pb.GraphDef()
    proto.versions.producer = int(graph.get("versions", {}).get("producer", 0))
    for node in graph["node"]:
        proto.node.append(node_def_proto(node, pb))
    return proto


def node_def_proto(node, pb):
    """One plain node dict as a ``NodeDef`` protobuf."""
    proto = pb.NodeDef(
        name=node["name"],
        op=node["op"],
        input=[_tf_input_name(i) for i in node.get("input", ())],
        device=node.get("device", "") or "",
    )
    for key, value in node.get("attr", {}).items():
        attr = attr_value(value, pb)
        if attr is not None:
            proto.attr[key].CopyFrom(attr)
    outputs = node.get("output")
    if outputs:
        shapes = [summary_protos.shape_proto(dims, pb) for _, dims in outputs]
        proto.attr["_output_shapes"].CopyFrom(pb.AttrValue(list=pb.AttrValue.ListValue(shape=shapes)))
    return proto


def _tf_input_name(name):
    return name[: -len(":0")] if name.endswith(":0") and not name.startswith("^") else name


def _tag(value):
    if isinstance(value, dict) and len(value) == 1:
        return next(iter(value))
    return None


def attr_value(value, pb):
    """The ``AttrValue`` of one plain attr value, or None when TF has no matching kind."""
    tag = _tag(value)
    if tag == "dtype":
        return pb.AttrValue(type=summary_protos.data_type(value["dtype"], pb))
    if tag == "shape":
        return pb.AttrValue(shape=summary_protos.shape_proto(value["shape"], pb))
    if isinstance(value, np.ndarray):
        small = value.dtype != object and value.nbytes <= CONST_CONTENT_BYTES
        small = small or (value.dtype == object and value.size <= CONST_CONTENT_BYTES // 64)
        return pb.AttrValue(tensor=summary_protos.tensor_proto(value, pb, with_content=small))
    scalar = _scalar_field(value)
    if scalar is not None:
        return pb.AttrValue(**{scalar[0]: scalar[1]})
    if isinstance(value, (list, tuple)):
        return _list_value(value, pb)
    return None


def _scalar_field(value):
    if isinstance(value, (bool, np.bool_)):
        return "b", bool(value)
    if isinstance(value, numbers.Integral):
        return "i", int(value)
    if isinstance(value, numbers.Real):
        return "f", float(value)
    if isinstance(value, str):
        return "s", value.encode()
    if isinstance(value, bytes):
        return "s", value
    return None


def _list_value(values, pb):
    listed = pb.AttrValue.ListValue()
    tags = {_tag(v) for v in values}
    if values and tags == {"dtype"}:
        listed.type.extend(summary_protos.data_type(v["dtype"], pb) for v in values)
    elif values and tags == {"shape"}:
        listed.shape.extend(summary_protos.shape_proto(v["shape"], pb) for v in values)
    else:
        fields = [_scalar_field(v) for v in values]
        kinds = {f[0] for f in fields if f is not None}
        if None in fields or len(kinds) > 1:
            return None  # a list TF's AttrValue cannot hold (mixed kinds, nested lists)
        if kinds:
            getattr(listed, kinds.pop()).extend(f[1] for f in fields)
    return pb.AttrValue(list=listed)
