"""`tf.io.parse_single_sequence_example` / `tf.io.parse_sequence_example`: serialized
`tf.train.SequenceExample`s to tensors, and `tf.io.decode_json_example`: an ``Example`` in
protobuf's JSON form to its serialized bytes.

    context, sequences = tf.io.parse_single_sequence_example(record,
        context_features={"label": tf.io.FixedLenFeature([], tf.int64)},
        sequence_features={"frames": tf.io.FixedLenSequenceFeature([4], tf.float32),
                           "words": tf.io.VarLenFeature(tf.string)})

Context features are parsed as `parse_single_example` parses features (`FixedLenFeature`,
`VarLenFeature`); a sequence feature is a ``FeatureList``: a `FixedLenSequenceFeature` of
``[steps, *shape]`` (required unless ``allow_missing``), a `VarLenFeature` a `SparseTensor`
of ``[steps, longest]``. The batched form pads steps to the batch's longest (zeros, ``b""``)
and also gives each dense sequence feature's lengths. TF's ``RaggedFeature`` is left out
(nbdist has no `RaggedTensor`). None of these ops has a gradient.
"""

import json
import struct

import numpy as np
from google.protobuf import json_format
from google.protobuf.message import DecodeError

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import example_protos, registry
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.example_parsing_ops import FixedLenFeature, FixedLenSequenceFeature, VarLenFeature
from nbdist.ops.sparse_tensor import SparseTensor

__all__ = ["decode_json_example", "parse_single_sequence_example"]  # (parse_sequence_example: tf.io only)

_KIND = {_dtypes.string: "bytes_list", _dtypes.float32: "float_list", _dtypes.int64: "int64_list"}
_TYPE_NAME = {"bytes_list": "string", "float_list": "float", "int64_list": "int64"}


# -- decode_json_example -----------------------------------------------------------------------
def _varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _field(number, payload):
    """A length-delimited field."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _feature_bytes(feature):
    """A Feature as TF's JSON converter writes it: repeated values unpacked, one tag each."""
    kind = feature.WhichOneof("kind")
    if kind is None:
        return b""
    values = getattr(feature, kind).value
    if kind == "bytes_list":
        body = b"".join(_field(1, v) for v in values)
    elif kind == "float_list":
        body = b"".join(b"\x0d" + struct.pack("<f", v) for v in values)
    else:
        body = b"".join(b"\x08" + _varint(v) for v in values)
    return _field({"bytes_list": 1, "float_list": 2, "int64_list": 3}[kind], body)


def _json_to_example(node, text):
    """The Example of a JSON text, serialized as TF's converter does: features in the JSON's
    order, repeated values unpacked."""
    example = example_protos.Example()
    try:
        text = bytes(text).decode("utf-8")
        json_format.Parse(text, example)
        order = json.loads(text, object_pairs_hook=list)
    except (json_format.ParseError, UnicodeDecodeError, ValueError) as e:
        raise errors.InvalidArgumentError(node.name, None, f"Error while parsing JSON: {e}") from None
    features = dict(order).get("features")
    if features is None:
        return b""
    keys = [k for k, _ in dict(features).get("feature", [])]
    feature = example.features.feature
    entries = b"".join(_field(1, _field(1, k.encode()) + _field(2, _feature_bytes(feature[k]))) for k in keys)
    return _field(1, entries)


registry.shape("DecodeJSONExample")(lambda inputs, attrs: [(_dtypes.string, inputs[0].shape)])
registry.no_gradient("DecodeJSONExample")


@registry.kernel("DecodeJSONExample")
def _decode_json_kernel(ctx, node, json_examples):
    json_examples = np.asarray(json_examples, dtype=object)
    out = np.empty(json_examples.shape, dtype=object)
    out.reshape(-1)[:] = [_json_to_example(node, s) for s in json_examples.reshape(-1)]
    return out


def decode_json_example(json_examples, name=None):
    """`tf.io.decode_json_example`: each string, a `tf.train.Example` in protobuf's JSON form
    (``{"features": {"feature": {"a": {"int64List": {"value": [1]}}}}}``), as the serialized
    ``Example`` (`InvalidArgumentError` when run for JSON that is not one)."""
    json_examples = convert_to_tensor(json_examples, dtype=_dtypes.string, name="json_examples")
    return registry.make_op("DecodeJSONExample", [json_examples], name=name or "DecodeJSONExample").outputs[0]


