"""`tf.TensorArray` (ops/tensor_array_ops.py: a value whose flow holds the array) and
`tf.vectorized_map`: values, static shapes, gradients and errors against tensorflow.compat.v1."""

import inspect

import numpy as np
import pytest

import nbdist as tf

_RNG = np.random.default_rng(32)
X = _RNG.standard_normal((4, 3)).astype(np.float32)


def _value(lib, build):
    with lib.Graph().as_default(), lib.Session() as sess:
        out = build(lib)
        return sess.run(out)


def _static(lib, build):
    with lib.Graph().as_default():
        out = build(lib)
        return (
            [None if out.shape.ndims is None else out.shape.as_list()] if not isinstance(out, tuple) else None
        )


def _squares(t):
    ta = t.TensorArray(t.float32, size=4)

    def body(i, ta):
        x = t.cast(i, t.float32)
        return i + 1, ta.write(i, t.stack([x * x, x]))

    _, ta = t.while_loop(lambda i, ta: i < 4, body, [0, ta])
    return ta.stack()


def _dynamic(t):
    ta = t.TensorArray(t.float32, size=0, dynamic_size=True)
    _, ta = t.while_loop(
        lambda i, ta: i < 5, lambda i, ta: (i + 1, ta.write(i, t.cast(i, t.float32) * 2.0)), [0, ta]
    )
    return ta.stack(), ta.size()


def _unstack_read(t):
    ta = t.TensorArray(t.float32, size=4).unstack(X)

    def body(i, acc):
        return i + 1, acc + ta.read(i) * t.cast(i, t.float32)

    return t.while_loop(lambda i, a: i < 4, body, [0, t.zeros([3])])[1]


def _cond(t):
    ta = t.TensorArray(t.float32, size=2)
    ta = t.cond(t.constant(False), lambda: ta.write(0, [1.0]), lambda: ta.write(1, [2.0]))
    return ta.stack()


def _in_dict_loop_vars(t):
    ta = t.TensorArray(t.float32, size=3, element_shape=[2])
    out = t.while_loop(
        lambda i, d: i < 3,
        lambda i, d: (i + 1, {"ta": d["ta"].write(i, t.fill([2], t.cast(i, t.float32)))}),
        [0, {"ta": ta}],
    )
    return out[1]["ta"].concat()


def _nested_loops(t):
    def outer(i, ta):
        inner = t.TensorArray(t.float32, size=2)
        _, inner = t.while_loop(
            lambda j, a: j < 2, lambda j, a: (j + 1, a.write(j, t.cast(i * 10 + j, t.float32))), [0, inner]
        )
        return i + 1, ta.write(i, inner.stack())

    _, ta = t.while_loop(lambda i, ta: i < 3, outer, [0, t.TensorArray(t.float32, size=3)])
    return ta.stack()


def _grad_through_carried_reads(t):
    x = t.constant(1.5)
    ta = t.TensorArray(t.float32, size=4).write(0, x)
    _, ta = t.while_loop(lambda i, ta: i < 3, lambda i, ta: (i + 1, ta.write(i + 1, ta.read(i) * x)), [0, ta])
    return t.gradients(ta.read(3), x)[0]  # d(x**4)/dx


