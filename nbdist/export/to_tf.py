"""`to_tensorflow`: an nbdist graph built in real TensorFlow (``tensorflow.compat.v1``).

The graph goes over op by op, as a ``tensorflow.GraphDef`` that TensorFlow imports with
``tf.import_graph_def(..., name="")``: every op keeps its name, its requested device, its
inputs and control inputs and its colocation (``_class``); its attrs are nbdist's, converted,
plus the type attrs TensorFlow's op definition asks for (``T``, ``N``, ``Tidx``, ...), read
from the dtypes of the op's inputs and outputs. Ops TensorFlow fills defaults for.

The whole graph goes, gradients and optimizer included, so that a training op fetched by
name runs the same update in TensorFlow. nbdist's gradients use a few ops TensorFlow does
not have; each becomes a small TensorFlow subgraph under its name (`_REWRITES`):

=====================  ============================================================
``SumToShape``         ``Sum`` over ``BroadcastGradientArgs``' axes, ``Reshape``
``BroadcastToLike``    ``BroadcastTo`` the ``Shape`` of the second input
``ReducedShape``       ``DynamicStitch`` of the shape with 1 at the reduced axes
``_ReadVariableNow``   ``Identity`` (a read of a ref variable is a snapshot)
``GatherDropNegatives``  ``GatherV2`` of the clipped indices, zeroed by ``SelectV2``
``BooleanMaskNot``     ``GatherV2`` at ``Where(LogicalNot(mask))``
=====================  ============================================================

Any other op TensorFlow lacks (``AccumulatorClose``, ``AccumulatorNumDropped``: nbdist's
introspection of an accumulator) raises `UnsupportedOpError` naming it; ``keep=`` exports
only what the ops you run need.

nbdist's ``tf.train.Saver`` ops (``SaveV2``, ``RestoreV2``, ``MergeV2Checkpoints``: nbdist's
checkpoint format, with signatures of their own) and the ops that depend on them are left
out (`TensorFlowExport.left_out`): in TensorFlow, ``tf.train.Saver()`` over the exported
variables saves and restores in TensorFlow's format.

Variables become TensorFlow ``RefVariable``s over the imported ops (``VariableV2``,
``Assign``, ``read``), in the same collections; their values come from a live nbdist
session or an nbdist checkpoint and are loaded by `TensorFlowExport.initialize` or written
as a TensorFlow checkpoint by `TensorFlowExport.save`.
"""

import numpy as np

from nbdist.export.loops_to_tf import loop_nodes
from nbdist.export.tf_protos import DTYPE_ENUMS
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import get_default_graph
from nbdist.graph.graph_def import node_def_of
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import checkpoint_format
from nbdist.ops.while_ops import LOOP_OPS

# nbdist's Saver ops write nbdist's checkpoint format through signatures of their own: they and
# what depends on them stay behind; TensorFlow programs make a tf.train.Saver of the variables.
CHECKPOINT_OPS = frozenset({"SaveV2", "RestoreV2", "MergeV2Checkpoints"})
# The collections whose variables the export recreates in TensorFlow (same keys as TF's).
VARIABLE_COLLECTIONS = (
    "variables",
    "trainable_variables",
    "local_variables",
    "model_variables",
    "global_step",
)


class UnsupportedOpError(ValueError):
    """An nbdist op that TensorFlow has no counterpart for (named, with what to do)."""


