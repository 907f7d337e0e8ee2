"""Graduation to real TensorFlow, and back (`docs/export.md`).

- `to_tensorflow(graph, session=..., checkpoint=...)` builds an nbdist graph in
  ``tensorflow.compat.v1``: the same op names, devices and variables, the variables' values
  carried over (`nbdist.export.to_tf`);
- ``tf.import_graph_def`` takes real TensorFlow's ``GraphDef`` protos too
  (`nbdist.export.from_tf`);
- the notebook's views read real TensorFlow's ``RunMetadata`` and ``GraphDef`` protos
  (`nbdist.export.tf_protos`).

TensorFlow itself is imported only when a function here needs it (the ``[tf]`` extra).
"""

from nbdist._facade import lazy_names

_NAMES = {
    "to_tensorflow": "nbdist.export.to_tf",
    "TensorFlowExport": "nbdist.export.to_tf",
    "UnsupportedOpError": "nbdist.export.to_tf",
    "graph_def_of_proto": "nbdist.export.from_tf",
}


__getattr__ = lazy_names(__name__, _NAMES)