VALUES = {
    "gradient through reads of a loop-carried array": _grad_through_carried_reads,
    "nested loops, each with an array": _nested_loops,
    "elements of shape [0]": lambda t: (
        t.TensorArray(t.float32, size=2).write(0, np.zeros(0, np.float32)).stack()
    ),
    "size known only when run": lambda t: (
        t.TensorArray(t.float32, size=t.placeholder_with_default(2, [])).write(0, [1.0]).stack()
    ),
    "concat with size known only when run": lambda t: (
        t.TensorArray(t.float32, size=t.placeholder_with_default(2, [])).unstack(X[:2]).concat()
    ),
    "infer_shape=False": lambda t: (
        t.TensorArray(t.float32, size=2, infer_shape=False).write(0, [1.0, 2.0]).write(1, [3.0, 4.0]).stack()
    ),
    "concat of size zero with element_shape": lambda t: t.TensorArray(
        t.float32, size=0, element_shape=[2, 3]
    ).concat(),
    "loop writing squares, then stack": _squares,
    "dynamic_size array grown in a loop": _dynamic,
    "unstack, then read in a loop": _unstack_read,
    "cond returning a TensorArray": _cond,
    "TensorArray in a dict of loop_vars": _in_dict_loop_vars,
    "write then read": lambda t: t.TensorArray(t.float32, size=3).write(1, X[0]).read(1),
    "unwritten element reads as zeros": lambda t: t.TensorArray(t.float32, size=3).write(0, X[0]).read(2),
    "element_shape given: stack of nothing written": lambda t: t.TensorArray(
        t.float32, size=2, element_shape=[3]
    ).stack(),
    "size zero with element_shape": lambda t: t.TensorArray(t.float32, size=0, element_shape=[2]).stack(),
    "scatter then gather": lambda t: (
        t.TensorArray(t.float32, size=5, clear_after_read=False)
        .scatter([4, 0, 2], X[:3])
        .gather([2, 4, 0, 1, 2])
    ),
    "gather of one element twice": lambda t: (
        t.TensorArray(t.float32, size=4, clear_after_read=False).unstack(X).gather([3, 3])
    ),
    "unstack then concat": lambda t: t.TensorArray(t.float32, size=4).unstack(X).concat(),
    "split then stack": lambda t: t.TensorArray(t.float32, size=2).split(X, [2, 2]).stack(),
    "split then read": lambda t: t.TensorArray(t.float32, size=3).split(X.T, [1, 1, 1]).read(2),
    "split (dynamic) then concat": lambda t: (
        t.TensorArray(t.float32, size=0, dynamic_size=True)
        .split(np.arange(6, dtype=np.float32), t.constant([3, 3], t.int64))
        .concat()
    ),
    "int32 array": lambda t: t.TensorArray(t.int32, size=2).write(0, [1, 2]).write(1, [3, 4]).stack(),
    "dynamic write past the end": lambda t: (
        t.TensorArray(t.float32, size=2, dynamic_size=True).write(4, [1.0, 2.0]).stack()
    ),
    "size after a dynamic write": lambda t: (
        t.TensorArray(t.float32, size=2, dynamic_size=True).write(4, [1.0]).size()
    ),
    "size of a fixed array": lambda t: t.TensorArray(t.float32, size=3).size(),
    "identity": lambda t: t.TensorArray(t.float32, size=1).write(0, 5.0).identity().stack(),
    "map_fn of a function reading an array": lambda t: t.map_fn(
        lambda x: t.TensorArray(t.float32, size=2).unstack(x).read(1), np.ones((3, 2, 2), np.float32)
    ),
    "a loop's shape_invariants naming the array's": lambda t: t.while_loop(
        lambda i, ta: i < 2,
        lambda i, ta: (i + 1, ta.write(i, [1.0])),
        [0, t.TensorArray(t.float32, size=2)],
        shape_invariants=[t.TensorShape([]), t.TensorShape(None)],
    )[1].stack(),
    "vectorized_map": lambda t: t.vectorized_map(lambda x: t.reduce_sum(x * x) + x, X),
    "vectorized_map of a structure": lambda t: t.vectorized_map(
        lambda e: (e[0] * 2.0, e[1] - 1), (X, np.arange(4))
    ),
    "vectorized_map with unknown batch": lambda t: t.vectorized_map(
        lambda x: x[0] + 1.0, t.placeholder_with_default(X, [None, 3])
    ),
}


@pytest.mark.parametrize("name", sorted(VALUES))
def test_values_match_tensorflow(tf1, name):
    ours, theirs = _value(tf, VALUES[name]), _value(tf1, VALUES[name])
    if not isinstance(theirs, (tuple, list)):
        ours, theirs = [ours], [theirs]
    for a, b in zip(ours, theirs, strict=True):
        assert np.asarray(a).dtype == np.asarray(b).dtype, name
        np.testing.assert_allclose(a, b, rtol=1e-6, err_msg=name)
    assert _static(tf, VALUES[name]) == _static(tf1, VALUES[name]), name


def _loop_loss(t, x):
    ta = t.TensorArray(t.float32, size=4)

    def body(i, ta, h):
        h = t.tanh(h * x[i] + 0.5)
        return i + 1, ta.write(i, h * h), h

    _, ta, _ = t.while_loop(lambda i, ta, h: i < 4, body, [0, ta, t.ones([3])])
    stacked = ta.stack()
    return t.reduce_sum(stacked * np.arange(12, dtype=np.float32).reshape(4, 3))


