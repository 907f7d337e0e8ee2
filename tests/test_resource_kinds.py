"""Resource kinds declared in the registry: a toy kind runs locally and on a remote task.

Nothing in nbdist/runtime knows the toy kind (tests/toy_resource.py): the registry's
declarations are all the executor, placer, master and worker need.
"""

import os
import sys

import numpy as np
import pytest

import nbdist as tf
from nbdist import errors
from nbdist.notebook import task_exec
from nbdist.ops import registry

sys.path.insert(0, os.path.dirname(__file__))
import toy_resource

pytestmark = pytest.mark.usefixtures("fresh_graph")


def test_a_ref_input_gets_the_resource_of_its_declared_kind_locally():
    c = toy_resource.counter(start=10)
    add = toy_resource.counter_add(c, 5)
    with tf.Session() as sess:
        assert sess.run(add) == 15
        assert sess.run(add) == 20  # the counter outlives steps
        assert sess.run(c) == 20


def test_ref_inputs_declared_as_positions_are_variables():
    d = registry.lookup("Assign")
    assert [k.name for k in d.ref_inputs.values()] == ["variable"]
    assert registry.lookup("VariableV2").creates.name == "variable"
    assert registry.lookup("ToyCounterAdd").ref_inputs[0] is toy_resource.COUNTER


def test_a_ref_input_from_a_creator_of_another_kind_is_an_error_naming_both():
    v = tf.Variable(np.int64(1), name="v")
    add = toy_resource.counter_add(v._ref(), 1, name="bad_add")
    with (
        tf.Session() as sess,
        pytest.raises(errors.InvalidArgumentError, match=r"toy_counter.*'v'.*variable"),
    ):
        sess.run(add)


def test_a_creator_without_the_kinds_attrs_is_an_error_naming_the_attr():
    op = registry.make_op("ToyCounter", [], {}, name="no_start")
    with tf.Session() as sess, pytest.raises(errors.InvalidArgumentError, match=r"no_start.*'start'"):
        sess.run(op.outputs[0])


def test_undeclared_kinds_and_duplicate_kinds_are_refused():
    with pytest.raises(KeyError, match=r"'fifo_queue' is not declared.*toy_counter"):
        registry.declare("NotAQueueOp", ref_inputs={0: "fifo_queue"})
    with pytest.raises(ValueError, match="already declared"):
        registry.resource_kind("toy_counter", toy_resource.Counter)


@pytest.mark.slow
def test_a_toy_resource_kind_runs_on_a_remote_task_with_no_runtime_edit():
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    with tf.LocalCluster(ps=1, worker=1) as cluster:
        tasks = [(j, i, a) for j, i, a in cluster.cluster_spec.iter_tasks()]
        # Every task (the worker's master places it, the ps runs it) learns the kind the way
        # a plugin would: by importing its module.
        task_exec.run_cell(
            tasks, f"import sys; sys.path.insert(0, {tests_dir!r}); import toy_resource", cluster.key
        )
        with tf.device("/job:ps/task:0"):
            c = toy_resource.counter(start=1, shared_name="hits")
        add = toy_resource.counter_add(c, 2)  # placed with its counter: on the ps
        with tf.Session(cluster.target("worker", 0)) as sess:
            md = tf.RunMetadata()
            opts = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
            assert sess.run(add, options=opts, run_metadata=md) == 3
            assert sess.run(add) == 5
        assert md.placement[add.op.name] == "/job:ps/replica:0/task:0/device:CPU:0"
        with tf.Session(cluster.target("worker", 0)) as sess:  # a new client sees the same counter
            assert sess.run(c) == 5
