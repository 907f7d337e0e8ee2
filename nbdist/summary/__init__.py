"""`tf.summary`: summary ops and TensorBoard's event files.

    loss_summary = tf.summary.scalar("loss", loss)
    tf.summary.histogram("weights", w)
    merged = tf.summary.merge_all()
    writer = tf.summary.FileWriter(logdir, sess.graph)
    writer.add_summary(sess.run(merged), step)

The ops (`nbdist.ops.summary_ops`) are ordinary graph ops producing serialized ``Summary``
bytes; `FileWriter` writes them. Both use tensorboardX's protobuf classes (a dependency of
nbdist). The protobuf classes TF exports here (``tf.summary.Summary``, ``Event``,
``SessionLog``, ...) load on first use.
"""

from nbdist._facade import unsupported as _unsupported
from nbdist.ops.summary_more_ops import all_v2_summary_ops, audio, get_summary_description, tensor_summary
from nbdist.ops.summary_ops import histogram, image, merge, merge_all, scalar, text
from nbdist.summary.writer import FileWriter, FileWriterCache

_PROTOS = ("Event", "SessionLog", "Summary", "SummaryDescription", "TaggedRunMetadata")

__all__ = [
    "Event",
    "FileWriter",
    "FileWriterCache",
    "SessionLog",
    "Summary",
    "SummaryDescription",
    "TaggedRunMetadata",
    "all_v2_summary_ops",
    "audio",
    "get_summary_description",
    "histogram",
    "image",
    "merge",
    "merge_all",
    "scalar",
    "tensor_summary",
    "text",
]


def __getattr__(name):
    if name in _PROTOS:
        from nbdist.ops import summary_protos  # noqa: PLC0415 - tensorboardX loads on first use

        return getattr(summary_protos.load(), name)
    return _unsupported("tf.summary", name)
