"""`tf.PaddingFIFOQueue` and `tf.PriorityQueue` (at `tf.io` and the top level) against real
TensorFlow: the same elements enqueued, the same batches (padded, ordered) and static shapes
dequeued, and TF's errors for bad shapes and priorities."""

import numpy as np
import pytest

import nbdist as tf


def _run(lib, build):
    with lib.Graph().as_default(), lib.Session() as sess:
        return build(lib, sess)


def _assert_same(ours, theirs):
    if isinstance(theirs, dict):
        assert sorted(ours) == sorted(theirs)
        ours, theirs = [ours[k] for k in sorted(ours)], [theirs[k] for k in sorted(theirs)]
    if isinstance(theirs, (list, tuple)):
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs, strict=True):
            _assert_same(a, b)
        return
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert (ours.shape, ours.dtype) == (theirs.shape, theirs.dtype)
    assert ours.tolist() == theirs.tolist()


def _padding(t, sess):
    q = t.io.PaddingFIFOQueue(10, [t.int32, t.string, t.float32], shapes=[[None, 2], [None], []])
    for k in (1, 3, 0, 2):
        sess.run(q.enqueue([np.full((k, 2), k, np.int32), [b"ab"[: k % 3]] * (3 - k), float(k)]))
    many = q.dequeue_many(2)
    shapes = [x.shape.as_list() for x in many]
    first = sess.run(many)
    one = sess.run(q.dequeue())
    sess.run(q.close())
    rest = sess.run(q.dequeue_up_to(5))
    return shapes, first, one, rest


def _padding_top_level_names(t, sess):
    q = t.PaddingFIFOQueue(4, [t.int64, t.float64], [[None, None], [2]], names=["ids", "w"])
    sess.run(q.enqueue_many({"ids": np.arange(12).reshape(3, 2, 2), "w": np.ones((3, 2))}))
    sess.run(q.enqueue({"ids": np.arange(3).reshape(3, 1), "w": [2.0, 3.0]}))
    out = q.dequeue_many(4)
    return {k: v.shape.as_list() for k, v in out.items()}, sess.run(out), sess.run(q.size())


def _priority(t, sess):
    q = t.io.PriorityQueue(10, [t.string, t.float32], shapes=[[], [2]])
    for p in (5, -1, 3, 10, 0, -7):
        sess.run(q.enqueue((np.int64(p), str(p).encode(), np.full(2, p, np.float32))))
    many = q.dequeue_many(3)
    shapes = [x.shape.as_list() for x in many]
    return shapes, sess.run(many), sess.run(q.dequeue()), sess.run(q.size())


def _priority_top_level_many(t, sess):
    q = t.PriorityQueue(8, [t.int32], shapes=[[3]], names=["p", "v"])
    sess.run(q.enqueue_many({"p": np.array([4, 2, 9, 1], np.int64), "v": np.arange(12).reshape(4, 3)}))
    return sess.run(q.dequeue()), sess.run(q.dequeue_many(3))


CASES = {
    "padding": _padding,
    "padding_top_level_names": _padding_top_level_names,
    "priority": _priority,
    "priority_top_level_many": _priority_top_level_many,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_queue_matches_tensorflow(tf1, name):
    _assert_same(_run(tf, CASES[name]), _run(tf1, CASES[name]))


@pytest.mark.parametrize("lib_name", ["nbdist", "tensorflow"])
def test_padding_queue_needs_a_list_of_shapes(tf1, lib_name):
    t = tf if lib_name == "nbdist" else tf1
    with t.Graph().as_default():
        with pytest.raises(ValueError, match="a list of shapes must be provided"):
            t.io.PaddingFIFOQueue(3, [t.int32], shapes=[None])
        with pytest.raises(ValueError, match="Shapes must be provided for all components"):
            t.io.PaddingFIFOQueue(3, [t.int32, t.int32], shapes=[[None]])
        with pytest.raises(ValueError, match="All shapes must be fully defined"):
            t.io.PriorityQueue(3, [t.int32], shapes=[[None]])
        with pytest.raises(TypeError, match="Expected list for 'shapes' argument"):
            t.PriorityQueue(3, [t.int32])


@pytest.mark.parametrize("lib_name", ["nbdist", "tensorflow"])
def test_bad_elements_raise_as_in_tensorflow(tf1, lib_name):
    t = tf if lib_name == "nbdist" else tf1
    with t.Graph().as_default(), t.Session() as sess:
        pad = t.io.PaddingFIFOQueue(3, [t.int32], shapes=[[None, 2]])
        wrong = t.placeholder(t.int32)
        with pytest.raises(t.errors.InvalidArgumentError, match=r"[Ss]hape"):
            sess.run(pad.enqueue([wrong]), {wrong: np.zeros((2, 3), np.int32)})
        prio = t.io.PriorityQueue(3, [t.int32], shapes=[[]])
        p = t.placeholder(t.int64)
        with pytest.raises(t.errors.InvalidArgumentError, match="priority"):
            sess.run(prio.enqueue((p, 1)), {p: [1, 2]})
