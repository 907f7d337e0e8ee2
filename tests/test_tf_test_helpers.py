"""The rest of `tf.test` against real TF: `assert_equal_graph_def` (same verdicts and TF's
messages on the same graphs), the build queries, `test_src_dir_path`, `benchmark_config`,
`StubOutForTesting`, `disable_with_predicate` and `with_eager_op_as_function`."""

import os
import types
import unittest

import numpy as np
import pytest

import nbdist as tf


def _graph_def(lib, variant):
    with lib.Graph().as_default() as g:
        a = lib.placeholder(lib.float32, [2], name="a")
        b = lib.constant([1.0, 3.0] if variant == "const" else [1.0, 2.0], name="b")
        if variant == "op":
            lib.multiply(a, b, name="c")
        elif variant == "inputs":
            lib.subtract(b, a, name="c")
        else:
            lib.subtract(a, b, name="c")
        with lib.control_dependencies([a.op, b.op] if variant == "ctrl" else [a.op]):
            lib.no_op(name="n")
        lib.placeholder(lib.int32 if variant == "dtype" else lib.float32, name="p")
        with lib.device("/cpu:0" if variant == "dev" else None):
            lib.no_op(name="m")
        if variant == "extra":
            lib.no_op(name="d")
    return g.as_graph_def()


def _diff(lib, actual, expected):
    try:
        lib.test.assert_equal_graph_def(actual, expected)
    except AssertionError as e:
        return str(e)
    return None


@pytest.mark.parametrize("variant", ["op", "inputs", "ctrl", "dtype", "const", "dev", "extra"])
def test_assert_equal_graph_def_reports_tf_first_difference(tf1, variant):
    for first in (True, False):
        messages = []
        for lib in (tf, tf1):
            base, other = _graph_def(lib, "base"), _graph_def(lib, variant)
            messages.append(_diff(lib, other, base) if first else _diff(lib, base, other))
        assert messages[0] is not None
        assert messages[0] == messages[1]


def test_assert_equal_graph_def_passes_equal_graphs_in_any_node_order(tf1):
    ours = _graph_def(tf, "base")
    shuffled = {**ours, "node": ours["node"][::-1]}
    assert _diff(tf, shuffled, _graph_def(tf, "base")) is None
    assert _diff(tf1, _graph_def(tf1, "base"), _graph_def(tf1, "base")) is None


@pytest.mark.parametrize(
    "make",
    [
        lambda t: t.constant([[1.5, 2.0], [0.1, -3e10]], name="x"),
        lambda t: t.constant(np.arange(12, dtype=np.int32), name="x"),
        lambda t: t.constant([b"ab", b"c\n"], name="x"),
        lambda t: t.constant(True, name="x"),
        lambda t: t.constant(np.zeros((0, 2), np.float64), name="x"),
        lambda t: t.placeholder(t.float64, [None, 3], name="x"),
        lambda t: t.placeholder(t.int64, None, name="x"),
    ],
    ids=["2d", "long", "strings", "bool", "empty", "partial-shape", "unknown-rank"],
)
def test_an_unexpected_node_is_summarised_as_tf(tf1, make):
    messages = []
    for lib in (tf, tf1):
        with lib.Graph().as_default() as empty:
            pass
        with lib.Graph().as_default() as g:
            make(lib)
        messages.append(_diff(lib, g.as_graph_def(), empty.as_graph_def()))
    assert messages[0].startswith("Found unexpected node '{{node x}} = ")
    assert messages[0] == messages[1]


@pytest.mark.parametrize("which", ["actual", "expected"])
def test_assert_equal_graph_def_wants_graph_defs(tf1, which):
    for lib in (tf, tf1):
        good = _graph_def(lib, "base")
        args = (3, good) if which == "actual" else (good, 3)
        with pytest.raises(TypeError, match=f"Expected tf.GraphDef for {which}, got int"):
            lib.test.assert_equal_graph_def(*args)


def test_build_queries(tf1):
    assert tf.test.is_built_with_rocm() is tf1.test.is_built_with_rocm() is False
    assert tf.test.is_built_with_xla() is False  # nbdist's kernels are numpy's, not XLA's
    for target in ["x86", "x86_64", "x86-64", "aarch64", "arm", "arm64", "ppc64le", "powerpc", "s390x"]:
        assert tf.test.is_cpu_target_available(target) is tf1.test.is_cpu_target_available(target) is True
    for unknown in ["X86", "riscv64", "amd64"]:
        for lib in (tf, tf1):
            with pytest.raises(AssertionError, match=f"Unknown CPU target: {unknown}"):
                lib.test.is_cpu_target_available(unknown)


def test_test_src_dir_path(tf1, monkeypatch):
    ours = tf.test.test_src_dir_path("ops/registry.py")
    assert os.path.isfile(ours) and ours == os.path.join(os.path.dirname(tf.__file__), "ops/registry.py")
    monkeypatch.setenv("TEST_SRCDIR", "/runfiles")
    monkeypatch.setenv("TEST_WORKSPACE", "ws")
    assert tf.test.test_src_dir_path("python/ops") == "/runfiles/ws/nbdist/python/ops"
    assert tf1.test.test_src_dir_path("python/ops") == "/runfiles/ws/tensorflow/python/ops"


def test_benchmark_config_runs_a_session():
    config = tf.test.benchmark_config()
    assert isinstance(config, tf.ConfigProto)
    with tf.Graph().as_default(), tf.Session(config=config) as sess:
        assert sess.run(tf.constant(2) * 3) == 6


@pytest.mark.parametrize("which", ["nbdist", "tf"])
def test_stub_out_for_testing_sets_and_restores(tf1, which):
    lib = tf if which == "nbdist" else tf1

    class _Base:
        def who(self):
            return "base"

        @staticmethod
        def static():
            return "static"

    class _Child(_Base):
        pass

    module = types.ModuleType("fake")
    module.exists = lambda path: False
    original_exists = module.exists
    child = _Child()
    with lib.test.StubOutForTesting() as stubs:
        stubs.Set(module, "exists", lambda path: True)
        stubs.Set(module, "exists", lambda path: "again")
        stubs.SmartSet(child, "who", lambda self: "stubbed")
        stubs.SmartSet(_Base, "static", lambda: "stubbed static")
        assert module.exists("x") == "again"
        assert (child.who(), _Child().who(), _Base().who()) == ("stubbed", "stubbed", "base")
        assert _Base.static() == "stubbed static"
        with pytest.raises(AttributeError, match="Attribute not found"):
            stubs.SmartSet(child, "missing", None)
    assert module.exists is original_exists
    assert (child.who(), _Base.static(), _Child.static()) == ("base", "static", "static")


def _decorated_results(lib):
    class Case(unittest.TestCase):
        @lib.test.disable_with_predicate(lambda: True, "disabled here")
        def test_skipped(self):
            raise AssertionError("must not run")

        @lib.test.disable_with_predicate(lambda: False, "not disabled")
        def test_runs(self):
            self.ran = True

    cls = lib.test.with_eager_op_as_function(Case)
    assert cls is Case and lib.test.with_eager_op_as_function(only_as_function=True)(Case) is Case
    result = unittest.TestResult()
    unittest.defaultTestLoader.loadTestsFromTestCase(Case).run(result)
    return result.testsRun, [(t.id().rsplit(".", 1)[1], why) for t, why in result.skipped], result.failures


def test_disable_with_predicate_and_with_eager_op_as_function(tf1):
    ours = _decorated_results(tf)
    assert ours == _decorated_results(tf1)
    assert ours == (2, [("test_skipped", "disabled here")], [])
