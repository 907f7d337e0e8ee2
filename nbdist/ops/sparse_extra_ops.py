"""More of TF's sparse names: `tf.sparse_placeholder` (`tf.sparse.placeholder`),
`tf.sparse_to_dense`, `tf.sparse_merge` (`tf.sparse.merge`), `tf.edit_distance`
(``EditDistance``: Levenshtein distances between the last-axis sequences of two
`SparseTensor`s), `tf.sparse.bincount` (``DenseCountSparseOutput`` /
``SparseCountSparseOutput``) and `tf.sparse.cross` (``SparseCrossV2``: the strings of the
cartesian product of each row's features). None is differentiable (TF's neither).
"""

import itertools

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import Tensor, name_scope
from nbdist.graph.tensor_shape import TensorShape, as_shape
from nbdist.ops import math_ops, registry
from nbdist.ops._shapes import invalid_argument
from nbdist.ops.array_ops import placeholder, placeholder_with_default
from nbdist.ops.concat_slice_ops import concat
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.hash_functions import fingerprint64
from nbdist.ops.reshape_ops import expand_dims, reshape
from nbdist.ops.shape_ops import get_static_value
from nbdist.ops.sparse_ops import as_sparse, row_major, sparse_reorder, sparse_specs
from nbdist.ops.sparse_tensor import SparseTensor, SparseTensorValue

__all__ = ["edit_distance", "sparse_merge", "sparse_placeholder", "sparse_to_dense"]
# (tf.sparse only: bincount, cross; nbdist/sparse.py imports them)


# -- sparse_placeholder ---------------------------------------------------------------------------------
class _PlaceholderSparseTensor(SparseTensor):
    """A `SparseTensor` of placeholders whose static shape is the one asked for (TF's override)."""

    def __init__(self, indices, values, dense_shape, static_shape):
        super().__init__(indices, values, dense_shape)
        self._static_shape = static_shape

    @property
    def shape(self):
        return self._static_shape


def sparse_placeholder(dtype, shape=None, name=None):
    """`tf.sparse_placeholder`: a `SparseTensor` whose indices, values and dense shape are fed
    (feed it a `tf.SparseTensorValue`); `shape` (a list with None or -1 for unknown sizes) is its
    static shape and the dense shape's default."""
    sub = (lambda what: f"{name}/{what}") if name is not None else (lambda what: None)
    if shape is None:
        dense_shape = placeholder(_dtypes.int64, shape=[None], name=sub("shape"))
        rank, static = None, TensorShape(None)
    elif isinstance(shape, Tensor):
        rank = shape.shape[0] if shape.shape.ndims == 1 else None
        static = TensorShape(None if rank is None else [None] * rank)
        dense_shape = placeholder_with_default(shape, shape=shape.shape, name=sub("shape"))
    else:
        dims = [None if d is None or d == -1 else int(d) for d in as_shape(shape).as_list()]
        rank, static = len(dims), TensorShape(dims)
        default = convert_to_tensor(
            [-1 if d is None else d for d in dims], dtype=_dtypes.int64, name=sub("shape_default")
        )
        dense_shape = placeholder_with_default(default, shape=[rank], name=sub("shape"))
    values = placeholder(dtype, shape=[None], name=sub("values"))
    indices = placeholder(_dtypes.int64, shape=[None, rank], name=sub("indices"))
    return _PlaceholderSparseTensor(indices, values, dense_shape, static)


# -- sparse_to_dense --------------------------------------------------------------------------------------
def sparse_to_dense(
    sparse_indices, output_shape, sparse_values, default_value=0, validate_indices=True, name=None
):
    """`tf.sparse_to_dense`: a dense tensor of `output_shape` holding `sparse_values` at
    `sparse_indices` (a scalar value goes everywhere listed) and `default_value` elsewhere.

    Raises (when run): `InvalidArgumentError` for indices out of bounds, or (with
    `validate_indices`) repeated or out of row-major order.
    """
    sparse_indices = convert_to_tensor(sparse_indices, name="sparse_indices")
    if not sparse_indices.dtype.is_integer:
        raise TypeError(
            f"tf.sparse_to_dense: sparse_indices must be int32 or int64, got {sparse_indices.dtype.name}"
        )
    output_shape = convert_to_tensor(output_shape, dtype=sparse_indices.dtype, name="output_shape")
    sparse_values = convert_to_tensor(sparse_values, name="sparse_values")
    default_value = convert_to_tensor(default_value, dtype=sparse_values.dtype, name="default_value")
    inputs = [sparse_indices, output_shape, sparse_values, default_value]
    attrs = {"validate_indices": bool(validate_indices)}
    return registry.make_op("SparseToDense", inputs, attrs, name=name).outputs[0]


