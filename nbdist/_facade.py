"""Helpers for the `tf` facade: exporting public op functions and refusing unsupported names."""

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
