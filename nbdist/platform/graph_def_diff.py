"""`tf.test.assert_equal_graph_def`: two nbdist GraphDefs compared as TF's ``EqualGraphDef``.

Nodes are matched by name; versions, the order of nodes and attrs, control inputs' order and
internal attrs (``_class``, ...) do not matter; an input ``x`` equals ``x:0``. The first
difference is reported in TF's words (``Node named 'c' has op 'Sub' that is not expected
'Mul'``), nodes and attr values summarised as TF summarises them (``{{node d}} =
Identity[T=DT_FLOAT](c)``, ``DT_FLOAT``, ``[?,3]``, ``Tensor<type: float shape: [2] values: 1 2>``).
"""

import numpy as np

from nbdist.graph.dtypes import DType
from nbdist.graph.graph_def import nodes_from_graph_def
from nbdist.graph.tensor_shape import TensorShape

__all__ = ["assert_equal_graph_def"]

# TF's DataType names: the enum's (DT_FLOAT) and DataTypeString's (float).
_TF_TYPE = {
    "float32": "float",
    "float64": "double",
    "float16": "half",
}
_MAX_TENSOR_ENTRIES = 3  # TF's SummarizeTensor shows this many values


def assert_equal_graph_def(actual, expected, checkpoint_v2=False, hash_table_shared_name=False):
    """Asserts that two GraphDefs (``graph.as_graph_def()``) are the same graph.

    Args:
        actual: the GraphDef we have.
        expected: the GraphDef we expected.
        checkpoint_v2, hash_table_shared_name: accepted (TF's); nbdist's GraphDefs hold no
            randomized attribute values to ignore.

    Raises:
        AssertionError: the first difference, in TF's words.
        TypeError: either argument is not a GraphDef.
    """
    for what, value in (("actual", actual), ("expected", expected)):
        if not (isinstance(value, dict) and isinstance(value.get("node", []), list)):
            raise TypeError(f"Expected tf.GraphDef for {what}, got {type(value).__name__}")
    diff = _graph_diff(nodes_from_graph_def(actual), nodes_from_graph_def(expected))
    if diff:
        raise AssertionError(diff)


def _graph_diff(actual_nodes, expected_nodes):
    actual = {n.name: n for n in actual_nodes}
    for node in expected_nodes:
        mine = actual.pop(node.name, None)
        if mine is None:
            return f"Did not find expected node '{summarize_node_def(node)}'"
        diff = _node_diff(mine, node)
        if diff:
            return diff
    if actual:
        return f"Found unexpected node '{summarize_node_def(next(iter(actual.values())))}'"
    return None


def _node_diff(actual, expected):
    named = f"Node named '{actual.name}'"
    if actual.op != expected.op:
        return f"{named} has op '{actual.op}' that is not expected '{expected.op}'"
    if actual.device != expected.device:
        return f"{named} has device '{actual.device}' that is not expected '{expected.device}'"
    a_inputs, e_inputs = [_tf_input(i) for i in actual.input], [_tf_input(i) for i in expected.input]
    if len(a_inputs) != len(e_inputs):
        return f"{named} has inputs '{', '.join(a_inputs)}' that don't match expected '{', '.join(e_inputs)}'"
    first_control = next((i for i, name in enumerate(a_inputs) if name.startswith("^")), len(a_inputs))
    for i in range(first_control):
        if a_inputs[i] != e_inputs[i]:
            return f"{named} has input {i} '{a_inputs[i]}' that doesn't match expected '{e_inputs[i]}'"
    a_control, e_control = set(a_inputs[first_control:]), e_inputs[first_control:]
    for name in e_control:
        if name not in a_control:
            return f"{named} missing expected control input '{name}'"
        a_control.discard(name)
    if a_control:
        return f"{named} has unexpected control input '{sorted(a_control)[0]}'"
    return _attr_diff(named, actual.attr, expected.attr)


def _attr_diff(named, actual, expected):
    for key, value in actual.items():
        if key.startswith("_"):
            continue
        if key not in expected:
            return f"{named} has unexpected attr '{key}' with value: {summarize_attr_value(value)}"
        if not _attr_equal(value, expected[key]):
            return (
                f"{named} has attr '{key}' with value: {summarize_attr_value(value)} that does not match "
                f"expected: {summarize_attr_value(expected[key])}"
            )
    for key, value in expected.items():
        if not key.startswith("_") and key not in actual:
            return f"{named} missing expected attr '{key}' with value: {summarize_attr_value(value)}"
    return None


