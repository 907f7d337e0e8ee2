"""tf.py_func, tf.numpy_function and tf.py_function (nbdist/ops/script_ops.py) against
tf.compat.v1: values, op types, static shapes, TF's errors for a failing function or a wrong
result; and the function never leaves its process (a worker of another refuses the graph)."""

import gc

import numpy as np
import pytest

import nbdist as tf
from nbdist.graph.graph_def import graph_to_graph_def
from nbdist.runtime.worker import WorkerService

X = np.array([1.0, 2.0], np.float32)


def _double(a):
    return a * 2


def _pair(a):
    return [a * 2, a.sum(keepdims=True)]


def _strings(a):
    return np.array([b"a", b"bc"], dtype=object), np.array(["x", "yz"])


# name -> build(t, x) -> fetches
CASES = {
    "one": lambda t, x: t.py_func(_double, [x], t.float32),
    "list_of_one": lambda t, x: t.py_func(_double, [x], [t.float32]),
    "two": lambda t, x: t.py_func(_pair, [x], [t.float32, t.float32]),
    "stateless": lambda t, x: t.py_func(_double, [x], t.float32, stateful=False),
    "int_result": lambda t, x: t.py_func(lambda a: 3, [x], t.int64),
    "bytes": lambda t, x: t.py_func(lambda a: b"hi", [x], t.string),
    "strings": lambda t, x: t.py_func(_strings, [x], [t.string, t.string]),
    "two_inputs": lambda t, x: t.py_func(lambda a, b: a + b, [x, t.constant(1.0)], t.float32),
    "empty": lambda t, x: t.py_func(lambda a: a[:0], [x], t.float32),
    "numpy_function": lambda t, x: t.numpy_function(lambda a: a + 1, [x], t.float32),
    "numpy_function_stateless": lambda t, x: t.numpy_function(lambda a: -a, [x], [t.float32], stateful=False),
    "py_function": lambda t, x: t.py_function(lambda a: a * 3, [x], t.float32),
    "py_function_numpy": lambda t, x: t.py_function(lambda a: a.numpy().astype(np.float64), [x], [t.float32]),
    "wrong_dtype": lambda t, x: t.py_func(lambda a: a.astype(np.float64), [x], t.float32),
    "wrong_count": lambda t, x: t.py_func(lambda a: [a, a], [x], t.float32),
    "value_error": lambda t, x: t.py_func(_raise(ValueError), [x], t.float32),
    "type_error": lambda t, x: t.py_func(_raise(TypeError), [x], t.float32),
    "runtime_error": lambda t, x: t.py_func(_raise(RuntimeError), [x], t.float32),
    "stop_iteration": lambda t, x: t.py_func(_raise(StopIteration), [x], t.float32),
    "not_implemented": lambda t, x: t.py_func(_raise(NotImplementedError), [x], t.float32),
}


def _raise(kind):
    def fail(a):
        raise kind("boom")

    return fail


def _summary(value):
    if isinstance(value, (list, tuple)):
        return [_summary(v) for v in value]
    return (np.asarray(value).dtype.kind, np.asarray(value).tolist())


@pytest.fixture(scope="module")
def py_funcs(tf1):
    """Per library, one graph holding every case's op, and its session: built once."""
    built = {}
    for lib in (tf, tf1):
        graph = lib.Graph()
        with graph.as_default():
            x = lib.constant(X, name="x")
            outs = {case: CASES[case](lib, x) for case in sorted(CASES)}
        built[lib] = (lib.Session(graph=graph), outs)
    yield built
    for sess, _ in built.values():
        sess.close()


def _run(lib, built, case):
    sess, outs = built[lib]
    out = outs[case]
    static = [(o.op.type, o.dtype.name, o.shape.ndims) for o in (out if isinstance(out, list) else [out])]
    try:
        return static, _summary(sess.run(out))
    except lib.errors.OpError as e:
        return static, (type(e).__name__, _first_line(e.message))


@pytest.mark.parametrize("case", sorted(CASES))
def test_py_func_as_tensorflow(tf1, py_funcs, case):
    ours, theirs = _run(tf, py_funcs, case), _run(tf1, py_funcs, case)
    assert ours[0] == theirs[0]
    if isinstance(theirs[1], tuple) and theirs[1][0].endswith("Error"):
        assert ours[1][0] == theirs[1][0]
        assert ours[1][1].replace(_token_of(ours[1][1]), "T") == theirs[1][1].replace(
            _token_of(theirs[1][1]), "T"
        )
    else:
        assert ours[1] == theirs[1]


