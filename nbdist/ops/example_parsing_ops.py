"""`tf.parse_example` / `tf.parse_single_example`: serialized `tf.train.Example`s to tensors,
and `tf.decode_raw`: bytes to numbers.

    features = {
        "label": tf.FixedLenFeature([], tf.int64),
        "pixels": tf.FixedLenFeature([784], tf.float32),
        "tags": tf.VarLenFeature(tf.string),        # a tf.SparseTensor
    }
    parsed = tf.parse_single_example(record, features)

The kernels decode protobuf bytes (the `nbdist.ops.example_protos` messages, wire-compatible
with TF's); they never unpickle. A required feature that is missing, a feature of the wrong
list type or the wrong number of values raises `InvalidArgumentError` naming the feature,
as TF's kernel does. Parsing has no gradient.
"""

import collections

import numpy as np
from google.protobuf.message import DecodeError

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import Tensor
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import example_protos, registry
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.sparse_feature import merge_sparse_features, split_sparse_features
from nbdist.ops.sparse_tensor import SparseTensor

__all__ = [
    "FixedLenFeature",
    "FixedLenSequenceFeature",
    "VarLenFeature",
    "decode_raw",
    "parse_example",
    "parse_single_example",
]

# The three list kinds of a Feature, by the dtype a feature is parsed to (TF's type names).
_KIND = {_dtypes.string: "bytes_list", _dtypes.float32: "float_list", _dtypes.int64: "int64_list"}
_TYPE_NAME = {"bytes_list": "string", "float_list": "float", "int64_list": "int64"}


class FixedLenFeature(collections.namedtuple("FixedLenFeature", ["shape", "dtype", "default_value"])):
    """A feature with exactly ``prod(shape)`` values, parsed to a dense tensor of `shape`;
    `default_value` (None: the feature is required) when an example lacks it."""

    def __new__(cls, shape, dtype, default_value=None):
        return super().__new__(cls, shape, dtype, default_value)


class FixedLenSequenceFeature(
    collections.namedtuple("FixedLenSequenceFeature", ["shape", "dtype", "allow_missing", "default_value"])
):
    """A feature with any number of `shape`-sized rows, parsed to ``[rows, *shape]`` (in a
    batch ``[batch, max_rows, *shape]``, short ones padded with `default_value` or zeros)."""

    def __new__(cls, shape, dtype, allow_missing=False, default_value=None):
        return super().__new__(cls, shape, dtype, allow_missing, default_value)


class VarLenFeature(collections.namedtuple("VarLenFeature", ["dtype"])):
    """A feature with any number of values, parsed to a `SparseTensor`."""


# -- graph construction -----------------------------------------------------------------------------
def _check_dtype(key, dtype):
    dtype = _dtypes.as_dtype(dtype)
    if dtype not in _KIND:
        raise TypeError(
            f"feature {key!r} has dtype {dtype.name}; a tf.train.Example holds float32, int64 or string "
            "values (parse to one of those, then tf.cast)"
        )
    return dtype


def _dense_default(key, spec, dtype, shape):
    """The default as a Tensor of `shape` (a padding scalar for a sequence feature)."""
    if isinstance(spec.default_value, Tensor):
        return spec.default_value
    if isinstance(spec, FixedLenSequenceFeature):
        value = (
            spec.default_value if spec.default_value is not None else (b"" if dtype is _dtypes.string else 0)
        )
        return convert_to_tensor(value, dtype=dtype, name=f"padding_{key}")
    if spec.default_value is None:
        return convert_to_tensor(b"" if dtype is _dtypes.string else 0, dtype=dtype, name=f"required_{key}")
    value = np.asarray(spec.default_value, dtype=object if dtype is _dtypes.string else dtype.np)
    if value.size != int(np.prod(shape, dtype=np.int64)):
        raise ValueError(
            f"default_value of feature {key!r} has {value.size} values; its shape {list(shape)} needs "
            f"{int(np.prod(shape, dtype=np.int64))}"
        )
    return convert_to_tensor(value.reshape(shape), dtype=dtype, name=f"default_{key}")


