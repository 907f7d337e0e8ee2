"""`tf.linalg`: TF 2's linear-algebra names (`det`, `inv`, `diag` as `matrix_diag`, ...) over
nbdist's ops (ops/linalg_ops.py, matmul, clip_ops' global_norm)."""

from nbdist._facade import unsupported as _unsupported
from nbdist.ops.clip_ops import global_norm
from nbdist.ops.linalg_ops import eye, matrix_transpose, trace
from nbdist.ops.linalg_ops import matrix_determinant as det
from nbdist.ops.linalg_ops import matrix_diag as diag
from nbdist.ops.linalg_ops import matrix_diag_part as diag_part
from nbdist.ops.linalg_ops import matrix_inverse as inv
from nbdist.ops.linalg_ops import matrix_set_diag as set_diag
from nbdist.ops.linalg_ops import matrix_transpose as transpose
from nbdist.ops.matmul_ops import matmul
from nbdist.ops.normalization_ops import l2_normalize

__all__ = [
    "det",
    "diag",
    "diag_part",
    "eye",
    "global_norm",
    "inv",
    "l2_normalize",
    "matmul",
    "matrix_transpose",
    "set_diag",
    "trace",
    "transpose",
]


def __getattr__(name):
    return _unsupported("tf.linalg", name)
