"""Hashing strings to buckets and fingerprints: ``StringToHashBucket`` (TF's ``Hash64``),
``StringToHashBucketFast`` (FarmHash ``Fingerprint64``), ``StringToHashBucketStrong``
(SipHash-2-4 under a key) and ``Fingerprint`` (`tf.fingerprint`), with TF's op types and
values: the hashes are ops/hash_functions.py's, equal to TF's bit for bit. None has a gradient.
"""

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops._shapes import invalid_argument
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.hash_functions import fingerprint64, hash64, siphash24
from nbdist.ops.string_codec_ops import typed_input

__all__ = [
    "fingerprint",
    "string_to_hash_bucket",
    "string_to_hash_bucket_fast",
    "string_to_hash_bucket_strong",
]


def _buckets(hashes, shape, num_buckets):
    return np.array([h % num_buckets for h in hashes], dtype=np.uint64).astype(np.int64).reshape(shape)


def _bucket_kernel(hash_fn):
    def kernel(ctx, node, x):
        x = np.asarray(x, dtype=object)
        return _buckets((hash_fn(node, s) for s in x.reshape(-1)), x.shape, node.attr["num_buckets"])

    return kernel


def _strong(node, s):
    key = node.attr["key"]
    if len(key) != 2:
        raise invalid_argument(node, f"{node.op}: Key must have 2 elements, got {len(key)} ({list(key)!r})")
    return siphash24(key[0], key[1], s)


_HASHES = {
    "StringToHashBucket": lambda node, s: hash64(s),
    "StringToHashBucketFast": lambda node, s: fingerprint64(s),
    "StringToHashBucketStrong": _strong,
}
for _type, _hash in _HASHES.items():
    registry.shape(_type)(lambda inputs, attrs: [(_dtypes.int64, inputs[0].shape)])
    registry.kernel(_type)(_bucket_kernel(_hash))
    registry.no_gradient(_type)


def _hash_op(op_type, value, num_buckets, name, **attrs):
    value = typed_input(value, _dtypes.string, "input", op_type)
    if int(num_buckets) < 1:
        raise ValueError(
            f"Attr 'num_buckets' of '{op_type}' Op passed {int(num_buckets)} less than minimum 1."
        )
    attrs = {"num_buckets": int(num_buckets), **attrs}
    return registry.make_op(op_type, [value], attrs, name=name or op_type).outputs[0]


def string_to_hash_bucket(string_tensor=None, num_buckets=None, name=None, input=None):  # noqa: A002
    """`tf.string_to_hash_bucket` / `tf.strings.to_hash_bucket`: TF's ``Hash64`` of each string
    modulo `num_buckets` (int64, the input's shape); `input` is `string_tensor`'s other name."""
    if input is not None and string_tensor is not None:
        raise ValueError("Cannot specify both 'input' and 'string_tensor'")
    return _hash_op("StringToHashBucket", input if input is not None else string_tensor, num_buckets, name)


def string_to_hash_bucket_fast(input, num_buckets, name=None):  # noqa: A002 - TF's argument name
    """`tf.string_to_hash_bucket_fast`: FarmHash ``Fingerprint64`` of each string modulo
    `num_buckets`, as int64 of the input's shape."""
    return _hash_op("StringToHashBucketFast", input, num_buckets, name)


def string_to_hash_bucket_strong(input, num_buckets, key, name=None):  # noqa: A002
    """`tf.string_to_hash_bucket_strong`: SipHash-2-4 of each string under `key` (two ints,
    the 128-bit key's low and high words) modulo `num_buckets`, as int64."""
    key = [int(k) for k in key]
    return _hash_op("StringToHashBucketStrong", input, num_buckets, name, key=key)


# -- Fingerprint -------------------------------------------------------------------------------
@registry.shape("Fingerprint")
def _fingerprint_shape(inputs, attrs):
    rows = inputs[0].shape.as_list()[0] if inputs[0].shape.ndims else None
    return [(_dtypes.uint8, TensorShape([rows, 8]))]


def _as_bytes(fingerprints):
    return np.array(fingerprints, dtype="<u8").reshape(-1, 1).view(np.uint8).reshape(-1, 8)


@registry.kernel("Fingerprint")
def _fingerprint_kernel(ctx, node, data, method):
    method = np.asarray(method, dtype=object).item()
    if method != b"farmhash64":
        raise invalid_argument(
            node, f"Unsupported fingerprint method is used: {method.decode(errors='replace')}"
        )
    data = np.asarray(data, dtype=data.dtype)
    if data.ndim < 1:
        raise invalid_argument(node, "`data` should have at least one dimension, got a scalar")
    rows = data.shape[0]
    if data.dtype == object:  # strings: each string's fingerprint; a row of many, theirs fingerprinted
        flat = data.reshape(rows, int(np.prod(data.shape[1:])))
        if flat.shape[1] == 1:
            return _as_bytes([fingerprint64(s) for s in flat[:, 0]])
        strings = _as_bytes([fingerprint64(s) for s in flat.reshape(-1)]).reshape(rows, -1)
        return _as_bytes([fingerprint64(row.tobytes()) for row in strings])
    raw = np.ascontiguousarray(data).reshape(rows, int(np.prod(data.shape[1:]))).view(np.uint8)  # row bytes
    return _as_bytes([fingerprint64(row.tobytes()) for row in raw]).reshape(rows, 8)


registry.no_gradient("Fingerprint")


def fingerprint(data, method="farmhash64", name=None):
    """`tf.fingerprint`: an 8-byte fingerprint of each row of `data` (``[rows, 8]`` uint8, the
    little-endian bytes of FarmHash ``Fingerprint64`` of the row's bytes; for strings, of the
    string, or of the fingerprints of the row's strings when a row holds more than one).

    Raises:
        ValueError: `method` is known while building and is not ``"farmhash64"`` (as TF's
            shape function; a fed one fails when run, with `InvalidArgumentError`).
    """
    if isinstance(method, (str, bytes)) and method not in ("farmhash64", b"farmhash64"):
        raise ValueError(
            f"Unsupported method: {method!r} for Fingerprint op {name or 'Fingerprint'!r}; use 'farmhash64'"
        )
    data = convert_to_tensor(data, name="data")
    if data.shape.ndims == 0:
        raise ValueError(
            f"Shape must be at least rank 1 but is rank 0 for Fingerprint op {name or 'Fingerprint'!r}"
        )
    method = convert_to_tensor(method, dtype=_dtypes.string, name="method")
    return registry.make_op("Fingerprint", [data, method], name=name or "Fingerprint").outputs[0]