def _parse_op(op_type, serialized, features, example_names, name):
    if not features:
        raise ValueError(f"Missing: features was {features!r}; pass a dict of feature name -> feature")
    sparse, dense = [], []
    for key in sorted(features):
        spec = features[key]
        if isinstance(spec, VarLenFeature):
            sparse.append((key, _check_dtype(key, spec.dtype)))
        elif isinstance(spec, (FixedLenFeature, FixedLenSequenceFeature)):
            dense.append((key, spec, _check_dtype(key, spec.dtype)))
        else:
            raise ValueError(
                f"feature {key!r} is a {type(spec).__name__}; use tf.FixedLenFeature, "
                "tf.FixedLenSequenceFeature or tf.VarLenFeature"
            )
    defaults, shapes = [], []
    for key, spec, dtype in dense:
        shape = [int(d) if d is not None else None for d in spec.shape]
        if None in shape:
            raise ValueError(
                f"feature {key!r}: the shape of a FixedLenFeature must be fully defined, got {shape}"
            )
        if isinstance(spec, FixedLenSequenceFeature) and not spec.allow_missing:
            raise ValueError("Unsupported: FixedLenSequenceFeature requires allow_missing to be True.")
        shapes.append(TensorShape(shape))
        defaults.append(_dense_default(key, spec, dtype, shape))
    attrs = {
        "sparse_keys": [key for key, _ in sparse],
        "sparse_types": [dtype for _, dtype in sparse],
        "dense_keys": [key for key, _, _ in dense],
        "Tdense": [dtype for _, _, dtype in dense],
        "dense_shapes": shapes,
        "dense_required": [
            isinstance(spec, FixedLenFeature) and spec.default_value is None for _, spec, _ in dense
        ],
        "dense_is_sequence": [isinstance(spec, FixedLenSequenceFeature) for _, spec, _ in dense],
        "example_names": [str(n) for n in example_names] if example_names is not None else [],
    }
    outputs = registry.make_op(op_type, [serialized, *defaults], attrs, name=name).outputs
    n = len(sparse)
    parsed = {
        key: SparseTensor(outputs[i], outputs[n + i], outputs[2 * n + i]) for i, (key, _) in enumerate(sparse)
    }
    parsed.update({key: outputs[3 * n + k] for k, (key, _, _) in enumerate(dense)})
    return parsed


def parse_example(serialized, features, name=None, example_names=None):
    """`tf.parse_example`: a batch of serialized `tf.train.Example`s to tensors.

    Args:
        serialized: a 1-D string Tensor (or list) of serialized ``Example`` protos.
        features: a dict of feature name -> `FixedLenFeature`, `FixedLenSequenceFeature`
            (``allow_missing=True``), `VarLenFeature` or `SparseFeature`.
        name: the op's name.
        example_names: the examples' names (strings) for error messages.

    Returns:
        A dict: a dense feature -> ``[batch, *shape]`` (a sequence feature ``[batch,
        max_rows, *shape]``), a `VarLenFeature` -> a `SparseTensor` of dense shape
        ``[batch, max_values]``.

    Raises:
        ValueError: `features` is empty, a shape is not fully defined, or a default has the
            wrong number of values.
        TypeError: a feature's dtype is not float32, int64 or string.
    """
    serialized = convert_to_tensor(serialized, dtype=_dtypes.string, name="serialized")
    plain, sparse = split_sparse_features(features, VarLenFeature)  # tf.io.SparseFeature's parts
    return merge_sparse_features(
        _parse_op("ParseExample", serialized, plain, example_names, name), sparse, features
    )


def parse_single_example(serialized, features, name=None, example_names=None):
    """`tf.parse_single_example`: one serialized `tf.train.Example` (a scalar string) to
    tensors: as `parse_example` without the batch dimension (a `VarLenFeature`'s
    `SparseTensor` has dense shape ``[num_values]``)."""
    serialized = convert_to_tensor(serialized, dtype=_dtypes.string, name="serialized")
    if serialized.shape.ndims not in (None, 0):
        raise ValueError(
            f"parse_single_example takes one serialized Example (a scalar), got shape {serialized.shape}"
        )
    names = None if example_names is None else [example_names]
    plain, sparse = split_sparse_features(features, VarLenFeature)
    return merge_sparse_features(
        _parse_op("ParseSingleExample", serialized, plain, names, name), sparse, features
    )


def _parse_shape(batched):
    def shape_fn(inputs, attrs):
        batch = [inputs[0].shape[0] if inputs[0].shape.ndims == 1 else None] if batched else []
        rank = len(batch) + 1
        n = len(attrs["sparse_keys"])
        specs = [(_dtypes.int64, TensorShape([None, rank]))] * n
        specs += [(dtype, TensorShape([None])) for dtype in attrs["sparse_types"]]
        specs += [(_dtypes.int64, TensorShape([rank]))] * n
        for dtype, shape, seq in zip(attrs["Tdense"], attrs["dense_shapes"], attrs["dense_is_sequence"]):
            specs.append((dtype, TensorShape(batch + ([None] if seq else []) + list(shape.as_list()))))
        return specs

    return shape_fn


