"""`tf.einsum` (op `Einsum`, numpy's kernel, TF's gradient: each operand's gradient is one more
einsum) and what stands on it: `tf.tensordot`, `tf.linalg.matvec` and `batch_matmul`, the
batched product the linear-algebra gradients use (nbdist's `tf.matmul` is rank 2)."""

import string

import numpy as np

from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops._shapes import broadcast_shape
from nbdist.ops.constant_op import convert_n, convert_to_tensor

__all__ = ["einsum", "tensordot"]


def _parse(equation, count):
    """``(input subscripts, output subscripts)`` of an equation, its implicit output made explicit
    (numpy's rule: the letters seen once, sorted, after the ellipsis if any)."""
    eq = equation.replace(" ", "")
    lhs, arrow, out = eq.partition("->")
    ins = lhs.split(",")
    if len(ins) != count:
        raise ValueError(f"tf.einsum: equation {equation!r} names {len(ins)} operands, got {count}")
    if not arrow:
        letters = "".join(s.replace("...", "") for s in ins)
        out = ("..." if any("..." in s for s in ins) else "") + "".join(
            sorted(c for c in set(letters) if letters.count(c) == 1)
        )
    for s in [*ins, out]:
        if not set(s.replace("...", "")) <= set(string.ascii_letters) or s.count("...") > 1:
            raise ValueError(f"tf.einsum: invalid subscripts {s!r} in equation {equation!r}")
    return ins, out


def _split(subs, dims):
    """Letter -> dim and the ellipsis' dims of one operand of known rank."""
    pre, ell, post = subs.partition("...")
    n_ell = len(dims) - len(pre) - len(post)
    if n_ell < 0 or (not ell and n_ell):
        raise ValueError(f"tf.einsum: subscripts {subs!r} do not fit an operand of rank {len(dims)}")
    letters = dict(zip(pre, dims[: len(pre)]))
    letters.update(zip(post, dims[len(dims) - len(post) :]))
    return letters, dims[len(pre) : len(pre) + n_ell]


@registry.shape("Einsum")
def _einsum_shape(inputs, attrs):
    ins, out = _parse(attrs["equation"], len(inputs))
    if any(t.dtype != inputs[0].dtype for t in inputs):
        raise TypeError(f"tf.einsum: operands must have one dtype, got {[t.dtype.name for t in inputs]}")
    if any(t.shape.ndims is None for t in inputs):
        return [(inputs[0].dtype, TensorShape(None))]
    dims, ellipsis = {}, TensorShape([])
    for subs, t in zip(ins, inputs):
        letters, ell = _split(subs, t.shape.as_list())
        for c, d in letters.items():
            if dims.get(c) not in (None, 1) and d not in (None, 1) and dims[c] != d:
                raise ValueError(f"tf.einsum: {c!r} is {dims[c]} and {d} in {attrs['equation']!r}")
            dims[c] = d if dims.get(c) in (None, 1) else dims[c]
        ellipsis = broadcast_shape(ellipsis, TensorShape(ell))
    pre, _, post = out.partition("...")
    ell = ellipsis.as_list() if "..." in out else []
    return [(inputs[0].dtype, TensorShape([*(dims[c] for c in pre), *ell, *(dims[c] for c in post)]))]


registry.kernel("Einsum")(
    lambda ctx, node, *xs: np.asarray(np.einsum(node.attr["equation"], *xs), dtype=xs[0].dtype)
)


