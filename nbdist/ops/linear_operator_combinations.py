"""`tf.linalg.LinearOperator`s made of others: `LinearOperatorComposition` (a product),
`LinearOperatorAdjoint`, `LinearOperatorInversion`, `LinearOperatorBlockDiag`,
`LinearOperatorKronecker`, `LinearOperatorLowRankUpdate` (``L + U D V^H``), acting through the
operators they hold as TF's classes do."""

from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops._shapes import broadcast_shape
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.linear_operator_base import LinearOperator, adjoint_matrix, matmul_matrices, register_derived

__all__ = [
    "LinearOperatorAdjoint",
    "LinearOperatorBlockDiag",
    "LinearOperatorComposition",
    "LinearOperatorInversion",
    "LinearOperatorKronecker",
    "LinearOperatorLowRankUpdate",
]


def _batch(operators):
    shape = TensorShape([])
    for op in operators:
        if op.batch_shape.ndims is None:
            return None
        shape = broadcast_shape(shape, op.batch_shape)
    return shape.as_list()


def _check_operators(operators, what):
    operators = list(operators)
    if not operators:
        raise ValueError(f"Expected a non-empty list of operators. Found: {operators}")
    dtypes = {op.dtype for op in operators}
    if len(dtypes) > 1:
        raise TypeError(
            f"Expected all operators to have the same dtype.  Found {sorted(d.name for d in dtypes)}"
        )
    return operators


def _all(values):
    return True if all(v is True for v in values) else None


class LinearOperatorComposition(LinearOperator):
    """`tf.linalg.LinearOperatorComposition`: ``op_1 op_2 ... op_J``."""

    def __init__(
        self,
        operators,
        is_non_singular=None,
        is_self_adjoint=None,
        is_positive_definite=None,
        is_square=None,
        name=None,
    ):
        self._operators = _check_operators(operators, "composition")
        for left, right in zip(self._operators, self._operators[1:]):
            d, r = left.domain_dimension, right.range_dimension
            if d is not None and r is not None and d != r:
                raise ValueError(
                    f"Operators are incompatible. Expected `x` to have dimension {d} but got {r}."
                )
        if all(op.is_non_singular for op in self._operators):
            if is_non_singular is False:
                raise ValueError("The composition of non-singular operators is always non-singular.")
            is_non_singular = True
        name = name or "_o_".join(op.name for op in self._operators)
        super().__init__(
            self._operators[0].dtype,
            [],
            is_non_singular,
            is_self_adjoint,
            is_positive_definite,
            is_square,
            name,
        )

    operators = property(lambda self: list(self._operators))

    def _shape(self):
        batch = _batch(self._operators)
        if batch is None:
            return TensorShape(None)
        return TensorShape([*batch, self._operators[0].range_dimension, self._operators[-1].domain_dimension])

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        ops = self._operators if adjoint else self._operators[::-1]
        x = ops[0].matmul(x, adjoint=adjoint, adjoint_arg=adjoint_arg)
        for op in ops[1:]:
            x = op.matmul(x, adjoint=adjoint)
        return x

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        ops = self._operators[::-1] if adjoint else self._operators
        rhs = ops[0].solve(rhs, adjoint=adjoint, adjoint_arg=adjoint_arg)
        for op in ops[1:]:
            rhs = op.solve(rhs, adjoint=adjoint)
        return rhs

    def _determinant(self):
        if not all(op.is_square for op in self._operators):
            return super()._determinant()
        result = self._operators[0].determinant()
        for op in self._operators[1:]:
            result = result * op.determinant()
        return result

    def _log_abs_determinant(self):
        if not all(op.is_square for op in self._operators):
            return super()._log_abs_determinant()
        result = self._operators[0].log_abs_determinant()
        for op in self._operators[1:]:
            result = result + op.log_abs_determinant()
        return result


