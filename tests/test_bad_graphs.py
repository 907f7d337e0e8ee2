"""Bad graphs from a client, run on real server processes: TF's error classes, naming the node.

Each case is checked on a two-task cluster (the bad op on the other task than the master,
so the error crosses a process) and, where the case exists in real TF, against TF's class.
"""

import numpy as np
import pytest

import nbdist as tf

pytestmark = [pytest.mark.slow, pytest.mark.servers(local=2), pytest.mark.usefixtures("fresh_graph")]


def _run(cluster, fetch, feeds=None):
    with tf.Session(cluster.target("local", 0)) as sess:
        return sess.run(fetch, feeds)


def _tf_error(build):
    """The class of the error real TF raises running `build(tf1)`'s fetch in a local session."""
    import tensorflow.compat.v1 as tf1  # real TF only for the parity check

    with tf1.Graph().as_default():
        fetch, feeds = build(tf1)
        with tf1.Session() as sess:
            try:
                sess.run(fetch, feeds)
            except tf1.errors.OpError as e:
                return type(e).__name__
    return None


def test_a_shape_mismatch_known_only_at_run_time_names_the_node(module_servers):
    def build(t):
        x = t.placeholder(t.float32, None, name="x")  # unknown shape: the check happens in the kernel
        with t.device("/job:local/task:1"):
            y = t.matmul(x, t.ones([3, 2]), name="product")
        return y, {x: np.ones((2, 4), np.float32)}

    fetch, feeds = build(tf)
    with pytest.raises(
        tf.errors.InvalidArgumentError, match=r"node product \(BatchMatMulV2\) on /job:local"
    ) as e:
        _run(module_servers, fetch, feeds)
    assert e.value.message.startswith("[/job:local/replica:0/task:1]")
    assert _tf_error(build) == "InvalidArgumentError"


def test_a_missing_feed_names_the_placeholder(module_servers):
    with tf.device("/job:local/task:1"):
        x = tf.placeholder(tf.float32, [3], name="needed")
        y = x * 2.0
    with pytest.raises(
        tf.errors.InvalidArgumentError, match=r"You must feed a value for placeholder tensor 'needed'"
    ):
        _run(module_servers, y)

    def build(t):
        return t.placeholder(t.float32, [3], name="needed") * 2.0, None

    assert _tf_error(build) == "InvalidArgumentError"


def test_a_fed_value_of_the_wrong_dtype_names_the_tensor(module_servers):
    x = tf.placeholder(tf.int32, [2], name="counts")
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"'counts:0' of dtype int32.*float"):
        _run(module_servers, x + 1, {x: np.array([1.5, 2.5])})


def test_an_unknown_device_names_the_op_and_the_device(module_servers):
    with tf.device("/job:nowhere/task:0"):
        y = tf.constant(1.0, name="lost") + 1.0
    with pytest.raises(
        tf.errors.InvalidArgumentError, match=r"node '\w+' \(\w+\) requested device '/job:nowhere/task:0'"
    ) as e:
        _run(module_servers, y)
    assert "local" in e.value.message  # the jobs the cluster has

    def build(t):
        with t.device("/job:nowhere/task:0"):
            return t.constant(1.0, name="lost") + 1.0, None

    assert _tf_error(build) == "InvalidArgumentError"


def test_a_cycle_names_a_node_on_it(module_servers):
    with tf.device("/job:local/task:1"):
        x = tf.constant(1.0, name="x")
        a = tf.identity(x, name="a")
        b = tf.identity(a, name="b")
    a.op._control_inputs.append(b.op)  # as TF's op._add_control_input can: a -> b -> a
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"graph has a cycle through node '[ab]'"):
        _run(module_servers, b)

    def build(t):
        x = t.constant(1.0, name="x")
        a = t.identity(x, name="a")
        b = t.identity(a, name="b")
        a.op._add_control_input(b.op)
        return b, None

    assert _tf_error(build) == "InvalidArgumentError"