registry.shape("ParseExample")(_parse_shape(batched=True))
registry.shape("ParseSingleExample")(_parse_shape(batched=False))
registry.no_gradient("ParseExample")
registry.no_gradient("ParseSingleExample")


# -- the kernel ------------------------------------------------------------------------------------
class _Parser:
    """Error messages as TF's: ``Name: <unknown>, Key: k, Index: i.`` in a batch."""

    def __init__(self, node, batched):
        self.node, self.batched = node, batched
        self.names = node.attr.get("example_names") or []

    def error(self, message):
        return errors.InvalidArgumentError(self.node.name, None, message)

    def where(self, key, index):
        if not self.batched:
            return f"Key: {key}.  "
        return f"Name: {self.name(index)}, Key: {key}, Index: {index}.  "

    def name(self, index):
        return self.names[index] if index < len(self.names) else "<unknown>"

    def features(self, serialized):
        example = example_protos.Example()
        try:
            example.ParseFromString(bytes(serialized))
        except DecodeError:
            text = bytes(serialized)[:64].decode("utf-8", "backslashreplace")
            raise self.error(f"Could not parse example input, value: '{text}'") from None
        return example.features.feature

    def values(self, features, key, dtype, index, sparse=False):
        """The feature's values as a 1-D array, or None when the example lacks it."""
        if key not in features:
            return None
        kind = features[key].WhichOneof("kind")
        if kind is None:  # an empty Feature matches every type
            return np.empty(0, dtype=dtype.np)
        if kind != _KIND[dtype]:
            actual, expected = _TYPE_NAME[kind], _TYPE_NAME[_KIND[dtype]]
            if sparse:
                detail = f"Expected type: {expected}, Actual type: {actual}"
            else:
                detail = f"Data type: {actual} but expected type: {expected}"
            raise self.error(f"{self.where(key, index)}Data types don't match. {detail}")
        return np.array(getattr(features[key], kind).value, dtype=dtype.np)

    def sparse(self, examples, key, dtype):
        rows = [self.values(f, key, dtype, i, sparse=True) for i, f in enumerate(examples)]
        rows = [np.empty(0, dtype.np) if r is None else r for r in rows]
        width = max((len(r) for r in rows), default=0)
        positions = [np.arange(len(r), dtype=np.int64) for r in rows]
        columns = np.concatenate(positions) if positions else np.empty(0, np.int64)
        values = np.concatenate(rows) if rows else np.empty(0, dtype.np)
        if not self.batched:
            return columns.reshape(-1, 1), values, np.array([width], np.int64)
        batch = np.repeat(np.arange(len(rows), dtype=np.int64), [len(r) for r in rows])
        return np.stack([batch, columns], axis=1), values, np.array([len(rows), width], np.int64)

    def dense(self, examples, key, dtype, shape, required, default):
        size = int(np.prod(shape, dtype=np.int64))
        out = np.empty([len(examples), *shape], dtype=dtype.np)
        for i, features in enumerate(examples):
            values = self.values(features, key, dtype, i)
            if values is None:
                if required:
                    prefix = f"Name: {self.name(i)}, " if self.batched else ""
                    raise self.error(
                        f"{prefix}Feature: {key} (data type: {_TYPE_NAME[_KIND[dtype]]}) is required but "
                        "could not be found."
                    )
                out[i, ...] = np.reshape(default, shape)
            elif values.size != size:
                raise self.error(
                    f"{self.where(key, i)}Number of {_TYPE_NAME[_KIND[dtype]]} values != expected.  "
                    f"Values size: {values.size} but output shape: [{','.join(map(str, shape))}]"
                )
            else:
                out[i, ...] = values.reshape(shape)
        return out

    def sequence(self, examples, key, dtype, shape, padding):
        stride = int(np.prod(shape, dtype=np.int64))
        rows = []
        for i, features in enumerate(examples):
            values = self.values(features, key, dtype, i)
            values = np.empty(0, dtype.np) if values is None else values
            if stride == 0 or values.size % stride:
                raise self.error(
                    f"{self.where(key, i)}Number of {_TYPE_NAME[_KIND[dtype]]} values is not a multiple of "
                    f"stride length. Saw {values.size} values but output shape is: "
                    f"[?,{','.join(map(str, shape))}]"
                )
            rows.append(values.reshape([-1, *shape]))
        longest = max((len(r) for r in rows), default=0)
        out = np.full([len(examples), longest, *shape], np.asarray(padding).reshape(-1)[0], dtype=dtype.np)
        for i, r in enumerate(rows):
            out[i, : len(r)] = r
        return out


