"""Control flow against real TensorFlow: `cond`, `case`, `switch_case`, `while_loop`, `map_fn`,
`scan`, `foldl` / `foldr` - values and gradients of the same program in nbdist and in
``tensorflow.compat.v1`` (graph mode, TF 1.x's Switch/Merge and Enter/Exit control flow).

Each case is ``build(lib) -> (fetches, feeds)``: the program written once against either
library's API; every fetch (a value or a gradient) must agree.
"""

import re
import time

import numpy as np
import pytest

import nbdist as tf

_RNG = np.random.default_rng(30)
X = _RNG.standard_normal(3).astype(np.float32)
W = _RNG.standard_normal(3).astype(np.float32)
BATCH = _RNG.standard_normal((4, 3)).astype(np.float32)


def _cond_each_branch(pred):
    def build(t):
        p = t.placeholder(t.bool, [])
        x = t.placeholder(t.float32, [3])
        w = t.constant(W)
        y = t.cond(p, lambda: x * w, lambda: t.constant([5.0, 5.0, 5.0]) - t.sin(x))
        loss = t.reduce_sum(y * y)
        return [y, *t.gradients(loss, [x, w])], {p: pred, x: X}

    return build


def _nested_cond(a, b):
    def build(t):
        p, q = t.placeholder(t.bool, []), t.placeholder(t.bool, [])
        x = t.placeholder(t.float32, [3])
        y = t.cond(
            p,
            lambda: t.cond(q, lambda: x * 2.0, lambda: x * x),
            lambda: t.cond(q, lambda: t.exp(x), lambda: t.constant(1.0) + x * 0.0),
        )
        return [y, t.gradients(t.reduce_sum(y), x)[0]], {p: a, q: b, x: X}

    return build


def _case(index, with_default):
    def build(t):
        i = t.placeholder(t.int32, [])
        x = t.placeholder(t.float32, [3])
        pairs = [
            (t.equal(i, 0), lambda: x + 1.0),
            (t.equal(i, 1), lambda: x * 3.0),
            (t.equal(i, 2), lambda: -x),
        ]
        default = (lambda: x * 0.5) if with_default else None
        y = t.case(pairs, default=default, exclusive=True)
        return [y, t.gradients(t.reduce_sum(y * x), x)[0]], {i: index, x: X}

    return build


def _switch_case(index):
    def build(t):
        i = t.placeholder(t.int32, [])
        x = t.placeholder(t.float32, [3])
        y = t.switch_case(i, [lambda: x * 2.0, lambda: x * x, lambda: t.tanh(x)])
        return [y, t.gradients(t.reduce_sum(y), x)[0]], {i: index, x: X}

    return build


def _counting_loop(t):
    n = t.placeholder(t.int32, [])
    i, total = t.while_loop(
        lambda i, s: i < n, lambda i, s: (i + 1, s + i * i), [t.constant(0), t.constant(0)]
    )
    return [i, total], {n: 7}


def _loop_with_tuples_and_invariants(t):
    x = t.placeholder(t.float32, [3])
    i0 = t.constant(0)
    grown = t.reshape(x, [1, 3])

    def body(i, pair, rows):
        a, b = pair
        rows = t.concat([rows, rows[-1:] * 0.5], 0)
        return i + 1, (b, a + b), rows

    out = t.while_loop(
        lambda i, pair, rows: i < 4,
        body,
        [i0, (x, x * 2.0), grown],
        shape_invariants=[i0.shape, (x.shape, x.shape), t.TensorShape([None, 3])],
    )
    i, (a, b), rows = out
    return [i, a, b, rows, *t.gradients(t.reduce_sum(b) + t.reduce_sum(rows), [x])], {x: X}


def _loop_gradient_through_a_product(t):
    x = t.placeholder(t.float32, [3])
    w = t.constant(W)
    _, y = t.while_loop(lambda i, y: i < 4, lambda i, y: (i + 1, y * x + w * t.sin(y)), [t.constant(0), x])
    return [y, *t.gradients(t.reduce_sum(y), [x, w])], {x: X}