class TensorFlowExport:
    """What `to_tensorflow` built.

    Attributes:
        graph: the ``tf.compat.v1.Graph``.
        variables: ``{name: tf.compat.v1.Variable}`` in nbdist's creation order.
        values: ``{name: numpy array}``: the variables' values carried over (empty when
            none were given: TensorFlow's initializers then start from the initial values).
        left_out: names of the nbdist ops not exported (its Saver's, see the module docstring).
    """

    def __init__(self, graph, variables, values, left_out=()):
        self.graph = graph
        self.variables = variables
        self.values = values
        self.left_out = list(left_out)

    def __getitem__(self, name):
        """The TensorFlow op (``"train"``) or tensor (``"loss:0"``) of an nbdist name."""
        if ":" in name:
            return self.graph.get_tensor_by_name(name)
        return self.graph.get_operation_by_name(name)

    def initialize(self, sess):
        """Initializes every variable in TensorFlow session `sess`, then loads `values`."""
        tf1 = _tf1()
        with self.graph.as_default():
            sess.run(tf1.variables_initializer(list(self.variables.values())))
        for name, value in self.values.items():
            self.variables[name].load(value, sess)

    def save(self, save_path):
        """Writes `values` as a TensorFlow checkpoint at prefix `save_path`, under the variables'
        names, so that ``tf.train.Saver().restore(sess, save_path)`` in the exported graph (or
        on a TensorFlow cluster) loads them. Returns the prefix written.

        Raises:
            ValueError: there are no values (export with ``session=`` or ``checkpoint=``).
        """
        if not self.values:
            raise ValueError(
                "no variable values to save: call to_tensorflow(..., session=sess or checkpoint=path)"
            )
        tf1 = _tf1()
        graph = tf1.Graph()
        with graph.as_default():  # device-free copies: the checkpoint is written on this machine
            saved = [tf1.Variable(value, name=name) for name, value in self.values.items()]
            saver = tf1.train.Saver(saved)
            with tf1.Session(graph=graph) as sess:
                sess.run(tf1.variables_initializer(saved))
                return saver.save(sess, save_path, write_meta_graph=False)

    def export_meta_graph(self, filename):
        """Writes the graph as TensorFlow's MetaGraphDef at `filename`, with a ``tf.train.Saver``
        of the variables (``tf1.train.import_meta_graph(filename)`` returns it). Returns `filename`."""
        tf1 = _tf1()
        with self.graph.as_default():
            saver = tf1.train.Saver(list(self.variables.values()), name="export_saver")
            tf1.train.export_meta_graph(filename, graph=self.graph, saver_def=saver.as_saver_def())
        return filename

    def __repr__(self):
        return (
            f"<TensorFlowExport: {len(self.graph.get_operations())} ops, {len(self.variables)} variables, "
            f"{len(self.values)} values>"
        )


def to_tensorflow(graph=None, *, session=None, checkpoint=None, keep=None, clear_devices=False):
    """Builds an nbdist graph in real TensorFlow (``tensorflow.compat.v1``), ready to run.

    Args:
        graph: the nbdist `Graph` (the default graph when None).
        session: a live nbdist `Session` of `graph`: the variables' current values carry over.
        checkpoint: an nbdist checkpoint prefix (``saver.save``'s return value, or
            ``tf.train.latest_checkpoint(dir)``): the values carry over from it.
        keep: ops, tensors or names: export only what they need (plus every variable and its
            initializer, and the ops they are colocated with). None exports the whole graph.
        clear_devices: drop the requested devices (to run on one TensorFlow process).

    Returns:
        A `TensorFlowExport`: ``.graph``, ``.variables``, ``.values``; ``export["loss:0"]``.

    Raises:
        UnsupportedOpError: an op TensorFlow has no counterpart for (naming it and its type).
        ValueError: both `session` and `checkpoint`, or TensorFlow refusing an op (named).
        ImportError: TensorFlow is not installed (``pip install nbdist[tf]``).

    Example::

        exported = nbdist.export.to_tensorflow(session=sess)
        with tf1.Session(server.target, graph=exported.graph) as tf_sess:   # a real TF cluster
            exported.initialize(tf_sess)
            tf_sess.run(exported["train"], {exported["x:0"]: batch})
    """
    if session is not None and checkpoint is not None:
        raise ValueError("pass session= or checkpoint=, not both: the values come from one of them")
    tf1 = _tf1()
    graph = graph if graph is not None else session.graph if session is not None else get_default_graph()
    ops, left_out = _without_checkpoint_ops(_ops_to_export(graph, keep))
    graph_def = tf1.GraphDef()
    for op in ops:
        node = node_def_of(op)
        if clear_devices:
            node.device = ""
        for proto in _tf_nodes(op, node, graph_def.library):
            graph_def.node.add().CopyFrom(proto)
    tf_graph = tf1.Graph()
    with tf_graph.as_default():
        try:
            tf1.import_graph_def(graph_def, name="")
        except ValueError as e:
            raise ValueError(f"TensorFlow refused the exported graph: {e}") from None
        variables = _variables(tf1, graph, tf_graph)
    return TensorFlowExport(tf_graph, variables, _values(graph, session, checkpoint, variables), left_out)


