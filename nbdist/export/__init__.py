"""Graduation to real TensorFlow, and back (`docs/export.md`).

- the notebook's views read real TensorFlow's ``RunMetadata`` and ``GraphDef`` protos
  (`nbdist.export.tf_protos`).

TensorFlow itself is imported only when a function here needs it (the ``[tf]`` extra).
"""

import importlib

_NAMES = {}


def __getattr__(name):
    module = _NAMES.get(name)
    if module is None:
        raise AttributeError(f"module 'nbdist.export' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
