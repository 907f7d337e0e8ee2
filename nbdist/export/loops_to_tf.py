"""A `tf.while_loop` exported to real TensorFlow: TF's functional ``While`` / ``StatelessWhile``.

nbdist's loop op (ops/while_ops.py) keeps its condition and body as subgraphs; TensorFlow's
functional loop keeps them as functions of the GraphDef's library. Each subgraph is exported
op by op (as the graph is, nested loops included) into a TensorFlow graph, and made a
``FunctionDef``. TensorFlow's loop takes every loop variable in and out, so the captured
tensors become loop variables the body passes through, and ``maximum_iterations`` becomes two
more (a counter and its limit: the condition is ``counter < limit and cond(...)``, as TF 2's
``while_loop`` builds it).

Not exported: the values a body accumulates (`tf.map_fn` / `tf.scan`: TF keeps them in
TensorLists) and the loop's gradient (``WhileGrad``) - `UnsupportedOpError` names the op;
``keep=`` exports the forward graph only.
"""

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import Graph
from nbdist.graph.graph_def import graph_from_graph_def, node_def_of


def loop_nodes(op, node, library, tf_nodes, tf1, unsupported):
    """The TensorFlow NodeDef protos of loop `op` (its ``While`` and a counter's constant), its
    condition and body added to `library` as functions.

    Args:
        tf_nodes: ``tf_nodes(op, node, library)``, the exporter of one op (for the bodies' ops).
        tf1: ``tensorflow.compat.v1``.
        unsupported: the error class for what cannot be exported (`UnsupportedOpError`).
    """
    attrs = node.attr
    loop = attrs.get("loop", node.name)
    if attrs["accumulated"]:
        raise unsupported(
            f"op {node.name!r} ({node.op}) is the loop of a tf.map_fn / tf.scan (while loop {loop!r}): its "
            "stacked outputs are not exported to TensorFlow yet; pass keep=[...] without it"
        )
    n_vars, has_max = attrs["n_vars"], attrs["has_maximum_iterations"]
    first_capture = n_vars + (1 if has_max else 0)
    var_inputs = node.input[:n_vars]
    captures = node.input[first_capture:]
    types = [t.dtype for t in op.inputs[:n_vars]]
    types += [_dtypes.int32, _dtypes.int32] if has_max else []
    types += [t.dtype for t in op.inputs[first_capture:]]
    inputs, protos = list(var_inputs), []
    if has_max:
        start = f"{node.name}/loop_counter"
        protos.append(
            tf1.NodeDef(
                name=start,
                op="Const",
                device=node.device,
                attr={
                    "dtype": tf1.AttrValue(type=_dtype_enum(_dtypes.int32)),
                    "value": tf1.AttrValue(tensor=tf1.make_tensor_proto(0, tf1.int32)),
                },
            )
        )
        inputs += [start, node.input[n_vars]]
    inputs += captures
    inputs += [i for i in node.input if i.startswith("^")]
    base = node.name.replace("/", "_")
    _add_function(f"{base}_cond", attrs["cond"], n_vars, has_max, "cond", library, tf_nodes, tf1)
    _add_function(f"{base}_body", attrs["body"], n_vars, has_max, "body", library, tf_nodes, tf1)
    proto = tf1.NodeDef(name=node.name, op=node.op, device=node.device)
    proto.input.extend(i[:-2] if i.endswith(":0") and not i.startswith("^") else i for i in inputs)
    proto.attr["T"].list.type.extend(_dtype_enum(t) for t in types)
    proto.attr["cond"].func.name = f"{base}_cond"
    proto.attr["body"].func.name = f"{base}_body"
    proto.attr["parallel_iterations"].i = 10
    protos.append(proto)
    return protos


def _dtype_enum(dtype):
    from nbdist.export.tf_protos import DTYPE_ENUMS  # noqa: PLC0415 - the TF-facing table

    return DTYPE_ENUMS[dtype.name]


def _add_function(name, subgraph, n_vars, has_max, kind, library, tf_nodes, tf1):
    """Adds the FunctionDef `name` of `subgraph` (a loop's condition or body) to `library`."""
    from tensorflow.python.framework import graph_to_function_def  # noqa: PLC0415

    scratch = graph_from_graph_def({"node": [n.to_dict() for n in subgraph.nodes]}, Graph())
    graph_def = tf1.GraphDef()
    for op in scratch.get_operations():
        node = node_def_of(op)
        node.device = ""
        for proto in tf_nodes(op, node, library):
            graph_def.node.add().CopyFrom(proto)
    graph = tf1.Graph()
    with graph.as_default():
        graph_def.library.CopyFrom(library)
        tf1.import_graph_def(graph_def, name="")
        inputs = [graph.get_tensor_by_name(n) for n in subgraph.inputs]
        outputs = [graph.get_tensor_by_name(n) for n in subgraph.outputs]
        captures = inputs[n_vars:]
        if has_max:
            counter = tf1.placeholder(tf1.int32, [], name="loop_counter")
            limit = tf1.placeholder(tf1.int32, [], name="loop_limit")
            inputs = [*inputs[:n_vars], counter, limit, *captures]
            if kind == "cond":
                outputs = [tf1.logical_and(tf1.less(counter, limit), outputs[0])]
            else:
                outputs = [*outputs, counter + 1, tf1.identity(limit)]
        if kind == "body":
            outputs = [*outputs, *(tf1.identity(c) for c in captures)]  # captures pass through
        given = {t.op for t in inputs}
        ops = [o for o in graph.get_operations() if o not in given]
        function = graph_to_function_def.graph_to_function_def(graph, ops, inputs, outputs)
    function.signature.name = name
    library.function.add().CopyFrom(function)