def _tf1():
    try:
        import tensorflow  # noqa: PLC0415 - the [tf] extra, only for the export
    except ImportError as e:
        raise ImportError(
            f"nbdist.export needs TensorFlow: pip install 'nbdist[tf]' (import failed: {e})"
        ) from None
    return tensorflow.compat.v1


# -- which ops ---------------------------------------------------------------------------------------
def _ops_to_export(graph, keep):
    ops = graph.get_operations()
    if keep is None:
        return ops
    wanted = set()
    variables = [v for key in VARIABLE_COLLECTIONS for v in graph.get_collection(key)]
    todo = [graph.as_graph_element(k) if isinstance(k, str) else k for k in keep]
    todo += [v.initializer for v in variables] + [v.op for v in variables]
    todo = [getattr(t, "op", t) for t in todo]
    while todo:
        op = todo.pop()
        if op.name in wanted:
            continue
        wanted.add(op.name)
        todo.extend(t.op for t in op.inputs)
        todo.extend(op.control_inputs)
        groups = [c[len("loc:@") :] for c in op.attrs.get("_class", ()) if c.startswith("loc:@")]
        todo.extend(graph.get_operation_by_name(g) for g in groups)  # TF checks colocation targets exist
    return [op for op in ops if op.name in wanted]


def _without_checkpoint_ops(ops):
    """``(ops to export, names left out)``: without `CHECKPOINT_OPS` and the ops after them."""
    left_out = set()
    for op in ops:  # creation order: inputs come first
        if (
            op.type in CHECKPOINT_OPS
            or any(t.op.name in left_out for t in op.inputs)
            or any(c.name in left_out for c in op.control_inputs)
        ):
            left_out.add(op.name)
    return [op for op in ops if op.name not in left_out], [op.name for op in ops if op.name in left_out]


# -- op by op -------------------------------------------------------------------------------------
def _tf_nodes(op, node, library):
    """The TensorFlow NodeDef protos of one nbdist op (one, or a rewrite's few); a loop's
    condition and body go to `library` as functions (loops_to_tf.py)."""
    if node.op in LOOP_OPS:
        return loop_nodes(op, node, library, _tf_nodes, _tf1(), UnsupportedOpError)
    rewrite = _REWRITES.get(node.op)
    if rewrite is not None:
        return rewrite(op, node)
    return [_node_proto(op.type, node.name, node.input, node.device, node.attr, _dtypes_of(op))]


def _dtypes_of(op):
    return [t.dtype for t in op.inputs], [t.dtype for t in op.outputs]


def _op_def(op_type, name):
    from tensorflow.python.framework import op_def_registry  # noqa: PLC0415

    op_def = op_def_registry.get(op_type)
    if op_def is None:
        raise UnsupportedOpError(
            f"op {name!r} ({op_type}) has no TensorFlow counterpart, so it cannot be exported; "
            "pass keep=[the ops you run] to export only what they need"
        )
    return op_def


