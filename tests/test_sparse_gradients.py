"""Sparse gradients: `tf.gather` / `tf.nn.embedding_lookup` give `IndexedSlices`, optimizers
apply them with sparse ops — each compared with real TensorFlow on the same program."""

import warnings

import numpy as np
import pytest

import nbdist as tf
from gradcheck import check_gradients

TABLE = np.arange(40, dtype=np.float32).reshape(10, 4) / 10.0
IDS = np.array([[7, 2, 7], [0, 9, 3]], dtype=np.int32)  # a repeated id on purpose


pytestmark = pytest.mark.usefixtures("graph")


def _run_both(tf1, program):
    """`program(lib)` -> fetches, built and run once with nbdist and once with real TF."""
    results = []
    for lib in (tf, tf1):
        with lib.Graph().as_default():
            fetches = program(lib)
            with lib.Session() as sess:
                sess.run(lib.global_variables_initializer())
                results.append(sess.run(fetches))
    return results


def _assert_slices_equal(ours, theirs, rtol=1e-6):
    assert type(ours).__name__ == type(theirs).__name__ == "IndexedSlicesValue"
    np.testing.assert_array_equal(ours.indices, theirs.indices)
    np.testing.assert_allclose(ours.values, theirs.values, rtol=rtol)
    np.testing.assert_array_equal(ours.dense_shape, theirs.dense_shape)


def test_gather_gradient_is_indexed_slices_as_tf(tf1):
    def program(lib):
        params = lib.Variable(TABLE, name="table")
        rows = lib.gather(params, IDS)
        loss = lib.reduce_sum(rows * rows * np.arange(4, dtype=np.float32))
        (grad,) = lib.gradients(loss, [params])
        assert isinstance(grad, lib.IndexedSlices)
        assert grad.values.shape.as_list() == [6, 4]
        return grad

    ours, theirs = _run_both(tf1, program)
    _assert_slices_equal(ours, theirs)


def test_a_table_read_twice_gets_the_concatenated_slices_and_a_dense_use_a_dense_sum(tf1):
    def program(lib):
        params = lib.Variable(TABLE, name="table")
        twice = lib.reduce_sum(lib.gather(params, [1, 2])) + lib.reduce_sum(lib.gather(params, [2, 5]) * 3.0)
        mixed = twice + lib.reduce_sum(params * params)
        return lib.gradients(twice, [params])[0], lib.gradients(mixed, [params])[0]

    (twice, mixed), (tf_twice, tf_mixed) = _run_both(tf1, program)
    _assert_slices_equal(twice, tf_twice)
    assert isinstance(mixed, np.ndarray) and isinstance(tf_mixed, np.ndarray)
    np.testing.assert_allclose(mixed, tf_mixed, rtol=1e-6)


def test_convert_to_tensor_densifies_summing_repeated_rows(tf1):
    def program(lib):
        params = lib.Variable(TABLE, name="table")
        (grad,) = lib.gradients(lib.reduce_sum(lib.gather(params, IDS)), [params])
        return lib.convert_to_tensor(grad), grad

    (dense, _), (tf_dense, _) = _run_both(tf1, program)
    np.testing.assert_array_equal(dense, tf_dense)
    assert dense[7].tolist() == [2.0] * 4  # id 7 was looked up twice


def test_densifying_slices_of_unknown_shape_warns_as_tf():
    values = tf.placeholder(tf.float32, [None, 2])
    shape = tf.placeholder(tf.int32, [2])
    slices = tf.IndexedSlices(values, tf.constant([0, 3]), shape)
    with pytest.warns(UserWarning, match="dense Tensor of unknown shape"):
        dense = tf.convert_to_tensor(slices)
    with tf.Session() as sess:
        out = sess.run(dense, {values: [[1, 2], [3, 4]], shape: [4, 2]})
    np.testing.assert_array_equal(out, [[1, 2], [0, 0], [0, 0], [3, 4]])
    with pytest.raises(ValueError, match="requested dtype float64 for IndexedSlices with dtype float32"):
        tf.convert_to_tensor(slices, dtype=tf.float64)
    with pytest.raises(ValueError, match="without dense_shape"):
        tf.convert_to_tensor(tf.IndexedSlices(values, tf.constant([0, 3])))


def test_a_dense_gradient_function_gets_the_slices_densified():
    params = tf.Variable(TABLE, name="table")
    loss = tf.reduce_sum(tf.square(tf.gather(params, [1, 1])))
    grad = tf.gradients(tf.exp(loss), [params])[0]  # Exp's gradient is dense, the gather's is not
    assert isinstance(grad, tf.IndexedSlices)
    with tf.Session() as sess:
        sess.run(params.initializer)
        value = sess.run(grad)
    expected_row = np.exp(2 * np.sum(TABLE[1] ** 2)) * 2 * TABLE[1]
    np.testing.assert_allclose(value.values, [expected_row, expected_row], rtol=1e-5)


