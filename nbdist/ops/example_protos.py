"""`tf.train.Example` and its parts: protobuf messages wire-compatible with TF's.

Built at import from a ``FileDescriptorProto`` with the field numbers of TF's
``tensorflow/core/example/feature.proto`` and ``example.proto``, in their own package
(``nbdist.example``) of their own descriptor pool, so they never clash with TF's classes
when both are loaded in one process: bytes one serializes the other parses.

    example = tf.train.Example(features=tf.train.Features(feature={
        "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[3])),
        "pixels": tf.train.Feature(float_list=tf.train.FloatList(value=[0.1, 0.5])),
    }))
    writer.write(example.SerializeToString())
"""

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

__all__ = [
    "BytesList",
    "Example",
    "Feature",
    "FeatureList",
    "FeatureLists",
    "Features",
    "FloatList",
    "Int64List",
    "SequenceExample",
]

PACKAGE = "nbdist.example"
_F = descriptor_pb2.FieldDescriptorProto

# message -> its fields: (name, number, type, label, message type or None, oneof index or None)
_REPEATED, _OPTIONAL = _F.LABEL_REPEATED, _F.LABEL_OPTIONAL
_MESSAGES = {
    "BytesList": [("value", 1, _F.TYPE_BYTES, _REPEATED, None, None)],
    "FloatList": [("value", 1, _F.TYPE_FLOAT, _REPEATED, None, None)],
    "Int64List": [("value", 1, _F.TYPE_INT64, _REPEATED, None, None)],
    "Feature": [
        ("bytes_list", 1, _F.TYPE_MESSAGE, _OPTIONAL, "BytesList", 0),
        ("float_list", 2, _F.TYPE_MESSAGE, _OPTIONAL, "FloatList", 0),
        ("int64_list", 3, _F.TYPE_MESSAGE, _OPTIONAL, "Int64List", 0),
    ],
    "Features": [("feature", 1, _F.TYPE_MESSAGE, _REPEATED, "Features.FeatureEntry", None)],
    "FeatureList": [("feature", 1, _F.TYPE_MESSAGE, _REPEATED, "Feature", None)],
    "FeatureLists": [("feature_list", 1, _F.TYPE_MESSAGE, _REPEATED, "FeatureLists.FeatureListEntry", None)],
    "Example": [("features", 1, _F.TYPE_MESSAGE, _OPTIONAL, "Features", None)],
    "SequenceExample": [
        ("context", 1, _F.TYPE_MESSAGE, _OPTIONAL, "Features", None),
        ("feature_lists", 2, _F.TYPE_MESSAGE, _OPTIONAL, "FeatureLists", None),
    ],
}
# map<string, V> fields: the nested entry message each map field is made of.
_MAP_ENTRIES = {"Features": ("FeatureEntry", "Feature"), "FeatureLists": ("FeatureListEntry", "FeatureList")}


def _add_field(message, name, number, type_, label, type_name=None, oneof=None):
    field = message.field.add(name=name, number=number, type=type_, label=label)
    if type_name:
        field.type_name = f".{PACKAGE}.{type_name}"
    if oneof is not None:
        field.oneof_index = oneof
    if type_ in (_F.TYPE_FLOAT, _F.TYPE_INT64) and label == _REPEATED:
        field.options.packed = True  # as TF's [packed = true]


def _file_descriptor():
    proto = descriptor_pb2.FileDescriptorProto(
        name="nbdist/example/example.proto", package=PACKAGE, syntax="proto3"
    )
    for name, fields in _MESSAGES.items():
        message = proto.message_type.add(name=name)
        if name == "Feature":
            message.oneof_decl.add(name="kind")
        for field in fields:
            _add_field(message, *field)
        if name in _MAP_ENTRIES:
            entry_name, value_type = _MAP_ENTRIES[name]
            entry = message.nested_type.add(name=entry_name)
            entry.options.map_entry = True
            _add_field(entry, "key", 1, _F.TYPE_STRING, _OPTIONAL)
            _add_field(entry, "value", 2, _F.TYPE_MESSAGE, _OPTIONAL, value_type)
    return proto


def _build():
    pool = descriptor_pool.DescriptorPool()
    file = pool.Add(_file_descriptor())
    del file  # the pool keeps it
    return {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{PACKAGE}.{name}"))
        for name in _MESSAGES
    }


_CLASSES = _build()
BytesList = _CLASSES["BytesList"]
FloatList = _CLASSES["FloatList"]
Int64List = _CLASSES["Int64List"]
Feature = _CLASSES["Feature"]
Features = _CLASSES["Features"]
FeatureList = _CLASSES["FeatureList"]
FeatureLists = _CLASSES["FeatureLists"]
Example = _CLASSES["Example"]
SequenceExample = _CLASSES["SequenceExample"]
