"""The notebook layer: the IPython extension, `LocalCluster`, events, per-task execution.

``%load_ext nbdist`` (or ``%load_ext nbdist.notebook``) registers ``%dtf_cluster`` and
``%%dtf_worker`` (`nbdist.notebook.magics`). Modules load on first use, so importing this
package costs nothing until a name is used.
"""

import importlib

_NAMES = {
    "LocalCluster": "nbdist.notebook.cluster",
    "report": "nbdist.notebook.events",
    "report_trace": "nbdist.notebook.events",
    "current_stream": "nbdist.notebook.events",
    "load_ipython_extension": "nbdist.notebook.magics",
    "unload_ipython_extension": "nbdist.notebook.magics",
}


def __getattr__(name):
    module = _NAMES.get(name)
    if module is None:
        raise AttributeError(f"module 'nbdist.notebook' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