# -- graph construction ------------------------------------------------------------------------
def _split(features, allowed, what):
    """``(sparse [(key, dtype)], dense [(key, spec, dtype)])`` of a features dict, by key."""
    sparse, dense = [], []
    for key in sorted(features or {}):
        spec = features[key]
        if isinstance(spec, VarLenFeature):
            sparse.append((key, _dtype(key, spec.dtype)))
        elif isinstance(spec, allowed):
            dense.append((key, spec, _dtype(key, spec.dtype)))
        else:
            names = " or ".join(f"tf.io.{c.__name__}" for c in (*allowed, VarLenFeature))
            raise ValueError(f"{what} {key!r} is a {type(spec).__name__}; use {names}")
        shape = getattr(spec, "shape", ())
        if None in [getattr(d, "value", d) for d in shape]:
            raise ValueError(f"{what} {key!r}: its shape must be fully defined, got {list(shape)}")
    return sparse, dense


def _dtype(key, dtype):
    dtype = _dtypes.as_dtype(dtype)
    if dtype not in _KIND:
        raise TypeError(
            f"feature {key!r} has dtype {dtype.name}; features hold float32, int64 or string values"
        )
    return dtype


def _default(key, spec, dtype):
    if spec.default_value is None:
        return convert_to_tensor(b"" if dtype is _dtypes.string else 0, dtype=dtype, name=f"required_{key}")
    value = np.asarray(spec.default_value, dtype=object if dtype is _dtypes.string else dtype.np)
    size = int(np.prod(spec.shape, dtype=np.int64))
    if value.size != size:
        raise ValueError(f"default_value of feature {key!r} has {value.size} values; its shape needs {size}")
    return convert_to_tensor(value.reshape([int(d) for d in spec.shape]), dtype=dtype, name=f"default_{key}")


def _shape_list(spec):
    return [int(d) for d in spec.shape]


def _parse_op(op_type, serialized, context_features, sequence_features, names, name):
    if not context_features and not sequence_features:
        raise ValueError("Missing features: pass context_features and / or sequence_features")
    c_sparse, c_dense = _split(context_features, (FixedLenFeature,), "context feature")
    s_sparse, s_dense = _split(sequence_features, (FixedLenSequenceFeature,), "sequence feature")
    attrs = {
        "context_sparse_keys": [k for k, _ in c_sparse],
        "context_sparse_types": [t for _, t in c_sparse],
        "context_dense_keys": [k for k, _, _ in c_dense],
        "context_dense_types": [t for _, _, t in c_dense],
        "context_dense_shapes": [TensorShape(_shape_list(s)) for _, s, _ in c_dense],
        "context_dense_required": [s.default_value is None for _, s, _ in c_dense],
        "feature_list_sparse_keys": [k for k, _ in s_sparse],
        "feature_list_sparse_types": [t for _, t in s_sparse],
        "feature_list_dense_keys": [k for k, _, _ in s_dense],
        "feature_list_dense_types": [t for _, _, t in s_dense],
        "feature_list_dense_shapes": [TensorShape(_shape_list(s)) for _, s, _ in s_dense],
        "feature_list_dense_missing_assumed_empty": [k for k, s, _ in s_dense if s.allow_missing],
        "example_names": [str(n) for n in names],
    }
    defaults = [_default(k, s, t) for k, s, t in c_dense]
    outputs = list(registry.make_op(op_type, [serialized, *defaults], attrs, name=name).outputs)

    def take(n):
        taken = outputs[:n]
        del outputs[:n]
        return taken

    def sparse_of(keys):
        n = len(keys)
        indices, values, shapes = take(n), take(n), take(n)
        return {k: SparseTensor(i, v, s) for k, i, v, s in zip(keys, indices, values, shapes)}

    context = sparse_of(attrs["context_sparse_keys"])
    context.update(zip(attrs["context_dense_keys"], take(len(c_dense))))
    sequences = sparse_of(attrs["feature_list_sparse_keys"])
    sequences.update(zip(attrs["feature_list_dense_keys"], take(len(s_dense))))
    return context, sequences, dict(zip(attrs["feature_list_dense_keys"], outputs))


def parse_single_sequence_example(serialized, context_features=None, sequence_features=None,
                                  example_name=None, name=None):  # fmt: skip
    """`tf.io.parse_single_sequence_example`: one serialized `tf.train.SequenceExample` (a
    scalar string) to ``(context, sequences)`` dicts of tensors (see the module's doc).

    Raises:
        ValueError: no features, an unsupported feature kind, or a shape not fully defined.
        TypeError: a dtype other than float32, int64 or string.
    """
    serialized = convert_to_tensor(serialized, dtype=_dtypes.string, name="serialized")
    names = [] if example_name is None else [example_name]
    context, sequences, _ = _parse_op(
        "ParseSingleSequenceExample", serialized, context_features, sequence_features, names, name
    )
    return context, sequences


