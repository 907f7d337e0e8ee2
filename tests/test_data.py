"""`tf.data`: values, shapes and end of data as real TF's; pipelines as plain data in the GraphDef.

Shuffled orders are not compared with TF's (nbdist's generator is numpy's, not TF's
Philox): only that each epoch holds every element once, and that a seed fixes the order.
"""

import time

import numpy as np
import pytest

import nbdist as tf
from nbdist.graph.graph_def import graph_to_graph_def

X = np.arange(14, dtype=np.float32).reshape(7, 2)
Y = np.arange(7, dtype=np.int32)

# Each pipeline is built from a `tf` module, so the same code runs under nbdist and TF.
PIPELINES = {
    "slices_batch": lambda t: t.data.Dataset.from_tensor_slices(X).batch(3),
    "batch_drop_remainder": lambda t: t.data.Dataset.from_tensor_slices(X).batch(3, drop_remainder=True),
    "tuple_repeat_take": lambda t: t.data.Dataset.from_tensor_slices((X, Y)).repeat(3).take(10),
    "dict_skip_batch": lambda t: t.data.Dataset.from_tensor_slices({"x": X, "y": Y}).skip(2).batch(2),
    "range_args": lambda t: t.data.Dataset.range(3, 20, 4).repeat(2),
    "from_tensors": lambda t: t.data.Dataset.from_tensors((X, Y)).repeat(2),
    "zip_concat": lambda t: t.data.Dataset.zip(
        (t.data.Dataset.range(3), t.data.Dataset.range(5, 9))
    ).concatenate(t.data.Dataset.zip((t.data.Dataset.range(1), t.data.Dataset.range(1)))),
    "empty_take": lambda t: t.data.Dataset.range(4).take(0).repeat(),
}


def _run(t, build):
    graph = t.Graph()
    with graph.as_default():
        ds = build(t)
        shapes = t.data.get_output_shapes(ds) if hasattr(t.data, "get_output_shapes") else ds.output_shapes
        nxt = t.data.make_one_shot_iterator(ds).get_next()
        out = []
        with t.Session(graph=graph) as sess:
            while True:
                try:
                    out.append(sess.run(nxt))
                except t.errors.OutOfRangeError:
                    break
                assert len(out) < 100, "no end of data"
    return out, shapes


def _flat(x):
    if isinstance(x, dict):
        return [v for k in sorted(x) for v in _flat(x[k])]
    if isinstance(x, (tuple, list)):
        return [v for item in x for v in _flat(item)]
    return [x]


def _shape_lists(shapes):
    return [s.as_list() if s.ndims is not None else None for s in _flat(shapes)]


@pytest.mark.tf
@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_elements_shapes_and_end_of_data_match_tensorflow(name, tf1_graph_mode):
    ours, our_shapes = _run(tf, PIPELINES[name])
    theirs, their_shapes = _run(tf1_graph_mode, PIPELINES[name])
    assert _shape_lists(our_shapes) == _shape_lists(their_shapes)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        fa, fb = _flat(a), _flat(b)
        assert len(fa) == len(fb)
        for u, v in zip(fa, fb):
            assert np.asarray(u).dtype == np.asarray(v).dtype
            np.testing.assert_array_equal(u, v)


def test_a_seed_fixes_the_shuffled_order_and_each_epoch_is_a_permutation():
    def order(seed):
        tf.reset_default_graph()
        nxt = tf.data.Dataset.range(10).shuffle(4, seed=seed).repeat(2).make_one_shot_iterator().get_next()
        with tf.Session() as sess:
            return [int(sess.run(nxt)) for _ in range(20)]

    a, b, c = order(3), order(3), order(4)
    assert a == b and a != c
    assert sorted(a[:10]) == sorted(a[10:]) == list(range(10))
    assert a[:10] != a[10:]  # reshuffled each epoch


def test_the_pipeline_travels_in_the_graph_def_as_plain_data():
    tf.reset_default_graph()
    p = tf.placeholder(tf.float32, [None])
    it = tf.data.Dataset.from_tensor_slices(p).shuffle(3, seed=1).batch(2).make_initializable_iterator()
    nodes = {n["name"]: n for n in graph_to_graph_def(tf.get_default_graph())["node"]}
    make = nodes[it.initializer.name]
    assert make["op"] == "MakeIterator"
    assert make["attr"]["dataset"] == {
        "op": "batch",
        "input": {
            "op": "shuffle",
            "input": {"op": "tensor_slices", "components": [0]},
            "buffer_size": 1,
            "seed": make["attr"]["dataset"]["input"]["seed"],
            "seed2": 1,
            "reshuffle": True,
        },
        "drop_remainder": False,
        "batch_size": 2,
    }
    assert make["input"][1] == p.name


def test_batching_elements_of_different_shapes_names_the_node():
    tf.reset_default_graph()
    p = tf.placeholder(tf.float32, [None])
    q = tf.placeholder(tf.float32, [None])
    ds = tf.data.Dataset.from_tensors(p).concatenate(tf.data.Dataset.from_tensors(q)).batch(2)
    it = ds.make_initializable_iterator()
    nxt = it.get_next()
    with tf.Session() as sess:
        sess.run(it.initializer, {p: [1.0, 2.0], q: [3.0, 4.0]})
        assert sess.run(nxt).shape == (2, 2)
        sess.run(it.initializer, {p: [1.0, 2.0], q: [3.0]})
        with pytest.raises(
            tf.errors.InvalidArgumentError,
            match=r"(?s)Cannot batch tensors with different shapes in component 0.*node IteratorGetNext",
        ):
            sess.run(nxt)


def test_from_structure_refuses_a_dataset_of_other_types():
    it = tf.data.Iterator.from_structure(tf.int64, tf.TensorShape([]))
    with pytest.raises(TypeError, match="Expected output types"):
        it.make_initializer(tf.data.Dataset.from_tensor_slices([1.0]))


def test_reset_clears_an_iterator_on_its_task():
    server = tf.train.Server.create_local_server()
    try:
        tf.reset_default_graph()
        it = tf.data.Dataset.range(5).make_initializable_iterator(shared_name="it")
        nxt = it.get_next()
        with tf.Session(server.target) as sess:
            sess.run(it.initializer)
            assert sess.run(nxt) == 0
        tf.Session.reset(server.target)
        with (
            tf.Session(server.target) as sess,
            pytest.raises(tf.errors.FailedPreconditionError, match="not been initialized"),
        ):
            sess.run(nxt)
    finally:
        server.stop()


def test_a_sessions_anonymous_iterator_goes_when_the_session_closes():
    server = tf.train.Server.create_local_server()
    try:
        tf.reset_default_graph()
        anonymous = tf.data.Dataset.range(3).make_one_shot_iterator().get_next()
        shared = tf.data.Dataset.range(3).make_initializable_iterator(shared_name="kept")
        with tf.Session(server.target) as sess:
            sess.run(shared.initializer)
            assert sess.run([anonymous, shared.get_next()]) == [0, 0]
            kinds = [k for k in server.worker.resources._resources if k[1] == "iterator"]
            assert len(kinds) == 2
        deadline = time.monotonic() + 10
        while len([k for k in server.worker.resources._resources if k[1] == "iterator"]) != 1:
            assert time.monotonic() < deadline, "the closed session's iterator is still held"
            time.sleep(0.02)
        assert [k[2] for k in server.worker.resources._resources if k[1] == "iterator"] == ["kept"]
    finally:
        server.stop()
