"""Helpers for the `tf` facade: exporting public op functions and refusing unsupported names."""

import importlib
import types


def export_all(namespace, *modules, exclude=()):
    """Copies each module's public functions and classes (its ``__all__`` if set)."""
    for module in modules:
        names = getattr(module, "__all__", None) or [
            n
            for n, v in vars(module).items()
            if not n.startswith("_")
            and isinstance(v, (types.FunctionType, type))
            and getattr(v, "__module__", "") == module.__name__
        ]
        for name in names:
            if name in exclude:
                continue
            namespace.setdefault(name, getattr(module, name))


def unsupported(prefix, name):
    """The AttributeError for a TF name nbdist does not implement."""
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(
        f"{prefix}.{name} is not supported by nbdist yet; docs/api.md lists the supported "
        "subset of TensorFlow 1.x"
    )


def lazy_names(package, names):
    """A package's ``__getattr__`` (PEP 562) that imports ``names[name]`` (a module path) on
    first use of `name` and returns that module's attribute: the package costs nothing to import.
    """

    def getattr_(name):
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    return getattr_