@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_embedding_lookup_on_a_partitioned_variable_matches_tf(tf1, strategy):
    results = []
    for lib in (tf, tf1):
        with lib.Graph().as_default():
            with lib.variable_scope("emb", partitioner=lib.fixed_size_partitioner(3)):
                table = lib.get_variable("table", [10, 4], initializer=lib.zeros_initializer())
            shards = list(table)
            assert [v.shape.as_list()[0] for v in shards] == [4, 3, 3]  # TF's uneven shards
            fill = [
                v.assign(TABLE[start : start + 4 - (i > 0)])
                for i, (v, start) in enumerate(zip(shards, [0, 4, 7]))
            ]
            rows = lib.nn.embedding_lookup(table, IDS, partition_strategy=strategy)
            assert rows.shape.as_list() == [2, 3, 4]
            grads = lib.gradients(lib.reduce_sum(rows * rows * np.arange(4, dtype=np.float32)), shards)
            assert all(isinstance(g, lib.IndexedSlices) for g in grads)
            with lib.Session() as sess:
                sess.run(fill)
                results.append(sess.run((rows, grads)))
    (rows, grads), (tf_rows, tf_grads) = results
    np.testing.assert_array_equal(rows, tf_rows)
    for a, b in zip(grads, tf_grads):
        _assert_slices_equal(a, b)


def test_embedding_lookup_of_one_table_runs_the_gather_with_the_table():
    with tf.device("/job:ps/task:0"):
        table = tf.Variable(TABLE, name="table")
    with tf.device("/job:worker/task:0"):
        rows = tf.nn.embedding_lookup(table, IDS)
    gather = tf.get_default_graph().get_operation_by_name("embedding_lookup")
    assert gather.type == "GatherV2"
    assert gather.colocation_groups() == ["loc:@table"]
    assert rows.op.type == "Identity" and rows.device == "/job:worker/task:0"


def test_embedding_lookup_errors():
    table = tf.Variable(TABLE)
    with pytest.raises(ValueError, match="Unrecognized partition strategy: 'range'"):
        tf.nn.embedding_lookup([table, table], [1], partition_strategy="range")
    with pytest.raises(TypeError, match="ids must be int32 or int64"):
        tf.nn.embedding_lookup(table, [1.5])


def _sparse_training(lib, make_optimizer, dtype=np.float32):
    """Five steps of an embedding model whose batches repeat ids; returns the table and slots."""
    table = lib.Variable(TABLE.astype(dtype), name="table")
    dense = lib.Variable(np.ones(4, dtype), name="dense")
    ids = lib.placeholder(lib.int32, [None])
    rows = lib.nn.embedding_lookup(table, ids)
    loss = lib.reduce_sum(lib.square(rows * dense - 1.0))
    opt = make_optimizer(lib)
    train = opt.minimize(loss)
    slots = [opt.get_slot(table, n) for n in opt.get_slot_names()]
    return ids, train, [table, dense, *slots]


@pytest.mark.parametrize(
    "make_optimizer",
    [
        lambda lib: lib.train.GradientDescentOptimizer(0.05),
        lambda lib: lib.train.MomentumOptimizer(0.05, 0.9),
        lambda lib: lib.train.MomentumOptimizer(0.05, 0.9, use_nesterov=True),
        lambda lib: lib.train.AdamOptimizer(0.05),
    ],
    ids=["gd", "momentum", "nesterov", "adam"],
)
def test_sparse_optimizer_five_steps_match_tf(tf1, make_optimizer):
    batches = [[1, 3, 1], [3, 4], [9, 9, 9, 0], [1], [2, 3, 2]]
    results = []
    for lib in (tf, tf1):
        with lib.Graph().as_default():
            ids, train, fetches = _sparse_training(lib, make_optimizer)
            with lib.Session() as sess:
                sess.run(lib.global_variables_initializer())
                for batch in batches:
                    sess.run(train, {ids: batch})
                results.append(sess.run(fetches))
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=2e-6, atol=1e-7)
    untouched = [5, 6, 7, 8]
    np.testing.assert_array_equal(results[0][0][untouched], TABLE[untouched])


