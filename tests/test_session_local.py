"""The local `tf.Session` (target ""): fetch structures, feeds, variables, errors, defaults."""

import collections
import importlib.util
import pathlib
import tracemalloc

import numpy as np
import pytest

import nbdist as tf
from nbdist.runtime.session import LOCAL_DEVICE

Pair = collections.namedtuple("Pair", ["first", "second"])


pytestmark = pytest.mark.usefixtures("graph")


@pytest.fixture
def sess(graph):
    with tf.Session(graph=graph) as s:
        yield s


# -- fetch structures ---------------------------------------------------------------------------
def test_single_tensor_fetch_returns_its_value(sess):
    assert sess.run(tf.constant(2.0) * 3.0) == 6.0


def test_list_fetch_returns_a_list(sess):
    a, b = tf.constant(1), tf.constant(2)
    assert sess.run([a, b]) == [1, 2]


def test_tuple_fetch_returns_a_tuple(sess):
    a, b = tf.constant(1), tf.constant(2)
    result = sess.run((a, b))
    assert isinstance(result, tuple)
    assert result == (1, 2)


def test_dict_fetch_returns_a_dict_with_the_same_keys(sess):
    result = sess.run({"a": tf.constant(1), "b": tf.constant(2)})
    assert result == {"a": 1, "b": 2}


def test_ordered_dict_keeps_its_type_and_order(sess):
    fetches = collections.OrderedDict([("z", tf.constant(1)), ("a", tf.constant(2))])
    result = sess.run(fetches)
    assert isinstance(result, collections.OrderedDict)
    assert list(result) == ["z", "a"]


def test_defaultdict_fetch_returns_a_defaultdict(sess):
    result = sess.run(collections.defaultdict(list, {"a": tf.constant(1)}))
    assert isinstance(result, collections.defaultdict)
    assert result == {"a": 1}


def test_namedtuple_fetch_returns_the_namedtuple(sess):
    result = sess.run(Pair(tf.constant(1), tf.constant(2)))
    assert isinstance(result, Pair)
    assert result == Pair(1, 2)


def test_mixed_nesting_is_preserved(sess):
    a, b, c = tf.constant(1), tf.constant(2), tf.constant(3)
    result = sess.run({"x": [a, (b, {"y": c})], "p": Pair(a, [b])})
    assert result == {"x": [1, (2, {"y": 3})], "p": Pair(1, [2])}


def test_operations_fetch_as_none(sess):
    op = tf.no_op()
    assert sess.run(op) is None
    assert sess.run([op, tf.constant(1)]) == [None, 1]


def test_same_tensor_fetched_twice_gives_equal_values(sess):
    a = tf.constant([1.0, 2.0])
    first, second = sess.run([a, a])
    np.testing.assert_array_equal(first, second)


def test_fetch_by_tensor_and_op_name(sess):
    tf.constant(5, name="five")
    assert sess.run("five:0") == 5
    assert sess.run("five") is None


def test_variable_fetch_returns_its_value(sess):
    v = tf.Variable([1.0, 2.0])
    sess.run(v.initializer)
    np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])


def test_empty_list_fetch_returns_empty_list(sess):
    assert sess.run([]) == []


def test_none_fetch_is_a_type_error(sess):
    with pytest.raises(TypeError, match="fetch argument None is not a tensor or op"):
        sess.run([tf.constant(1), None])


def test_non_graph_fetch_is_a_type_error(sess):
    with pytest.raises(TypeError, match="cannot interpret fetch 3"):
        sess.run(3)


@pytest.mark.parametrize("name", ["nope:0", "nope", "nope:1"])
def test_unknown_name_fetch_is_a_value_error_naming_it_as_in_tf(sess, tf1, name):
    # TF 2.21's words (older TFs said "Fetch argument 'x:0' cannot be interpreted ...")
    want = rf'Argument `fetch` = {name} cannot be interpreted as a Tensor\. \(".*nope'
    with pytest.raises(ValueError, match=want):
        sess.run(name)
    with tf1.Graph().as_default(), tf1.Session() as theirs:  # real TF: the same class and words
        tf1.constant(1.0, name="there")
        with pytest.raises(ValueError, match=want):
            theirs.run(name)


