"""Meta graphs (issue 32): tf.train.export_meta_graph / import_meta_graph, Saver.export_meta_graph
and the .meta file Saver.save writes; TF 1.x's "restore a trained model from .meta + checkpoint"
compared with real TensorFlow's; QueueRunner.to_proto / from_proto."""

import os

import numpy as np
import pytest

import nbdist as tf

X = np.array([[1.0, 2.0, -1.0], [0.5, -0.3, 2.0]], np.float32)
Y = np.array([[1.0], [-1.0]], np.float32)
W0 = np.array([[0.1], [-0.2], [0.3]], np.float32)


def _build(t):
    x = t.placeholder(t.float32, [None, 3], name="x")
    y = t.placeholder(t.float32, [None, 1], name="y")
    w = t.Variable(W0, name="w")
    b = t.Variable(np.zeros([1], np.float32), name="b")
    pred = t.add(t.matmul(x, w), b, name="pred")
    loss = t.reduce_mean(t.square(pred - y), name="loss")
    step = t.train.get_or_create_global_step()
    train_op = t.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    t.add_to_collection("my_train_op", train_op)
    t.add_to_collection("note", "a string")
    t.add_to_collection("sizes", 7)
    t.add_to_collection("rates", 0.5)
    return train_op


def _train_save_reimport(t, tmp_path):
    """TF 1.x's pattern: build, train 2 steps, save, reset the graph, import_meta_graph, restore,
    fetch tensors by name."""
    tmp_path.mkdir()
    with t.Graph().as_default():
        train_op = _build(t)
        saver = t.train.Saver()
        with t.Session() as sess:
            sess.run(t.global_variables_initializer())
            for _ in range(2):
                sess.run(train_op, {"x:0": X, "y:0": Y})
            prefix = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=2)
            before = sess.run(["w:0", "pred:0"], {"x:0": X})
    assert os.path.exists(prefix + ".meta")
    with t.Graph().as_default() as graph:
        restorer = t.train.import_meta_graph(prefix + ".meta")
        with t.Session() as sess:
            restorer.restore(sess, prefix)
            after = sess.run(["w:0", "pred:0", "b:0"], {"x:0": X})
            # the imported collections: training goes on from the restored step
            (train_op,) = t.get_collection("my_train_op")
            sess.run(train_op, {"x:0": X, "y:0": Y})
            step = sess.run(t.train.get_global_step(graph))
            names = sorted(v.op.name for v in t.trainable_variables())
            extras = t.get_collection("note"), t.get_collection("sizes"), t.get_collection("rates")
    return before, after, step, names, extras


@pytest.mark.tf
def test_train_save_import_meta_graph_restore_equals_tensorflow(tf1, tmp_path):
    ours = _train_save_reimport(tf, tmp_path / "nbdist")
    theirs = _train_save_reimport(tf1, tmp_path / "tf")
    (before, after, step, names, extras), (_, t_after, t_step, t_names, t_extras) = ours, theirs
    np.testing.assert_array_equal(after[0], before[0])
    np.testing.assert_array_equal(after[1], before[1])
    np.testing.assert_allclose(after[0], t_after[0], rtol=1e-6)
    np.testing.assert_allclose(after[1], t_after[1], rtol=1e-6)
    np.testing.assert_allclose(after[2], t_after[2], rtol=1e-6)
    assert step == t_step == 3
    assert names == t_names == ["b", "w"]
    assert extras == t_extras == ([b"a string"], [7], [0.5])


def test_export_meta_graph_with_scope_imports_under_another_scope(tmp_path):
    path = str(tmp_path / "sub" / "graph.meta")
    with tf.Graph().as_default():
        with tf.name_scope("model"):
            v = tf.Variable([1.0, 2.0], name="v")
            tf.multiply(v, 3.0, name="out")
        meta = tf.train.export_meta_graph(path, export_scope="model", clear_devices=True)
    assert {n["name"] for n in meta.graph_def["node"]} >= {"v", "out"}
    assert meta.collection_def["trainable_variables"]["variable_list"][0]["variable_name"] == "v:0"
    with tf.Graph().as_default():
        assert tf.train.import_meta_graph(path, import_scope="copy") is not None
        (var,) = tf.global_variables()
        assert var.name == "copy/v:0"
        assert tf.trainable_variables() == [var]
        with tf.Session() as sess:
            sess.run(var.initializer)
            np.testing.assert_array_equal(sess.run("copy/out:0"), [3.0, 6.0])