def parse_sequence_example(serialized, context_features=None, sequence_features=None, example_names=None,
                           name=None):  # fmt: skip
    """`tf.io.parse_sequence_example`: a vector of serialized `tf.train.SequenceExample`s to
    ``(context, sequences, lengths)``: dense sequences padded to the batch's longest, and each
    one's lengths (int64 ``[batch]``)."""
    serialized = convert_to_tensor(serialized, dtype=_dtypes.string, name="serialized")
    names = [] if example_names is None else list(example_names)
    return _parse_op("ParseSequenceExampleV2", serialized, context_features, sequence_features, names, name)


# -- shapes ------------------------------------------------------------------------------------
def _sparse_specs(types, rank):
    return (
        [(_dtypes.int64, TensorShape([None, rank]))] * len(types)
        + [(t, TensorShape([None])) for t in types]
        + [(_dtypes.int64, TensorShape([rank]))] * len(types)
    )


def _shape_fn(batched):
    def shape_fn(inputs, attrs):
        batch = [inputs[0].shape[0] if inputs[0].shape.ndims == 1 else None] if batched else []
        specs = _sparse_specs(attrs["context_sparse_types"], len(batch) + 1)
        specs += [
            (t, TensorShape(batch + s.as_list()))
            for t, s in zip(attrs["context_dense_types"], attrs["context_dense_shapes"])
        ]
        specs += _sparse_specs(attrs["feature_list_sparse_types"], len(batch) + 2)
        specs += [
            (t, TensorShape([*batch, None, *s.as_list()]))
            for t, s in zip(attrs["feature_list_dense_types"], attrs["feature_list_dense_shapes"])
        ]
        if batched:
            specs += [(_dtypes.int64, TensorShape(batch))] * len(attrs["feature_list_dense_keys"])
        return specs

    return shape_fn


registry.shape("ParseSingleSequenceExample")(_shape_fn(batched=False))
registry.shape("ParseSequenceExampleV2")(_shape_fn(batched=True))
registry.no_gradient("ParseSingleSequenceExample")
registry.no_gradient("ParseSequenceExampleV2")


# -- the kernel --------------------------------------------------------------------------------
class _Reader:
    """Reads SequenceExamples; errors name the example, key and index as TF's do."""

    def __init__(self, node):
        self.node = node
        self.names = node.attr.get("example_names") or []

    def name(self, index):
        return self.names[index] if index < len(self.names) else "<unknown>"

    def error(self, message):
        return errors.InvalidArgumentError(self.node.name, None, message)

    def parse(self, serialized):
        example = example_protos.SequenceExample()
        try:
            example.ParseFromString(bytes(serialized))
        except DecodeError:
            text = bytes(serialized)[:64].decode("utf-8", "backslashreplace")
            raise self.error(f"Could not parse example input, value: '{text}'") from None
        return example.context.feature, example.feature_lists.feature_list

    def values(self, feature, dtype, where):
        kind = feature.WhichOneof("kind")
        if kind is None:
            return np.empty(0, dtype.np)
        if kind != _KIND[dtype]:
            raise self.error(
                f"{where}Data types don't match. Expected type: {_TYPE_NAME[_KIND[dtype]]}, "
                f"Actual type: {_TYPE_NAME[kind]}"
            )
        return np.array(getattr(feature, kind).value, dtype=dtype.np)


def _sparse(rows, dtype):
    """indices, values, dense shape of per-example lists of value vectors (one per step, or
    one vector for a context feature: then `rows` holds ``[vector]`` and the step axis goes)."""
    indices, values = [], []
    steps = max((len(r) for r in rows), default=0)
    width = max((len(v) for r in rows for v in r), default=0)
    for b, r in enumerate(rows):
        for t, v in enumerate(r):
            for j in range(len(v)):
                indices.append([b, t, j])
            values.append(v)
    indices = np.array(indices, np.int64).reshape(-1, 3)
    values = np.concatenate(values).astype(dtype.np) if values else np.empty(0, dtype.np)
    return indices, values, np.array([len(rows), steps, width], np.int64)


def _layout(indices, values, shape, batched, context):
    keep = [c for c, drop in enumerate((not batched, context, False)) if not drop]
    return indices[:, keep], values, shape[keep]


def _values_error(reader, i, key, index, size, shape):
    return reader.error(
        f"Name: {reader.name(i)}, Key: {key}, Index: {index}.  Number of values != expected.  "
        f"values size: {size} but output shape: [{','.join(map(str, shape))}]"
    )


