"""The protobuf classes of TensorBoard's event files, from the optional writer library.

nbdist produces the bytes TensorBoard reads (``Summary``, ``Event``, ``GraphDef``,
``HistogramProto``, ...) with tensorboardX's generated protobuf classes: the same
messages as TensorFlow's, so TensorBoard and real TF read them. tensorboardX is one of
nbdist's dependencies; it is imported on first use, so programs without summaries do not
load it, and an environment that lacks it (installed with ``--no-deps``, a checkout on
``PYTHONPATH``) still trains: only summaries fail, naming the package to install.

    pb = summary_protos.load()          # ImportError naming the package when it is missing
    s = pb.Summary(value=[pb.Summary.Value(tag="loss", simple_value=0.5)])

Protobuf parsing never runs code, so a Summary string that crossed the wire (a worker's
summary op feeding the chief's ``MergeSummary``) is parsed, never unpickled.
"""

import types

import numpy as np

INSTALL_HINT = "pip install 'tensorboardX>=2.6'"

_loaded = None


def load():
    """The protobuf classes as one namespace: ``Summary``, ``SummaryMetadata``,
    ``SummaryDescription``, ``Event``, ``SessionLog``, ``LogMessage``, ``TaggedRunMetadata``,
    ``HistogramProto``, ``TensorProto``, ``TensorShapeProto``, ``GraphDef``, ``NodeDef``,
    ``AttrValue``, ``NameAttrList``, ``VersionDef`` and ``DataType`` (the enum module).

    Raises:
        ImportError: the writer library is not installed (saying how to install it).
    """
    global _loaded
    if _loaded is None:
        try:
            from tensorboardX.proto import (  # noqa: PLC0415 - loaded on the first summary
                attr_value_pb2,
                event_pb2,
                graph_pb2,
                node_def_pb2,
                summary_pb2,
                tensor_pb2,
                tensor_shape_pb2,
                types_pb2,
                versions_pb2,
            )
        except ImportError as e:
            raise ImportError(
                f"tf.summary needs the tensorboardX package to write TensorBoard's event files "
                f"({e}); it is one of nbdist's dependencies, missing from this environment: "
                f"{INSTALL_HINT} (or reinstall nbdist with its dependencies)"
            ) from None
        _loaded = types.SimpleNamespace(
            Summary=summary_pb2.Summary,
            SummaryMetadata=summary_pb2.SummaryMetadata,
            HistogramProto=summary_pb2.HistogramProto,
            SummaryDescription=summary_pb2.SummaryDescription,
            Event=event_pb2.Event,
            SessionLog=event_pb2.SessionLog,
            LogMessage=event_pb2.LogMessage,
            TaggedRunMetadata=event_pb2.TaggedRunMetadata,
            TensorProto=tensor_pb2.TensorProto,
            TensorShapeProto=tensor_shape_pb2.TensorShapeProto,
            GraphDef=graph_pb2.GraphDef,
            NodeDef=node_def_pb2.NodeDef,
            AttrValue=attr_value_pb2.AttrValue,
            NameAttrList=attr_value_pb2.NameAttrList,
            VersionDef=versions_pb2.VersionDef,
            DataType=types_pb2,
        )
    return _loaded


def available():
    """True when the writer library can be imported (event files can be written)."""
    try:
        load()
    except ImportError:
        return False
    return True


_DATA_TYPES = {
    "float16": "DT_HALF",
    "float32": "DT_FLOAT",
    "float64": "DT_DOUBLE",
    "int8": "DT_INT8",
    "int16": "DT_INT16",
    "int32": "DT_INT32",
    "int64": "DT_INT64",
    "uint8": "DT_UINT8",
    "bool": "DT_BOOL",
    "string": "DT_STRING",
}


def data_type(dtype_name, pb):
    """TF's ``DataType`` enum value of an nbdist dtype name (``"float32"`` -> ``DT_FLOAT``)."""
    return getattr(pb.DataType, _DATA_TYPES[dtype_name])


def shape_proto(dims, pb):
    """A ``TensorShapeProto``: `dims` a list (None for an unknown size, -1 in the proto) or None."""
    if dims is None:
        return pb.TensorShapeProto(unknown_rank=True)
    return pb.TensorShapeProto(dim=[pb.TensorShapeProto.Dim(size=-1 if d is None else int(d)) for d in dims])


def tensor_proto(array, pb, with_content=True):
    """A ``TensorProto`` of a numpy array (strings in ``string_val``, numbers as raw
    little-endian ``tensor_content``, as TF writes them); only dtype and shape when not
    `with_content`."""
    array = np.asarray(array)
    is_string = array.dtype == object or array.dtype.kind in "SU"
    proto = pb.TensorProto(
        dtype=data_type("string" if is_string else array.dtype.name, pb),
        tensor_shape=shape_proto(list(array.shape), pb),
    )
    if with_content:
        if is_string:
            proto.string_val.extend(v.encode() if isinstance(v, str) else bytes(v) for v in array.ravel())
        else:
            proto.tensor_content = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()
    return proto
