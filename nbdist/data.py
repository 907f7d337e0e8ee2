"""`tf.data`: `Dataset` and `Iterator` (TF 1.x), plus `tf.compat.v1.data`'s functions.

See `nbdist.ops.dataset_ops` (pipelines as plain data) and `nbdist.ops.iterator_ops`
(the iterator resource). The functions of `map`, `filter`, `flat_map` and `interleave`
are traced once into subgraphs.
"""

from nbdist._facade import unsupported as _unsupported
from nbdist.ops.dataset_ops import Dataset, FixedLengthRecordDataset, TextLineDataset, TFRecordDataset
from nbdist.ops.dataset_options import (
    AUTOTUNE,
    INFINITE_CARDINALITY,
    UNKNOWN_CARDINALITY,
    Options,
    ThreadingOptions,
)
from nbdist.ops.iterator_ops import (
    Iterator,
    get_output_classes,
    get_output_shapes,
    get_output_types,
    make_initializable_iterator,
    make_one_shot_iterator,
)

__all__ = [
    "AUTOTUNE",
    "INFINITE_CARDINALITY",
    "UNKNOWN_CARDINALITY",
    "Dataset",
    "FixedLengthRecordDataset",
    "Iterator",
    "Options",
    "TFRecordDataset",
    "TextLineDataset",
    "ThreadingOptions",
    "get_output_classes",
    "get_output_shapes",
    "get_output_types",
    "make_initializable_iterator",
    "make_one_shot_iterator",
]


def __getattr__(name):
    return _unsupported("tf.data", name)
