"""`tf.linalg`: TF 2's linear-algebra names (`det`, `inv`, `diag` as `matrix_diag`, ...) over
nbdist's ops (ops/linalg_ops.py, linalg_solve_ops.py, linalg_decomp_ops.py,
einsum_ops.py, matmul, clip_ops' global_norm)."""

from nbdist._facade import unsupported as _unsupported
from nbdist.ops.clip_ops import global_norm
from nbdist.ops.einsum_ops import einsum, matvec, tensordot
from nbdist.ops.linalg_decomp_ops import adjoint, cross, lu, matrix_rank, norm, normalize, pinv, qr, svd
from nbdist.ops.linalg_decomp_ops import self_adjoint_eig as eigh
from nbdist.ops.linalg_decomp_ops import self_adjoint_eigvals as eigvalsh
from nbdist.ops.linalg_lu_tridiag_ops import (
    eigh_tridiagonal,
    lu_matrix_inverse,
    lu_reconstruct,
    lu_solve,
    tridiagonal_matmul,
    tridiagonal_solve,
)
from nbdist.ops.linalg_matfunc_ops import expm, logm, sqrtm
from nbdist.ops.linalg_ops import diag as tensor_diag
from nbdist.ops.linalg_ops import diag_part as tensor_diag_part
from nbdist.ops.linalg_ops import eye, matrix_transpose, trace
from nbdist.ops.linalg_ops import matrix_determinant as det
from nbdist.ops.linalg_ops import matrix_diag as diag
from nbdist.ops.linalg_ops import matrix_diag_part as diag_part
from nbdist.ops.linalg_ops import matrix_inverse as inv
from nbdist.ops.linalg_ops import matrix_set_diag as set_diag
from nbdist.ops.linalg_ops import matrix_transpose as transpose
from nbdist.ops.linalg_solve_ops import cholesky, cholesky_solve, logdet, slogdet
from nbdist.ops.linalg_solve_ops import matrix_band_part as band_part
from nbdist.ops.linalg_solve_ops import matrix_solve as solve
from nbdist.ops.linalg_solve_ops import matrix_solve_ls as lstsq
from nbdist.ops.linalg_solve_ops import matrix_triangular_solve as triangular_solve
from nbdist.ops.linear_operator_base import LinearOperator
from nbdist.ops.linear_operator_basic import (
    LinearOperatorDiag,
    LinearOperatorFullMatrix,
    LinearOperatorIdentity,
    LinearOperatorLowerTriangular,
    LinearOperatorScaledIdentity,
    LinearOperatorZeros,
)
from nbdist.ops.linear_operator_circulant import (
    LinearOperatorCirculant,
    LinearOperatorCirculant2D,
    LinearOperatorCirculant3D,
)
from nbdist.ops.linear_operator_combinations import (
    LinearOperatorAdjoint,
    LinearOperatorBlockDiag,
    LinearOperatorComposition,
    LinearOperatorInversion,
    LinearOperatorKronecker,
    LinearOperatorLowRankUpdate,
)
from nbdist.ops.linear_operator_structured import (
    LinearOperatorBlockLowerTriangular,
    LinearOperatorHouseholder,
    LinearOperatorPermutation,
    LinearOperatorToeplitz,
    LinearOperatorTridiag,
)
from nbdist.ops.matmul_ops import matmul
from nbdist.ops.normalization_ops import l2_normalize

__all__ = [
    "LinearOperator",
    "LinearOperatorAdjoint",
    "LinearOperatorBlockDiag",
    "LinearOperatorBlockLowerTriangular",
    "LinearOperatorCirculant",
    "LinearOperatorCirculant2D",
    "LinearOperatorCirculant3D",
    "LinearOperatorComposition",
    "LinearOperatorDiag",
    "LinearOperatorFullMatrix",
    "LinearOperatorHouseholder",
    "LinearOperatorIdentity",
    "LinearOperatorInversion",
    "LinearOperatorKronecker",
    "LinearOperatorLowRankUpdate",
    "LinearOperatorLowerTriangular",
    "LinearOperatorPermutation",
    "LinearOperatorScaledIdentity",
    "LinearOperatorToeplitz",
    "LinearOperatorTridiag",
    "LinearOperatorZeros",
    "adjoint",
    "band_part",
    "cholesky",
    "cholesky_solve",
    "cross",
    "det",
    "diag",
    "diag_part",
    "eigh",
    "eigh_tridiagonal",
    "eigvalsh",
    "einsum",
    "expm",
    "eye",
    "global_norm",
    "inv",
    "l2_normalize",
    "logdet",
    "logm",
    "lstsq",
    "lu",
    "lu_matrix_inverse",
    "lu_reconstruct",
    "lu_solve",
    "matmul",
    "matrix_rank",
    "matrix_transpose",
    "matvec",
    "norm",
    "normalize",
    "pinv",
    "qr",
    "set_diag",
    "slogdet",
    "solve",
    "sqrtm",
    "svd",
    "tensor_diag",
    "tensor_diag_part",
    "tensordot",
    "trace",
    "transpose",
    "triangular_solve",
    "tridiagonal_matmul",
    "tridiagonal_solve",
]


def __getattr__(name):
    return _unsupported("tf.linalg", name)
