"""check_numerics, verify_tensor_all_finite, add_check_numerics_ops, tf.Print, tf.print and the
tensor type tests (nbdist/ops/logging_ops.py) against tf.compat.v1: the same values, the same
messages in the same errors, the same text on the same stream."""

import re
import sys

import numpy as np
import pytest

import nbdist as tf

_RNG = np.random.default_rng(32)
X = _RNG.standard_normal((2, 3)).astype(np.float32)


def _message(error):
    """A failed step's message without TF's "Graph execution error" frame and node trailer."""
    text = error.message.split("\n\t [[")[0]
    return text.split("\n")[-1]


def _check_run(lib, value, dtype=None):
    with lib.Graph().as_default(), lib.Session() as sess:
        x = lib.placeholder(dtype or lib.float32, name="x")
        y = lib.check_numerics(x, "bad x")
        try:
            return y.op.type, sess.run(y, {x: value})
        except lib.errors.InvalidArgumentError as e:
            return y.op.type, _message(e)


@pytest.mark.parametrize(
    "value",
    [X, np.zeros((0, 2), np.float32), [1.0, np.nan], [np.inf, 2.0], [-np.inf, np.nan], [[np.nan], [np.inf]]],
    ids=["finite", "empty", "nan", "inf", "both", "2d_both"],
)
def test_check_numerics_as_tensorflow(tf1, value):
    (our_type, ours), (their_type, theirs) = _check_run(tf, value), _check_run(tf1, value)
    assert our_type == their_type == "CheckNumerics"
    if isinstance(theirs, str):
        assert ours == theirs
    else:
        np.testing.assert_array_equal(ours, theirs)


def test_check_numerics_of_float64_and_half(tf1):
    for dtype in ("float64", "float16"):
        _, value = _check_run(tf, np.array([1.0, np.inf]), getattr(tf, dtype))
        assert value == _check_run(tf1, np.array([1.0, np.inf]), getattr(tf1, dtype))[1]


def test_check_numerics_refuses_integers_as_tensorflow(tf1):
    for lib in (tf, tf1):
        with (
            lib.Graph().as_default(),
            pytest.raises(TypeError, match="DataType int32 not in list of allowed"),
        ):
            lib.check_numerics(lib.constant([1, 2]), "ints")


def test_check_numerics_gradient_passes_through_and_is_checked(tf1):
    def run(lib, feed):
        with lib.Graph().as_default(), lib.Session() as sess:
            x = lib.placeholder(lib.float32, name="x")
            y = lib.check_numerics(x, "m") * 3.0
            (g,) = lib.gradients(lib.log(y), x)
            try:
                return g.op.type, sess.run(g, {x: feed})
            except lib.errors.InvalidArgumentError as e:
                return g.op.type, _message(e)

    ours, theirs = run(tf, [1.0, 2.0]), run(tf1, [1.0, 2.0])
    assert ours[0] == theirs[0] == "CheckNumerics"
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-6)
    (_, ours), (_, theirs) = run(tf, [0.0, 1.0]), run(tf1, [0.0, 1.0])  # d log(y) = 1/y: inf at 0
    prefix = "Not a number (NaN) or infinity (Inf) values detected in gradient. "
    assert ours.startswith(prefix) and theirs.startswith(prefix)
    assert ours.endswith(" : Tensor had Inf values") and theirs.endswith(" : Tensor had Inf values")


def _verify(lib, feed):
    with lib.Graph().as_default(), lib.Session() as sess:
        x = lib.placeholder(lib.float32, name="x")
        a = lib.verify_tensor_all_finite(x, "msg")
        b = lib.verify_tensor_all_finite(x=x * 2.0, message="m2", name="vv")
        names = [a.name, b.name, a.op.type]
        try:
            return names, [sess.run(a, {x: feed}), sess.run(b, {x: feed})]
        except lib.errors.InvalidArgumentError as e:
            return names, _message(e)


