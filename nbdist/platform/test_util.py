"""`tf.test.TestCase`: `unittest.TestCase` with TF 1.x's graph-mode helpers.

As TF's: every test starts with a fresh default graph and fixed seeds (numpy's, Python's
and the graph seed); `self.session()` opens a new session on the default graph (or the
one given) and makes both defaults for the block; `self.cached_session()` returns one
session reused for the whole test (closed in `tearDown`); `self.test_session()` is the
older name of either. `assertAllClose` / `assertAllEqual` compare nested structures of
arrays, tensors (evaluated in the default session) and numbers; `get_temp_dir()` is one
fresh directory per test.
"""

import contextlib
import os
import random
import tempfile
import threading
import unittest

import numpy as np

from nbdist import errors
from nbdist.graph.default_session import get_default_session
from nbdist.graph.graph import Tensor, clear_default_graph_stack, get_default_graph, reset_default_graph
from nbdist.ops.random_ops import DEFAULT_GRAPH_SEED, set_random_seed
from nbdist.runtime.session import Session


def get_temp_dir():
    """`tf.test.get_temp_dir()`: the process's directory for test files (made on first use).

    ``$TEST_TMPDIR`` when set (as under Bazel), else a fresh directory under the system's
    temporary directory, the same for every call in this process.
    """
    global _process_temp_dir
    if _process_temp_dir is None:
        base = os.environ.get("TEST_TMPDIR")
        if base:
            os.makedirs(base, exist_ok=True)
            _process_temp_dir = base
        else:
            _process_temp_dir = tempfile.mkdtemp(prefix="nbdist_test_")
    return _process_temp_dir


_process_temp_dir = None


class _CheckedThread:
    """A thread whose exception fails the test when it is joined (TF's `checkedThread`)."""

    def __init__(self, testcase, target, args=None, kwargs=None):
        self._testcase = testcase
        self._target = target
        self._args = tuple(args or ())
        self._kwargs = dict(kwargs or {})
        self._exception = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        try:
            self._target(*self._args, **self._kwargs)
        except Exception as e:  # noqa: BLE001 - re-raised in the test's thread by join()
            self._exception = e

    def start(self):
        self._thread.start()

    def join(self, timeout_s=None):
        self._thread.join(timeout_s)
        if self._exception is not None:
            self._testcase.fail(f"exception in a checked thread: {self._exception!r}")

    def is_alive(self):
        return self._thread.is_alive()