def test_sparse_updates_are_scatter_ops_on_the_variable():
    _sparse_training(tf, lambda lib: lib.train.MomentumOptimizer(0.1, 0.9))
    ops = {op.type: op for op in tf.get_default_graph().get_operations()}
    assert "SparseApplyMomentum" in ops and "Unique" in ops
    assert ops["SparseApplyMomentum"].colocation_groups() == ["loc:@table"]
    assert ops["Unique"].colocation_groups() == ["loc:@table"]


def test_an_optimizer_without_apply_sparse_says_so():
    class Dense(tf.train.Optimizer):
        def _apply_dense(self, grad, var):
            return tf.no_op()

    table = tf.Variable(TABLE, name="table")
    loss = tf.reduce_sum(tf.gather(table, [1]))
    with pytest.raises(
        NotImplementedError, match=r"Dense cannot apply a sparse \(IndexedSlices\) gradient to 'table'"
    ):
        Dense(False, "dense").minimize(loss)


def test_scatter_ops_match_tf(tf1):
    def program(lib):
        v = lib.Variable(TABLE, name="v")
        idx = lib.constant([2, 5, 2])
        upd = lib.constant(np.ones((3, 4), np.float32) * np.float32([[1], [2], [3]]))
        add = lib.scatter_add(v, idx, upd)
        with lib.control_dependencies([add]):
            sub = lib.scatter_sub(v, [0], lib.slice(upd, [0, 0], [1, 4]))
        with lib.control_dependencies([sub]):
            update = lib.scatter_update(v, [9, 8], lib.zeros([2, 4]))
        return update

    ours, theirs = _run_both(tf1, program)
    np.testing.assert_array_equal(ours, theirs)


def test_scatter_out_of_range_names_the_variable():
    v = tf.Variable(TABLE, name="v")
    bad = tf.scatter_add(v, [10], np.ones((1, 4), np.float32))
    with tf.Session() as sess:
        sess.run(v.initializer)
        with pytest.raises(
            tf.errors.InvalidArgumentError, match=r"ScatterAdd on v: indices\[0\] = 10 is not"
        ):
            sess.run(bad)
    with pytest.raises(ValueError, match=r"updates .* has shape \(2, 4\), expected"):
        tf.scatter_sub(v, [1], np.ones((2, 4), np.float32))


def test_index_ops_match_tf(tf1):
    def program(lib):
        x = lib.constant([4, 1, 4, 7, 1, 0])
        y, idx = lib.unique(x)
        parts = lib.dynamic_partition(lib.constant(TABLE[:6]), [1, 0, 1, 2, 2, 0], 3)
        stitched = lib.dynamic_stitch(
            [[0, 4], [1, 2, 3]], [lib.constant(TABLE[:2]), lib.constant(TABLE[2:5])]
        )
        mod = lib.floormod(lib.constant([-7, 7, 5]), 3), lib.constant([-7.5, 7.5]) % -2.0
        return y, idx, parts, stitched, mod

    ours, theirs = _run_both(tf1, program)
    for a, b in zip(ours[:2], theirs[:2]):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(ours[2], theirs[2]):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(ours[3], theirs[3])
    for a, b in zip(ours[4], theirs[4]):
        np.testing.assert_array_equal(a, b)


# -- gradient checks (float64, central differences) --------------------------------------------------
def test_gather_gradient_check():
    check_gradients(lambda p: tf.gather(p, [[3, 0], [3, 1]]), [np.random.RandomState(0).randn(4, 3)])


@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_sharded_embedding_lookup_gradient_check(strategy):
    rng = np.random.RandomState(1)
    shards = [rng.randn(3, 2), rng.randn(3, 2), rng.randn(2, 2)]
    ids = [[0, 7, 4], [7, 2, 5]]
    check_gradients(
        lambda a, b, c: tf.nn.embedding_lookup([a, b, c], ids, partition_strategy=strategy), shards
    )


def test_no_warning_densifying_a_gradient_of_known_shape():
    params = tf.Variable(TABLE)
    (grad,) = tf.gradients(tf.reduce_sum(tf.gather(params, [1])), [params])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tf.convert_to_tensor(grad)


def test_gate_graph_gates_sparse_gradients_too():
    table = tf.Variable(TABLE, name="table")
    loss = tf.reduce_sum(tf.gather(table, [1, 2]))
    train = tf.train.GradientDescentOptimizer(0.5).minimize(
        loss, gate_gradients=tf.train.Optimizer.GATE_GRAPH
    )
    with tf.Session() as sess:
        sess.run(table.initializer)
        sess.run(train)
        np.testing.assert_allclose(sess.run(table)[:3], TABLE[:3] - [[0.0], [0.5], [0.5]])
