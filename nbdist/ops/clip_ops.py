"""Clipping: `tf.clip_by_value`, `tf.clip_by_norm`, `tf.clip_by_global_norm`, `tf.global_norm` (TF's
`clip_ops`).

All are compositions of existing ops, built as TF builds them (same name scopes, same
ops), so their gradients are those ops' gradients: `clip_by_value` passes the gradient
where ``min <= t <= max`` (bounds included, as TF's `Minimum`/`Maximum` gradients do) and
zero elsewhere.
"""

from collections.abc import Sequence

from nbdist.graph import graph as _graph
from nbdist.ops import array_ops, math_ops, nn_ops, reduction_ops
from nbdist.ops.constant_op import constant, convert_to_tensor

__all__ = ["clip_by_global_norm", "clip_by_norm", "clip_by_value", "global_norm"]


def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    """`tf.clip_by_value`: ``min(max(t, clip_value_min), clip_value_max)`` elementwise.

    Args:
        t: a Tensor.
        clip_value_min, clip_value_max: scalars or tensors broadcastable to `t`'s shape.
        name: the name of the result (default scope ``clip_by_value``).

    Returns:
        A Tensor of `t`'s shape and dtype.

    Raises:
        ValueError: if a bound would broadcast `t` to a larger shape.
    """
    with _graph.name_scope(name, "clip_by_value", [t, clip_value_min, clip_value_max]) as scope:
        values = convert_to_tensor(t, name="t")
        t_min = math_ops.minimum(values, clip_value_max)
        _check_not_broadcast(values, t_min)
        t_max = math_ops.maximum(t_min, clip_value_min, name=scope)
        _check_not_broadcast(values, t_max)
    return t_max


def _check_not_broadcast(values, clipped):
    if not values.shape.is_compatible_with(clipped.shape):
        raise ValueError(
            f"clip_by_value: the bounds would broadcast {values.name} of shape {values.shape} to "
            f"{clipped.shape}; give bounds that are scalars or of the clipped tensor's shape"
        )


def clip_by_norm(t, clip_norm, axes=None, name=None):
    """`tf.clip_by_norm`: `t` scaled so that its L2 norm (over `axes`, default all) is at most `clip_norm`.

    As TF, the norm's gradient is kept finite where it is 0 (``where(l2sum > 0, ...)``).

    Returns:
        A Tensor of `t`'s shape and dtype.
    """
    with _graph.name_scope(name, "clip_by_norm", [t, clip_norm]) as scope:
        values = convert_to_tensor(t, name="t")
        l2sum = reduction_ops.reduce_sum(values * values, axes, keepdims=True)
        positive = math_ops.greater(l2sum, 0.0)
        l2sum_safe = math_ops.where(positive, l2sum, math_ops.ones_like(l2sum))
        l2norm = math_ops.where(positive, math_ops.sqrt(l2sum_safe), l2sum)
        clip_norm = convert_to_tensor(clip_norm, dtype=values.dtype)
        clipped = values * clip_norm / math_ops.maximum(l2norm, clip_norm)
        _check_not_broadcast(values, clipped)
        return math_ops.identity(clipped, name=scope)


def _tensor_list(t_list, what):
    if not isinstance(t_list, Sequence) or isinstance(t_list, (str, bytes)):
        raise TypeError(f"{what}: t_list should be a sequence of tensors, got {type(t_list).__name__}")
    return [None if t is None else convert_to_tensor(t, name=f"t_{i}") for i, t in enumerate(t_list)]


def global_norm(t_list, name=None):
    """`tf.global_norm`: ``sqrt(sum(l2norm(t)**2 for t in t_list))``; None entries are ignored.

    Each ``l2_loss`` is colocated with its tensor, so only scalars cross between tasks.

    Raises:
        TypeError: if `t_list` is not a sequence.
    """
    t_list = list(t_list) if isinstance(t_list, Sequence) and not isinstance(t_list, (str, bytes)) else t_list
    with _graph.name_scope(name, "global_norm", [t for t in t_list or () if t is not None]):
        values = _tensor_list(t_list, "global_norm")
        half_squared_norms = []
        for v in values:
            if v is not None:
                with _graph.colocate_with(v):
                    half_squared_norms.append(nn_ops.l2_loss(v))
        half_squared_norm = reduction_ops.reduce_sum(array_ops.stack(half_squared_norms))
        return math_ops.sqrt(
            half_squared_norm * constant(2.0, dtype=half_squared_norm.dtype), name="global_norm"
        )


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """`tf.clip_by_global_norm`: scales every tensor by ``clip_norm / max(global_norm, clip_norm)``.

    Args:
        t_list: a sequence of Tensors (None entries stay None).
        clip_norm: a positive scalar.
        use_norm: the global norm to use instead of computing it.
        name: the name scope (default ``clip_by_global_norm``).

    Returns:
        ``(list_clipped, global_norm)``: the scaled tensors, each colocated with its input,
        and the norm used. A global norm that is inf or NaN makes every result NaN (TF's rule).

    Raises:
        TypeError: if `t_list` is not a sequence.
    """
    values = _tensor_list(t_list, "clip_by_global_norm")
    if use_norm is None:
        use_norm = global_norm(values, name)
    use_norm = convert_to_tensor(use_norm)
    with _graph.name_scope(name, "clip_by_global_norm", [v for v in values if v is not None]) as scope:
        clip_norm = convert_to_tensor(clip_norm, dtype=use_norm.dtype)
        scale_for_finite = clip_norm * math_ops.minimum(
            1.0 / use_norm, constant(1.0, dtype=use_norm.dtype) / clip_norm
        )
        # A no-op for a finite norm; NaN for inf or NaN, so that they are not hidden.
        scale = scale_for_finite + (use_norm - use_norm)
        clipped = []
        for i, v in enumerate(values):
            if v is None:
                clipped.append(None)
                continue
            with _graph.colocate_with(v):
                clipped.append(math_ops.identity(v * math_ops.cast(scale, v.dtype), name=f"{scope}_{i}"))
    return clipped, use_norm
