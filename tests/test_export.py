"""Graduation to real TensorFlow, differentially: models built in nbdist, exported with
`nbdist.export.to_tensorflow` and run in both on the same inputs (values and gradients
compared; devices checked on the exported graph); and the reverse: the same models' forward
graphs built in real TensorFlow, imported with ``tf.import_graph_def`` and run in nbdist.

Training steps are compared where TensorFlow's result is deterministic. A ref variable's
``read`` in TensorFlow aliases the variable's buffer, so in an MLP's step the last layer's
update may land before the first layer's gradient reads that layer's weights (nbdist's
reads are snapshots): a step of a 2-layer model is compared only where every gradient is
complete before any update (the sync-replicas model); the other steps train a softmax
regression, whose backward pass reads no variable."""

import numpy as np
import pytest

import nbdist as tf
from nbdist.export import UnsupportedOpError, to_tensorflow

pytestmark = pytest.mark.usefixtures("fresh_graph")
RNG = np.random.RandomState(0)
X = RNG.randn(6, 4).astype(np.float32)
Y = np.array([0, 1, 2, 0, 1, 2], np.int32)
W1 = RNG.randn(4, 5).astype(np.float32) * 0.5
W2 = RNG.randn(5, 3).astype(np.float32) * 0.5
PS, WORKER = "/job:ps/task:0", "/job:worker/task:0"


def _loss(lib, x, y, w1, b1, w2=None):
    """A 2-layer MLP's loss; a softmax regression's without `w2`."""
    logits = lib.matmul(x, w1) + b1
    if w2 is not None:
        logits = lib.matmul(lib.nn.relu(logits), w2)
    return lib.reduce_mean(
        lib.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits), name="loss"
    )


def _params(lib, layers=2):
    if layers == 1:
        return (lib.Variable(W1[:, :3], name="w1"), lib.Variable(np.full(3, 0.1, np.float32), name="b1"))
    return (
        lib.Variable(W1, name="w1"),
        lib.Variable(np.full(5, 0.1, np.float32), name="b1"),
        lib.Variable(W2, name="w2"),
    )


def _tf_values(tf1, graph, fetches, feeds, checkpoint=None):
    """`fetches` (names) of the exported graph after its variables were initialized and loaded
    (from the export's values, or restored from a TensorFlow `checkpoint`), in a local session."""
    exported = graph
    with tf1.Session(graph=exported.graph) as sess:
        exported.initialize(sess)
        if checkpoint is not None:
            with exported.graph.as_default():
                tf1.train.Saver(list(exported.variables.values())).restore(sess, checkpoint)
        feeds = {exported[k]: v for k, v in feeds.items()}
        return [sess.run([exported[f] for f in step], feeds) for step in fetches]


def _nb_values(sess, fetches, feeds):
    graph = tf.get_default_graph()
    feeds = {graph.as_graph_element(k): v for k, v in feeds.items()}
    return [sess.run([graph.as_graph_element(f) for f in step], feeds) for step in fetches]


def _assert_close(nb, real):
    for nb_step, tf_step in zip(nb, real, strict=True):
        for a, b in zip(nb_step, tf_step, strict=True):
            np.testing.assert_allclose(
                np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=2e-5, atol=1e-6
            )


def _assert_same_devices(exported):
    """Every op of the nbdist graph is in the export under its name, on its requested device."""
    for op in tf.get_default_graph().get_operations():
        assert exported[op.name].device == op.device, op.name


def _differential(tf1, fetches, feeds, keep=None, init_ops=()):
    """Runs `fetches` (a list of steps, each a list of names) in nbdist and in the export."""
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for op in init_ops:
            sess.run(op)
        exported = to_tensorflow(keep=keep)
        _assert_same_devices(exported) if keep is None else None
        local = to_tensorflow(session=sess, keep=keep, clear_devices=True)
        nb = _nb_values(sess, fetches, feeds)
    real = _tf_values(tf1, local, [list(init_ops), *fetches], feeds)[1:]
    _assert_close(nb, real)
    return exported


# -- nbdist -> TensorFlow ---------------------------------------------------------------------------------
def test_mlp_values_and_gradients_match(tf1_graph_mode):
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    y = tf.placeholder(tf.int32, [None], name="y")
    params = _params(tf)
    loss = _loss(tf, x, y, *params)
    grads = tf.gradients(loss, list(params))
    tf.train.GradientDescentOptimizer(0.5).minimize(loss, name="train")
    _differential(tf1_graph_mode, [[loss.name, *(g.name for g in grads)]], {"x:0": X, "y:0": Y})


