"""The rest of `tf.test` that TF 1.x test files use: build queries, `benchmark_config`,
`StubOutForTesting`, and the decorators `disable_with_predicate` / `with_eager_op_as_function`.

The build queries answer for nbdist: a Python package on numpy, built with no CUDA, ROCm or
XLA, running on whichever CPU numpy runs on.
"""

import functools
import inspect
import os

__all__ = [
    "StubOutForTesting",
    "benchmark_config",
    "disable_with_predicate",
    "is_built_with_rocm",
    "is_built_with_xla",
    "is_cpu_target_available",
    "test_src_dir_path",
    "with_eager_op_as_function",
]

# The CPU families TF's `is_cpu_target_available` knows, by the prefix of the target's name.
_CPU_FAMILIES = ("aarch64", "arm", "powerpc", "ppc", "s390x", "x86")


def is_built_with_rocm():
    """False: nbdist has no GPU kernels (ROCm or CUDA)."""
    return False


def is_built_with_xla():
    """False: nbdist runs its own numpy kernels; there is no XLA compiler."""
    return False


def is_cpu_target_available(target):
    """Whether nbdist runs on CPUs of `target`'s family (``"x86"``, ``"aarch64"``, ``"arm"``,
    ``"ppc"`` / ``"powerpc"``, ``"s390x"``): True for each, as nbdist has no per-target code.

    Raises:
        AssertionError: a target name TF does not know (TF's).
    """
    if not any(target.startswith(family) for family in _CPU_FAMILIES):
        raise AssertionError(f"Unknown CPU target: {target}")
    return True


def test_src_dir_path(relative_path):
    """The absolute path of `relative_path` under nbdist's source root.

    Under Bazel (``$TEST_SRCDIR`` and ``$TEST_WORKSPACE`` set) the runfiles path
    ``$TEST_SRCDIR/$TEST_WORKSPACE/nbdist/<relative_path>``, as TF's is for ``tensorflow``;
    otherwise under the installed package's directory.
    """
    srcdir, workspace = os.environ.get("TEST_SRCDIR"), os.environ.get("TEST_WORKSPACE")
    if srcdir and workspace:
        return os.path.join(srcdir, workspace, "nbdist", relative_path)
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return os.path.join(package, relative_path)


def benchmark_config():
    """A `tf.ConfigProto` for benchmarks. TF's turns off grappler's dependency optimizer;
    nbdist has no graph rewriter, so the default config already runs the graph as built."""
    from nbdist.runtime.config import ConfigProto  # noqa: PLC0415 - tf.test stays light to import

    return ConfigProto()


def disable_with_predicate(pred, skip_message):
    """A test-method decorator: the test is skipped with `skip_message` when ``pred()`` is true."""

    def decorator_disable_with_predicate(func):
        @functools.wraps(func)
        def wrapper_disable_with_predicate(self, *args, **kwargs):
            if pred():
                self.skipTest(skip_message)
            return func(self, *args, **kwargs)

        return wrapper_disable_with_predicate

    return decorator_disable_with_predicate


def with_eager_op_as_function(cls=None, only_as_function=False):
    """Returns the class as it is (TF's does too: the eager mode it selected is gone)."""

    def decorator(cls):
        return cls

    if cls is not None:
        return decorator(cls)
    return decorator


class StubOutForTesting:
    """Replaces attributes for a test and puts them back (TF's googletest helper).

    ``stubs.Set(os.path, "exists", fake)`` replaces an attribute of a module, class or
    instance; ``stubs.SmartSet(obj, name, fake)`` replaces an instance's attribute on its class
    (unless the instance holds it itself), keeping static methods static; ``CleanUp()`` (or the
    end of a ``with`` block) restores everything, last change first.
    """

    def __init__(self):
        self.cache = []
        self.stubs = []

    def __del__(self):
        self.CleanUp()

    def __enter__(self):
        return self

    def __exit__(self, unused_exc_type, unused_exc_value, unused_tb):
        self.CleanUp()

    def CleanUp(self):  # noqa: N802 - TF's name
        """Undoes all SmartSet() and Set() calls, restoring the original definitions."""
        self.SmartUnsetAll()
        self.UnsetAll()

    def SmartSet(self, obj, attr_name, new_attr):  # noqa: N802 - TF's name
        """Replaces ``obj.attr_name`` with `new_attr`: on a module, a class, or an instance's
        class (on the instance itself when the attribute is in its ``__dict__``).

        Raises:
            AttributeError: `obj` has no attribute `attr_name`.
        """
        if inspect.ismodule(obj) or (not inspect.isclass(obj) and attr_name in obj.__dict__):
            orig_obj = obj
            orig_attr = getattr(obj, attr_name)
        else:
            mro = list(inspect.getmro(obj if inspect.isclass(obj) else obj.__class__))
            mro.reverse()
            orig_obj, orig_attr, found = None, None, False
            for cls in mro:
                try:
                    orig_attr = getattr(obj, attr_name)
                except AttributeError:
                    continue
                orig_obj, found = cls, True
            if not found:
                raise AttributeError("Attribute not found.")
        old_attribute = obj.__dict__.get(attr_name)
        if old_attribute is not None and isinstance(old_attribute, staticmethod):
            orig_attr = staticmethod(orig_attr)
        self.stubs.append((orig_obj, attr_name, orig_attr))
        setattr(orig_obj, attr_name, new_attr)

    def SmartUnsetAll(self):  # noqa: N802 - TF's name
        """Reverses SmartSet() calls (calling it again does nothing)."""
        for args in reversed(self.stubs):
            setattr(*args)
        self.stubs = []

    def Set(self, parent, child_name, new_child):  # noqa: N802 - TF's name
        """Replaces ``parent.child_name`` with `new_child` (kept static if it was a static
        method) until UnsetAll()."""
        old_child = getattr(parent, child_name)
        old_attribute = parent.__dict__.get(child_name)
        if old_attribute is not None and isinstance(old_attribute, staticmethod):
            old_child = staticmethod(old_child)
        self.cache.append((parent, old_child, child_name))
        setattr(parent, child_name, new_child)

    def UnsetAll(self):  # noqa: N802 - TF's name
        """Reverses Set() calls, last first (calling it again does nothing)."""
        for parent, old_child, child_name in reversed(self.cache):
            setattr(parent, child_name, old_child)
        self.cache = []