@registry.gradient("Einsum")
def _einsum_grad(op, grad):
    """Operand i's gradient: the einsum of the output's gradient and the other operands into i's
    subscripts; what only operand i had (summed in the forward) is broadcast back."""
    from nbdist.ops.broadcast_ops import sum_to_shape  # noqa: PLC0415
    from nbdist.ops.cast_select_ops import ones_like  # noqa: PLC0415
    from nbdist.ops.reshape_ops import expand_dims  # noqa: PLC0415

    ins, out = _parse(op.get_attr("equation"), len(op.inputs))
    grads = []
    for i, x in enumerate(op.inputs):
        subs, others = ins[i], ins[:i] + ins[i + 1 :]
        letters = subs.replace("...", "")
        if len(set(letters)) != len(letters):
            raise NotImplementedError(f"tf.einsum's gradient: repeated subscripts in {subs!r} (a diagonal)")
        seen = out + "".join(others)
        pre, ell, post = subs.partition("...")
        keep_ell = bool(ell) and "..." in seen
        kept = (
            "".join(c for c in pre if c in seen)
            + ("..." if keep_ell else "")
            + "".join(c for c in post if c in seen)
        )
        g = einsum(f"{','.join([out, *others])}->{kept}", grad, *(op.inputs[:i] + op.inputs[i + 1 :]))
        if kept != subs:  # axes summed in the forward only in this operand: broadcast back
            if x.shape.ndims is None:
                raise NotImplementedError(f"tf.einsum's gradient: {subs!r} needs the operand's static rank")
            full = pre + "." * (x.shape.ndims - len(pre) - len(post)) + post
            for pos, c in enumerate(full):
                if not (c in seen or (c == "." and keep_ell)):
                    g = expand_dims(g, pos)
            g = g * ones_like(x)
        grads.append(sum_to_shape(g, x))
    return grads


def einsum(equation, *inputs, **kwargs):
    """`tf.einsum`: numpy's Einstein summation (``"...ij,...jk->...ik"``; the implicit form's
    output is numpy's and TF's: the letters seen once, sorted).

    Raises:
        ValueError: subscripts that do not fit the operands' ranks or dims.
    """
    name = kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"tf.einsum: unexpected arguments {sorted(kwargs)}")
    xs = convert_n(list(inputs))
    ins, out = _parse(equation, len(xs))
    explicit = f"{','.join(ins)}->{out}"
    return registry.make_op("Einsum", xs, {"equation": explicit}, name=name or "einsum").outputs[0]


def batch_matmul(a, b, adjoint_a=False, adjoint_b=False, name=None):
    """``a @ b`` over leading (broadcast) batch dimensions, either side transposed (real dtypes)."""
    sa = "...ji" if adjoint_a else "...ij"
    sb = "...kj" if adjoint_b else "...jk"
    return einsum(f"{sa},{sb}->...ik", a, b, name=name or "MatMul")


def matvec(a, b, transpose_a=False, adjoint_a=False, a_is_sparse=False, b_is_sparse=False, name=None):
    """`tf.linalg.matvec`: each matrix of `a` (optionally transposed) times each vector of `b`."""
    sa = "...ji" if (transpose_a or adjoint_a) else "...ij"
    return einsum(f"{sa},...j->...i", a, b, name=name or "MatVec")


def tensordot(a, b, axes, name=None):
    """`tf.tensordot`: sums `a`'s `axes[0]` against `b`'s `axes[1]` (an int ``n``: `a`'s last n
    against `b`'s first n); the free axes of `a` then of `b`. Needs both ranks statically.

    Raises:
        ValueError: unknown ranks or axes lists of different lengths.
    """
    a, b = convert_to_tensor(a, name="a"), convert_to_tensor(b, name="b")
    if a.shape.ndims is None or b.shape.ndims is None:
        raise ValueError("tf.tensordot: nbdist needs the operands' ranks statically")
    ra, rb = a.shape.ndims, b.shape.ndims
    if isinstance(axes, (int, np.integer)) or np.ndim(axes) == 0:
        n = int(axes)
        if n < 0 or n > min(ra, rb):
            raise ValueError(f"tf.tensordot: axes must be in [0, {min(ra, rb)}], got {n}")
        axes_a, axes_b = list(range(ra - n, ra)), list(range(n))
    else:
        axes_a, axes_b = ([int(v) for v in np.ravel(ax)] for ax in axes)
    if len(axes_a) != len(axes_b):
        raise ValueError(f"tf.tensordot: axes {axes!r} pair {len(axes_a)} with {len(axes_b)} axes")
    letters = iter(string.ascii_letters)
    sa = [next(letters) for _ in range(ra)]
    sb = [next(letters) for _ in range(rb)]
    for i, j in zip(axes_a, axes_b):
        sb[j % rb] = sa[i % ra]
    contracted = {sa[i % ra] for i in axes_a}
    out = [c for c in sa if c not in contracted] + [c for c in sb if c not in contracted]
    return einsum(f"{''.join(sa)},{''.join(sb)}->{''.join(out)}", a, b, name=name or "Tensordot")