def _node_proto(op_type, name, inputs, device, attrs, dtypes):
    """A TensorFlow NodeDef: `attrs` that TensorFlow's op has (converted), the type attrs
    inferred from the input and output `dtypes`, and the colocation ``_class``."""
    tf1 = _tf1()
    op_def = _op_def(op_type, name)
    in_types, out_types = dtypes
    known = {a.name: a for a in op_def.attr}
    proto = tf1.NodeDef(name=name, op=op_type, device=device)
    proto.input.extend(i[:-2] if i.endswith(":0") and not i.startswith("^") else i for i in inputs)
    inferred = _inferred_attrs(op_def, in_types, out_types)
    for key, value in {**inferred, **{k: v for k, v in attrs.items() if k in known or k == "_class"}}.items():
        try:
            proto.attr[key].CopyFrom(_attr_proto(value, known[key].type if key in known else "list(string)"))
        except (TypeError, ValueError) as e:
            raise ValueError(
                f"op {name!r} ({op_type}): attr {key!r} = {value!r:.60} cannot be exported: {e}"
            ) from None
    return proto


def _inferred_attrs(op_def, in_types, out_types):
    """``{attr: DType / count / [DType]}`` that op_def's input and output args read from the dtypes."""
    out = {}
    for args, types in ((op_def.input_arg, list(in_types)), (op_def.output_arg, list(out_types))):
        i = 0
        for arg, n in zip(args, _arg_counts(args, len(types))):
            if arg.type_list_attr:
                out.setdefault(arg.type_list_attr, types[i : i + n])
            else:
                if arg.number_attr:
                    out.setdefault(arg.number_attr, n)
                if arg.type_attr and n and i < len(types):
                    out.setdefault(arg.type_attr, types[i])
            i += n
    return out


def _arg_counts(args, total):
    """How many tensors each arg takes: one each, the rest shared by the list args."""
    lists = [a for a in args if a.number_attr or a.type_list_attr]
    each = (total - (len(args) - len(lists))) // len(lists) if lists else 1
    return [each if (a.number_attr or a.type_list_attr) else 1 for a in args]


def _attr_proto(value, attr_type):
    """An ``AttrValue`` of an nbdist attr value, of TensorFlow attr type `attr_type`."""
    tf1 = _tf1()
    if attr_type.startswith("list(") and isinstance(value, (list, tuple)):
        inner = attr_type[5:-1]
        av = tf1.AttrValue()
        for item in value:
            one = _attr_proto(item, inner)
            field = one.WhichOneof("value")
            if field in ("shape", "tensor"):
                getattr(av.list, field).add().CopyFrom(getattr(one, field))
            else:
                getattr(av.list, field).append(getattr(one, field))
        if not value:
            av.list.SetInParent()
        return av
    if attr_type == "type":
        return tf1.AttrValue(type=DTYPE_ENUMS[_dtypes.as_dtype(value).name])
    if attr_type == "shape":
        return tf1.AttrValue(shape=_shape_proto(value))
    if attr_type == "tensor":
        return tf1.AttrValue(tensor=_tensor_proto(value))
    if attr_type == "string":
        return tf1.AttrValue(s=value.encode() if isinstance(value, str) else bytes(value))
    if attr_type == "int":
        return tf1.AttrValue(i=int(value))
    if attr_type == "float":
        return tf1.AttrValue(f=float(value))
    if attr_type == "bool":
        return tf1.AttrValue(b=bool(value))
    raise TypeError(f"TensorFlow attr type {attr_type!r} is not exported by nbdist")


def _shape_proto(shape):
    from tensorflow.core.framework import tensor_shape_pb2  # noqa: PLC0415

    dims = TensorShape(shape).dims if not isinstance(shape, TensorShape) else shape.dims
    if dims is None:
        return tensor_shape_pb2.TensorShapeProto(unknown_rank=True)
    return tensor_shape_pb2.TensorShapeProto(
        dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=-1 if d is None else d) for d in dims]
    )


def _tensor_proto(value):
    tf1 = _tf1()
    value = np.asarray(value)
    if value.dtype == object:
        value = np.vectorize(lambda v: v if isinstance(v, bytes) else str(v).encode(), otypes=[object])(value)
    return tf1.make_tensor_proto(value, shape=value.shape)