def test_softmax_regression_training_steps_match(tf1_graph_mode):
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    y = tf.placeholder(tf.int32, [None], name="y")
    params = _params(tf, layers=1)
    loss = _loss(tf, x, y, *params)
    train = tf.train.MomentumOptimizer(0.5, 0.9).minimize(loss, name="train")
    after = [loss.name, *(p.name for p in params)]
    _differential(tf1_graph_mode, [[train.name], [train.name], after], {"x:0": X, "y:0": Y})


def test_ps_worker_model_keeps_its_devices_and_matches(tf1_graph_mode):
    """The seed's model: variables on /job:ps, compute on /job:worker, Adam with a global step."""
    with tf.device(PS):
        params = _params(tf, layers=1)
    with tf.device(WORKER):
        x = tf.placeholder(tf.float32, [None, 4], name="x")
        y = tf.placeholder(tf.int32, [None], name="y")
        loss = _loss(tf, x, y, *params)
        grads = tf.gradients(loss, list(params))
        step = tf.train.get_or_create_global_step()
        train = tf.train.AdamOptimizer(0.05).minimize(loss, global_step=step, name="train")
    exported = _differential(
        tf1_graph_mode,
        [
            [loss.name, *(g.name for g in grads)],
            [train.name],
            [train.name],
            [loss.name, step.name, params[0].name],
        ],
        {"x:0": X, "y:0": Y},
    )
    assert exported["w1"].device == PS and exported["MatMul"].device == WORKER
    assert exported["train/update_w1/ApplyAdam"].device == PS
    assert {v.op.name for v in exported.graph.get_collection("trainable_variables")} == {"w1", "b1"}


def test_in_graph_replicated_model_matches(tf1_graph_mode):
    def model(i):
        x = tf.placeholder(tf.float32, [None, 4], name="x")
        y = tf.placeholder(tf.int32, [None], name="y")
        w1 = tf.get_variable("w1", initializer=W1[:, :3])
        b1 = tf.get_variable("b1", initializer=np.full(3, 0.1, np.float32))
        return _loss(tf, x, y, w1, b1)

    replicas = tf.train.in_graph.replicate(model, tf.train.GradientDescentOptimizer(0.5), num_towers=2)
    grads = [g.name for g, _ in replicas.grads]
    losses = [t.name for t in replicas.losses]
    feeds = {"tower_0/x:0": X[:3], "tower_0/y:0": Y[:3], "tower_1/x:0": X[3:], "tower_1/y:0": Y[3:]}
    exported = _differential(tf1_graph_mode, [losses + grads, [replicas.train_op.name], losses], feeds)
    assert exported["tower_1/MatMul"].device == "/job:worker/task:1"
    assert exported["w1"].device == PS


def test_sync_replicas_model_matches(tf1_graph_mode):
    """One synchronous step as the chief runs it: the worker's apply and token dequeue, then the
    chief's take, update and new tokens; exported without nbdist's accumulator close ops."""
    with tf.device(PS):
        params = _params(tf)
        step = tf.train.get_or_create_global_step()
    with tf.device(WORKER):
        x = tf.placeholder(tf.float32, [None, 4], name="x")
        y = tf.placeholder(tf.int32, [None], name="y")
        loss = _loss(tf, x, y, *params)
        opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.5), replicas_to_aggregate=1)
        train = opt.minimize(loss, global_step=step)
    init_tokens = opt.get_init_tokens_op()
    sync_op = opt.get_chief_queue_runner().enqueue_ops[0]
    tf.variables_initializer(tf.local_variables(), name="local_init")
    keep = [train, sync_op, init_tokens, opt.chief_init_op, "local_init", loss]
    with pytest.raises(
        UnsupportedOpError, match=r"op '.*' \(AccumulatorClose\) has no TensorFlow counterpart.*keep="
    ):
        to_tensorflow()
    _differential(
        tf1_graph_mode,
        [[loss.name], [train.op.name], [sync_op.name], [loss.name, step.name, params[0].name]],
        {"x:0": X, "y:0": Y},
        keep=keep,
        init_ops=["local_init", opt.chief_init_op.name, init_tokens.name],
    )


def test_values_carry_over_from_an_nbdist_checkpoint_into_a_tensorflow_checkpoint(tf1_graph_mode, tmp_path):
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    y = tf.placeholder(tf.int32, [None], name="y")
    params = _params(tf)
    loss = _loss(tf, x, y, *params)
    train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train, {x: X, y: Y})
        trained, w1 = sess.run([loss, params[0]], {x: X, y: Y})
        prefix = tf.train.Saver().save(sess, str(tmp_path / "nbdist_model"))
    exported = to_tensorflow(checkpoint=prefix)
    assert "save/SaveV2" in exported.left_out and "save/restore_all" in exported.left_out
    np.testing.assert_array_equal(exported.values["w1"], w1)
    tf_prefix = exported.save(str(tmp_path / "tf_model"))
    fresh = to_tensorflow()  # no values: the TF checkpoint restores them
    [[value]] = _tf_values(tf1_graph_mode, fresh, [["loss:0"]], {"x:0": X, "y:0": Y}, checkpoint=tf_prefix)
    np.testing.assert_allclose(value, trained, rtol=1e-6)