class TestCase(unittest.TestCase):
    """TF 1.x's `tf.test.TestCase` for graph-mode tests.

    Example::

        class MatMulTest(tf.test.TestCase):
            def testProduct(self):
                with self.session() as sess:
                    self.assertAllEqual([[4]], sess.run(tf.matmul([[2, 1]], [[1], [2]])))

        if __name__ == "__main__":
            tf.test.main()
    """

    def __init__(self, methodName="runTest"):  # noqa: N803 - unittest's name
        super().__init__(methodName)
        self._cached_session = None
        self._cached_graph = None
        self._tempdir = None
        self._threads = []

    def setUp(self):
        self._clear_cached_session()
        random.seed(DEFAULT_GRAPH_SEED)
        np.random.seed(DEFAULT_GRAPH_SEED)
        clear_default_graph_stack()  # an earlier test's InteractiveSession may have left its graph entered
        reset_default_graph()
        set_random_seed(DEFAULT_GRAPH_SEED)

    def tearDown(self):
        for thread in self._threads:
            if thread.is_alive():
                self.fail("a thread started with checkedThread() is still running; join() it in the test")
        self._clear_cached_session()

    def _clear_cached_session(self):
        if self._cached_session is not None:
            self._cached_session.close()
        self._cached_session = None
        self._cached_graph = None

    # -- sessions -------------------------------------------------------------------------------
    @contextlib.contextmanager
    def session(self, graph=None, config=None, use_gpu=False, force_gpu=False, target=""):
        """A new session on `graph` (default: the default graph), default for the block.

        `use_gpu` / `force_gpu` are accepted (nbdist runs on CPUs); `target` is nbdist's
        addition (TF's tests use ``tf.Session(server.target)`` for that).
        """
        if force_gpu:
            self.skipTest("force_gpu=True: nbdist has no GPU")
        sess = Session(target, graph=graph, config=config)
        with sess:
            yield sess

    @contextlib.contextmanager
    def cached_session(self, graph=None, config=None, use_gpu=False, force_gpu=False):
        """The test's one session (created on first use, closed in `tearDown`).

        Raises:
            ValueError: when `graph` differs from the graph the cached session was made on.
        """
        if force_gpu:
            self.skipTest("force_gpu=True: nbdist has no GPU")
        graph = graph if graph is not None else get_default_graph()
        if self._cached_session is None:
            self._cached_session = Session(graph=graph, config=config)
            self._cached_graph = graph
        elif graph is not self._cached_graph:
            raise ValueError(
                "The graph used to get the cached session is different than the one that was used "
                "to create the session. Maybe create a new session with self.session()"
            )
        sess = self._cached_session
        with sess.as_default(), sess.graph.as_default():
            yield sess

    def test_session(self, graph=None, config=None, use_gpu=False, force_gpu=False):
        """TF's older name: the cached session for the default graph, else a new one for `graph`."""
        if self.id().endswith(".test_session"):  # unittest's loader takes it for a test, as in TF
            self.skipTest("Not a test.")
        if graph is None:
            return self.cached_session(config=config, use_gpu=use_gpu, force_gpu=force_gpu)
        return self.session(graph, config, use_gpu, force_gpu)

    def evaluate(self, tensors):
        """The values of `tensors` (any fetch structure) in the default session."""
        sess = get_default_session()
        if sess is None:
            with self.cached_session() as sess:
                return sess.run(tensors)
        return sess.run(tensors)

    def get_temp_dir(self):
        """A fresh directory for this test, under `tf.test.get_temp_dir()` (the same per test)."""
        if self._tempdir is None:
            self._tempdir = tempfile.mkdtemp(dir=get_temp_dir())
        return self._tempdir

    def checkedThread(self, target, args=None, kwargs=None):  # noqa: N802 - TF's name
        """A thread whose exception fails the test when it is joined."""
        thread = _CheckedThread(self, target, args, kwargs)
        self._threads.append(thread)
        return thread

    # -- assertions --------------------------------------------------------------------------------
    def _value(self, a):
        if isinstance(a, Tensor) or hasattr(a, "_ref"):  # a Tensor or a Variable
            a = self.evaluate(a)
        return np.asarray(a)

    def assertLen(self, container, expected_len, msg=None):  # noqa: N802 - absl's, which TF's TestCase has
        """Fails unless ``len(container) == expected_len``."""
        if len(container) != expected_len:
            self.fail(msg or f"{container!r:.200} has length {len(container)}, expected {expected_len}")

    def assertAllEqual(self, a, b, msg=None):  # noqa: N802 - TF's name
        """`a` and `b` have the same shape and equal elements (NaN equals NaN for floats)."""
        a, b = self._value(a), self._value(b)
        self.assertEqual(a.shape, b.shape, f"Shape mismatch: expected {a.shape}, got {b.shape}. {msg or ''}")
        same = a == b
        if a.dtype.kind == "f" and b.dtype.kind == "f":
            same = np.logical_or(same, np.logical_and(np.isnan(a), np.isnan(b)))
        if not np.all(same):
            np.testing.assert_array_equal(a, b, err_msg=msg or "")

    def assertNotAllEqual(self, a, b, msg=None):  # noqa: N802 - TF's name
        try:
            self.assertAllEqual(a, b)
        except AssertionError:
            return
        raise self.failureException(msg or f"the two values are equal: {a!r}")

    def assertAllClose(self, a, b, rtol=1e-6, atol=1e-6, msg=None):  # noqa: N802 - TF's name
        """Nested structures (dicts, lists, tuples) of arrays are elementwise close.

        ``|a - b| <= atol + rtol * |b|`` (numpy's `allclose`), NaN equal to NaN.
        """
        self._assert_close(a, b, rtol, atol, [], msg)

    def _assert_close(self, a, b, rtol, atol, path, msg):
        where = f" at {''.join(path)}" if path else ""
        if isinstance(a, dict) or isinstance(b, dict):
            if not (isinstance(a, dict) and isinstance(b, dict)):
                self.fail(
                    f"Mismatched structure{where}: {type(a).__name__} vs {type(b).__name__}. {msg or ''}"
                )
            self.assertEqual(set(a), set(b), f"Mismatched keys{where}. {msg or ''}")
            for k in a:
                self._assert_close(a[k], b[k], rtol, atol, [*path, f"[{k!r}]"], msg)
            return
        if _is_sequence(a) and _is_sequence(b) and not (_is_numeric_sequence(a) and _is_numeric_sequence(b)):
            self.assertEqual(len(a), len(b), f"Length mismatch{where}. {msg or ''}")
            for i, (x, y) in enumerate(zip(a, b)):
                self._assert_close(x, y, rtol, atol, [*path, f"[{i}]"], msg)
            return
        a, b = self._value(a), self._value(b)
        self.assertEqual(
            a.shape, b.shape, f"Shape mismatch{where}: expected {a.shape}, got {b.shape}. {msg or ''}"
        )
        np.testing.assert_allclose(
            a, b, rtol=rtol, atol=atol, equal_nan=True, err_msg=f"Not close{where}. {msg or ''}"
        )

    def assertNotAllClose(self, a, b, **kwargs):  # noqa: N802 - TF's name
        try:
            self.assertAllClose(a, b, **kwargs)
        except AssertionError:
            return
        raise self.failureException("The two values are close at all elements")

    def assertAllCloseAccordingToType(  # noqa: N802 - TF's name
        self,
        a,
        b,
        rtol=1e-6,
        atol=1e-6,
        float_rtol=1e-6,
        float_atol=1e-6,
        half_rtol=1e-3,
        half_atol=1e-3,
        msg=None,
    ):
        """`assertAllClose` with the tolerance of the least precise dtype (TF's defaults)."""
        a, b = self._value(a), self._value(b)
        dtypes = (a.dtype, b.dtype)
        if np.float16 in dtypes:
            rtol, atol = max(rtol, half_rtol), max(atol, half_atol)
        elif np.float32 in dtypes:
            rtol, atol = max(rtol, float_rtol), max(atol, float_atol)
        self.assertAllClose(a, b, rtol, atol, msg)

    def assertNear(self, f1, f2, err, msg=None):  # noqa: N802 - TF's name
        self.assertTrue(abs(f1 - f2) <= err, f"{f1!r} != {f2!r} +/- {err!r}{' ' + msg if msg else ''}")

    def assertArrayNear(self, farray1, farray2, err, msg=None):  # noqa: N802 - TF's name
        self.assertEqual(len(farray1), len(farray2), msg)
        for f1, f2 in zip(farray1, farray2):
            self.assertNear(float(f1), float(f2), err, msg)

    def assertAllGreater(self, a, comparison_target):  # noqa: N802 - TF's name
        self.assertTrue(np.all(self._value(a) > comparison_target), f"not all > {comparison_target}: {a!r}")

    def assertAllLess(self, a, comparison_target):  # noqa: N802 - TF's name
        self.assertTrue(np.all(self._value(a) < comparison_target), f"not all < {comparison_target}: {a!r}")

    def assertAllInRange(self, target, lower_bound, upper_bound):  # noqa: N802 - TF's name
        v = self._value(target)
        self.assertTrue(
            np.all((v >= lower_bound) & (v <= upper_bound)),
            f"not all in [{lower_bound}, {upper_bound}]: {v!r}",
        )

    def assertShapeEqual(self, np_array, tf_tensor, msg=None):  # noqa: N802 - TF's name
        self.assertEqual(list(np.shape(np_array)), tf_tensor.shape.as_list(), msg)

    def assertDeviceEqual(self, device1, device2, msg=None):  # noqa: N802 - TF's name
        from nbdist.graph.device import DeviceSpec  # noqa: PLC0415

        self.assertEqual(
            DeviceSpec.from_string(device1 or "").to_string(),
            DeviceSpec.from_string(device2 or "").to_string(),
            msg,
        )

    def assertRaisesOpError(self, expected_err_re_or_predicate):  # noqa: N802 - TF's name
        """A context: the block raises an `OpError` whose message matches (or the predicate holds)."""
        return self.assertRaisesWithPredicateMatch(errors.OpError, expected_err_re_or_predicate)

    @contextlib.contextmanager
    def assertRaisesWithPredicateMatch(self, exception_type, expected_err_re_or_predicate):  # noqa: N802
        if callable(expected_err_re_or_predicate):
            predicate = expected_err_re_or_predicate
        else:
            import re  # noqa: PLC0415

            pattern = expected_err_re_or_predicate
            predicate = lambda e: re.search(pattern, str(e)) is not None  # noqa: E731
        try:
            yield
        except exception_type as e:
            if not predicate(e):
                raise AssertionError(f"Exception of type {type(e).__name__}: {e} does not match") from e
        else:
            self.fail(f"{exception_type.__name__} not raised")

    def assertStartsWith(self, actual, expected_start, msg=None):  # noqa: N802 - TF's name
        if not actual.startswith(expected_start):
            self.fail(f"{actual!r} does not start with {expected_start!r}{' : ' + msg if msg else ''}")


def _is_sequence(x):
    return isinstance(x, (list, tuple))


def _is_numeric_sequence(x):
    """A list or tuple of numbers (or of such lists): compared as one array, as TF does."""
    try:
        arr = np.asarray(x)
    except (ValueError, TypeError):
        return False
    return arr.dtype != object
