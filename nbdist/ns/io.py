"""`tf.io`: reading and parsing data - `parse_example`, `decode_raw`, `decode_csv`, TFRecord files,
`read_file` / `write_file`, `matching_files`, queues - under TF's `tf.io` paths; `tf.io.gfile` is
`tf.gfile` under TF 2's lower-case names."""

import types as _types

from nbdist._facade import unsupported as _unsupported
from nbdist.ops.example_parsing_ops import (
    FixedLenFeature,
    FixedLenSequenceFeature,
    VarLenFeature,
    decode_raw,
    parse_example,
    parse_single_example,
)
from nbdist.ops.image_codec_more_ops import (
    decode_and_crop_jpeg,
    decode_bmp,
    decode_gif,
    decode_webp,
    extract_jpeg_shape,
)
from nbdist.ops.image_codec_ops import decode_image, decode_jpeg, decode_png, encode_jpeg, encode_png, is_jpeg
from nbdist.ops.parsing_ops import decode_csv
from nbdist.ops.proto_codec_ops import decode_proto, encode_proto
from nbdist.ops.queue_more_ops import PaddingFIFOQueue, PriorityQueue
from nbdist.ops.queue_ops import QueueBase, RandomShuffleQueue
from nbdist.ops.reader_ops import matching_files, read_file, write_file
from nbdist.ops.sequence_example_ops import (
    decode_json_example,
    parse_sequence_example,
    parse_single_sequence_example,
)
from nbdist.ops.sparse_feature import SparseFeature
from nbdist.ops.sparse_serialize_ops import deserialize_many_sparse, serialize_many_sparse, serialize_sparse
from nbdist.ops.string_codec_ops import decode_base64, decode_compressed, encode_base64
from nbdist.ops.tensor_proto_ops import parse_tensor, serialize_tensor
from nbdist.platform import gfile as _gfile
from nbdist.platform.tf_record import (
    TFRecordCompressionType,
    TFRecordOptions,
    TFRecordWriter,
    tf_record_iterator,
)
from nbdist.train.graph_io import write_graph
from nbdist.train.input import match_filenames_once

# tf.io.gfile: TF 2's names for tf.gfile's functions.
gfile = _types.ModuleType("nbdist.io.gfile", "`tf.io.gfile`: `tf.gfile` under TF 2's lower-case names.")
for _tf2, _tf1 in {
    "GFile": "GFile",
    "copy": "Copy",
    "exists": "Exists",
    "glob": "Glob",
    "isdir": "IsDirectory",
    "listdir": "ListDirectory",
    "makedirs": "MakeDirs",
    "mkdir": "MkDir",
    "remove": "Remove",
    "rename": "Rename",
    "rmtree": "DeleteRecursively",
    "stat": "Stat",
    "walk": "Walk",
}.items():
    setattr(gfile, _tf2, getattr(_gfile, _tf1))

__all__ = [
    "FixedLenFeature",
    "FixedLenSequenceFeature",
    "PaddingFIFOQueue",
    "PriorityQueue",
    "QueueBase",
    "RandomShuffleQueue",
    "SparseFeature",
    "TFRecordCompressionType",
    "TFRecordOptions",
    "TFRecordWriter",
    "VarLenFeature",
    "decode_and_crop_jpeg",
    "decode_base64",
    "decode_bmp",
    "decode_compressed",
    "decode_csv",
    "decode_gif",
    "decode_image",
    "decode_jpeg",
    "decode_json_example",
    "decode_png",
    "decode_proto",
    "decode_raw",
    "decode_webp",
    "deserialize_many_sparse",
    "encode_base64",
    "encode_jpeg",
    "encode_png",
    "encode_proto",
    "extract_jpeg_shape",
    "is_jpeg",
    "match_filenames_once",
    "matching_files",
    "parse_example",
    "parse_sequence_example",
    "parse_single_example",
    "parse_single_sequence_example",
    "parse_tensor",
    "read_file",
    "serialize_many_sparse",
    "serialize_sparse",
    "serialize_tensor",
    "tf_record_iterator",
    "write_file",
    "write_graph",
]


def __getattr__(name):
    return _unsupported("tf.io", name)