def test_an_op_tensorflow_lacks_is_named():
    x = tf.placeholder(tf.float32, [2], name="x")
    accumulator = tf.ConditionalAccumulator(tf.float32, shape=[2], name="acc")
    accumulator.apply_grad(x, local_step=0)
    dropped = accumulator.num_dropped()
    with pytest.raises(UnsupportedOpError, match=rf"op '{dropped.op.name}' \(AccumulatorNumDropped\)"):
        to_tensorflow()


def test_session_and_checkpoint_together_are_refused():
    with pytest.raises(ValueError, match="session= or checkpoint=, not both"):
        to_tensorflow(session=tf.Session(), checkpoint="x")


# -- TensorFlow -> nbdist ---------------------------------------------------------------------------------
def _tf_forward(tf1, towers):
    """The forward graph of the models in real TensorFlow: variables on the ps, one tower per
    worker task; returns its GraphDef and the tower losses' names."""
    graph = tf1.Graph()
    with graph.as_default():
        with tf1.device(PS):
            params = _params(tf1)
        for i in range(towers):
            with tf1.device(f"/job:worker/task:{i}"), tf1.name_scope(f"tower_{i}"):
                x = tf1.placeholder(tf1.float32, [None, 4], name="x")
                y = tf1.placeholder(tf1.int32, [None], name="y")
                _loss(tf1, x, y, *params)
        tf1.global_variables_initializer()
    return graph


def _tf_local_run(tf1, graph, fetches, feeds):
    graph_def = graph.as_graph_def()
    for node in graph_def.node:
        node.device = ""
    local = tf1.Graph()
    with local.as_default():
        tf1.import_graph_def(graph_def, name="")
    with tf1.Session(graph=local) as sess:
        sess.run("init")
        return sess.run(fetches, feeds)


@pytest.mark.parametrize("towers", [1, 2], ids=["ps_worker", "in_graph_replicated"])
def test_tensorflow_forward_graphs_import_and_run_alike(tf1_graph_mode, towers):
    graph = _tf_forward(tf1_graph_mode, towers)
    fetches = [f"tower_{i}/loss:0" for i in range(towers)] + [f"tower_{i}/Relu:0" for i in range(towers)]
    feeds = {f"tower_{i}/x:0": X[i::towers] for i in range(towers)} | {
        f"tower_{i}/y:0": Y[i::towers] for i in range(towers)
    }
    expected = _tf_local_run(tf1_graph_mode, graph, fetches, feeds)
    tf.import_graph_def(graph.as_graph_def(), name="")
    nb_graph = tf.get_default_graph()
    assert nb_graph.get_operation_by_name("w1").device == PS
    assert (
        nb_graph.get_operation_by_name(f"tower_{towers - 1}/MatMul").device
        == f"/job:worker/task:{towers - 1}"
    )
    with tf.Session() as sess:
        sess.run("init")
        got = sess.run(fetches, feeds)
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-6)


def test_a_tensorflow_mlp_imports_under_a_prefix_with_an_input_map(tf1_graph_mode):
    tf1 = tf1_graph_mode
    graph = tf1.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf1.float32, [None, 4], name="x")
        h = tf1.nn.relu(tf1.matmul(x, tf1.constant(W1)) + 0.1)
        tf1.nn.softmax(tf1.matmul(h, tf1.constant(W2)), name="probs")
    with tf1.Session(graph=graph) as sess:
        expected = sess.run("probs:0", {"x:0": X})
    mine = tf.constant(X)
    [probs] = tf.import_graph_def(graph.as_graph_def(), input_map={"x": mine}, return_elements=["probs:0"])
    assert probs.name == "import/probs:0"
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(probs), expected, rtol=2e-5, atol=1e-6)


def test_a_tensorflow_op_nbdist_lacks_is_named(tf1_graph_mode):
    tf1 = tf1_graph_mode
    graph = tf1.Graph()
    with graph.as_default():
        tf1.fake_quant_with_min_max_args(tf1.constant(np.eye(3, dtype=np.float32)), name="quantized")
    with pytest.raises(
        UnsupportedOpError,
        match=r"node 'quantized' of the TensorFlow GraphDef is a FakeQuantWithMinMaxArgs op",
    ):
        tf.import_graph_def(graph.as_graph_def())