def _tf_input(name):
    """TF writes output 0 of op ``x`` as ``x`` (and ``x:0`` means the same)."""
    return name[:-2] if name.endswith(":0") else name


def _attr_equal(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.dtype == b.dtype and a.shape == b.shape and bool(np.all(a == b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_attr_equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def summarize_node_def(node):
    """TF's ``SummarizeNodeDef``: ``{{node name}} = Op[attr=value, ...](inputs)``."""
    attrs = [f"{k}={summarize_attr_value(node.attr[k])}" for k in sorted(node.attr)]
    if node.device:
        attrs.append(f'_device="{node.device}"')
    inputs = ", ".join(_tf_input(i) for i in node.input)
    return f"{{{{node {node.name}}}}} = {node.op}[{', '.join(attrs)}]({inputs})"


def summarize_attr_value(value):
    """TF's ``SummarizeAttrValue`` of a decoded nbdist attr."""
    if isinstance(value, DType):
        return "DT_" + _TF_TYPE.get(value.name, value.name).upper()
    if isinstance(value, TensorShape):
        if value.ndims is None:
            return "<unknown>"
        return "[" + ",".join("?" if d is None else str(d) for d in value.dims) + "]"
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return _float(np.float32(value))
    if isinstance(value, (str, bytes)):
        return f'"{_c_escape(value)}"'
    if isinstance(value, np.ndarray):
        return _summarize_tensor(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(summarize_attr_value(v) for v in value) + "]"
    return repr(value)


def _summarize_tensor(array):
    dtype = "string" if array.dtype.kind in "OSU" else _TF_TYPE.get(array.dtype.name, array.dtype.name)
    shape = "[" + ",".join(str(d) for d in array.shape) + "]"
    flat = array.reshape(-1)
    limit = min(_MAX_TENSOR_ENTRIES, flat.size)
    text = []
    if array.ndim == 0:
        text.extend(_element(x) for x in flat[:limit])
        values = " ".join(text)
    else:
        position = [0]
        _print_dim(0, array.shape, limit, flat, position, text)
        values = "".join(text)
    if flat.size > limit:
        values += "..."
    return f"Tensor<type: {dtype} shape: {shape} values: {values}>"


def _print_dim(dim, shape, limit, flat, position, out):
    """TF's ``PrintOneDim``: nested ``[a b][c...]`` up to `limit` values."""
    if position[0] >= limit:
        return
    if dim == len(shape) - 1:
        for i in range(shape[dim]):
            if position[0] >= limit:
                if dim != 0:
                    out.append("...")
                return
            if i > 0:
                out.append(" ")
            out.append(_element(flat[position[0]]))
            position[0] += 1
        return
    for _ in range(shape[dim]):
        opened = position[0] < limit
        if opened:
            out.append("[")
        _print_dim(dim + 1, shape, limit, flat, position, out)
        if position[0] < limit or opened:
            out.append("]")


def _element(x):
    if isinstance(x, (bytes, str)):
        return _c_escape(x)
    if isinstance(x, np.bool_):
        return "1" if x else "0"
    if isinstance(x, np.floating):
        return _float(x)
    if isinstance(x, np.complexfloating):
        return f"({_float(x.real)},{_float(x.imag)})"
    return str(x)


def _float(x):
    """TF's float printing: the shortest of 6 (float) or 15 (double) significant digits that
    reads back as the same value, else 9 or 17."""
    short, long_ = (6, 9) if x.dtype == np.float32 else (15, 17)
    text = f"{float(x):.{short}g}"
    if x.dtype.type(text) != x:
        text = f"{float(x):.{long_}g}"
    return text


def _c_escape(value):
    data = value.encode() if isinstance(value, str) else value
    special = {10: "\\n", 13: "\\r", 9: "\\t", 34: '\\"', 39: "\\'", 92: "\\\\"}  # TF's CEscape
    return "".join(special.get(b, chr(b) if 32 <= b < 127 else f"\\{b:03o}") for b in data)