# -- nbdist's own ops as TensorFlow subgraphs ------------------------------------------------------------
def _int_node(op_type, name, inputs, device, in_types=None):
    """An op on int32 tensors (or of `in_types`) giving one int32 tensor."""
    in_types = [_dtypes.int32] * len(inputs) if in_types is None else in_types
    return _node_proto(op_type, name, inputs, device, {}, (in_types, [_dtypes.int32]))


def _rewrite_sum_to_shape(op, node):
    grad, like = node.data_inputs
    dtype, d, n = op.outputs[0].dtype, node.device, node.name
    return [
        _int_node("Shape", f"{n}/target", [like], d, [op.inputs[1].dtype]),
        _int_node("Shape", f"{n}/shape", [grad], d, [dtype]),
        _int_node("BroadcastGradientArgs", f"{n}/axes", [f"{n}/target", f"{n}/shape"], d),
        _node_proto(
            "Sum", f"{n}/sum", [grad, f"{n}/axes"], d, {"keep_dims": True}, ([dtype, _dtypes.int32], [dtype])
        ),
        _node_proto("Reshape", n, [f"{n}/sum", f"{n}/target"], d, {}, ([dtype, _dtypes.int32], [dtype])),
    ]


def _rewrite_broadcast_to_like(op, node):
    x, like = node.data_inputs
    dtype, d, n = op.outputs[0].dtype, node.device, node.name
    return [
        _int_node("Shape", f"{n}/shape", [like], d, [op.inputs[1].dtype]),
        _node_proto("BroadcastTo", n, [x, f"{n}/shape"], d, {}, ([dtype, _dtypes.int32], [dtype])),
    ]


def _rewrite_reduced_shape(op, node):
    shape, axes = node.data_inputs
    d, n = node.device, node.name
    i32 = _dtypes.int32
    return [
        _int_node("Size", f"{n}/rank", [shape], d),
        _const(f"{n}/zero", 0, d),
        _const(f"{n}/one", 1, d),
        _int_node("Range", f"{n}/dims", [f"{n}/zero", f"{n}/rank", f"{n}/one"], d),
        _int_node("AddV2", f"{n}/shifted", [axes, f"{n}/rank"], d),
        _int_node("FloorMod", f"{n}/axes", [f"{n}/shifted", f"{n}/rank"], d),
        _int_node("Shape", f"{n}/axes_shape", [f"{n}/axes"], d),
        _int_node("Fill", f"{n}/ones", [f"{n}/axes_shape", f"{n}/one"], d),
        _node_proto(
            "DynamicStitch",
            n,
            [f"{n}/dims", f"{n}/axes", shape, f"{n}/ones"],
            d,
            {},
            ([i32] * 4, [i32]),
        ),
    ]


def _rewrite_read_now(op, node):
    return [_node_proto("Identity", node.name, node.input, node.device, {}, _dtypes_of(op))]


def _rewrite_gather_drop_negatives(op, node):
    params, indices = node.data_inputs
    dtype, itype, d, n = op.outputs[0].dtype, op.inputs[1].dtype, node.device, node.name
    rank_gap = op.inputs[0].shape.ndims
    if rank_gap is None:
        raise UnsupportedOpError(f"op {n!r} (GatherDropNegatives) needs params of known rank to be exported")
    return [
        _node_proto("ZerosLike", f"{n}/zero_ids", [indices], d, {}, ([itype], [itype])),
        _node_proto("Maximum", f"{n}/ids", [indices, f"{n}/zero_ids"], d, {}, ([itype, itype], [itype])),
        _const(f"{n}/axis", 0, d),
        _node_proto(
            "GatherV2",
            f"{n}/gathered",
            [params, f"{n}/ids", f"{n}/axis"],
            d,
            {},
            ([dtype, itype, _dtypes.int32], [dtype]),
        ),
        _node_proto(
            "GreaterEqual", f"{n}/kept", [indices, f"{n}/zero_ids"], d, {}, ([itype, itype], [_dtypes.bool])
        ),
        _node_proto("Shape", f"{n}/ids_shape", [indices], d, {}, ([itype], [_dtypes.int32])),
        _const(f"{n}/ones", np.ones(rank_gap - 1, np.int32), d),
        _const(f"{n}/concat_axis", 0, d),
        _node_proto(
            "ConcatV2",
            f"{n}/mask_shape",
            [f"{n}/ids_shape", f"{n}/ones", f"{n}/concat_axis"],
            d,
            {},
            ([_dtypes.int32] * 3, [_dtypes.int32]),
        ),
        _node_proto(
            "Reshape",
            f"{n}/mask",
            [f"{n}/kept", f"{n}/mask_shape"],
            d,
            {},
            ([_dtypes.bool, _dtypes.int32], [_dtypes.bool]),
        ),
        _node_proto("ZerosLike", f"{n}/zeros", [f"{n}/gathered"], d, {}, ([dtype], [dtype])),
        _node_proto(
            "SelectV2",
            n,
            [f"{n}/mask", f"{n}/gathered", f"{n}/zeros"],
            d,
            {},
            ([_dtypes.bool, dtype, dtype], [dtype]),
        ),
    ]