def _maximum_iterations_hit(t):
    x = t.placeholder(t.float32, [])
    i, y = t.while_loop(lambda i, y: y < 1e6, lambda i, y: [i + 1, y * 2.0], [0, x], maximum_iterations=5)
    return [i, y, t.gradients(y, x)[0]], {x: 1.5}


def _map_fn(t):
    xs = t.placeholder(t.float32, [4, 3])
    w = t.constant(W)
    y = t.map_fn(lambda row: t.reduce_sum(row * w) * row, xs)
    return [y, *t.gradients(t.reduce_sum(y * y), [xs, w])], {xs: BATCH}


def _map_fn_nested(t):
    xs = t.placeholder(t.float32, [4, 3])
    a, b = t.map_fn(
        lambda pair: (pair[0] * 2.0, pair[1] - pair[0]), (xs, xs * xs), dtype=(t.float32, t.float32)
    )
    return [a, b, t.gradients(t.reduce_sum(a * b), xs)[0]], {xs: BATCH}


def _scan(reverse, with_initializer):
    def build(t):
        xs = t.placeholder(t.float32, [4, 3])
        init = t.ones([3]) if with_initializer else None
        y = t.scan(lambda acc, row: acc * 0.5 + t.tanh(row), xs, initializer=init, reverse=reverse)
        return [y, t.gradients(t.reduce_sum(y), xs)[0]], {xs: BATCH}

    return build


def _folds(t):
    xs = t.placeholder(t.float32, [4, 3])
    left = t.foldl(lambda acc, row: acc * row + 1.0, xs)
    right = t.foldr(lambda acc, row: acc * row + 1.0, xs, initializer=t.zeros([3]))
    return [left, right, *t.gradients(t.reduce_sum(left + right), [xs])], {xs: BATCH}


def _cond_in_a_loop(t):
    x = t.placeholder(t.float32, [3])

    def body(i, y):
        return i + 1, t.cond(t.equal(i % 2, 0), lambda: y * x, lambda: y + x)

    _, y = t.while_loop(lambda i, y: i < 5, body, [t.constant(0), x])
    return [y, t.gradients(t.reduce_sum(y), x)[0]], {x: X}


def _loop_in_a_cond(pred):
    def build(t):
        p = t.placeholder(t.bool, [])
        x = t.placeholder(t.float32, [3])

        def looped():
            return t.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * x), [0, x])[1]

        y = t.cond(p, looped, lambda: x - 1.0)
        return [y, t.gradients(t.reduce_sum(y), x)[0]], {p: pred, x: X}

    return build


def _cond_of_variables(pred):
    """A train/eval switch: one tf.layers model, dropout on (training) or off (eval)."""

    def build(t):
        training = t.placeholder(t.bool, [])
        x = t.placeholder(t.float32, [4, 3])
        w = t.get_variable("w", initializer=t.constant(np.ones((3, 2), np.float32)))
        h = t.matmul(x, w)
        out = t.cond(training, lambda: t.nn.relu(h) * 2.0, lambda: t.nn.relu(h))
        return [out, t.gradients(t.reduce_sum(out), w)[0]], {training: pred, x: BATCH}

    return build


CASES = {
    "cond_true": _cond_each_branch(True),
    "cond_false": _cond_each_branch(False),
    **{f"nested_cond_{a}_{b}": _nested_cond(a, b) for a in (True, False) for b in (True, False)},
    **{f"case_{i}_default": _case(i, True) for i in (0, 1, 2, 3)},
    **{f"case_{i}_no_default": _case(i, False) for i in (0, 1, 2)},
    **{f"switch_case_{i}": _switch_case(i) for i in (0, 1, 2, 7)},
    "counting_loop": _counting_loop,
    "loop_tuples_invariants": _loop_with_tuples_and_invariants,
    "loop_gradient_product": _loop_gradient_through_a_product,
    "maximum_iterations": _maximum_iterations_hit,
    "map_fn": _map_fn,
    "map_fn_nested": _map_fn_nested,
    **{f"scan_reverse_{r}_init_{i}": _scan(r, i) for r in (False, True) for i in (False, True)},
    "folds": _folds,
    "cond_in_loop": _cond_in_a_loop,
    "loop_in_cond_true": _loop_in_a_cond(True),
    "loop_in_cond_false": _loop_in_a_cond(False),
    "cond_of_variables_train": _cond_of_variables(True),
    "cond_of_variables_eval": _cond_of_variables(False),
}