def test_fetch_from_another_graph_is_a_value_error(sess):
    with tf.Graph().as_default():
        foreign = tf.constant(1.0)
    with pytest.raises(ValueError, match="is not an element of this graph"):
        sess.run(foreign)


def test_scalar_fetch_is_a_numpy_scalar(sess):
    assert isinstance(sess.run(tf.constant(1.0)), np.float32)


def test_changing_a_fetched_value_does_not_change_the_variable(sess):
    v = tf.Variable([1.0, 2.0])
    sess.run(v.initializer)
    fetched = sess.run(v)
    fetched += 10.0
    np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])


def test_fetched_value_is_not_changed_by_later_updates(sess):
    v = tf.Variable([1.0, 2.0])
    increment = tf.assign_add(v, [1.0, 1.0])
    sess.run(v.initializer)
    sess.run(increment)
    before = sess.run(v)
    sess.run(increment)
    np.testing.assert_array_equal(before, [2.0, 3.0])


def test_fetched_constant_is_writable(sess):
    value = sess.run(tf.constant([1.0, 2.0]))
    value[0] = 5.0
    assert value[0] == 5.0


# -- feeds --------------------------------------------------------------------------------------
def test_placeholder_takes_fed_value(sess):
    x = tf.placeholder(tf.float32, [None, 2])
    result = sess.run(x * 2.0, {x: [[1.0, 2.0]]})
    np.testing.assert_array_equal(result, [[2.0, 4.0]])
    assert result.dtype == np.float32


def test_feed_by_tensor_name(sess):
    tf.placeholder(tf.int32, [], name="n")
    assert sess.run("n:0", {"n:0": 4}) == 4


def test_feed_replaces_any_tensor_and_prunes_its_inputs(sess):
    x = tf.placeholder(tf.float32, [], name="never_fed")
    y = x + 1.0
    assert sess.run(y * 2.0, {y: 5.0}) == 10.0


def test_int_values_feed_a_float_placeholder(sess):
    x = tf.placeholder(tf.float32, [2])
    assert sess.run(x, {x: [1, 2]}).dtype == np.float32


def test_string_placeholder_takes_bytes_and_str(sess):
    s = tf.placeholder(tf.string, [2])
    assert list(sess.run(s, {s: [b"a", "b"]})) == [b"a", "b"]


def test_missing_feed_names_the_placeholder(sess):
    x = tf.placeholder(tf.float32, [None, 2], name="images")
    with pytest.raises(
        tf.errors.InvalidArgumentError, match="You must feed a value for placeholder tensor 'images'"
    ):
        sess.run(x + 1.0)


def test_feed_of_wrong_shape_names_tensor_and_both_shapes(sess):
    x = tf.placeholder(tf.float32, [None, 2], name="images")
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        sess.run(x, {x: np.zeros((3, 5))})
    message = str(info.value)
    assert "'images:0'" in message
    assert "(3, 5)" in message
    assert "(?, 2)" in message
    assert info.value.node_def == "images"


def test_bad_feed_is_also_a_value_error_as_in_tf(sess):
    x = tf.placeholder(tf.float32, [2], name="x")
    with pytest.raises(ValueError, match="Cannot feed value of shape \\(3,\\) for tensor 'x:0'"):
        sess.run(x, {x: [1.0, 2.0, 3.0]})


def test_feed_of_wrong_rank_is_refused(sess):
    x = tf.placeholder(tf.float32, [2], name="x")
    with pytest.raises(tf.errors.InvalidArgumentError, match="shape \\(2, 1\\)"):
        sess.run(x, {x: [[1.0], [2.0]]})


def test_float_feed_for_int_placeholder_names_tensor_and_dtype(sess):
    x = tf.placeholder(tf.int32, [2], name="counts")
    with pytest.raises(tf.errors.InvalidArgumentError, match="tensor 'counts:0' of dtype int32"):
        sess.run(x, {x: [1.5, 2.0]})


