"""Recording a graph: names and name scopes, tensors and ops, control dependencies, collections."""

import os
import threading

import numpy as np
import pytest

import nbdist as tf
from nbdist.graph.graph import is_user_code

pytestmark = pytest.mark.usefixtures("graph")


def _names(graph):
    return [op.name for op in graph.get_operations()]


# -- unique names (TF's rules) ------------------------------------------------------------------
def test_default_op_names_are_the_op_type_made_unique():
    a, b, c = tf.constant(1.0), tf.constant(2.0), tf.constant(3.0)
    assert [a.op.name, b.op.name, c.op.name] == ["Const", "Const_1", "Const_2"]


def test_variables_are_named_variable_then_variable_1():
    v0, v1 = tf.Variable(1.0), tf.Variable(2.0)
    assert (v0.name, v1.name) == ("Variable:0", "Variable_1:0")
    assert (v0.op.name, v1.op.name) == ("Variable", "Variable_1")


def test_variable_records_the_ops_tf_records(graph):
    tf.Variable(1.0, name="w")
    assert _names(graph) == ["w/initial_value", "w", "w/Assign", "w/read"]
    assert [op.type for op in graph.get_operations()] == ["Const", "VariableV2", "Assign", "Identity"]


def test_explicit_name_is_used_as_given():
    assert tf.constant(1.0, name="alpha").op.name == "alpha"


def test_explicit_name_skips_suffixes_already_taken():
    tf.constant(1, name="a_1")
    assert tf.constant(1, name="a").op.name == "a"
    assert tf.constant(1, name="a").op.name == "a_2"


def test_names_are_unique_case_insensitively():
    tf.constant(1, name="Foo")
    assert tf.constant(1, name="foo").op.name == "foo_1"


def test_trailing_slash_name_is_used_exactly():
    assert tf.constant(1.0, name="exact/").op.name == "exact"


def test_trailing_slash_name_that_exists_is_an_error():
    tf.constant(1.0, name="exact")
    with pytest.raises(ValueError, match="an op named 'exact' already exists"):
        tf.constant(1.0, name="exact/")


def test_invalid_op_name_is_rejected():
    with pytest.raises(ValueError, match="'bad name!' is not a valid op name"):
        tf.constant(1.0, name="bad name!")


def test_unique_name_without_marking_does_not_reserve(graph):
    assert graph.unique_name("x", mark_as_used=False) == "x"
    assert graph.unique_name("x") == "x"
    assert graph.unique_name("x") == "x_1"


# -- name scopes --------------------------------------------------------------------------------
def test_ops_in_a_name_scope_are_prefixed():
    with tf.name_scope("scope") as scope:
        c = tf.constant(1.0)
    assert scope == "scope/"
    assert c.op.name == "scope/Const"


def test_reopened_scope_name_gets_a_suffix():
    with tf.name_scope("scope"):
        pass
    with tf.name_scope("scope") as second:
        c = tf.constant(1.0)
    assert second == "scope_1/"
    assert c.op.name == "scope_1/Const"


def test_nested_scopes_join_with_slashes():
    with tf.name_scope("outer"), tf.name_scope("inner") as scope:
        c = tf.constant(1.0)
    assert scope == "outer/inner/"
    assert c.op.name == "outer/inner/Const"


def test_scope_ending_in_slash_reenters_exactly():
    with tf.name_scope("scope"):
        pass
    with tf.name_scope("scope/") as scope:
        c = tf.constant(1.0)
    assert scope == "scope/"
    assert c.op.name == "scope/Const"


@pytest.mark.parametrize("root", [None, ""])
def test_none_or_empty_scope_resets_to_root(root):
    with tf.name_scope("outer"), tf.name_scope(root) as scope:
        c = tf.constant(1.0)
    assert scope == ""
    assert c.op.name == "Const"


def test_name_scope_uses_default_name_when_name_is_none():
    with tf.name_scope(None, default_name="dflt") as scope:
        pass
    assert scope == "dflt/"


def test_name_scope_uses_graph_of_values(graph):
    other = tf.Graph()
    with other.as_default():
        x = tf.constant(1.0)
    with tf.name_scope("s", values=[x]) as scope:
        pass
    assert scope == "s/"
    assert other.get_name_scope() == ""
    with other.as_default():
        assert tf.constant(1.0, name="s").op.name == "s_1"  # "s" was taken in `other`