class LinearOperatorAdjoint(LinearOperator):
    """`tf.linalg.LinearOperatorAdjoint`: ``operator^H``."""

    def __init__(
        self,
        operator,
        is_non_singular=None,
        is_self_adjoint=None,
        is_positive_definite=None,
        is_square=None,
        name=None,
    ):
        self._operator = operator
        hints = (
            operator.is_non_singular,
            operator.is_self_adjoint,
            operator.is_positive_definite,
            operator.is_square,
        )
        given = (is_non_singular, is_self_adjoint, is_positive_definite, is_square)
        merged = [h if g is None else g for g, h in zip(given, hints)]
        super().__init__(operator.dtype, [], *merged, name or f"{operator.name}_adjoint")

    operator = property(lambda self: self._operator)

    def _shape(self):
        s = self._operator.shape
        return s if s.ndims is None else TensorShape([*s.dims[:-2], s.dims[-1], s.dims[-2]])

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        return self._operator.matmul(x, adjoint=not adjoint, adjoint_arg=adjoint_arg)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        return self._operator.solve(rhs, adjoint=not adjoint, adjoint_arg=adjoint_arg)

    def _to_dense(self):
        return adjoint_matrix(self._operator.to_dense())

    def _determinant(self):
        from nbdist.ops.complex_ops import conj  # noqa: PLC0415

        det = self._operator.determinant()
        return conj(det) if det.dtype.is_complex else det

    def _log_abs_determinant(self):
        return self._operator.log_abs_determinant()


class LinearOperatorInversion(LinearOperator):
    """`tf.linalg.LinearOperatorInversion`: ``operator^-1``, its matmul the operator's solve."""

    def __init__(
        self,
        operator,
        is_non_singular=None,
        is_self_adjoint=None,
        is_positive_definite=None,
        is_square=None,
        name=None,
    ):
        if operator.is_non_singular is False or is_non_singular is False:
            raise ValueError("operator and supplied hints must be non-singular")
        if operator.is_square is False or is_square is False:
            raise ValueError("operator and supplied hints must be square")
        self._operator = operator
        hints = (operator.is_non_singular, operator.is_self_adjoint, operator.is_positive_definite, True)
        given = (is_non_singular, is_self_adjoint, is_positive_definite, is_square)
        merged = [h if g is None else g for g, h in zip(given, hints)]
        super().__init__(operator.dtype, [], *merged, name or f"{operator.name}_inv")

    operator = property(lambda self: self._operator)

    def _shape(self):
        return self._operator.shape

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        return self._operator.solve(x, adjoint=adjoint, adjoint_arg=adjoint_arg)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        return self._operator.matmul(rhs, adjoint=adjoint, adjoint_arg=adjoint_arg)

    def _determinant(self):
        return 1.0 / self._operator.determinant()

    def _log_abs_determinant(self):
        return -self._operator.log_abs_determinant()

    def inverse(self, name="inverse"):
        return self._operator