GRADS = {
    "loop built with a TensorArray": _loop_loss,
    "unstack and read in a loop": lambda t, x: t.while_loop(
        lambda i, a: i < 4,
        lambda i, a: (i + 1, a + t.sin(t.TensorArray(t.float32, size=4).unstack(x).read(i))),
        [0, t.zeros([3])],
    )[1],
    "scatter, gather with duplicates": lambda t, x: (
        t.TensorArray(t.float32, size=6, clear_after_read=False).scatter([5, 1, 2, 0], x).gather([1, 1, 5, 3])
    ),
    "split, concat": lambda t, x: t.TensorArray(t.float32, size=2).split(x, [2, 2]).concat() * x,
    "write over an element": lambda t, x: (
        t.TensorArray(t.float32, size=2, dynamic_size=True).unstack(x[:2]).write(3, x[3]).stack()
    ),
}


@pytest.mark.parametrize("name", sorted(GRADS))
def test_gradients_match_tensorflow(tf1, name):
    def build(t):
        x = t.constant(X)
        y = GRADS[name](t, x)
        return t.gradients(y, x, grad_ys=t.ones_like(y) * 0.5 + y)[0]

    np.testing.assert_allclose(_value(tf, build), _value(tf1, build), rtol=1e-5, atol=1e-6, err_msg=name)


RUN_ERRORS = {
    "write past a fixed size": (
        lambda t: t.TensorArray(t.float32, size=3).write(3, [1.0, 2.0]).stack(),
        "Tried to write to index 3 but array is not resizeable and size is: 3",
    ),
    "write to a negative index": (
        lambda t: t.TensorArray(t.float32, size=3).write(-1, [1.0]).stack(),
        "Tried to write to index -1 but array is not resizeable",
    ),
    "read of an index never written": (
        lambda t: t.TensorArray(t.float32, size=3).read(1),
        "Could not read from TensorArray index 1.  Furthermore, the element shape is not fully defined",
    ),
    "stack of nothing written": (
        lambda t: t.TensorArray(t.float32, size=2).stack(),
        "Could not read from TensorArray index 0",
    ),
    "read of a negative index": (
        lambda t: t.TensorArray(t.float32, size=3).write(0, [1.0]).read(-1),
        "Tried to read from index -1 but array size is: 3",
    ),
    "gather of a negative index": (
        lambda t: t.TensorArray(t.float32, size=3).write(0, [1.0]).gather([0, -1]),
        "Tried to read from index -1 but array size is: 3",
    ),
    "scatter to a negative index": (
        lambda t: t.TensorArray(t.float32, size=3).scatter([-1], [[1.0]]).stack(),
        "Tried to write to index -1 but array is not resizeable and size is: 3",
    ),
    "read past the end": (
        lambda t: t.TensorArray(t.float32, size=3).write(0, [1.0]).read(3),
        "Tried to read from index 3 but array size is: 3",
    ),
    "write of another shape, known when run": (
        lambda t: (
            t.TensorArray(t.float32, size=3)
            .write(0, [1.0, 2.0])
            .write(1, t.placeholder_with_default(np.ones(3, np.float32), [None]))
            .stack()
        ),
        r"value shape is \[3\] which is incompatible with the TensorArray's inferred element shape: \[2\]",
    ),
    "scatter past the end": (
        lambda t: t.TensorArray(t.float32, size=3).scatter([2, 5], X[:2]).stack(),
        r"Max scatter index must be < array size \(5 vs. 3\)",
    ),
    "unstack of too many rows": (
        lambda t: t.TensorArray(t.float32, size=3).unstack(X).stack(),
        r"Max scatter index must be < array size \(3 vs. 3\)",
    ),
    "split lengths not summing to the rows": (
        lambda t: t.TensorArray(t.float32, size=2).split(X, [2, 1]).stack(),
        "sum of lengths is 3 and value's shape is: \\[4,3\\]",
    ),
    "split into another number of elements": (
        lambda t: t.TensorArray(t.float32, size=3).split(X, [2, 2]).stack(),
        r"TensorArray's size is not equal to the size of lengths \(3 vs. 2\)",
    ),
    "split of unequal lengths": (
        lambda t: t.TensorArray(t.float32, size=2).split(X, [1, 3]).concat(),
        r"index 1 because the value shape is \[3,3\]",
    ),
    "size zero, element shape unknown": (
        lambda t: t.TensorArray(t.float32, size=0).stack(),
        "TensorArray has size zero, but element shape <unknown> is not fully defined",
    ),
}


