"""GraphDef: a graph as plain data (dicts, lists, strings, numbers, numpy arrays).

This is what a client ships to a master and a master ships to workers. A node is::

    {"name": "MatMul", "op": "MatMul", "input": ["x:0", "w/read:0", "^init"],
     "device": "/job:worker/task:0", "attr": {"transpose_a": False, ...},
     "output": [["float32", [None, 10]]]}

Attr values that are not plain data are tagged: a dtype is ``{"dtype": "float32"}``
and a shape ``{"shape": [None, 3]}`` (``{"shape": None}`` for unknown rank).
"""

import numpy as np

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import Graph, Operation
from nbdist.graph.tensor_shape import TensorShape

GRAPH_DEF_VERSION = 1


class MalformedGraphDefError(errors.InvalidArgumentError, ValueError):
    """A GraphDef that cannot be decoded: TF's InvalidArgumentError, also a ValueError."""

    def __init__(self, message):
        super().__init__(None, None, message)


class NodeDef:
    """One node as the runtime sees it: name, op type, input names, device, attrs.

    ``input`` holds ``"op:index"`` for data inputs and ``"^op"`` for control inputs;
    ``output`` holds ``(DType, TensorShape)`` per output. Attrs are decoded (DTypes,
    TensorShapes, numpy arrays).
    """

    __slots__ = ("name", "op", "input", "device", "attr", "output")

    def __init__(self, name, op, input=(), device="", attr=None, output=()):  # noqa: A002
        self.name = name
        self.op = op
        self.input = list(input)
        self.device = device
        self.attr = dict(attr or {})
        self.output = list(output)

    @property
    def data_inputs(self):
        return [i for i in self.input if not i.startswith("^")]

    @property
    def control_inputs(self):
        return [i[1:] for i in self.input if i.startswith("^")]

    def copy(self):
        return NodeDef(self.name, self.op, self.input, self.device, self.attr, self.output)

    def to_dict(self):
        return {
            "name": self.name,
            "op": self.op,
            "input": list(self.input),
            "device": self.device,
            "attr": {k: encode_attr(v) for k, v in self.attr.items()},
            "output": [[dt.name, sh.dims] for dt, sh in self.output],
        }

    @classmethod
    def from_dict(cls, d):
        if not isinstance(d, dict):
            raise MalformedGraphDefError(f"malformed NodeDef: a map is needed, got {type(d).__name__}")
        fields = {"name": d.get("name"), "op": d.get("op"), "device": d.get("device", "")}
        for field, value in fields.items():
            if not isinstance(value, str):
                raise MalformedGraphDefError(
                    f"malformed NodeDef {d.get('name')!r}: {field} must be a string, got {value!r}"
                )
        inputs = d.get("input", ())
        if not isinstance(inputs, (list, tuple)) or not all(isinstance(i, str) for i in inputs):
            raise MalformedGraphDefError(
                f"malformed NodeDef {d['name']!r}: input must be a list of strings, got {inputs!r}"
            )
        try:
            return cls(
                d["name"],
                d["op"],
                d.get("input", ()),
                d.get("device", ""),
                {k: decode_attr(v) for k, v in d.get("attr", {}).items()},
                [(_dtypes.as_dtype(dt), TensorShape(sh)) for dt, sh in d.get("output", ())],
            )
        except (KeyError, TypeError, ValueError) as e:
            raise MalformedGraphDefError(f"malformed NodeDef {d.get('name', '?')!r}: {e}") from None

    def __repr__(self):
        return f"NodeDef(name={self.name!r}, op={self.op!r}, device={self.device!r})"


