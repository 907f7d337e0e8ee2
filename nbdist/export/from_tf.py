"""Real TensorFlow's GraphDef into nbdist: ``tf.import_graph_def(tf_graph.as_graph_def())``.

A ``tensorflow.GraphDef`` proto says each node's name, op type, inputs, device and attrs,
but not its output dtypes and shapes, which nbdist's GraphDef carries. `graph_def_of_proto`
therefore rebuilds the nodes with nbdist's own op constructors' machinery
(`registry.make_op`: the shape function of each op type) in a scratch graph, in the
proto's order (inputs before their consumers, as ``as_graph_def()`` writes them), and
returns that graph's GraphDef with the proto's devices. `import_graph_def` is
``tf.import_graph_def``: nbdist's, taking such a proto too.

Attrs are decoded (`tf_protos.decoded_attrs`); TensorFlow's private annotations
(``_``-prefixed) are dropped but for the colocation ``_class``. ``AddV2`` (what TF 2's ``+``
records) is read as nbdist's ``Add``; a node whose op type nbdist does not have raises
`UnsupportedOpError` naming the node and the type.
"""

from nbdist.export.tf_protos import decoded_attrs, input_name, is_proto
from nbdist.export.to_tf import UnsupportedOpError
from nbdist.graph import graph_def as _graph_def
from nbdist.graph.graph import Graph
from nbdist.ops import registry

# TensorFlow op types nbdist has under its TF 1.x name (same values on nbdist's dtypes).
TF_ALIASES = {"AddV2": "Add"}


def graph_def_of_proto(proto):
    """nbdist's GraphDef dict of a TensorFlow ``GraphDef`` proto (see the module docstring).

    Raises:
        UnsupportedOpError: a node of an op type nbdist does not have.
        ValueError: a node nbdist's shape function refuses, or an input defined after its
            consumer (both naming the node).
    """
    scratch = Graph()
    devices = {}
    for node in proto.node:
        op_type = TF_ALIASES.get(node.op, node.op)
        if registry.lookup(op_type, None) is None:
            raise UnsupportedOpError(
                f"node {node.name!r} of the TensorFlow GraphDef is a {node.op} op, which nbdist does "
                "not have (docs/api.md lists nbdist's ops)"
            )
        attrs = {k: v for k, v in decoded_attrs(node).items() if not k.startswith("_") or k == "_class"}
        try:
            inputs = [scratch.get_tensor_by_name(input_name(i)) for i in node.input if not i.startswith("^")]
            controls = [scratch.get_operation_by_name(i[1:]) for i in node.input if i.startswith("^")]
        except KeyError as e:
            raise ValueError(
                f"node {node.name!r} of the TensorFlow GraphDef names an input not defined before it: "
                f"{e.args[0]}"
            ) from None
        try:
            op = registry.make_op(
                op_type, inputs, attrs, name=node.name, graph=scratch, control_inputs=controls
            )
        except (TypeError, ValueError, KeyError) as e:
            raise ValueError(f"node {node.name!r} ({node.op}) of the TensorFlow GraphDef: {e}") from None
        if op.name != node.name:
            raise ValueError(
                f"node {node.name!r} of the TensorFlow GraphDef would be renamed {op.name!r} in nbdist"
            )
        devices[op.name] = node.device
    out = _graph_def.graph_to_graph_def(scratch)
    for node in out["node"]:
        node["device"] = devices[node["name"]]
    return out


def import_graph_def(
    graph_def, input_map=None, return_elements=None, name=None, op_dict=None, producer_op_list=None
):
    """`tf.import_graph_def`: nbdist's (`nbdist.graph.graph_def.import_graph_def`), which also
    takes real TensorFlow's ``GraphDef`` protos (``tf1_graph.as_graph_def()``)."""
    if is_proto(graph_def, "tensorflow.GraphDef"):
        graph_def = graph_def_of_proto(graph_def)
    return _graph_def.import_graph_def(graph_def, input_map, return_elements, name, op_dict, producer_op_list)


import_graph_def.__doc__ = _graph_def.import_graph_def.__doc__.replace(
    "a GraphDef (nbdist's plain-data form, e.g. ``graph.as_graph_def()``).",
    "a GraphDef: nbdist's plain-data form (``graph.as_graph_def()``) or real\n"
    "            TensorFlow's ``GraphDef`` proto (``tf1_graph.as_graph_def()``).",
)
