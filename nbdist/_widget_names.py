"""The notebook's widgets by name: the one list that ``tf.<name>`` (nbdist/__init__.py) and
``nbdist.notebook.widgets.<name>`` both load from, on first use.

Plain strings, importing nothing: the `tf` facade reads them without loading the notebook
layer (a task process never loads it). Each name maps to its module in nbdist/notebook/widgets/.
"""

# Offered at ``tf.<name>`` too.
TF_WIDGETS = {
    "show_graph": "graph_view",  # requested or placed & partitioned graph
    "show_placement": "placement_view",  # which task holds what
    "show_timeline": "timeline",  # one traced step across tasks
    "Dashboard": "dashboard",  # live training metrics per replica
    "Playground": "playground",  # choose a cluster and a replication mode, train, compare runs
}
# Only at ``nbdist.notebook.widgets.<name>``: the views the ``show_*`` functions return.
VIEWS = {
    "GraphView": "graph_view",
    "PlacementView": "placement_view",
    "TimelineView": "timeline",
}