def test_nbdists_own_ops_run_as_their_tensorflow_subgraphs(tf1_graph_mode):
    """GatherDropNegatives (a segment sum's gradient), BooleanMaskNot (uninitialized variables'
    report) and _ReadVariableNow, each exported as a small TensorFlow subgraph."""
    from nbdist.ops.state_ops import read_variable_now

    data = tf.Variable(RNG.randn(4, 3).astype(np.float32), name="data")
    ids = tf.constant([0, 2, -1, 0], name="ids")
    total = tf.reduce_sum(tf.square(tf.unsorted_segment_sum(data, ids, 3)), name="total")
    [grad] = tf.gradients(total, [data])
    assert any(op.type == "GatherDropNegatives" for op in tf.get_default_graph().get_operations())
    report = tf.report_uninitialized_variables()
    now = read_variable_now(data)
    with tf.Session() as sess:
        uninitialized = sess.run(report)
        sess.run(tf.global_variables_initializer())
        expected = sess.run([total, grad, now])
        exported = to_tensorflow(session=sess)
    tf1 = tf1_graph_mode
    with tf1.Session(graph=exported.graph) as tf_sess:
        assert list(tf_sess.run(exported[report.name])) == list(uninitialized) == [b"data"]
        exported.initialize(tf_sess)
        got = tf_sess.run([exported[t.name] for t in (total, grad, now)])
    _assert_close([expected], [got])


# -- control flow -----------------------------------------------------------------------------------
def _cond_model(lib):
    """A tf.cond train/eval switch over a small model, and its gradients."""
    p = lib.placeholder(lib.bool, [], name="p")
    x = lib.placeholder(lib.float32, [None, 4], name="x")
    w = lib.Variable(W1, name="w")
    h = lib.matmul(x, w)
    y = lib.cond(p, lambda: lib.nn.relu(h) * 2.0, lambda: lib.tanh(h) - 1.0, name="switch")
    loss = lib.reduce_sum(y * y, name="loss")
    lib.identity(lib.gradients(loss, [w])[0], name="grad_w")


def test_a_cond_and_its_gradient_export_and_run_alike(tf1_graph_mode):
    _cond_model(tf)
    fetches = [["loss:0", "grad_w:0"]]
    for pred in (True, False):
        _differential(tf1_graph_mode, fetches, {"p:0": pred, "x:0": X})
    ops = {op.type for op in to_tensorflow().graph.get_operations()}
    assert {"Switch", "Merge"} <= ops


@pytest.mark.parametrize("pred", [True, False])
def test_a_tensorflow_cond_imports_and_runs_alike(tf1_graph_mode, pred):
    tf1 = tf1_graph_mode
    graph = tf1.Graph()
    with graph.as_default():  # TF lists a branch's op before the Switch it reads: imported inputs first
        p = tf1.placeholder(tf1.bool, [], name="p")
        x = tf1.placeholder(tf1.float32, [None, 4], name="x")
        y = tf1.cond(p, lambda: tf1.square(x) + 1.0, lambda: tf1.matmul(x, tf1.constant(W1))[:, :4], name="c")
        tf1.identity(y, name="y")
    with tf1.Session(graph=graph) as sess:
        expected = sess.run("y:0", {"p:0": pred, "x:0": X})
    tf.import_graph_def(graph.as_graph_def(), name="")
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run("y:0", {"p:0": pred, "x:0": X}), expected, rtol=2e-5, atol=1e-6)


def test_a_tensorflow_while_loop_is_refused_naming_the_frame_op(tf1_graph_mode):
    tf1 = tf1_graph_mode
    graph = tf1.Graph()
    with graph.as_default():
        tf1.while_loop(lambda i: i < 3, lambda i: i + 1, [tf1.constant(0)], name="loop")
    with pytest.raises(
        UnsupportedOpError, match=r"node 'loop/Enter' .* Enter op: part of a TF 1.x tf.while_loop"
    ):
        tf.import_graph_def(graph.as_graph_def())


def test_a_while_loop_exports_as_tensorflows_functional_while(tf1_graph_mode):
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    w = tf.Variable(W1[:, :4], name="w")

    def body(i, h):
        inner = tf.while_loop(lambda j, g: j < 2, lambda j, g: (j + 1, g * 0.5), [0, h], name="inner")[1]
        return i + 1, tf.tanh(tf.matmul(inner, w)) + x

    _, y = tf.while_loop(lambda i, h: i < 10, body, [0, x], maximum_iterations=3, name="outer")
    tf.identity(y, name="y")
    tf.identity(tf.while_loop(lambda i: i < 5, lambda i: i + 2, [0], name="count"), name="count_out")
    _differential(tf1_graph_mode, [["y:0", "count_out:0"]], {"x:0": X})


def test_a_map_fn_and_a_loop_gradient_are_refused_by_name(graph):
    xs = tf.constant(X)
    tf.map_fn(lambda row: row * 2.0, xs, name="mapped")
    with pytest.raises(
        UnsupportedOpError, match=r"loop of a tf.map_fn / tf.scan \(while loop 'mapped/while'\)"
    ):
        to_tensorflow()