def test_verify_tensor_all_finite_as_tensorflow(tf1):
    ours, theirs = _verify(tf, X), _verify(tf1, X)
    assert (
        ours[0] == theirs[0] == ["VerifyFinite/control_dependency:0", "vv/control_dependency:0", "Identity"]
    )
    np.testing.assert_array_equal(ours[1], theirs[1])
    assert _verify(tf, [np.nan])[1] == _verify(tf1, [np.nan])[1] == "msg : Tensor had NaN values"


def _graph_checks(lib, feed):
    with lib.Graph().as_default(), lib.Session() as sess:
        a = lib.placeholder(lib.float32, name="a")
        b = lib.log(a, name="b")
        lib.constant(1, name="i")
        lib.cast(b, lib.float64, name="c")
        check = lib.add_check_numerics_ops()
        ops = lib.get_default_graph().get_operations()
        made = [
            (o.name, o.inputs[0].name, [c.name for c in o.control_inputs])
            for o in ops
            if o.type == "CheckNumerics"
        ]
        try:
            return check.type, made, sess.run([b, check], {a: feed})[0]
        except lib.errors.InvalidArgumentError as e:
            return check.type, made, _message(e)


def test_add_check_numerics_ops_as_tensorflow(tf1):
    ours, theirs = _graph_checks(tf, [1.0, 2.0]), _graph_checks(tf1, [1.0, 2.0])
    assert ours[:2] == theirs[:2]
    assert ours[1] == [
        ("CheckNumerics", "a:0", []),
        ("CheckNumerics_1", "b:0", ["CheckNumerics"]),
        ("CheckNumerics_2", "c:0", ["CheckNumerics_1"]),
    ]
    np.testing.assert_allclose(ours[2], theirs[2])
    assert _graph_checks(tf, [-1.0])[2] == _graph_checks(tf1, [-1.0])[2] == "b:0 : Tensor had NaN values"


@pytest.mark.parametrize("which", ["nbdist", "tensorflow"])
def test_add_check_numerics_ops_refuses_control_flow(tf1, which):
    lib = tf if which == "nbdist" else tf1
    with lib.Graph().as_default():
        p = lib.placeholder(lib.bool)
        lib.cond(p, lambda: lib.constant(1.0), lambda: lib.constant(2.0))
        with pytest.raises(ValueError, match="not compatible with TensorFlow control flow"):
            lib.add_check_numerics_ops()
    with lib.Graph().as_default():
        lib.while_loop(lambda v: v < 3.0, lambda v: v + 1.0, [lib.constant(0.0)])
        with pytest.raises(ValueError, match="not compatible with TensorFlow control flow"):
            lib.add_check_numerics_ops()


def _print_v1(lib):
    with lib.Graph().as_default(), lib.Session() as sess:
        data = [
            lib.constant([1, 2, 3, 4]),
            lib.constant("s"),
            lib.constant([[1.5, 2.0], [3.0, 4.0]]),
            lib.constant([True, False]),
            lib.constant(1 / 3),
        ]
        x = lib.Print(lib.constant([1.0, 2.0]), data, message="msg: ", first_n=2, summarize=3)
        y = lib.Print(x * 2.0, [x], summarize=-1, name="again")
        return x.op.type, y.name, [sess.run(y) for _ in range(3)]


def test_print_v1_writes_to_stderr_as_tensorflow(tf1, capfd):
    ours = _print_v1(tf)
    our_err = capfd.readouterr().err
    theirs = _print_v1(tf1)
    their_err = capfd.readouterr().err
    assert ours[:2] == theirs[:2] == ("Print", "again:0")
    np.testing.assert_array_equal(ours[2], theirs[2])
    assert our_err == their_err
    assert our_err.count("msg: [1 2 3...][s][[1.5 2][3...]...][1 0][0.333333343]\n") == 2