def _run(lib, build):
    graph = lib.Graph()
    with graph.as_default():
        fetches, feeds = build(lib)
        init = lib.global_variables_initializer()
        with lib.Session(graph=graph) as sess:
            sess.run(init)
            return sess.run(fetches, feeds)


def _flat(values):
    if isinstance(values, (list, tuple)):
        return [x for v in values for x in _flat(v)]
    return [values]


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients_match_tensorflow(tf1, name):
    ours, theirs = _flat(_run(tf, CASES[name])), _flat(_run(tf1, CASES[name]))
    assert len(ours) == len(theirs)
    for k, (a, b) in enumerate(zip(ours, theirs)):
        assert np.shape(a) == np.shape(b), f"{name}: fetch {k} has shape {np.shape(a)}, TF's {np.shape(b)}"
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-5, err_msg=f"{name}: fetch {k}")


def test_case_without_a_true_predicate_fails_as_tensorflow(tf1, graph):
    i = tf.placeholder(tf.int32, [])
    y = tf.case([(tf.equal(i, 0), lambda: tf.constant(1)), (tf.equal(i, 1), lambda: tf.constant(2))])
    with (
        tf.Session() as sess,
        pytest.raises(tf.errors.InvalidArgumentError, match="None of conditions evaluated as True"),
    ):
        sess.run(y, {i: 5})


def test_exclusive_case_with_two_true_predicates_fails(graph):
    x = tf.placeholder(tf.float32, [])
    y = tf.case([(x > 0, lambda: x), (x > 1, lambda: -x)], default=lambda: x * 0, exclusive=True)
    with tf.Session() as sess:
        assert sess.run(y, {x: 0.5}) == 0.5
        with pytest.raises(tf.errors.InvalidArgumentError, match="more than 1 conditions"):
            sess.run(y, {x: 2.0})


def test_only_the_taken_branch_runs_and_a_trace_shows_it(graph):
    p = tf.placeholder(tf.bool, [])
    x = tf.constant(3.0)
    y = tf.cond(p, lambda: tf.square(x, name="taken_if_true"), lambda: tf.negative(x, name="taken_if_false"))
    opts = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    with tf.Session() as sess:
        for pred, ran, skipped in (
            (True, "taken_if_true", "taken_if_false"),
            (False, "taken_if_false", "taken_if_true"),
        ):
            meta = tf.RunMetadata()
            sess.run(y, {p: pred}, options=opts, run_metadata=meta)
            names = {s["node_name"] for d in meta.step_stats.dev_stats for s in d.node_stats}
            assert f"cond/{ran}" in names and f"cond/{skipped}" not in names


def test_fetching_a_tensor_of_the_untaken_branch_names_it(graph):
    p = tf.placeholder(tf.bool, [])
    inside = []

    def true_fn():
        inside.append(tf.constant(2.0) * 3.0)
        return inside[-1]

    y = tf.cond(p, true_fn, lambda: tf.constant(0.0))
    with tf.Session() as sess:
        assert sess.run(inside[0], {p: True}) == 6.0
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"branch of a tf\.cond that was not taken"):
            sess.run(inside[0], {p: False})
        assert sess.run(y, {p: False}) == 0.0


def test_a_python_bool_predicate_is_refused_as_in_tf1(graph):
    with pytest.raises(TypeError, match="must not be a Python bool"):
        tf.cond(True, lambda: tf.constant(1), lambda: tf.constant(2))


