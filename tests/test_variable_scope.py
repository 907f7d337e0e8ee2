"""`tf.variable_scope`, `tf.get_variable`, initializers and partitioners (checked against real TF)."""

import subprocess
import sys

import numpy as np
import pytest

import nbdist as tf
from procs import kernel_env


def test_names_follow_the_variable_scope_not_name_scopes(graph):
    with tf.name_scope("outer"), tf.variable_scope("layer1"):
        w = tf.get_variable("w", [3, 2])
        y = tf.matmul(tf.ones([1, 3]), w)
    assert w.name == "layer1/w:0"
    assert y.op.name == "outer/layer1/MatMul"


def test_reuse_true_shares_and_reentering_opens_a_new_name_scope(graph):
    with tf.variable_scope("layer1") as scope:
        w = tf.get_variable("w", [3, 2])
    with tf.variable_scope("layer1", reuse=True):
        assert tf.get_variable("w", [3, 2]) is w
        assert tf.identity(w).op.name == "layer1_1/Identity"
    with tf.variable_scope(scope, reuse=True):
        assert tf.get_variable("w") is w
        assert tf.identity(w).op.name == "layer1_2/Identity"  # TF: a re-entered scope opens a new name scope


def test_existing_variable_without_reuse_says_where_and_how_to_fix(graph):
    with tf.variable_scope("m"):
        tf.get_variable("w", [2])
    with (
        pytest.raises(
            ValueError, match=r"Variable m/w already exists, disallowed.*reuse=True.*AUTO_REUSE"
        ) as e,
        tf.variable_scope("m"),
    ):
        tf.get_variable("w", [2])
    assert "test_variable_scope.py" in str(e.value)  # where it was first defined
    assert "tf.reset_default_graph()" in str(e.value)


def test_a_user_script_in_a_folder_named_nbdist_is_named_as_where_it_was_defined(tmp_path):
    # `git clone .../nbdist.git` puts a user's scripts under a folder named nbdist: still theirs.
    script = tmp_path / "nbdist" / "train.py"
    script.parent.mkdir()
    script.write_text('import nbdist as tf\n\ntf.get_variable("w", [2])\ntf.get_variable("w", [2])\n')
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=kernel_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert f'Originally defined at:\n  File "{script}", line 3, in <module>' in done.stderr, done.stderr


def test_reuse_of_a_missing_variable_is_an_error(graph):
    with (
        pytest.raises(ValueError, match="Variable m/nope does not exist"),
        tf.variable_scope("m", reuse=True),
    ):
        tf.get_variable("nope", [2])


def test_auto_reuse_creates_then_shares(graph):
    def model():
        with tf.variable_scope("net", reuse=tf.AUTO_REUSE):
            return tf.get_variable("w", [2], initializer=tf.ones_initializer())

    assert model() is model()
    assert len(tf.global_variables()) == 1


def test_reuse_is_inherited_and_cannot_be_turned_off(graph):
    with tf.variable_scope("a"), tf.variable_scope("b"):
        v = tf.get_variable("v", [1])
    with tf.variable_scope("a", reuse=True), tf.variable_scope("b", reuse=False):
        assert tf.get_variable_scope().reuse is True
        assert tf.get_variable("v", [1]) is v


def test_reuse_variables_on_the_current_scope(graph):
    with tf.variable_scope("s") as scope:
        v = tf.get_variable("v", [1])
        scope.reuse_variables()
        assert tf.get_variable("v") is v


def test_shape_and_dtype_mismatch_on_reuse(graph):
    with tf.variable_scope("s"):
        tf.get_variable("v", [2])
    with tf.variable_scope("s", reuse=True):
        with pytest.raises(ValueError, match=r"Trying to share variable s/v, but specified shape \(3,\)"):
            tf.get_variable("v", [3])
        with pytest.raises(ValueError, match="specified dtype int32 and found dtype float32"):
            tf.get_variable("v", [2], dtype=tf.int32)


def test_default_names_are_made_unique(graph):
    names = []
    for _ in range(3):
        with tf.variable_scope(None, default_name="dense"):
            names.append(tf.get_variable("kernel", [1]).op.name)
    assert names == ["dense/kernel", "dense_1/kernel", "dense_2/kernel"]