def test_scope_and_op_names_share_one_namespace():
    tf.constant(1.0, name="layer")
    with tf.name_scope("layer") as scope:
        pass
    assert scope == "layer_1/"


def test_get_name_scope_reports_current_scope(graph):
    with tf.name_scope("a"), tf.name_scope("b"):
        assert graph.get_name_scope() == "a/b"
    assert graph.get_name_scope() == ""


def test_variable_in_scope_has_scoped_name():
    with tf.name_scope("layer1"):
        v = tf.Variable(1.0, name="w")
    assert v.name == "layer1/w:0"
    assert v.value().op.name == "layer1/w/read"


def test_name_scopes_are_per_thread(graph):
    names = []

    def build():
        with graph.as_default():
            names.append(tf.constant(1.0).op.name)

    with tf.name_scope("main_thread"):
        t = threading.Thread(target=build)
        t.start()
        t.join(timeout=10)
    assert names == ["Const"]


# -- tensors and operations ---------------------------------------------------------------------
def test_tensor_reports_name_dtype_shape_and_op():
    p = tf.placeholder(tf.float32, [None, 3], name="x")
    assert p.name == "x:0"
    assert p.dtype == tf.float32
    assert p.shape.as_list() == [None, 3]
    assert p.get_shape() == p.shape
    assert p.op.type == "Placeholder"
    assert p.value_index == 0


def test_set_shape_refines_unknown_dims():
    p = tf.placeholder(tf.float32, [None, 3])
    p.set_shape([5, None])
    assert p.shape.as_list() == [5, 3]


def test_set_shape_rejects_incompatible_shape():
    p = tf.placeholder(tf.float32, [None, 3])
    with pytest.raises(ValueError, match="not compatible"):
        p.set_shape([5, 4])


def test_tensor_consumers_lists_ops_using_it():
    x = tf.constant(1.0)
    y = tf.identity(x)
    z = tf.square(x)
    assert set(x.consumers()) == {y.op, z.op}


def test_tensor_as_python_bool_is_a_type_error():
    with pytest.raises(TypeError, match="as a Python bool is not allowed"):
        bool(tf.constant(True))


def test_tensor_is_not_iterable():
    with pytest.raises(TypeError, match="is not iterable"):
        iter(tf.constant([1, 2]))


def test_tensor_equality_is_identity():
    a = tf.constant(1.0)
    assert a == a  # noqa: PLR0124 - the point of the test
    assert a != tf.constant(1.0)
    assert len({a, a}) == 1


def test_operation_reports_type_inputs_outputs_and_attrs():
    a = tf.placeholder(tf.float32, [2, 3])
    b = tf.placeholder(tf.float32, [4, 3])
    m = tf.matmul(a, b, transpose_b=True)
    assert m.op.type == "MatMul"
    assert m.op.inputs == (a, b)
    assert m.op.outputs == [m]
    assert m.op.get_attr("transpose_b") is True
    assert m.shape.as_list() == [2, 4]


def test_get_attr_of_missing_attr_names_op_and_attr():
    c = tf.constant(1.0, name="c")
    with pytest.raises(ValueError, match="operation 'c' \\(Const\\) has no attr 'nope'"):
        c.op.get_attr("nope")


def test_operation_records_where_the_user_created_it():
    c = tf.constant(1.0)
    assert any(os.path.basename(__file__) in line for line in c.op.traceback)


def test_only_files_inside_the_package_directory_are_nbdist_code():
    package_dir = os.path.dirname(tf.__file__)
    assert not is_user_code(os.path.join(package_dir, "graph", "graph.py"))
    assert is_user_code(os.path.join(package_dir + "_tools", "x.py"))  # a name that starts alike


# -- looking ops up -----------------------------------------------------------------------------
def test_get_operation_and_tensor_by_name(graph):
    c = tf.constant(1.0, name="c")
    assert graph.get_operation_by_name("c") is c.op
    assert graph.get_tensor_by_name("c:0") is c


def test_get_operation_by_unknown_name_is_a_key_error(graph):
    with pytest.raises(KeyError, match="the graph has no operation named 'nope'"):
        graph.get_operation_by_name("nope")


@pytest.mark.parametrize("bad", ["c", "c:x"])
def test_tensor_names_need_an_output_index(graph, bad):
    tf.constant(1.0, name="c")
    with pytest.raises(ValueError, match="tensor names look like 'op_name:0'"):
        graph.get_tensor_by_name(bad)