def test_print_v1_passes_its_gradient_to_its_input(tf1):
    for lib in (tf, tf1):
        with lib.Graph().as_default(), lib.Session() as sess:
            x = lib.constant([1.0, 2.0])
            d = lib.constant([5])
            g = lib.gradients(lib.Print(x * x, [d, x], first_n=0), [x, d])
            assert g[1] is None
            np.testing.assert_array_equal(sess.run(g[0]), [2.0, 4.0])


def _print_v2(lib, stream, path):
    with lib.Graph().as_default(), lib.Session() as sess:
        p = lib.print(
            "hello",
            lib.constant([0.1, 2.0, 1 / 3]),
            lib.range(10),
            lib.reshape(lib.range(12), [3, 4]),
            lib.constant("abc"),
            lib.constant(["a", "b"]),
            {"k": lib.constant(1), "j": "x"},
            [1, lib.constant(True)],
            2.5,
            output_stream=stream,
            sep="|",
            end="!\n",
            summarize=2,
        )
        sparse = lib.SparseTensor([[0, 1], [1, 2]], [1.5, 2.0], [2, 3])
        q = lib.print(
            lib.reshape(lib.range(24.0), [2, 3, 4]), lib.zeros([0, 2]), lib.constant(5), sparse, name="second"
        )
        r = lib.print(lib.constant("one string"), output_stream=f"file://{path}")
        sess.run(p)
        sess.run([q, r])
        return p.type, q.name, [t.op.type for t in p.inputs]


def test_print_writes_to_the_stream_as_tensorflow(tf1, capfd, tmp_path):
    ours = _print_v2(tf, sys.stdout, tmp_path / "ours.txt")
    our_out = capfd.readouterr()
    theirs = _print_v2(tf1, sys.stdout, tmp_path / "theirs.txt")
    their_out = capfd.readouterr()
    assert ours == theirs == ("PrintV2", "second", ["StringFormat"])
    assert our_out.out == their_out.out
    assert our_out.err == their_out.err
    assert our_out.out.startswith("hello|[0.1 2 0.333333343]|[0 1 ... 8 9]|[[0 1 2 3]\n [4 5 6 7]")
    assert (tmp_path / "ours.txt").read_text() == (tmp_path / "theirs.txt").read_text() == "one string\n"


def test_print_refuses_an_unknown_stream_as_tensorflow(tf1):
    for lib in (tf, tf1):
        with (
            lib.Graph().as_default(),
            pytest.raises(ValueError, match=re.escape("Unsupported output stream")),
        ):
            lib.print(lib.constant(1), output_stream="stdout")


def test_is_tensor_and_is_symbolic_tensor_as_tensorflow(tf1):
    def kinds(t):
        v = t.Variable(1.0)
        values = [
            t.constant(1),
            v,
            t.SparseTensor([[0]], [1.0], [2]),
            t.IndexedSlices(t.constant([1.0]), t.constant([0])),
            np.zeros(2),
            1.0,
        ]
        return [t.is_tensor(a) for a in values], [t.is_symbolic_tensor(a) for a in values]

    for lib in (tf, tf1):
        with lib.Graph().as_default():
            assert kinds(lib) == (
                [True, True, True, True, False, False],
                [True, False, False, False, False, False],
            )


def test_print_to_tf_logging(caplog):
    with tf.Graph().as_default(), tf.Session() as sess:
        x = tf.constant([1, 2])
        warn = tf.print("w", x, output_stream=tf.logging.warning)
        err = tf.print("e", x, output_stream=tf.logging.ERROR)
        assert (warn.get_attr("output_stream"), err.get_attr("output_stream")) == (
            "log(warning)",
            "log(error)",
        )
        with caplog.at_level("WARNING", logger="nbdist"):
            sess.run([warn, err])
    assert sorted((r.levelname, r.getMessage()) for r in caplog.records) == [
        ("ERROR", "e [1 2]"),
        ("WARNING", "w [1 2]"),
    ]