def test_scope_defaults_inherit_initializer_and_dtype(graph):
    with tf.variable_scope("s", initializer=tf.constant_initializer(3.0), dtype=tf.float64):
        with tf.variable_scope("inner"):
            v = tf.get_variable("v", [2])
        i = tf.get_variable("i", [2], dtype=tf.int32, initializer=tf.zeros_initializer())
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(v).dtype == np.float64
        np.testing.assert_array_equal(sess.run(v), [3.0, 3.0])
        np.testing.assert_array_equal(sess.run(i), [0, 0])


def test_initializers_give_the_documented_values(graph):
    tf.set_random_seed(3)
    shape = [200, 100]
    vs = {
        "zeros": tf.get_variable("zeros", [2, 2], initializer=tf.zeros_initializer()),
        "ones": tf.get_variable("ones", [2], initializer=tf.ones_initializer()),
        "const": tf.get_variable("const", [2, 3], initializer=tf.constant_initializer([1, 2, 3, 4])),
        "glorot": tf.get_variable("glorot", shape),
        "trunc": tf.get_variable("trunc", shape, initializer=tf.truncated_normal_initializer(stddev=0.5)),
        "normal": tf.get_variable("normal", shape, initializer=tf.random_normal_initializer(1.0, 2.0)),
        "uniform": tf.get_variable("uniform", shape, initializer=tf.random_uniform_initializer(-1, 3)),
        "vs": tf.get_variable(
            "vs", shape, initializer=tf.variance_scaling_initializer(2.0, "fan_in", "untruncated_normal")
        ),
        "int": tf.get_variable("int", [3], dtype=tf.int32),
        "value": tf.get_variable("value", initializer=np.arange(4.0, dtype=np.float32)),
    }
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run(vs)
    np.testing.assert_array_equal(got["zeros"], np.zeros((2, 2)))
    np.testing.assert_array_equal(got["ones"], [1, 1])
    np.testing.assert_array_equal(got["const"], [[1, 2, 3], [4, 4, 4]])  # padded with the last value (TF)
    limit = np.sqrt(6.0 / (200 + 100))
    assert np.abs(got["glorot"]).max() <= limit and np.abs(got["glorot"]).max() > 0.9 * limit
    assert np.abs(got["trunc"]).max() <= 1.0 and 0.4 < got["trunc"].std() < 0.5
    assert abs(got["normal"].mean() - 1.0) < 0.05 and abs(got["normal"].std() - 2.0) < 0.05
    assert got["uniform"].min() >= -1 and got["uniform"].max() < 3
    assert abs(got["vs"].std() - np.sqrt(2.0 / 200)) < 0.005
    np.testing.assert_array_equal(got["int"], [0, 0, 0])
    np.testing.assert_array_equal(got["value"], [0, 1, 2, 3])


def test_constant_initializer_with_too_many_values(graph):
    with pytest.raises(TypeError, match="too many elements provided: needed at most 2, got 3"):
        tf.get_variable("c", [2], initializer=tf.constant_initializer([1, 2, 3]))


def test_new_variable_needs_a_shape(graph):
    with pytest.raises(ValueError, match=r"Shape of a new variable \(x\) must be fully defined"):
        tf.get_variable("x")


def test_string_variable_needs_an_initializer(graph):
    with pytest.raises(ValueError, match="An initializer for variable s of type string is required"):
        tf.get_variable("s", [1], dtype=tf.string)


def test_local_variables_and_regularizers(graph):
    loc = tf.get_local_variable("counter", [1], initializer=tf.zeros_initializer())
    assert loc in tf.local_variables() and loc not in tf.global_variables() + tf.trainable_variables()
    w = tf.get_variable("w", [2], regularizer=lambda v: tf.reduce_sum(tf.square(v)))
    (loss,) = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert loss.op.name.startswith("w/Regularizer/")
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(loss), np.sum(sess.run(w) ** 2), rtol=1e-6)


def test_container_is_recorded_on_the_variable(graph):
    with tf.container("experiment1"):
        v = tf.Variable(1.0, name="v")
    u = tf.Variable(1.0, name="u")
    assert v.op.get_attr("container") == "experiment1"
    assert u.op.get_attr("container") == ""


# -- partitioned variables ------------------------------------------------------------------------
def test_partitioned_variable_shards_and_reads_whole(graph):
    init = np.arange(20.0, dtype=np.float32).reshape(10, 2)
    with tf.variable_scope("emb", partitioner=tf.fixed_size_partitioner(3)):
        e = tf.get_variable("table", initializer=init)
    assert [v.op.name for v in e] == ["emb/table/part_0", "emb/table/part_1", "emb/table/part_2"]
    assert [v.shape.as_list() for v in e] == [[4, 2], [3, 2], [3, 2]]
    whole = tf.convert_to_tensor(e)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(whole), init)