def test_tensor_output_index_out_of_range_is_a_key_error(graph):
    tf.constant(1.0, name="c")
    with pytest.raises(KeyError, match="operation 'c' has only 1 outputs"):
        graph.get_tensor_by_name("c:1")


def test_as_graph_element_resolves_names_variables_and_rejects_other_graphs(graph):
    v = tf.Variable(1.0, name="v")
    assert graph.as_graph_element("v") is v.op
    assert graph.as_graph_element("v:0") is v.op.outputs[0]
    assert graph.as_graph_element(v) is v.op.outputs[0]
    with tf.Graph().as_default():
        foreign = tf.constant(1.0)
    with pytest.raises(ValueError, match="is not an element of this graph"):
        graph.as_graph_element(foreign)


def test_as_graph_element_respects_allowed_kinds(graph):
    c = tf.constant(1.0)
    with pytest.raises(TypeError, match=r"cannot convert .* to a Tensor"):
        graph.as_graph_element(c.op, allow_operation=False)


# -- graph state --------------------------------------------------------------------------------
def test_inputs_from_another_graph_are_rejected():
    with tf.Graph().as_default():
        foreign = tf.constant(1.0)
    with pytest.raises(ValueError, match="is from a different graph"):
        tf.identity(foreign) + tf.constant(1.0)


def test_finalized_graph_refuses_new_ops(graph):
    graph.finalize()
    assert graph.finalized
    with pytest.raises(RuntimeError, match="graph is finalized and cannot be modified"):
        tf.constant(1.0)


def test_version_counts_recorded_ops(graph):
    assert graph.version == 0
    tf.constant(1.0)
    tf.Variable(1.0)
    assert graph.version == 5


def test_as_default_nests_and_restores(graph):
    inner = tf.Graph()
    with inner.as_default():
        assert tf.get_default_graph() is inner
    assert tf.get_default_graph() is graph


def test_reset_default_graph_inside_as_default_is_refused():
    with pytest.raises(RuntimeError, match="reset_default_graph\\(\\) called inside"):
        tf.reset_default_graph()


def test_default_graph_is_per_thread(graph):
    seen = []
    t = threading.Thread(target=lambda: seen.append(tf.get_default_graph()))
    t.start()
    t.join(timeout=10)
    assert seen and seen[0] is not graph


# -- control dependencies -----------------------------------------------------------------------
def test_control_dependencies_add_control_inputs():
    a = tf.constant(1.0)
    with tf.control_dependencies([a]):
        b = tf.constant(2.0)
    assert b.op.control_inputs == [a.op]


def test_control_dependencies_nest_and_accumulate():
    a, b = tf.constant(1.0), tf.constant(2.0)
    with tf.control_dependencies([a]), tf.control_dependencies([b.op]):
        c = tf.constant(3.0)
    assert c.op.control_inputs == [a.op, b.op]


def test_control_dependencies_none_clears_outer():
    a = tf.constant(1.0)
    with tf.control_dependencies([a]), tf.control_dependencies(None):
        c = tf.constant(3.0)
    assert c.op.control_inputs == []


def test_control_dependency_already_a_data_input_is_not_repeated():
    a = tf.constant(1.0)
    with tf.control_dependencies([a]):
        b = tf.identity(a)
    assert b.op.control_inputs == []


def test_control_dependencies_accept_variables():
    v = tf.Variable(1.0)
    with tf.control_dependencies([v]):
        c = tf.constant(3.0)
    assert c.op.control_inputs == [v.op]


def test_control_dependencies_reject_non_ops():
    with (
        pytest.raises(TypeError, match=r"control_dependencies\(\) takes ops or tensors, got 3"),
        tf.control_dependencies([3]),
    ):
        pass


def test_control_dependencies_order_execution():
    counter = tf.Variable(0, name="counter")
    increment = tf.assign_add(counter, 1)
    with tf.control_dependencies([increment]):
        after = tf.identity(counter.value())
    with tf.Session() as sess:
        sess.run(counter.initializer)
        assert sess.run(after) == 1
        assert sess.run(after) == 2


def test_group_runs_all_its_inputs():
    v = tf.Variable(0, name="v")
    both = tf.group(tf.assign_add(v, 1), tf.assign_add(v, 10))
    assert both.type == "NoOp"
    with tf.Session() as sess:
        sess.run(v.initializer)
        sess.run(both)
        assert sess.run(v) == 11