class LinearOperatorBlockDiag(LinearOperator):
    """`tf.linalg.LinearOperatorBlockDiag`: the square operators along a block diagonal."""

    def __init__(
        self,
        operators,
        is_non_singular=None,
        is_self_adjoint=None,
        is_positive_definite=None,
        is_square=True,
        name=None,
    ):
        self._operators = _check_operators(operators, "block diagonal")
        hints = [_all(op.is_non_singular for op in self._operators)]
        hints += [_all(op.is_self_adjoint for op in self._operators)]
        hints += [_all(op.is_positive_definite for op in self._operators)]
        given = (is_non_singular, is_self_adjoint, is_positive_definite)
        merged = [h if g is None else g for g, h in zip(given, hints)]
        name = name or "_ds_".join(op.name for op in self._operators)
        super().__init__(self._operators[0].dtype, [], *merged, is_square, name)

    operators = property(lambda self: list(self._operators))

    def _dims(self, attr):
        dims = [getattr(op, attr) for op in self._operators]
        if None in dims:
            raise ValueError(f"{self.name}: nbdist needs each block's dimensions statically")
        return dims

    def _shape(self):
        batch = _batch(self._operators)
        if batch is None:
            return TensorShape(None)
        return TensorShape([*batch, sum(self._dims("range_dimension")), sum(self._dims("domain_dimension"))])

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        from nbdist.ops.concat_slice_ops import concat  # noqa: PLC0415

        x = adjoint_matrix(x) if adjoint_arg else x
        sizes = self._dims("range_dimension" if adjoint else "domain_dimension")
        out, start = [], 0
        for op, size in zip(self._operators, sizes):
            out.append(op.matmul(x[..., start : start + size, :], adjoint=adjoint))
            start += size
        return concat(broadcast_batches(out), axis=-2)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        from nbdist.ops.concat_slice_ops import concat  # noqa: PLC0415

        rhs = adjoint_matrix(rhs) if adjoint_arg else rhs
        out, start = [], 0
        for op, size in zip(self._operators, self._dims("range_dimension")):
            out.append(op.solve(rhs[..., start : start + size, :], adjoint=adjoint))
            start += size
        return concat(broadcast_batches(out), axis=-2)

    def _to_dense(self):
        from nbdist.ops.concat_slice_ops import pad  # noqa: PLC0415

        cols, total, start, blocks = (
            self._dims("domain_dimension"),
            sum(self._dims("domain_dimension")),
            0,
            [],
        )
        for op, n in zip(self._operators, cols):
            dense = op.to_dense()
            rank = dense.shape.ndims
            blocks.append(pad(dense, [[0, 0]] * (rank - 1) + [[start, total - start - n]]))
            start += n
        from nbdist.ops.concat_slice_ops import concat  # noqa: PLC0415

        return concat(broadcast_batches(blocks), axis=-2)

    def _determinant(self):
        result = self._operators[0].determinant()
        for op in self._operators[1:]:
            result = result * op.determinant()
        return result

    def _log_abs_determinant(self):
        result = self._operators[0].log_abs_determinant()
        for op in self._operators[1:]:
            result = result + op.log_abs_determinant()
        return result

    def _diag_part(self):
        from nbdist.ops.concat_slice_ops import concat  # noqa: PLC0415

        parts = [op.diag_part() for op in self._operators]
        return concat(broadcast_batches(parts, trailing=1), axis=-1)


def broadcast_batches(tensors, trailing=2):
    """`tensors` with their batch dimensions (all but the last `trailing`) broadcast to one (a
    sum of zeros shaped as each batch, so unknown batch dimensions broadcast at run time too)."""
    from nbdist.ops.cast_select_ops import zeros_like  # noqa: PLC0415

    zero = None
    for t in tensors:
        corner = t[..., :1, :1] if trailing == 2 else t[..., :1]
        zero = zeros_like(corner) if zero is None else zero + zeros_like(corner)
    return [t + zero for t in tensors]


