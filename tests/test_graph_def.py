"""GraphDef: the graph as plain data, and back again without losing anything."""

import numpy as np
import pytest

import nbdist as tf
from nbdist.graph.graph_def import (
    NodeDef,
    decode_attr,
    encode_attr,
    graph_defs_equal,
    graph_from_graph_def,
    graph_to_graph_def,
    node_def_of,
)
from nbdist.graph.tensor_shape import TensorShape

pytestmark = pytest.mark.usefixtures("graph")


def _build_everything(graph):
    """A graph with every kind of attr, dtype, shape, device, colocation and control input."""
    rng = np.random.default_rng(0)
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(rng.normal(size=(3, 2)).astype(np.float32), name="w")
    with tf.device("/job:worker/task:1"):
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        tf.placeholder(tf.int64, None, name="unknown_rank")
        y = tf.matmul(x, w, transpose_b=False, name="y")
        with tf.control_dependencies([y]):
            tf.no_op(name="after_y")
    tf.constant(["a", "bé"], name="strings")
    tf.constant(b"raw", name="scalar_bytes")
    tf.constant(np.array([], dtype=object), dtype=tf.string, name="no_strings")
    tf.constant([True, False], name="bools")
    tf.constant(np.arange(6, dtype=np.int64).reshape(2, 3), name="int64s")
    tf.constant(np.float16(1.5), name="half")
    tf.constant(np.uint8(7), name="byte")
    tf.constant(np.zeros((0, 4), np.float64), name="empty")
    return graph_to_graph_def(graph)


def test_round_trip_through_a_new_graph_is_exact(graph):
    graph_def = _build_everything(graph)
    copy = graph_from_graph_def(graph_def)
    assert copy is not graph
    assert graph_defs_equal(graph_to_graph_def(copy), graph_def)


def test_imported_graph_keeps_names_types_devices_and_control_inputs(graph):
    graph_def = _build_everything(graph)
    copy = graph_from_graph_def(graph_def)
    for original in graph.get_operations():
        imported = copy.get_operation_by_name(original.name)
        assert imported.type == original.type
        assert imported.device == original.device
        assert [c.name for c in imported.control_inputs] == [c.name for c in original.control_inputs]
        assert [t.name for t in imported.inputs] == [t.name for t in original.inputs]


def test_imported_tensors_keep_dtypes_and_shapes(graph):
    graph_def = _build_everything(graph)
    copy = graph_from_graph_def(graph_def)
    for op in graph.get_operations():
        for t in op.outputs:
            imported = copy.get_tensor_by_name(t.name)
            assert imported.dtype == t.dtype
            assert imported.shape == t.shape
    assert copy.get_tensor_by_name("x:0").shape.as_list() == [None, 3]
    assert copy.get_tensor_by_name("unknown_rank:0").shape.ndims is None


def test_imported_constants_keep_value_and_dtype(graph):
    graph_def = _build_everything(graph)
    copy = graph_from_graph_def(graph_def)
    for name in ("strings", "scalar_bytes", "no_strings", "bools", "int64s", "half", "byte", "empty"):
        before = graph.get_operation_by_name(name).get_attr("value")
        after = copy.get_operation_by_name(name).get_attr("value")
        assert after.dtype == before.dtype, name
        assert after.shape == before.shape, name
        np.testing.assert_array_equal(after, before)


def test_string_constants_are_stored_as_utf8_bytes(graph):
    _build_everything(graph)
    value = graph.get_operation_by_name("strings").get_attr("value")
    assert list(value) == [b"a", "bé".encode()]


def test_imported_graph_runs_like_the_original(graph):
    graph_def = _build_everything(graph)
    copy = graph_from_graph_def(graph_def)
    with tf.Session(graph=copy) as sess:
        assert sess.run("scalar_bytes:0") == b"raw"
        np.testing.assert_array_equal(sess.run("int64s:0"), np.arange(6).reshape(2, 3))


def test_imported_graph_continues_unique_names(graph):
    tf.constant(1.0)
    copy = graph_from_graph_def(graph_to_graph_def(graph))
    with copy.as_default():
        assert tf.constant(2.0).op.name == "Const_1"


def test_import_into_an_existing_graph(graph):
    tf.constant(1.0, name="a")
    target = tf.Graph()
    with target.as_default():
        tf.constant(2.0, name="b")
    assert graph_from_graph_def(graph_to_graph_def(graph), graph=target) is target
    assert [op.name for op in target.get_operations()] == ["b", "a"]