class SubgraphDef:
    """A function kept in an op's attrs (a `tf.while_loop`'s condition or body): its nodes, the
    placeholders it takes (``"x:0"``, in order) and the tensors it gives.

    Encoded as ``{"subgraph": {"node": [...], "input": [...], "output": [...]}}``.
    """

    __slots__ = ("nodes", "inputs", "outputs", "cache")

    def __init__(self, nodes, inputs, outputs):
        self.nodes = list(nodes)
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.cache = {}  # what the runtime compiled from it (its plan), per process

    @classmethod
    def of(cls, graph, inputs, outputs):
        """The SubgraphDef of every op of `graph` (a `FuncGraph`), taking `inputs` and giving `outputs`."""
        return cls(
            [node_def_of(op) for op in graph.get_operations()],
            [tensor_input_name(t) for t in inputs],
            [tensor_input_name(t) for t in outputs],
        )

    def to_dict(self):
        return {"node": [n.to_dict() for n in self.nodes], "input": self.inputs, "output": self.outputs}

    @classmethod
    def from_dict(cls, d):
        if not isinstance(d, dict):
            raise MalformedGraphDefError(f"malformed subgraph: a map is needed, got {type(d).__name__}")
        names = d.get("input", []), d.get("output", [])
        if not all(isinstance(x, list) and all(isinstance(n, str) for n in x) for x in names):
            raise MalformedGraphDefError("malformed subgraph: input and output must be lists of tensor names")
        nodes = nodes_from_graph_def(d)
        known = {n.name: len(n.output) for n in nodes}
        for name in [*names[0], *names[1]]:
            op, _, index = name.rpartition(":")
            if known.get(op, 0) <= (int(index) if index.isdigit() else -1):
                raise MalformedGraphDefError(f"malformed subgraph: it has no tensor {name!r}")
        return cls(nodes, *names)

    def __eq__(self, other):
        return isinstance(other, SubgraphDef) and _equal(self.to_dict(), other.to_dict())

    __hash__ = None

    def __repr__(self):
        return f"SubgraphDef({len(self.nodes)} nodes, {self.inputs} -> {self.outputs})"


def encode_attr(value):
    if isinstance(value, SubgraphDef):
        return {"subgraph": value.to_dict()}
    if isinstance(value, _dtypes.DType):
        return {"dtype": value.name}
    if isinstance(value, TensorShape):
        return {"shape": value.dims}
    if isinstance(value, (list, tuple)):
        return [encode_attr(v) for v in value]
    return value


def decode_attr(value):
    if isinstance(value, dict) and len(value) == 1:
        if "dtype" in value:
            return _dtypes.as_dtype(value["dtype"])
        if "shape" in value:
            return TensorShape(value["shape"])
        if "subgraph" in value:
            return SubgraphDef.from_dict(value["subgraph"])
    if isinstance(value, list):
        return [decode_attr(v) for v in value]
    return value


def tensor_input_name(tensor):
    return f"{tensor.op.name}:{tensor.value_index}"


def node_def_of(op):
    """The `NodeDef` of a recorded `Operation`."""
    inputs = [tensor_input_name(t) for t in op.inputs]
    inputs += [f"^{c.name}" for c in op.control_inputs]
    return NodeDef(
        op.name,
        op.type,
        inputs,
        op.device,
        op.attrs,
        [(t.dtype, t.shape) for t in op.outputs],
    )


# `op.node_def` (TF's name), installed here so that graph.py never imports this module.
Operation.node_def = property(node_def_of, doc="The `NodeDef` of this op (plain data).")


def graph_to_graph_def(graph, from_version=0):
    """The graph's ops ``[from_version:]`` as a GraphDef dict (an extension when > 0)."""
    ops = graph.operations_since(from_version)
    return {
        "versions": {"producer": GRAPH_DEF_VERSION},
        "node": [node_def_of(op).to_dict() for op in ops],
    }


def nodes_from_graph_def(graph_def):
    """The `NodeDef`s of a GraphDef dict, decoded and checked for duplicates."""
    nodes, seen = [], set()
    node_list = graph_def.get("node", []) if isinstance(graph_def, dict) else None
    if not isinstance(node_list, list):
        raise MalformedGraphDefError(
            f"malformed GraphDef: a map with a 'node' list is needed, got {graph_def!r:.80}"
        )
    for d in node_list:
        node = NodeDef.from_dict(d)
        if node.name in seen:
            raise MalformedGraphDefError(f"GraphDef has two nodes named {node.name!r}")
        seen.add(node.name)
        nodes.append(node)
    return nodes


def graph_from_graph_def(graph_def, graph=None):
    """Recreates the ops of `graph_def` exactly (names unchanged) in `graph` (a new `Graph` by default).

    Nodes must come after their inputs (as `graph_to_graph_def` writes them). Returns the
    graph. `tf.import_graph_def` is TF's form: into the default graph, under a prefix.
    """
    graph = graph or Graph()
    for node in nodes_from_graph_def(graph_def):
        inputs, controls = _resolve_inputs(graph, node, lambda name: name)
        graph.add_imported_op(node.op, node.name, inputs, node.output, node.attr, controls, node.device)
    return graph


