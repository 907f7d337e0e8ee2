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
`UnsupportedOpError` naming the node and the type. A TF 1.x ``tf.cond`` (Switch and Merge)
imports and runs; a TF 1.x loop frame (Enter, Exit, NextIteration, LoopCond) and TF 2's
functional ``If`` / ``While`` are refused, naming the node and what to do instead.
"""

from nbdist.export.tf_protos import decoded_attrs, input_name, is_proto
from nbdist.export.to_tf import UnsupportedOpError
from nbdist.graph import graph_def as _graph_def
from nbdist.graph.graph import Graph
from nbdist.ops import registry

# TensorFlow op types nbdist has under its TF 1.x name (same values on nbdist's dtypes).
TF_ALIASES = {"AddV2": "Add"}
# A TF 1.x while loop is a frame of these (a cycle through NextIteration), TF 2's loops and
# conds functional ops over a function library: nbdist imports neither (tf.cond's Switch and
# Merge it does).
LOOP_FRAME_OPS = frozenset(
    {"Enter", "RefEnter", "Exit", "RefExit", "NextIteration", "RefNextIteration", "LoopCond"}
)
FUNCTIONAL_OPS = frozenset({"While", "StatelessWhile", "If", "StatelessIf", "Case", "StatelessCase"})


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
        _refuse_loops(node)
    for node in _inputs_first(proto.node):
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


def _inputs_first(nodes):
    """`nodes` in their order, but each after its inputs: TF's cond rewires a branch op's input
    to a Switch it creates later, so ``as_graph_def()`` may list a consumer first. A node whose
    input is missing (or a cycle) keeps its place, for the error to name it."""
    by_name = {n.name: n for n in nodes}
    placed, out = set(), []
    for first in nodes:
        stack, seen = [(first, False)], set()
        while stack:  # depth first, without recursion (a long chain would overflow it)
            node, expanded = stack.pop()
            if node.name in placed:
                continue
            if expanded:
                placed.add(node.name)
                out.append(node)
                continue
            if node.name in seen:
                continue
            seen.add(node.name)
            stack.append((node, True))
            for i in reversed(node.input):
                dep = by_name.get(input_name(i.lstrip("^")).rpartition(":")[0])
                if dep is not None and dep.name not in placed:
                    stack.append((dep, False))
    return out


def _refuse_loops(node):
    """Raises `UnsupportedOpError` for a loop frame's op or a functional control-flow op."""
    if node.op in LOOP_FRAME_OPS:
        raise UnsupportedOpError(
            f"node {node.name!r} of the TensorFlow GraphDef is a {node.op} op: part of a TF 1.x "
            "tf.while_loop (Enter/Merge/Switch/NextIteration/Exit frames), which nbdist does not "
            "import; build the loop with nbdist's tf.while_loop instead (docs/api.md, control flow)"
        )
    if node.op in FUNCTIONAL_OPS:
        raise UnsupportedOpError(
            f"node {node.name!r} of the TensorFlow GraphDef is a {node.op} op (TF 2's functional "
            "control flow, over a function library), which nbdist does not import; export the "
            "graph from tensorflow.compat.v1 with v2 control flow off "
            "(tf.compat.v1.disable_control_flow_v2()), or build it with nbdist's tf.cond / tf.while_loop"
        )


def import_graph_def(
    graph_def, input_map=None, return_elements=None, name=None, op_dict=None, producer_op_list=None
):
    """`tf.import_graph_def`: nbdist's (`nbdist.graph.graph_def.import_graph_def`), which also
    takes real TensorFlow's ``GraphDef`` protos (``tf1_graph.as_graph_def()``)."""
    if is_proto(graph_def, "tensorflow.GraphDef") or is_proto(graph_def, "tensorboardX.GraphDef"):
        graph_def = graph_def_of_proto(graph_def)  # real TF's, or tf.GraphDef (the same message)
    return _graph_def.import_graph_def(graph_def, input_map, return_elements, name, op_dict, producer_op_list)


import_graph_def.__doc__ = _graph_def.import_graph_def.__doc__.replace(
    "a GraphDef (nbdist's plain-data form, e.g. ``graph.as_graph_def()``).",
    "a GraphDef: nbdist's plain-data form (``graph.as_graph_def()``), real\n"
    "            TensorFlow's ``GraphDef`` proto (``tf1_graph.as_graph_def()``) or a\n"
    "            ``tf.GraphDef`` (e.g. parsed from a frozen model's ``.pb`` file).",
)