@pytest.mark.parametrize("name", sorted(RUN_ERRORS))
def test_run_errors_match_tensorflow(tf1, name):
    build, message = RUN_ERRORS[name]
    for lib in (tf, tf1):
        with pytest.raises(lib.errors.OpError, match=message) as caught:
            _value(lib, build)
        assert type(caught.value).__name__ == type(_first_error(tf1, build)).__name__


def _first_error(lib, build):
    try:
        _value(lib, build)
    except lib.errors.OpError as e:
        return e
    raise AssertionError("no error")


def test_write_of_another_static_shape_raises_while_building(tf1):
    for lib in (tf, tf1):
        with (
            lib.Graph().as_default(),
            pytest.raises(ValueError, match=r"Inconsistent shapes: saw \(3,\) but expected \(2,\)"),
        ):
            lib.TensorArray(lib.float32, size=3).write(0, [1.0, 2.0]).write(1, [1.0, 2.0, 3.0])


def test_element_shape_given_refuses_another_shape(tf1):
    for lib in (tf, tf1):
        with lib.Graph().as_default(), pytest.raises(ValueError, match=r"saw \(2,\) but expected \(3,\)"):
            lib.TensorArray(lib.float32, size=3, element_shape=[3]).write(0, [1.0, 2.0])


def test_scatter_of_another_number_of_rows_raises_while_building(tf1):
    for lib in (tf, tf1):
        with (
            lib.Graph().as_default(),
            pytest.raises(ValueError, match="Dimensions must be equal, but are 1 and 2"),
        ):
            lib.TensorArray(lib.float32, size=3).scatter([0, 1], [[1.0]])


def test_size_is_required_without_a_flow(tf1):
    for lib in (tf, tf1):
        with (
            lib.Graph().as_default(),
            pytest.raises(ValueError, match="must be provided if handle is not provided"),
        ):
            lib.TensorArray(lib.float32)


def test_writing_another_dtype_is_refused():
    with (
        tf.Graph().as_default(),
        pytest.raises(TypeError, match="TensorArray dtype is float32 but Op is trying to write dtype int32"),
    ):
        tf.TensorArray(tf.float32, size=1).write(0, tf.constant([1, 2]))


def test_properties_and_close(tf1):
    for lib in (tf, tf1):
        with lib.Graph().as_default(), lib.Session() as sess:
            ta = lib.TensorArray(lib.float64, size=2, dynamic_size=True, element_shape=[None, 2])
            assert ta.dtype == lib.float64 and ta.dynamic_size
            assert ta.element_shape.as_list() == [None, 2]
            assert ta.flow.dtype == (
                lib.float64 if lib is tf else lib.float32
            )  # (TF's flow is a scalar float)
            ta = ta.write(0, np.ones((3, 2)))
            assert ta.element_shape.as_list() == [3, 2]
            sess.run(ta.close())


def test_a_tensor_array_rebuilt_from_its_flow():
    with tf.Graph().as_default(), tf.Session() as sess:
        ta = tf.TensorArray(tf.float32, size=2).write(1, [3.0])
        again = tf.TensorArray(tf.float32, size=2, flow=ta.flow)
        np.testing.assert_array_equal(sess.run(again.read(1)), [3.0])
        assert ta.handle is ta.flow


def test_a_loop_gradient_through_a_dynamic_array():
    with tf.Graph().as_default(), tf.Session() as sess:
        x = tf.constant(2.0)
        ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
        _, ta = tf.while_loop(
            lambda i, ta: i < 3, lambda i, ta: (i + 1, ta.write(i, x ** tf.cast(i + 1, tf.float32))), [0, ta]
        )
        (g,) = tf.gradients(tf.reduce_sum(ta.stack()), x)
        assert sess.run(g) == pytest.approx(1 + 2 * 2 + 3 * 4)


def test_signatures_are_tensorflows(tf1):
    for method in (
        "__init__",
        "read",
        "write",
        "gather",
        "scatter",
        "stack",
        "unstack",
        "concat",
        "split",
        "size",
    ):
        ours, theirs = getattr(tf.TensorArray, method), getattr(tf1.TensorArray, method)
        assert inspect.signature(ours) == inspect.signature(theirs), method
    assert inspect.signature(tf.vectorized_map) == inspect.signature(tf1.vectorized_map)