def _resolve_inputs(graph, node, rename, input_map=None):
    """The input tensors and control-input ops of `node` in `graph` (names through `rename`)."""
    input_map = input_map or {}
    try:
        inputs = [
            input_map[i] if i in input_map else graph.get_tensor_by_name(rename(i)) for i in node.data_inputs
        ]
        controls = [
            input_map[f"^{c}"] if f"^{c}" in input_map else graph.get_operation_by_name(rename(c))
            for c in node.control_inputs
        ]
    except KeyError as e:  # TF raises ValueError for a GraphDef that names a missing input
        raise ValueError(
            f"node {node.name!r} of the GraphDef names an input that is not defined before it: {e.args[0]}"
        ) from None
    return inputs, controls


def _op_name(name):
    """The op of a tensor name, control input or op name: ``"x:1"``, ``"^x"``, ``"x"`` -> ``"x"``."""
    name = name.lstrip("^")
    return name.rpartition(":")[0] if ":" in name else name


def _tensor_key(name):
    """``"x"`` -> ``"x:0"``; ``"x:1"`` and ``"^x"`` unchanged (TF's input_map keys)."""
    return name if name.startswith("^") or ":" in name else f"{name}:0"


def import_graph_def(
    graph_def, input_map=None, return_elements=None, name=None, op_dict=None, producer_op_list=None
):
    """`tf.import_graph_def`: adds the ops of `graph_def` to the default graph, under a prefix.

    Args:
        graph_def: a GraphDef (nbdist's plain-data form, e.g. ``graph.as_graph_def()``).
        input_map: ``{name in graph_def: Tensor}``: inputs to replace by existing tensors
            (``"x:0"``, or ``"x"`` for ``"x:0"``; ``"^x"`` maps a control input to an op).
        return_elements: names in `graph_def` to return: ``"op"`` gives the imported
            `Operation`, ``"op:0"`` its `Tensor`.
        name: the prefix (a name scope, made unique: ``import``, ``import_1``, ...; ``""``
            imports the names unchanged). Defaults to ``"import"``.
        op_dict, producer_op_list: accepted, unused (TF's too).

    Returns:
        The list of `return_elements` (None when it is None).

    Raises:
        ValueError: an `input_map` key or a return element that `graph_def` does not have,
            or a node whose input is missing.
    """
    from nbdist.graph.graph import get_default_graph  # noqa: PLC0415 - the default graph at call time

    graph = get_default_graph()
    input_map = {_tensor_key(k): v for k, v in (input_map or {}).items()}
    nodes = nodes_from_graph_def(graph_def)
    names = {n.name for n in nodes}
    unused = sorted(k for k in input_map if _op_name(k) not in names)
    if unused:
        raise ValueError(f"Attempted to map inputs that were not found in graph_def: [{', '.join(unused)}]")
    with graph.name_scope("import" if name is None else name) as prefix:
        rename = lambda n: prefix + n  # noqa: E731
        for node in nodes:
            inputs, controls = _resolve_inputs(graph, node, rename, input_map)
            attrs = dict(node.attr)
            if "_class" in attrs:  # colocation groups name ops of the GraphDef: prefix them too
                attrs["_class"] = [
                    f"loc:@{prefix}{c[5:]}" if c.startswith("loc:@") else c for c in attrs["_class"]
                ]
            graph.add_imported_op(
                node.op, rename(node.name), inputs, node.output, attrs, controls, node.device
            )
    if return_elements is None:
        return None
    out = []
    for element in return_elements:
        if _op_name(element) not in names:
            raise ValueError(f"Requested return_element {element!r} not found in graph_def.")
        out.append(
            graph.get_tensor_by_name(prefix + element)
            if ":" in element
            else graph.get_operation_by_name(prefix + element)
        )
    return out


def _as_graph_def(graph, from_version=None, add_shapes=False):
    """`Graph.as_graph_def()`: the whole graph as a GraphDef (plain data)."""
    return graph_to_graph_def(graph, from_version or 0)


Graph.as_graph_def = _as_graph_def


def graph_defs_equal(a, b):
    """True when two GraphDef dicts are equal (numpy attrs compared by value and dtype)."""
    return _equal(a, b)


def _equal(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and bool(np.all(a == b))
        )
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and all(map(_equal, a, b))
    return a == b and type(a) is type(b)
