"""The notebook layer: the IPython extension, `LocalCluster`, events, per-task execution.

``%load_ext nbdist`` (or ``%load_ext nbdist.notebook``) registers ``%dtf_cluster`` and
``%%dtf_worker`` (`nbdist.notebook.magics`). Modules load on first use, so importing this
package costs nothing until a name is used.
"""

from nbdist._facade import lazy_names

_NAMES = {
    "LocalCluster": "nbdist.notebook.local_cluster",
    "report": "nbdist.notebook.event_stream",
    "report_trace": "nbdist.notebook.event_stream",
    "current_stream": "nbdist.notebook.event_stream",
    "load_ipython_extension": "nbdist.notebook.magics",
    "unload_ipython_extension": "nbdist.notebook.magics",
}


__getattr__ = lazy_names(__name__, _NAMES)
