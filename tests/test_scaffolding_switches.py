"""TF 2's switches and queries, build facts, `tf.get_logger` and `tf.timestamp`, against real TF
in graph mode (the `tf1` fixture has called ``disable_v2_behavior()``)."""

import logging
import time

import numpy as np
import pytest

import nbdist as tf


def test_the_v2_queries_answer_as_tf_after_disable_v2_behavior(tf1):
    assert tf.control_flow_v2_enabled() is tf1.control_flow_v2_enabled() is False
    assert tf.resource_variables_enabled() is tf1.resource_variables_enabled() is False
    assert tf.executing_eagerly_outside_functions() is tf1.executing_eagerly_outside_functions() is False


def test_enable_v2_tensorshape_is_what_nbdist_shapes_already_do(tf1):
    tf.enable_v2_tensorshape()
    tf1.enable_v2_tensorshape()
    try:
        theirs = tf1.TensorShape([2, None, 3])
        ours = tf.TensorShape([2, None, 3])
        assert [ours[i] for i in range(3)] == [theirs[i] for i in range(3)] == [2, None, 3]
        assert type(theirs[0]) is int and isinstance(ours[0], int)  # (an int with TF 1.x's .value too)
        assert ours[1:].as_list() == theirs[1:].as_list()
    finally:
        tf1.disable_v2_tensorshape()  # the fixture's TF stays in TF 1.x mode for other tests


@pytest.mark.parametrize(
    "switch",
    [
        "enable_eager_execution",
        "enable_v2_behavior",
        "enable_resource_variables",
        "enable_control_flow_v2",
        "enable_tensor_equality",
    ],
)
def test_switches_nbdist_cannot_honour_say_so(switch):
    # Spelled through getattr: a refused switch is not counted as a supported name.
    with pytest.raises(NotImplementedError, match=rf"tf\.{switch}\(\) cannot be honoured: nbdist .*Remove"):
        getattr(tf, switch)()


def test_get_logger_is_tf_logging_logger(tf1):
    logger = tf.get_logger()
    assert logger is tf.get_logger() is logging.getLogger("nbdist")
    assert tf1.get_logger() is logging.getLogger("tensorflow")
    before = tf.logging.get_verbosity(), tf1.logging.get_verbosity()
    try:
        tf.logging.set_verbosity(tf.logging.INFO)
        tf1.logging.set_verbosity(tf1.logging.INFO)
        assert tf.get_logger().getEffectiveLevel() == tf1.get_logger().getEffectiveLevel() == logging.INFO
    finally:
        tf.logging.set_verbosity(before[0])
        tf1.logging.set_verbosity(before[1])


def test_build_facts_have_tf_types_and_say_there_is_no_cxx(tf1):
    ours = (tf.CXX11_ABI_FLAG, tf.CXX_VERSION, tf.MONOLITHIC_BUILD)
    theirs = (tf1.CXX11_ABI_FLAG, tf1.CXX_VERSION, tf1.MONOLITHIC_BUILD)
    assert [type(v) for v in ours] == [type(v) for v in theirs] == [int] * 3
    assert ours == (0, 0, 0)


def test_graph_def_versions_bound_nbdist_graph_defs(tf1):
    consumer, producer = tf.GRAPH_DEF_VERSION_MIN_CONSUMER, tf.GRAPH_DEF_VERSION_MIN_PRODUCER
    assert type(consumer) is type(tf1.GRAPH_DEF_VERSION_MIN_CONSUMER) is int
    assert type(producer) is type(tf1.GRAPH_DEF_VERSION_MIN_PRODUCER) is int
    assert 0 <= consumer <= tf.GRAPH_DEF_VERSION and 0 <= producer <= tf.GRAPH_DEF_VERSION
    with tf.Graph().as_default() as g:
        tf.constant(1.0, name="c")
    graph_def = g.as_graph_def()
    assert graph_def["versions"]["producer"] >= producer
    with tf.Graph().as_default():
        (c,) = tf.import_graph_def(graph_def, return_elements=["c:0"], name="")
        with tf.Session() as sess:
            assert sess.run(c) == 1.0


@pytest.mark.parametrize("which", ["nbdist", "tf"])
def test_timestamp_is_a_float64_scalar_read_when_the_op_runs(tf1, which):
    lib = tf if which == "nbdist" else tf1
    with lib.Graph().as_default():
        t = lib.timestamp(name="now")
        u = lib.timestamp()
        assert (t.op.type, t.op.name, u.op.name, t.dtype, t.shape.as_list()) == (
            "Timestamp",
            "now",
            "Timestamp",
            lib.float64,
            [],
        )
        with lib.Session() as sess:
            before = time.time()
            first = sess.run(t)
            second, third = sess.run([t, u])
            after = time.time()
    assert isinstance(first, np.float64)
    assert before - 1e-3 <= first <= second <= after + 1e-3
    assert abs(third - second) < 1.0
