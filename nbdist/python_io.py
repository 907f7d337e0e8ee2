"""`tf.python_io`: TFRecord files (TF's record framing, optionally GZIP/ZLIB-compressed)."""

from nbdist._facade import unsupported as _unsupported
from nbdist.platform.tf_record import (
    TFRecordCompressionType,
    TFRecordOptions,
    TFRecordWriter,
    tf_record_iterator,
)

__all__ = ["TFRecordCompressionType", "TFRecordOptions", "TFRecordWriter", "tf_record_iterator"]


def __getattr__(name):
    return _unsupported("tf.python_io", name)