def test_saver_export_meta_graph_holds_its_saver_def(tmp_path):
    with tf.Graph().as_default():
        tf.Variable(1.0, name="v")
        saver = tf.train.Saver(max_to_keep=3)
        meta = saver.export_meta_graph(str(tmp_path / "m.meta"))
    assert meta.saver_def.restore_op_name == saver.saver_def.restore_op_name
    again = type(meta).FromString((tmp_path / "m.meta").read_bytes())
    assert again.saver_def.max_to_keep == 3
    assert again.graph_def["node"][0]["name"] == meta.graph_def["node"][0]["name"]


def test_import_meta_graph_without_variables_returns_none():
    with tf.Graph().as_default():
        tf.constant(1.0, name="c")
        meta = tf.train.export_meta_graph()
    with tf.Graph().as_default():
        assert tf.train.import_meta_graph(meta) is None
        assert tf.get_default_graph().get_operation_by_name("c").type == "Const"


def test_a_file_of_neither_format_is_refused(tmp_path):
    path = tmp_path / "junk.meta"
    path.write_bytes(b"\xff\xff\xff")
    with tf.Graph().as_default(), pytest.raises(ValueError, match="neither nbdist's meta graph nor"):
        tf.train.import_meta_graph(str(path))
    path.write_bytes(b"NBDMETA1\x00")
    with tf.Graph().as_default(), pytest.raises(ValueError, match="malformed meta graph"):
        tf.train.import_meta_graph(str(path))


def test_removing_a_checkpoint_removes_its_meta_graph(tmp_path):
    with tf.Graph().as_default():
        v = tf.Variable(1.0, name="v")
        saver = tf.train.Saver(max_to_keep=1)
        with tf.Session() as sess:
            sess.run(v.initializer)
            first = saver.save(sess, str(tmp_path / "m"), global_step=1)
            saver.save(sess, str(tmp_path / "m"), global_step=2, write_meta_graph=False)
    assert not os.path.exists(first + ".meta")
    assert not os.path.exists(str(tmp_path / "m-2.meta"))


# -- meta graphs real TensorFlow wrote -------------------------------------------------------------
@pytest.mark.tf
def test_a_tensorflow_meta_graph_without_saver_imports(tf1, tmp_path):
    path = str(tmp_path / "tf.meta")
    with tf1.Graph().as_default():
        x = tf1.placeholder(tf1.float32, [None, 3], name="x")
        tf1.nn.relu(tf1.matmul(x, tf1.constant(W0)), name="out")
        tf1.add_to_collection("outputs", tf1.get_default_graph().get_tensor_by_name("out:0"))
        tf1.train.export_meta_graph(path)
        with tf1.Session() as sess:
            theirs = sess.run("out:0", {"x:0": X})
    with tf.Graph().as_default():
        assert tf.train.import_meta_graph(path) is None
        (out,) = tf.get_collection("outputs")
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(out, {"x:0": X}), theirs)


@pytest.mark.tf
def test_a_tensorflow_meta_graph_with_a_saver_is_out_of_scope(tf1, tmp_path):
    with tf1.Graph().as_default():
        tf1.Variable(1.0, name="v")
        tf1.train.Saver().export_meta_graph(str(tmp_path / "tf.meta"))
        tf1.train.export_meta_graph(str(tmp_path / "tf.pbtxt"), as_text=True)
    with tf.Graph().as_default(), pytest.raises(ValueError, match=r"Saver in it .* out of nbdist's scope"):
        tf.train.import_meta_graph(str(tmp_path / "tf.meta"))
    with tf.Graph().as_default(), pytest.raises(ValueError, match="text format"):
        tf.train.import_meta_graph(str(tmp_path / "tf.pbtxt"))


# -- QueueRunner as data ----------------------------------------------------------------------------
def _queue_runner_def(t):
    with t.Graph().as_default():
        q = t.FIFOQueue(10, [t.float32], shapes=[[]])
        enqueue = q.enqueue([t.constant(1.5)])
        qr = t.train.QueueRunner(q, [enqueue])
        return qr.to_proto()


@pytest.mark.tf
def test_queue_runner_to_proto_names_tensorflows_ops(tf1):
    ours, theirs = _queue_runner_def(tf), _queue_runner_def(tf1)
    assert ours == {
        "queue_name": theirs.queue_name,
        "enqueue_op_name": list(theirs.enqueue_op_name),
        "close_op_name": theirs.close_op_name,
        "cancel_op_name": theirs.cancel_op_name,
        "queue_closed_exception_types": list(theirs.queue_closed_exception_types),
    }