# -- sparse_merge ----------------------------------------------------------------------------------------
def sparse_merge(sp_ids, sp_values, vocab_size, name=None, already_sorted=False):
    """`tf.sparse_merge`: one `SparseTensor` whose last index is the id of `sp_ids` (one per
    value of `sp_values`; a list of `sp_ids` and `vocab_size` gives several id axes), shape
    ``sp_values.dense_shape[:-1] + vocab_size``; built as TF's, reordered unless `already_sorted`.

    Raises:
        TypeError: `vocab_size` not an int or Tensor (a list of them with a list of `sp_ids`).
        ValueError: lists of different lengths.
    """
    if isinstance(sp_ids, (SparseTensor, SparseTensorValue)):
        sp_ids = [sp_ids]
        if not isinstance(vocab_size, (Tensor, int)):
            raise TypeError(f"vocab_size has to be a Tensor or Python int. Found {type(vocab_size)}")
        vocab_size = [vocab_size]
    else:
        if not isinstance(sp_ids, (list, tuple)) or not isinstance(vocab_size, (list, tuple)):
            raise TypeError("sp_ids and vocab_size have to be a SparseTensor and an int, or lists of them")
        if len(sp_ids) != len(vocab_size):
            raise ValueError("sp_ids and vocab_size have to have equal lengths.")
    with name_scope(name or "SparseMerge"):
        sp_values = as_sparse(sp_values, "sp_values")
        ids = []
        for sp in sp_ids:
            values = as_sparse(sp, "sp_ids").values
            ids.append(expand_dims(math_ops.cast(values, _dtypes.int64), axis=1))
        raw_sizes = [convert_to_tensor(v) for v in vocab_size]
        sizes = [math_ops.cast(v, _dtypes.int64) for v in raw_sizes]
        new_indices = concat([sp_values.indices[:, :-1], *ids], 1)
        known = [get_static_value(t) for t in (sp_values.dense_shape, *raw_sizes)]
        if all(k is not None for k in known):  # (a constant: the result's static shape is known, as TF's)
            dims = [*np.ravel(known[0])[:-1], *(np.ravel(k)[0] for k in known[1:])]
            new_shape = convert_to_tensor(np.asarray(dims, np.int64), name="shape")
        else:
            new_shape = concat([sp_values.dense_shape[:-1], *[expand_dims(s, 0) for s in sizes]], 0)
        result = SparseTensor(new_indices, sp_values.values, new_shape)
        if already_sorted:
            return result
        ordered = sparse_reorder(result)
        ordered.indices.set_shape(new_indices.shape)  # (a reorder keeps the number of entries)
        ordered.values.set_shape(sp_values.values.shape)
        return SparseTensor(ordered.indices, ordered.values, new_shape)


# -- EditDistance ----------------------------------------------------------------------------------------
@registry.shape("EditDistance")
def _edit_distance_shape(inputs, attrs):
    hyp_shape, truth_shape = get_static_value(inputs[2]), get_static_value(inputs[5])
    if hyp_shape is not None and truth_shape is not None and len(hyp_shape) == len(truth_shape):
        return [(_dtypes.float32, TensorShape([int(d) for d in np.maximum(hyp_shape, truth_shape)[:-1]]))]
    rank = inputs[2].shape[0] if inputs[2].shape.ndims == 1 else None
    return [(_dtypes.float32, TensorShape(None if rank is None else [None] * (rank - 1)))]


def _sequences(indices, values):
    """``{prefix: [values in order of the last index]}`` of a SparseTensor's entries."""
    out = {}
    for i in row_major(indices):
        out.setdefault(tuple(int(c) for c in indices[i][:-1]), []).append(values[i])
    return out


def _levenshtein(a, b):
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (x != y))
    return row[-1]