def _first_line(message):
    """The error's own first line (after TF's "Graph execution error ... Node: 'x'" frame)."""
    lines = message.split("\n")
    after = [i + 1 for i, line in enumerate(lines) if line.startswith("Node: ")]
    return lines[after[-1] if after else 0]


def _token_of(message):
    words = [w for w in message.split() if w.startswith("pyfunc_")]
    return words[0] if words else "pyfunc_"


def test_py_func_without_outputs_returns_its_op(tf1):
    for lib in (tf, tf1):
        seen = []
        with lib.Graph().as_default(), lib.Session() as sess:
            op = lib.py_func(lambda a, seen=seen: seen.append(a.tolist()), [lib.constant(X)], [])
            assert op.type == "PyFunc"
            sess.run(op)
        assert seen == [[1.0, 2.0]]


def test_stateful_py_func_runs_every_time_and_has_no_gradient(tf1):
    for lib in (tf, tf1):
        calls = []
        with lib.Graph().as_default(), lib.Session() as sess:
            x = lib.constant(X)
            y = lib.py_func(lambda a, calls=calls: calls.append(1) or a, [x], lib.float32)
            assert lib.gradients(y * x, x)[0] is not None
            assert lib.gradients(y, x) == [None]
            sess.run(y)
            sess.run(y)
        assert len(calls) == 2


def test_a_worker_of_another_process_refuses_a_py_func():
    with tf.Graph().as_default() as g:
        with tf.device("/job:worker/task:1"):
            y = tf.py_func(_double, [tf.constant(X)], tf.float32, name="f")
        graph_def = graph_to_graph_def(g)
    node = next(n for n in graph_def["node"] if n["name"] == "f")
    worker = WorkerService("/job:worker/replica:0/task:1", lambda task: "localhost:1")
    node["attr"]["_process"] = "otherhost:4242:0123456789ab"  # (as the graph a remote client sent)
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        worker.register_graph(graph_def, [], [y.name], [])
    message = str(info.value)
    assert "PyFunc op 'f'" in message and "/job:worker/task:1" in message
    assert "pid 4242 on otherhost" in message and "tf.device" in message
    here, _graph = _graph_def_of_this_process()  # (its own process's graph registers)
    assert worker.register_graph(here, [], ["g:0"], [])


def _graph_def_of_this_process():
    with tf.Graph().as_default() as g:
        tf.py_func(_double, [tf.constant(X)], tf.float32, name="g")
        return graph_to_graph_def(g), g


def test_py_func_runs_in_its_process_only_while_its_graph_lives():
    graph_def, g = _graph_def_of_this_process()
    node = next(n for n in graph_def["node"] if n["name"] == "g")
    token = node["attr"]["token"]
    worker = WorkerService("/job:localhost/replica:0/task:0", lambda task: "localhost:1")
    assert worker.register_graph(graph_def, [], ["g:0"], [])
    del g
    gc.collect()
    with pytest.raises(tf.errors.InvalidArgumentError, match=f"Python function {token}"):
        worker.register_graph(graph_def, [], ["g:0"], [])


def _in_control_flow(t):
    x0 = t.constant(1.0)

    def body(i, x):
        return i + 1, t.reshape(t.py_func(_double, [x], t.float32), [])

    _, looped = t.while_loop(lambda i, x: i < 3, body, [t.constant(0), x0])
    mapped = t.map_fn(
        lambda v: t.reshape(t.numpy_function(lambda a: a + 1, [v], t.float32), []), t.constant(X)
    )
    branch = t.cond(t.constant(True), lambda: t.py_func(lambda a: a * 10, [x0], t.float32), lambda: x0)
    gc.collect()  # (the loop's and branch's function graphs are gone: the functions stay)
    return [looped, mapped, branch]


def test_py_func_in_loops_and_branches_keeps_its_function():
    with tf.Graph().as_default(), tf.Session() as sess:
        looped, mapped, branch = sess.run(_in_control_flow(tf))
    assert looped == 8.0 and branch == 10.0
    np.testing.assert_array_equal(mapped, X + 1)