# -- collections --------------------------------------------------------------------------------
def test_graph_keys_are_tf_strings():
    assert tf.GraphKeys.GLOBAL_VARIABLES == "variables"
    assert tf.GraphKeys.TRAINABLE_VARIABLES == "trainable_variables"
    assert tf.GraphKeys.LOCAL_VARIABLES == "local_variables"
    assert tf.GraphKeys.GLOBAL_STEP == "global_step"
    assert tf.GraphKeys.TRAIN_OP == "train_op"


def test_variables_join_global_and_trainable_collections():
    v = tf.Variable(1.0)
    frozen = tf.Variable(1.0, trainable=False)
    assert tf.global_variables() == [v, frozen]
    assert tf.trainable_variables() == [v]
    assert tf.get_collection(tf.GraphKeys.GLOBAL_VARIABLES) == [v, frozen]


def test_variable_with_explicit_collections():
    v = tf.Variable(1.0, collections=[tf.GraphKeys.LOCAL_VARIABLES], trainable=False)
    assert tf.local_variables() == [v]
    assert tf.global_variables() == []


def test_add_to_collection_and_get_collection_returns_a_copy():
    tf.add_to_collection("things", 1)
    items = tf.get_collection("things")
    items.append(2)
    assert tf.get_collection("things") == [1]


def test_get_collection_ref_is_live():
    ref = tf.get_collection_ref("things")
    ref.append("x")
    assert tf.get_collection("things") == ["x"]


def test_unknown_collection_is_empty():
    assert tf.get_collection("nothing") == []


def test_get_collection_filters_by_scope_prefix():
    with tf.name_scope("layer1"):
        w1 = tf.Variable(1.0, name="w")
    with tf.name_scope("layer2"):
        tf.Variable(1.0, name="w")
    assert tf.global_variables(scope="layer1") == [w1]


def test_add_to_collections_and_keys(graph):
    graph.add_to_collections(["a", "b"], 7)
    assert graph.get_collection("a") == graph.get_collection("b") == [7]
    assert set(graph.get_all_collection_keys()) == {"a", "b"}
    graph.clear_collection("a")
    assert graph.get_collection("a") == []


def test_collections_belong_to_their_graph(graph):
    tf.add_to_collection("things", 1)
    with tf.Graph().as_default():
        assert tf.get_collection("things") == []


# -- constants ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "dtype"),
    [(1.0, tf.float32), (1, tf.int32), (True, tf.bool), ("s", tf.string), (b"s", tf.string)],
)
def test_python_values_get_tf_default_dtypes(value, dtype):
    assert tf.constant(value).dtype == dtype


def test_numpy_values_keep_their_dtype():
    assert tf.constant(np.arange(3, dtype=np.int64)).dtype == tf.int64
    assert tf.constant(np.float64(1.0)).dtype == tf.float64


def test_constant_scalar_broadcasts_to_shape():
    c = tf.constant(0.5, shape=[2, 3])
    assert c.shape.as_list() == [2, 3]
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(c), np.full((2, 3), 0.5, np.float32))


def test_constant_value_that_does_not_fit_shape_is_an_error():
    with pytest.raises(TypeError, match="value of shape \\(3,\\) does not fit shape \\(2, 2\\)"):
        tf.constant([1, 2, 3], shape=[2, 2])


def test_truncating_float_to_int_constant_is_refused():
    with pytest.raises(TypeError, match="would truncate"):
        tf.constant(1.5, dtype=tf.int32)


def test_operations_since_a_version_are_what_was_recorded_after_it(graph):
    a = tf.constant(1.0, name="a")
    version = graph.version
    b = tf.constant(2.0, name="b")
    c = tf.add(a, b, name="c")
    assert graph.operations_since(version) == [b.op, c.op]
    assert graph.operations_since(graph.version) == []


def test_add_imported_op_keeps_name_and_device_and_ignores_scopes(graph):
    a = tf.constant(1.0, name="a")
    with tf.device("/job:ps/task:0"), tf.name_scope("outer"), tf.control_dependencies([a]):
        op = graph.add_imported_op(
            "Identity", "x", [a], [(tf.float32, a.shape)], {}, [], "/job:worker/task:1"
        )
    assert (op.name, op.device, op.control_inputs) == ("x", "/job:worker/task:1", [])
    assert graph.get_operation_by_name("x") is op
    assert tf.identity(a, name="x").op.name == "x_1"  # the imported name is taken
    with pytest.raises(ValueError, match="already has an op named 'x'"):
        graph.add_imported_op("Identity", "x", [a], [(tf.float32, a.shape)], {}, [], "")