def _context_dense(reader, examples, key, dtype, shape, required, default):
    shape, batch = TensorShape(shape).as_list(), []
    for i, (context, _) in enumerate(examples):
        if key not in context:
            if required:
                raise reader.error(
                    f"Name: {reader.name(i)}, Context feature '{key}' is required but not found."
                )
            batch.append(np.reshape(default, shape))
            continue
        v = reader.values(context[key], dtype, f"Name: {reader.name(i)}, Context feature: {key}.  ")
        if v.size != int(np.prod(shape, dtype=np.int64)):
            raise _values_error(reader, i, key, i, v.size, shape)
        batch.append(v.reshape(shape))
    return np.stack(batch).astype(dtype.np) if batch else np.empty([0, *shape], dtype.np)


def _list_dense(reader, examples, key, dtype, shape, missing_ok):
    """``[batch, longest, *shape]`` padded, and the lengths."""
    shape, batch = TensorShape(shape).as_list(), []
    for i, (_, lists) in enumerate(examples):
        if key not in lists:
            if not missing_ok:
                raise reader.error(
                    f"Name: {reader.name(i)}, Feature list '{key}' is required but could not be found.  Did "
                    "you mean to include it in feature_list_dense_missing_assumed_empty or "
                    "feature_list_dense_defaults?"
                )
            batch.append(np.empty([0, *shape], dtype.np))
            continue
        steps = []
        for t, f in enumerate(lists[key].feature):
            v = reader.values(f, dtype, f"Name: {reader.name(i)}, Feature list: {key}, Index: {t}.  ")
            if v.size != int(np.prod(shape, dtype=np.int64)):
                raise _values_error(reader, i, key, t, v.size, shape)
            steps.append(v.reshape(shape))
        batch.append(np.stack(steps) if steps else np.empty([0, *shape], dtype.np))
    longest = max((len(b) for b in batch), default=0)
    value = np.full([len(batch), longest, *shape], b"" if dtype is _dtypes.string else 0, dtype.np)
    for i, b in enumerate(batch):
        value[i, : len(b)] = b
    return value, np.array([len(b) for b in batch], np.int64)


def _context_rows(reader, examples, key, dtype):
    """Each example's context feature as ``[values]`` (``[]`` when it lacks the feature)."""
    return [[reader.values(c[key], dtype, f"Key: {key}.  ")] if key in c else [] for c, _ in examples]


def _list_rows(reader, examples, key, dtype):
    """Each example's feature list as a list of value vectors, one per step."""
    return [
        [
            reader.values(f, dtype, f"Feature list: {key}, Index: {t}.  ")
            for t, f in enumerate(lists[key].feature)
        ]
        if key in lists
        else []
        for _, lists in examples
    ]


def _kernel(batched):
    def kernel(ctx, node, serialized, *defaults):
        reader, a = _Reader(node), node.attr
        examples = [reader.parse(r) for r in np.asarray(serialized, dtype=object).reshape(-1)]
        cs = [
            _layout(*_sparse(_context_rows(reader, examples, k, t), t), batched, context=True)
            for k, t in zip(a["context_sparse_keys"], a["context_sparse_types"])
        ]
        cd = [
            _context_dense(reader, examples, *spec)
            for spec in zip(a["context_dense_keys"], a["context_dense_types"], a["context_dense_shapes"],
                            a["context_dense_required"], defaults)
        ]  # fmt: skip
        fs = [
            _layout(*_sparse(_list_rows(reader, examples, k, t), t), batched, context=False)
            for k, t in zip(a["feature_list_sparse_keys"], a["feature_list_sparse_types"])
        ]
        missing_ok = set(a["feature_list_dense_missing_assumed_empty"])
        fd = [
            _list_dense(reader, examples, k, t, shape, k in missing_ok)
            for k, t, shape in zip(a["feature_list_dense_keys"], a["feature_list_dense_types"],
                                   a["feature_list_dense_shapes"])
        ]  # fmt: skip
        dense = [value if batched else value[0] for value in cd] + [v if batched else v[0] for v, _ in fd]
        flat = _grouped(cs) + dense[: len(cd)] + _grouped(fs) + dense[len(cd) :]
        if batched:
            flat += [lengths for _, lengths in fd]
        return flat[0] if len(flat) == 1 else tuple(flat)

    return kernel


def _grouped(parts):
    """Sparse outputs in the op's order: every indices, then every values, then every shape."""
    return [p[0] for p in parts] + [p[1] for p in parts] + [p[2] for p in parts]


registry.kernel("ParseSingleSequenceExample")(_kernel(batched=False))
registry.kernel("ParseSequenceExampleV2")(_kernel(batched=True))