def test_import_of_a_name_already_in_the_graph_is_refused(graph):
    tf.constant(1.0, name="a")
    with pytest.raises(ValueError, match="graph already has an op named 'a'"):
        graph_from_graph_def(graph_to_graph_def(graph), graph=graph)


def test_graph_def_with_duplicate_nodes_is_refused(graph):
    tf.constant(1.0, name="a")
    node = graph_to_graph_def(graph)["node"][0]
    with pytest.raises(ValueError, match="GraphDef has two nodes named 'a'"):
        graph_from_graph_def({"node": [node, node]})


def test_malformed_node_names_the_node():
    with pytest.raises(ValueError, match="malformed NodeDef 'x'"):
        graph_from_graph_def({"node": [{"name": "x"}]})


def test_unknown_dtype_in_node_is_malformed():
    node = {"name": "x", "op": "Const", "output": [["complex256", []]]}
    with pytest.raises(ValueError, match=r"malformed NodeDef 'x'.*complex256"):
        graph_from_graph_def({"node": [node]})


def test_extension_holds_only_ops_after_from_version(graph):
    tf.constant(1.0, name="a")
    version = graph.version
    tf.constant(2.0, name="b")
    tf.constant(3.0, name="c")
    ext = graph_to_graph_def(graph, from_version=version)
    assert [n["name"] for n in ext["node"]] == ["b", "c"]


def test_extension_imports_on_top_of_the_base(graph):
    a = tf.constant(1.0, name="a")
    base = graph_to_graph_def(graph)
    version = graph.version
    tf.identity(a, name="b")
    copy = graph_from_graph_def(base)
    graph_from_graph_def(graph_to_graph_def(graph, from_version=version), graph=copy)
    assert graph_defs_equal(graph_to_graph_def(copy), graph_to_graph_def(graph))


def test_node_dict_is_plain_data(graph):
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    with tf.device("/job:worker/task:0"), tf.control_dependencies([x]):
        tf.identity(x, name="y")
    nodes = {n["name"]: n for n in graph_to_graph_def(graph)["node"]}
    assert nodes["x"]["attr"] == {"dtype": {"dtype": "float32"}, "shape": {"shape": [None, 3]}}
    assert nodes["x"]["output"] == [["float32", [None, 3]]]
    assert nodes["y"]["input"] == ["x:0"]
    assert nodes["y"]["device"] == "/job:worker/task:0"


def test_control_inputs_are_written_with_caret(graph):
    a = tf.constant(1.0, name="a")
    with tf.control_dependencies([a]):
        tf.constant(2.0, name="b")
    node = node_def_of(graph.get_operation_by_name("b"))
    assert node.input == ["^a"]
    assert node.control_inputs == ["a"]
    assert node.data_inputs == []


def test_graph_def_has_a_producer_version(graph):
    assert graph_to_graph_def(graph)["versions"] == {"producer": 1}


@pytest.mark.parametrize(
    "value",
    [tf.float32, tf.string, TensorShape([None, 3]), TensorShape(None), TensorShape([]), [tf.int32, tf.bool]],
)
def test_attr_encoding_round_trips(value):
    assert decode_attr(encode_attr(value)) == value


def test_plain_attrs_are_left_alone():
    for value in (1, 2.5, "s", True, None, {"a": 1, "b": 2}):
        assert encode_attr(value) == value
        assert decode_attr(encode_attr(value)) == value


def test_node_def_copy_is_independent():
    node = NodeDef("n", "Identity", ["x:0"], "/job:ps", {"T": tf.float32})
    copy = node.copy()
    copy.input.append("^y")
    copy.attr["extra"] = 1
    assert node.input == ["x:0"]
    assert "extra" not in node.attr


def test_graph_defs_equal_compares_array_dtypes():
    a = {"attr": {"value": np.array([1, 2], np.int32)}}
    b = {"attr": {"value": np.array([1, 2], np.int64)}}
    assert not graph_defs_equal(a, b)
    assert graph_defs_equal(a, {"attr": {"value": np.array([1, 2], np.int32)}})


def test_graph_defs_equal_distinguishes_int_from_bool():
    assert not graph_defs_equal({"a": 1}, {"a": True})


def test_operation_node_def_property(graph):
    c = tf.constant(1.0, name="c")
    node = c.op.node_def
    assert (node.name, node.op, node.output[0][0]) == ("c", "Const", tf.float32)


def test_import_of_a_node_whose_input_is_missing_is_a_value_error():
    graph_def = {"node": [{"name": "b", "op": "Identity", "input": ["a:0"], "output": [["float32", []]]}]}
    with pytest.raises(ValueError, match="node 'b' of the GraphDef names an input that is not defined"):
        tf.import_graph_def(graph_def)