def test_string_feed_for_float_placeholder_is_refused(sess):
    x = tf.placeholder(tf.float32, [], name="x")
    with pytest.raises(
        tf.errors.InvalidArgumentError, match="cannot feed str value to tensor 'x:0' of dtype float32"
    ):
        sess.run(x, {x: "abc"})


def test_tensor_as_feed_value_is_a_type_error(sess):
    x = tf.placeholder(tf.float32, [])
    with pytest.raises(TypeError, match=r"the value of a feed cannot be a tf\.Tensor"):
        sess.run(x, {x: tf.constant(1.0)})


def test_feed_key_outside_the_graph_is_a_type_error(sess):
    with pytest.raises(TypeError, match="feed_dict key 'nope:0' is not a tensor of the session's graph"):
        sess.run(tf.constant(1.0), {"nope:0": 1.0})


# -- variables ----------------------------------------------------------------------------------
def test_uninitialized_variable_is_failed_precondition_naming_it(sess):
    v = tf.Variable(1.0, name="w1")
    with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized value w1") as info:
        sess.run(v.value() * 2.0)
    assert "global_variables_initializer" in str(info.value)
    assert "[[node w1 (VariableV2)" in str(info.value)


def test_initializer_then_read(sess):
    v = tf.Variable([[1.0, 2.0]])
    sess.run(tf.global_variables_initializer())
    np.testing.assert_array_equal(sess.run(v), [[1.0, 2.0]])


def test_variables_keep_their_value_across_runs(sess):
    v = tf.Variable(0)
    increment = tf.assign_add(v, 1)
    sess.run(v.initializer)
    for _ in range(3):
        sess.run(increment)
    assert sess.run(v) == 3


def test_each_local_session_has_its_own_variables(graph):
    v = tf.Variable(1.0, name="v")
    with tf.Session() as first:
        first.run(v.initializer)
        assert first.run(v) == 1.0
    with tf.Session() as second, pytest.raises(tf.errors.FailedPreconditionError):
        second.run(v)


def test_assign_of_wrong_shape_is_invalid_argument(sess):
    v = tf.Variable([1.0, 2.0], name="v")
    x = tf.placeholder(tf.float32, None)
    assign = tf.assign(v, x)
    sess.run(v.initializer)
    with pytest.raises(tf.errors.InvalidArgumentError, match="value of shape \\(3,\\) does not match"):
        sess.run(assign, {x: [1.0, 2.0, 3.0]})


def test_report_uninitialized_variables(sess):
    a = tf.Variable(1.0, name="a")
    tf.Variable(2.0, name="b")
    report = tf.report_uninitialized_variables()
    sess.run(a.initializer)
    assert list(sess.run(report)) == [b"b"]


def test_graph_grown_after_a_run_is_picked_up(sess):
    a = tf.constant(1.0)
    assert sess.run(a) == 1.0
    b = a + 1.0
    assert sess.run(b) == 2.0


# -- errors from kernels ------------------------------------------------------------------------
def test_kernel_failure_is_invalid_argument_naming_node_and_device(sess):
    a = tf.placeholder(tf.float32, None, name="a")
    b = tf.placeholder(tf.float32, None, name="b")
    product = tf.matmul(a, b, name="product")
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        sess.run(product, {a: np.ones((2, 3)), b: np.ones((2, 3))})
    assert "product" in str(info.value)
    assert f"[[node product (BatchMatMulV2) on {LOCAL_DEVICE}]]" in str(
        info.value
    )  # TF's op for unknown ranks
    assert "Matrix size-incompatible: In[0]: [2,3], In[1]: [2,3] 0 0" in str(info.value)  # TF's words


def test_local_session_runs_ops_requested_on_remote_devices(sess):
    with tf.device("/job:ps/task:3"):
        c = tf.constant(2.0)
    with tf.device("/job:worker/task:9"):
        d = c * 2.0
    assert sess.run(d) == 4.0


def test_only_what_the_fetches_need_is_run(sess):
    unfed = tf.placeholder(tf.float32, [], name="unfed")
    uninitialized = tf.Variable(1.0, name="uninitialized")
    tf.identity(unfed + uninitialized, name="unrelated")
    assert sess.run(tf.constant(2.0) * 2.0) == 4.0