class LinearOperatorKronecker(LinearOperator):
    """`tf.linalg.LinearOperatorKronecker`: ``op_1 ⊗ op_2 ⊗ ...``."""

    def __init__(
        self,
        operators,
        is_non_singular=None,
        is_self_adjoint=None,
        is_positive_definite=None,
        is_square=None,
        name=None,
    ):
        self._operators = _check_operators(operators, "Kronecker")
        hints = [_all(op.is_non_singular for op in self._operators)]
        hints += [_all(op.is_self_adjoint for op in self._operators)]
        given = (is_non_singular, is_self_adjoint)
        merged = [h if g is None else g for g, h in zip(given, hints)]
        name = name or "_x_".join(op.name for op in self._operators)
        super().__init__(self._operators[0].dtype, [], *merged, is_positive_definite, is_square, name)

    operators = property(lambda self: list(self._operators))

    def _shape(self):
        batch = _batch(self._operators)
        rows = cols = 1
        for op in self._operators:
            if op.range_dimension is None or op.domain_dimension is None or batch is None:
                return TensorShape(None)
            rows, cols = rows * op.range_dimension, cols * op.domain_dimension
        return TensorShape([*batch, rows, cols])

    def _to_dense(self):
        from nbdist.ops.einsum_ops import einsum  # noqa: PLC0415
        from nbdist.ops.reshape_ops import reshape  # noqa: PLC0415

        dense = self._operators[0].to_dense()
        rows, cols = self._operators[0].range_dimension, self._operators[0].domain_dimension
        for op in self._operators[1:]:
            block = einsum("...ij,...kl->...ikjl", dense, op.to_dense())
            rows, cols = rows * op.range_dimension, cols * op.domain_dimension
            batch = block.shape.dims[:-4]
            dense = reshape(block, [*batch, rows, cols])
        return dense

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        return matmul_matrices(self._to_dense(), x, adjoint_a=adjoint, adjoint_b=adjoint_arg)

    def _determinant(self):
        n = self.domain_dimension
        result = None
        for op in self._operators:
            term = op.determinant() ** (n // op.domain_dimension)
            result = term if result is None else result * term
        return result

    def _log_abs_determinant(self):
        n = self.domain_dimension
        result = None
        for op in self._operators:
            term = op.log_abs_determinant() * float(n // op.domain_dimension)
            result = term if result is None else result + term
        return result


class LinearOperatorLowRankUpdate(LinearOperator):
    """`tf.linalg.LinearOperatorLowRankUpdate`: ``base_operator + U diag(diag_update) V^H``
    (``V = U`` when `v` is None; ``D = I`` when `diag_update` is None)."""

    def __init__(
        self,
        base_operator,
        u,
        diag_update=None,
        v=None,
        is_diag_update_positive=None,
        is_non_singular=None,
        is_self_adjoint=None,
        is_positive_definite=None,
        is_square=None,
        name="LinearOperatorLowRankUpdate",
    ):
        self._base_operator = base_operator
        self._u = convert_to_tensor(u, dtype=base_operator.dtype, name="u")
        self._v = self._u if v is None else convert_to_tensor(v, dtype=base_operator.dtype, name="v")
        self._diag_update = None
        if diag_update is not None:
            self._diag_update = convert_to_tensor(diag_update, dtype=base_operator.dtype, name="diag_update")
        self._is_diag_update_positive = is_diag_update_positive
        if v is None and is_self_adjoint is None and base_operator.is_self_adjoint:
            is_self_adjoint = True
        if (
            v is None
            and is_positive_definite is None
            and base_operator.is_positive_definite
            and (diag_update is None or is_diag_update_positive)
        ):
            is_positive_definite = True
        super().__init__(
            base_operator.dtype, [], is_non_singular, is_self_adjoint, is_positive_definite, is_square, name
        )

    base_operator = property(lambda self: self._base_operator)
    u = property(lambda self: self._u)
    v = property(lambda self: self._v)
    diag_update = property(lambda self: self._diag_update)
    is_diag_update_positive = property(lambda self: self._is_diag_update_positive)

    def _shape(self):
        s = self._base_operator.shape
        if s.ndims is None or self._u.shape.ndims is None:
            return TensorShape(None)
        batch = broadcast_shape(TensorShape(s.dims[:-2]), TensorShape(self._u.shape.dims[:-2]))
        return TensorShape([*batch.as_list(), *s.dims[-2:]])

    def _update(self):
        from nbdist.ops.reshape_ops import expand_dims  # noqa: PLC0415

        v = self._v if self._diag_update is None else self._v * expand_dims(self._diag_update, -2)
        return matmul_matrices(self._u, v, adjoint_b=True)

    def _to_dense(self):
        return self._base_operator.to_dense() + self._update()

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        return matmul_matrices(self._to_dense(), x, adjoint_a=adjoint, adjoint_b=adjoint_arg)


register_derived("composition", LinearOperatorComposition)
register_derived("adjoint", LinearOperatorAdjoint)
register_derived("inversion", LinearOperatorInversion)
