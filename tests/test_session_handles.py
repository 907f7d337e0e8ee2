"""Persistent tensors across `Session.run` calls against real TF: `tf.get_session_handle`,
`tf.get_session_tensor`, `tf.delete_session_tensor` and the `TensorHandle` a fetched handle
becomes (handle strings, values, deletion, TF's errors, dead handles deleted by a later run),
in a local session and on a cluster of two in-process servers."""

import numpy as np
import pytest

import nbdist as tf

A = np.array([[1.0, -2.0], [3.5, 0.25]], np.float32)


def _persist(lib):
    """Keeps two values, reads them back in later steps, deletes one; returns what was seen."""
    with lib.Graph().as_default():
        a = lib.constant(A)
        h = lib.get_session_handle(lib.matmul(a, a))
        h2 = lib.get_session_handle(lib.constant([1, 2, 3]) * 2, name="ints")
        with lib.Session() as sess:
            first, second = sess.run(h), sess.run(h2)
            fetched = sess.run({"both": [h, h2]})
            holder, value = lib.get_session_tensor(first.handle, lib.float32)
            scaled = sess.run(value * 10, feed_dict={holder: first.handle})
            evaluated = [first.eval(), second.eval()]
            d_holder, deleter = lib.delete_session_tensor(first.handle)
            sess.run(deleter, feed_dict={d_holder: first.handle})
            after = second.eval()
            facts = [
                h.op.type,
                h.dtype.name,
                h.shape.as_list(),
                value.op.type,
                value.dtype.name,
                value.shape.ndims,
                holder.dtype.name,
                deleter.type,
                type(first).__name__,
                [type(x).__name__ for x in fetched["both"]],
                first.handle,
                str(second),
                second.get_raw_handle(),
            ]
    return facts, [scaled, *evaluated, after]


def test_handles_keep_values_across_runs_as_tf(tf1):
    ours, theirs = _persist(tf), _persist(tf1)
    assert ours[0] == theirs[0]
    assert ours[0][10] == "GetSessionHandle;0;/job:localhost/replica:0/task:0/device:CPU:0"
    for a, b in zip(ours[1], theirs[1]):
        np.testing.assert_array_equal(a, b)
        assert a.dtype == b.dtype


def _line(message, key):
    """The line of an op error's message holding `key` (TF's adds where the node was defined)."""
    return next(line for line in message.splitlines() if key in line)


def _errors(lib):
    seen = []
    with lib.Graph().as_default():
        h = lib.get_session_handle(lib.constant(2.0))
        with lib.Session() as sess:
            kept = sess.run(h)
            holder, as_int = lib.get_session_tensor(kept.handle, lib.int32)
            with pytest.raises(lib.errors.InternalError) as e:
                sess.run(as_int, feed_dict={holder: kept.handle})
            seen.append(_line(e.value.message, "Output 0"))
            gone = sess.run(h)
            gone.delete()
            with pytest.raises(TypeError) as e:
                gone.eval()
            seen.append(str(e.value))
            with pytest.raises(TypeError):
                gone.delete()
            holder, value = lib.get_session_tensor(gone.handle, lib.float32)
            with pytest.raises(lib.errors.InvalidArgumentError) as e:
                sess.run(value, feed_dict={holder: gone.handle})
            seen.append(_line(e.value.message, "The tensor"))
            d_holder, deleter = lib.delete_session_tensor(gone.handle)
            with pytest.raises(lib.errors.InvalidArgumentError) as e:
                sess.run(deleter, feed_dict={d_holder: gone.handle})
            seen.append(_line(e.value.message, "Failed"))
        with (
            lib.Session() as other,  # another session has its own store
            pytest.raises(lib.errors.InvalidArgumentError, match="is not in the session store"),
        ):
            other.run(value, feed_dict={holder: kept.handle})
        with pytest.raises(TypeError) as e:
            lib.get_session_handle(3.0)
        seen.append(str(e.value))
    return seen


def test_errors_as_tf(tf1):
    ours = _errors(tf)
    assert ours == _errors(tf1)
    assert (
        ours[1]
        == "Persistent tensor GetSessionHandle;1;/job:localhost/replica:0/task:0/device:CPU:0 may have already been deleted."
    )


def _dead_handles_deleted(lib):
    with lib.Graph().as_default():
        h = lib.get_session_handle(lib.constant(7))
        with lib.Session() as sess:
            handles = [sess.run(h).handle for _ in range(12)]  # each TensorHandle dropped at once
            sess.run(lib.constant(0))  # this run deletes them first (TF: once there are 10 or more)
            holder, value = lib.get_session_tensor(handles[0], lib.int32)
            with pytest.raises(lib.errors.InvalidArgumentError, match="is not in the session store"):
                sess.run(value, feed_dict={holder: handles[0]})
            kept = sess.run(h)
            return kept.eval()


def test_dropped_handles_are_deleted_by_a_later_run_as_tf(tf1):
    assert _dead_handles_deleted(tf) == _dead_handles_deleted(tf1) == 7


def test_handles_on_a_cluster_live_on_their_task_per_session(in_process_servers):
    worker = in_process_servers["worker"]
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            h = tf.get_session_handle(tf.constant([1.0, 2.0]) * 3)
        with tf.Session(worker.target) as sess:
            kept = sess.run(h)
            assert kept.handle == "GetSessionHandle;0;/job:ps/replica:0/task:0/device:CPU:0"
            holder, value = tf.get_session_tensor(kept.handle, tf.float32)
            assert value.device == "/job:ps/replica:0/task:0/device:CPU:0"
            np.testing.assert_array_equal(sess.run(value + 1, feed_dict={holder: kept.handle}), [4.0, 7.0])
        with (
            tf.Session(worker.target) as other,
            pytest.raises(tf.errors.InvalidArgumentError, match=r"\[/job:ps/replica:0/task:0\].*not in the"),
        ):
            other.run(value, feed_dict={holder: kept.handle})