@registry.kernel("EditDistance")
def _edit_distance_kernel(ctx, node, h_indices, h_values, h_shape, t_indices, t_values, t_shape):
    if len(h_shape) != len(t_shape):
        raise invalid_argument(
            node, f"hypothesis and truth must have the same rank, got {len(h_shape)} and {len(t_shape)}"
        )
    out_shape = np.maximum(h_shape, t_shape)[:-1]
    out = np.zeros(tuple(int(d) for d in out_shape), np.float32)
    hyp, truth = _sequences(h_indices, h_values), _sequences(t_indices, t_values)
    for prefix in set(hyp) | set(truth):
        a, b = hyp.get(prefix, []), truth.get(prefix, [])
        distance = float(_levenshtein(a, b))
        if node.attr["normalize"]:
            distance = distance / len(b) if b else np.inf
        out[prefix] = distance
    return out


registry.no_gradient("EditDistance")


def edit_distance(hypothesis, truth, normalize=True, name="edit_distance"):
    """`tf.edit_distance`: the Levenshtein distance between each sequence (the last axis) of
    `hypothesis` and of `truth`, both `SparseTensor`s of one dtype; with `normalize`, divided by
    the truth's length (inf for an empty truth).

    Raises:
        TypeError: inputs that are not `SparseTensor`s.
    """
    for what, sp in (("Hypothesis", hypothesis), ("Truth", truth)):
        if not isinstance(sp, (SparseTensor, SparseTensorValue)):
            raise TypeError(f"{what} must be a SparseTensor.")
    hypothesis, truth = as_sparse(hypothesis), as_sparse(truth)
    if hypothesis.dtype != truth.dtype:
        raise TypeError(
            f"tf.edit_distance: truth values are {truth.dtype.name}, hypothesis values "
            f"{hypothesis.dtype.name}; they must have one dtype"
        )
    inputs = [hypothesis.indices, hypothesis.values, hypothesis.dense_shape]
    inputs += [truth.indices, truth.values, truth.dense_shape]
    return registry.make_op("EditDistance", inputs, {"normalize": bool(normalize)}, name=name).outputs[0]


# -- tf.sparse.bincount: DenseCountSparseOutput, SparseCountSparseOutput --------------------------------
registry.shape("DenseCountSparseOutput")(
    lambda inputs, attrs: sparse_specs(attrs["output_type"], inputs[0].shape.ndims)
)
registry.shape("SparseCountSparseOutput")(
    lambda inputs, attrs: sparse_specs(
        attrs["output_type"], inputs[2].shape[0] if inputs[2].shape.ndims else None
    )
)


def _count(node, batches, values, weights, num_batches, one_d):
    """TF's count kernels: ``(indices, counts, dense_shape)`` of each batch's values' counts."""
    minlength, maxlength = node.attr["minlength"], node.attr["maxlength"]
    dtype = node.attr["output_type"].np
    if np.any(values < 0):
        raise invalid_argument(node, "Input values must all be non-negative")
    keep = (values >= 0) & ((values < maxlength) if maxlength > 0 else True)
    batches, values = batches[keep], values[keep].astype(np.int64)
    weights = weights[keep] if weights.size else np.ones(len(values), dtype)
    counts = {}
    for b, v, w in zip(batches.tolist(), values.tolist(), weights):
        counts[b, v] = 1 if node.attr["binary_output"] else counts.get((b, v), 0) + w
    max_seen = max(values.tolist(), default=0)
    size = maxlength if maxlength > 0 else max(max_seen + 1, minlength)
    keys = sorted(counts)
    if one_d:
        indices = np.asarray([[v] for _, v in keys], np.int64).reshape(-1, 1)
        shape = [size]
    else:
        indices = np.asarray(keys, np.int64).reshape(-1, 2)
        shape = [num_batches, size]
    return indices, np.asarray([counts[k] for k in keys], dtype), np.asarray(shape, np.int64)


@registry.kernel("DenseCountSparseOutput")
def _dense_count_kernel(ctx, node, values, weights):
    values, weights = np.asarray(values), np.asarray(weights)
    if values.ndim not in (1, 2):
        raise invalid_argument(node, f"Input must be a 1 or 2-dimensional tensor. Got: {values.ndim}")
    if weights.size and weights.shape != values.shape:
        raise invalid_argument(node, f"Weights and values must have the same shape, got {weights.shape}")
    batches = (
        np.repeat(np.arange(len(values)), values.shape[1]) if values.ndim == 2 else np.zeros(values.size, int)
    )
    w = weights.reshape(-1) if weights.size else weights
    return _count(node, batches, values.reshape(-1), w, len(values), values.ndim == 1)