def test_queue_runner_comes_back_from_a_meta_graph_and_feeds_its_queue():
    with tf.Graph().as_default():
        q = tf.FIFOQueue(10, [tf.float32], shapes=[[]], name="q")
        tf.train.add_queue_runner(tf.train.QueueRunner(q, [q.enqueue([tf.constant(1.5)])]))
        q.dequeue(name="next")
        meta = tf.train.export_meta_graph()
    assert meta.collection_def["queue_runners"]["queue_runner_list"][0]["queue_name"] == "q"
    with tf.Graph().as_default():
        tf.train.import_meta_graph(meta)
        (qr,) = tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)
        assert isinstance(qr, tf.train.QueueRunner)
        assert qr.to_proto() == meta.collection_def["queue_runners"]["queue_runner_list"][0]
        again = tf.train.QueueRunner.from_proto(qr.to_proto())
        assert again.queue_closed_exception_types == (tf.errors.OutOfRangeError,)
        with tf.Session() as sess:
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess, coord)
            assert [sess.run("next:0") for _ in range(3)] == [1.5, 1.5, 1.5]
            coord.request_stop()
            coord.join(threads)


@pytest.mark.tf
def test_import_meta_graph_with_input_map_and_collection_predicate_as_tensorflow(tf1, tmp_path):
    def run(t):
        path = str(tmp_path / f"{t.__name__}.meta")
        with t.Graph().as_default():
            x = t.placeholder(t.float32, [None, 3], name="x")
            t.multiply(x, 2.0, name="doubled")
            t.add_to_collection("kept", x)
            t.add_to_collection("dropped", x)
            t.train.export_meta_graph(path)
        with t.Graph().as_default():
            source = t.constant(X, name="source")
            t.train.import_meta_graph(
                path, input_map={"x:0": source}, restore_collections_predicate=lambda key: key != "dropped"
            )
            kept = [c.name for c in t.get_collection("kept")]
            with t.Session() as sess:
                return sess.run("doubled:0"), kept, t.get_collection("dropped")

    (ours, ours_kept, ours_dropped), (theirs, theirs_kept, theirs_dropped) = run(tf), run(tf1)
    np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(ours, X * 2)
    assert ours_kept == theirs_kept == ["x:0"]
    assert ours_dropped == theirs_dropped == []


def test_a_scoped_model_with_its_saver_moves_to_another_scope_and_restores(tmp_path):
    with tf.Graph().as_default():
        with tf.name_scope("tower"):
            v = tf.Variable([1.0, 2.0], name="v")
            saver = tf.train.Saver([v])
        with tf.Session() as sess:
            sess.run(v.initializer)
            sess.run(v.assign([5.0, 6.0]))
            prefix = saver.save(sess, str(tmp_path / "m"), write_meta_graph=False)
        meta = saver.export_meta_graph(export_scope="tower")
    assert meta.saver_def.restore_op_name == "save/restore_all"
    with tf.Graph().as_default():
        restorer = tf.train.import_meta_graph(meta, import_scope="tower")
        with tf.Session() as sess:
            restorer.restore(sess, prefix)
            np.testing.assert_array_equal(sess.run("tower/v:0"), [5.0, 6.0])


@pytest.mark.tf
def test_the_savers_collection_comes_back_as_savers_that_restore(tf1, tmp_path):
    def run(t):
        folder = tmp_path / t.__name__
        folder.mkdir()
        with t.Graph().as_default():
            v = t.Variable([1.0, 2.0], name="v")
            saver = t.train.Saver([v], max_to_keep=2)
            t.add_to_collection(t.GraphKeys.SAVERS, saver)
            with t.Session() as sess:
                sess.run(v.initializer)
                sess.run(v.assign([3.0, 4.0]))
                prefix = saver.save(sess, str(folder / "m"), write_meta_graph=False)
            t.train.export_meta_graph(str(folder / "m.meta"), collection_list=[t.GraphKeys.SAVERS])
        with t.Graph().as_default():
            assert t.train.import_meta_graph(str(folder / "m.meta")) is None  # no saver_def, no variables
            (restorer,) = t.get_collection(t.GraphKeys.SAVERS)
            with t.Session() as sess:
                restorer.restore(sess, prefix)
                return sess.run("v:0"), restorer.saver_def.max_to_keep

    ours, theirs = run(tf), run(tf1)
    np.testing.assert_array_equal(ours[0], theirs[0])
    assert ours[1] == theirs[1] == 2