def test_target_runs_its_effect_once_per_run(sess):
    v = tf.Variable(0, name="v")
    increment = tf.assign_add(v, 1)
    sess.run(v.initializer)
    sess.run([increment.op, increment.op, increment])
    assert sess.run(v) == 1


def test_op_type_without_kernel_is_not_found_naming_it(graph, sess):
    graph.create_op("NoSuchOpType", [], [(tf.float32, [])], name="mystery")
    with pytest.raises(
        tf.errors.NotFoundError, match="no kernel for op type 'NoSuchOpType' \\(node 'mystery'"
    ):
        sess.run("mystery:0")


def test_step_memory_is_the_live_set_not_every_intermediate(sess):
    n = 2**18  # 1 MiB of float32 per tensor
    x = tf.placeholder(tf.float32, [n])
    c = tf.constant(np.full(n, 0.5, np.float32))
    y = x
    for _ in range(64):
        y = y + c
    value = np.zeros(n, np.float32)
    sess.run(y, {x: value})  # compile the plan outside the measurement
    tracemalloc.start()
    try:
        sess.run(y, {x: value})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * 2**20, f"peak {peak / 2**20:.0f} MiB for a chain whose live set is ~3 MiB"


# -- session lifecycle --------------------------------------------------------------------------
def test_closed_session_refuses_to_run(graph):
    c = tf.constant(1.0)
    sess = tf.Session()
    sess.close()
    with pytest.raises(RuntimeError, match="Attempted to use a closed Session"):
        sess.run(c)


def test_with_block_closes_the_session(graph):
    c = tf.constant(1.0)
    with tf.Session() as sess:
        pass
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.run(c)


def test_close_twice_is_harmless(graph):
    sess = tf.Session()
    sess.close()
    sess.close()


def test_with_block_makes_session_and_graph_default():
    other = tf.Graph()
    with tf.Session(graph=other) as sess:
        assert tf.get_default_session() is sess
        assert tf.get_default_graph() is other
    assert tf.get_default_session() is None
    assert tf.get_default_graph() is not other


def test_session_runs_a_graph_that_is_not_default():
    other = tf.Graph()
    with other.as_default():
        c = tf.constant(3.0)
    sess = tf.Session(graph=other)
    assert sess.run(c) == 3.0
    assert sess.graph is other
    sess.close()


def test_config_must_be_a_config_proto():
    with pytest.raises(TypeError, match=r"config must be a tf\.ConfigProto"):
        tf.Session(config={"operation_timeout_in_ms": 5})


def test_options_must_be_run_options(sess):
    with pytest.raises(TypeError, match=r"options must be a tf\.RunOptions"):
        sess.run(tf.constant(1.0), options={"trace_level": 3})


def test_full_trace_fills_run_metadata_with_op_spans(sess):
    a = tf.constant(1.0, name="a")
    b = tf.identity(a, name="b")
    metadata = tf.RunMetadata()
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    sess.run(b, options=options, run_metadata=metadata)
    (stats,) = metadata.step_stats.dev_stats
    assert stats.device == LOCAL_DEVICE
    assert [n["node_name"] for n in stats.node_stats] == ["a", "b"]
    assert all(n["end_s"] >= n["start_s"] for n in stats.node_stats)


def test_no_trace_without_trace_level(sess):
    metadata = tf.RunMetadata()
    sess.run(tf.constant(1.0), run_metadata=metadata)
    assert metadata.step_stats.dev_stats == []


def test_session_repr_names_target_and_state(graph):
    sess = tf.Session()
    assert repr(sess) == "<nbdist.Session target='local'>"
    sess.close()
    assert repr(sess) == "<nbdist.Session target='local' closed>"


# -- default session: eval() and run() ---------------------------------------------------------
def test_tensor_eval_uses_the_default_session(sess):
    c = tf.constant(4.0)
    with sess.as_default():
        assert c.eval() == 4.0


