"""`tf.train.write_graph` (a graph as TF's ``GraphDef`` file, text or binary) and
`tf.train.summary_iterator` (the ``Event`` protos of an event file), as TF 1.x's
(``graph_io.py``, ``summary_iterator.py``).

    tf.train.write_graph(sess.graph, logdir, "train.pbtxt")
    for event in tf.train.summary_iterator(writer.path):
        for value in event.summary.value:
            print(event.step, value.tag, value.simple_value)

Both use tensorboardX's protobuf classes (nbdist's converter `graph_def_proto`, as the event
files' graphs) and TF's record framing (`nbdist.platform.tf_record`).
"""

import os
import uuid

from nbdist.ops import summary_protos
from nbdist.platform.tf_record import tf_record_iterator
from nbdist.summary.graph_proto import graph_def_proto

__all__ = ["summary_iterator", "write_graph"]


def write_graph(graph_or_graph_def, logdir, name, as_text=True):
    """Writes the graph's ``GraphDef`` to ``logdir/name``; returns that path.

    Args:
        graph_or_graph_def: an nbdist `Graph`, its GraphDef (``graph.as_graph_def()``) or a
            ``GraphDef`` protobuf.
        logdir: the directory (created if missing).
        name: the file's name.
        as_text: TF's text format (``.pbtxt``) if true, else the binary protobuf.

    The file is written whole under a temporary name, then renamed (as TF's atomic write): a
    reader never sees half a graph. TF's ``GraphDef`` parses it (nodes, inputs, devices, the
    attrs `graph_def_proto` maps: enough for TensorBoard and for reading the graph; not every
    attr TF's `import_graph_def` needs to rebuild it, e.g. an ``Assign``'s ``T``).

    Raises:
        TypeError: `graph_or_graph_def` is none of those.
    """
    proto = graph_def_proto(graph_or_graph_def)
    logdir = os.fspath(logdir)
    os.makedirs(logdir, exist_ok=True)
    path = os.path.join(logdir, name)
    if as_text:
        from google.protobuf import text_format  # noqa: PLC0415 - protobuf comes with tensorboardX

        data = text_format.MessageToString(proto).encode()
    else:
        data = proto.SerializeToString(deterministic=True)
    tmp = f"{path}.tmp{uuid.uuid4().hex}"
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    return path


def summary_iterator(path):
    """Yields each ``Event`` protobuf (tensorboardX's class, TF's message) of the event file at
    `path`, in order: the file's version event first, then what was added.

    Raises:
        DataLossError: a record is corrupt or truncated (naming the file and the offset).
        NotFoundError: no file at `path`.
    """
    event_class = summary_protos.load().Event
    for record in tf_record_iterator(path):
        yield event_class.FromString(record)