def _rewrite_boolean_mask_not(op, node):
    values, mask = node.data_inputs
    dtype, d, n = op.outputs[0].dtype, node.device, node.name
    b, i32, i64 = _dtypes.bool, _dtypes.int32, _dtypes.int64
    return [
        _node_proto("LogicalNot", f"{n}/drop", [mask], d, {}, ([b], [b])),
        _node_proto("Where", f"{n}/where", [f"{n}/drop"], d, {}, ([b], [i64])),
        _const(f"{n}/flat", [-1], d),
        _node_proto("Reshape", f"{n}/ids", [f"{n}/where", f"{n}/flat"], d, {}, ([i64, i32], [i64])),
        _const(f"{n}/axis", 0, d),
        _node_proto("GatherV2", n, [values, f"{n}/ids", f"{n}/axis"], d, {}, ([dtype, i64, i32], [dtype])),
    ]


def _const(name, value, device):
    value = np.asarray(value, np.int32)
    dtype = _dtypes.int32
    return _node_proto("Const", name, [], device, {"value": value, "dtype": dtype}, ([], [dtype]))


_REWRITES = {
    "SumToShape": _rewrite_sum_to_shape,
    "BroadcastToLike": _rewrite_broadcast_to_like,
    "ReducedShape": _rewrite_reduced_shape,
    "_ReadVariableNow": _rewrite_read_now,
    "GatherDropNegatives": _rewrite_gather_drop_negatives,
    "BooleanMaskNot": _rewrite_boolean_mask_not,
}


# -- variables and their values -----------------------------------------------------------------------
def _variables(tf1, graph, tf_graph):
    """``{name: RefVariable}`` over the imported ops, added to the same collections."""
    from tensorflow.core.framework import variable_pb2  # noqa: PLC0415

    out = {}
    for key in VARIABLE_COLLECTIONS:
        for var in graph.get_collection(key):
            name = var.op.name
            if name not in out:
                if name not in {op.name for op in tf_graph.get_operations()}:
                    continue
                var_def = variable_pb2.VariableDef(
                    variable_name=var.op.outputs[0].name,
                    initializer_name=var.initializer.name,
                    snapshot_name=var.value().name,
                    trainable=bool(getattr(var, "trainable", True)),
                )
                out[name] = tf1.Variable(variable_def=var_def, use_resource=False)  # ref, as nbdist
            tf_graph.add_to_collection(key, out[name])
    return out


def _values(graph, session, checkpoint, variables):
    if session is not None:
        by_name = {v.op.name: v for key in VARIABLE_COLLECTIONS for v in graph.get_collection(key)}
        fetched = session.run({name: by_name[name] for name in variables})
        return {name: np.asarray(fetched[name]) for name in variables}
    if checkpoint is not None:
        index = checkpoint_format.read_index(checkpoint)
        names = [n for n in variables if n in index["tensors"]]
        return dict(zip(names, checkpoint_format.read_tensors(checkpoint, names, index)))
    return {}
