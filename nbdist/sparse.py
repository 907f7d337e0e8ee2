"""`tf.sparse`: the `SparseTensor` type and TF's names at that path over ops/sparse_tensor.py,
ops/sparse_ops.py (structure) and ops/sparse_math_ops.py (arithmetic): `add` is `sparse_add`,
`matmul` and `sparse_dense_matmul` are `sparse_tensor_dense_matmul`, ... as TF's."""

from nbdist._facade import unsupported as _unsupported
from nbdist.ops.accumulator_ops import SparseConditionalAccumulator
from nbdist.ops.sparse_extra_ops import bincount, cross, cross_hashed
from nbdist.ops.sparse_extra_ops import sparse_merge as merge
from nbdist.ops.sparse_extra_ops import sparse_placeholder as placeholder
from nbdist.ops.sparse_math_ops import sparse_reduce_max as reduce_max
from nbdist.ops.sparse_math_ops import sparse_reduce_max_sparse as reduce_max_sparse
from nbdist.ops.sparse_math_ops import sparse_reduce_sum as reduce_sum
from nbdist.ops.sparse_math_ops import sparse_reduce_sum_sparse as reduce_sum_sparse
from nbdist.ops.sparse_math_ops import sparse_segment_mean as segment_mean
from nbdist.ops.sparse_math_ops import sparse_segment_sqrt_n as segment_sqrt_n
from nbdist.ops.sparse_math_ops import sparse_segment_sum as segment_sum
from nbdist.ops.sparse_math_ops import sparse_softmax as softmax
from nbdist.ops.sparse_math_ops import sparse_tensor_dense_matmul as matmul
from nbdist.ops.sparse_math_ops import sparse_tensor_dense_matmul as sparse_dense_matmul
from nbdist.ops.sparse_ops import from_dense
from nbdist.ops.sparse_ops import sparse_add as add
from nbdist.ops.sparse_ops import sparse_concat as concat
from nbdist.ops.sparse_ops import sparse_expand_dims as expand_dims
from nbdist.ops.sparse_ops import sparse_eye as eye
from nbdist.ops.sparse_ops import sparse_fill_empty_rows as fill_empty_rows
from nbdist.ops.sparse_ops import sparse_mask as mask
from nbdist.ops.sparse_ops import sparse_maximum as maximum
from nbdist.ops.sparse_ops import sparse_minimum as minimum
from nbdist.ops.sparse_ops import sparse_reorder as reorder
from nbdist.ops.sparse_ops import sparse_reset_shape as reset_shape
from nbdist.ops.sparse_ops import sparse_reshape as reshape
from nbdist.ops.sparse_ops import sparse_retain as retain
from nbdist.ops.sparse_ops import sparse_slice as slice  # noqa: A004 - TF's name
from nbdist.ops.sparse_ops import sparse_split as split
from nbdist.ops.sparse_ops import sparse_to_indicator as to_indicator
from nbdist.ops.sparse_ops import sparse_transpose as transpose
from nbdist.ops.sparse_tensor import SparseTensor, to_dense

__all__ = [
    "SparseConditionalAccumulator",
    "SparseTensor",
    "add",
    "bincount",
    "concat",
    "cross",
    "cross_hashed",
    "expand_dims",
    "eye",
    "fill_empty_rows",
    "from_dense",
    "mask",
    "matmul",
    "maximum",
    "merge",
    "minimum",
    "placeholder",
    "reduce_max",
    "reduce_max_sparse",
    "reduce_sum",
    "reduce_sum_sparse",
    "reorder",
    "reset_shape",
    "reshape",
    "retain",
    "segment_mean",
    "segment_sqrt_n",
    "segment_sum",
    "slice",
    "softmax",
    "sparse_dense_matmul",
    "split",
    "to_dense",
    "to_indicator",
    "transpose",
]


def __getattr__(name):
    return _unsupported("tf.sparse", name)