def test_tensor_eval_with_explicit_session_and_feed(sess):
    x = tf.placeholder(tf.float32, [])
    assert (x * 2.0).eval(feed_dict={x: 3.0}, session=sess) == 6.0


def test_operation_run_uses_the_default_session(sess):
    v = tf.Variable(1.0)
    with sess.as_default():
        v.initializer.run()
        assert v.eval() == 1.0


def test_eval_without_a_session_says_how_to_get_one():
    with pytest.raises(ValueError, match=r"Tensor\.eval\(\) needs a session"):
        tf.constant(1.0).eval()


def test_eval_in_a_session_of_another_graph_is_refused(sess):
    with tf.Graph().as_default():
        foreign = tf.constant(1.0)
    with pytest.raises(ValueError, match="the session's graph is not the graph of"):
        foreign.eval(session=sess)


def test_interactive_session_installs_itself_as_default(graph):
    c = tf.constant(5.0)
    sess = tf.InteractiveSession()
    try:
        assert tf.get_default_session() is sess
        assert c.eval() == 5.0
        tf.no_op(name="noop").run()
    finally:
        sess.close()
    assert tf.get_default_session() is None


def test_interactive_session_makes_its_graph_default():
    other = tf.Graph()
    sess = tf.InteractiveSession(graph=other)
    try:
        assert tf.get_default_graph() is other
        assert (tf.constant(2.0) * 2.0).eval() == 4.0
    finally:
        sess.close()
    assert tf.get_default_graph() is not other


def test_closed_interactive_session_refuses_eval(graph):
    c = tf.constant(1.0)
    sess = tf.InteractiveSession()
    sess.close()
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.run(c)


# -- the README's demo --------------------------------------------------------------------------
def test_example_train_local_learns_and_prints_progress(capsys):
    path = pathlib.Path(__file__).resolve().parent.parent / "examples" / "train_local.py"
    spec = importlib.util.spec_from_file_location("train_local", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    accuracy = example.main(["--epochs", "12"])
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[1] for line in lines if line.startswith("epoch")] == [
        f"{i}/12" for i in range(1, 13)
    ]
    assert accuracy > 0.95


def test_uninitialized_error_names_where_the_variable_really_lives():
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:1"):
            v = tf.Variable(1.0, name="w")
        with (
            tf.Session() as sess,
            pytest.raises(
                tf.errors.FailedPreconditionError,
                match=r"uninitialized value w on /job:localhost/replica:0/task:0",
            ),
        ):
            sess.run(v)


def test_a_control_dependency_on_a_fed_placeholder_is_satisfied_by_the_feed():
    # TF moves a fed placeholder's control edges to the feed (tf.metrics relies on it).
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None])
        with tf.control_dependencies([x]):
            y = tf.constant(2.0) * 3.0
        with tf.Session() as sess:
            assert sess.run(y, {x: [1.0]}) == 6.0
            with pytest.raises(tf.errors.InvalidArgumentError, match="must feed a value for placeholder"):
                sess.run(y)


def test_repeated_fetches_and_feeds_are_resolved_once_and_still_checked():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        total = tf.reduce_sum(x, name="total")
    with tf.Session(graph=graph) as sess:
        fetches = {"total": total, "x": "x:0"}
        for i in range(3):
            out = sess.run(fetches, {x: np.full((i + 1, 2), 1.0, np.float32)})
            assert out["total"] == 2.0 * (i + 1) and out["x"].shape == (i + 1, 2)
        assert len(sess._mappers) == 1  # one structure, mapped once
        with pytest.raises(ValueError, match=r"Cannot feed value of shape \(3,\)"):
            sess.run(fetches, {x: np.ones(3, np.float32)})  # a shape never checked before
        with pytest.raises(ValueError, match="Cannot feed value of shape"):
            sess.run(fetches, {"x:0": np.ones((2, 3), np.float32)})  # the same tensor, by name
        with pytest.raises(ValueError, match="later"):
            sess.run("later:0")
        with graph.as_default():
            tf.constant(5.0, name="later")
        assert sess.run("later:0") == 5.0  # a name that failed is resolved again