def test_partitioned_variable_trains_through_its_shards(graph):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 9)).astype(np.float32)
    true_w = rng.normal(size=(9, 1)).astype(np.float32)
    w = tf.get_variable(
        "w", [9, 1], initializer=tf.zeros_initializer(), partitioner=tf.fixed_size_partitioner(2)
    )
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w.as_tensor()) - x @ true_w))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    assert len(tf.trainable_variables()) == 2
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(300):
            sess.run(train)
        np.testing.assert_allclose(sess.run(w.as_tensor()), true_w, atol=1e-3)


def test_reusing_a_partitioned_variable(graph):
    p = tf.fixed_size_partitioner(2)
    with tf.variable_scope("s", partitioner=p):
        a = tf.get_variable("a", [4, 1])
    with tf.variable_scope("s", partitioner=p, reuse=True):
        assert tf.get_variable("a", [4, 1]) is a
    with tf.variable_scope("s", reuse=True), pytest.raises(ValueError, match="without a partitioner"):
        tf.get_variable("a", [4, 1])


@pytest.mark.parametrize(
    ("shape", "dtype", "make"),
    [
        ([10, 4], "float32", lambda t: t.fixed_size_partitioner(3)),
        ([2, 4], "float32", lambda t: t.fixed_size_partitioner(5)),
        ([6, 8], "float32", lambda t: t.fixed_size_partitioner(4, axis=1)),
        ([1000, 64], "float32", lambda t: t.variable_axis_size_partitioner(64 << 10)),
        ([1000, 64], "float64", lambda t: t.variable_axis_size_partitioner(10 << 10, max_shards=7)),
        ([100, 3], "string", lambda t: t.variable_axis_size_partitioner(1000)),
        ([4096, 256], "float32", lambda t: t.min_max_variable_partitioner(max_partitions=8)),
        ([10, 10], "float32", lambda t: t.min_max_variable_partitioner(max_partitions=8, min_slice_size=64)),
    ],
)
def test_partitioners_match_tensorflow(tf1, shape, dtype, make):
    ours = make(tf)(shape=tf.TensorShape(shape), dtype=tf.as_dtype(dtype))
    theirs = make(tf1)(shape=tf1.TensorShape(shape), dtype=tf1.as_dtype(dtype))
    assert list(ours) == list(theirs)


# -- against real TensorFlow ---------------------------------------------------------------------------
def _scoped_model(lib):
    """A tutorial-style model; returns the variables' names and shapes and a few op names."""
    graph = lib.Graph()
    with graph.as_default():
        x = lib.placeholder(lib.float32, [None, 4], name="x")

        def dense(h, units, name=None):
            with lib.variable_scope(name, default_name="dense"):
                w = lib.get_variable("kernel", [h.shape[1], units])
                b = lib.get_variable("bias", [units], initializer=lib.zeros_initializer())
                return lib.nn.relu(lib.matmul(h, w) + b)

        with lib.variable_scope("model"):
            h = dense(x, 8)
            h = dense(h, 8)
            out = dense(h, 2, name="logits")
        with lib.variable_scope("model", reuse=True):
            again = dense(x, 8, name="dense")
        with lib.variable_scope("model", reuse=lib.AUTO_REUSE):
            lib.get_variable("extra", [3], dtype=lib.int32)
        with lib.variable_scope("emb", partitioner=lib.fixed_size_partitioner(3)):
            lib.get_variable("table", [10, 4])
        variables = [(v.op.name, v.shape.as_list()) for v in lib.global_variables()]
        trainable = [v.op.name for v in lib.trainable_variables()]
        return variables, trainable, [out.op.name, again.op.name]


@pytest.mark.tf
def test_scoped_model_names_and_shapes_match_tensorflow(tf1):
    ours, theirs = _scoped_model(tf), _scoped_model(tf1)
    assert ours[0] == theirs[0]
    assert ours[1] == theirs[1]
    assert ours[2] == theirs[2]


def test_a_bare_int_shape_is_one_dimensional_as_in_tf():
    # get_variable("bias", shape=50): a course assignment's spelling, accepted by TF.
    with tf.Graph().as_default():
        b = tf.get_variable("bias", shape=5, initializer=tf.zeros_initializer())
        assert b.shape.as_list() == [5]
        assert tf.TensorShape(3).as_list() == [3]