@registry.kernel("SparseCountSparseOutput")
def _sparse_count_kernel(ctx, node, indices, values, dense_shape, weights):
    values, weights = np.asarray(values), np.asarray(weights)
    one_d = len(dense_shape) == 1
    batches = np.zeros(len(values), int) if one_d else np.asarray(indices)[:, 0]
    return _count(node, batches, values, weights, int(dense_shape[0]), one_d)


for _t in ("DenseCountSparseOutput", "SparseCountSparseOutput", "SparseCrossV2", "SparseCross"):
    registry.no_gradient(_t)


def bincount(values, weights=None, axis=0, minlength=None, maxlength=None, binary_output=False, name=None):
    """`tf.sparse.bincount`: a `SparseTensor` of how often each value occurs in `values` (dense
    or sparse, non-negative ints): over everything (``axis=0``) or per row (``axis=-1``); summed
    `weights` instead of counts, or 1 for present values with `binary_output`.

    Raises:
        ValueError: an `axis` other than 0 or -1.
    """
    if axis is None:
        axis = 0
    if axis not in (0, -1):
        raise ValueError(
            f"Unsupported value for argument axis={axis}. Only 0 and -1 are currently supported."
        )
    with name_scope(name or "count"):
        sparse = isinstance(values, (SparseTensor, SparseTensorValue))
        values = as_sparse(values) if sparse else convert_to_tensor(values, name="values")
        if weights is not None:
            weights = convert_to_tensor(weights.values if isinstance(weights, SparseTensor) else weights)
        if axis == 0 and sparse:
            values, sparse = values.values, False
        elif axis == 0:
            values = reshape(values, [-1])
            weights = None if weights is None else reshape(weights, [-1])
        dtype = values.dtype if weights is None else weights.dtype
        weights = convert_to_tensor(np.zeros(0, dtype.np), dtype=dtype) if weights is None else weights
        attrs = {
            "minlength": -1 if minlength is None else int(minlength),
            "maxlength": -1 if maxlength is None else int(maxlength),
            "binary_output": bool(binary_output),
            "output_type": dtype,
        }
        if sparse:
            inputs = [values.indices, values.values, values.dense_shape, weights]
            op = registry.make_op("SparseCountSparseOutput", inputs, attrs)
        else:
            op = registry.make_op("DenseCountSparseOutput", [values, weights], attrs)
        return SparseTensor(*op.outputs)


# -- tf.sparse.cross: SparseCrossV2 ---------------------------------------------------------------------
@registry.shape("SparseCrossV2")
def _cross_shape(inputs, attrs):
    return sparse_specs(_dtypes.string, 2)


registry.shape("SparseCross")(lambda inputs, attrs: sparse_specs(attrs["out_type"], 2))


def _feature_rows(args, n_sparse):
    """Each input's features per row (sparse inputs first, in order of their indices)."""
    columns, batch = [], 0
    for c in range(n_sparse):
        indices, values, shape = args[c], args[n_sparse + c], args[2 * n_sparse + c]
        batch = int(shape[0])
        rows = [[] for _ in range(batch)]
        for i in row_major(indices):
            rows[int(indices[i][0])].append(values[i])
        columns.append(rows)
    for dense in args[3 * n_sparse :]:
        dense = np.asarray(dense)
        batch = len(dense)
        columns.append([list(row) for row in dense.reshape(batch, -1)])
    return columns, batch


def _crossed(columns, batch, combine, dtype):
    """``(indices, values, dense_shape)`` of each row's combinations ``combine(features)``."""
    out_indices, out_values, width = [], [], 0
    for b in range(batch):
        crosses = [combine(p) for p in itertools.product(*(column[b] for column in columns))]
        out_indices += [[b, j] for j in range(len(crosses))]
        out_values += crosses
        width = max(width, len(crosses))
    values = np.empty(len(out_values), dtype)
    values[:] = out_values
    return np.asarray(out_indices, np.int64).reshape(-1, 2), values, np.asarray([batch, width], np.int64)


def _as_text(value):
    return value if isinstance(value, bytes) else str(value).encode()


@registry.kernel("SparseCrossV2")
def _cross_kernel(ctx, node, *args):
    columns, batch = _feature_rows(args[:-1], node.attr["N"])
    separator = _as_text(np.asarray(args[-1]).item())
    return _crossed(columns, batch, lambda p: separator.join(_as_text(v) for v in p), object)


