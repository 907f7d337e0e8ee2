"""`tf.io.SparseFeature`: a `SparseTensor` feature of an Example stored as an index feature
(or one per dimension) and a value feature, assembled as TF's `parse_example` assembles it:
both parsed as `VarLenFeature`s, then merged (TF's ``sparse_merge``: the example's row
index, then the parsed indices; values as parsed) and put in row-major order unless
``already_sorted``. Indices are not checked against `size`, as in TF.
"""

import collections

from nbdist.graph import dtypes as _dtypes
from nbdist.ops.concat_slice_ops import concat, stack
from nbdist.ops.constant_op import constant
from nbdist.ops.sparse_ops import sparse_reorder
from nbdist.ops.sparse_tensor import SparseTensor

__all__ = ["SparseFeature"]


class SparseFeature(
    collections.namedtuple("SparseFeature", ["index_key", "value_key", "dtype", "size", "already_sorted"])
):
    """`tf.io.SparseFeature(index_key, value_key, dtype, size, already_sorted=False)`: a
    `SparseTensor` of dense shape `size` (an int, or a list with one size per index key)."""

    def __new__(cls, index_key, value_key, dtype, size, already_sorted=False):
        return super().__new__(cls, index_key, value_key, dtype, size, already_sorted)


def _keys(feature):
    return list(feature.index_key) if isinstance(feature.index_key, (list, tuple)) else [feature.index_key]


def _sizes(feature):
    return list(feature.size) if isinstance(feature.size, (list, tuple)) else [feature.size]


def split_sparse_features(features, var_len_feature):
    """``(features to parse, {key: SparseFeature})``: each `SparseFeature` replaced by
    `var_len_feature`s (the class) of its index and value keys.

    Raises:
        ValueError: a SparseFeature's sizes do not match its index keys, or a key is
            asked for as another dtype elsewhere.
    """
    plain = {k: v for k, v in features.items() if not isinstance(v, SparseFeature)}
    sparse = {k: v for k, v in features.items() if isinstance(v, SparseFeature)}
    for key, feature in sorted(sparse.items()):
        if len(_keys(feature)) != len(_sizes(feature)):
            raise ValueError(
                f"SparseFeature {key!r}: {len(_keys(feature))} index keys but {len(_sizes(feature))} sizes"
            )
        wanted = [(k, _dtypes.int64) for k in _keys(feature)] + [
            (feature.value_key, _dtypes.as_dtype(feature.dtype))
        ]
        for name, dtype in wanted:
            spec = plain.setdefault(name, var_len_feature(dtype))
            if not isinstance(spec, var_len_feature) or _dtypes.as_dtype(spec.dtype) != dtype:
                raise ValueError(
                    f"SparseFeature {key!r} needs feature {name!r} as a VarLenFeature of {dtype.name}, "
                    f"but it is also asked for as {spec}"
                )
    return plain, sparse


def merge_sparse_features(parsed, sparse, requested):
    """`parsed` with each `SparseFeature` assembled from its parts, and the parts that were
    not themselves `requested` dropped."""
    out = dict(parsed)
    for key, feature in sparse.items():
        index = [parsed[k] for k in _keys(feature)]
        values = parsed[feature.value_key]
        first = index[0]
        indices = concat([first.indices[:, :-1], stack([ix.values for ix in index], axis=1)], 1)
        size = constant(_sizes(feature), dtype=_dtypes.int64)
        result = SparseTensor(indices, values.values, concat([first.dense_shape[:-1], size], 0))
        out[key] = result if feature.already_sorted else sparse_reorder(result)
    for feature in sparse.values():
        for name in [*_keys(feature), feature.value_key]:
            if name not in requested:
                out.pop(name, None)
    return out