def _parse_kernel(batched):
    def kernel(ctx, node, serialized, *defaults):
        parser = _Parser(node, batched)
        records = np.asarray(serialized, dtype=object).reshape(-1)
        examples = [parser.features(s) for s in records]
        sparse = [
            parser.sparse(examples, k, t) for k, t in zip(node.attr["sparse_keys"], node.attr["sparse_types"])
        ]
        dense = []
        dense_attrs = zip(
            node.attr["dense_keys"],
            node.attr["Tdense"],
            node.attr["dense_shapes"],
            node.attr["dense_required"],
            node.attr["dense_is_sequence"],
            defaults,
        )
        for key, dtype, shape, required, is_sequence, default in dense_attrs:
            shape = [int(d) for d in TensorShape(shape).as_list()]
            if is_sequence:
                value = parser.sequence(examples, key, dtype, shape, default)
            else:
                value = parser.dense(examples, key, dtype, shape, required, default)
            dense.append(value if batched else value[0])
        outputs = (*[s[0] for s in sparse], *[s[1] for s in sparse], *[s[2] for s in sparse], *dense)
        return outputs[0] if len(outputs) == 1 else outputs  # one output: its value, not a tuple

    return kernel


registry.kernel("ParseExample")(_parse_kernel(batched=True))
registry.kernel("ParseSingleExample")(_parse_kernel(batched=False))


# -- decode_raw ------------------------------------------------------------------------------------
@registry.shape("DecodeRaw")
def _decode_raw_shape(inputs, attrs):
    shape = inputs[0].shape
    return [(attrs["out_type"], TensorShape(None) if shape.ndims is None else shape.concatenate([None]))]


registry.no_gradient("DecodeRaw")


@registry.kernel("DecodeRaw")
def _decode_raw_kernel(ctx, node, strings):
    out_type = node.attr["out_type"]
    dtype = np.dtype(out_type.np).newbyteorder("<" if node.attr["little_endian"] else ">")
    strings = np.asarray(strings, dtype=object)
    flat = [bytes(s) for s in strings.reshape(-1)]
    length = len(flat[0]) if flat else 0
    for i, s in enumerate(flat):
        if len(s) != length:
            raise errors.InvalidArgumentError(
                node.name,
                None,
                f"DecodeRaw requires input strings to all be the same size, but element {i} has size "
                f"{len(s)} != {length}",
            )
    if length % dtype.itemsize:
        raise errors.InvalidArgumentError(
            node.name,
            None,
            f"Input to DecodeRaw has length {length} that is not a multiple of {dtype.itemsize}, the size "
            f"of {out_type.name}",
        )
    raw = np.frombuffer(b"".join(flat), dtype=dtype).astype(out_type.np, copy=True)
    return raw.reshape([*strings.shape, length // dtype.itemsize])


def decode_raw(input_bytes=None, out_type=None, little_endian=True, name=None, bytes=None):  # noqa: A002 - TF's keyword
    """`tf.decode_raw`: each string's bytes read as a vector of `out_type` numbers.

    Args:
        input_bytes: a string Tensor; every element must have the same length.
        out_type: the numbers' dtype (``tf.uint8``, ``tf.float32``, ``tf.int64``, ...).
        little_endian: the bytes' order (False: big-endian).
        name: the op's name.
        bytes: TF's deprecated name of `input_bytes`.

    Returns:
        A Tensor of shape ``input_bytes.shape + [length / itemsize]``.

    Raises:
        ValueError: no input, or no `out_type`.
        TypeError: `out_type` is a string type.
    """
    if input_bytes is None:
        input_bytes = bytes
    if input_bytes is None or out_type is None:
        raise ValueError("decode_raw needs input_bytes and out_type (e.g. tf.decode_raw(record, tf.uint8))")
    out_type = _dtypes.as_dtype(out_type)
    if out_type is _dtypes.string:
        raise TypeError(
            "decode_raw: out_type must be a numeric dtype (uint8, int32, float32, ...), not string"
        )
    input_bytes = convert_to_tensor(input_bytes, dtype=_dtypes.string, name="input_bytes")
    attrs = {"out_type": out_type, "little_endian": bool(little_endian)}
    return registry.make_op("DecodeRaw", [input_bytes], attrs, name=name).outputs[0]