_MASK64 = (1 << 64) - 1
_K_MUL = 0xC6A4A7935BD1E995


def _fingerprint_cat64(fp1, fp2):
    """TF's ``FingerprintCat64`` (tensorflow/core/platform/fingerprint.h)."""
    result = fp1 ^ _K_MUL
    mixed = (fp2 * _K_MUL) & _MASK64
    result ^= ((mixed ^ (mixed >> 47)) * _K_MUL) & _MASK64
    result = (result * _K_MUL) & _MASK64
    result = ((result ^ (result >> 47)) * _K_MUL) & _MASK64
    return result ^ (result >> 47)


def _feature_hash(value):
    if isinstance(value, bytes):
        return fingerprint64(value)
    return int(value) & _MASK64  # (an int64 feature is its own hash, as TF's)


@registry.kernel("SparseCross")
def _cross_hashed_kernel(ctx, node, *args):
    columns, batch = _feature_rows(args, node.attr["N"])
    num_buckets, key = node.attr["num_buckets"], node.attr["hash_key"]
    modulus = num_buckets if num_buckets > 0 else (1 << 63) - 1

    def combine(features):
        h = key
        for v in features:
            h = _fingerprint_cat64(h, _feature_hash(v))
        return h % modulus

    return _crossed(columns, batch, combine, np.int64)


def _cross_inputs(inputs):
    if not isinstance(inputs, (list, tuple)):
        raise TypeError("Inputs must be a list")
    if not all(isinstance(i, (Tensor, SparseTensor)) for i in inputs):
        raise TypeError("All inputs must be Tensor or SparseTensor.")
    sparse = [i for i in inputs if isinstance(i, SparseTensor)]
    dense = [i for i in inputs if not isinstance(i, SparseTensor)]
    for t in [s.values for s in sparse] + dense:
        if t.dtype != _dtypes.string and not t.dtype.is_integer:
            raise TypeError(f"tf.sparse.cross: inputs must be string or integer tensors, got {t.dtype.name}")
    values = [
        v if v.dtype == _dtypes.string else math_ops.cast(v, _dtypes.int64)
        for v in (s.values for s in sparse)
    ]
    dense = [d if d.dtype == _dtypes.string else math_ops.cast(d, _dtypes.int64) for d in dense]
    tensors = [s.indices for s in sparse] + values + [s.dense_shape for s in sparse] + dense
    types = {
        "N": len(sparse),
        "sparse_types": [v.dtype for v in values],
        "dense_types": [d.dtype for d in dense],
    }
    return tensors, types  # (TF's attrs of SparseCross / SparseCrossV2)


def cross(inputs, name=None, separator=None):
    """`tf.sparse.cross`: a string `SparseTensor` holding, per row, every combination of the
    features of `inputs` (`SparseTensor`s first, then dense tensors; strings or ints) joined
    by `separator` (``"_X_"``).

    Raises:
        TypeError: `inputs` that is not a list of tensors, or of other dtypes than string and ints.
    """
    tensors, types = _cross_inputs(inputs)
    sep = convert_to_tensor("_X_" if separator is None else separator, dtype=_dtypes.string, name="separator")
    op = registry.make_op("SparseCrossV2", [*tensors, sep], types, name=name or "SparseCross")
    return SparseTensor(*op.outputs)


def cross_hashed(inputs, num_buckets=0, hash_key=None, name=None):
    """`tf.sparse.cross_hashed`: `cross`, each combination an int64 hash instead of a string:
    TF's ``FingerprintCat64`` chain from `hash_key` over the features' FarmHash ``Fingerprint64``
    (an int feature is its own hash), modulo `num_buckets` (when > 0).

    Raises:
        TypeError: as `cross`.
    """
    tensors, types = _cross_inputs(inputs)
    attrs = {
        **types,
        "hashed_output": True,
        "num_buckets": int(num_buckets),
        "hash_key": _DEFAULT_HASH_KEY if hash_key is None else int(hash_key),
        "out_type": _dtypes.int64,
        "internal_type": _dtypes.int64,
    }
    op = registry.make_op("SparseCross", tensors, attrs, name=name or "SparseCross")
    return SparseTensor(*op.outputs)


_DEFAULT_HASH_KEY = 0xDECAFCAFFE  # (TF's sparse_ops._DEFAULT_HASH_KEY)