def test_branches_of_different_structure_are_refused(graph):
    with pytest.raises(ValueError, match="same structure"):
        tf.cond(tf.constant(True), lambda: (tf.constant(1), tf.constant(2)), lambda: tf.constant(1))


def test_a_shape_changing_loop_variable_needs_a_shape_invariant(graph):
    with pytest.raises(ValueError, match="shape_invariants"):
        tf.while_loop(lambda x: tf.size(x) < 10, lambda x: tf.concat([x, x], 0), [tf.constant([1.0])])


def test_a_variable_made_in_a_loop_body_is_refused(graph):
    with pytest.raises(ValueError, match="Create it before the loop"):
        tf.while_loop(lambda i: i < 3, lambda i: i + tf.cast(tf.Variable(1.0), tf.int32), [0])


def test_an_update_of_an_outer_variable_in_a_body_is_refused(graph):
    v = tf.Variable(0.0)
    with pytest.raises(ValueError, match="do not update them"):
        tf.while_loop(lambda i: i < 3, lambda i: tf.cast(tf.assign_add(v, 1.0), tf.int32) + i, [0])


def test_an_endless_loop_ends_at_the_step_deadline_naming_loop_and_iteration(graph):
    i = tf.while_loop(lambda i: tf.constant(True), lambda i: i + 1, [tf.constant(0)], name="forever")
    with (
        tf.Session() as sess,
        pytest.raises(
            tf.errors.DeadlineExceededError, match=r"while loop 'forever' timed out at iteration \d+"
        ),
    ):
        sess.run(i, options=tf.RunOptions(timeout_in_ms=300))


def test_a_failing_op_in_a_body_names_loop_and_iteration(graph):
    x = tf.placeholder(tf.float32, [None])

    def body(i, y):
        check = tf.Assert(i < 2, ["i is", i])
        with tf.control_dependencies([check]):
            return i + 1, y * 2.0

    out = tf.while_loop(lambda i, y: i < 5, body, [0, x], name="checked")
    with (
        tf.Session() as sess,
        pytest.raises(
            tf.errors.InvalidArgumentError, match=r"(?s)assertion failed.*while loop 'checked' at iteration 2"
        ),
    ):
        sess.run(out, {x: [1.0]})


def test_a_traced_loop_shows_its_iterations(graph):
    out = tf.while_loop(lambda i: i < 4, lambda i: i + 1, [tf.constant(0)], name="counted")
    meta = tf.RunMetadata()
    with tf.Session() as sess:
        sess.run(out, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=meta)
    names = [s["node_name"] for d in meta.step_stats.dev_stats for s in d.node_stats]
    spans = [n for n in names if n.startswith("counted/while/iteration:")]
    assert spans == [f"counted/while/iteration:{k}" for k in range(4)]
    assert names.count("counted/Add") == 4  # the body's op, once per iteration


def test_closing_the_session_cancels_a_running_loop_naming_it(graph):
    import threading

    out = tf.while_loop(lambda i: tf.constant(True), lambda i: i + 1, [tf.constant(0)], name="spinning")
    sess = tf.Session()
    failure = []

    def run():
        try:
            sess.run(out, options=tf.RunOptions(timeout_in_ms=30_000))
        except tf.errors.OpError as e:
            failure.append(e)

    runner = threading.Thread(target=run)
    runner.start()
    time.sleep(0.3)
    sess.close()
    runner.join(10)
    assert not runner.is_alive()
    (error,) = failure
    assert isinstance(error, tf.errors.CancelledError)
    assert re.search(r"while loop 'spinning' at iteration \d+", error.message), error.message


def test_a_loop_with_random_draws_runs_but_is_not_differentiated(graph):
    x = tf.placeholder(tf.float32, [3])
    _, y = tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y + tf.random_uniform([3]) * x), [0, x])
    with tf.Session() as sess:
        assert sess.run(y, {x: [1.0, 1.0, 1.0]}).shape == (3,)  # without a gradient it runs
    with pytest.raises(ValueError, match=r"cannot differentiate while loop 'while'.*draws random numbers"):
        tf.gradients(tf.reduce_sum(y), x)
